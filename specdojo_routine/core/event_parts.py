"""What the events of both ledgers share (pure): the id patterns, the two timestamp forms, the
validators built from them, and the :class:`Owner` of an attempt.

The routine ledger's events are :mod:`.routine_events`, the Job Run ledgers' :mod:`.job_events`;
the wire tags of both and the helpers over every event are :mod:`.events`. The generic field
checks are :mod:`.event_checks`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import attrs

from specdojo_routine.core.event_checks import _int_at_least, _matching, _stamp, _text

ROUTINE_ID = re.compile(r"rtn-[a-z0-9][a-z0-9-]*")
JOB_ID = re.compile(r"job-[a-z0-9][a-z0-9-]*")
RUN_ID = re.compile(r"JBR-[A-Za-z0-9-]+")
_MS = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
_S = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")

_ms = _stamp(_MS, "a UTC timestamp with milliseconds (2026-08-07T08:00:00.000Z)")
_s = _stamp(_S, "a UTC timestamp without fractions (2026-08-07T08:02:00Z)")
_routine_id = _matching(ROUTINE_ID, "a routine id (rtn-<slug>)")
_run_id = _matching(RUN_ID, "a Job Run id (JBR-…)")
_job_id = _matching(JOB_ID, "a Job id (job-<slug>)")
_sha256 = _matching(re.compile(r"[0-9a-f]{64}"), "a lowercase hex sha256")


def _paths(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _some_paths(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not value or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{attribute.name} must be a non-empty list of paths (got {value!r})")


@attrs.frozen(kw_only=True)
class Owner:
    """The process that started an attempt."""

    pid: int = attrs.field(validator=_int_at_least(0))
    host: str = attrs.field(validator=_text)
    #: the process start time (Linux ``/proc/<pid>/stat`` field 22, clock ticks since boot),
    #: so that a reused pid is not mistaken for the owner; absent in older records
    start: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(_int_at_least(0)))
