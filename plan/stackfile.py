"""Reads a stack's configuration the way the Pulumi CLI does: project defaults from Pulumi.yaml, then the stack file.

Of this repository (`ROOT`), or of the project `plan.project.use` chose (`ray-tpu-gke plan` in another project's
folder): its Pulumi.yaml, its `stackConfigDir`, its name as the namespace of unqualified keys.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ray_tpu_gke.spec.config import StackConfig, parse_stack_config
from ray_tpu_gke.spec.paths import PROJECT
from ray_tpu_gke.spec.problems import ConfigError, Problem

from . import project as projects
from . import yamlfile

ROOT = Path(__file__).resolve().parent.parent
SECRET_PLACEHOLDER = "[secret]"


class StackNotFound(FileNotFoundError):
    pass


def _chosen() -> projects.Project | None:
    return projects._current


def _project_file() -> Path:
    chosen = _chosen()
    return chosen.file if chosen is not None else ROOT / "Pulumi.yaml"


def namespace() -> str:
    """The namespace of the project's unqualified config keys: its name."""
    chosen = _chosen()
    return chosen.name if chosen is not None else PROJECT


def _project() -> dict[str, Any]:
    """Pulumi.yaml, read as strictly as a stack file (plan/yamlfile.py)."""
    path = _project_file()
    project = _read(path)
    if not isinstance(project, dict):
        raise ConfigError([Problem(str(path), "must be a mapping (name, runtime, config, ...)")])
    return project


def _read(path: Path) -> Any:
    try:
        return yamlfile.read(path)
    except OSError as error:
        raise StackNotFound(f"cannot read {path}: {error.strerror or error}") from None


def stack_file(stack: str) -> Path:
    chosen = _chosen()
    if chosen is not None:
        return chosen.stack_file(stack)
    project = _project()
    return ROOT / project.get("stackConfigDir", ".") / f"Pulumi.{stack}.yaml"


def stacks() -> list[str]:
    folder = stack_file("x").parent
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in folder.glob("Pulumi.*.yaml"))


def _full_key(key: str) -> str:
    return key if ":" in key else f"{namespace()}:{key}"


def project_defaults() -> dict[str, Any]:
    """`config:` of Pulumi.yaml: a plain value, or a declaration whose `default` applies to every stack."""
    project = _project()
    config = project.get("config") or {}
    if not isinstance(config, dict):
        raise ConfigError([Problem(str(_project_file()), "`config:` must be a mapping")])
    values = {}
    for key, value in config.items():
        if isinstance(value, dict) and "type" in value:
            if "default" in value:
                values[_full_key(key)] = value["default"]
        else:
            values[_full_key(key)] = value
    return values


def load(stack: str, config_file: Path | None = None) -> tuple[dict[str, Any], list[str]]:
    """The decoded config map of a stack and its secret keys (secure values cannot be decrypted offline)."""
    path = config_file or stack_file(stack)
    if not path.exists() or path.is_dir():  # a pipe or `<(...)` is no regular file, and is read as one
        raise StackNotFound(f"no stack config {path}; stacks here: {', '.join(stacks()) or 'none'}")
    document = _read(path) or {}  # ConfigError, one line per problem with its line and column
    if not isinstance(document, dict) or not isinstance(document.get("config", {}), dict):
        raise ConfigError([Problem(str(path), "must be a mapping with a `config:` mapping")])
    values = project_defaults()
    secret_keys = []
    for key, value in (document.get("config") or {}).items():
        key = _full_key(str(key))
        if isinstance(value, dict) and set(value) == {"secure"}:
            secret_keys.append(key)
            value = SECRET_PLACEHOLDER
        values[key] = value
    return values, secret_keys


EXIT_INVALID = 2  # the configuration is invalid
EXIT_ERROR = 1  # anything else


def load_checked(stack: str, config_file: Path | None = None) -> tuple[dict[str, Any], list[str], StackConfig]:
    """The config map, its secret keys and the validated config; ConfigError or StackNotFound otherwise. RayJobs
    that run this repository's training workload are checked against their worker group too (plan/entrypoints.py)."""
    from . import entrypoints

    values, secret_keys = load(stack, config_file)
    config = parse_stack_config(values, stack)
    problems = entrypoints.problems(config)
    if problems:
        raise ConfigError(problems)
    return values, secret_keys, config


def warning_lines(warnings) -> list[str]:
    """Each warning as one `warning: ...` line, whatever its text holds, for stderr or a log: never wrapped."""
    return ["warning: " + " ".join(str(warning).split()) for warning in warnings]


def print_warnings(warnings, file=None) -> None:
    """Print each warning on one line (plain print: a Rich console would wrap at its width, 80 off a terminal)."""
    for line in warning_lines(warnings):
        print(line, file=file or sys.stderr)


def report(error: ConfigError | StackNotFound) -> int:
    """For command-line tools: every problem on stderr, one per line, and the exit status that goes with it."""
    if isinstance(error, ConfigError):
        for problem in error.problems:
            print(problem, file=sys.stderr)
        return EXIT_INVALID
    print(f"error: {error}", file=sys.stderr)
    return EXIT_ERROR
