"""The project files a user and the Pulumi CLI read: Pulumi.yaml, stack files, requirements, Makefile, CI."""

import json
import re

import jsonschema
import yaml

from helpers import ROOT, STACKS, config_of


def test_pulumi_yaml_validates_against_the_project_schema():
    schema = json.loads((ROOT / "tests/data/pulumi/project.json").read_text())
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    jsonschema.validate(project, schema)
    assert project["name"] == "ray-tpu-gke"
    assert project["runtime"] == {"name": "python", "options": {"toolchain": "pip", "virtualenv": ".venv"}}
    assert project["stackConfigDir"] == "stacks"


def test_schema_check_can_fail():
    schema = json.loads((ROOT / "tests/data/pulumi/project.json").read_text())
    bad = {"name": "ray-tpu-gke", "runtime": {"name": "python", "option": {}}}
    try:
        jsonschema.validate(bad, schema)
    except jsonschema.ValidationError:
        return
    raise AssertionError("a misspelt runtime key passed the schema")


def test_every_stack_is_valid_and_has_the_environments_of_the_brief():
    assert {"dev", "staging", "prod"} <= set(STACKS)
    configs = {stack: config_of(stack) for stack in STACKS}
    assert any(c.cluster.mode == "autopilot" for c in configs.values())
    dev, staging, prod = configs["dev"], configs["staging"], configs["prod"]
    assert dev.cluster.deletion_protection is False and prod.cluster.deletion_protection is True
    assert all(not s.shape.multi_host for s in dev.tpu_slices)
    assert any(s.shape.multi_host and s.generation == "v6e" and s.topology == "4x4" for s in staging.tpu_slices)
    assert len({s.shape.key for s in prod.tpu_slices}) > 1 and prod.ray_clusters and prod.ray_services


def test_no_plain_secrets_in_stack_files():
    for path in (ROOT / "stacks").glob("Pulumi.*.yaml"):
        text = path.read_text().lower()
        assert not re.search(r"(password|token|private_key|secret)\s*:", text), path


def test_requirements_are_exact_pins():
    for name in ("requirements.txt", "requirements-checkov.txt"):
        lines = [line for line in (ROOT / name).read_text().splitlines()
                 if line.strip() and not line.startswith("#") and line != "-e ."]  # -e .: this repository's library
        assert all(re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.+]*", line) for line in lines), (name, lines)
    names = {line.split("==")[0].lower() for line in (ROOT / "requirements.txt").read_text().splitlines()}
    assert {"pulumi", "pulumi-gcp", "pulumi-kubernetes", "pydantic", "pytest"} <= names


def test_ci_runs_the_readme_test_command(ci_run, makefile):
    ci = ci_run
    readme = (ROOT / "README.md").read_text()
    assert "make test" in ci and "make test" in readme
    assert re.search(r"^test: \$\(STAMP\).*\n(\t.*\\\n)*\t.*\$\(BIN\)/python -m pytest", makefile, re.M)


def test_library_ranges_admit_the_pinned_versions():
    """Library users get ranges (pyproject.toml), this repository exact pins: every pin must lie inside its range."""
    import tomllib

    from packaging.requirements import Requirement

    pins = dict(line.split("==") for line in (ROOT / "requirements.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for dependency in map(Requirement, project["dependencies"]):
        assert dependency.name in pins, dependency.name
        assert dependency.specifier.contains(pins[dependency.name]), (dependency, pins[dependency.name])
