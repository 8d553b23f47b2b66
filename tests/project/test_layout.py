"""The layout holds: components/ by layer with imports pointing one way, the packages importing each other only as
their contract allows, no import cycles, no module over 500 lines, no project module imported through `importlib`
and no underscore name imported from another package.

Imports are read from the source (every `import` and `from ... import`, in functions and `TYPE_CHECKING` blocks too),
so a cycle or a layer broken by a lazy import counts as well.
"""

from __future__ import annotations

import ast
import sys
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


def every_import(module: str) -> set[str]:
    """Every module `module` imports, the standard library's and third parties' too."""
    path = MODULES[module]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            found |= set(_resolve(module, path, node))
    return found


def imports(module: str) -> set[str]:
    """The project's modules `module` imports."""
    # a package's own __init__ is imported with any of its modules, so it is no edge of its own
    return {m for m in every_import(module) if m in MODULES and m != module}


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
    # ray_tpu_gke.workload (standard library only) is beneath every layer: the platform sets what the workloads read.
    allowed = {f"ray_tpu_gke.{lower}" for lower in LAYERS[:LAYERS.index(layer) + 1]} | {"ray_tpu_gke.workload"}
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


# Written by `make generate` from the declarations (scripts/generate.py), one TypedDict per model: its size follows
# the argument surface, and nobody edits it by hand.
GENERATED = {"ray_tpu_gke.spec.args"}


def test_no_module_over_500_lines():
    long = {m: n for m, path in MODULES.items() if (n := len(path.read_text().splitlines())) > MAX_LINES
            and m not in GENERATED}
    assert not long, long


def test_generated_modules_say_so():
    assert all("GENERATED by `make generate`" in MODULES[m].read_text() for m in GENERATED)


def test_the_graph_is_read():
    """The checks above read real edges: the platform imports the cluster, the cluster the manifests."""
    assert "ray_tpu_gke.resources.cluster" in GRAPH["ray_tpu_gke.resources.platform"]
    assert "ray_tpu_gke.render.manifests" in GRAPH["ray_tpu_gke.resources.cluster"]
    assert "plan.review.changes" in GRAPH["plan.review.classify"]


# --- the rules between packages (as import-linter's contracts would state them) ------------------------------------

# Which packages each package may import (README, "Folders, import names and what ships"): the library imports none
# of the others; the toolchain (plan, with the policy pack inside it when installed) and the policy pack import the
# library; the workloads (the Ray programs, shipped inside the toolchain only as files to copy) may import the
# library, never the toolchain; no shipped package imports the workloads. What the toolchain needs of the
# workloads is the library's (ray_tpu_gke.workload).
MAY_IMPORT = {"ray_tpu_gke": set(), "plan": {"ray_tpu_gke", "policy"}, "policy": {"ray_tpu_gke"},
              "workloads": {"ray_tpu_gke"}}
# The Ray halves of the local comparisons: scripts the workloads interpreter runs by path, with the workloads package
# on its path as the images carry it (plan/compare/local.py job_path), never imported by a module of the toolchain
# (test_the_ray_halves_are_run_not_imported). Theirs is the workloads' contract: the library and the workloads.
RAY_HALVES = {"plan.compare.local_run", "plan.compare.serving.local_ray"}
# Imports that break the contract today, each with the work that removes it. Every entry must still be an import
# (test_known_exceptions_are_still_real), so that one removed is struck here too.
KNOWN_EXCEPTIONS: set[tuple[str, str]] = set()
# The library's share of the workloads: what their images carry beside ray_tpu_gke.bench (workloads/Dockerfile), so
# the standard library, bench and one another only.
WORKLOAD = "ray_tpu_gke.workload"
WORKLOAD_MAY_IMPORT = {"ray_tpu_gke", "ray_tpu_gke.bench"}


def _package(module: str) -> str:
    return module.split(".")[0]


def _cross_package_edges() -> set[tuple[str, str]]:
    return {(m, t) for m in GRAPH for t in GRAPH[m] if _package(t) != _package(m)}


def _contract_of(module: str) -> str:
    return "workloads" if module in RAY_HALVES else _package(module)


def test_packages_import_only_what_their_contract_allows():
    wrong = sorted(f"{m} imports {t}" for m in GRAPH for t in GRAPH[m] if _package(t) != _contract_of(m)
                   and _package(t) not in MAY_IMPORT[_contract_of(m)] and (m, t) not in KNOWN_EXCEPTIONS)
    assert not wrong, "\n".join(wrong)


def test_the_ray_halves_are_run_not_imported():
    importers = sorted(f"{m} imports {t}" for m in GRAPH for t in GRAPH[m] & RAY_HALVES)
    assert not importers, importers
    assert all('if __name__ == "__main__":' in MODULES[m].read_text() for m in RAY_HALVES)


