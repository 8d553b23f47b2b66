"""`python -m plan.compare compare --estimate` and `--dry-run`: what a job would take and cost at an MFU range before
any hardware exists (plan/compare/estimate.py), and what a live run would create and may cost (plan/compare/dryrun.py).
In-process against the compare stack's own plan; nothing runs."""

from __future__ import annotations

import copy
import functools
import json

import pytest

from plan.compare import __main__ as compare_cli
from plan.compare import estimate, sides
from ray_tpu_gke import catalog

FLOPS = 6.0e15  # model FLOPs of one step of a ~100M-parameter language model at a large batch (a stated input)


_LOAD_PLAN = compare_cli.load_plan


@functools.lru_cache(maxsize=None)
def _planned():
    return _LOAD_PLAN("compare")


@pytest.fixture
def planned(monkeypatch):
    monkeypatch.setattr(compare_cli, "load_plan", lambda stack, config_file=None: copy.deepcopy(_planned()))
    return copy.deepcopy(_planned())


def run(capsys, *args):
    code = compare_cli.main(["compare", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_an_estimate_per_side_from_the_flops_the_peaks_and_the_prices(planned, capsys, tmp_path):
    code, out, err = run(capsys, "--estimate", "--flops-per-step", str(FLOPS), "--tokens-per-step", "262144",
                         "--steps", "1000", "--out", str(tmp_path))
    assert code == 0, err
    document = json.loads((tmp_path / "report.json").read_text())
    assert document["mode"] == "estimate" and document["mfuRange"] == {"low": 0.3, "high": 0.6}
    found = {s.name: s for s in sides.sides(*planned)}
    assert [s["name"] for s in document["sides"]] == list(found)  # every side by default
    for row in document["sides"]:
        side = found[row["name"]]
        peak = (catalog.peak("tpu", side.generation) if side.kind == "tpu" else
                catalog.peak("gpu", side.gpu_accelerator)).bf16_flops_per_s
        assert row["peakFlopsPerS"] == peak and row["devices"] == 8 and row["estimate"] is True
        fast, slow = FLOPS / (0.6 * 8 * peak), FLOPS / (0.3 * 8 * peak)
        assert row["stepTimeS"] == pytest.approx({"low": fast, "high": slow})
        assert row["jobTimeS"] == pytest.approx({"low": 1000 * fast, "high": 1000 * slow})
        assert row["jobCostUsd"] == pytest.approx({"low": 1000 * fast / 3600 * side.hourly,
                                                   "high": 1000 * slow / 3600 * side.hourly})
        assert row["costPer1MTokensUsd"]["low"] == pytest.approx(fast / 3600 * side.hourly / 262144 * 1e6)
    # Every printed line and the report's first line say it is an estimate; the chart is written.
    lines = out.splitlines()
    assert all(line.startswith("Estimate, ") and "30%–60% MFU" in line for line in lines[: len(found)])
    # Then the break-even of the TPU side against each GPU side, and a memory verdict per side (no model declared).
    assert len([line for line in lines if line.startswith("Break-even (estimate): bench-tpu costs less")]) == 3
    assert [line for line in lines if line.startswith("Memory (estimate)")] == [
        f"Memory (estimate): {name}: memory fit not judged (no model declared: --model parameters=N,...)."
        for name in found
    ]
    assert len(lines) == len(found) + 3 + len(found)
    text = (tmp_path / "report.md").read_text()
    assert text.startswith("Estimate, not a measurement") and "| estimated cost per job |" in text
    assert (tmp_path / "estimate.png").read_bytes()[:4] == b"\x89PNG"


def test_the_flops_come_from_an_earlier_report_and_sides_and_mfu_are_chosen(planned, capsys, tmp_path):
    rehearsal = tmp_path / "rehearsal.json"
    rehearsal.write_text(json.dumps({"mode": "local", "sides": [
        {"name": "bench-tpu", "flopsPerStep": 2e12, "simulated": True},
        {"name": "bench-h100", "flopsPerStep": 3e12, "tokensPerStep": 4096, "simulated": True}]}))
    code, _, err = run(capsys, "--estimate", "--measured", str(rehearsal), "--sides", "bench-h100,bench-tpu",
                       "--mfu", "0.4,0.5", "--out", str(tmp_path / "e"))
    assert code == 0, err
    document = json.loads((tmp_path / "e" / "report.json").read_text())
    h100, tpu = document["sides"]
    assert (h100["name"], tpu["name"]) == ("bench-h100", "bench-tpu")
    assert h100["flopsPerStep"] == 3e12 and tpu["flopsPerStep"] == 2e12 and h100["flopsSource"] == str(rehearsal)
    assert h100["stepTimeS"]["low"] == pytest.approx(3e12 / (0.5 * 8 * 989.5e12))
    assert h100["steps"] == 300  # the stack's entrypoint's own --steps
    assert "local rehearsal" in tpu["flopsNote"]


def test_an_estimate_without_flops_or_with_a_bad_range_says_what_to_pass(planned, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "--estimate")
    assert code == 2 and "--flops-per-step F, or --measured FILE" in err
    (tmp_path / "result.json").write_text(json.dumps({"schema": "x", "side": "bench-tpu"}))
    code, _, err = run(capsys, "--estimate", "--measured", "result.json")
    assert code == 2 and "no side or result there declares flopsPerStep" in err
    with pytest.raises(SystemExit) as exit_info:
        compare_cli.parse_args(["compare", "--estimate", "--mfu", "0.6,0.3"])
    assert exit_info.value.code == 2 and "0 < LO <= HI <= 1" in capsys.readouterr().err
    code, _, err = run(capsys, "--estimate", "--flops-per-step", "1e12", "--sides", "bench-v100")
    assert code == 2 and "bench-v100 is not a side of the stack; allowed: bench-tpu, bench-a100" in err


def test_a_dry_run_prints_the_rayjobs_the_quota_and_the_cost_ceiling_and_creates_nothing(planned, capsys,
                                                                                         monkeypatch):
    monkeypatch.setenv("PATH", "")  # no kubectl: a dry run never calls it
    names = "bench-tpu,bench-a100,bench-h100,bench-l4"
    code, out, err = run(capsys, "--dry-run", "--run", "compare-20270115080000", "--timeout", "1800", "--sides", names)
    assert code == 0, err
    found = sides.sides(*planned)
    for side in found:
        assert f"- {side.name}: RayJob compare/{side.name}-20270115080000 (not suspended)" in out
        assert f"cost ceiling ${side.hourly * (1800 + 60) / 3600:,.2f}" in out
    assert "quota TPUS-PER-TPU-FAMILY-per-project-region, tpu_family=CT6E in us-central1: 8 TPU chips" in out
    assert "quota NVIDIA-A100-80GB-GPUS-per-project-region in us-central1: 8 GPUs" in out
    total = sum(s.hourly * 1860 / 3600 for s in found)
    assert f"Cost ceiling of the run: ${total:,.2f} for {len(found)} side(s)" in out
    code, out, _ = run(capsys, "--dry-run", "--sides", "bench-tpu")
    assert code == 0 and "bench-a100" not in out and f"${found[0].hourly * 3660 / 3600:,.2f}" in out
    # Without --sides, what a live run without --sides would create: the TPU side and the first GPU side.
    code, out, _ = run(capsys, "--dry-run")
    assert code == 0 and "- bench-a100: RayJob" in out and "bench-h100" not in out and "bench-l4" not in out


def test_mfu_range_is_two_fractions():
    assert estimate.parse_mfu("0.3,0.6") == (0.3, 0.6)
    for bad in ("30,60", "0.6", "a,b", "0,0.5"):
        with pytest.raises(ValueError):
            estimate.parse_mfu(bad)


def test_a_side_missing_from_the_measured_report_borrows_another_sides_flops_and_says_so(planned, capsys, tmp_path):
    rehearsal = tmp_path / "rehearsal.json"
    rehearsal.write_text(json.dumps({"sides": [{"name": "bench-tpu", "flopsPerStep": 2e12}]}))
    code, _, err = run(capsys, "--estimate", "--measured", str(rehearsal), "--sides", "bench-tpu,bench-l4",
                       "--out", str(tmp_path / "e"))
    assert code == 0, err
    tpu, l4 = json.loads((tmp_path / "e" / "report.json").read_text())["sides"]
    assert tpu["flopsSource"] == str(rehearsal) and l4["flopsPerStep"] == 2e12
    assert l4["flopsSource"] == f"{rehearsal} (side bench-tpu: this side declared none)"
