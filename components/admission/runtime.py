"""What runs a Ray program: a RayJob's entrypoint as KubeRay's submitter hands it to bash, and the environment
variables of a Ray runtime environment (a RayJob's runtimeEnv, a Serve application's or replica's runtime_env)."""

from __future__ import annotations

from typing import Any

from .rules import rule

__all__ = ["ENTRYPOINT_SHELL", "RUNTIME_ENV_VARS", "check_entrypoint", "env_vars_problems"]

ENTRYPOINT_SHELL = rule(
    "kuberay-entrypoint-shell",
    "A RayJob's entrypoint is a command line bash can read: every ', \" and $'...' quote it opens is closed, it "
    "does not end in an unescaped backslash, and no # outside quotes begins a word on its last line. KubeRay's "
    "submitter joins `ray job submit ... -- <entrypoint> ; fi ; ray job logs ...` into one script for "
    "`/bin/bash -ce`, which fails on an unbalanced quote before the job is submitted; a final backslash escapes the "
    "space before ` ;`, and such a # makes the rest of the script a comment, `fi` included (bash: unexpected end of "
    "file).",
    "ray-project/kuberay v1.7.0 ray-operator/controllers/ray/common/job.go BuildJobSubmitCommand, "
    "rayjob_controller.go configureSubmitterContainer (Args: the command joined with spaces) and utils/util.go "
    "GetContainerCommand (/bin/bash -c[e] --); bash(1) QUOTING and COMMENTS",
)
RUNTIME_ENV_VARS = rule(
    "ray-runtime-env-vars",
    "A Ray runtime environment's env_vars is a mapping of names to string values (quote numbers and booleans: "
    '"1", "true"); Ray refuses any other value with a TypeError and the job or Serve application fails.',
    "ray python/ray/_private/runtime_env/validation.py parse_and_validate_env_vars (Ray 2.55.0: "
    "Dict[str, str], keys and values checked with isinstance(..., str))",
)


# Outside quotes, these end a word in bash (its metacharacters, bash(1) DEFINITIONS): a # after one begins a comment.
_WORD_ENDS = frozenset(" \t\n;&|()<>")


def _read(command: str) -> tuple[str | None, int | None]:
    """How bash reads `command`: the quote left open at its end (a backslash when it escapes nothing) or None, and the
    index of a # that begins a comment on its last line or None. Outside quotes a backslash escapes the next
    character (a backslash-newline is removed) and a # that begins a word starts a comment to the end of its line;
    nothing is escaped within '...'; within "..." and $'...' a backslash escapes the next character (bash(1) QUOTING,
    COMMENTS)."""
    i, n, word_start = 0, len(command), True
    while i < n:
        c = command[i]
        if c == "#" and word_start:
            line_end = command.find("\n", i)
            if line_end < 0:
                return None, i
            i = line_end  # the comment ends with its line; the next line is read again
            continue
        if c == "\\":
            if i == n - 1:
                return "\\", None
            word_start = word_start and command[i + 1] == "\n"
            i += 2
            continue
        word_start = c in _WORD_ENDS
        if c == "'" or c == '"' or (c == "$" and command.startswith("$'", i)):
            quote, escapes = ("$'", True) if c == "$" else (c, c == '"')
            closing = quote[-1]
            i += len(quote)
            while i < n and command[i] != closing:
                i += 2 if escapes and command[i] == "\\" else 1
            if i >= n:
                return quote, None
        i += 1
    return None, None


def check_entrypoint(command: str) -> None:
    """A command line KubeRay's submitter can run (ENTRYPOINT_SHELL); ValueError says what bash would do with it."""
    quote, comment = _read(command.strip())  # KubeRay trims the entrypoint (strings.TrimSpace)
    if comment is not None:
        raise ValueError(
            f"has a # that begins a word outside quotes ({command.strip()[comment:]!r}): bash reads it and the rest "
            "of KubeRay's submitter script as a comment, `; fi ; ray job logs ...` included, and fails "
            f"({ENTRYPOINT_SHELL.id}); allowed: the # quoted ('#1') or escaped (\\#)"
        )
    if quote == "\\":
        raise ValueError(
            "ends with a backslash: KubeRay's submitter puts ` ;` after the entrypoint, so it escapes that space and "
            f"the job gets an argument of one space ({ENTRYPOINT_SHELL.id}); allowed: a command line that does not end "
            "in an unescaped backslash"
        )
    if quote is not None:
        raise ValueError(
            f"opens a {quote}...{quote[-1]} quote it never closes; KubeRay's submitter runs the entrypoint with "
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
