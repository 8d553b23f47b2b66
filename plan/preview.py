"""Human output of a plan: a resource tree like `pulumi preview`, a summary, and the TPU capacity per slice."""

from __future__ import annotations

from dataclasses import dataclass

import yaml
from ray_tpu_gke.spec import multislice
from ray_tpu_gke.spec.config import StackConfig
from rich.console import Console
from rich.table import Table
from rich.tree import Tree

from . import stackfile
from .harness import Plan
from .terminal import print_warnings


@dataclass(frozen=True)
class CapacityRow:
    slice: str
    generation: str
    topology: str
    machine_type: str
    chips_per_slice: int
    hosts_per_slice: int
    slices: int
    capacity: str
    pools: int
    used_by: tuple[str, ...]

    @property
    def chips(self) -> int:
        return self.chips_per_slice * self.slices


def multislice_rows(config: StackConfig) -> list[dict]:
    """The Ray objects that run multislice (one JaxTrainer over N slices of a group), each with its chips and the
    RayJobs submitted to it; in the plan's text under the capacity table."""
    jobs: dict[tuple[str, str], list[str]] = {}
    for job in config.ray_jobs:
        if job.cluster is not None:
            jobs.setdefault((job.namespace, job.cluster), []).append(f"{job.namespace}/{job.name}")
    rows = []
    for obj in config.ray_objects:
        for group in obj.worker_groups:
            if not multislice.is_multislice(obj, group):
                continue
            entry, n = config.slice(group.slice), multislice.slices(obj, group)
            rows.append(
                {
                    "object": f"{obj.namespace}/{obj.name}",
                    "group": group.name,
                    "slice": entry.name,
                    "slices": n,
                    "chipsPerSlice": entry.shape.chips,
                    "chips": n * entry.shape.chips,
                    "hosts": n * entry.shape.hosts,
                    "autoscaled": entry.autoscaled,
                    "capacity": entry.capacity,
                    "jobs": jobs.get((obj.namespace, obj.name), []),
                }
            )
    return rows


def capacity_rows(config: StackConfig) -> list[CapacityRow]:
    users: dict[str, list[str]] = {s.name: [] for s in config.tpu_slices}
    for obj in config.ray_objects:
        for group in obj.worker_groups:
            if group.slice is not None:
                many = (
                    f" (multislice: {multislice.slices(obj, group)} slices)"
                    if multislice.is_multislice(obj, group)
                    else ""
                )
                users[group.slice].append(f"{obj.namespace}/{obj.name}:{group.name}{many}")
    rows = []
    for s in config.tpu_slices:
        shape = s.shape
        rows.append(
            CapacityRow(
                slice=s.name,
                generation=shape.generation.name,
                topology=shape.topology,
                machine_type=shape.machine_type.name,
                chips_per_slice=shape.chips,
                hosts_per_slice=shape.hosts,
                slices=s.count,
                capacity=s.capacity,
                pools=s.count if config.standard else 0,
                used_by=tuple(users[s.name]),
            )
        )
    return rows


def tree(plan: Plan) -> Tree:
    root = Tree(f"[bold]Previewing update ({plan.stack}):[/]")
    nodes = {}
    for step in plan.steps:
        label = f"[green]+[/] {step.type} [bold]{step.name}[/] [green]create[/]"
        if step.protect:
            label += " [yellow]protected[/]"
        parent = nodes.get(step.parent, root)
        nodes[step.urn] = parent.add(label)
    return root


def capacity_table(config: StackConfig) -> Table:
    table = Table(title=f"TPU capacity ({config.cluster.mode} mode)", title_justify="left")
    for column in (
        "slice",
        "generation",
        "topology",
        "machine type",
        "chips/slice",
        "hosts/slice",
        "slices",
        "chips",
        "capacity",
        "node pools",
        "used by",
    ):
        table.add_column(
            column,
            justify="right" if column in {"chips/slice", "hosts/slice", "slices", "chips", "node pools"} else "left",
        )
    rows = capacity_rows(config)
    for r in rows:
        table.add_row(
            r.slice,
            r.generation,
            r.topology,
            r.machine_type,
            str(r.chips_per_slice),
            str(r.hosts_per_slice),
            str(r.slices),
            str(r.chips),
            r.capacity,
            str(r.pools),
            ", ".join(r.used_by) or "[yellow]unused[/]",
        )
    table.add_section()
    table.add_row(
        "total",
        "",
        "",
        "",
        "",
        "",
        str(sum(r.slices for r in rows)),
        str(sum(r.chips for r in rows)),
        "",
        str(sum(r.pools for r in rows)),
        "",
    )
    return table


