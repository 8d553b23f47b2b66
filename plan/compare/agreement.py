"""Whether two comparison sides agree: on the evaluation metric both jobs declare (or their final losses) and on
their output fingerprints, within a relative tolerance."""

from __future__ import annotations

import math
from typing import Any, Optional

DEFAULT_TOLERANCE = 0.02  # the largest relative difference of final loss and fingerprint at which the sides agree


def relative_difference(a: float, b: float) -> float:
    scale = max(abs(a), abs(b))
    return 0.0 if scale == 0 else abs(a - b) / scale


def fingerprint_agreement(a: dict, b: dict, tolerance: float) -> dict:
    """Predictions on the fixed evaluation batch: the largest difference relative to the largest prediction. Different
    platforms round differently, so equal bits (sha256) are reported but not required."""
    out: dict[str, Any] = {
        "seeds": [a.get("seed"), b.get("seed")],
        "sameSha256": a.get("sha256") is not None and a.get("sha256") == b.get("sha256"),
        "checked": True,
        "tolerance": tolerance,
    }
    va, vb = list(a.get("values") or []), list(b.get("values") or [])
    if a.get("seed") != b.get("seed"):
        return {**out, "agree": False, "reason": "the sides used different seeds"}
    if not va or len(va) != len(vb):
        return {**out, "agree": False, "reason": f"{len(va)} and {len(vb)} values"}
    largest = max(abs(d) for d in va + vb)
    worst = max(abs(x - y) for x, y in zip(va, vb))
    relative = 0.0 if largest == 0 else worst / largest
    return {**out, "maxAbsDifference": worst, "relativeDifference": relative, "agree": relative <= tolerance}


def _declared_metric(result: Optional[dict]) -> Optional[dict]:
    """The evaluation metric a job declared through bench (`run.finish(metric=..., metric_name=...)`), or None."""
    metric = (result or {}).get("evalMetric")
    value = metric.get("value") if isinstance(metric, dict) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return {"name": str(metric.get("name") or "metric"), "value": float(value)}
    return None


def agreement(a: dict, b: dict, results: dict[str, Optional[dict]], tolerance: float) -> tuple[Optional[dict], list]:
    """The sides' agreement on the evaluation metric both jobs declare (bench's `evalMetric`; the final loss where
    neither declares one), and on their output fingerprints where both predicted on the same inputs."""
    names = [a["name"], b["name"]]
    ra, rb = results.get(a["name"]), results.get(b["name"])
    ma, mb = _declared_metric(ra), _declared_metric(rb)
    if ma is not None and mb is not None and ma["name"] != mb["name"]:
        return None, [
            f"agreement of {' and '.join(names)}: the jobs declare different evaluation metrics "
            f"({ma['name']} and {mb['name']})"
        ]
    if (ma is None) != (mb is None):
        lacking = names[1] if ma is not None else names[0]
        return None, [f"agreement of {' and '.join(names)}: {lacking} declares no evaluation metric"]
    if ma is not None:
        metric, va, vb = ma["name"], ma["value"], mb["value"]
    elif ra is None or rb is None or a.get("finalLoss") is None or b.get("finalLoss") is None:
        lacking = ", ".join(n for n, r in zip(names, (ra, rb)) if r is None or r.get("finalLoss") is None)
        return None, [f"agreement of {' and '.join(names)}: no accepted result with a final loss from {lacking}"]
    else:
        metric, va, vb = "finalLoss", float(a["finalLoss"]), float(b["finalLoss"])
    difference = relative_difference(va, vb)
    fa, fb = (ra or {}).get("fingerprint") or {}, (rb or {}).get("fingerprint") or {}
    lacking = [n for n, f in zip(names, (fa, fb)) if not f.get("values")]
    if lacking:  # the fingerprint is optional: one not declared is not checked, never a disagreement
        prints = {
            "comparable": False,
            "checked": False,
            "agree": True,
            "tolerance": tolerance,
            "reason": f"{' and '.join(lacking)} declared no output fingerprint: not checked",
        }
    elif fa.get("inputs") != fb.get("inputs"):  # two programs' predictions on different inputs: nothing to compare
        prints = {
            "comparable": False,
            "checked": False,
            "agree": True,
            "tolerance": tolerance,
            "reason": f"the jobs predicted on different inputs ({fa.get('inputs')!r}, {fb.get('inputs')!r})",
        }
    else:
        prints = fingerprint_agreement(fa, fb, tolerance)
    out = {
        "metric": metric,
        "between": names,
        "values": [va, vb],
        "relativeDifference": difference,
        "tolerance": tolerance,
        "metricAgree": difference <= tolerance,
        "lossAgree": difference <= tolerance,
        "fingerprint": prints,
    }
    out["agree"] = out["metricAgree"] and prints["agree"]
    problems = []
    if not out["metricAgree"]:
        what = "the final losses differ" if metric == "finalLoss" else f"the declared {metric} differs"
        problems.append(
            f"agreement of {' and '.join(names)}: {what} by {difference:.2%}, more than "
            f"the tolerance of {tolerance:.2%}"
        )
    if not prints["agree"]:
        reason = prints.get("reason") or (
            f"the predictions differ by {prints['relativeDifference']:.2%}, more than the tolerance of {tolerance:.2%}"
        )
        problems.append(f"agreement of {' and '.join(names)}: fingerprint: {reason}")
    return out, problems
