"""The TPU smoke test of one Ray worker group: are its slices whole, labelled as the stack declares, and do their
hosts compute together? (Its command line, entrypoint and result line: ray_tpu_gke.workload.smoke_args.)

    python -m workloads.tpu_smoke --generation v6e --topology 4x4 --hosts 4 --chips-per-host 4 --group v6e-16

Run it on the Ray cluster that owns the group, as a RayJob entrypoint (`python -m plan.verify` submits one per TPU
worker group, with the values from the stack's plan). In order:

1. waits (up to --timeout) until the group has --slices whole slices, asking Ray's autoscaler for them when it has
   fewer (a group scaled to zero comes up);
2. checks the Ray labels of every host of the group's slices against the slice the stack declares: hosts per slice,
   `ray.io/tpu-worker-id` 0..hosts-1 each once, `ray.io/tpu-topology`, `ray.io/tpu-pod-type`,
   `ray.io/accelerator-type`, and the TPU chips Ray sees per host;
3. reserves every whole slice with Ray's slice placement group (one bundle per host);
4. runs a cross-host JAX `psum` on each reserved slice, one process per host, and checks the sum, the process and
   device counts and the platform (`tpu`; a host that fell back to CPU fails).

It prints one JSON line (`"kind": "ray-tpu-gke/tpu-smoke"`: every check with pass, fail or skip, and timings,
compile time included) and exits 0 when every check passes, 1 when one fails, 2 on bad arguments. Steps 3 and 4 run
only when the labels are right (a mislabelled slice cannot be reserved reliably) and not with --labels-only (slices
that serve a RayService: their chips are the replicas').

The label checks, and where Ray's labels come from: ray_tpu_gke.workload.ray_labels.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Optional

from ray_tpu_gke.workload.ray_labels import (
    FAIL,
    PASS,
    SKIP,
    SLICE_NAME,
    WORKER_ID,
    Check,
    Observed,
    label_checks,
    observe,
)
from ray_tpu_gke.workload.slice import SliceSpec
from ray_tpu_gke.workload.smoke_args import RESULT_KIND, parse_args


def reserve_slices(spec: SliceSpec, count: int, name: str):
    """Reserve `count` whole slices: Ray 2.55's `ray.util.tpu.slice_placement_group` (alpha API; its only caller).

    Ray reserves each slice through the head resource of its worker 0, then asks for one bundle per host with the
    label selector `ray.io/tpu-slice-name` of that slice (ray/util/tpu.py SlicePlacementGroup._reserve_slice).
    `resources_per_bundle` is explicit: Ray 2.55 assumes 8 chips per v5e/v6e host for slices of 8 chips or more
    (get_chips_per_host; 2.60 assumes 4 on multi-host topologies, but a stack may pin 2.55), while GKE's multi-host
    v5e/v6e slices run 4-chip hosts (ct6e-standard-4t), so without it the bundles of a v6e 4x4 would each ask for 8
    chips and never fit. Returns Ray's SlicePlacementGroup handle.
    """
    from ray.util.tpu import slice_placement_group

    return slice_placement_group(
        topology=spec.topology,
        accelerator_version=spec.ray_version,
        resources_per_bundle={"TPU": spec.chips_per_host},
        num_slices=count,
        name=name,
    )


def _coordinator_address() -> tuple[str, int]:
    """An address on this host for JAX's distributed coordinator (process 0 of the slice)."""
    import ray

    from workloads.ports import free_port

    return ray.util.get_node_ip_address(), free_port()


def _psum_on_host(coordinator: str, processes: int, timeout: int) -> dict:
    """One host's part of the slice's psum: JAX over every process of the slice, each device contributing
    process index + 1. Runs in its own worker process (max_calls=1): JAX's distributed state is once per process."""
    import ray

    process_id = int(ray.get_runtime_context().get_node_labels()[WORKER_ID])
    started = time.perf_counter()
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    # Explicit coordinator and process id, so the same call works on TPU and in the CPU test; the id is the TPU worker
    # id, which libtpu also reads (TPU_WORKER_ID).
    jax.distributed.initialize(
        coordinator, num_processes=processes, process_id=process_id, initialization_timeout=timeout
    )
    try:
        init_s = time.perf_counter() - started
        mesh = jax.make_mesh((jax.device_count(),), ("hosts",))
        local = jax.numpy.full((jax.local_device_count(),), jax.process_index() + 1.0)
        x = jax.make_array_from_process_local_data(NamedSharding(mesh, PartitionSpec("hosts")), local)
        total = jax.jit(
            jax.shard_map(
                lambda v: jax.lax.psum(v, "hosts"),
                mesh=mesh,
                in_specs=PartitionSpec("hosts"),
                out_specs=PartitionSpec(),
            )
        )
        started = time.perf_counter()
        compiled = total.lower(x).compile()
        compile_s = time.perf_counter() - started
        started = time.perf_counter()
        out = compiled(x)
        out.block_until_ready()
        run_s = time.perf_counter() - started
        return {
            "worker_id": process_id,
            "process_index": jax.process_index(),
            "process_count": jax.process_count(),
            "device_count": jax.device_count(),
            "local_device_count": jax.local_device_count(),
            "platform": jax.devices()[0].platform,
            "value": float(out.addressable_data(0)[0]),
            "init_s": init_s,
            "compile_s": compile_s,
            "run_s": run_s,
        }
    finally:
        jax.distributed.shutdown()


