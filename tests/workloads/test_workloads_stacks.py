"""The stacks' Ray objects that run this repository's workloads (issue #16) run ones that exist, with arguments they
accept, in the workloads image built from workloads/Dockerfile. A team's own entrypoint, Serve app or image is the
team's: a stack of one's own may run anything (issue #25), and only what names the repository's workloads is checked.
"""

import ast
import contextlib
import io
import shlex

import pytest

from helpers import ROOT, STACKS, config_of, minimal_values
from ray_tpu_gke.spec import images, multislice
from ray_tpu_gke.spec.config import parse_stack_config
from workloads import train, tpu_smoke

PARSERS = {"workloads.train": train.parse_args, "workloads.tpu_smoke": tpu_smoke.parse_args}
# docs/workloads.md: REGION-docker.pkg.dev/PROJECT/ray-tpu-gke/workloads-<tpu|gpu>:TAG, the variant of its accelerator
TAG = ":2.60.0"  # the default Ray (catalog.ray_versions.DEFAULT_RAY_VERSION)
PACKAGE = "workloads"  # the repository's workloads, as the image runs them: `python -m workloads.<module>`


def _module_defines(module: str, name: str) -> bool:
    path = ROOT / (module.replace(".", "/") + ".py")
    if not path.is_file():
        return False
    tree = ast.parse(path.read_text())
    return any(isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets)
               for node in tree.body)


def _names_the_repository(word: str) -> bool:
    return word == PACKAGE or word.startswith((f"{PACKAGE}.", f"{PACKAGE}/"))


def driver_environment(job, config) -> dict[str, str]:
    """What the job's driver finds in its environment: the head's of the cluster it runs on (its own, or the
    RayCluster it is submitted to), where the slice's shape is ($SLICE_*: ray_tpu_gke.spec.multislice)."""
    host = job
    if job.cluster is not None:
        host = next(c for c in config.ray_clusters if c.name == job.cluster and c.namespace == job.namespace)
    return {entry["name"]: entry["value"] for entry in multislice.head_env(host, config.slices_by_name)}


def job_problems(job, config) -> list[str]:
    """A job whose entrypoint names the repository's workloads runs one of them, with arguments it accepts in the
    environment its driver gets."""
    argv = shlex.split(job.entrypoint)
    if not any(_names_the_repository(word) for word in argv):
        return []  # the team's own program
    if argv[:2] != ["python", "-m"] or argv[2:3] == [] or argv[2] not in PARSERS:
        return [f"{job.name}: {job.entrypoint!r} is not `python -m` one of {sorted(PARSERS)}"]
    try:
        with contextlib.redirect_stderr(io.StringIO()) as refused:
            PARSERS[argv[2]](argv[3:], driver_environment(job, config))
    except SystemExit:  # argparse exits 2 on arguments the workload refuses
        return [f"{job.name}: {argv[2]} refuses {argv[3:]}: {refused.getvalue().strip().splitlines()[-1:]}"]
    return []


def service_problems(service) -> list[str]:
    """A Serve application imported from the repository's workloads exists there."""
    problems = []
    for application in (service.serve_config or {}).get("applications", []):
        module, _, attribute = application.get("import_path", "").partition(":")
        if _names_the_repository(module) and not _module_defines(module, attribute):
            problems.append(f"{service.name}: {application['import_path']} is not defined in the repository")
    return problems


def runs_the_repository(obj, config) -> bool:
    """The object runs a workload of the repository: a job's entrypoint, a service's app, or a cluster such a job
    is submitted to."""
    if hasattr(obj, "entrypoint"):
        return any(_names_the_repository(word) for word in shlex.split(obj.entrypoint))
    if hasattr(obj, "serve_config"):
        return any(_names_the_repository(a.get("import_path", "").partition(":")[0])
                   for a in (obj.serve_config or {}).get("applications", []))
    return any(job.cluster == obj.name and job.namespace == obj.namespace and runs_the_repository(job, config)
               for job in config.ray_jobs)