def multislice_lines(config: StackConfig) -> list[str]:
    """One line per multislice Ray object: its chips, its jobs, and what happens while only some slices are up."""
    lines = []
    for row in multislice_rows(config):
        jobs = f"; jobs: {', '.join(row['jobs'])}" if row["jobs"] else ""
        if row["autoscaled"]:
            wait = (
                "its pools scale up one slice at a time, and the slices up first bill while the job waits for "
                "the rest; fixed-size pools (autoscaling: false) keep all of them"
            )
        else:
            wait = "fixed-size pools: all slices stay up, so the job never waits for a slice to be created"
        lines.append(
            f"multislice: {row['object']}:{row['group']} runs one JaxTrainer over {row['slices']} slices of "
            f"{row['slice']} ({row['chips']} chips, {row['hosts']} hosts){jobs}. All or nothing: it starts "
            f"only when all {row['slices']} are up; {wait} (docs/workloads.md)"
        )
    return lines


def quota_table(config: StackConfig) -> Table:
    """The TPU and GPU quota the stack draws on, per quota and region: what to request before the first `pulumi up`."""
    table = Table(title="Accelerator quota needed (Cloud Quotas, compute.googleapis.com)", title_justify="left")
    for column in ("quota", "region", "amount", "for"):
        table.add_column(column, justify="right" if column == "amount" else "left")
    totals: dict[tuple[str, str], list] = {}
    for need in config.quota_needs():
        totals.setdefault((need.key, need.region), []).append(need)
    for (key, region), needs in sorted(totals.items()):
        table.add_row(key, region, f"{sum(n.chips for n in needs)} {needs[0].unit}", "; ".join(n.who for n in needs))
    reserved = [s.name for s in config.tpu_slices if s.capacity == "reservation"]
    if reserved:
        table.caption = f"reserved capacity draws on its reservation, not on quota: {', '.join(reserved)}"
    return table


def pool_table(config: StackConfig) -> Table:
    """GPU and CPU pools: machine, accelerators per node, nodes, capacity and the worker groups on each."""
    table = Table(title=f"GPU and CPU pools ({config.cluster.mode} mode)", title_justify="left")
    for column in ("pool", "kind", "accelerator", "machine type", "GPUs/node", "nodes", "capacity", "used by"):
        table.add_column(column, justify="right" if column in {"GPUs/node", "nodes"} else "left")
    users: dict[str, list[str]] = {}
    for obj in config.ray_objects:
        for group in obj.worker_groups:
            users.setdefault(group.target[1], []).append(f"{obj.namespace}/{obj.name}:{group.name}")
    for kind, pools in (("gpu", config.gpu_pools), ("cpu", config.cpu_pools)):
        for pool in pools:
            nodes = f"{pool.min_nodes}-{pool.max_nodes}" if pool.autoscaled else str(pool.count)
            table.add_row(
                pool.name,
                kind,
                getattr(pool, "accelerator", ""),
                pool.machine_type,
                str(pool.machine.gpus) if kind == "gpu" else "",
                nodes,
                pool.capacity,
                ", ".join(users.get(pool.name, [])) or "[yellow]unused[/]",
            )
    return table


def print_plan(plan: Plan, config: StackConfig, console: Console, cost=None, inventory=None) -> None:
    """The tree, the summary, the TPU capacity, then (given `cost`, a plan.cost.CostResult) $/hour and $/month."""
    console.print(tree(plan))
    console.print()
    console.print("[bold]Resources:[/]")
    console.print(f"    [green]+ {len(plan.steps)} to create[/]")
    console.print()
    console.print(capacity_table(config))
    for line in multislice_lines(config):
        console.print(line)
    console.print()
    if config.gpu_pools or config.cpu_pools:
        console.print(pool_table(config))
        console.print()
    if cost is not None:
        from .cost import print_cost

        print_cost(cost, console)
        console.print()
    console.print(quota_table(config))
    if isinstance(config, StackConfig):
        from . import version_set

        console.print()
        console.print(version_set.table(version_set.versions(plan, config, inventory)))
    print_warnings(stackfile.warning_lines(plan.warnings), console)  # one line each in JSON mode (stderr)


def kubernetes_objects(plan: Plan) -> list[dict]:
    """Every Kubernetes object the stack creates, as `kubectl apply` would take it, in declaration order."""
    return [
        step.inputs
        for step in plan.steps
        if step.type.startswith("kubernetes:")
        and step.custom
        and not step.type.startswith("pulumi:providers:")
        and {"apiVersion", "kind", "metadata"} <= set(step.inputs)
    ]


def manifests_yaml(plan: Plan) -> str:
    """The objects as one YAML stream, ready for `kubectl diff -f -` or a review: apiVersion, kind, metadata and spec
    first, every mapping below in key order, so the stream is byte-identical between runs."""
    first = ("apiVersion", "kind", "metadata", "spec")

    def ordered(value):
        if isinstance(value, dict):
            return {key: ordered(value[key]) for key in sorted(value)}
        if isinstance(value, list):
            return [ordered(item) for item in value]
        return value

    objects = [
        {
            **{k: ordered(o[k]) for k in first if k in o},
            **{k: ordered(v) for k, v in sorted(o.items()) if k not in first},
        }
        for o in kubernetes_objects(plan)
    ]
    return yaml.safe_dump_all(objects, sort_keys=False, width=120)
