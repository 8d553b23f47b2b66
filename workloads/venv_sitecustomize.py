"""The `sitecustomize` of the workloads' virtualenvs (.venv-workloads, .venv-torch): the Makefile installs this file as
sitecustomize.py in their site-packages, so every Python process of a local Ray cluster runs it at start (Ray's
workers and agents, the drivers, the tests' scripts, `make compare`'s jobs). The images carry this folder but do not
install the file: their processes keep CPython's defaults.

Each such process imports Ray, and most also Ray Train, Ray Data, JAX, pandas and pyarrow: millions of objects, which
CPython's cyclic collector walks again and again at its default thresholds (700, 10, 10). perf found a tenth of a
training test module's CPU time in that collector. With the youngest generation collected every 50,000 allocations,
the module used about 6 % less CPU and the Ray lane about 5 % (docs/benchmarks.md, "Test lanes"). Ray Serve tunes its
own proxies' and replicas' collector the same way for the same reason (ray/serve/_private/proxy.py
_configure_gc_options: gc.freeze() after start-up)."""

import gc

THRESHOLDS = (50_000, 20, 10)

gc.set_threshold(*THRESHOLDS)
