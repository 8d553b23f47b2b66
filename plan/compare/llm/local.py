"""The local LLM rehearsal (`make compare-llm`): the serving comparison's local run (serving/local.py: one local Ray
cluster, simulated TPU hosts and GPU nodes added and removed as Ray's demand asks, both sides at once) with the LLM
sides' applications and the token load.

Each side's Ray Serve LLM application (`ray.serve.llm:build_openai_app`) is deployed with its arguments unchanged
but its import path swapped for the stand-in engine (workloads.llm_standin:build_openai_app, the small JAX
transformer behind the same OpenAI API: vLLM's CPU build is not on PyPI), its replica asking for the side's
accelerators (TPU chips or GPUs of one host or node), Serve's autoscaling delays shortened as the serving rehearsal's
(LOCAL_AUTOSCALING), and JAX's persistent compilation cache in a folder of the run's, so that a replica started again
from zero (the sparse shape's) starts with its compile cache warm, as a TPU replica does with VLLM_XLA_CACHE_PATH on
local disk.
"""

from __future__ import annotations

import copy
import tempfile
import time

from ..serving import local as serving_local
from ..serving import serve_state
from ..serving.services import ServiceSide
from . import drive
from .sides import server_deployment

STAND_IN = "workloads.llm_standin:build_openai_app"
# JAX's persistent compilation cache (jax docs, "Persistent compilation cache"): the folder, and no minimum compile
# time (its default, 1 s, would keep the tiny model's compilations out of it).
# Serve's autoscaling for the stand-in, locally: the serving rehearsal's delays (serving/local.py), two requests in
# flight per replica (at 1, the first request from zero alone made Serve ask for a second replica: it counted the
# request twice, queued at the proxy's handle and running on the replica, as the replica started; the burst's queue
# goes far beyond 2), and a downscale delay (2 to 1) long enough that the replica Serve adds at the burst's step is
# not stopped while it starts (on a loaded two-core machine that took over 30 s).
LOCAL_AUTOSCALING = {
    **serving_local.LOCAL_AUTOSCALING,
    "downscale_delay_s": 120.0,
    "target_ongoing_requests": 2,
}
# The stand-in's decoding step holds a replica 20 ms at least (workloads.llm_standin STEP_ENV): one replica answers
# at most 50 tokens a second, about two requests of 24 tokens, on any machine; the tiny model's own step takes about
# a millisecond here, so that a fast machine answered the burst's 30 requests a second with one replica.
STAND_IN_STEP_S = 0.02
SETTLE_TIMEOUT_S = 240.0  # the hang guard of the wait for the burst's added replica
CACHE_ENV = ("JAX_COMPILATION_CACHE_DIR", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS")


def replica_actor_options(side: ServiceSide) -> dict:
    """One host's or node's accelerators per replica: a Ray Serve LLM replica on TPU holds its slice (or a host of it),
    on GPUs its tensor-parallel group; locally one simulated node each."""
    units = side.units_per_node
    return {"resources": {"TPU": units}} if side.kind == "tpu" else {"num_gpus": units}


def make_config(cache_dir: str):
    def config(sides: list[ServiceSide], serve_port: int) -> dict:
        document = serving_local.local_config(sides, serve_port)
        for side, app in zip(sides, document["applications"]):
            app["import_path"] = STAND_IN
            args = app["args"] = copy.deepcopy(app.get("args") or {})
            for entry in args.get("llm_configs") or []:
                scaling = (entry.setdefault("deployment_config", {})).setdefault("autoscaling_config", {})
                scaling.update(LOCAL_AUTOSCALING)
            args["stand_in"] = {"ray_actor_options": replica_actor_options(side)}
            env = app["runtime_env"]["env_vars"]
            env.update({CACHE_ENV[0]: cache_dir, CACHE_ENV[1]: "0", "STANDIN_STEP_S": str(STAND_IN_STEP_S)})
        return document

    return config


def local_app(cache_dir: str) -> serving_local.LocalApp:
    return serving_local.LocalApp(config=make_config(cache_dir), deployment=server_deployment, traffic=drive.traffic)


def settler(sides: list[ServiceSide], timeout_s: float = SETTLE_TIMEOUT_S, sleep=time.sleep, clock=time.time):
    """After the burst: wait (no load sent) until the replicas Serve decided to add are RUNNING, or Serve's target
    falls back to those RUNNING, so that the burst's scale-up is seen whatever the machine's load; at most
    `timeout_s`, then the run goes on (and the report says no replica was added)."""
    deployments = {s.name: server_deployment(s) for s in sides}

    def settle(seen: dict, shape) -> None:
        import httpx  # the compare extra (plan/compare/extras.py)

        if shape.name != "burst" or not seen.get("dashboard"):
            return
        api = serve_state.ServeApi(seen["dashboard"])
        try:
            deadline = clock() + timeout_s
            while clock() < deadline:
                try:
                    now = serve_state.sample(api.applications(), seen["name"], deployments[seen["name"]], clock())
                except httpx.HTTPError:  # a busy dashboard: read again
                    now = None
                if now is not None and (now["target"] or 0) <= serve_state.running(now):
                    return
                sleep(1.0)
        finally:
            api.close()

    return settle


def sparse_gap_s(after_load: bool) -> float:
    """An idle gap in which a side's replicas all go: what may still run, Serve's look-back, each downscale delay
    (2 to 1 only after a shape that may have added a replica: the sparse shape first meets one replica) and the idle
    timeout, with a margin for polls (serving/local.py sparse_gap_s with this run's delays)."""
    delays = LOCAL_AUTOSCALING["downscale_delay_s"] if after_load else 0.0
    return (
        serving_local.LOCAL_BUSY_ALLOWANCE_S
        + LOCAL_AUTOSCALING["look_back_period_s"]
        + delays
        + LOCAL_AUTOSCALING["downscale_to_zero_delay_s"]
        + serving_local.LOCAL_IDLE_TIMEOUT_S
        + 4.0
    )


def new_cache_dir() -> str:
    return tempfile.mkdtemp(prefix="compare-llm-jax-cache-")
