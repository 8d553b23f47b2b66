"""The suite's two lanes (Makefile): `make test` deselects the tests marked local_ray, `make test-ray` runs only
them. A test that starts a local Ray cluster without the mark would run in the unit lane, on a machine where another
module's cluster may be running beside it; the mark is checked here."""

from __future__ import annotations

import re

from helpers import ROOT

THIS = "test_suite_order.py"


def test_every_module_that_starts_a_local_cluster_is_marked_and_the_ray_lane_collects_it(makefile):
    """A module starts one where its script half enters workloads.local_cluster.LocalCluster or it runs the local
    comparison (`plan.compare ... --local`, plan/compare/local_run.py) in a subprocess (tests/compare/compare_runs.py
    compare_locally); it is marked for the whole
    module (`pytestmark`) or on the test that does (`@pytest.mark.local_ray`, tests/project/test_package.py). The
    Ray lane collects the modules the Makefile's RAY_MODULES finds (grep -E, one line at a time): exactly these."""
    modules = {path.name: path.read_text() for path in (ROOT / "tests").rglob("test_*.py") if path.name != THIS}
    starts = {name for name, text in modules.items()
              if re.search(r"\bLocalCluster\(", text) or '"--local", "--out"' in text
              or re.search(r"\bcompare_locally\(", text)}
    marked = {name for name, text in modules.items() if "pytestmark = pytest.mark.local_ray" in text
              or re.search(r"pytestmark = \[[^]]*\bpytest\.mark\.local_ray\b", text)
              or re.search(r"(?m)^\s*@pytest\.mark\.local_ray", text)}
    grep = re.search(r"(?m)^RAY_MODULES = .*grep -rlE --include='test_\*\.py' '([^']+)' tests\)\)$", makefile).group(1)
    collected = {name for name, text in modules.items()
                 if re.search(grep.replace("[[:space:]]", r"\s"), text, re.MULTILINE)}
    assert len(starts) >= 4 and starts == marked == collected


def test_the_lanes_split_on_the_mark_and_ci_runs_both(makefile, ci_run):
    unit = re.search(r"(?m)^test: .*\n\t(.*)$", makefile).group(1)
    ray = re.search(r"(?m)^test-ray: .*\n\t(.*)$", makefile).group(1)
    assert '-m "not local_ray"' in unit and ray.endswith("-m local_ray $(STACK_ARGS) $(RAY_MODULES)")
    assert re.search(r"(?m)^test-all: test test-ray$", makefile)
    assert re.search(r"(?m)^make test-all$", ci_run)
