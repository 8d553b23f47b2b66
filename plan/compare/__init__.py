"""The GPU/TPU comparison: the stack's comparison RayJobs run once each, measured, and reported side by side.

`python -m plan.compare STACK --context CTX` (live, `live.py`) or `--local` (`make compare`, `local.py`). What each side
stands for and what it costs an hour comes from the stack's offline plan (`sides.py`); what the job measured comes from
its own event lines and result document (`events.py`, the interface of `workloads.train`); what the cluster knows
(node and pod timestamps) from the collector. One pure builder (`report.py`) computes every number for both modes;
`markdown.py` and `charts.py` render it.
"""
