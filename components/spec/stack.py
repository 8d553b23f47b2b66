"""The stack file front end: reads the running stack's configuration from the Pulumi runtime (the same way under the
CLI and under mocks) and validates it into the platform's configuration."""

from __future__ import annotations

import pulumi
from pulumi.runtime import config as runtime_config

from .config import StackConfig, decode_config_value, parse_stack_config


def load_stack_config() -> StackConfig:
    """Every key the stack sets (so unknown ones can be refused), decoded and validated before any resource."""
    raw = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    values = {key: decode_config_value(key, value) for key, value in raw.items()}
    return parse_stack_config(values, pulumi.get_stack())
