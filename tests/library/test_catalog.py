"""The TPU catalogue: shapes derived from each generation's rules (GKE "Plan TPUs", Cloud TPU pages)."""

import math

import pytest
from pathlib import Path

from ray_tpu_gke import catalog


@pytest.mark.parametrize("generation", ["v5e", "v6e"])
def test_2d_generations_offer_exactly_the_documented_shapes(generation):
    assert catalog.topologies(generation) == ("1x1", "2x2", "2x4", "4x4", "4x8", "8x8", "8x16", "16x16")


@pytest.mark.parametrize("generation,topology,machine,hosts", [
    ("v6e", "1x1", "ct6e-standard-1t", 1),
    ("v6e", "2x2", "ct6e-standard-4t", 1),
    ("v6e", "2x4", "ct6e-standard-8t", 1),  # documented default: one 8-chip host
    ("v6e", "4x4", "ct6e-standard-4t", 4),
    ("v6e", "16x16", "ct6e-standard-4t", 64),
    ("v5e", "1x1", "ct5lp-hightpu-1t", 1),
    ("v5e", "2x4", "ct5lp-hightpu-8t", 1),
    ("v5e", "8x16", "ct5lp-hightpu-4t", 32),
    ("v4", "2x2x1", "ct4p-hightpu-4t", 1),
    ("v4", "2x2x2", "ct4p-hightpu-4t", 2),
    ("v4", "4x4x4", "ct4p-hightpu-4t", 16),
    ("v4", "16x16x16", "ct4p-hightpu-4t", 1024),
    ("v5p", "2x4x4", "ct5p-hightpu-4t", 8),
    ("v5p", "16x16x24", "ct5p-hightpu-4t", 1536),  # the largest v5p slice (Cloud TPU v5p: 6144 chips)
    ("tpu7x", "1x1x1", "tpu7x-standard-1t", 1),
    ("tpu7x", "2x2x1", "tpu7x-standard-4t", 1),
    ("tpu7x", "4x4x8", "tpu7x-standard-4t", 32),
    ("tpu7x", "16x24x24", "tpu7x-standard-4t", 2304),
])
def test_default_layout(generation, topology, machine, hosts):
    shape = catalog.resolve(generation, topology)
    assert (shape.machine_type.name, shape.hosts) == (machine, hosts)
    assert shape.multi_host == (hosts > 1)
    assert shape.chips == math.prod(int(d) for d in topology.split("x"))
    assert shape.chips == shape.hosts * shape.chips_per_host


def test_machine_type_selects_the_other_layout_of_2x4():
    for generation, four_chip in (("v6e", "ct6e-standard-4t"), ("v5e", "ct5lp-hightpu-4t")):
        shape = catalog.resolve(generation, "2x4", four_chip)
        assert (shape.hosts, shape.chips_per_host, shape.multi_host) == (2, 4, True)


@pytest.mark.parametrize("generation,topology", [
    ("v6e", "4x2"), ("v6e", "2x1"), ("v6e", "1x2"), ("v6e", "32x32"), ("v6e", "16x32"), ("v6e", "3x3"),
    ("v5e", "2x2x1"), ("v4", "4x4"), ("v4", "2x2x3"), ("v4", "4x4x6"), ("v4", "16x16x32"),
    ("v5p", "8x4x4"), ("v5p", "4x4x6"), ("v5p", "20x20x28"), ("tpu7x", "4x8x4"), ("tpu7x", "24x24x24"),
    ("v6e", "4x4x"), ("v6e", "axb"), ("v4", "0x4x4"), ("v4", "04x4x4"),
])
def test_invalid_topologies_are_refused_with_what_is_allowed(generation, topology):
    with pytest.raises(catalog.CatalogError, match="allowed"):
        catalog.resolve(generation, topology)


def test_3d_rule_multiples_of_four_up_to_the_largest_slice():
    assert catalog.is_valid_topology(catalog.GENERATIONS["v5p"], "4x8x12")
    assert catalog.is_valid_topology(catalog.GENERATIONS["v4"], "8x4x4")  # v4 accepts any dimension order
    assert not catalog.is_valid_topology(catalog.GENERATIONS["v5p"], "12x8x4")
    for name in ("v4", "v5p", "tpu7x"):
        gen = catalog.GENERATIONS[name]
        for topology in catalog.topologies(name):
            dims = catalog.parse_topology(topology)
            assert math.prod(dims) <= gen.max_chips
            assert dims in catalog.tpu._SUB_CUBES or all(d % 4 == 0 for d in dims) or math.prod(dims) <= 4


def test_every_listed_topology_resolves_on_every_layout():
    for name, gen in catalog.GENERATIONS.items():
        for topology in catalog.topologies(name):
            for machine in catalog.layouts(gen, topology):
                shape = catalog.resolve(name, topology, machine.name)
                assert shape.hosts * machine.chips == shape.chips
                if shape.multi_host:
                    assert machine.multi_host


