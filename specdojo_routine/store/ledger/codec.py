"""Events <-> ledger lines (SPEC §5): the only module turning events into JSON and back.

A line is one compact JSON object, ``{"version": 1, "seq": N, "type": "...", "at": "<UTC ISO ms>",
...payload}`` followed by ``\\n``. Optional payload fields are left out when ``None``.

Schema evolution is done on read ("upcasting"); ledgers are never rewritten:

- version 0 (the pre-version form) is a line without a ``"version"`` key. Its routine
  ``attempt_started`` had no ``owner``, ``passed_over_since`` or ``schedule``; it had
  ``"cron": true|false`` instead of ``schedule``. Upgraded: ``schedule`` = ``cron``/``interval``,
  ``passed_over_since`` = null, ``owner`` = ``{"pid": 0, "host": "unknown"}``. Every other v0
  event had its v1 payload.
- ``prev`` (the hash chain, SPEC §5) is an additive envelope field of version 1: lines written
  before it, and upstream lines, simply have none.
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from specdojo_routine.core.errors import CorruptLedgerError
from specdojo_routine.core.event_checks import CURRENT_VERSION
from specdojo_routine.core.timefmt import format_ms, try_parse_instant

if TYPE_CHECKING:  # cattrs and the event classes are imported where an event is encoded or
    # decoded: folding lines (upgrade) needs neither
    from cattrs.preconf.orjson import OrjsonConverter

    from specdojo_routine.core.events import Event, LedgerKind

ENVELOPE = ("version", "seq", "type", "at", "prev")
UNKNOWN_OWNER: dict[str, Any] = {"pid": 0, "host": "unknown"}


class UnsupportedVersion(ValueError):
    """A line claims an event version this program does not know."""


@attrs.frozen(kw_only=True, repr=False)
class Recorded:
    """An event with its ledger envelope."""

    seq: int
    at: str
    event: Event
    prev: str | None = None  # the hash chain field, when the line had one


def _strict(kind: type[Any]) -> Any:
    def structure(value: Any, _type: Any) -> Any:
        if type(value) is not kind:
            raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")
        return value

    return structure


def build_converter() -> OrjsonConverter:
    """The one converter: strict primitives, no extra keys, ``None`` optionals left out."""
    from cattrs.preconf.orjson import make_converter

    converter = make_converter(forbid_extra_keys=True, omit_if_default=True)
    for kind in (str, int, bool):
        converter.register_structure_hook(kind, _strict(kind))
    converter.register_structure_hook(float, _strict_float)
    return converter


def _strict_float(value: Any, _type: Any) -> float:
    if type(value) not in (int, float):
        raise TypeError(f"expected a number, got {type(value).__name__}")
    return float(value)


@functools.cache
def converter() -> OrjsonConverter:
    """The converter of every event, built on first use: folding lines (:func:`upgrade`)
    needs no converter, and importing cattrs costs a command that only reads more than the
    rest of its start-up."""
    return build_converter()


# --- writing ---------------------------------------------------------------------------------


def payload(event: Event) -> dict[str, Any]:
    """The event's payload as plain JSON data (optional ``None`` fields left out)."""
    data: dict[str, Any] = converter().unstructure(event)
    return data


def encode(event: Event, seq: int, at: datetime, prev: str | None = None) -> bytes:
    """One ledger line for ``event`` as number ``seq``, stamped ``at`` (wall clock); ``prev``:
    the lowercase hex sha256 of the line before it (the hash chain of SPEC §5)."""
    from specdojo_routine.core import events

    tag = events.TAGS[type(event)][1]
    line: dict[str, Any] = {"version": CURRENT_VERSION, "seq": seq, "type": tag}
    line["at"] = format_ms(at)
    if prev is not None:
        line["prev"] = prev
    line.update(payload(event))
    return orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE)


# --- reading ---------------------------------------------------------------------------------


def upgrade(raw: dict[str, Any]) -> dict[str, Any]:
    """``raw`` (a parsed line) at the current version; ``raw`` itself is never modified."""
    version = raw.get("version", 0)
    if version == CURRENT_VERSION and type(version) is int:
        return raw
    if version == 0 and type(version) is int:
        return _upgrade_v0(raw)
    raise UnsupportedVersion(
        f"unsupported event version {version!r} (this program reads versions 0-"
        f"{CURRENT_VERSION}; upgrade specdojo_routine)"
    )


def _upgrade_v0(raw: dict[str, Any]) -> dict[str, Any]:
    line = {"version": CURRENT_VERSION, **{k: v for k, v in raw.items() if k != "version"}}
    if line.get("type") == "attempt_started" and "routine_id" in line:
        cron = line.pop("cron", None)
        if type(cron) is not bool:
            raise ValueError("version 0 attempt_started needs a boolean 'cron'")
        line["passed_over_since"] = None
        line["owner"] = dict(UNKNOWN_OWNER)
        line["schedule"] = "cron" if cron else "interval"
    return line


def parse(line: bytes | str) -> dict[str, Any]:
    """Parse one line into a JSON object (``ValueError`` when it is not one)."""
    raw = orjson.loads(line)
    if not isinstance(raw, dict):
        raise ValueError("not a JSON object")
    return raw


def decode_record(
    line: bytes | str | dict[str, Any],
    *,
    ledger: LedgerKind = "routine",
    path: str = "<line>",
    line_no: int = 1,
) -> Recorded:
    """A stored line (bytes, text or an already parsed dict) as a validated, upgraded event.

    Raises :class:`CorruptLedgerError` naming ``path:line_no`` for anything that is not a valid
    event of the ``ledger`` kind, unknown event types included.
    """
    import cattrs  # loaded with the converter

    from specdojo_routine.core import events

    try:
        raw = upgrade(line if isinstance(line, dict) else parse(line))
        tag = raw.get("type")
        cls = events.EVENT_TYPES[ledger].get(tag) if isinstance(tag, str) else None
        if cls is None:
            raise ValueError(f"unknown {ledger} event type {tag!r}")
        seq, at = raw.get("seq"), raw.get("at")
        if type(seq) is not int or seq < 1 or try_parse_instant(at) is None:
            raise ValueError("the envelope needs an integer seq >= 1 and an 'at' timestamp")
        assert isinstance(at, str)
        prev = raw.get("prev")
        if prev is not None and not isinstance(prev, str):
            raise ValueError("the envelope's prev must be a string")
        body = {k: v for k, v in raw.items() if k not in ENVELOPE}
        event = converter().structure(body, cls)
    except cattrs.BaseValidationError as exc:
        reason = "; ".join(cattrs.transform_error(exc, format_exception=_describe))
        raise CorruptLedgerError(path, line_no, f"invalid {tag} event: {reason}") from None
    except ValueError as exc:
        raise CorruptLedgerError(path, line_no, str(exc)) from None
    return Recorded(seq=seq, at=at, event=event, prev=prev)


def decode(
    line: bytes | str | dict[str, Any],
    *,
    ledger: LedgerKind = "routine",
    path: str = "<line>",
    line_no: int = 1,
) -> Event:
    """Like :func:`decode_record` but only the event."""
    return decode_record(line, ledger=ledger, path=path, line_no=line_no).event


def _describe(exc: BaseException, _type: Any) -> str:
    import cattrs

    if isinstance(exc, KeyError):
        return "required field missing"
    if isinstance(exc, cattrs.ForbiddenExtraKeysError):
        return f"unknown field(s) {', '.join(sorted(exc.extra_fields))}"
    return str(exc) or type(exc).__name__
