"""How the toolchain's commands run as programs (`python -m plan`, `python -m plan.compare`, `python -m plan.verify`,
`ray-tpu-gke`)."""

from __future__ import annotations

import gc
import sys
from typing import Callable, NoReturn

# The default (700, 10, 10) sets off a full collection every 70,000 allocations: dozens of them while a command imports
# pulumi_gcp's and pulumi_kubernetes's generated modules, each walking every object made so far and freeing nothing.
_IMPORT_GC_THRESHOLD = (20_000, 10, 10)


def start() -> None:
    """Before a command's imports: fewer full collections, and room for the program's nesting under mocks."""
    gc.set_threshold(*_IMPORT_GC_THRESHOLD)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))  # the program under mocks nests one wait per resource


def run(main: Callable[[], int]) -> NoReturn:
    """Exit with main()'s status (130 on Ctrl-C), skipping the interpreter's last collection of every object.

    A plan's imports leave thousands of generated classes, each in a reference cycle, which the interpreter's shutdown
    would walk and free one by one: about a third of the CPU time of `python -m plan dev`, measured. Frozen, they go
    with the process's memory; output is flushed and atexit handlers run as before.
    """
    start()
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
    finally:
        gc.freeze()
