"""#22.2, #22.3: what a project's Cloud Quotas QuotaInfos grant, and which quota each accelerator draws on."""

from __future__ import annotations

import copy

import pytest
from quota_infos import GPU_FAMILY, INFOS, PREEMPTIBLE_V6E, TPU_FAMILY

from ray_tpu_gke import admission


def test_a_region_on_the_default_bucket_has_its_default():
    # us-central1 has no entry of its own for CT6E: the entry without a region, which lists it, is its quota (0).
    assert admission.quota_value(TPU_FAMILY, "us-central1", (("tpu_family", "CT6E"),)) == 0
    # us-east1 and us-east5 take the CT6E default of the family (8); europe-west4 its own entry (32).
    assert admission.quota_value(TPU_FAMILY, "us-east1", (("tpu_family", "CT6E"),)) == 8
    assert admission.quota_value(TPU_FAMILY, "us-east5", (("tpu_family", "CT6E"),)) == 8
    assert admission.quota_value(TPU_FAMILY, "europe-west4", (("tpu_family", "CT6E"),)) == 32
    # An entry of another family never applies; a region no entry lists has none.
    assert admission.quota_value(TPU_FAMILY, "us-east5", (("tpu_family", "CT5LP"),)) == 64
    assert admission.quota_value(TPU_FAMILY, "asia-northeast1", (("tpu_family", "CT6E"),)) == 0


def test_minus_one_is_unlimited_and_a_specific_region_overrides_it():
    assert admission.quota_value(PREEMPTIBLE_V6E, "us-east5") == admission.UNLIMITED
    assert admission.quota_value(PREEMPTIBLE_V6E, "us-east1") == 64
    need = admission.tpu_quota_need("v6e", "spot", 4096, "us-east5", "big")
    assert admission.check_quota([need], INFOS) == ([], [])


def test_a_need_in_a_region_still_on_its_default_quota_fails_at_the_check_not_at_node_pool_creation():
    need = admission.tpu_quota_need("v6e", "onDemand", 16, "us-central1", "v6e-16: 1 x 16 chips")
    errors, warnings = admission.check_quota([need], INFOS)
    assert warnings == []
    assert errors == ["quota TPUS-PER-TPU-FAMILY-per-project-region, tpu_family=CT6E in us-central1: the project has 0 "
                      "TPU chips, the stack needs 16 (v6e-16: 1 x 16 chips); request more in the console (IAM & Admin "
                      "> Quotas) or shrink the slices and pools"]
    ok = admission.tpu_quota_need("v6e", "onDemand", 8, "us-east5", "v6e-8")
    assert admission.check_quota([ok], INFOS) == ([], [])


def test_gpu_family_dimension_default_and_override():
    h100 = admission.gpu_quota_need("nvidia-h100-80gb", "onDemand", 8, "us-central1", "h100: 1 x 8 GPUs")
    h200 = admission.gpu_quota_need("nvidia-h200-141gb", "flexStart", 8, "us-east4", "h200")
    assert admission.check_quota([h100], INFOS) == ([], [])
    on_default = admission.gpu_quota_need("nvidia-h100-80gb", "onDemand", 8, "us-east5", "h100 east5")
    (error,), _ = admission.check_quota([on_default], INFOS)
    assert "GPUS-PER-GPU-FAMILY-per-project-region, gpu_family=NVIDIA_H100 in us-east5: the project has 0 GPUs" in error
    assert admission.quota_value(GPU_FAMILY, "us-east4", (("gpu_family", "NVIDIA_H200"),)) == 16
    # Preemptible H200 has an ID of its own, which this project does not list: a warning, never a guess.
    assert admission.check_quota([h200], INFOS)[1][0].startswith(
        "quota PREEMPTIBLE-NVIDIA-H200-GPUS-per-project-region in us-east4: not found in the project's quotas")


def test_needs_of_one_quota_and_region_add_up():
    needs = [admission.tpu_quota_need("v6e", "onDemand", 8, "us-east5", f"s{i}") for i in range(2)]
    (error,), _ = admission.check_quota(needs, INFOS)
    assert "the project has 8 TPU chips, the stack needs 16 (s0, s1)" in error


