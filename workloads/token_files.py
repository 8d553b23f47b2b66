"""The default training job's input: token files in the stack's bucket, read back through Ray Data into the training
loop, and what Ray Data says the loop waited for them.

The driver writes the tokens of every step once (workloads.lm.step_tokens of the run's seed), before the job starts,
under --data-path (default the bucket the stack mounts at /gcs in every Ray pod; a temporary folder in the local
rehearsal): for each shard of STEPS_PER_FILE steps and each process of the job, one .npy file with that process's
rows of those steps' global batches. Ray Train hands the dataset to its workers split by process
(`streaming_split`); in order (`preserve_order`) and with one block per file, its output splitter gives the file of
process p to worker p, so every worker trains on the rows workloads.lm would have made for it, and two runs of one seed
train alike. Each worker iterates its shard with `iter_jax_batches` (Ray 2.56 and later): one batch per step, already
on its devices.

Ray Data times the iteration itself: the time the loop was blocked waiting for a batch and the iterator's total time,
which its shard's `stats()` prints (Ray 2.60 ray/data/_internal/stats.py IterStatsSummary.to_string, "Total time
overall" and "Total time user thread is blocked by Ray Data iter_batches", figures formatted by `fmt`).
"""

from __future__ import annotations

import re
from pathlib import Path

STEPS_PER_FILE = 10
DATASET = "train"  # the name of the dataset the trainer hands to its workers (ray.train.get_dataset_shard)


def corpus(root: str, *, steps: int, seed: int, batch_size: int, processes: int, model) -> Path:
    """The folder of one corpus: what its files hold is fixed by these, so runs of the same shape share it (a run
    that resumes reads the files its first attempt read)."""
    return Path(root) / (
        f"tokens-steps{steps}-seed{seed}-batch{batch_size}-seq{model.seq_len}-vocab{model.vocab}-processes{processes}"
    )


def _file(folder: Path, shard: int, process: int) -> Path:
    return folder / f"shard-{shard:06d}-process-{process:03d}.npy"


def shards(steps: int) -> int:
    return -(-steps // STEPS_PER_FILE)


def write(folder: Path, *, steps: int, batch_size: int, processes: int, seed: int, model) -> list[str]:
    """Every file of `steps` steps, in the order the splitter deals them out (shard by shard, process by process), the
    last shard cut at `steps`: each worker's iteration holds one batch per step, no more. Files already there are
    kept (each is written whole under another name first, then renamed)."""
    import numpy as np

    from . import lm

    folder.mkdir(parents=True, exist_ok=True)
    share = batch_size // processes
    paths = []
    for shard in range(shards(steps)):
        wanted = [_file(folder, shard, p) for p in range(processes)]
        if not all(path.exists() for path in wanted):
            first = shard * STEPS_PER_FILE
            rows = [
                lm.step_tokens(step, batch_size, seed, model)
                for step in range(first, min(steps, first + STEPS_PER_FILE))
            ]
            for process, path in enumerate(wanted):
                mine = np.concatenate([r[process * share : (process + 1) * share] for r in rows])
                partial = path.with_name(path.name + ".partial.npy")
                np.save(partial, mine)
                partial.rename(path)
        paths += [str(path) for path in wanted]
    return paths


def dataset(paths: list[str]):
    """The Ray dataset of the files: one read task, hence one block, per file, so that the split deals whole files."""
    import ray.data

    return ray.data.read_numpy(paths, override_num_blocks=len(paths))


def data_config():
    """Ray Train's ingest options with the order kept: the output splitter then ignores locality and deals each block
    to the worker with the fewest rows so far, lowest rank first (Ray 2.60 ray/data/_internal/execution/operators/
    output_splitter.py start and _select_next_output_index): deterministic."""
    from ray.train import DataConfig

    options = DataConfig.default_ingest_options()
    options.preserve_order = True
    return DataConfig(execution_options=options)


_SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
_FIGURE = r"([0-9.]+)(us|ms|s)\b"
_LINES = {
    "iterS": re.compile(r"\* Total time overall: " + _FIGURE),
    "blockedS": re.compile(r"Total time user thread is blocked by Ray Data iter_batches: " + _FIGURE),
    "firstBatchS": re.compile(r"Total time spent waiting for the first batch after starting iteration: " + _FIGURE),
}


def iterator_times(stats: str) -> dict:
    """Seconds of a finished iteration from the text of its iterator's `stats()`: the iterator's total time (None
    until the iteration has ended), the time the loop was blocked waiting for batches (the first one included) and for
    the first batch. Ray Data leaves out a line whose figure is zero."""
    times: dict = {}
    for key, pattern in _LINES.items():
        found = pattern.search(stats)
        times[key] = None if found is None else float(found.group(1)) * _SECONDS[found.group(2)]
    if times["iterS"] is not None:
        times["blockedS"] = times["blockedS"] or 0.0
        times["firstBatchS"] = times["firstBatchS"] or 0.0
    return times


def waiting(times: dict, paused_s: float) -> dict:
    """The loop's wait for input once it runs: blocked time over the iterator's time, the first batch (the pipeline's
    start) out of both, and the loop's own pauses (--throttle-s) out of the iterator's time. None where Ray Data gave
    no total."""
    out = {**times, "pausedS": paused_s, "waitShare": None}
    if times["iterS"] is not None:
        running = times["iterS"] - times["firstBatchS"] - paused_s
        if running > 0:
            out["waitShare"] = max(0.0, times["blockedS"] - times["firstBatchS"]) / running
    return out
