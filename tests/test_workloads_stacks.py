"""Every RayJob and RayService in stacks/ runs a workload that exists in this repository, with arguments it accepts,
in the image built from workloads/Dockerfile (issue #16)."""

import ast
import shlex

import pytest

from helpers import ROOT, STACKS, config_of
from ray_tpu_gke.spec import images
from workloads import train, tpu_smoke

PARSERS = {"workloads.train": train.parse_args, "workloads.tpu_smoke": tpu_smoke.parse_args}
# docs/workloads.md: REGION-docker.pkg.dev/PROJECT/ray-tpu-gke/workloads-<tpu|gpu>:TAG, the variant of its accelerator
TAG = ":2.55.0"


def _module_defines(module: str, name: str) -> bool:
    path = ROOT / (module.replace(".", "/") + ".py")
    tree = ast.parse(path.read_text())
    return any(isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets)
               for node in tree.body)


@pytest.mark.parametrize("stack", STACKS)
def test_jobs_run_a_workload_of_the_repository_with_valid_arguments(stack):
    for job in config_of(stack).ray_jobs:
        argv = shlex.split(job.entrypoint)
        assert argv[:2] == ["python", "-m"] and argv[2] in PARSERS, (stack, job.name, job.entrypoint)
        PARSERS[argv[2]](argv[3:])  # exits 2 on arguments the workload refuses


@pytest.mark.parametrize("stack", STACKS)
def test_services_import_an_app_of_the_repository(stack):
    for service in config_of(stack).ray_services:
        for application in service.serve_config["applications"]:
            module, _, attribute = application["import_path"].partition(":")
            assert module.startswith("workloads.") and _module_defines(module, attribute), application


@pytest.mark.parametrize("stack", STACKS)
def test_ray_objects_run_the_workloads_image(stack):
    for obj in config_of(stack).ray_objects:
        if getattr(obj, "cluster", None) is None:  # a job on an existing cluster runs in that cluster's image
            assert images.variant(obj.image) and obj.image.endswith(TAG) and ".pkg.dev/" in obj.image, \
                (stack, obj.name, obj.image)
