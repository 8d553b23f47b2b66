"""What runs a Ray program: a RayJob's entrypoint as KubeRay's submitter hands it to bash, and the environment
variables of a Ray runtime environment (a RayJob's runtimeEnv, a Serve application's or replica's runtime_env)."""

from __future__ import annotations

from typing import Any

from .rules import rule

__all__ = ["ENTRYPOINT_SHELL", "RUNTIME_ENV_VARS", "check_entrypoint", "env_vars_problems"]

ENTRYPOINT_SHELL = rule(
    "kuberay-entrypoint-shell",
    "A RayJob's entrypoint is one command line bash can read: every ', \" and $'...' quote it opens is closed, it "
    "does not end in an unescaped backslash, and outside quotes it has no line break and no # that begins a word. "
    "KubeRay's submitter joins `ray job submit ... -- <entrypoint> ; fi ; ray job logs ...` into one script for "
    "`/bin/bash -ce`, which fails on an unbalanced quote before the job is submitted; a final backslash escapes the "
    "space before ` ;`; such a # makes the rest of its line a comment, `fi` included (bash: unexpected end of file); "
    "and a line break ends the submitted command there, so the lines after it run in the submitter pod, not in the "
    "job.",
    "ray-project/kuberay v1.7.0 ray-operator/controllers/ray/common/job.go BuildJobSubmitCommand, "
    "rayjob_controller.go configureSubmitterContainer (Args: the command joined with spaces) and utils/util.go "
    "GetContainerCommand (/bin/bash -c[e] --); bash(1) QUOTING, COMMENTS and Lists",
)
RUNTIME_ENV_VARS = rule(
    "ray-runtime-env-vars",
    "A Ray runtime environment's env_vars is a mapping of names to string values (quote numbers and booleans: "
    '"1", "true"); Ray refuses any other value with a TypeError and the job or Serve application fails.',
    "ray python/ray/_private/runtime_env/validation.py parse_and_validate_env_vars (Ray 2.55.0: "
    "Dict[str, str], keys and values checked with isinstance(..., str))",
)


# Outside quotes, these end a word in bash (its metacharacters, bash(1) DEFINITIONS): a # after one begins a comment.
_WORD_ENDS = frozenset(" \t;&|()<>")


def _first_problem(command: str) -> tuple[str, int] | None:
    """What bash would read wrongly in `command` as one line of KubeRay's submitter script, with its index, or None:
    ("#", i) a comment, ("\\n", i) a line break, ("\\", i) a final backslash that escapes nothing, or (quote, i) a
    quote (', " or $') opened at i and never closed. Outside quotes a backslash escapes the next character (a
    backslash-newline is removed) and a # that begins a word starts a comment; nothing is escaped within '...'; within
    "..." and $'...' a backslash escapes the next character (bash(1) QUOTING, COMMENTS)."""
    i, n, word_start = 0, len(command), True
    while i < n:
        c = command[i]
        if (c == "#" and word_start) or c == "\n":
            return c, i
        if c == "\\":
            if i == n - 1:
                return c, i
            word_start = word_start and command[i + 1] == "\n"
            i += 2
            continue
        word_start = c in _WORD_ENDS
        if c == "'" or c == '"' or (c == "$" and command.startswith("$'", i)):
            quote, escapes = ("$'", True) if c == "$" else (c, c == '"')
            opened, i = i, i + len(quote)
            while i < n and command[i] != quote[-1]:
                i += 2 if escapes and command[i] == "\\" else 1
            if i >= n:
                return quote, opened
        i += 1
    return None


def check_entrypoint(command: str) -> None:
    """A command line KubeRay's submitter can run (ENTRYPOINT_SHELL); ValueError says what bash would do with it."""
    command = command.strip()  # KubeRay trims the entrypoint (strings.TrimSpace)
    found = _first_problem(command)
    if found is None:
        return
    kind, at = found
    if kind == "#":
        raise ValueError(
            f"has a # that begins a word outside quotes ({command[at:]!r}): bash reads it and the rest of its line "
            "as a comment, on the last line KubeRay's `; fi ; ray job logs ...` too, and the submitter fails "
            f"({ENTRYPOINT_SHELL.id}); allowed: the # quoted ('#1') or escaped (\\#)"
        )
    if kind == "\n":
        raise ValueError(
            f"has a line break outside quotes after {command[:at]!r}: KubeRay's submitter submits only what comes "
            f"before it, and runs the lines after it in the submitter pod, not in the job ({ENTRYPOINT_SHELL.id}); "
            "allowed: one line, with commands joined by && or ;"
        )
    if kind == "\\":
        raise ValueError(
            "ends with a backslash: KubeRay's submitter puts ` ;` after the entrypoint, so it escapes that space and "
            f"the job gets an argument of one space ({ENTRYPOINT_SHELL.id}); allowed: a command line that does not end "
            "in an unescaped backslash"
        )
    raise ValueError(
        f"opens a {kind}...{kind[-1]} quote it never closes; KubeRay's submitter runs the entrypoint with "
        f"bash -c, which fails on it ({ENTRYPOINT_SHELL.id}); allowed: a command line whose quotes are balanced"
    )


def env_vars_problems(env_vars: Any) -> list[tuple[str, str]]:
    """(key under env_vars, what is wrong) for each name or value Ray refuses (RUNTIME_ENV_VARS); [] when all pass.
    An empty one of any kind is taken, as Ray takes it (it returns on len() == 0 before its type check)."""
    if env_vars is None or (isinstance(env_vars, (dict, list, str)) and len(env_vars) == 0):
        return []  # unset, or empty
    if not isinstance(env_vars, dict):
        return [("", f"is not a mapping of names to strings ({RUNTIME_ENV_VARS.id})")]
    problems = []
    for name, value in env_vars.items():
        if not isinstance(name, str):
            problems.append(("", f"has the name {name!r}, not a string ({RUNTIME_ENV_VARS.id})"))
        elif not isinstance(value, str):
            problems.append(
                (
                    f".{name}",
                    f'{value!r} is not a string; allowed: a string (quoted in YAML, such as "1" or "true") '
                    f"({RUNTIME_ENV_VARS.id})",
                )
            )
    return problems
