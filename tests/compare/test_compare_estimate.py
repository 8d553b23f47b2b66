"""`python -m plan.compare compare --estimate` and `--dry-run`: what a job would take and cost at an MFU range before
any hardware exists (plan/compare/estimate.py), and what a live run would create and may cost (plan/compare/dryrun.py).
In-process against the compare stack's own plan; nothing runs."""

from __future__ import annotations

import json

import pytest

from plan.compare import __main__ as compare_cli
from plan.compare import estimate, markdown, memory, sides
from ray_tpu_gke import catalog

FLOPS = 6.0e15  # model FLOPs of one step of a ~100M-parameter language model at a large batch (a stated input)


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
        assert (f"runtime environment RAY_TPU_GKE_RESULT_DIR=/gcs/compare RAY_TPU_GKE_RUN=compare-20270115080000 "
                f"RAY_TPU_GKE_SEED=0 RAY_TPU_GKE_SIDE={side.name}\n") in out
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


@pytest.mark.parametrize("fields, message", [
    ({"tokensPerStep": "4096"}, "tokensPerStep: '4096' is not a positive whole number"),
    ({"tokensPerStep": 1e-320}, "tokensPerStep: 1e-320 is not a positive whole number"),
    ({"flopsPerStep": 1e-320}, "flopsPerStep: 1e-320 is below one FLOP"),
    ({"name": ["bench-tpu"]}, "name: ['bench-tpu'] is not a side's name"),
    ({"model": {"parameters": 1e8, "seqLen": "x"}}, "model.seqLen: 'x' is not a positive whole number"),
    ({"model": {"parameters": 1e8, "layers": 2.5}}, "model.layers: 2.5 is not a positive whole number"),
    ({"model": {"parameters": 1e8}, "batchSize": {"n": 8}}, "batchSize: {'n': 8} is not a positive whole number"),
])
def test_a_measured_result_with_a_field_of_the_wrong_kind_is_refused_with_its_key(planned, capsys, tmp_path, fields,
                                                                                 message):
    """Fuzzed result documents once ended the estimate in a traceback (a string divided, a step time of zero)."""
    result = tmp_path / "result.json"
    result.write_text(json.dumps({"side": "bench-tpu", "flopsPerStep": 2e12, **fields}))
    code, _, err = run(capsys, "--estimate", "--measured", str(result), "--out", str(tmp_path / "e"))
    assert code == 2 and f"--measured {result}: {message}" in err and "Traceback" not in err, err
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"sides": [{"name": "bench-a100", "flopsPerStep": 3e12},
                                            {"name": "bench-tpu", "flopsPerStep": 2e12, **fields}]}))
    code, _, err = run(capsys, "--estimate", "--measured", str(report), "--out", str(tmp_path / "e"))
    assert code == 2 and f"--measured {report}: sides[1].{message}" in err, err


@pytest.mark.parametrize("argv, message", [
    (["--model", "parameters=1e308,layers=1,dModel=1,heads=1,seqLen=1,batch=1"], "sides[0].flopsPerStep (inf)"),
    (["--flops-per-step", "1e308", "--mfu", "1e-300,1e-300"], "sides[0].stepTimeS.low (inf)"),
])
def test_numbers_whose_estimate_overflows_are_refused_naming_the_figure(planned, capsys, tmp_path, argv, message):
    code, _, err = run(capsys, "--estimate", *argv, "--out", str(tmp_path / "e"))
    assert code == 2 and f"error: the estimate's {message} is beyond 64-bit floating point" in err, err
    assert not (tmp_path / "e").exists()


GPT2_SMALL = "parameters=124e6,layers=12,dModel=768,heads=12,seqLen=1024,batch=256"