def test_wrong_machine_type_names_the_allowed_ones():
    with pytest.raises(catalog.CatalogError, match="ct6e-standard-8t, ct6e-standard-4t"):
        catalog.resolve("v6e", "2x4", "ct6e-standard-1t")
    with pytest.raises(catalog.CatalogError, match="ct6e-standard-4t"):
        catalog.resolve("v6e", "4x4", "ct5lp-hightpu-4t")


def test_labels_tensorcores_and_versions():
    labels = {n: g.accelerator for n, g in catalog.GENERATIONS.items()}
    assert labels == {"v4": "tpu-v4-podslice", "v5e": "tpu-v5-lite-podslice", "v5p": "tpu-v5p-slice",
                      "v6e": "tpu-v6e-slice", "tpu7x": "tpu7x"}
    assert catalog.resolve("v5p", "2x2x2").tensorcores == 16
    assert catalog.resolve("v6e", "4x4").tensorcores == 16
    assert catalog.GENERATIONS["v6e"].min_gke_version == "1.31.2-gke.1115000"
    assert catalog.resolve("v6e", "4x4").node_selector == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice", "cloud.google.com/gke-tpu-topology": "4x4"}


def test_gke_versions_compare_numerically():
    assert catalog.parse_gke_version("1.31.2-gke.1115000") > catalog.parse_gke_version("1.31.2-gke.999999")
    assert catalog.parse_gke_version("1.31") < catalog.parse_gke_version("1.31.2-gke.1115000")
    for bad in ("latest", "1", "1.31.x", "1.31.2-gke.abc", "1.\u0663\u0664"):  # Arabic-Indic digits too
        with pytest.raises(catalog.CatalogError):
            catalog.parse_gke_version(bad)


def test_catalogue_imports_no_pulumi():
    sources = [p.read_text() for p in Path(catalog.__file__).parent.glob("*.py")]
    assert len(sources) >= 3 and not any("import pulumi" in s for s in sources)


def test_machine_types_name_their_generation():
    assert catalog.generation_of_machine_type("ct6e-standard-4t").name == "v6e"
    assert catalog.generation_of_machine_type("tpu7x-standard-1t").name == "tpu7x"
    assert catalog.generation_of_machine_type("e2-standard-8") is None


def test_v5p_stops_at_the_documented_largest_slice():
    assert catalog.is_valid_topology(catalog.generation("v5p"), "16x16x24")
    with pytest.raises(catalog.CatalogError, match="at most 6144 chips"):
        catalog.resolve("v5p", "16x20x28")


def test_v6e_8_chip_host_has_180_vcpus():
    """Cloud TPU / GKE plan-tpus: ct6e-standard-8t has 180 vCPUs (not 360) and 1440 GiB."""
    machine = catalog.resolve("v6e", "2x4").machine_type
    assert (machine.name, machine.vcpus, machine.memory_gib) == ("ct6e-standard-8t", 180, 1440)


def test_public_lookup():
    shape = catalog.slice_shape("v6e", "4x4")
    assert (shape.chips, shape.hosts, shape.machine_type.name, shape.min_gke_version) == \
        (16, 4, "ct6e-standard-4t", "1.31.2-gke.1115000")
    assert shape.node_selector == {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                                   "cloud.google.com/gke-tpu-topology": "4x4"}


# --- peaks -----------------------------------------------------------------------------------------------------------

def test_every_generation_and_gpu_has_a_sourced_peak():
    from ray_tpu_gke.catalog import GENERATIONS, GPU_PEAKS, GPUS, TPU_PEAKS

    assert set(TPU_PEAKS) == set(GENERATIONS) and set(GPU_PEAKS) == set(GPUS)
    for row in (*TPU_PEAKS.values(), *GPU_PEAKS.values()):
        assert row.source.startswith("https://") and row.bf16_flops_per_s > 1e13 and row.hbm_bytes > 10**10


def test_gpu_peaks_are_dense_half_of_the_sparse_data_sheet_figure():
    from ray_tpu_gke.catalog import peak

    # H100 SXM data sheet: 1,979 teraFLOPS bf16 with sparsity; the A100's 624 with sparsity.
    assert peak("gpu", "nvidia-h100-80gb").bf16_flops_per_s == 1979e12 / 2
    assert peak("gpu", "nvidia-a100-80gb").bf16_flops_per_s == 624e12 / 2
    assert peak("tpu", "v6e").bf16_flops_per_s == 918e12


def test_peak_of_an_unknown_accelerator_names_the_known_ones():
    from ray_tpu_gke.catalog import CatalogError, peak

    with pytest.raises(CatalogError, match="known: v4, v5e"):
        peak("tpu", "v9")
