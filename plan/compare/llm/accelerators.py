"""A live run's accelerator utilisation and memory during the load, from GKE's system metrics in Cloud Monitoring
(cloud.google.com/monitoring/api/metrics_kubernetes; resource type k8s_container; sampled every 60 s):

- both kinds: `kubernetes.io/container/accelerator/duty_cycle` (percent of the sample period the accelerator was
  processing), `.../memory_used` and `.../memory_total` (bytes: HBM on a TPU, GPU memory on a GPU);
- TPU also `kubernetes.io/container/accelerator/tensorcore_utilization` (percent of the TensorCores used).

Read with the Monitoring API's timeSeries.list (GET https://monitoring.googleapis.com/v3/projects/P/timeSeries with
a filter and an interval, pages followed by nextPageToken), for the run's RayCluster's pods over the load's window;
each metric as its mean and max over every point. `fetch(url, params)` answers the JSON (by default httpx with the
token of `gcloud auth print-access-token`)."""

from __future__ import annotations

import subprocess
from datetime import datetime, timezone
from typing import Callable, Optional

API = "https://monitoring.googleapis.com/v3/projects/{project}/timeSeries"
PREFIX = "kubernetes.io/container/accelerator/"
METRICS = {
    "tpu": {
        "dutyCyclePct": PREFIX + "duty_cycle",
        "tensorcoreUtilizationPct": PREFIX + "tensorcore_utilization",
        "memoryUsedBytes": PREFIX + "memory_used",
        "memoryTotalBytes": PREFIX + "memory_total",
    },
    "gpu": {
        "dutyCyclePct": PREFIX + "duty_cycle",
        "memoryUsedBytes": PREFIX + "memory_used",
        "memoryTotalBytes": PREFIX + "memory_total",
    },
}


def rfc3339(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _gcloud_fetch() -> Callable[[str, dict], dict]:
    import httpx

    token = subprocess.run(
        ["gcloud", "auth", "print-access-token"], capture_output=True, text=True, check=True
    ).stdout.strip()

    def fetch(url: str, params: dict) -> dict:
        reply = httpx.get(url, params=params, headers={"authorization": f"Bearer {token}"}, timeout=60)
        reply.raise_for_status()
        return reply.json()

    return fetch


def _value(point: dict) -> Optional[float]:
    value = point.get("value") or {}
    for key in ("doubleValue", "int64Value"):
        if key in value:
            return float(value[key])
    return None


class Monitoring:
    def __init__(self, project: str, cluster: str, fetch: Optional[Callable[[str, dict], dict]] = None):
        self.project, self.cluster, self._fetch = project, cluster, fetch

    def series(self, metric: str, namespace: str, pod_prefix: str, start: float, end: float) -> list[float]:
        fetch = self._fetch = self._fetch or _gcloud_fetch()
        params = {
            "filter": (
                f'metric.type = "{metric}" AND resource.type = "k8s_container" AND '
                f'resource.labels.cluster_name = "{self.cluster}" AND resource.labels.namespace_name = "{namespace}" '
                f'AND resource.labels.pod_name = monitoring.regex.full_match("{pod_prefix}-.*")'
            ),
            "interval.startTime": rfc3339(start),
            "interval.endTime": rfc3339(end),
        }
        values: list[float] = []
        while True:
            page = fetch(API.format(project=self.project), params)
            for series in page.get("timeSeries") or []:
                values += [v for v in map(_value, series.get("points") or []) if v is not None]
            if not page.get("nextPageToken"):
                return values
            params = {**params, "pageToken": page["nextPageToken"]}

    def usage(self, kind: str, namespace: str, pod_prefix: str, start: float, end: float) -> dict:
        """Per metric of `kind`: mean, max and the number of points over [start, end]; a metric with no point is
        None (GKE writes them a minute apart: a window shorter than that may hold none)."""
        out: dict = {"window": [rfc3339(start), rfc3339(end)], "metrics": {}}
        for key, metric in METRICS[kind].items():
            values = self.series(metric, namespace, pod_prefix, start, end)
            out["metrics"][key] = (
                {
                    "metric": metric,
                    "mean": round(sum(values) / len(values), 3),
                    "max": max(values),
                    "points": len(values),
                }
                if values
                else None
            )
        used, total = out["metrics"].get("memoryUsedBytes"), out["metrics"].get("memoryTotalBytes")
        out["memoryUsedShareMax"] = round(used["max"] / total["max"], 4) if used and total and total["max"] else None
        return out
