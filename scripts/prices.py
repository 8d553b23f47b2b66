"""Generate components/catalog/data/prices.yaml from a Compute Engine price catalogue snapshot.

    python scripts/prices.py CATALOGUE.csv --source URL --as-of YYYY-MM-DD [--out components/catalog/data/prices.yaml]
    python scripts/prices.py --check [TABLE]    # the rows of a table (default: the shipped one) the checks doubt

CATALOGUE.csv is a SkyPilot-format `vms.csv` (columns InstanceType, vCPUs, MemoryGiB, AcceleratorName,
AcceleratorCount, GpuInfo, Region, AvailabilityZone, Price, SpotPrice), e.g. anycloud-sh/catalog `gcp/vms.csv`, which
its bot builds with SkyPilot's GCP fetcher from Google's Cloud Billing Catalog API. Neither that repository nor
skypilot-org/skypilot-catalog has a licence file, so the snapshot is not vendored here: the script takes its path, and
the table it writes records where the snapshot came from (`--source`, a URL naming its commit) and its date
(`--as-of`, the commit's date).

What the rows mean (kind, name, capacity, one hourly rate per region where the catalogue sells it):
- tpu: USD per chip-hour of a generation, the catalogue's slice-hour price of the smallest slice listed in the region
  divided by its chips (tpu-v5litepod-N and tpu-v6e-N have N chips; tpu-v4-N and tpu-v5p-N count TensorCores, two
  per chip, so N / 2 chips: Cloud TPU "TPU versions" pages).
- gpu: USD per VM-hour of a GPU machine type, GPUs included: the catalogue lists the host (InstanceType row) and its
  GPUs (AcceleratorName/AcceleratorCount row) apart, so both are added. Only machine types of the GPU catalogue
  (components/catalog/gpu.py), and only the capacities they are sold with (A3 Ultra and A4: no on-demand).
- cpu: USD per VM-hour of every E2, N2, N2D, N4 and C3 standard/highmem/highcpu type the catalogue lists.

The snapshot's traps, each dropped and counted in the table's `snapshot.dropped`: 700.0 is a marker for "no price",
not a price; 0.0 and empty prices are no price; exact duplicate rows count once; AI zones (`us-south1-ai1b`) are
zones of their own, not the region's price; a rate that differs between the zones of a region takes the highest
(counted under `zonesDiffer`), never silently the first. Rows no catalogue gives (flex-start, from Google's Dynamic
Workload Scheduler pricing as quoted) are kept from HAND_ROWS below, each with its own date and source.

Then the rows are checked against each other (components/catalog/price_checks.py: an on-demand or flex-start rate
under 60 % of the median of its other regions, a larger GPU machine priced below a smaller one in the same region,
Spot above on-demand): each doubted row is dropped, printed with its reason and counted in `snapshot.dropped`. A
snapshot row known to be wrong is replaced by a row of CORRECTIONS (written under `corrections:`, each with its own
source and date) before the checks. The package applies the same checks when it reads the table, so a table
generated before them is read the same.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from collections import Counter, defaultdict
from datetime import date
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "components" / "catalog" / "data" / "prices.yaml"
COLUMNS = ("InstanceType", "vCPUs", "MemoryGiB", "AcceleratorName", "AcceleratorCount", "GpuInfo", "Region",
           "AvailabilityZone", "Price", "SpotPrice")
NO_PRICE_MARKER = Decimal("700.0")  # the snapshot's placeholder (e.g. tpu-v6e-* in asia-east1-c, us-central2-b)
TPU_SLICE = re.compile(r"tpu-(v4|v5litepod|v5p|v6e)-([0-9]+)")
TPU_GENERATION = {"v4": "v4", "v5litepod": "v5e", "v5p": "v5p", "v6e": "v6e"}
TENSORCORES_PER_CHIP = {"v4": 2, "v5p": 2}  # their slice names count TensorCores
CPU_TYPE = re.compile(r"(e2|n2|n2d|n4|c3)-(standard|highmem|highcpu)-[0-9]+")
AI_ZONE = re.compile(r"[a-z]+-[a-z]+[0-9]+-ai[0-9]+[a-z]")
REGION = re.compile(r"[a-z]+-[a-z]+[0-9]+")
# GKE accelerator name -> the catalogue's AcceleratorName of its GPU rows.
GPU_ROW_NAMES = {"nvidia-l4": "L4", "nvidia-tesla-a100": "A100", "nvidia-a100-80gb": "A100-80GB",
                 "nvidia-h100-80gb": "H100", "nvidia-h100-mega-80gb": "H100-MEGA", "nvidia-h200-141gb": "H200",
                 "nvidia-b200": "B200"}
CAPACITY_COLUMNS = (("onDemand", "Price"), ("spot", "SpotPrice"))

# Rates no catalogue snapshot carries, kept with their own date and source.
HAND_ROWS = (
    {"kind": "tpu", "name": "v6e", "capacity": "flexStart", "region": "us-east5", "hourly": 1.35, "asOf": "2026-09-10",
     "source": "https://cloud.google.com/products/dws/pricing",
     "note": "Dynamic Workload Scheduler (flex-start) price of a v6e chip-hour, as two public write-ups quote the page "
             "(one read on 2026-09-10, one listing us-east5 among its regions); the page itself could not be read "
             "here"},
)

# Snapshot rows replaced, each with where the right figure comes from. The snapshot prices an A3 High VM in
# us-central1 at half its price in us-east4; Google prices the two regions' A3 machines alike.
CORRECTIONS = (
    {"kind": "gpu", "name": "a3-highgpu-8g", "capacity": "onDemand", "region": "us-central1", "hourly": 87.83247,
     "asOf": "2026-09-26", "source": "https://cloud.google.com/compute/vm-instance-pricing#accelerator-optimized",
     "note": "8 x the a3-highgpu-1g on-demand-equivalent list price in us-central1 ($10.9791/GPU-hour: the GPU, "
             "vCPU and memory SKUs of the Cloud Billing Catalog API as a public data set quotes them, read "
             "2026-09-26), equal to the snapshot's us-east4 row; the pricing page itself could not be read here"},
    # The snapshot's A100 80GB GPU rows in us-central1 are half price (a2-ultragpu-8g below a2-highgpu-8g there).
    {"kind": "gpu", "name": "a2-ultragpu-8g", "capacity": "onDemand", "region": "us-central1", "hourly": 40.55,
     "asOf": "2026-12-05", "source": "https://cloud.google.com/compute/vm-instance-pricing#accelerator-optimized",
     "note": "96 A2 vCPUs at $0.031611 and 1360 GB at $0.004237 an hour (the pair gives the snapshot's own "
             "a2-highgpu-1g host row, $0.73948), 8 A100 80GB GPUs at $3.9284 (GPU pricing page) and the 3 TB of "
             "Local SSD bundled at $0.08/GB-month; the same sum gives a2-ultragpu-1g $5.07, as a public price list "
             "quotes it; the pricing pages themselves could not be read here"},
)


def _price(text: str) -> Decimal | None:
    """A catalogue price, or None for what is not one (empty, 0.0, the 700.0 marker)."""
    if not text:
        return None
    value = Decimal(text)
    return None if value <= 0 or value == NO_PRICE_MARKER else value


class Reader:
    """The snapshot's rows, deduplicated, with what was dropped and why."""

    def __init__(self, path: Path):
        with open(path, newline="", encoding="utf-8") as handle:
            rows = csv.DictReader(handle)
            if tuple(rows.fieldnames or ()) != COLUMNS:
                raise SystemExit(f"{path}: columns {rows.fieldnames}, expected {', '.join(COLUMNS)}")
            self.dropped: Counter = Counter()
            seen, self.rows = set(), []
            for row in rows:
                key = tuple(row[c] for c in COLUMNS)
                if key in seen:
                    self.dropped["duplicateRows"] += 1
                    continue
                seen.add(key)
                if AI_ZONE.fullmatch(row["AvailabilityZone"]):
                    self.dropped["aiZoneRows"] += 1
                    continue
                if not REGION.fullmatch(row["Region"]) or not row["AvailabilityZone"].startswith(row["Region"] + "-"):
                    self.dropped["badRegionRows"] += 1
                    continue
                self.rows.append(row)

    def price(self, row: dict, column: str) -> Decimal | None:
        value = _price(row[column])
        if value is None and row[column]:
            self.dropped["noPriceMarker" if Decimal(row[column]) == NO_PRICE_MARKER else "zeroPrice"] += 1
        return value


