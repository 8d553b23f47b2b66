"""The Pulumi project a plan runs: its folder, name, stack config folder and program, read from its Pulumi.yaml.

This repository is one project (its `Pulumi.yaml`, `stacks/`, `__main__.py`); `ray-tpu-gke plan` runs in the folder of
any other Pulumi Python project and plans that one. The rules are the Pulumi CLI's (project file reference,
https://www.pulumi.com/docs/iac/concepts/projects/project-file/): the nearest folder upwards holding `Pulumi.yaml`
(or `Pulumi.yml`) is the project; `name` is required and is the namespace of its unqualified config keys;
`stackConfigDir` holds `Pulumi.<stack>.yaml` (default: the project folder); `main` is the program's path relative to
the project file (a folder with `__main__.py`, the Python entry point), default the project folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ray_tpu_gke.spec.paths import PROJECT as STACK_FILE_PROJECT
from ray_tpu_gke.spec.problems import ConfigError, Problem

from . import yamlfile

REPOSITORY = Path(__file__).resolve().parent.parent
PROJECT_FILES = ("Pulumi.yaml", "Pulumi.yml")


class ProjectNotFound(FileNotFoundError):
    pass


@dataclass(frozen=True)
class Project:
    root: Path  # the folder of Pulumi.yaml
    file: Path
    name: str
    stack_config_dir: Path
    program: Path  # the program's __main__.py
    document: dict[str, Any]

    @property
    def reads_stack_files(self) -> bool:
        """A project of this package's stack-file schema (`ray-tpu-gke:*` keys, `load_stack_config()`): its config
        is validated before the program runs and the capacity and cost tables come from it. Any other project is
        planned from what its program registers (plan/inventory.py)."""
        return self.name == STACK_FILE_PROJECT

    def stack_file(self, stack: str) -> Path:
        return self.stack_config_dir / f"Pulumi.{stack}.yaml"

    def stacks(self) -> list[str]:
        return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in self.stack_config_dir.glob("Pulumi.*.yaml"))


def _read(path: Path) -> Any:
    try:
        return yamlfile.read(path)
    except OSError as error:
        raise ProjectNotFound(f"cannot read {path}: {error.strerror or error}") from None


def load(root: Path) -> Project:
    """The project whose Pulumi.yaml is in `root`; ConfigError names what is wrong with the file."""
    root = root.resolve()
    file = next((root / name for name in PROJECT_FILES if (root / name).is_file()), None)
    if file is None:
        raise ProjectNotFound(f"no Pulumi.yaml in {root}")
    document = _read(file)
    if not isinstance(document, dict):
        raise ConfigError([Problem(str(file), "must be a mapping (name, runtime, config, ...)")])
    problems = []
    name = document.get("name")
    if not isinstance(name, str) or not name:
        problems.append(Problem(f"{file}: name", "required: the project's name"))
    runtime = document.get("runtime")
    runtime_name = runtime.get("name") if isinstance(runtime, dict) else runtime
    if runtime_name != "python":
        problems.append(
            Problem(
                f"{file}: runtime",
                f"{runtime_name!r} is not python: only Python programs are "
                "planned (Pulumi YAML programs: plan the components they use)",
            )
        )
    folders = {}
    for key in ("stackConfigDir", "main"):
        value = document.get(key, ".")
        if not isinstance(value, str):
            problems.append(Problem(f"{file}: {key}", f"must be a path relative to {file.name}"))
            value = "."
        folders[key] = (root / value).resolve()
    program = folders["main"] if folders["main"].suffix == ".py" else folders["main"] / "__main__.py"
    if not problems and not program.is_file():
        problems.append(Problem(f"{file}: main", f"no Python program at {program} (a folder with __main__.py)"))
    if problems:
        raise ConfigError(problems)
    return Project(root, file, name, folders["stackConfigDir"], program, document)


def find(start: Path) -> Project:
    """The project of `start`: the nearest folder upwards with a Pulumi.yaml, as the Pulumi CLI looks for it."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if any((folder / name).is_file() for name in PROJECT_FILES):
            return load(folder)
    raise ProjectNotFound(f"no Pulumi.yaml in {start} or any folder above it: run in a Pulumi project's folder")


_current: Project | None = None


def current() -> Project:
    """The project being planned: the one `use` chose, else this repository."""
    global _current
    if _current is None:
        _current = load(REPOSITORY)
    return _current


def use(project: Project | None) -> None:
    """Plan `project` from now on (None: this repository again)."""
    global _current
    _current = project
