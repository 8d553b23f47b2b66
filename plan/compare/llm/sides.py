"""The LLM comparison's sides: the plan's RayServices whose application is Ray Serve LLM's OpenAI app (found by its
import path, `ray.serve.llm:build_openai_app`, the builder Ray Serve LLM documents for serveConfigV2; Ray 2.55
python/ray/serve/llm/__init__.py), read as the serving comparison reads any RayService (serving/services.py), and
what the LLMConfig in its arguments says (`args.llm_configs[0]`: model_loading_config.model_id, deployment_config).
Bring-your-own endpoints (`--target SIDE=URL`) are sides too: a plan side's name measures that side's model at the
URL, with its prices; any other name is an endpoint of its own, without a price. Pure: plan JSON in, plain data out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..serving import services
from ..serving.services import ServiceSide

LLM_IMPORT_PATH = "ray.serve.llm:build_openai_app"
SERVER_PREFIX = "LLMServer:"  # Ray 2.55 python/ray/llm/_internal/serve/core/server/builder.py: name_prefix


class TargetError(ValueError):
    pass


def llm_sides(plan: dict, values: dict) -> list[ServiceSide]:
    return services.services(plan, values, llm=True)


def llm_config(side: ServiceSide) -> dict:
    """The side's first LLMConfig (args.llm_configs[0]) as the plan renders it."""
    return ((side.application.get("args") or {}).get("llm_configs") or [{}])[0]


def model_id(side: ServiceSide) -> str:
    return (llm_config(side).get("model_loading_config") or {}).get("model_id") or "model"


def server_deployment(side: ServiceSide) -> str:
    """The deployment whose replicas run the engine, named as Ray Serve LLM names it (`_get_deployment_name`: the
    model id with "/" as "--" and "." as "_", after the "LLMServer:" prefix)."""
    return SERVER_PREFIX + model_id(side).replace("/", "--").replace(".", "_")


def autoscaling(side: ServiceSide) -> dict:
    return dict((llm_config(side).get("deployment_config") or {}).get("autoscaling_config") or {})


def price_facts(plan: dict, side: ServiceSide) -> dict:
    """The side's price as the plan's cost table states it: per node-hour here, its unit, date, pricing model and
    source there (plan cost `rates`)."""
    rate = side.rate or {}
    listed: dict = next(
        (
            r
            for r in (plan.get("cost") or {}).get("rates") or []
            if r.get("kind") == rate.get("kind")
            and r.get("name") == rate.get("name")
            and r.get("capacity") == rate.get("capacity")
        ),
        {},
    )
    return {
        "nodeHourlyUsd": side.node_hourly,
        "rate": rate.get("hourly"),
        "unit": listed.get("unit"),
        "asOf": listed.get("asOf"),
        "pricingModel": side.capacity,
        "source": listed.get("source"),
    }


@dataclass(frozen=True)
class Target:
    """A side measured at a URL of the user's."""

    name: str
    url: str
    side: Optional[ServiceSide] = None  # the plan's side of that name, when there is one


def parse_targets(values: list[str], found: list[ServiceSide]) -> list[Target]:
    """`--target SIDE=URL` (repeatable) -> targets; a URL is http(s) with a host."""
    from .stream import target_url

    out, names = [], set()
    by_name = {s.name: s for s in found}
    for value in values:
        name, _, url = value.partition("=")
        name, url = name.strip(), url.strip()
        if not name or not url:
            raise TargetError(f"--target {value!r}: expected SIDE=URL, e.g. my-vllm=http://10.0.0.7:8000")
        if name in names:
            raise TargetError(f"--target {value!r}: side {name} named twice")
        try:
            url = target_url(url)
        except ValueError as error:
            raise TargetError(f"--target {value!r}: {error}") from None
        names.add(name)
        out.append(Target(name, url, by_name.get(name)))
    return out
