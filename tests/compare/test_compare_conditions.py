"""The comparison's two sides run under the same conditions (issue #21): the same compilation cache policy, the same
training arguments but for where they run, and hardware released soon after each job ends."""

import shlex

from helpers import RAY_JOB, config_of, plan_of

from ray_tpu_gke.spec import images

# What differs by design: where the job runs (components/workload/slice.py, workloads/train.py --gpus) and its name.
PLATFORM_FLAGS = {"--generation", "--topology", "--hosts", "--chips-per-host", "--gpus", "--name", "--side"}


def _flags(entrypoint: str) -> dict:
    argv, out = shlex.split(entrypoint), {}
    for i, arg in enumerate(argv):
        if arg.startswith("--") and arg not in PLATFORM_FLAGS:
            value = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") else True
            out[arg] = value
    return out


def test_both_sides_share_the_compilation_cache_policy():
    jobs = [s["newState"]["inputs"] for s in plan_of("compare")["steps"] if s["newState"]["type"] == RAY_JOB]
    caches = {}
    for job in jobs:
        for group in job["spec"]["rayClusterSpec"]["workerGroupSpecs"]:
            env = {e["name"]: e.get("value") for e in group["template"]["spec"]["containers"][0].get("env", [])}
            caches[job["metadata"]["name"]] = env.get("JAX_COMPILATION_CACHE_DIR")
    assert len(caches) == 4 and len(set(caches.values())) == 1 and None not in caches.values(), caches


def test_both_sides_train_the_same_job_on_their_own_variant():
    jobs = {job.name: job for job in config_of("compare").ray_jobs}
    flags = {name: _flags(job.entrypoint) for name, job in jobs.items()}
    assert len(jobs) == 4 and len({repr(sorted(f.items())) for f in flags.values()}) == 1, flags
    variants = {images.variant(job.image) for job in jobs.values()}
    assert variants == {"tpu", "gpu"}


def test_each_side_releases_its_hardware_when_its_job_ends():
    for job in config_of("compare").ray_jobs:
        assert job.shutdown_after_job_finishes and job.ttl_seconds_after_finished <= 300, job.name
