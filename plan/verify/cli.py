"""`python -m plan.verify STACK --context CONTEXT [--kubeconfig FILE] [--skip-smoke]`: after `pulumi up`, does the
live cluster match the stack's plan, and does every TPU slice work?

The stack is planned in-process, offline, by the same program and mocks as `python -m plan`; the cluster is read with
`kubectl ... -o json` (so a test can put a recorded-response `kubectl` on PATH). Checked, one line each:

- every TPU node pool of the plan (Standard mode): as many nodes as the slice has hosts (an autoscaled pool may be at
  zero: skipped, not failed), each Ready and labelled by GKE with the slice's accelerator, topology and machine type,
  and by the stack with its slice;
- every KubeRay object: it exists and is ready; for each TPU worker group of its Ray cluster, the worker pods come in
  whole slices (replicas within the plan's bounds), run, request the plan's chips, carry the TPU webhook's
  environment (TPU_WORKER_ID, TPU_NAME, and TPU_WORKER_HOSTNAMES on multi-host slices) with worker ids 0..hosts-1 per
  slice, and sit on nodes whose labels match the group's node selector, one node pool per slice;
- the version set (plan/verify/live_versions.py): each KubeRay CRD the stack uses is installed and its v1 schema has
  every field the stack's objects set, the TPU webhook is installed (a mutating webhook of KubeRay pods' creation)
  and serving (its environment on the worker pods), and every Ray pod runs the image its object declares;
- unless --skip-smoke: for each TPU worker group of a RayCluster or a RayService's active cluster, a RayJob running
  `python -m workloads.tpu_smoke` on that cluster (labels, slice reservation, cross-host psum; labels only on a
  RayService's slices, whose chips the Serve replicas hold); its JSON result.

Exit status: 0 when no check fails (skipped ones say why), 1 when one fails or the cluster cannot be read, 2 when the
configuration is invalid. The Ray image must contain the workloads package (docs/workloads.md).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Optional

from ray_tpu_gke.resources.preflight import PreflightError
from ray_tpu_gke.spec.problems import ConfigError
from ray_tpu_gke.workload.slice_checks import (
    CLUSTER_LABEL,
    FAIL,
    GROUP_LABEL,
    NODE_TYPE_LABEL,
    PASS,
    SKIP,
    Check,
    group_checks,
    labels_of,
    name_of,
    object_checks,
    pool_checks,
)

from .. import arguments, planned, stackfile
from . import live_versions
from .expected import StackPlan, stack_plan
from .kubectl import Kubectl, KubectlError
from .smoke import SmokeTarget, _finished, run_smoke


def verify(
    stack: StackPlan,
    kubectl: Kubectl,
    skip_smoke: bool = False,
    timeout: int = 1200,
    poll: float = 10.0,
    keep_jobs: bool = False,
    version_set: Optional[dict] = None,
) -> list[Check]:
    """Every live check of the stack; with `version_set` (plan/version_set.py) also the version set's."""
    checks: list[Check] = []
    images = {
        (o["namespace"], key.rsplit("/", 1)[-1]): o["image"]
        for key, o in ((version_set or {}).get("rayObjects") or {}).items()
    }
    node_list = kubectl.items("nodes")
    nodes = {name_of(n): n for n in node_list}
    for pool in stack.pools:
        checks += pool_checks(pool, node_list)
    targets = []
    for obj in stack.objects:
        live = kubectl.get(obj.kind, obj.name, obj.namespace)
        own, cluster = object_checks(obj.subject, obj.kind, obj.name, live, obj.cluster_selector)
        checks += own
        # A RayJob on an existing RayCluster (clusterSelector) runs on that cluster's pods, in that cluster's image.
        if (
            version_set is not None
            and cluster is not None
            and (obj.namespace, obj.name) in images
            and not obj.cluster_selector
        ):
            pods = kubectl.items("pods", "-n", obj.namespace, "-l", f"{CLUSTER_LABEL}={cluster}")
            checks.append(live_versions.image_check(obj.subject, images[(obj.namespace, obj.name)], pods))
        if not obj.groups:
            continue
        reason = None
        if live is None:
            reason = "the object was not found"
        elif obj.kind == "RayJob" and _finished((live.get("status") or {})):
            reason = "the job has finished; its Ray cluster lives only as long as the job"
        elif cluster is None:
            reason = "its Ray cluster is not named in its status yet"
        if reason:
            checks += [Check(f"{obj.subject} group {g.group}", "pods", SKIP, reason) for g in obj.groups]
            continue
        pods = kubectl.items("pods", "-n", obj.namespace, "-l", f"{CLUSTER_LABEL}={cluster},{NODE_TYPE_LABEL}=worker")
        for group in obj.groups:
            members = [p for p in pods if labels_of(p).get(GROUP_LABEL) == group.group]
            checks += group_checks(obj.subject, group, members, nodes)
            if obj.kind == "RayJob":
                continue  # a RayJob's own cluster lives as long as its job: the smoke test runs on the long-lived ones
            if skip_smoke:
                checks.append(Check(f"{obj.subject} group {group.group}", "smoke", SKIP, "--skip-smoke"))
            elif group.max_replicas == 0:
                checks.append(
                    Check(
                        f"{obj.subject} group {group.group}", "smoke", SKIP, "the group has no slices (maxReplicas 0)"
                    )
                )
            else:
                targets.append(
                    SmokeTarget(obj.subject, obj.namespace, cluster, group, labels_only=obj.kind == "RayService")
                )
    if version_set is not None:
        checks += live_versions.crd_checks(kubectl, version_set["kuberay"]["fields"])
        checks += live_versions.webhook_checks(kubectl, checks, sum(len(o.groups) for o in stack.objects))
    if targets:
        checks += run_smoke(kubectl, targets, timeout, poll, keep_jobs)
    return checks