def test_per_side_mfu_gives_the_break_even_sentence_and_a_memory_verdict_per_side(planned, capsys, tmp_path):
    code, out, err = run(capsys, "--estimate", "--flops-per-step", str(FLOPS), "--steps", "1000",
                         "--sides", "bench-tpu,bench-a100,bench-h100", "--mfu", "bench-tpu=0.3,0.5",
                         "--mfu", "bench-a100=0.4,0.6", "--mfu", "0.35,0.55", "--model", GPT2_SMALL,
                         "--out", str(tmp_path))
    assert code == 0, err
    document = json.loads((tmp_path / "report.json").read_text())
    tpu, a100, h100 = document["sides"]
    found = {s.name: s for s in sides.sides(*planned)}
    # Each side at its own range; a side not named at the bare range.
    assert [s["mfuRange"] for s in (tpu, a100, h100)] == [{"low": 0.3, "high": 0.5}, {"low": 0.4, "high": 0.6},
                                                           {"low": 0.35, "high": 0.55}]
    assert a100["stepTimeS"]["low"] == pytest.approx(FLOPS / (0.6 * 8 * 312e12))
    # Cost per peak FLOP: the side's price for the time its devices take at 100 % MFU.
    per_eflop = {name: found[name].hourly / 3600 / (8 * peak) * 1e18
                 for name, peak in (("bench-tpu", 918e12), ("bench-a100", 312e12), ("bench-h100", 989.5e12))}
    for row in (tpu, a100, h100):
        assert row["costPerPeakEflopUsd"] == pytest.approx(per_eflop[row["name"]])
        assert row["peakPrecision"] == "bf16 dense"
    # Break-even: the TPU side costs less per job while tpu MFU / gpu MFU > its cost per peak FLOP / the GPU's.
    pairs = {p["against"]: p for p in document["breakEven"]}
    assert set(pairs) == {"bench-a100", "bench-h100"} and all(p["side"] == "bench-tpu" for p in pairs.values())
    ratio_a100 = per_eflop["bench-tpu"] / per_eflop["bench-a100"]
    ratio_h100 = per_eflop["bench-tpu"] / per_eflop["bench-h100"]
    assert pairs["bench-a100"]["mfuRatio"] == pytest.approx(ratio_a100)
    assert 0 < ratio_a100 < 0.3 / 0.6 and 0 < ratio_h100 < 0.3 / 0.55  # at the plan's prices: below the ranges' worst
    # At the break-even ratio, the two jobs cost the same.
    assert FLOPS / (ratio_a100 * 0.5 * 8 * 918e12) * found["bench-tpu"].hourly == pytest.approx(
        FLOPS / (0.5 * 8 * 312e12) * found["bench-a100"].hourly)
    # 30-50 % against 40-60 %: at worst 0.3/0.6 = 50 % of A100's, above the break-even: cheaper throughout; against
    # the H100 at 35-55 %, 0.3/0.55 = 55 % ... 0.5/0.35: the break-even is below the least, so cheaper too.
    assert pairs["bench-a100"]["atRanges"] == "cheaper"
    assert pairs["bench-h100"]["rangeRatio"] == pytest.approx({"low": 0.3 / 0.55, "high": 0.5 / 0.35})
    lines = out.splitlines()
    assert (f"Break-even (estimate): bench-tpu costs less per job than bench-a100 while its MFU is at least "
            f"{ratio_a100:.0%} of bench-a100's") in out
    # Memory: 16 bytes per parameter; per layer s*b*h*(34 + 5*a*s/h) bytes at 256/8 = 32 sequences per device.
    states = 16 * 124e6
    activations = 12 * 1024 * 32 * 768 * (34 + 5 * 12 * 1024 / 768)
    assert a100["memoryFit"]["verdict"] == "fits" and a100["memoryFit"]["perDeviceGiB"] == pytest.approx(
        (states + activations) / 2**30)
    assert activations > 32e9 and tpu["memoryFit"]["verdict"] == "does not fit"  # v6e: 32 GB per chip
    assert "Memory (estimate): bench-a100: fits (" in out and "Memory (estimate): bench-tpu: does not fit (" in out
    assert sum(line.startswith("Memory (estimate)") for line in lines) == 3
    text = (tmp_path / "report.md").read_text()
    assert "| memory fit of the model (estimate) | does not fit" in text
    assert "| MFU assumed | 30%–50% | 40%–60% | 35%–55% |" in text


