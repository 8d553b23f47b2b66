"""`python -m plan.diagram STACK [--config-file FILE] [--markdown]`: the stack as a Mermaid flowchart.

Cluster -> TPU slices (shape, machine type, hosts, count, capacity) -> the Ray worker groups that run on them. Drawn
from the typed stack config and the TPU catalogue alone (no Pulumi run), for the README and pull-request comments;
for a program that configures the library itself, from what its offline plan registered (plan/planned.py).
Exit status: 0 drawn, 2 invalid configuration (every problem on stderr), 1 anything else.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from ray_tpu_gke.resources.preflight import PreflightError
from ray_tpu_gke.spec.config import StackConfig
from ray_tpu_gke.spec.problems import ConfigError
from ray_tpu_gke.spec.ray_models import RayClusterConfig, RayJobConfig, RayObjectConfig, RayServiceConfig

from . import planned, stackfile

CAPACITY = {"onDemand": "on-demand", "spot": "Spot", "reservation": "reservation", "flexStart": "flex-start"}

# Node styles; `marks` (from a diff) colour the slices a change touches.
CLASSES = {
    "gke": "fill:#e8f0fe,stroke:#1a73e8,color:#0b3d91",
    "sys": "fill:#f1f3f4,stroke:#9aa0a6,color:#202124",
    "tpu": "fill:#e6f4ea,stroke:#188038,color:#0d652d",
    "gpu": "fill:#f3e8fd,stroke:#8430ce,color:#4a148c",
    "ray": "fill:#fef7e0,stroke:#f9ab00,color:#5f370e",
    "risky": "fill:#fce8e6,stroke:#d93025,stroke-width:3px,color:#a50e0e",
    "changed": "fill:#fef7e0,stroke:#e37400,stroke-width:2px,color:#5f370e",
    "created": "fill:#e6f4ea,stroke:#188038,stroke-width:3px,color:#0d652d",
}


def node_id(*parts: str) -> str:
    """A Mermaid-safe identifier."""
    return "_".join(re.sub(r"[^A-Za-z0-9]", "_", p) for p in parts)


def label(*lines: str) -> str:
    text = "<br/>".join(lines).replace('"', "#quot;")
    return f'"{text}"'


def kind(obj: RayObjectConfig) -> str:
    if isinstance(obj, RayServiceConfig):
        return "RayService"
    if isinstance(obj, RayJobConfig):
        return "RayJob"
    assert isinstance(obj, RayClusterConfig)
    return "RayCluster"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def mermaid(config: StackConfig, marks: dict[str, str] | None = None, inventory=None) -> str:
    """The flowchart text (without a ``` fence). `marks`: tpuSlices name -> risky | changed | created. `inventory`
    (plan/inventory.py): a program of its own, which may plan into a cluster and system pool it does not create."""
    marks = marks or {}
    c = config.cluster
    lines = ["flowchart LR"]
    where = f"{c.mode} · {c.location}" + ("" if c.zonal else " (regional)")
    if inventory is None or inventory.has_cluster:
        channel = f"{c.release_channel} channel · project {config.project}"
        lines.append(f"  cluster[{label(f'<b>GKE cluster {c.name}</b>', where, channel)}]")
    else:
        lines.append(f"  cluster[{label(f'<b>GKE cluster {c.name}</b>', where, 'existing: not created here')}]")
    lines.append("  class cluster gke")
    if config.standard and (inventory is None or inventory.has_system_pool):
        p = c.system_pool
        size = f"{p.machine_type} × {p.min_nodes}–{p.max_nodes} nodes"
        lines.append(f"  system[{label('system pool', size, 'Ray heads, system pods')}]")
        lines.append("  cluster --> system")
        lines.append("  class system sys")

    slice_ids = {}
    for s in config.tpu_slices:
        shape = s.shape
        sid = node_id("slice", s.name)
        slice_ids[s.name] = sid
        capacity = CAPACITY[s.capacity] + (f" {s.reservation}" if s.reservation else "")
        zone = config.slice_zone(s)
        shape_line = f"TPU {shape.generation.name} {shape.topology} · {shape.chips} chips"
        host_line = f"{shape.machine_type.name} × {_plural(shape.hosts, 'host')}"
        count_line = f"{_plural(s.count, 'slice')} · {capacity}" + (f" · {zone}" if zone else "")
        lines.append(f"  {sid}[{label(f'<b>{s.name}</b>', shape_line, host_line, count_line)}]")
        if config.standard:
            lines.append(f'  cluster -->|"{_plural(s.count, "node pool")}"| {sid}')
        else:
            lines.append(f'  cluster -.->|"Autopilot, node selectors"| {sid}')
        lines.append(f"  class {sid} {marks.get(s.name, 'tpu')}")

    for pool in (*config.gpu_pools, *config.cpu_pools):
        pid = node_id("pool", pool.name)
        slice_ids[pool.name] = pid
        gpus = getattr(pool, "accelerator", None)
        what = f"{pool.machine.gpus} × {gpus} per node" if gpus else "CPU workers"
        nodes = f"{pool.min_nodes}–{pool.max_nodes} nodes" if pool.autoscaled else _plural(pool.count, "node")
        size = f"{pool.machine_type} × {nodes} · {CAPACITY[pool.capacity]}" + (f" · {pool.zone}" if pool.zone else "")
        lines.append(f"  {pid}[{label(f'<b>{pool.name}</b>', what, size)}]")
        if config.standard:
            lines.append(f'  cluster -->|"node pool"| {pid}')
        else:
            lines.append(f'  cluster -.->|"Autopilot, node selectors"| {pid}')
        lines.append(f"  class {pid} {marks.get(pool.name, 'gpu' if gpus else 'sys')}")

    for obj in config.ray_objects:
        oid = node_id(kind(obj), obj.namespace, obj.name)
        lines.append(f"  subgraph {oid}[{label(f'{kind(obj)} {obj.namespace}/{obj.name}')}]")
        lines.append("    direction TB")
        group_ids = []
        for g in obj.worker_groups:
            gid = node_id(oid, g.name)
            group_ids.append((gid, g))
            shape = config.slice(g.slice).shape if g.slice in {s.name for s in config.tpu_slices} else None
            scale = f"{_plural(g.replicas, 'replica')} (min {g.min_replicas}, max {g.max})"
            pods = f"{_plural(shape.hosts, 'pod')} per replica × {shape.chips_per_host} TPU chips" if shape else ""
            pool = config.targets.get(g.target[0], {}).get(g.target[1]) if g.target[0] != "slice" else None
            if pool is not None:
                pods = f"1 pod per replica × {pool.machine.gpus} GPUs" if g.gpu_pool else "1 pod per replica (CPU)"
            lines.append(f"    {gid}[{label(f'worker group <b>{g.name}</b>', scale, pods)}]")
            lines.append(f"    class {gid} ray")
        lines.append("  end")
        for gid, g in group_ids:
            if g.target[1] in slice_ids:
                lines.append(f"  {slice_ids[g.target[1]]} --> {gid}")
    used = set(marks.values()) | {"gke", "tpu", "ray"}
    used |= {"sys"} if config.standard or config.cpu_pools else set()
    used |= {"gpu"} if config.gpu_pools else set()
    for name, style in CLASSES.items():
        if name in used:
            lines.append(f"  classDef {name} {style}")
    return "\n".join(lines) + "\n"


def fenced(chart: str) -> str:
    return f"```mermaid\n{chart.rstrip()}\n```\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m plan.diagram", description=__doc__.splitlines()[0])
    parser.add_argument(
        "stack", help="stack name: Pulumi.<stack>.yaml in the project's stackConfigDir (this repository: stacks/)"
    )
    parser.add_argument("--config-file", type=Path, help="read this stack config file instead of the stack's own")
    parser.add_argument("--markdown", action="store_true", help="wrap the chart in a ```mermaid fence")
    args = parser.parse_args(argv)
    try:  # a stack file's config (no Pulumi run), or what a program of its own registered (plan/planned.py)
        found = planned.load(args.stack, args.config_file, run=False)
    except (ConfigError, stackfile.StackNotFound) as error:
        return stackfile.report(error)
    except PreflightError as error:
        print(f"error: deploy-time check failed: {error}", file=sys.stderr)
        return stackfile.EXIT_ERROR
    chart = mermaid(found.config, inventory=found.inventory)
    sys.stdout.write(fenced(chart) if args.markdown else chart)
    return 0


if __name__ == "__main__":
    sys.exit(main())
