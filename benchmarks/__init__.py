"""Plan-time benchmarks: synthetic stacks of many TPU slices against the bare Pulumi SDK floor (docs/benchmarks.md)."""
