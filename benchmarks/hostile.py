"""How fast hostile stack files are refused: measured here and reported by `make bench`, where tests/
test_hostile_input.py only guards against hangs (issue #20: no test asserts a wall-clock time).

Each input is read by the strict reader in this process (`stackfile.load`, best of the repeats), and two
go through the whole command line in a fresh interpreter (`python -m plan STACK --config-file FILE`, its start and
imports included), as a user meets them.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from plan import stackfile
from ray_tpu_gke.spec.problems import ConfigError

ROOT = Path(__file__).resolve().parent.parent
MINIMAL = ("config:\n  gcp:project: acme-ml-dev\n  ray-tpu-gke:cluster:\n    name: ray-tpu-dev\n"
           "    location: us-east5-b\n    deletionProtection: true\n")
# Targets (issue #17; the bounds tests/plan/test_hostile_input.py used to assert), reported by `python -m benchmarks
# --check`: the reader answers each input within two seconds (the file just under 1 MiB is the slowest, the refusals
# take milliseconds), and the command line, its interpreter's start included, within five.
MAX_READ_SECONDS = 2.0
MAX_CLI_SECONDS = 5.0


def alias_bomb() -> str:
    """Nine levels of nine aliases each: 9**9 list items once expanded (a billion-laughs file)."""
    levels = "abcdefghi"
    text = "config:\n  a: &a [" + ", ".join(["lol"] * 9) + "]\n"
    text += "".join(f"  {name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n" for prev, name in zip(levels, levels[1:]))
    return text + "  ray-tpu-gke:team: *i\n"


def deep_nesting() -> str:
    depth = 100_000
    return "config:\n  gcp:project: " + "[" * depth + "]" * depth + "\n"


def just_under_the_limit() -> str:
    """Some 24,000 small mappings, cut to just under the reader's 1 MiB limit: read, not refused."""
    from plan import yamlfile

    entries = "".join(f"    key{i}: {{a: [1, 2, 'x'], b: value{i}}}\n" for i in range(24_000))
    text = "config:\n  gcp:project: acme\n  ray-tpu-gke:big:\n" + entries
    return text[:text.rfind("\n    key", 0, yamlfile.MAX_BYTES)] + "\n"


def duplicate_keys() -> str:
    return MINIMAL + "    deletionProtection: false\n"


def binary() -> bytes:
    return b"config:\n  gcp:project: x\n\x00\x01\x02\xff\xfe" + bytes(range(256))


INPUTS: dict[str, Callable[[], str | bytes]] = {
    "alias bomb (9^9 items)": alias_bomb,
    "100,000 levels of nesting": deep_nesting,
    "a file just under 1 MiB": just_under_the_limit,
    "duplicate key": duplicate_keys,
    "binary file": binary,
}
CLI_INPUTS = ("alias bomb (9^9 items)", "binary file")


def _write(folder: Path, name: str, content: str | bytes) -> Path:
    path = folder / (name.split(" ")[0].replace("(", "") + ".yaml")
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def _read_seconds(path: Path, repeat: int) -> tuple[float, str]:
    best, outcome = float("inf"), ""
    for _ in range(repeat):
        start = time.perf_counter()
        try:
            stackfile.load("dev", config_file=path)
            outcome = "read"
        except ConfigError as error:
            outcome = f"refused ({len(error.problems)} problem{'s' * (len(error.problems) != 1)})"
        best = min(best, time.perf_counter() - start)
    return best, outcome


def _huge_file(folder: Path) -> Path:
    path = folder / "huge.yaml"
    with open(path, "wb") as file:
        file.write(MINIMAL.encode())
        file.truncate(200 * (1 << 20))  # sparse: 200 MiB that the reader must refuse without reading
    return path


def measure(repeat: int = 3) -> dict:
    """{"reads": [{"input", "seconds", "outcome"}], "cli": [{"input", "seconds", "exit_status"}]}."""
    reads, cli = [], []
    with tempfile.TemporaryDirectory(prefix="ray-tpu-gke-hostile-") as workdir:
        folder = Path(workdir)
        paths = {name: _write(folder, name, make()) for name, make in INPUTS.items()}
        paths["a sparse 200 MiB file"] = _huge_file(folder)
        for name, path in paths.items():
            seconds, outcome = _read_seconds(path, repeat)
            reads.append({"input": name, "seconds": seconds, "outcome": outcome})
        for name in CLI_INPUTS:
            best, status = float("inf"), None
            for _ in range(repeat):
                start = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "plan", "dev", "--config-file", str(paths[name])],
                                      cwd=ROOT, capture_output=True, text=True, timeout=300)
                best, status = min(best, time.perf_counter() - start), done.returncode
            last = (done.stderr.strip().splitlines() or [""])[-1]
            cli.append({"input": name, "seconds": best, "exit_status": status, "last_stderr_line": last})
    return {"reads": reads, "cli": cli}


def targets(result: dict) -> list[dict]:
    slowest = max(result["reads"], key=lambda r: r["seconds"])
    slowest_cli = max(result["cli"], key=lambda r: r["seconds"])
    return [
        {"target": f"hostile stack files: the reader answers each within {MAX_READ_SECONDS:.0f} s",
         "met": slowest["seconds"] <= MAX_READ_SECONDS,
         "detail": f"slowest: {slowest['input']} {slowest['seconds'] * 1000:.0f} ms"},
        {"target": f"hostile stack files: `python -m plan` refuses them within {MAX_CLI_SECONDS:.0f} s, start "
                   "included, with exit status 2",
         "met": slowest_cli["seconds"] <= MAX_CLI_SECONDS and all(r["exit_status"] == 2 for r in result["cli"]),
         "detail": ", ".join(f"{r['input']}: {r['seconds']:.2f} s (exit {r['exit_status']})" for r in result["cli"])},
    ]


def render(result: dict) -> list[str]:
    lines = ["Hostile stack files (best of the repeats):"]
    lines += [f"  read {r['input']:<28} {r['seconds'] * 1000:8.1f} ms  {r['outcome']}" for r in result["reads"]]
    lines += [f"  cli  {r['input']:<28} {r['seconds']:8.2f} s   exit {r['exit_status']}: {r['last_stderr_line'][:80]}"
              for r in result["cli"]]
    return lines
