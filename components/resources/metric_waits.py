"""Alert policies wait for the metrics they watch: Cloud Monitoring refuses a policy on a metric type it does not
know yet (404 "Cannot find metric(s) that match type ... If a metric was created recently, it could take up to 10
minutes to become available"; hashicorp/terraform-provider-google #11102), so a policy on the slice check's custom
metrics waits for their descriptors and then for that propagation (docs/operations.md, "First apply"). The policy on
GKE's kube state metrics needs no wait: it is a PromQL condition whose metric is not validated
(render/alert_conditions.py `promql`)."""

from __future__ import annotations

import re
from typing import Sequence

import pulumi
import pulumi_gcp as gcp
import pulumiverse_time

from ..catalog import metrics

# The 404 above: "it could take up to 10 minutes to become available" (Monitoring's own error text, quoted in
# hashicorp/terraform-provider-google #11102).
PROPAGATION = "10m"  # a Go time.ParseDuration string (pulumiverse_time Sleep.create_duration)

# The labels of the slice check's two metrics, as workloads/slice_health.py writes them (data/metrics.yaml lists them).
DESCRIPTORS = {
    metrics.SLICE_HEALTHY: (
        "TPU slice healthy (in-cluster check)",
        {
            "entry": "the tpuSlices entry",
            "slice": "the slice's node pool, or its Ray slice name",
            "problem": "the first thing wrong, or none",
        },
    ),
    metrics.RAY_OBJECT_READY: (
        "Ray object ready (in-cluster check)",
        {
            "kind": "RayCluster, RayService or RayJob",
            "namespace": "the object's namespace",
            "name": "the object's name",
            "state": "what the object's status says",
        },
    ),
}
_METRIC_TYPE = re.compile(r'metric\.type="([^"]+)"')


def watched_metrics(policy: dict) -> set[str]:
    """The metric types an AlertPolicy body's conditions filter on."""
    return {
        t
        for c in policy.get("conditions") or []
        for body in c.values()
        if isinstance(body, dict)
        for t in _METRIC_TYPE.findall(body.get("filter", ""))
    }


def descriptors(name: str, project: str, opts: pulumi.ResourceOptions) -> list[gcp.monitoring.MetricDescriptor]:
    """The slice check's metric descriptors, so the check (which may only write points) never defines one."""
    out = []
    for metric_type, (display, label_docs) in DESCRIPTORS.items():
        metric = metrics.metric_list().metric(metric_type)
        out.append(
            gcp.monitoring.MetricDescriptor(
                f"{name}-{metric_type.rsplit('/', 1)[-1].replace('_', '-')}",
                project=project,
                type=metric_type,
                metric_kind=metric.kind,
                value_type=metric.value_type,
                display_name=display,
                description=metric.description,
                labels=[
                    gcp.monitoring.MetricDescriptorLabelArgs(key=key, value_type="STRING", description=doc)
                    for key, doc in label_docs.items()
                ],
                opts=opts,
            )
        )
    return out


def wait(name: str, after: Sequence[pulumi.Resource], opts: pulumi.ResourceOptions) -> pulumiverse_time.Sleep:
    """A Sleep created PROPAGATION after `after`: what depends on it starts once Monitoring knows the metrics."""
    return pulumiverse_time.Sleep(
        name,
        create_duration=PROPAGATION,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=list(after))),
    )