def psum_check(name: str, results: list[dict], spec: SliceSpec, platform: str) -> Check:
    """Whether the hosts of one slice computed the same, right sum as one JAX program."""
    problems = []
    counts = sorted({r["process_count"] for r in results})
    if len(results) != spec.hosts or counts != [spec.hosts]:
        problems.append(f"{len(results)} processes answered, process counts {counts}; expected {spec.hosts}")
    local = sum(r["local_device_count"] for r in results)
    if sorted({r["device_count"] for r in results}) != [local]:
        problems.append(
            f"global device counts {sorted({r['device_count'] for r in results})}, the hosts have {local} devices"
        )
    odd = [r["worker_id"] for r in results if r["local_device_count"] % spec.chips_per_host]
    if odd:
        problems.append(f"hosts {odd} see a device count that is not a multiple of {spec.chips_per_host} chips")
    platforms = sorted({r["platform"] for r in results})
    if platforms != [platform]:
        problems.append(f"JAX platform {', '.join(platforms)}, expected {platform}")
    want = float(sum((r["process_index"] + 1) * r["local_device_count"] for r in results))
    wrong = [f"worker {r['worker_id']} got {r['value']:g}" for r in results if r["value"] != want]
    if wrong:
        problems.append(f"psum {'; '.join(wrong)}, expected {want:g}")
    ok = f"psum over {spec.hosts} hosts, {local} devices = {want:g} on {platform}"
    return Check("psum", FAIL if problems else PASS, "; ".join(problems) or ok, name)


def _brief(error: BaseException) -> str:
    """An error for a check's detail: its type and the end of its message (a task's error ends with the cause)."""
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text if len(text) <= 500 else '...' + text[-500:]}"


def run_psum(handle, spec: SliceSpec, platform: str, deadline: float) -> tuple[list[Check], dict]:
    """The psum on every slice of a ready slice placement group; its checks and timings."""
    import ray
    from ray.util.placement_group import placement_group_table
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    pg = handle.placement_group
    labels = {n["NodeID"]: n.get("Labels") or {} for n in ray.nodes()}
    bundles: dict[str, dict[int, int]] = {}  # slice -> worker id -> bundle index
    for index, node_id in placement_group_table(pg)["bundles_to_node_id"].items():
        node = labels.get(node_id, {})
        bundles.setdefault(node.get(SLICE_NAME, "?"), {})[int(node.get(WORKER_ID, -1))] = int(index)

    def in_bundle(index: int):
        return PlacementGroupSchedulingStrategy(placement_group=pg, placement_group_bundle_index=index)

    def left() -> float:
        return max(1.0, deadline - time.monotonic())

    port = ray.remote(num_cpus=0)(_coordinator_address)
    host = ray.remote(num_cpus=0, resources={"TPU": spec.chips_per_host}, max_calls=1)(_psum_on_host)
    # Every slice at once: a coordinator address on its worker 0, then one process per host.
    coordinators = {
        name: port.options(scheduling_strategy=in_bundle(by_worker[0])).remote()
        for name, by_worker in bundles.items()
        if 0 in by_worker
    }
    checks, timings = [], {"jax_init_s": 0.0, "compile_s": 0.0, "psum_s": 0.0}
    pending = {}
    for name, by_worker in sorted(bundles.items()):
        if name not in coordinators:
            checks.append(Check("psum", FAIL, "no bundle of the slice is on its worker 0", name))
            continue
        try:
            ip, free = ray.get(coordinators[name], timeout=left())
        except Exception as error:  # the check fails with it
            checks.append(Check("psum", FAIL, _brief(error), name))
            continue
        pending[name] = [
            host.options(scheduling_strategy=in_bundle(b)).remote(f"{ip}:{free}", spec.hosts, int(left()))
            for _, b in sorted(by_worker.items())
        ]
    for name, refs in sorted(pending.items()):
        try:
            results = ray.get(refs, timeout=left())
        except Exception as error:  # a timeout or a host's error: the check fails with it
            for ref in refs:
                ray.cancel(ref, force=True)
            checks.append(Check("psum", FAIL, _brief(error), name))
            continue
        checks.append(psum_check(name, results, spec, platform))
        timings["jax_init_s"] = max(timings["jax_init_s"], *(r["init_s"] for r in results))
        timings["compile_s"] = max(timings["compile_s"], *(r["compile_s"] for r in results))
        timings["psum_s"] = max(timings["psum_s"], *(r["run_s"] for r in results))
    return checks, timings


