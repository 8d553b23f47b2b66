"""Prices that survive a sanity check: rows of the price table that contradict the table itself
are not used, the estimate says why and names the `ray-tpu-gke:pricing.rates` entry to set, and the compare stack's
GPU sides are priced from rows that pass (the snapshot priced a3-highgpu-8g in us-central1 and a2-ultragpu-8g there
at about half)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from helpers import config_of, minimal_values

from ray_tpu_gke.catalog import price_checks, prices
from ray_tpu_gke.render import pricing
from ray_tpu_gke.spec.config import parse_stack_config

URL = "https://example.com/prices"


def _rate(name, capacity, region, hourly, kind="gpu"):
    return prices.Rate(kind, name, capacity, Decimal(str(hourly)), region, URL, date(2026, 5, 20), "table")


def _key(kind, name, capacity, region):
    return (kind, name, capacity, region)


@pytest.fixture(scope="module")
def shipped():
    rows, doubts = prices.trusted_table()
    return {(r.kind, r.name, r.capacity, r.region): r for r in rows}, {d.key: d for d in doubts}


def test_the_half_priced_a3_and_a2_ultra_rows_of_us_central1_are_corrected_with_their_source(shipped):
    rows, doubts = shipped
    h100 = rows[_key("gpu", "a3-highgpu-8g", "onDemand", "us-central1")]
    a100 = rows[_key("gpu", "a2-ultragpu-8g", "onDemand", "us-central1")]
    assert h100.hourly == Decimal("87.83247") == rows[_key("gpu", "a3-highgpu-8g", "onDemand", "us-east4")].hourly
    assert a100.hourly > rows[_key("gpu", "a2-highgpu-8g", "onDemand", "us-central1")].hourly  # 80GB above 40GB
    for rate in (h100, a100):
        assert rate.source.startswith("https://cloud.google.com/compute/") and rate.as_of > date(2026, 5, 20)
        assert _key(rate.kind, rate.name, rate.capacity, rate.region) not in doubts


def test_rows_that_contradict_the_table_are_doubted_with_their_reason(shipped):
    rows, doubts = shipped
    west = doubts[_key("gpu", "a3-highgpu-8g", "onDemand", "us-west1")]
    assert west.rule == "regional-outlier" and "under 60%" in west.reason and west.hourly == Decimal("43.06615")
    ultra = doubts[_key("gpu", "a2-ultragpu-4g", "onDemand", "us-central1")]
    assert ultra.rule == "larger-machine-cheaper" and "a2-highgpu-4g" in ultra.reason
    assert not set(doubts) & set(rows)  # a doubted row is never a price
    assert all(d.capacity != "spot" for d in doubts.values() if d.rule == "regional-outlier")


def test_the_three_rules_on_a_small_table():
    table = [
        _rate("a3-highgpu-8g", "onDemand", "r-a", 88),
        _rate("a3-highgpu-8g", "onDemand", "r-b", 90),
        _rate("a3-highgpu-8g", "onDemand", "r-c", 43),  # under 60 % of 89
        _rate("a3-highgpu-8g", "spot", "r-a", 95),  # above on-demand
        _rate("a3-highgpu-8g", "spot", "r-b", 30),
        _rate("a3-highgpu-8g", "spot", "r-c", 10),  # Spot: no outlier rule
        _rate("a2-highgpu-8g", "onDemand", "r-a", 29),
        _rate("a2-ultragpu-8g", "onDemand", "r-a", 23),
        _rate("g2-standard-12", "onDemand", "r-x", 1),
        _rate("g2-standard-12", "onDemand", "r-y", 0.5),  # one other
    ]
    kept, doubts = price_checks.trusted(table)
    assert {(d.name, d.capacity, d.region, d.rule) for d in doubts} == {
        ("a3-highgpu-8g", "onDemand", "r-c", "regional-outlier"),
        ("a3-highgpu-8g", "spot", "r-a", "spot-above-on-demand"),
        ("a2-ultragpu-8g", "onDemand", "r-a", "larger-machine-cheaper"),
    }
    assert len(kept) == len(table) - 3


def test_a_doubted_row_leaves_the_item_unpriced_and_names_the_entry_to_set():
    values = minimal_values(
        **{"gcp:region": "us-west1"},
        cluster={"name": "ray-tpu", "location": "us-west1-b", "deletionProtection": False},
        tpuSlices=[],
        rayClusters=[],
        gpuPools=[
            {
                "name": "h100-8",
                "accelerator": "nvidia-h100-80gb",
                "machineType": "a3-highgpu-8g",
                "count": 1,
                "zone": "us-west1-b",
            }
        ],
    )
    e = pricing.estimate(parse_stack_config(values, "test"), today=date(2026, 12, 5))
    (missing,) = e.missing
    assert (missing.name, missing.region) == ("a3-highgpu-8g", "us-west1")
    assert "not trusted: under 60%" in missing.message
    assert "add {kind: gpu, name: a3-highgpu-8g, capacity: onDemand, region: us-west1" in missing.message
    assert missing.to_json()["doubted"].startswith("under 60%")
    assert not [i for i in e.items if i.name == "h100-8"] and not e.complete


def test_the_compare_stacks_gpu_sides_are_priced_from_rows_that_pass():
    e = pricing.estimate(config_of("compare"), today=date(2026, 12, 5))
    assert not e.missing
    used = {(r.name, r.region): r for r in e.rates if r.kind == "gpu"}
    _, doubts = prices.trusted_table()
    for name in ("a3-highgpu-8g", "a2-ultragpu-8g"):
        rate = used[(name, "us-central1")]
        assert _key("gpu", name, "onDemand", "us-central1") not in {d.key for d in doubts}
        assert rate.as_of and rate.source.startswith("https://")


def test_the_generator_drops_and_reports_what_the_checks_doubt(prices_script, catalogue_csv, tmp_path, capsys):
    rows = [
        f"n2-standard-16,16.0,64.0,,,,{region},{region}-a,{price},0.2"
        for region, price in (
            ("us-east1", "0.78"),
            ("us-east4", "0.86"),
            ("europe-west4", "0.85"),
            ("asia-south1", "0.40"),
        )
    ]
    catalogue_csv(tmp_path, rows)
    out = tmp_path / "prices.yaml"
    assert prices_script.main([str(tmp_path / "vms.csv"), "--source", URL, "--as-of", "2026-05-20", "--out", str(out)]) == 0
    assert "dropped cpu n2-standard-16 onDemand asia-south1 $0.4: under 60%" in capsys.readouterr().err
    table = {
        (r.kind, r.name, r.capacity, r.region)
        for r in prices.parse_table(__import__("yaml").safe_load(out.read_text()))
    }
    assert ("cpu", "n2-standard-16", "onDemand", "asia-south1") not in table
    assert ("cpu", "n2-standard-16", "onDemand", "us-east1") in table
    assert "regionalOutlier: 1" in out.read_text()


def test_the_generator_lists_the_shipped_tables_doubted_rows(prices_script, capsys):
    assert prices_script.main(["--check"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    _, doubts = prices.trusted_table()
    assert len(lines) == len(doubts) and f"{len(doubts)} of " in err
    assert any(line.startswith("doubted gpu a3-highgpu-8g onDemand us-west1 $43.06615: under 60%") for line in lines)
