"""Entry point of the policy pack, for both of its uses.

- `python -m policy PLAN.json [--stack NAME]` (or `-` for stdin): the rules over a saved offline plan; exit 1 on a
  mandatory violation. `python -m policy --list` lists the rules.
- Run by the Pulumi CLI (`pulumi preview --policy-pack policy`, which executes this file by path): serve the rules
  as the PolicyPack `ray-tpu-gke-policies`.
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

_as_module = __spec__ is not None and __spec__.name == "policy.__main__"
_offline_args = any(a == "-" or a.endswith(".json") or a == "--list" for a in sys.argv[1:])

if not _as_module:
    # Run by path (the Pulumi CLI does): import this package and the catalogue from the repository, not from
    # the pack directory, whose modules would otherwise be top-level names.
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
    sys.path.insert(0, str(ROOT))

if _as_module or _offline_args:
    from policy import engine

    sys.exit(engine.main([a for a in sys.argv[1:]]))
else:
    from policy import pack

    pack.serve()
