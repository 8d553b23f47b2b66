"""What the comparison tells a job, through its environment rather than its command line: the run id, the job's side,
the result folder, the seed, whether it runs simulated and its checkpoint cadence. A job's own argument parser then
never meets a flag it does not know; `bench.start()` and `bench.add_arguments` read these variables.

The comparison sets them on the job's driver (locally: its process; live: the RayJob's runtime environment, which Ray
applies to the entrypoint and to every worker of the job)."""

from __future__ import annotations

import os
from typing import Any, Mapping, Optional

# Variable of each setting, by the keyword `bench.start` takes it as.
VARIABLES = {
    "run": "RAY_TPU_GKE_RUN",
    "side": "RAY_TPU_GKE_SIDE",
    "result_dir": "RAY_TPU_GKE_RESULT_DIR",
    "seed": "RAY_TPU_GKE_SEED",
    "simulated": "RAY_TPU_GKE_SIMULATE",
    "report_every": "RAY_TPU_GKE_REPORT_EVERY",
}
_TRUE = ("1", "true", "yes")


def environment(
    *,
    run: str,
    side: str,
    result_dir: Optional[str] = None,
    seed: Optional[int] = None,
    simulated: Optional[bool] = None,
    report_every: Optional[int] = None,
) -> dict[str, str]:
    """The variables that tell a job these settings (the comparison's side of it); None leaves one out."""
    values: dict[str, Any] = {
        "run": run,
        "side": side,
        "result_dir": result_dir,
        "seed": seed,
        "simulated": None if simulated is None else ("1" if simulated else "0"),
        "report_every": report_every,
    }
    return {VARIABLES[k]: str(v) for k, v in values.items() if v is not None}


def settings(environ: Optional[Mapping[str, str]] = None) -> dict[str, Any]:
    """The settings the environment holds (the job's side of it), typed: str run, side and result_dir, int seed and
    report_every, bool simulated. A variable that is unset or empty is left out; a number that is not one is a
    ValueError naming the variable."""
    environ = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    for key, name in VARIABLES.items():
        value = (environ.get(name) or "").strip()
        if not value:
            continue
        if key in ("seed", "report_every"):
            try:
                out[key] = int(value)
            except ValueError:
                raise ValueError(f"${name}: {value!r} is not a whole number") from None
        elif key == "simulated":
            out[key] = value.lower() in _TRUE
        else:
            out[key] = value
    return out
