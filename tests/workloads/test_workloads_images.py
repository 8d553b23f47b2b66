"""The two variants of the workloads image (workloads/Dockerfile for TPU, workloads/Dockerfile.gpu for GPU) and
their Cloud Build: the base images, the same Ray and the same JAX in both, pinned as requirements-workloads.txt pins
the JAX the tests run, and the image names the stacks use (docs/workloads.md)."""

from __future__ import annotations

import re

import yaml
from helpers import ROOT
from ray_tpu_gke.catalog import ray_versions

from plan.compare import local

WORKLOADS = ROOT / "workloads"
VARIANTS = {"tpu": WORKLOADS / "Dockerfile", "gpu": WORKLOADS / "Dockerfile.gpu"}


def pins(text: str) -> dict[str, str]:
    """name -> version of every `name==version` (extras dropped) in requirements or pip install lines."""
    return {m.group(1).lower(): m.group(2)
            for m in re.finditer(r'(?m)(?:^|")([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==([^"\s]+)', text)}


def extras(text: str, package: str) -> set[str]:
    return {m.group(1) for m in re.finditer(rf'"{package}\[([^\]]+)\]==', text)}


def base(dockerfile: str) -> str:
    bases = re.findall(r"(?m)^FROM (\S+)\s*$", dockerfile)
    assert len(bases) == 1, bases
    return bases[0]


TESTED = pins((ROOT / "requirements-workloads.txt").read_text())
RAY = TESTED["ray"]


def test_both_variants_build_on_rays_own_image_of_the_tested_ray():
    assert base(VARIANTS["tpu"].read_text()) == f"rayproject/ray:{RAY}-py311"
    # Ray's CUDA 12.8 image (ray-project/ray ci/ray_ci/docker_container.py PLATFORMS_RAY: "cu12.8.1-cudnn").
    assert base(VARIANTS["gpu"].read_text()) == f"rayproject/ray:{RAY}-py311-cu128"
    for dockerfile in VARIANTS.values():
        assert f"ray.__version__ == '{RAY}'" in dockerfile.read_text()


def test_both_variants_install_the_tested_jax():
    installed = {variant: pins(path.read_text()) for variant, path in VARIANTS.items()}
    for variant, versions in installed.items():
        assert versions["jax"] == versions["jaxlib"] == TESTED["jax"] == TESTED["jaxlib"], (variant, versions)
        assert f"jax.__version__ == '{TESTED['jax']}'" in VARIANTS[variant].read_text()
    assert installed["tpu"]["jax"] == installed["gpu"]["jax"]
    # ml_dtypes too: 0.7.0, which pip would pick, doubles the CPU time of `import jax` (requirements-workloads.txt).
    assert installed["tpu"]["ml_dtypes"] == installed["gpu"]["ml_dtypes"] == TESTED["ml_dtypes"]


def test_each_variant_brings_its_accelerators_backend():
    tpu, gpu = (VARIANTS[v].read_text() for v in ("tpu", "gpu"))
    assert extras(tpu, "jax") == {"tpu"} and pins(tpu)["libtpu"].startswith("0.0.42")  # jax[tpu] 0.10.2: 0.0.42.*
    assert extras(gpu, "jax") == {"cuda12"}
    assert pins(gpu)["jax-cuda12-plugin"] == pins(gpu)["jax-cuda12-pjrt"] == TESTED["jax"]
    assert "libtpu" not in gpu and "cuda" not in tpu.lower()
    # The build fails when the backend's plugin did not install (workloads.backend.PLUGIN_MODULES names them).
    assert "find_spec('libtpu')" in tpu and "find_spec('jax_plugins.xla_cuda12')" in gpu


def test_both_variants_carry_the_same_workloads_package():
    steps = {variant: [line for line in path.read_text().splitlines() if line.startswith(("COPY", "RUN echo"))]
             for variant, path in VARIANTS.items()}
    assert steps["tpu"] == steps["gpu"] and steps["tpu"]


def test_cloud_build_builds_both_variants_under_the_names_the_stacks_use():
    config = yaml.safe_load((WORKLOADS / "cloudbuild.yaml").read_text())
    built = {step["id"]: step["args"] for step in config["steps"]}
    assert built["tpu"][:3] == ["build", "-f", "workloads/Dockerfile"]
    assert built["gpu"][:3] == ["build", "-f", "workloads/Dockerfile.gpu"]
    assert built["torch-tpu"][:3] == ["build", "-f", "workloads/Dockerfile.torch-tpu"]
    names = {variant: args[args.index("-t") + 1] for variant, args in built.items()}
    # The last path component names the variant: REGION-docker.pkg.dev/PROJECT/ray-tpu-gke/workloads-<variant>:TAG.
    assert names == {v: f"${{_REGISTRY}}/workloads-{v}:${{_TAG}}" for v in ("tpu", "gpu", "torch-tpu")}
    assert sorted(config["images"]) == sorted(names.values())
    assert config["substitutions"]["_TAG"] == RAY


