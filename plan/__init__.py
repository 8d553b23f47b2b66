"""The offline plan: the real program under Pulumi mocks, printed as `pulumi preview` would (`python -m plan`)."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _bind_library() -> None:
    """Import `ray_tpu_gke` from this checkout's `components/`, whatever is installed.

    `--diff-against` plans another revision in a git worktree: its program must run that revision's library, not the
    one installed (editable) from the main checkout. Installed from the wheel there is no checkout beside it.
    """
    package = ROOT / "components"
    if not (package / "__init__.py").is_file():
        return  # installed from the wheel (as ray_tpu_gke_tools): the installed library is the one to plan with
    loaded = sys.modules.get("ray_tpu_gke")
    if loaded is not None and Path(loaded.__file__).resolve().parent == package:
        return
    spec = importlib.util.spec_from_file_location(
        "ray_tpu_gke", package / "__init__.py", submodule_search_locations=[str(package)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["ray_tpu_gke"] = module
    spec.loader.exec_module(module)


_bind_library()
