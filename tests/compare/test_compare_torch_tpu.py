"""PyTorch on the TPU side, rehearsed: the torch example job (examples/bench-jobs/torch_job.py) as both sides of a
local comparison on a real local Ray cluster, in the PyTorch interpreter (.venv-torch: the workloads' Ray and JAX with
torch and torchax, requirements-torch.txt). The TPU side runs it with `--device jax` (torchax on JAX's CPU backend,
one CPU device per simulated chip), the GPU side as it is (Ray Train's TorchTrainer on CPU workers): the same model,
data and optimiser, so the two must agree. One run for the module; skipped, saying so, only when there is no PyTorch
interpreter ($TORCH_PYTHON or .venv-torch/bin/python)."""

from __future__ import annotations

import pytest
from compare_runs import by_name, compare_locally
from helpers import venv_python

pytestmark = pytest.mark.local_ray

STEPS, EVERY, CHIPS = 12, 6, 8
TORCH_JOB = "python examples/bench-jobs/torch_job.py --steps {steps} --storage-path {storage}"


def torch_python() -> str:
    """The PyTorch interpreter beside the workloads' Ray and JAX (`make test-ray` builds it)."""
    return venv_python("TORCH_PYTHON", ".venv-torch", "PyTorch", "requirements-torch.txt")


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    python = torch_python()
    work = tmp_path_factory.mktemp("compare-torch")
    job = TORCH_JOB.format(steps=STEPS, storage=work / "checkpoints")
    out = work / "report"
    done, document = compare_locally(out, python, "--sides", "bench-tpu,bench-a100", "--report-every", str(EVERY),
                                     "--inject-failure", "0", "--entrypoint",
                                     f"bench-tpu={job} --device jax --chips {CHIPS}", "--entrypoint",
                                     f"bench-a100={job} --gpus 1", timeout=1800)
    return done, document, out


def test_the_torch_job_ran_as_the_tpu_side_and_the_report_says_simulated_on_cpu(compared):
    done, document, out = compared
    assert done.returncode == 0 and document["problems"] == [], done.stderr[-4000:]
    assert document["mode"] == "local" and document["simulated"] is True
    tpu = by_name(document)["bench-tpu"]
    assert (tpu["platform"], tpu["simulated"], tpu["kind"]) == ("cpu", True, "tpu")
    assert tpu["framework"] == "torch" and tpu["steps"] == STEPS
    lines = (out / "report.md").read_text().splitlines()
    assert lines[0].startswith("Rehearsal: ") and any("(local, simulated)" in line for line in lines[:5])


def test_torchax_ran_one_program_over_a_device_per_simulated_chip(compared):
    _, document, _ = compared
    tpu, gpu = by_name(document)["bench-tpu"], by_name(document)["bench-a100"]
    # JAX's CPU devices standing in for the host's 8 chips; the GPU side's one CPU worker
    assert (tpu["devices"], tpu["processes"], tpu["deviceKind"]) == (CHIPS, 1, "cpu")
    assert (gpu["devices"], gpu["framework"], gpu["platform"]) == (1, "torch", "cpu")
    # The compile time JAX reported while torchax ran the steps: the first step compiles (the gradient's program and
    # the optimiser's eager operations), the steps after it meet no new shape.
    assert tpu["compileS"] > 0 and tpu["compileEvents"] > 1
    assert tpu["compiledSteps"] == [0]  # indexes into the step times
    assert gpu["compileS"] == 0  # eager PyTorch declares none
    assert tpu["checkpoints"]["saves"] == gpu["checkpoints"]["saves"] == STEPS // EVERY


def test_the_port_computes_what_the_gpu_side_computes(compared):
    _, document, _ = compared
    tpu, gpu = by_name(document)["bench-tpu"], by_name(document)["bench-a100"]
    # Two counts of one step: XLA's of the program torchax compiled (elementwise operations too) and PyTorch's
    # counter's on the GPU side; they differ by under 10 % (8 % here: 1,241,096 and 1,146,880).
    assert tpu["flopsSource"].startswith("XLA cost analysis") and gpu["flopsSource"].startswith("torch.utils")
    assert tpu["flopsPerStep"] == pytest.approx(gpu["flopsPerStep"], rel=0.1)
    agreement = document["agreement"]
    assert agreement["metric"] == "evalLoss" and agreement["agree"] is True
    assert agreement["values"] == [tpu["evalMetric"]["value"], gpu["evalMetric"]["value"]]
    prints = agreement["fingerprint"]
    assert prints["relativeDifference"] <= prints["tolerance"] and prints["agree"] is True