def test_the_pytorch_variant_is_the_tpu_image_of_its_tag_with_the_tested_torch_and_torchax():
    dockerfile = (WORKLOADS / "Dockerfile.torch-tpu").read_text()
    # Built on the TPU image just built, of the same tag (no default: the Ray and JAX are that image's).
    assert base(dockerfile) == "${BASE}" and re.search(r"(?m)^ARG BASE$", dockerfile)
    step = next(s for s in yaml.safe_load((WORKLOADS / "cloudbuild.yaml").read_text())["steps"]
                if s["id"] == "torch-tpu")
    assert step["waitFor"] == ["tpu"]
    assert step["args"][step["args"].index("--build-arg") + 1] == "BASE=${_REGISTRY}/workloads-tpu:${_TAG}"
    # The torch and torchax the rehearsal runs (requirements-torch.txt), torch as PyTorch's CPU build.
    tested, installed = pins((ROOT / "requirements-torch.txt").read_text()), pins(dockerfile)
    assert installed == {"torch": tested["torch"], "torchax": tested["torchax"]}
    assert "--index-url https://download.pytorch.org/whl/cpu" in dockerfile
    assert f"== '{tested['torch']}'" in dockerfile and "torch.backends.cuda.is_built()" in dockerfile
    # The example job, kept in the build context, at the path a RayJob's entrypoint names (docs/compare.md).
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    assert "!examples/bench-jobs/torch_job.py" in ignored and "workloads/Dockerfile.torch-tpu" in ignored
    copies = [line.split()[2:] for line in dockerfile.splitlines() if line.startswith("COPY")]
    assert copies == [["examples/bench-jobs/torch_job.py", "/opt/ray-tpu-gke/examples/bench-jobs/torch_job.py"]]
    assert "python /opt/ray-tpu-gke/examples/bench-jobs/torch_job.py --device jax" in (
        ROOT / "docs" / "compare.md").read_text()


def test_the_build_context_is_the_workloads_and_the_library_they_need_only():
    """The images carry of the library what the local comparison puts on the workloads interpreter's path
    (plan.compare.local.LIBRARY_IN_IMAGES): the package file, bench and the workload package."""
    kept = {f"!components/{name}" + ("/" if (ROOT / "components" / name).is_dir() else "") for name in
            local.LIBRARY_IN_IMAGES}
    ignored = [line for line in (ROOT / ".dockerignore").read_text().splitlines() if line and line[0] != "#"]
    assert ignored[0] == "*" and {"!workloads/", *kept} <= set(ignored)
    assert {"workloads/Dockerfile", "workloads/Dockerfile.gpu", "workloads/cloudbuild.yaml", "**/__pycache__/"} <= set(
        ignored)
    files = [f"components/{n}" for n in local.LIBRARY_IN_IMAGES if (ROOT / "components" / n).is_file()]
    folders = [[f"components/{n}"] for n in local.LIBRARY_IN_IMAGES if (ROOT / "components" / n).is_dir()]
    for dockerfile in VARIANTS.values():  # what the images copy is what the context keeps
        copies = [line.split()[2:-1] for line in dockerfile.read_text().splitlines() if line.startswith("COPY")]
        assert copies == [["workloads"], files, *folders], copies
        assert "from ray_tpu_gke import bench; import workloads.slice_health" in dockerfile.read_text()


def test_both_variants_install_the_model_libraries_the_tests_run():
    for variant, path in VARIANTS.items():
        installed = pins(path.read_text())
        for package in ("equinox", "optax", "jaxtyping", "wadler_lindig", "absl-py"):
            assert installed[package] == TESTED[package], (variant, package)


def test_the_workloads_requirements_are_exact_pins():
    lines = [line for line in (ROOT / "requirements-workloads.txt").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert lines and all("==" in line for line in lines), [line for line in lines if "==" not in line]
    # protobuf 7 removed FieldDescriptor.label, which Ray Serve read until 2.56; from 2.57 it reads is_repeated where
    # protobuf has it (ray python/ray/serve/_private/config.py _field_is_repeated, 2.57.0 and 2.60.0 wheels).
    assert int(TESTED["protobuf"].split(".")[0]) < 7 or ray_versions.ray_version_key(RAY) >= (2, 57, 0)


def test_the_workloads_interpreter_runs_the_default_ray_with_data_serve_and_train():
    text = (ROOT / "requirements-workloads.txt").read_text()
    assert RAY == ray_versions.DEFAULT_RAY_VERSION
    assert f"ray[serve,train,data]=={RAY}" in text.splitlines()
    assert f"ray[serve,train,data]=={RAY}" in text  # the comment names what was installed to freeze it
