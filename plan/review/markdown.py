"""The review as one pull-request comment (`--format markdown`).

Risky changes first in a caution block, then the gates that fail the check, the monthly cost added and removed per
stack and per slice or pool, the TPU capacity added and removed per slice, a summary table of every stack, then each
changed stack's changes folded in a `diff` block (GitHub colours its lines) with the stack's Mermaid diagram, the
slices the change touches marked.
"""

from __future__ import annotations

from pathlib import Path

from .. import ROOT
from .capacity import describe
from .change import Change
from .changes import Report, StackDiff, summary_line
from .cost import describe as describe_cost
from .cost import usd
from .paths import show_pair
from .replacement import NODE_POOL
from .revisions import stack_file_at
from .tpu import slice_of_pool

MARKER = "<!-- ray-tpu-gke:offline-diff -->"

# In a ```diff block GitHub colours lines by their first character: "+" green, "-" red.
_MD_SYMBOL = {"create": "+", "update": "~", "replace": "-/+", "delete": "-"}


def _md_change_block(change: Change, limit: int) -> list[str]:
    lines = [
        f"{_MD_SYMBOL[change.op]:<3} {change.op:<7} {change.type} {change.name}"
        + (f" ({change.summary})" if change.summary else "")
        + ("  <-- RISKY" if change.risky else "")
    ]
    for d in change.details[:limit]:
        lines.append(
            f"!       {d.path}: {' => '.join(show_pair(d.old, d.new, 80))}"
            + ("  (forces replacement)" if d.replaces else "")
        )
    if len(change.details) > limit:
        lines.append(f"!       ... {len(change.details) - limit} more")
    return lines


def _diagram(diff: StackDiff, root: Path) -> str | None:
    """The working tree's diagram of a stack, slices touched by the change marked; None if it cannot be drawn."""
    from ray_tpu_gke.spec.problems import ConfigError

    from .. import diagram, stackfile

    path = stack_file_at(root, diff.stack)
    if diff.new.status != "planned" or path is None or not path.is_file():
        return None
    try:
        _, _, config = stackfile.load_checked(diff.stack, path)
    except (ConfigError, OSError, ValueError):
        return None
    return diagram.mermaid(config, marks=slice_marks(diff))


def slice_marks(diff: StackDiff) -> dict[str, str]:
    """tpuSlices names whose node pools this change creates, updates or replaces: `risky`, `changed` or `created`."""
    marks: dict[str, str] = {}
    rank = {"created": 0, "changed": 1, "risky": 2}
    for change in diff.changes:
        if change.type != NODE_POOL or f"ray-tpu-gke:index:TpuSlicePools${NODE_POOL}::" not in change.urn:
            continue
        slice_name = slice_of_pool(change.name)
        mark = "risky" if change.risky else "created" if change.op == "create" else "changed"
        if rank[mark] >= rank.get(marks.get(slice_name, "created"), 0):
            marks[slice_name] = mark
    return marks


def _gates(report: Report) -> list[str]:
    """Each gate that fails the check, with what made it fail."""
    out: list[str] = []
    for failure in report.failed_gates:
        out += [
            "> [!IMPORTANT]",
            f"> `{failure.option}` is on, so this check fails (exit status {failure.exit_code}):",
            ">",
        ]
        out += [f"> - {problem}" for problem in failure.problems] + [""]
    return out


def _stranded(report: Report) -> list[str]:
    """Capacity the new revision provisions and no Ray worker group uses, what the change strands marked new."""
    rows = [(d, s) for d in report.stacks if not d.error for s in d.stranded]
    if not rows:
        return []
    fresh = sum(s.new for _, s in rows)
    out = [
        "> [!WARNING]",
        f"> **Stranded capacity** after this change ({fresh} newly stranded): always provisioned, "
        "paid for, and used by no Ray worker group.",
        ">",
    ]
    out += [f"> - **{d.stack}** · {s.line()}" for d, s in rows]
    return out + [""]


def _consequences(report: Report) -> list[str]:
    """A budget the change breaks, the reservation capacity it needs, a name it contradicts (review.consequences)."""
    rows = [(d, line) for d in report.stacks if not d.error for line in d.consequences.lines()]
    if not rows:
        return []
    out = ["> [!WARNING]", "> **Consequences** of this change a reviewer must weigh:", ">"]
    out += [f"> - **{d.stack}** · {line}" for d, line in rows]
    return out + [""]