def image_problems(config) -> list[str]:
    """What runs the repository's workloads, or names its image, runs the workloads image of the stacks' Ray."""
    problems = []
    for obj in config.ray_objects:
        if getattr(obj, "cluster", None) is not None:  # a job on an existing cluster runs in that cluster's image
            continue
        if not (runs_the_repository(obj, config) or images.variant(obj.image)):
            continue  # a team's own program in its own image
        if not (images.variant(obj.image) and obj.image.endswith(TAG) and ".pkg.dev/" in obj.image):
            problems.append(f"{obj.name}: {obj.image} is not the repository's workloads image "
                            f"(REGION-docker.pkg.dev/PROJECT/REPOSITORY/workloads-<tpu|gpu>{TAG})")
    return problems


@pytest.mark.parametrize("stack", STACKS)
def test_jobs_that_run_a_workload_of_the_repository_give_valid_arguments(stack):
    config = config_of(stack)
    assert [p for job in config.ray_jobs for p in job_problems(job, config)] == []


@pytest.mark.parametrize("stack", STACKS)
def test_services_import_apps_the_repository_defines(stack):
    assert [p for service in config_of(stack).ray_services for p in service_problems(service)] == []


@pytest.mark.parametrize("stack", STACKS)
def test_the_repositorys_workloads_run_in_the_workloads_image(stack):
    assert image_problems(config_of(stack)) == []


# The rules themselves, on configs made here.

OWN_IMAGE = "europe-docker.pkg.dev/acme-team/images/trainer:7"
REPO_IMAGE = "us-east5-docker.pkg.dev/acme-ml-test/ray-tpu-gke/workloads-tpu" + TAG


def _config(*jobs, services=(), cluster_image=OWN_IMAGE):
    values = minimal_values(
        tpuSlices=[{"name": "v6e-4", "generation": "v6e", "topology": "2x2", "count": 8}],
        rayClusters=[{"name": "train", "image": cluster_image,
                      "workerGroups": [{"name": "tpu", "slice": "v6e-4", "replicas": 1}]}],
        rayJobs=list(jobs), rayServices=list(services))
    return parse_stack_config(values, "test")


def _job(name, entrypoint, image=OWN_IMAGE, **extra):
    return {"name": name, "entrypoint": entrypoint, "image": image,
            "workerGroups": [{"name": "tpu", "slice": "v6e-4", "replicas": 1}], **extra}


def test_a_teams_own_program_and_image_are_its_own():
    config = _config(_job("mine", "python train_mine.py --epochs 3"),
                     {"name": "on-train", "cluster": "train", "entrypoint": "python -m mypkg.job"},
                     services=[{"name": "llm", "image": OWN_IMAGE, "serveConfig": {"applications": [
                         {"name": "app", "import_path": "myteam.serve:app"}]},
                         "workerGroups": [{"name": "tpu", "slice": "v6e-4", "replicas": 1}]}])
    assert [p for j in config.ray_jobs for p in job_problems(j, config)] == []
    assert [p for s in config.ray_services for p in service_problems(s)] == []
    assert image_problems(config) == []


def test_the_repositorys_workloads_are_checked_wherever_they_run():
    config = _config(_job("bad-args", "python -m workloads.train --no-such-flag", image=REPO_IMAGE),
                     _job("not-a-module", "python workloads/train.py", image=REPO_IMAGE),
                     _job("own-image", "python -m workloads.train --steps 3"),
                     {"name": "on-train", "cluster": "train", "entrypoint": "python -m workloads.train --steps 3"},
                     services=[{"name": "llm", "image": REPO_IMAGE, "serveConfig": {"applications": [
                         {"name": "app", "import_path": "workloads.serve:no_such_app"}]},
                         "workerGroups": [{"name": "tpu", "slice": "v6e-4", "replicas": 1}]}])
    jobs = [p for j in config.ray_jobs for p in job_problems(j, config)]
    assert [p.split(":")[0] for p in jobs] == ["bad-args", "not-a-module"], jobs
    assert [p.split(":")[0] for s in config.ray_services for p in service_problems(s)] == ["llm"]
    # own-image runs the repository's training in another image; the cluster that on-train is submitted to as well
    assert [p.split(":")[0] for p in image_problems(config)] == ["train", "own-image"]
