"""The library/ tests' shared fixtures: the price table's generator (scripts/prices.py) and the machine catalogue
snapshots it reads (test_cost_table.py, test_price_checks.py)."""

from __future__ import annotations

import types
from pathlib import Path

import pytest
from helpers import ROOT, module_from_file

# The columns of a SkyPilot-format `vms.csv`, the catalogue snapshot scripts/prices.py reads (anycloud-sh/catalog
# `gcp/vms.csv`), written here as the catalogue has them rather than read from the script under test.
CATALOGUE_HEADER = ("InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,"
                    "Price,SpotPrice")


@pytest.fixture(scope="session")
def prices_script() -> types.ModuleType:
    """scripts/prices.py, the price table's generator, as a module (a script, in no package)."""
    return module_from_file(ROOT / "scripts" / "prices.py", "prices_script")


@pytest.fixture(scope="session")
def catalogue_csv():
    """Writes FOLDER/vms.csv, a catalogue snapshot of ROWS under the catalogue's header; returns its path."""
    def write(folder: Path, rows: list[str]) -> Path:
        path = folder / "vms.csv"
        path.write_text("\n".join([CATALOGUE_HEADER, *rows]) + "\n")
        return path

    return write
