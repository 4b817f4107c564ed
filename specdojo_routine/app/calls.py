"""The edge of every public library call (:mod:`specdojo_routine.api`): what the CLI's entry
does for a command line, done for a program that imports the package.

- Arguments are checked before anything runs: a ``str`` where a ``datetime`` belongs, a count
  out of range or a word that is not one of the allowed ones is a :class:`UsageError` naming
  the argument, not an ``AttributeError`` from deep inside (or, for ``resolve``, a
  ``ValueError`` after the lock was taken).
- The environment's refusals (``OSError``: permissions, a full disk, a file where a directory
  should be) become a :class:`FileSystemError` with the CLI's one-line message.
- An error's message never carries a secret value of the environment: the CLI redacts its
  ``error:`` line, and a program that logs the exception must get the same text.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, ParamSpec, TypeVar, get_args

from specdojo_routine.core.errors import FileSystemError, RoutineError, UsageError
from specdojo_routine.core.jobplan import Trigger
from specdojo_routine.core.redact import redact_values, secret_values
from specdojo_routine.store import fsfacts
from specdojo_routine.store.config import ProjectPaths

P = ParamSpec("P")
R = TypeVar("R")

#: ``next -n``'s bound: an ``upcoming`` count beyond it is a mistake, not a wish
MAX_UPCOMING = 1000
_WORDS = {"trigger": get_args(Trigger), "run": ("none", "latest", "all"),
          "result": ("success", "failure", "skipped")}  # resolve's, as the CLI's --result
#: argument name -> (the least value, the greatest or None)
_COUNTS = {"count": (1, MAX_UPCOMING), "limit": (1, None), "keep_days": (0, None),
           "keep_runs": (0, None)}
_INSTANTS = ("now", "scheduled_at", "start", "end")
_NAMES = ("routine_id", "job_id", "note", "by", "project")


def library_call(function: Callable[P, R]) -> Callable[P, R]:
    """``function`` with its arguments checked and its errors made the package's own."""
    signature = inspect.signature(function)

    @functools.wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        bound = signature.bind(*args, **kwargs).arguments
        env = bound.get("env")
        try:
            check_arguments(bound)
            return function(*args, **kwargs)
        except RoutineError as exc:
            _without_secrets(exc, env)
            raise
        except OSError as exc:
            raise _without_secrets(FileSystemError(fsfacts.describe(exc), exc), env) from exc
        except OverflowError as exc:  # date arithmetic at the edges of years 1-9999
            raise UsageError(f"a time is out of range ({exc}); use an instant between the "
                             "years 1000 and 9998") from exc

    return call


def check_arguments(bound: Mapping[str, Any]) -> None:
    """Raise :class:`UsageError` for the first argument of the wrong type or value."""
    if "paths" in bound and not isinstance(bound["paths"], ProjectPaths):
        raise UsageError(f"paths must be the ProjectPaths that load_project returns "
                         f"(got {_kind(bound['paths'])})")
    for name, value in bound.items():
        if name in _INSTANTS and value is not None and not isinstance(value, datetime):
            raise UsageError(f"{name} must be a datetime (got {_kind(value)}); naive ones are "
                             "read as UTC")
        if name in _NAMES and value is not None and not isinstance(value, str):
            raise UsageError(f"{name} must be a str (got {_kind(value)})")
        if name in _WORDS and value not in _WORDS[name]:
            raise UsageError(f"{name} must be one of {', '.join(_WORDS[name])} (got {value!r})")
        if name in _COUNTS and value is not None:
            _check_count(name, value, *_COUNTS[name])
        if name == "root" and value is not None:
            _check_root(value)
        if name == "echo" and value is not None and not callable(getattr(value, "write", None)):
            raise UsageError(f"echo must be a text stream with write() (got {_kind(value)})")
        if name in ("inputs", "env") and value is not None and not isinstance(value, Mapping):
            raise UsageError(f"{name} must be a mapping (got {_kind(value)})")
    if bound.get("env") is not None:
        _check_env(bound["env"])


def _check_count(name: str, value: object, least: int, most: int | None) -> None:
    if (not isinstance(value, int) or isinstance(value, bool) or value < least
            or (most is not None and value > most)):
        span = f"from {least} to {most}" if most is not None else f">= {least}"
        raise UsageError(f"{name} must be an integer {span} (got {value!r})")


def _check_root(root: object) -> None:
    if not isinstance(root, str | os.PathLike):
        raise UsageError(f"root must be a str or a Path (got {_kind(root)})")
    if not os.fspath(root):  # as the CLI's empty --root: an unset variable, not the cwd
        raise UsageError("root is empty; pass the project's directory, or None to search "
                         "up from the current directory")


def _check_env(env: Mapping[Any, Any]) -> None:
    for key, value in env.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise UsageError(f"env must map str to str (got {_kind(key)} {key!r}: "
                             f"{_kind(value)})")


def _kind(value: object) -> str:
    return type(value).__name__


def _without_secrets(exc: RoutineError, env: Mapping[str, str] | None) -> RoutineError:
    """``exc`` with every secret value of the process's environment and of ``env`` (the one
    the call's commands get) cut from its message, as the CLI's ``error:`` line has them."""
    secrets = secret_values(os.environ)
    if isinstance(env, Mapping):
        secrets += secret_values({k: v for k, v in env.items() if isinstance(v, str)})
    if secrets and exc.args and isinstance(exc.args[0], str):
        exc.args = (redact_values(exc.args[0], secrets, whole=True), *exc.args[1:])
    return exc