def test_the_invoke_result_shapes_read_the_same():
    # pulumi-gcp's invoke hands `details` as a one-element list and fields in snake_case.
    snake = {"quota_id": TPU_FAMILY["quotaId"], "dimensions_infos": [
        {"dimensions": e["dimensions"], "details": [e["details"]], "applicable_locations": e["applicableLocations"]}
        for e in TPU_FAMILY["dimensionsInfos"]]}
    for region in ("us-central1", "us-east5", "europe-west4"):
        assert admission.quota_value(snake, region, (("tpu_family", "CT6E"),)) == \
            admission.quota_value(TPU_FAMILY, region, (("tpu_family", "CT6E"),))


def test_a_global_quota_applies_in_every_region():
    info = {"quotaId": "X", "dimensionsInfos": [{"dimensions": {}, "details": {"value": "4"},
                                                 "applicableLocations": ["global"]}]}
    assert admission.quota_value(info, "us-west4") == 4


def test_an_unlisted_quota_id_is_unknown_not_zero():
    need = admission.tpu_quota_need("v5p", "onDemand", 8, "us-east5", "v5p")
    errors, (warning,) = admission.check_quota([need], INFOS)
    assert errors == [] and "TPU-V5P-per-project-region in us-east5: not found in the project's quotas" in warning


@pytest.mark.parametrize("accelerator, on_demand, preemptible", [
    ("nvidia-l4", "NVIDIA-L4-GPUS-per-project-region", "PREEMPTIBLE-NVIDIA-L4-GPUS-per-project-region"),
    ("nvidia-tesla-a100", "NVIDIA-A100-GPUS-per-project-region", "PREEMPTIBLE-NVIDIA-A100-GPUS-per-project-region"),
    ("nvidia-a100-80gb", "NVIDIA-A100-80GB-GPUS-per-project-region",
     "PREEMPTIBLE-NVIDIA-A100-80GB-GPUS-per-project-region"),
    ("nvidia-h100-80gb", "GPUS-PER-GPU-FAMILY-per-project-region, gpu_family=NVIDIA_H100",
     "PREEMPTIBLE-NVIDIA-H100-GPUS-per-project-region"),
    ("nvidia-h100-mega-80gb", "GPUS-PER-GPU-FAMILY-per-project-region, gpu_family=NVIDIA_H100_MEGA",
     "PREEMPTIBLE-NVIDIA-H100-MEGA-GPUS-per-project-region"),
    ("nvidia-h200-141gb", "GPUS-PER-GPU-FAMILY-per-project-region, gpu_family=NVIDIA_H200",
     "PREEMPTIBLE-NVIDIA-H200-GPUS-per-project-region"),
    ("nvidia-b200", "GPUS-PER-GPU-FAMILY-per-project-region, gpu_family=NVIDIA_B200",
     "PREEMPTIBLE-NVIDIA-B200-GPUS-per-project-region"),
])
def test_gpu_quota_ids(accelerator, on_demand, preemptible):
    assert admission.gpu_quota_need(accelerator, "onDemand", 8, "us-central1", "p").key == on_demand
    for capacity in ("spot", "flexStart"):
        assert admission.gpu_quota_need(accelerator, capacity, 8, "us-central1", "p").key == preemptible
    assert admission.gpu_quota_need(accelerator, "reservation", 8, "us-central1", "p") is None


def test_a_zero_value_omitted_from_details_is_zero():
    info = copy.deepcopy(PREEMPTIBLE_V6E)
    info["dimensionsInfos"][0]["details"] = {}
    assert admission.quota_value(info, "us-east1") == 0


def test_a_region_entry_wins_over_a_family_default_whatever_the_order():
    info = {"quotaId": "TPUS-PER-TPU-FAMILY-per-project-region", "dimensionsInfos": [
        {"dimensions": {"tpu_family": "CT6E"}, "details": {"value": "8"}, "applicableLocations": ["us-east5"]},
        {"dimensions": {"region": "us-east5"}, "details": {"value": "96"}, "applicableLocations": ["us-east5"]},
    ]}
    assert admission.quota_value(info, "us-east5", (("tpu_family", "CT6E"),)) == 96
