"""A comparison job that reports a few steps and its result document through `ray_tpu_gke.bench`, then fails, as a
job whose evaluation goes wrong after training does: its log and result document must stay with the report."""

from ray_tpu_gke import bench

run = bench.start(kind=None, platform="cpu", devices=1, framework="python", steps=3)
for step in range(1, 4):
    run.step(step, loss=1.0 / step, step_s=0.01, compiled=False)
run.finish(metric=0.5, metric_name="evalLoss", extra={"evaluation": "diverged"})
raise AssertionError("the evaluation diverged after training")