def wait_for_slices(spec: SliceSpec, group: Optional[str], slices: int, deadline: float, poll: float) -> Observed:
    """The group's hosts once it has `slices` whole slices, or at the deadline. While it has fewer, Ray's autoscaler
    is asked for the missing slices by their head resource (ray.autoscaler.sdk.request_resources, a standing request
    this function withdraws again)."""
    import ray
    from ray.autoscaler.sdk import request_resources

    requested = False
    try:
        while True:
            observed = observe(ray.nodes(), group)
            _, whole = label_checks(observed, spec, slices)
            if len(whole) >= slices or time.monotonic() >= deadline:
                return observed
            if not requested:
                request_resources(bundles=[{spec.head_resource: 1}] * slices)
                requested = True
            time.sleep(poll)
    finally:
        if requested:
            request_resources(bundles=[])


def smoke(
    spec: SliceSpec,
    group: Optional[str] = None,
    slices: int = 1,
    timeout: float = 900.0,
    platform: str = "tpu",
    poll: float = 5.0,
    labels_only: bool = False,
) -> dict:
    """Run every check against the connected Ray cluster; the result as printed. `labels_only` leaves the chips alone
    (a RayService's slices serve traffic: reserving them would fail, or take them from the replicas)."""
    import ray

    started = time.monotonic()
    deadline = started + timeout
    timings: dict[str, float] = {}
    observed = wait_for_slices(spec, group, slices, deadline, poll)
    timings["wait_s"] = time.monotonic() - started
    checks, whole = label_checks(observed, spec, slices)
    if labels_only or not all(c.status == PASS for c in checks):
        why = "not run: --labels-only" if labels_only else "not run: a label check failed"
        checks += [Check("reservation", SKIP, why), Check("psum", SKIP, why)]
    else:
        began = time.monotonic()
        handle = None
        try:
            handle = reserve_slices(spec, len(whole), name=f"tpu-smoke-{group or 'all'}")
            ready = handle.placement_group.ready()
            done, _ = ray.wait([ready], timeout=max(0.0, deadline - time.monotonic()))
            if not done:
                raise TimeoutError(
                    f"the slice placement group was not ready within {timeout:g}s of the start: are "
                    "the slices' chips in use, or a host still coming up?"
                )
            ray.get(ready)
        except Exception as error:  # Ray's reservation raises several kinds; the check fails with it
            timings["reservation_s"] = time.monotonic() - began
            checks += [Check("reservation", FAIL, _brief(error)), Check("psum", SKIP, "not run: no reservation")]
            if handle is not None:
                handle.shutdown()
        else:
            timings["reservation_s"] = time.monotonic() - began
            checks.append(
                Check(
                    "reservation",
                    PASS,
                    f"{len(whole)} slices, {handle.num_bundles} bundles of {spec.chips_per_host} TPU",
                )
            )
            try:
                psum, psum_timings = run_psum(handle, spec, platform, deadline)
            finally:
                handle.shutdown()
            checks += psum
            timings.update(psum_timings)
    timings["total_s"] = time.monotonic() - started
    return document(spec, group, slices, platform, observed, checks, timings)


def document(
    spec: SliceSpec,
    group: Optional[str],
    slices: int,
    platform: str,
    observed: Observed,
    checks: list[Check],
    timings: dict[str, float],
) -> dict:
    """The result as printed: what was expected, the hosts seen per slice, every check, the timings."""
    return {
        "kind": RESULT_KIND,
        "ok": all(c.status != FAIL for c in checks),
        "expected": {**spec.to_json(), "group": group, "slices": slices, "platform": platform},
        "slices": {
            name: sorted(
                ({"node": h.name, WORKER_ID: h.labels.get(WORKER_ID)} for h in hosts), key=lambda h: str(h[WORKER_ID])
            )
            for name, hosts in sorted(observed.slices.items())
        },
        "checks": [c.to_json() for c in checks],
        "timings": {k: round(v, 3) for k, v in timings.items()},
    }


def main(argv: Optional[list[str]] = None) -> int:
    spec, args = parse_args(argv)
    import ray

    ray.init(address=os.environ.get("RAY_ADDRESS", "auto"), log_to_driver=False)
    result = smoke(
        spec,
        group=args.group,
        slices=args.slices,
        timeout=args.timeout,
        platform=args.platform,
        labels_only=args.labels_only,
    )
    print(json.dumps(result, sort_keys=True), flush=True)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