def _one_per_region(values: dict[str, set[Decimal]], dropped: Counter) -> dict[str, Decimal]:
    """The region's rate: its zones' rate, the highest where they differ."""
    out = {}
    for region, found in values.items():
        if len(found) > 1:
            dropped["zonesDiffer"] += 1
        out[region] = max(found)
    return out


def tpu_rates(reader: Reader) -> dict[tuple[str, str], dict[str, Decimal]]:
    smallest: dict[tuple[str, str, str], tuple[int, set[Decimal]]] = {}
    for row in reader.rows:
        match = TPU_SLICE.fullmatch(row["AcceleratorName"]) if not row["InstanceType"] else None
        if not match:
            continue
        family, size = match.group(1), int(match.group(2))
        chips = size // TENSORCORES_PER_CHIP.get(family, 1)
        for capacity, column in CAPACITY_COLUMNS:
            price = reader.price(row, column)
            if price is None or chips < 1:
                continue
            key = (TPU_GENERATION[family], capacity, row["Region"])
            per_chip = (price / chips).quantize(Decimal("0.000001")).normalize()
            best = smallest.get(key)
            if best is None or chips < best[0]:
                smallest[key] = (chips, {per_chip})
            elif chips == best[0]:
                best[1].add(per_chip)
    grouped: dict[tuple[str, str], dict[str, set[Decimal]]] = defaultdict(dict)
    for (generation, capacity, region), (_, found) in smallest.items():
        grouped[(generation, capacity)][region] = found
    return {key: _one_per_region(regions, reader.dropped) for key, regions in grouped.items()}