def test_the_workload_package_needs_only_the_standard_library_and_bench():
    members = [m for m in MODULES if m == WORKLOAD or m.startswith(WORKLOAD + ".")]
    assert f"{WORKLOAD}.slice_checks" in members and f"{WORKLOAD}.train_args" in members
    wrong = sorted(f"{m} imports {t}" for m in members for t in every_import(m)
                   if t.split(".")[0] not in sys.stdlib_module_names and t not in WORKLOAD_MAY_IMPORT
                   and not t.startswith(WORKLOAD + "."))
    assert not wrong, "\n".join(wrong)


def test_the_toolchain_reaches_the_workloads_through_the_library_only():
    """What plan, verify and compare need of the workloads comes from ray_tpu_gke.workload; the workloads import the
    same modules rather than keeping copies."""
    toolchain = [(m, t) for m in GRAPH if _package(m) in ("plan", "policy") and m not in RAY_HALVES for t in GRAPH[m]]
    assert not [(m, t) for m, t in toolchain if _package(t) == "workloads"]
    assert any(t.startswith(WORKLOAD + ".") for _, t in toolchain)
    assert any(t.startswith(WORKLOAD + ".") for m in GRAPH if _package(m) == "workloads" for t in GRAPH[m])


def test_known_exceptions_are_still_real():
    gone = sorted(f"{m} -> {t}" for m, t in KNOWN_EXCEPTIONS if t not in GRAPH.get(m, set()))
    assert not gone, f"no longer imported: strike them from KNOWN_EXCEPTIONS: {gone}"


def test_the_contract_reads_real_edges():
    """The library is imported across packages, so the contract above is checked on real edges."""
    edges = _cross_package_edges()
    assert any(_package(m) == "plan" and _package(t) == "ray_tpu_gke" for m, t in edges)
    assert any(_package(m) == "policy" and _package(t) == "ray_tpu_gke" for m, t in edges)
    assert ("plan.policy_pack", "policy.engine") in edges


# `plan/__init__.py` binds this checkout's components/ as `ray_tpu_gke` by its file location (a loader for
# `--diff-against`'s worktrees, not an import of a module by a computed name).
IMPORTLIB_ALLOWED = {"plan"}
_DYNAMIC_IMPORTS = {"import_module", "__import__", "spec_from_file_location"}


def _dynamic_imports(path: Path) -> list[int]:
    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if name in _DYNAMIC_IMPORTS:
                first = node.args[0] if node.args else None
                third_party = isinstance(first, ast.Constant) and isinstance(first.value, str) and \
                    _package(first.value) not in PACKAGES.values() and first.value.split(".")[0] not in PACKAGES
                if not third_party:
                    lines.append(node.lineno)
    return lines


def test_no_project_module_is_imported_through_importlib():
    found = sorted(f"{MODULES[m].relative_to(ROOT)}:{line}" for m in MODULES if m not in IMPORTLIB_ALLOWED
                   for line in _dynamic_imports(MODULES[m]))
    assert not found, "imported by a computed name, which the layout checks cannot see: " + ", ".join(found)


def _underscore_imports(module: str) -> list[str]:
    path = MODULES[module]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            for alias, target in zip(node.names, _resolve(module, path, node)):
                if target in MODULES and _package(target) != _package(module) and alias.name.startswith("_") \
                        and not alias.name.startswith("__"):
                    found.append(f"{module} imports {target}.{alias.name}")
    return found


# Underscore names imported across packages today (none since the slice checks moved into the library).
UNDERSCORE_EXCEPTIONS: set[str] = set()


def test_no_module_imports_another_packages_underscore_names():
    found = sorted(f for m in MODULES for f in _underscore_imports(m) if f not in UNDERSCORE_EXCEPTIONS)
    assert not found, found
    stale = UNDERSCORE_EXCEPTIONS - {f for m in MODULES for f in _underscore_imports(m)}
    assert not stale, f"strike from UNDERSCORE_EXCEPTIONS: {sorted(stale)}"


# The modules mypy is told to skip (pyproject.toml [tool.mypy] overrides with ignore_errors): this count may only go
# down. Lower it when a module leaves the list; never raise it to let a new module in.
MYPY_EXEMPTIONS = 35


def test_mypy_exemptions_only_shrink_and_spare_the_library():
    import tomllib

    overrides = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"].get("overrides", [])
    relaxed = [m for o in overrides for m in ([o["module"]] if isinstance(o["module"], str) else o["module"])]
    assert not [m for m in relaxed if m == "components" or m.startswith("components.")], "components/ is typed"
    exempt = [m for o in overrides if o.get("ignore_errors") for m in o["module"]]
    assert len(exempt) <= MYPY_EXEMPTIONS, f"{len(exempt)} modules exempt from mypy, more than {MYPY_EXEMPTIONS}"
    assert len(exempt) == MYPY_EXEMPTIONS, f"{len(exempt)} exempt now: lower MYPY_EXEMPTIONS to it"
