"""The example programs of examples/ run under the plan harness, as their own Pulumi projects: what test_library and
the modules beside it that plan an example share."""

from pathlib import Path

import yaml
from helpers import ROOT

from plan import harness

EXAMPLES = ROOT / "examples"
# examples/existing-cluster's config: the cluster it adds slices to
EXISTING_VALUES = {"gcp:project": "acme-ml", "clusterName": "ml-shared", "clusterLocation": "us-east5-b"}


class Recorder(harness.RecordingMonitor):
    """The harness's monitor, kept where a test can read it after the program failed."""

    last = None

    def __init__(self, *args):
        super().__init__(*args)
        Recorder.last = self


def run_example(monkeypatch, example: Path, stack: str, values: dict) -> harness.Plan:
    """The example's __main__.py under the plan harness, as its own Pulumi project (config keys in its namespace)."""
    project = yaml.safe_load((example / "Pulumi.yaml").read_text())["name"]
    monkeypatch.setattr(harness, "PROJECT", project)
    monkeypatch.setattr(harness, "RecordingMonitor", Recorder)
    values = {key if ":" in key else f"{project}:{key}": value for key, value in values.items()}
    return harness.run_program(stack, values, program=example / "__main__.py")


def steps(plan, type_):
    return [s for s in plan.steps if s.type == type_]


def only_stack_registered():
    return [s.type for s in Recorder.last.steps] == ["pulumi:pulumi:Stack"]
