"""No traceback from any flag or file input. Every file input goes through one bounded reader
(components/inputfile.py: a size bound, a JSON depth bound, pipes read as files); numbers meant to be positive and finite
are refused otherwise; an output folder that cannot be written is refused before a run; a missing optional extra is
one line naming its install command; the deploy-time check's failure is one line. Each refusal is one line on
stderr, exit 2 (1 where the documented exit statuses say anything else), checked through the commands' own entry points."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml
from helpers import ROOT, deadline, minimal_values
from ray_tpu_gke import inputfile
from quota_infos import INFOS

from plan import __main__ as plan_main
from plan import cli, mocks
from plan.compare import __main__ as compare_main
from policy import engine

DEEP = "[" * 100_000 + "]" * 100_000  # RecursionError in json.loads, whatever the recursion limit the commands set


def one_error_line(capsys, code: int, expected_code: int) -> str:
    out, err = capsys.readouterr()
    assert code == expected_code, err
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.fixture
def deep_json(tmp_path) -> Path:
    path = tmp_path / "deep.json"
    path.write_text(DEEP)
    return path


# --- file inputs: size and depth bounds --------------------------------------------------------------------------


def test_deep_json_is_refused_by_quotas_measured_and_policy(deep_json, tmp_path, capsys):
    with deadline():
        line = one_error_line(capsys, plan_main.main(["dev", "--quotas", str(deep_json)]), 2)
    assert line == f"error: --quotas {deep_json}: nests deeper than {inputfile.MAX_JSON_DEPTH} levels, far more " \
                   "than a QuotaInfo list; refusing it"
    with deadline():
        code = compare_main.main(["compare", "--estimate", "--measured", str(deep_json), "--out", str(tmp_path)])
    assert f"--measured {deep_json}: nests deeper than" in one_error_line(capsys, code, 2)
    with deadline():
        line = one_error_line(capsys, engine.main([str(deep_json)]), 2)
    assert line.startswith(f"error: cannot read plan {deep_json}: nests deeper than")


def test_json_within_the_depth_bound_is_read_and_depth_ignores_brackets_in_strings(tmp_path):
    assert inputfile.json_depth('[["]]]]\\"[[[", {"a": [1]}]]') == 4
    shallow = tmp_path / "ok.json"
    shallow.write_text("[" * inputfile.MAX_JSON_DEPTH + "]" * inputfile.MAX_JSON_DEPTH)
    assert inputfile.read_json(shallow, "--x", "x") is not None
    shallow.write_text("[" * (inputfile.MAX_JSON_DEPTH + 1) + "]" * (inputfile.MAX_JSON_DEPTH + 1))
    with pytest.raises(inputfile.InputError, match="nests deeper than"):
        inputfile.read_json(shallow, "--x", "x")


def test_an_endless_input_is_read_only_up_to_its_bound(capsys):
    with deadline():  # /dev/zero used to be read until memory ran out
        line = one_error_line(capsys, plan_main.main(["dev", "--quotas", "/dev/zero"]), 2)
    assert line == f"error: --quotas /dev/zero: is larger than {inputfile.MAX_JSON_BYTES >> 20} MiB, far more than " \
                   "a QuotaInfo list; refusing to read it"


@pytest.mark.parametrize("content, message", [
    (b"\xff\xfe[]", "is not UTF-8 text (byte 0xff at offset 0)"),
    (b"[NaN]", "is not a QuotaInfo list: NaN is not JSON (RFC 8259 has no NaN or Infinity)"),
    (b"[1,", "is not a QuotaInfo list: Expecting value: line 1 column 4 (char 3)"),
])
def test_what_is_not_json_text_is_one_line(tmp_path, capsys, content, message):
    path = tmp_path / "q.json"
    path.write_bytes(content)
    line = one_error_line(capsys, plan_main.main(["dev", "--quotas", str(path)]), 2)
    assert line == f"error: --quotas {path}: {message}"


@pytest.mark.parametrize("entry", [
    {"dimensions": [], "details": {"value": "1"}},
    {"dimensions": {}, "details": 5},  # found by fuzzing: AttributeError on details.get
    {"dimensions": {}, "details": {"value": "\u0661"}},  # an Arabic-Indic one: str.isdigit, not int64
    {"dimensions": {}, "details": {"value": "9" * 5000}},
    {"dimensions": {"region": 5}, "details": {}},
    {"dimensions": {}, "details": {}, "applicableLocations": 5},
])
def test_a_quota_entry_the_check_cannot_read_is_one_line(tmp_path, capsys, entry):
    path = tmp_path / "q.json"
    path.write_text(json.dumps([{"quotaId": "X", "dimensionsInfos": [entry]}]))
    line = one_error_line(capsys, plan_main.main(["dev", "--quotas", str(path)]), 2)
    assert line.startswith(f"error: --quotas {path}: [0].dimensionsInfos[0] must have dimensions (a map of strings)")
    assert len(line) < 400


def test_a_measured_flops_that_is_not_a_finite_positive_number_is_not_taken(tmp_path):
    from plan.compare import estimate

    path = tmp_path / "report.json"
    for value in ("1e400", "true", "-5", "0"):  # 1e400 parses as infinity
        path.write_text('{"sides": [{"name": "a", "flopsPerStep": %s}]}' % value)
        with pytest.raises(estimate.EstimateError, match="no side or result there declares flopsPerStep"):
            estimate.measured(path)


def test_a_large_quota_file_reaches_the_check_with_only_the_ids_it_reads(tmp_path, monkeypatch):
    """20,000 QuotaInfos took about two minutes: each one the invoke answered became a tree of Outputs in the SDK.
    The check reads only the quota IDs of TPU and GPU needs, so only those are answered, whatever the file holds."""
    filler = [{"quotaId": f"OTHER-{i}", "dimensionsInfos": [{"dimensions": {}, "details": {"value": "1"}}]}
              for i in range(20_000)]
    answered = []
    original = mocks._as_invoke_result
    monkeypatch.setattr(mocks, "_as_invoke_result", lambda info: answered.append(info["quotaId"]) or original(info))
    program = mocks.PlanMocks("p", quotas=filler + INFOS, quotas_source="q.json")
    call = type("Call", (), {"token": "gcp:cloudquota/getSQuotaInfos:getSQuotaInfos", "args": {}})()
    result = program.call(call)
    assert sorted(answered) == sorted(info["quotaId"] for info in INFOS)
    assert {i["quotaId"] for i in result["quotaInfos"]} <= set(mocks.quota_ids())
    assert "(20003 QuotaInfos)" in program.notes[-1]  # the note still counts what the file gave


@pytest.mark.parametrize("steps", [[None], ["x"], [{"urn": 1, "newState": []}], [{"newState": {"inputs": [1]}}]])
def test_a_plan_whose_steps_are_not_steps_is_one_line(tmp_path, capsys, steps):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"stack": "dev", "steps": steps}))  # found by fuzzing: AttributeError in the view
    line = one_error_line(capsys, engine.main([str(path)]), 2)
    assert line.startswith(f"error: {path} is not a plan JSON (python -m plan STACK --json): steps[0] must be")


def test_a_plan_misshapen_deeper_down_is_one_line_or_checked(tmp_path, capsys):
    assert plan_main.main(["staging", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    for step in plan["steps"]:  # every input of every resource of another type than the rules expect
        step["newState"]["inputs"] = {key: [5] for key in step["newState"]["inputs"]}
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    code = engine.main([str(path)])
    out, err = capsys.readouterr()
    assert code in (0, 1, 2) and "Traceback" not in err, err
    assert code != 2 or (len(err.strip().splitlines()) == 1 and "a rule could not read it" in err), err


def test_a_plan_whose_budget_is_not_an_amount_is_one_line(tmp_path, capsys):
    assert plan_main.main(["prod", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["cost"]["monthlyBudget"] is not None  # prod sets one: the budget rule reads it
    plan["cost"]["monthlyBudget"] = "lots"  # found by fuzzing: decimal.InvalidOperation out of the budget rule
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    line = one_error_line(capsys, engine.main([str(path)]), 2)
    assert "a rule could not read it (InvalidOperation" in line


# --- pipes and process substitution: both front ends read them, bounded ------------------------------------------


def _pipe_with(data: bytes) -> tuple[str, threading.Thread]:
    """/dev/fd/N of a pipe a thread fills, as the shell's `<(command)` hands it."""
    read_end, write_end = os.pipe()

    def fill():
        with os.fdopen(write_end, "wb") as stream:
            stream.write(data)

    writer = threading.Thread(target=fill, daemon=True)
    writer.start()
    return f"/dev/fd/{read_end}", writer