def _zone_prices(reader: Reader, match) -> dict[tuple[str, str], dict[str, set[Decimal]]]:
    """{(name, capacity): {region: {prices}}} of the rows `match(row)` names."""
    out: dict[tuple[str, str], dict[str, set[Decimal]]] = defaultdict(lambda: defaultdict(set))
    for row in reader.rows:
        name = match(row)
        if name is None:
            continue
        for capacity, column in CAPACITY_COLUMNS:
            price = reader.price(row, column)
            if price is not None:
                out[(name, capacity)][row["Region"]].add(price)
    return out


def cpu_rates(reader: Reader) -> dict[tuple[str, str], dict[str, Decimal]]:
    found = _zone_prices(reader, lambda r: r["InstanceType"] if CPU_TYPE.fullmatch(r["InstanceType"]) and
                         not r["AcceleratorName"] else None)
    return {key: _one_per_region(regions, reader.dropped) for key, regions in found.items()}


def gpu_rates(reader: Reader, machines) -> dict[tuple[str, str], dict[str, Decimal]]:
    """Host + its GPUs per region, for every (machine type, GPUs, GPU row name, capacities) of the GPU catalogue."""
    names = {m[0] for m in machines}
    hosts = _zone_prices(reader, lambda r: r["InstanceType"] if r["InstanceType"] in names and
                         not r["AcceleratorName"] else None)
    cards = _zone_prices(reader, lambda r: f"{r['AcceleratorName']} x{int(float(r['AcceleratorCount']))}"
                         if not r["InstanceType"] and r["AcceleratorName"] in GPU_ROW_NAMES.values() and
                         r["AcceleratorCount"] else None)
    out = {}
    for machine, gpus, row_name, capacities in machines:
        for capacity, _ in CAPACITY_COLUMNS:
            if capacity not in capacities:
                continue
            host = _one_per_region(hosts.get((machine, capacity), {}), reader.dropped)
            card = _one_per_region(cards.get((f"{row_name} x{gpus}", capacity), {}), reader.dropped)
            both = {region: host[region] + card[region] for region in sorted(set(host) & set(card))}
            if both:
                out[(machine, capacity)] = both
    return out


def catalogue_machines():
    from ray_tpu_gke.catalog.gpu import GPUS  # the GPU catalogue (no Pulumi): its machine types and capacities

    return [(m.name, m.gpus, GPU_ROW_NAMES[g.accelerator], m.capacities) for g in GPUS.values() for m in g.machines]


def _number(value: Decimal) -> str:
    return format(value.normalize(), "f")