def test_the_declared_model_gives_the_flops_where_the_job_declares_none(planned, capsys, tmp_path):
    code, out, err = run(capsys, "--estimate", "--model", GPT2_SMALL, "--sides", "bench-h100",
                         "--out", str(tmp_path))
    assert code == 0, err
    (h100,) = json.loads((tmp_path / "report.json").read_text())["sides"]
    tokens = 256 * 1024
    assert h100["tokensPerStep"] == tokens and h100["flopsSource"] == estimate.ANALYTIC_SOURCE
    assert h100["flopsPerStep"] == pytest.approx(6 * 124e6 * tokens + 6 * 12 * 768 * 1024 * tokens)
    # Cost per 1M tokens to three significant figures.
    span = h100["costPer1MTokensUsd"]
    shown = f"{markdown.usd_significant(span['low'])} – {markdown.usd_significant(span['high'])} per 1M tokens"
    assert shown in out


def test_memory_fit_verdicts():
    hbm = 80e9
    small = {"parameters": 1e9, "layers": 2, "seqLen": 128, "dModel": 256, "heads": 4}
    assert memory.fit(small, 8, 8, hbm)["verdict"] == "fits"
    # 7B parameters: 112 GB of states; with ~0 activations they need ceil(112 / 80) = 2 devices' share.
    big = {**small, "parameters": 7e9}
    verdict = memory.fit(big, 8, 8, hbm)
    acts = memory.activation_bytes(layers=2, seq_len=128, sequences=1, d_model=256, heads=4)
    assert verdict["verdict"] == "needs sharding" and verdict["shardOver"] == 2 == -(-16 * 7e9 // (hbm - acts))
    assert "needs sharding over 2 devices" in memory.sentence("s", verdict)
    # 70B: 1.12 TB of states, more than 8 x 80 GB: does not fit on the side's 8 devices.
    huge = memory.fit({**small, "parameters": 70e9}, 8, 8, hbm)
    assert huge["verdict"] == "does not fit" and huge["shardOver"] == 15
    assert "even split over all 8 devices it would need 15" in memory.sentence("s", huge)
    # No shape: the states alone are judged, and it says the activations were not counted.
    bare = memory.fit({"parameters": 1e9}, None, 8, hbm)
    assert bare["verdict"] == "fits" and bare["activationsGiB"] is None and "activationsNote" in bare
    assert memory.fit(None, 8, 8, hbm) is None and memory.fit({"parameters": 1e9}, 8, 8, None) is None


def test_mfu_per_side_and_model_arguments():
    assert estimate.parse_mfu_args(None) == ((0.3, 0.6), {})
    assert estimate.parse_mfu_args(["0.2,0.4", "bench-tpu=0.3,0.5"]) == ((0.2, 0.4), {"bench-tpu": (0.3, 0.5)})
    for bad in (["=0.3,0.5"], ["bench-tpu=0.6,0.3"], ["bench-tpu=30,60"]):
        with pytest.raises(ValueError):
            estimate.parse_mfu_args(bad)
    assert estimate.parse_model("parameters=1.5e9,layers=24") == {"parameters": 1.5e9, "layers": 24}
    for bad in ("layers=2", "parameters=1e9,width=3", "parameters=1e9,layers=2.5", "parameters=-1"):
        with pytest.raises(ValueError):
            estimate.parse_model(bad)


def test_an_mfu_for_a_side_not_in_the_estimate_is_refused(planned, capsys, tmp_path):
    code, _, err = run(capsys, "--estimate", "--flops-per-step", "1e12", "--sides", "bench-tpu",
                       "--mfu", "bench-v100=0.3,0.5", "--out", str(tmp_path))
    assert code == 2 and "--mfu names bench-v100, not a side of this estimate; its sides: bench-tpu" in err


@pytest.mark.parametrize("value,shown", [(0.012345, "$0.0123"), (1.2345, "$1.23"), (1234.5, "$1,230"),
                                         (0.0099999, "$0.0100"), (0.000123456, "$0.000123"), (12.0, "$12.0")])
def test_money_to_three_significant_figures(value, shown):
    assert markdown.usd_significant(value) == shown