def _capacity(report: Report) -> list[str]:
    """The TPU chips and hosts the change adds and removes, in all and per slice; nothing where it changes none."""
    rows = [(d, s) for d in report.stacks for s in d.capacity.slices]
    if not rows:
        return []
    totals = [d.capacity.total() for d in report.stacks]
    out = [
        f"**TPU capacity**: {describe({key: sum(t[key] for t in totals) for key in totals[0]})}",
        "",
        "| stack | slice | node pools | chips added | chips removed | hosts added | hosts removed |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for d, s in rows:
        out.append(
            f"| `{d.stack}` | `{s.slice}` | {s.pools_text()} | {s.chips_added} | {s.chips_removed} | "
            f"{s.hosts_added} | {s.hosts_removed} |"
        )
    return out + [""]


def _cost(report: Report) -> list[str]:
    """The monthly cost each stack gains or loses, per slice and pool; nothing where no stack's cost changes."""
    deltas = [(d, d.cost) for d in report.stacks if d.cost is not None and d.cost.changed]
    if not deltas:
        return []
    known = [c for _, c in deltas if c.known]
    out = []
    if known:
        total, most = sum(c.monthly for c in known), sum(c.max_monthly for c in known)
        line = f"**Monthly cost**: {usd(total, True)} at the configured size"
        if most != total:
            line += f", {usd(most, True)} at most (every autoscaled slice and pool at its maximum)"
        out += [line + " (list prices and the stacks' own rates; see docs/cost.md)", ""]
    out += [
        "| in stack | slice or pool | kind | change | before $/month | after $/month | change $/month |",
        "| --- | --- | --- | --- | ---: | ---: | ---: |",
    ]
    for d, c in deltas:
        if not c.known:
            out.append(f"| `{d.stack}` | | | | | | unknown: {describe_cost(c).removeprefix('unknown: ')} |")
            continue
        for item in c.items:
            before = usd(item.before["monthly"]) if item.before else "—"
            after = usd(item.after["monthly"]) if item.after else "—"
            out.append(
                f"| `{d.stack}` | `{item.name}` | {item.kind} | {item.op} | {before} | {after} | "
                f"{usd(item.monthly, True)} |"
            )
        out.append(
            f"| `{d.stack}` | **total** | | | {usd((c.before or {}).get('monthly', 0))} | "
            f"{usd((c.after or {}).get('monthly', 0))} | **{usd(c.monthly, True)}** |"
        )
    return out + [""]


MAX_COMMENT = 60_000  # GitHub rejects comments over 65,536 characters


def markdown(report: Report, root: Path = ROOT, detail_limit: int = 25, diagrams: bool = True) -> str:
    """One pull-request comment for every stack: summary table, risky changes first, details folded."""
    out = [
        MARKER,
        f"### Infrastructure diff against `{report.ref}`" + (f" (`{report.commit[:12]}`)" if report.commit else ""),
        "",
    ]
    if report.error:
        out += ["> [!WARNING]", f"> The diff could not be computed: {report.error}", ""]
        return "\n".join(out) + "\n"
    risky = [(d, c) for d in report.stacks for c in d.risky]
    errors = [d for d in report.stacks if d.error]
    if risky:
        out += [
            "> [!CAUTION]",
            f"> **{len(risky)} risky change{'s' if len(risky) != 1 else ''}**: a TPU node pool or the cluster is "
            "replaced or deleted. A replaced multi-host pool loses its whole slice, and the capacity may not "
            "come back.",
            ">",
        ]
        for d, c in risky:
            for reason in c.reasons:
                out.append(f"> - **{d.stack}** · {c.op} · `{c.type}` **{c.name}**: {reason}")
        out.append("")
    out += _gates(report) + _consequences(report) + _stranded(report) + _cost(report) + _capacity(report)
    if errors:
        for d in errors:
            first, _, rest = d.error.partition("\n")
            out += ["> [!WARNING]", f"> {first}", ""]
            if rest.strip():
                out += ["```text", rest.strip(), "```", ""]
    if not any(d.changes for d in report.stacks) and not errors:
        out += ["**No changes**: every stack plans the same resources at both revisions.", ""]
    out += [
        "| stack | create | update | replace | delete | unchanged | risky |",
        "| --- | ---: | ---: | ---: | ---: | ---: | :--- |",
    ]
    for d in report.stacks:
        if d.error:
            out.append(f"| `{d.stack}` | | | | | | cannot plan |")
            continue
        c = d.counts
        flag = f"**{len(d.risky)}** :warning:" if d.risky else ("no changes" if not d.changes else "none")
        out.append(
            f"| `{d.stack}` | {c['create']} | {c['update']} | {c['replace']} | {c['delete']} | {d.unchanged} | {flag} |"
        )
    out.append("")
    for d in report.stacks:
        if d.error or not d.changes:
            continue
        note = d.to_json().get("note")
        ordered = d.risky + [c for c in d.changes if not c.risky]
        block = [
            f"<details><summary><b>{d.stack}</b>: {summary_line(d)}" + (" :warning:" if d.risky else "") + "</summary>",
            "",
        ]
        if note:
            block += [f"_{note}_", ""]
        block += ["```diff"]
        for change in ordered:
            block += _md_change_block(change, detail_limit)
        for o in d.outputs:
            block.append(f"!  output {o.path}: {' => '.join(show_pair(o.old, o.new, 80))}")
        block += ["```", ""]
        if diagrams:
            chart = _diagram(d, root)
            if chart:
                block += [
                    f"Slices of `{d.stack}` after this change (red: replaced or deleted pools, amber: "
                    "changed, green: new):",
                    "",
                    "```mermaid",
                    chart.rstrip(),
                    "```",
                    "",
                ]
        block += ["</details>", ""]
        out += block
    out += [
        "<sub>Offline plan: both revisions' own program and stack files under Pulumi mocks, no cloud credentials. "
        "Values only the cloud knows are not compared; where credentials are configured, the `pulumi preview` "
        "comment of each stack is authoritative.</sub>",
        "",
    ]
    text = "\n".join(out)
    if len(text) > MAX_COMMENT and (detail_limit > 3 or diagrams):
        return markdown(report, root, detail_limit=3, diagrams=False)
    if len(text) > MAX_COMMENT:
        text = text[:MAX_COMMENT] + "\n\n_(truncated: run `python -m plan STACK --diff-against REF` for the rest)_"
    return text + ("" if text.endswith("\n") else "\n")
