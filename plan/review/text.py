"""The review for a terminal (`--format text`): risky changes first, then every change with its changed inputs, then
the counts, the TPU capacity the change adds and removes per slice, and the cost delta per slice and pool."""

from __future__ import annotations

from .capacity import describe
from .changes import Report, StackDiff, summary_line
from .cost import describe as describe_cost
from .cost import describe_item
from .paths import show_pair

_SYMBOL = {"create": "+", "update": "~", "replace": "+-", "delete": "-"}
_STYLE = {"create": "green", "update": "yellow", "replace": "magenta", "delete": "red"}


def _header(report: Report) -> str:
    return f"{report.ref} ({report.commit[:12]})" if report.commit else report.ref


def print_text(report: Report, console) -> None:
    from rich.markup import escape

    if report.error:
        console.print(f"[bold red]error:[/] {escape(report.error)}")
        return
    for diff in report.stacks:
        console.print(f"[bold]Stack {escape(diff.stack)}[/]: the working tree against {escape(_header(report))}")
        if diff.error:
            console.print(f"  [bold red]error:[/] {escape(diff.error)}")
            console.print()
            continue
        note = diff.to_json().get("note")
        if note:
            console.print(f"  [yellow]{escape(note)}[/]")
        if not diff.changes:
            console.print(f"  [green]No changes.[/] The {diff.unchanged} resources plan the same at both revisions.")
            _print_cost(diff, console)
            _print_stranded(diff, console)
            console.print()
            continue
        for change in diff.risky:
            for reason in change.reasons:
                console.print(
                    f"  [bold white on red] RISKY [/] [bold]{change.op}[/] {escape(change.type)} "
                    f"[bold]{escape(change.name)}[/]: {escape(reason)}"
                )
        if diff.risky:
            console.print()
        for change in diff.changes:
            style = _STYLE[change.op]
            line = (
                f"  [{style}]{_SYMBOL[change.op]:>2} {change.op:<7}[/] {escape(change.type)} "
                f"[bold]{escape(change.name)}[/]"
            )
            if change.summary:
                line += f" [dim]({escape(change.summary)})[/]"
            if change.risky:
                line += " [bold red]RISKY[/]"
            console.print(line)
            for d in change.details:
                mark = " [magenta](forces replacement)[/]" if d.replaces else ""
                old, new = show_pair(d.old, d.new)
                console.print(f"             {escape(d.path)}: {escape(old)} [dim]=>[/] {escape(new)}{mark}")
        for d in diff.outputs:
            old, new = show_pair(d.old, d.new)
            console.print(f"  [cyan]output[/] {escape(d.path)}: {escape(old)} [dim]=>[/] {escape(new)}")
        console.print(f"  [bold]Resources:[/] {summary_line(diff)}")
        capacity = diff.capacity
        if capacity:
            console.print(f"  [bold]TPU capacity:[/] {describe(capacity.total())}")
            for s in capacity.slices:
                console.print(f"             {escape(s.slice)} ({escape(s.pools_text())}): {describe(s.counts())}")
        _print_cost(diff, console)
        _print_stranded(diff, console)
        _print_consequences(diff, console)
        console.print()


def _print_consequences(diff: StackDiff, console) -> None:
    """A budget the change breaks, the reservation it needs, a name it contradicts: one line each, in bold red."""
    from rich.markup import escape

    for line in diff.consequences.lines():
        console.print(f"  [bold red]{escape(line)}[/]", soft_wrap=True)


def _print_stranded(diff: StackDiff, console) -> None:
    """`Stranded:` one line per slice or pool the working tree provisions and no Ray worker group uses."""
    from rich.markup import escape

    for s in diff.stranded:
        style = "bold yellow" if s.new else "yellow"
        console.print(f"  [{style}]Stranded:[/] {escape(s.line())}", soft_wrap=True)


def _print_cost(diff: StackDiff, console) -> None:
    """`Cost: +$1,971.00/month (...)` and one line per slice or pool whose cost changes; nothing where none does."""
    from rich.markup import escape

    cost = diff.cost
    if cost is None or not cost.changed:
        return
    style = "yellow" if not cost.known else "bold"
    console.print(f"  [{style}]Cost:[/] {escape(describe_cost(cost))}", soft_wrap=True)
    for item in cost.items:
        console.print(f"             {escape(item.name)} ({item.kind}, {item.op}): {escape(describe_item(item))}")
