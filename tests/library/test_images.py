"""The image rule: a Ray worker group runs the variant of the repository's workloads image built for its
accelerator (issue #21), refused with the key path otherwise; images of other repositories are left alone."""

import pytest
from helpers import minimal_values, problems

from ray_tpu_gke.spec import images

REGISTRY = "us-central1-docker.pkg.dev/acme/ray-tpu-gke"


@pytest.mark.parametrize("image, expected", [
    (f"{REGISTRY}/workloads-tpu:2.55.0", "tpu"), (f"{REGISTRY}/workloads-gpu:2.55.0", "gpu"),
    (f"{REGISTRY}/workloads-gpu@sha256:{'0' * 64}", "gpu"), ("workloads-tpu", "tpu"),
    ("rayproject/ray:2.55.0-py311", None), (f"{REGISTRY}/my-workloads-tpu:1", None),
    (f"{REGISTRY}/workloads:2.55.0", None),
])
def test_the_variant_is_the_last_path_component(image, expected):
    assert images.variant(image) == expected


def values(image: str, target: dict) -> dict:
    return minimal_values(**{
        "gpuPools": [{"name": "l4", "accelerator": "nvidia-l4", "count": 1, "zone": "us-east5-b"}],
        "rayClusters": [{"name": "train", "image": image, "workerGroups": [{"name": "w", **target}]}],
    })


@pytest.mark.parametrize("have, target", [("tpu", {"gpuPool": "l4"}), ("gpu", {"slice": "v6e-4"})])
def test_a_group_on_the_other_variant_is_refused_with_the_key_path(have, target):
    found = problems(values(f"{REGISTRY}/workloads-{have}:2.55.0", target), refused=False)
    assert len(found) == 1, found
    assert found[0].startswith("ray-tpu-gke:rayClusters[0].image: ")
    need = "gpu" if have == "tpu" else "tpu"
    assert f"workloads-{need}:2.55.0" in found[0] and "group w" in found[0]


@pytest.mark.parametrize("image, target", [
    (f"{REGISTRY}/workloads-tpu:2.55.0", {"slice": "v6e-4"}), (f"{REGISTRY}/workloads-gpu:2.55.0", {"gpuPool": "l4"}),
    ("rayproject/ray:2.55.0-py311", {"gpuPool": "l4"}), ("rayproject/ray:2.55.0-py311", {"slice": "v6e-4"}),
])
def test_the_matching_variant_and_other_images_pass(image, target):
    assert problems(values(image, target), refused=False) == []
