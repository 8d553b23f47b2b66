"""Output agreement between the sides: the same prompts decoded greedily (temperature 0) on each, compared piece by
piece (one streamed chunk with text is one piece: a token where the server streams one token a chunk, as vLLM
does by default). Per prompt: whether the first N pieces match on every side, and the first position where they
differ. Pure."""

from __future__ import annotations

from .stream import StreamRun


def first_difference(sequences: list[list[str]], count: int) -> int | None:
    """The first position below `count` where the sequences differ (a missing piece differs), None when none do."""
    for i in range(count):
        pieces = {s[i] if i < len(s) else None for s in sequences}
        if len(pieces) > 1 or None in pieces:
            return i
    return None


def compare(runs: dict[str, StreamRun], count: int) -> dict:
    """The sides' agreement runs (side name -> the run of the agreement prompts) compared on their first `count`
    pieces."""
    if len(runs) < 2:
        return {"tokens": count, "sides": sorted(runs), "problem": "fewer than two sides decoded the prompts"}
    names = sorted(runs)
    by_prompt: dict[int, dict[str, list[str]]] = {}
    failed = 0
    for name in names:
        for o in runs[name].outcomes:
            if o.ok:
                by_prompt.setdefault(o.prompt, {})[name] = o.pieces
            else:
                failed += 1
    compared = {p: seqs for p, seqs in sorted(by_prompt.items()) if len(seqs) == len(names)}
    prompts = [
        {"prompt": p, "firstDifference": first_difference([seqs[n] for n in names], count)}
        for p, seqs in compared.items()
    ]
    matched = sum(1 for p in prompts if p["firstDifference"] is None)
    out = {
        "tokens": count,
        "sides": names,
        "prompts": prompts,
        "compared": len(prompts),
        "failedRequests": failed,
        "matchingPrefixShare": round(matched / len(prompts), 4) if prompts else None,
    }
    if not prompts:
        out["problem"] = "no prompt was answered on every side"
    return out


def for_side(compared: dict, name: str) -> dict:
    """A side's view of the comparison (report.json `llm[].agreement`): the prompts compared, the share whose first
    `tokens` pieces match on every side, the other sides, and per prompt where they first differ."""
    return {
        "prompts": compared.get("compared", 0),
        "matchingPrefixShare": compared.get("matchingPrefixShare"),
        "tokens": compared["tokens"],
        "with": [n for n in compared.get("sides", []) if n != name],
        "failedRequests": compared.get("failedRequests"),
        "firstDifference": {str(p["prompt"]): p["firstDifference"] for p in compared.get("prompts", [])},
        **({"problem": compared["problem"]} if compared.get("problem") else {}),
    }
