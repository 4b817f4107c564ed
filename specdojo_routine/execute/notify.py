"""Notification hooks (SPEC §13): the operator's shell command, run after a recorded event.

The command runs as ``/bin/sh -c <command>`` in the project root, in its own process group,
stdin closed, with the event in its environment (``SPECDOJO_NOTIFY_*``, every value redacted
first, then cut to :data:`VALUE_LIMIT` characters) and at most :data:`TIMEOUT_S` seconds to
finish; then its group is killed. Its output is captured and dropped: a hook reports by what it
does, its outcome (exit code, duration) is recorded by the caller.
``SPECDOJO_NOTIFY_TIMEOUT_S`` overrides the bound (a positive number of seconds), for tests and
for hooks that are known to be slow.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import orjson

from specdojo_routine.core.redact import redact
from specdojo_routine.execute import runner

#: How long a hook may run before its process group is killed (SPEC §13).
TIMEOUT_S = 60.0
#: Overrides :data:`TIMEOUT_S` (seconds, a positive number).
TIMEOUT_ENV = "SPECDOJO_NOTIFY_TIMEOUT_S"
#: The most characters of one value the hook receives: a reason of any length still fits in
#: one environment string (the kernel refuses one over 128 KiB, and the hook would not start).
VALUE_LIMIT = 4096


@attrs.frozen(kw_only=True, repr=False)
class HookOutcome:
    exit_code: int | None  # None: it could not start, or was killed at the timeout
    duration_s: float
    error: str | None = None  # "timed out after 60s", "executable not found: /bin/sh"


def timeout_s(env: Mapping[str, str]) -> float:
    """The hook's bound: :data:`TIMEOUT_ENV` when it is a positive number, else 60 s."""
    try:
        value = float(env.get(TIMEOUT_ENV, ""))
    except ValueError:
        return TIMEOUT_S
    return value if 0 < value < 1e6 else TIMEOUT_S


def hook_env(payload: Mapping[str, Any], secrets: list[str]) -> dict[str, str]:
    """The ``SPECDOJO_NOTIFY_*`` variables of one event, each value redacted."""
    def clean(value: Any) -> str:
        return "" if value is None else _bounded(redact(str(value), secrets))

    safe = {k: (clean(v) if isinstance(v, str) else v) for k, v in payload.items()}
    return {
        "SPECDOJO_NOTIFY_EVENT": clean(payload.get("event")),
        "SPECDOJO_ROUTINE_ID": clean(payload.get("routine_id")),
        "SPECDOJO_ATTEMPT_ID": clean(payload.get("attempt_id")),
        "SPECDOJO_SCHEDULED_FOR": clean(payload.get("scheduled_for")),
        "SPECDOJO_RESULT": clean(payload.get("result")),
        "SPECDOJO_REASON": clean(payload.get("reason")),
        "SPECDOJO_NOTIFY_JSON": orjson.dumps(safe).decode(),
    }


def _bounded(text: str) -> str:
    """``text`` as an environment value can carry it: a NUL (which no process can receive)
    written ``\\0``, and at most :data:`VALUE_LIMIT` characters, the cut marked ``…``
    (redacted before, so a cut never leaves part of a secret)."""
    text = text.replace("\0", "\\0")
    return text if len(text) <= VALUE_LIMIT else text[:VALUE_LIMIT - 1] + "…"


def run_hook(
    command: str, *, root: Path, env: Mapping[str, str], payload: Mapping[str, Any],
    secrets: list[str],
) -> HookOutcome:
    """Run the hook for one event (see the module docstring); never raises for the hook's
    own failures - they are its outcome."""
    limit = timeout_s(env)
    outcome = runner.run_argv(
        ["/bin/sh", "-c", command], cwd=root,
        env=runner.child_env(env, hook_env(payload, secrets)), timeout_s=limit)
    error = f"timed out after {limit:g}s" if outcome.timed_out else outcome.error
    return HookOutcome(exit_code=outcome.exit_code, duration_s=round(outcome.duration_s, 3),
                       error=None if error is None else redact(error, secrets))
