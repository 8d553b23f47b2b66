"""The layout holds: components/ by layer with imports pointing one way, no import cycles, no module over 500 lines.

Imports are read from the source (every `import` and `from ... import`, in functions and `TYPE_CHECKING` blocks too),
so a cycle or a layer broken by a lazy import counts as well.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from helpers import ROOT

PACKAGES = {"components": "ray_tpu_gke", "plan": "plan", "policy": "policy", "workloads": "workloads"}
# Each layer may import only the layers before it (README, "Architecture").
LAYERS = ("catalog", "admission", "spec", "render", "resources")
MAX_LINES = 500


def modules() -> dict[str, Path]:
    out = {}
    for folder, name in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([name, *parts])] = path
    return out


MODULES = modules()


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> list[str]:
    if node.level:
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        base = package[:len(package) - node.level + 1]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    targets = []
    for alias in node.names:
        candidate = f"{prefix}.{alias.name}"
        targets.append(candidate if candidate in MODULES else prefix)
    return targets


def imports(module: str) -> set[str]:
    path = MODULES[module]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            found |= set(_resolve(module, path, node))
    # a package's own __init__ is imported with any of its modules, so it is no edge of its own
    return {m for m in found if m in MODULES and m != module}


GRAPH = {m: imports(m) for m in MODULES}


def _cycle_from(start: str) -> list[str] | None:
    stack, seen = [(start, [start])], set()
    while stack:
        node, path = stack.pop()
        for nxt in GRAPH[node]:
            if nxt == start:
                return path + [start]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, path + [nxt]))
    return None


def test_no_import_cycles():
    cycles = {tuple(c) for m in MODULES if (c := _cycle_from(m)) is not None
              # a package's __init__ that re-exports its modules is imported by them only through the package
              if not any(MODULES[x].name == "__init__.py" for x in c[:-1])}
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in sorted(cycles))


@pytest.mark.parametrize("layer", LAYERS)
def test_components_layers_import_only_the_layers_before_them(layer):
    allowed = {f"ray_tpu_gke.{lower}" for lower in LAYERS[:LAYERS.index(layer) + 1]}
    wrong = sorted(f"{m} imports {t}" for m in GRAPH if m.startswith(f"ray_tpu_gke.{layer}")
                   for t in GRAPH[m] if t.startswith("ray_tpu_gke.") and t != "ray_tpu_gke"
                   and not any(t == a or t.startswith(a + ".") for a in allowed))
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("layer", ("catalog", "admission", "render"))
def test_pure_layers_import_no_pulumi(layer):
    impure = sorted(m for m, path in MODULES.items() if m.startswith(f"ray_tpu_gke.{layer}")
                    for node in ast.walk(ast.parse(path.read_text()))
                    if isinstance(node, (ast.Import, ast.ImportFrom))
                    and any(n.startswith("pulumi") for n in ([a.name for a in node.names] if isinstance(node, ast.Import)
                                                              else [node.module or ""])))
    assert not impure, impure


def test_no_module_over_500_lines():
    long = {m: n for m, path in MODULES.items() if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, long


def test_the_graph_is_read():
    """The checks above read real edges: the platform imports the cluster, the cluster the manifests."""
    assert "ray_tpu_gke.resources.cluster" in GRAPH["ray_tpu_gke.resources.platform"]
    assert "ray_tpu_gke.render.manifests" in GRAPH["ray_tpu_gke.resources.cluster"]
    assert "plan.review.changes" in GRAPH["plan.review.classify"]