def render(source: str, as_of: date, reader: Reader, rates: list[tuple[str, str, str, dict[str, Decimal]]]) -> str:
    notes = {"tpu": "per chip-hour: the smallest slice's slice-hour / its chips (v4, v5p: TensorCores / 2)",
             "gpu": "per VM-hour: host + its GPUs", "cpu": "per VM-hour"}
    lines = [
        "# Public list prices for the cost estimate (components/render/pricing.py), USD. GENERATED by",
        "# scripts/prices.py from the catalogue snapshot named under `snapshot` (its URL names the commit, asOf is the",
        "# commit's date); do not edit the generated rows: rerun the script on a newer snapshot. See docs/cost.md.",
        "#",
        "# kind tpu: per chip-hour of a generation; gpu and cpu: per VM-hour of a machine type (a GPU machine",
        "# type's VM-hour includes its GPUs). capacity: onDemand, spot, flexStart. `regions`: the rate in each region",
        "# where the snapshot sells it. Reservations and committed-use prices are never here: they are what a contract",
        "# says, so a stack supplies them in ray-tpu-gke:pricing.rates, which also override any row. What the snapshot",
        "# does not price (Ironwood, a machine type in a region it does not list) is absent, never guessed: the",
        "# estimate prices what it knows and names the ray-tpu-gke:pricing.rates entry to add for the rest.",
        "currency: USD",
        "snapshot:",
        f"  source: {source}",
        f'  asOf: "{as_of.isoformat()}"',
        "  generatedBy: scripts/prices.py",
        "  dropped: {" + ", ".join(f"{k}: {v}" for k, v in sorted(reader.dropped.items())) + "}",
        "rates:",
    ]
    for kind, name, capacity, regions in rates:  # one region a line: a price change is a one-line diff
        lines += [f"  - kind: {kind}", f"    name: {name}", f"    capacity: {capacity}", f'    note: "{notes[kind]}"',
                  "    regions:"]
        lines += [f"      {region}: {_number(value)}" for region, value in sorted(regions.items())]
    for row in HAND_ROWS:
        lines.append("  - {" + ", ".join(f"{k}: {_yaml_scalar(v)}" for k, v in row.items()) + "}")
    present = {(kind, name, capacity, region) for kind, name, capacity, regions in rates for region in regions}
    corrections = [c for c in CORRECTIONS if (c["kind"], c["name"], c["capacity"], c["region"]) in present]
    if corrections:  # a correction replaces a row of the snapshot, so only one the snapshot has
        lines.append("corrections:  # snapshot rows replaced, each with its own source (scripts/prices.py CORRECTIONS)")
    for row in corrections:
        lines.append("  - {" + ", ".join(f"{k}: {_yaml_scalar(v)}" for k, v in row.items()) + "}")
    return "\n".join(lines) + "\n"


def checked(rates: list, dropped: Counter) -> tuple[list, list]:
    """The rates (kind, name, capacity, {region: hourly}) without the rows the price checks doubt, judged with
    CORRECTIONS in place; and the doubts, each counted in `dropped` under its rule (camelCase)."""
    from ray_tpu_gke.catalog.price_checks import doubts
    from ray_tpu_gke.catalog.prices import Rate

    fixed = {(c["kind"], c["name"], c["capacity"], c["region"]): Decimal(str(c["hourly"])) for c in CORRECTIONS}
    rows = [Rate(kind, name, capacity, fixed.get((kind, name, capacity, region), value), region, "", None, "table")
            for kind, name, capacity, regions in rates for region, value in regions.items()]
    found = doubts(rows)
    drop = {d.key for d in found}
    for d in found:
        dropped[re.sub(r"-(\w)", lambda m: m.group(1).upper(), d.rule)] += 1
    kept = [(kind, name, capacity, {r: v for r, v in regions.items() if (kind, name, capacity, r) not in drop})
            for kind, name, capacity, regions in rates]
    return [r for r in kept if r[3]], list(found)


def _yaml_scalar(value) -> str:
    if isinstance(value, (int, float)):
        return str(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def check_table(path: Path) -> int:
    """Each row of a generated table that the price checks doubt, one a line, and how many."""
    from ray_tpu_gke.catalog.price_checks import trusted
    from ray_tpu_gke.catalog.prices import load_table

    rows, found = trusted(load_table(path))
    for doubt in found:
        print(f"doubted {doubt.describe()}")
    print(f"{path}: {len(found)} of {len(rows) + len(found)} rows doubted, not used by the estimate", file=sys.stderr)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/prices.py", description=__doc__.splitlines()[0])
    parser.add_argument("catalogue", type=Path, nargs="?", help="a SkyPilot-format GCP vms.csv (with --check: a "
                        "price table, default the shipped one)")
    parser.add_argument("--source", help="https URL of the snapshot, naming its commit")
    parser.add_argument("--as-of", type=date.fromisoformat, help="the snapshot's date (YYYY-MM-DD)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--check", action="store_true", help="print the rows of a table the checks doubt, and why")
    args = parser.parse_args(argv)
    if args.check:
        return check_table(args.catalogue or OUT)
    if args.catalogue is None or args.source is None or args.as_of is None:
        parser.error("CATALOGUE, --source and --as-of are required (or --check)")
    if not args.source.startswith("https://"):
        parser.error("--source must be an https URL")
    reader = Reader(args.catalogue)
    rates = []
    for kind, found in (("tpu", tpu_rates(reader)), ("gpu", gpu_rates(reader, catalogue_machines())),
                        ("cpu", cpu_rates(reader))):
        for (name, capacity), regions in sorted(found.items()):
            rates.append((kind, name, capacity, regions))
    rates, found = checked(rates, reader.dropped)
    for doubt in found:
        print(f"dropped {doubt.describe()}", file=sys.stderr)
    args.out.write_text(render(args.source, args.as_of, reader, rates), encoding="utf-8")
    print(f"{args.out}: {len(rates)} rates, {sum(len(r[3]) for r in rates)} region prices; dropped "
          f"{dict(sorted(reader.dropped.items()))}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
