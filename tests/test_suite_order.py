"""The suite's own scheduling: the modules that start a local Ray cluster are collected first (tests/conftest.py),
so that, with `--no-loadscope-reorder` (Makefile), pytest-xdist starts them first instead of last."""

from __future__ import annotations

import re
from pathlib import Path

import conftest
from helpers import ROOT

THIS = Path(__file__).name


class _Item:
    def __init__(self, name: str, ray: bool):
        self.name, self._ray = name, ray

    def get_closest_marker(self, name: str):
        return object() if (name == "local_ray" and self._ray) else None


class _Config:
    def getoption(self, name: str):
        return None  # no --stack: every test kept


def test_local_ray_modules_come_first_and_the_rest_keep_their_order():
    items = [_Item("a", False), _Item("ray-1", True), _Item("b", False), _Item("c", False), _Item("ray-2", True)]
    conftest.pytest_collection_modifyitems(_Config(), items)
    assert [i.name for i in items] == ["ray-1", "ray-2", "a", "b", "c"]


def test_every_module_that_starts_a_local_cluster_is_marked():
    """A module starts one where its script half enters workloads.local_cluster.LocalCluster or it runs the local
    comparison (`plan.compare ... --local`, plan/compare/local_run.py) in a subprocess."""
    modules = {path.name: path.read_text() for path in (ROOT / "tests").glob("test_*.py") if path.name != THIS}
    starts = {name for name, text in modules.items()
              if re.search(r"\bLocalCluster\(", text) or '"--local", "--out"' in text}
    # `pytestmark = pytest.mark.local_ray`, or a list of marks that holds it (tests/test_package.py)
    marked = {name for name, text in modules.items() if "pytestmark = pytest.mark.local_ray" in text
              or re.search(r"pytestmark = \[[^]]*\bpytest\.mark\.local_ray\b", text)}
    assert len(starts) >= 4 and starts == marked
