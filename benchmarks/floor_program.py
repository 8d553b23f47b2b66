"""The bare Pulumi program of the SDK floor: register the prepared resources, nothing else (see floor.py)."""

from benchmarks import floor

floor.replay()