def report(checks: list[Check], out=None) -> None:
    out = out or sys.stdout
    width = max((len(f"{c.subject}: {c.name}") for c in checks), default=0)
    for c in checks:
        print(f"{c.status.upper():4}  {f'{c.subject}: {c.name}':{width}}  {c.detail}", file=out)
    counts = {s: sum(c.status == s for c in checks) for s in (PASS, FAIL, SKIP)}
    print(f"{counts[PASS]} passed, {counts[FAIL]} failed, {counts[SKIP]} skipped", file=out)


def parse_args(argv):
    parser = arguments.OneLineParser(
        prog="python -m plan.verify",
        description=("After `pulumi up`: does the live cluster match the stack's plan, and does every TPU slice work?"),
    )
    parser.add_argument(
        "stack", help="stack name: Pulumi.<stack>.yaml in the project's stackConfigDir (this repository: stacks/)"
    )
    parser.add_argument("--context", required=True, help="the kubeconfig context of the stack's cluster")
    parser.add_argument("--kubeconfig", type=Path, help="kubeconfig file (default: kubectl's)")
    parser.add_argument("--config-file", type=Path, help="read this stack config file instead of the stack's own")
    parser.add_argument("--skip-smoke", action="store_true", help="do not run the TPU smoke test RayJobs")
    parser.add_argument(
        "--timeout",
        type=arguments.AT_LEAST_ONE,
        default=1200,
        help="seconds each smoke test may take, scale-up from zero included (default 1200)",
    )
    parser.add_argument(
        "--poll", type=arguments.NOT_NEGATIVE, default=10.0, help="seconds between RayJob status reads (default 10)"
    )
    parser.add_argument("--keep-jobs", action="store_true", help="leave the smoke RayJobs in place to inspect them")
    parser.add_argument("--json", action="store_true", help="print the checks as JSON instead of lines")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:  # a stack file's config, or what a program of its own registered (plan/planned.py)
        found = planned.load(args.stack, args.config_file)
        plan, config = found.ran, found.config
    except (ConfigError, stackfile.StackNotFound) as error:
        return stackfile.report(error)
    except PreflightError as error:
        print(f"error: deploy-time check failed: {error}", file=sys.stderr)
        return stackfile.EXIT_ERROR
    if shutil.which("kubectl") is None:
        print("error: kubectl is not on PATH", file=sys.stderr)
        return stackfile.EXIT_ERROR
    kubectl = Kubectl(args.context, args.kubeconfig)
    try:
        from .. import version_set

        checks = verify(
            stack_plan(plan, config),
            kubectl,
            skip_smoke=args.skip_smoke,
            timeout=args.timeout,
            poll=args.poll,
            keep_jobs=args.keep_jobs,
            version_set=version_set.versions(plan, config, found.inventory),
        )
    except KubectlError as error:
        print(f"error: cannot read the cluster: {error}", file=sys.stderr)
        return stackfile.EXIT_ERROR
    ok = not any(c.status == FAIL for c in checks)
    if args.json:
        print(
            json.dumps(
                {"stack": args.stack, "context": args.context, "ok": ok, "checks": [c.to_json() for c in checks]},
                indent=2,
            )
        )
    else:
        report(checks)
    return 0 if ok else 1
