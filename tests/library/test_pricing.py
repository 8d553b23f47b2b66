"""The cost estimate (`ray_tpu_gke.render.pricing`): arithmetic per capacity type, autoscaling ranges, Autopilot,
stranded capacity, stack rates beating the table, missing rates, the bases and the GKE cluster fee, and the shipped
price table itself.

Most tests price against a small table written here, so every expected number is visibly a row (or a stack rate)
times a count; a few check the shipped table's rows.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from types import SimpleNamespace

import pytest
import yaml
from helpers import ROOT, config_of, minimal_values

from ray_tpu_gke.catalog import prices
from ray_tpu_gke.render import pricing
from ray_tpu_gke.spec.config import StackConfig, parse_stack_config
from ray_tpu_gke.spec.problems import ConfigError

TODAY = date(2026, 12, 1)
URL = "https://example.com/prices"

# A small table: each rate a round number, so expected amounts are easy to read.
ROWS = [
    {"kind": "tpu", "name": "v6e", "capacity": "onDemand", "region": "us-east5", "hourly": 2.5, "asOf": "2026-11-01",
     "source": URL},
    {"kind": "tpu", "name": "v6e", "capacity": "spot", "region": "us-east5", "hourly": 1.25, "asOf": "2026-10-01",
     "source": URL},
    {"kind": "tpu", "name": "v6e", "capacity": "flexStart", "region": "us-east5", "hourly": 1.5, "asOf": "2026-11-01",
     "source": URL},
    {"kind": "cpu", "name": "e2-standard-8", "capacity": "onDemand", "region": "us-east5", "hourly": 0.25,
     "asOf": "2026-11-01", "source": URL},
    {"kind": "gpu", "name": "g2-standard-12", "capacity": "onDemand", "region": "us-east5", "hourly": 1.0,
     "asOf": "2026-11-01", "source": URL},
    {"kind": "cpu", "name": "e2-standard-16", "capacity": "spot", "region": "us-east5", "hourly": 0.125,
     "asOf": "2026-11-01", "source": URL},
]
TABLE = prices.parse_table({"currency": "USD", "rates": ROWS})


def config(**overrides) -> StackConfig:
    return parse_stack_config(minimal_values(**overrides), "test")


def estimate(cfg: StackConfig, table=TABLE) -> pricing.Estimate:
    return pricing.estimate(cfg, table=table, today=TODAY)


def slices(*entries) -> list[dict]:
    return [{"name": "v6e-16", "generation": "v6e", "topology": "4x4", **e} for e in entries]


def cluster(groups, **extra) -> list[dict]:
    return [{"name": "train", "workerGroups": groups, **extra}]


def group(slice_name="v6e-16", replicas=1, **extra) -> dict:
    return {"name": "tpu", "slice": slice_name, "replicas": replicas, **extra}


# --- arithmetic per capacity type ----------------------------------------------------------------------------------


@pytest.mark.parametrize("capacity, rate", [("onDemand", "2.5"), ("spot", "1.25"), ("flexStart", "1.5")])
def test_a_slice_costs_chips_times_count_times_its_chip_hour(capacity, rate):
    cfg = config(tpuSlices=slices({"count": 2, "capacity": capacity}),
                 rayClusters=cluster([group(replicas=2)]))
    item = estimate(cfg).item("tpuSlice", "v6e-16")
    assert (item.quantity, item.slices, item.per_slice, item.unit) == (32, 2, 16, "chip")
    assert item.rate.hourly == Decimal(rate) and item.rate.origin == "table"
    assert item.hourly == 2 * 16 * Decimal(rate)
    assert item.monthly == item.hourly * 730
    assert item.basis == f"2 slices x 16 chips x ${Decimal(rate).normalize()}/chip-hour"


def test_reservation_is_priced_only_by_a_stack_rate():
    cfg = config(tpuSlices=slices({"capacity": "reservation", "reservation": "r1"}), rayClusters=cluster([group()]),
                 pricing={"rates": [{"kind": "tpu", "name": "v6e", "capacity": "reservation", "hourly": 1.1,
                                     "asOf": "2026-06-30", "source": "contract 42"}]})
    item = estimate(cfg).item("tpuSlice", "v6e-16")
    assert item.hourly == 16 * Decimal("1.1") and item.rate.origin == "stack" and item.rate.source == "contract 42"


def test_the_system_pool_costs_its_minimum_and_ranges_to_its_maximum():
    cfg = config(cluster={"name": "ray-tpu", "location": "us-east5-b", "deletionProtection": False,
                          "systemPool": {"machineType": "e2-standard-8", "minNodes": 2, "maxNodes": 5}})
    system = estimate(cfg).item("cpuPool", "system")
    assert (system.quantity, system.min_quantity, system.max_quantity) == (2, 2, 5)
    assert (system.hourly, system.min.hourly, system.max.hourly) == (Decimal("0.5"), Decimal("0.5"), Decimal("1.25"))


def test_totals_add_the_items():
    cfg = config(tpuSlices=slices({"count": 1}), rayClusters=cluster([group()]))
    e = estimate(cfg)
    # 16 chips x 2.5 + 1 node x 0.25 configured + the GKE cluster fee 0.10; system pool 1..3 nodes (defaults)
    assert e.total.hourly == Decimal("40.35")
    assert e.min.hourly == Decimal("40.35") and e.max.hourly == Decimal("40.85")
    assert e.total.monthly == Decimal("40.35") * 730


# --- autoscaling ranges --------------------------------------------------------------------------------------------


def test_scale_from_zero_ranges_from_nothing_to_every_slice():
    cfg = config(tpuSlices=slices({"count": 3, "autoscaling": {"enabled": True, "minNodes": 0}}),
                 rayClusters=cluster([group(replicas=0, maxReplicas=3)], autoscaling={"enabled": True}))
    item = estimate(cfg).item("tpuSlice", "v6e-16")
    # Configured basis: what the Ray worker groups ask for (0 replicas), not the maximum (#25.4).
    assert (item.min_quantity, item.quantity, item.max_quantity) == (0, 0, 48)
    assert item.min.hourly == item.hourly == 0 and item.max.hourly == 48 * Decimal("2.5")


def test_the_configured_basis_is_the_replicas_the_ray_groups_ask_for_within_the_range():
    cfg = config(tpuSlices=slices({"count": 3, "autoscaling": {"enabled": True, "minNodes": 0}}),
                 rayClusters=cluster([group(replicas=2, maxReplicas=3)], autoscaling={"enabled": True}))
    item = estimate(cfg).item("tpuSlice", "v6e-16")
    assert (item.min_quantity, item.quantity, item.max_quantity, item.slices) == (0, 32, 48, 2)
    assert item.size() == "2 slices x 16 chips" and item.hourly == 32 * Decimal("2.5")


def test_a_multi_host_minimum_keeps_every_slice():
    cfg = config(tpuSlices=slices({"count": 2, "autoscaling": {"enabled": True, "minNodes": 4}}),
                 rayClusters=cluster([group(replicas=2)]))
    item = estimate(cfg).item("tpuSlice", "v6e-16")
    assert (item.min_quantity, item.max_quantity) == (32, 32)


def test_flex_start_scales_from_zero():
    cfg = config(tpuSlices=slices({"capacity": "flexStart"}), rayClusters=cluster([group()]))
    item = estimate(cfg).item("tpuSlice", "v6e-16")
    assert item.autoscaled and item.min.hourly == 0 and item.max.hourly == 16 * Decimal("1.5")
    assert item.stranded_quantity == 0


def test_a_fixed_pool_has_no_range():
    cfg = config(tpuSlices=slices({}), rayClusters=cluster([group()]))
    item = estimate(cfg).to_json()["items"][0]
    assert "min" not in item and "max" not in item


# --- Autopilot -----------------------------------------------------------------------------------------------------


def test_autopilot_slices_exist_only_while_pods_run_and_there_is_no_system_pool():
    cfg = config(cluster={"name": "ray-ap", "location": "us-east5", "mode": "autopilot", "deletionProtection": False},
                 tpuSlices=slices({"count": 2, "zone": "us-east5-b"}),
                 rayClusters=cluster([group(replicas=1)]))
    e = estimate(cfg)
    assert [(i.kind, i.name) for i in e.items] == [("tpuSlice", "v6e-16")]
    item = e.items[0]
    assert (item.min_quantity, item.quantity, item.max_quantity) == (0, 16, 32)  # 1 replica of 2 slices
    assert item.stranded_quantity == 0  # nothing is provisioned that no pod asks for
    assert e.min.hourly == Decimal("0.10")  # only the cluster fee
    assert e.fees[0].mode == "autopilot" and e.fees[0].credit_eligible


# --- stranded capacity ---------------------------------------------------------------------------------------------


def test_a_slice_entry_no_group_uses_is_stranded_whole():
    cfg = config(tpuSlices=slices({}, {"name": "spare", "count": 2}), rayClusters=cluster([group()]))
    e = estimate(cfg)
    spare = e.item("tpuSlice", "spare")
    assert spare.stranded_quantity == 32 and spare.stranded_reason == "no Ray worker group uses it"
    assert e.stranded.hourly == 32 * Decimal("2.5")
    assert e.to_json()["items"][1]["stranded"] == {"quantity": 32, "reason": "no Ray worker group uses it",
                                                   "hourly": 80, "monthly": 58400}


def test_fixed_slices_beyond_what_the_groups_ask_for_are_stranded():
    cfg = config(tpuSlices=slices({"count": 3}), rayClusters=cluster([group(replicas=1)]))
    item = estimate(cfg).item("tpuSlice", "v6e-16")
    assert item.stranded_quantity == 2 * 16
    assert "ask for 1 of 3 always-provisioned slices (ray/train:tpu)" in item.stranded_reason


def test_slices_kept_for_serving_upgrades_say_so():
    cfg = config(tpuSlices=slices({"count": 2}), rayClusters=[],
                 rayServices=[{"name": "llm", "serveConfig": {"applications": []}, "workerGroups": [group()]}])
    item = estimate(cfg).item("tpuSlice", "v6e-16")
    assert item.stranded_quantity == 16 and "headroom for NewCluster upgrades of ray/llm" in item.stranded_reason


def test_autoscaled_slices_from_zero_strand_nothing():
    cfg = config(tpuSlices=slices({"count": 3, "autoscaling": True}), rayClusters=cluster([group()]))
    assert estimate(cfg).stranded.hourly == 0


# --- stack rates ---------------------------------------------------------------------------------------------------


def test_stack_rates_beat_the_table_a_regional_one_first():
    rates = [{"kind": "tpu", "name": "v6e", "capacity": "onDemand", "hourly": 2.0, "source": "all regions deal"},
             {"kind": "tpu", "name": "v6e", "capacity": "onDemand", "hourly": 1.75, "region": "us-east5",
              "source": "regional deal", "asOf": "2026-01-15"}]
    cfg = config(tpuSlices=slices({}), rayClusters=cluster([group()]), pricing={"rates": rates})
    item = estimate(cfg).item("tpuSlice", "v6e-16")
    assert item.rate.source == "regional deal" and item.hourly == 16 * Decimal("1.75")
    cfg = config(tpuSlices=slices({}), rayClusters=cluster([group()]), pricing={"rates": rates[:1]})
    assert estimate(cfg).item("tpuSlice", "v6e-16").rate.source == "all regions deal"


def test_a_stack_rate_of_another_region_does_not_apply():
    rates = [{"kind": "tpu", "name": "v6e", "capacity": "onDemand", "hourly": 9.0, "region": "europe-west4"}]
    cfg = config(tpuSlices=slices({}), rayClusters=cluster([group()]), pricing={"rates": rates})
    e = estimate(cfg)
    assert e.item("tpuSlice", "v6e-16").rate.origin == "table" and e.warnings == ()


def test_a_stack_rate_nothing_uses_is_a_warning():
    rates = [{"kind": "tpu", "name": "v6E", "capacity": "onDemand", "hourly": 2.0}]
    cfg = config(tpuSlices=slices({}), rayClusters=cluster([group()]), pricing={"rates": rates})
    assert estimate(cfg).warnings == ("ray-tpu-gke:pricing.rates[0]: tpu v6E onDemand is priced but nothing of the "
                                      "stack uses it (a misspelt name or capacity?)",)


# --- missing rates -------------------------------------------------------------------------------------------------


def test_every_missing_rate_at_once_each_naming_the_entry_to_add():
    cfg = config(
        cluster={"name": "ray-tpu", "location": "us-east5-b", "deletionProtection": False,
                 "systemPool": {"machineType": "n2-standard-8"}},
        tpuSlices=slices({"capacity": "reservation", "reservation": "r1"},
                         {"name": "iron", "generation": "tpu7x", "topology": "2x2x1"},
                         {"name": "more", "capacity": "reservation", "reservation": "r2"}),
        rayClusters=cluster([group(), {"name": "b", "slice": "iron"}, {"name": "c", "slice": "more"}]))
    with pytest.raises(pricing.PricingError) as raised:
        pricing.estimate(cfg, table=TABLE, today=TODAY, strict=True)
    assert isinstance(raised.value, ConfigError)
    assert [str(p) for p in raised.value.problems] == [
        "ray-tpu-gke:pricing.rates: no rate for tpu v6e reservation in us-east5 (tpuSlices v6e-16, tpuSlices more); "
        "add {kind: tpu, name: v6e, capacity: reservation, region: us-east5, hourly: <USD per chip-hour>}",
        "ray-tpu-gke:pricing.rates: no rate for tpu tpu7x onDemand in us-east5 (tpuSlices iron); "
        "add {kind: tpu, name: tpu7x, capacity: onDemand, region: us-east5, hourly: <USD per chip-hour>}",
        "ray-tpu-gke:pricing.rates: no rate for cpu n2-standard-8 onDemand in us-east5 (cluster.systemPool); "
        "add {kind: cpu, name: n2-standard-8, capacity: onDemand, region: us-east5, hourly: <USD per VM-hour>}",
    ]
    assert [(m.kind, m.name, m.capacity, m.region) for m in raised.value.missing] == [
        ("tpu", "v6e", "reservation", "us-east5"), ("tpu", "tpu7x", "onDemand", "us-east5"),
        ("cpu", "n2-standard-8", "onDemand", "us-east5")]
    partial = estimate(cfg)  # not strict: the same rates are named, and nothing else is lost
    assert [m.message for m in partial.missing] == [m.message for m in raised.value.missing]
    assert partial.items == () and not partial.complete and partial.to_json()["complete"] is False


def test_a_missing_rate_prices_what_is_known_and_names_what_is_not():
    # v4 lives in us-central2, where the catalogue sells no e2 machine: the system pool has no rate (#22.11).
    cfg = parse_stack_config(minimal_values(**{
        "gcp:region": "us-central2",
        "cluster": {"name": "ray-tpu", "location": "us-central2-b", "deletionProtection": False},
        "tpuSlices": [{"name": "v4-8", "generation": "v4", "topology": "2x2x1"}],
        "rayClusters": cluster([group("v4-8")])}), "test")
    e = pricing.estimate(cfg, today=TODAY)
    assert [(i.kind, i.name) for i in e.items] == [("tpuSlice", "v4-8")]
    assert e.items[0].hourly == 4 * Decimal("3.22")
    assert [(m.name, m.needed_by) for m in e.missing] == [("e2-standard-8", ("cluster.systemPool",))]
    out = e.to_json()
    assert out["complete"] is False and out["total"]["hourly"] == float(4 * Decimal("3.22") + Decimal("0.10"))
    assert out["missing"][0]["problem"].startswith("ray-tpu-gke:pricing.rates: no rate for cpu e2-standard-8 "
                                                   "onDemand in us-central2 (cluster.systemPool); add {")


def test_the_suggested_entry_is_a_valid_stack_rate():
    """Adding exactly what the message names (with an amount) makes the estimate complete."""
    cfg = config(tpuSlices=slices({"capacity": "reservation", "reservation": "r1"}), rayClusters=cluster([group()]))
    m = estimate(cfg).missing[0]
    rate = {"kind": m.kind, "name": m.name, "capacity": m.capacity, "region": m.region, "hourly": 1.0}
    cfg = config(tpuSlices=slices({"capacity": "reservation", "reservation": "r1"}), rayClusters=cluster([group()]),
                 pricing={"rates": [rate]})
    assert estimate(cfg).item("tpuSlice", "v6e-16").hourly == 16


# --- GPU and CPU worker pools (config.gpu_pools / cpu_pools, once the config has them) ----------------------------


@dataclass(frozen=True)
class WithPools:
    """A StackConfig with GPU and CPU worker pools, as the config will carry them."""

    base: StackConfig
    gpu_pools: tuple = ()
    cpu_pools: tuple = ()

    def __getattr__(self, name):
        return getattr(self.base, name)


def test_gpu_and_cpu_worker_pools_cost_nodes_times_their_vm_hour():
    base = config(tpuSlices=slices({}), rayClusters=cluster([group()]))
    gpu = SimpleNamespace(name="l4", machine_type="g2-standard-12", capacity="onDemand", count=2, min_nodes=0,
                          max_nodes=4, autoscaled=True)
    cpu = SimpleNamespace(name="cpu-workers", machine_type="e2-standard-16", capacity="spot", min_nodes=1,
                          max_nodes=3)
    e = estimate(WithPools(base, gpu_pools=(gpu,), cpu_pools=(cpu,)))
    l4 = e.item("gpuPool", "l4")
    # No worker group asks for them: the configured basis is their minimum.
    assert (l4.quantity, l4.min_quantity, l4.max_quantity, l4.max.hourly) == (0, 0, 4, Decimal(4))
    workers = e.item("cpuPool", "cpu-workers")
    assert (workers.quantity, workers.min_quantity, workers.max_quantity) == (1, 1, 3)
    assert workers.hourly == Decimal("0.125") and workers.rate.capacity == "spot"
    # No worker group names them: their floor is stranded.
    assert (l4.stranded_quantity, workers.stranded_quantity) == (0, 1)
    assert [(i.kind, i.name) for i in e.items] == [("tpuSlice", "v6e-16"), ("gpuPool", "l4"), ("cpuPool", "system"),
                                                  ("cpuPool", "cpu-workers")]


def test_a_gpu_pool_without_a_rate_is_named():
    base = config(tpuSlices=slices({}), rayClusters=cluster([group()]))
    gpu = SimpleNamespace(name="h100", machine_type="a3-highgpu-8g", capacity="spot", count=1, min_nodes=None,
                          max_nodes=None)
    with pytest.raises(pricing.PricingError) as raised:
        pricing.estimate(WithPools(base, gpu_pools=(gpu,)), table=TABLE, today=TODAY, strict=True)
    assert str(raised.value.problems[0]) == (
        "ray-tpu-gke:pricing.rates: no rate for gpu a3-highgpu-8g spot in us-east5 (gpuPools h100); add {kind: gpu, "
        "name: a3-highgpu-8g, capacity: spot, region: us-east5, hourly: <USD per VM-hour>}")


# --- rates used, dates, JSON ---------------------------------------------------------------------------------------


def test_rates_used_are_listed_once_with_date_and_source_and_the_oldest_age():
    cfg = config(tpuSlices=slices({"capacity": "spot"}, {"name": "b", "capacity": "spot"}),
                 rayClusters=cluster([group(), {"name": "b", "slice": "b"}]))
    e = estimate(cfg)
    assert [(r.kind, r.name, r.capacity) for r in e.rates] == [("tpu", "v6e", "spot"), ("cpu", "e2-standard-8",
                                                                                        "onDemand")]
    assert e.oldest_as_of == date(2026, 10, 1) and e.age_days == 61
    rate = e.to_json()["rates"][0]
    assert rate == {"kind": "tpu", "name": "v6e", "capacity": "spot", "region": "us-east5", "hourly": 1.25,
                    "unit": "chip-hour", "asOf": "2026-10-01", "source": URL, "from": "table"}


def test_the_json_is_the_contract_shape_and_does_not_depend_on_the_day():
    cfg = config(tpuSlices=slices({"autoscaling": True}), rayClusters=cluster([group()]),
                 pricing={"monthlyBudget": 50000})
    first = pricing.estimate(cfg, table=TABLE, today=date(2026, 12, 1)).to_json()
    later = pricing.estimate(cfg, table=TABLE, today=date(2027, 6, 1)).to_json()
    assert first == later
    assert {"currency", "rates", "items", "total"} <= set(first) and first["currency"] == "USD"
    item = first["items"][0]
    assert {"kind", "name", "hourly", "monthly", "min", "max"} <= set(item)
    assert (item["kind"], item["name"], item["hourly"], item["monthly"]) == ("tpuSlice", "v6e-16", 40, 29200)
    assert item["min"] == {"quantity": 0, "hourly": 0, "monthly": 0}
    assert first["total"] == {"hourly": 40.35, "monthly": 29455.5, "min": {"hourly": 0.35, "monthly": 255.5},
                              "max": {"hourly": 40.85, "monthly": 29820.5}}
    assert set(first["bases"]) == {"configured", "min", "max", "fees"} and first["budgetBasis"] == "max"
    assert first["complete"] is True and "missing" not in first
    (fee,) = first["fees"]
    assert (fee["kind"], fee["name"], fee["hourly"], fee["monthly"]) == ("gkeClusterFee", "ray-tpu", 0.1, 73)
    assert fee["freeTierCredit"]["eligible"] is True  # a zonal Standard cluster
    assert fee["source"] == "https://cloud.google.com/kubernetes-engine/pricing"
    assert first["monthlyBudget"] == 50000 and first["oldestAsOf"] == "2026-11-01"
    assert json.loads(json.dumps(first)) == first


def test_over_budget_compares_the_most_a_month_can_cost():
    cfg = config(tpuSlices=slices({"autoscaling": True}), rayClusters=cluster([group()]),
                 pricing={"monthlyBudget": 29500})
    e = estimate(cfg)
    assert e.total.monthly < 29500 < e.max.monthly and e.over_budget


def test_money_formatting():
    assert pricing.format_usd(Decimal("31536")) == "$31,536.00"
    assert pricing.format_usd(Decimal("-2.5"), sign=True) == "-$2.50"
    assert pricing.format_usd(Decimal("0.125"), 2, sign=True) == "+$0.12"


# --- the shipped price table ---------------------------------------------------------------------------------------


def test_the_shipped_table_is_list_prices_each_dated_placed_and_sourced():
    document = yaml.load((ROOT / "components" / "catalog" / "data" / "prices.yaml").read_text(),
                         Loader=yaml.CSafeLoader)
    table = prices.load_table()
    assert len(table) == sum(len(r["regions"]) if "regions" in r else 1 for r in document["rates"]) > 1000
    for row in document["rates"]:
        assert row["note"], row
    for rate in table:
        assert rate.capacity in ("onDemand", "spot", "flexStart"), rate
        assert rate.source.startswith("https://") and rate.region and rate.as_of, rate
    snapshot = prices.table_snapshot()
    assert snapshot["source"].startswith("https://github.com/") and snapshot["asOf"] == "2026-05-20"
    assert not [r for r in table if r.name == "tpu7x"]  # Ironwood has no published price: stacks supply it


def test_the_shipped_table_prices_every_region_the_catalogue_sells_in():
    rows = {(r.kind, r.name, r.capacity, r.region) for r in prices.load_table()}
    # The documented default CPU pool machine, and GPU rows outside us-central1 (#22.11).
    for region in ("us-central1", "us-east5", "europe-west4", "asia-northeast1"):
        assert ("cpu", "n2-standard-16", "onDemand", region) in rows
    assert {("gpu", "a3-highgpu-8g", "onDemand", r) for r in ("us-east4", "europe-west4")} <= rows
    assert ("gpu", "g2-standard-12", "spot", "europe-west1") in rows
    assert len({r[3] for r in rows if r[0] == "cpu"}) >= 40
    # A3 Ultra has no on-demand capacity (components/catalog/gpu.py), so no on-demand row.
    assert not [r for r in rows if r[1] == "a3-ultragpu-8g" and r[2] == "onDemand"]


def test_the_table_rejects_what_is_not_a_sourced_list_price():
    good = {"kind": "tpu", "name": "v6e", "capacity": "onDemand", "region": "us-east5", "hourly": 2.7,
            "asOf": "2026-11-30", "source": URL}
    for broken, message in (({"capacity": "reservation"}, "list prices only"),
                            ({"asOf": "last week"}, "is not a date"),
                            ({"source": "http://example.com"}, "https URL"),
                            ({"hourly": 0}, "positive number"),
                            ({"region": "us-east5-b"}, "not a region")):
        with pytest.raises(prices.TableError, match=message):
            prices.parse_table({"currency": "USD", "rates": [{**good, **broken}]})
    with pytest.raises(prices.TableError, match="a second row"):
        prices.parse_table({"currency": "USD", "rates": [good, copy.deepcopy(good)]})
    with pytest.raises(prices.TableError, match="exactly kind"):
        prices.parse_table({"currency": "USD", "rates": [{k: v for k, v in good.items() if k != "asOf"}]})


@pytest.mark.parametrize("stack", ["dev", "staging", "sandbox"])
def test_the_committed_stacks_without_reservations_are_priced_by_the_table(stack):
    e = pricing.estimate(config_of(stack), today=TODAY)
    assert e.items and all(i.rate.origin == "table" for i in e.items)
    assert e.total.hourly > 0


def test_staging_is_its_slice_and_its_system_pool_at_list_price():
    e = pricing.estimate(config_of("staging"), today=TODAY)
    tpu, system = e.item("tpuSlice", "v6e-16"), e.item("cpuPool", "system")
    row = {(r.kind, r.name, r.capacity, r.region): r for r in prices.load_table()}
    assert tpu.rate == row[("tpu", "v6e", "onDemand", "us-east5")]
    assert system.rate == row[("cpu", "e2-standard-8", "onDemand", "us-east5")]
    # The slice starts at zero (an autoscaled RayCluster's count is the autoscaler's), at most one of 16 chips.
    assert e.total.hourly == 1 * system.rate.hourly + Decimal("0.10")  # + the cluster fee
    assert tpu.max.hourly == 16 * tpu.rate.hourly