@pytest.mark.parametrize("front_end", ["console script", "python -m plan"])
def test_a_quotas_pipe_is_read_the_same_by_both_front_ends(front_end, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)  # the console script moves into the program's folder
    path, writer = _pipe_with(json.dumps(INFOS).encode())
    with deadline():
        if front_end == "console script":
            code = cli.main(["plan", "staging", "--quotas", path, "--json"])
        else:
            code = plan_main.main(["staging", "--quotas", path, "--json"])
    writer.join()
    os.close(int(path.rsplit("/", 1)[1]))
    err = capsys.readouterr().err
    # staging needs 16 CT6E chips in us-east5, where these quotas give 8: the pipe's content was read and checked.
    assert code == 1 and "the project has 8 TPU chips, the stack needs 16" in err, err


@pytest.mark.parametrize("front_end", ["console script", "python -m plan"])
def test_a_stack_file_pipe_is_read_by_both_front_ends(front_end, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    path, writer = _pipe_with((ROOT / "stacks" / "Pulumi.dev.yaml").read_bytes())
    with deadline():
        argv = ["dev", "--config-file", path, "--json"]
        code = cli.main(["plan", *argv]) if front_end == "console script" else plan_main.main(argv)
    writer.join()
    os.close(int(path.rsplit("/", 1)[1]))
    out, err = capsys.readouterr()
    assert code == 0 and json.loads(out)["stack"] == "dev", err  # was "no stack config /dev/fd/N": not a regular file


def test_the_console_script_keeps_a_pipes_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli._absolute_paths(["--quotas", "/dev/fd/63", "--rates=r.yaml", "--config-file", "-"]) == [
        "--quotas", "/dev/fd/63", f"--rates={tmp_path / 'r.yaml'}", "--config-file", "-"]


# --- numbers: finite, in range, one line naming the flag -----------------------------------------------------------


@pytest.mark.parametrize("flag, value, allowed", [
    ("--flops-per-step", "nan", "a finite number of at least 1"),
    ("--flops-per-step", "inf", "a finite number of at least 1"),
    ("--flops-per-step", "0", "a finite number of at least 1"),
    ("--flops-per-step", "1e-320", "a finite number of at least 1"),  # a step's time would underflow to 0
    ("--tokens-per-step", "-1", "a whole number of at least 1"),
    ("--tokens-per-step", "0.5", "a whole number of at least 1"),
    ("--steps", "0", "a whole number of at least 1"),
    ("--steps", "-3", "a whole number of at least 1"),
    ("--steps", "1e3", "a whole number of at least 1"),
    ("--steps", "9" * 400, "a whole number of at least 1"),  # found by fuzzing: OverflowError as a float
    ("--timeout", "nan", "a finite number above 0"),
    ("--timeout", "-inf", "a finite number above 0"),
    ("--tolerance", "nan", "a finite number of at least 0"),
    ("--slo-ms", "nan", "a finite number above 0"),
    ("--slo-ms", "0", "a finite number above 0"),
    ("--slo-ms", "-5", "a finite number above 0"),
    ("--request-timeout-s", "inf", "a finite number above 0"),
])
def test_numbers_that_are_not_finite_and_in_range_are_refused(flag, value, allowed, capsys):
    mode = ["--serve", "--local"] if flag in ("--slo-ms", "--request-timeout-s") else ["--estimate"]
    with pytest.raises(SystemExit) as exit_:
        compare_main.parse_args(["compare", *mode, f"{flag}={value}"])  # `=`: argparse reads "-inf" as an option
    line = one_error_line(capsys, exit_.value.code, 2)
    assert line == f"python -m plan.compare: error: argument {flag}: {value!r} is not allowed; allowed: {allowed} " \
                   "(--help lists the options)"


@pytest.mark.parametrize("flag, value, allowed", [
    ("--poll", "nan", "a finite number of at least 0"),  # time.sleep(nan) raised ValueError between two reads
    ("--poll", "-1", "a finite number of at least 0"),
    ("--timeout", "0", "a whole number of at least 1"),
])
def test_verify_refuses_numbers_out_of_range_in_one_line(flag, value, allowed, capsys):
    from plan.verify import cli as verify_cli

    with pytest.raises(SystemExit) as exit_:
        verify_cli.parse_args(["dev", "--context", "c", f"{flag}={value}"])
    line = one_error_line(capsys, exit_.value.code, 2)
    assert line == f"python -m plan.verify: error: argument {flag}: {value!r} is not allowed; allowed: {allowed} " \
                   "(--help lists the options)"


@pytest.mark.parametrize("value", ["nan,0.5", "0.2,inf", "0,0.5", "-0.1,0.5", "0.6,0.3"])
def test_an_mfu_range_that_is_not_two_fractions_is_refused(value, capsys):
    with pytest.raises(SystemExit) as exit_:
        compare_main.parse_args(["compare", "--estimate", f"--mfu={value}"])
    line = one_error_line(capsys, exit_.value.code, 2)
    assert line.startswith(f"python -m plan.compare: error: argument --mfu: {value!r} is not allowed; allowed:")


def test_numbers_in_range_are_taken():
    args = compare_main.parse_args(["compare", "--estimate", "--flops-per-step", "1e12", "--steps", "5",
                                    "--tolerance", "0", "--mfu", "0.2,0.4"])
    assert (args.flops_per_step, args.steps, args.tolerance, args.mfu_range) == (1e12, 5, 0.0, (0.2, 0.4))


# --- the report's folder ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("out", ["/dev/null/x", "/dev/null"])
def test_an_out_folder_that_cannot_be_made_is_refused_before_the_run(out, capsys):
    with pytest.raises(SystemExit) as exit_:
        compare_main.parse_args(["compare", "--estimate", "--flops-per-step", "1e12", "--out", out])
    line = one_error_line(capsys, exit_.value.code, 2)
    assert line == f"python -m plan.compare: error: argument --out: {out!r} cannot hold the report: /dev/null is " \
                   "not a folder (--help lists the options)"


def test_a_folder_that_fails_at_write_time_is_one_line(capsys):
    from plan.compare import output
    from plan.compare.serving import output as serving_output

    for write in (output.write, serving_output.write):  # past the check: a disk that filled, a permission changed
        assert output.write_or_say({"problems": []}, Path("/dev/null/x"), write) == 1
        line = one_error_line(capsys, 1, 1)
        assert line == "error: cannot write the report into /dev/null/x: Not a directory"


def test_an_out_folder_still_to_be_made_is_taken(tmp_path):
    args = compare_main.parse_args(["compare", "--estimate", "--out", str(tmp_path / "a" / "b")])
    assert args.out == tmp_path / "a" / "b" and not (tmp_path / "a").exists()  # nothing created by the check


# --- the optional compare extra ---------------------------------------------------------------------------------------


@pytest.fixture
def without_the_compare_extra(monkeypatch):
    """httpx and matplotlib unimportable, and the toolchain's compare modules imported afresh, as in an installation
    without the extra; everything is put back afterwards."""
    for name in ("httpx", "matplotlib", "matplotlib.pyplot"):
        monkeypatch.setitem(sys.modules, name, None)  # `import httpx` raises ImportError
    for name in [n for n in sys.modules if n.startswith("plan.compare")]:
        monkeypatch.delitem(sys.modules, name)


def test_compare_help_works_without_the_extra(without_the_compare_extra, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["compare", "--help"])
    out, err = capsys.readouterr()
    assert exit_.value.code == 0 and out.startswith("usage: ray-tpu-gke compare ") and "--serve" in out, err


@pytest.mark.parametrize("mode, lacking", [
    (["--serve", "--local"], "matplotlib and httpx"),
    (["--estimate", "--flops-per-step", "1e12"], "matplotlib"),
])
def test_a_run_without_the_extra_names_the_install_command(without_the_compare_extra, capsys, mode, lacking):
    from plan.compare import __main__ as fresh

    line = one_error_line(capsys, fresh.main(["compare", *mode], prog="ray-tpu-gke compare"), 1)
    assert line.startswith("error: ray-tpu-gke compare") and f"needs {lacking}, from the optional `compare` " \
        "extra: pip install 'ray-tpu-gke[compare]'" in line, line


def test_a_dry_run_needs_no_extra(without_the_compare_extra, capsys):
    from plan.compare import __main__ as fresh

    assert fresh.main(["compare", "--dry-run"]) == 0, capsys.readouterr().err


# --- the deploy-time check -------------------------------------------------------------------------------------


def test_a_failed_version_check_is_one_line_with_no_traceback(tmp_path):
    """A minor the STABLE channel does not offer: the outputs waiting on the failed check used to be collected while
    the program ran, and asyncio printed each with a traceback ("Task exception was never retrieved")."""
    values = minimal_values()
    values["ray-tpu-gke:cluster"].update(releaseChannel="STABLE", minMasterVersion="1.35")
    path = tmp_path / "Pulumi.test.yaml"
    path.write_text(yaml.safe_dump({"config": values}))
    result = subprocess.run([sys.executable, "-m", "plan", "test", "--config-file", str(path)], cwd=ROOT,
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: deploy-time check failed: minMasterVersion 1.35: GKE's STABLE channel in "
                           "us-east5-b offers no 1.35 version"), line


def test_the_deploy_time_check_fails_as_pulumi_reports_without_a_traceback():
    import pulumi
    from ray_tpu_gke.resources.preflight import PreflightError

    # pulumi's language host reports a RunError as its message alone (pulumi/errors.py RunError).
    assert issubclass(PreflightError, pulumi.RunError)
