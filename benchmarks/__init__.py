"""Plan-time benchmarks: synthetic stacks of many TPU slices against the bare Pulumi SDK floor (docs/benchmarks.md)."""

# Measure the checkout the benchmark runs from: `plan` binds `ray_tpu_gke` to this checkout's components/ before
# anything imports it, whatever copy the venv's editable install names (tests/conftest.py does the same).
import plan as _checkout_plan  # noqa: F401
