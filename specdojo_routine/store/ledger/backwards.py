"""Reading a ledger from its end, newest line first (SPEC §14, §15).

``history --limit N`` and ``status`` want the last few lines of a ledger that may hold
millions: reading it from the start costs what the project's age costs. This reader starts at
the end of the last complete line (a torn fragment is left out, as every reader does) and
walks backwards in chunks, so its cost is bounded by what it hands out.

It checks what it reads, pair by pair: each line is a JSON object whose ``seq`` is its line
number, a line's ``prev`` is the hash of the line before it, and a line of ours without
``prev`` after a chained one is damage (SPEC §5). Lines it never reaches are not
checked here (``fold --check`` and every recording command verify the whole ledger).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from specdojo_routine.core.adopt import is_upstream_line, upstream_event
from specdojo_routine.core.errors import CorruptLedgerError
from specdojo_routine.store.ledger import chain
from specdojo_routine.store.ledger.codec import upgrade
from specdojo_routine.store.ledger.journal import tail

_CHUNK = 1 << 16
_parse = orjson.loads  # the one parse of a line (tests count its calls)


def _lines_backwards(fd: int, end: int) -> Iterator[bytes]:
    """The lines (without newline) of bytes ``[0, end)``, last first; ``end`` is just after a
    newline."""
    pos, rest = end, b""
    while pos > 0:
        size = min(_CHUNK, pos)
        pos -= size
        block = os.pread(fd, size, pos) + rest
        pieces = block.split(b"\n")
        rest = pieces[0]  # may continue in the block before
        yield from reversed(pieces[1:])
    yield rest


def read_backwards(path: Path | str) -> Iterator[tuple[bytes, dict[str, Any]]]:
    """(the line exactly as stored, the event upgraded to the current version) for every
    complete line of ``path``, newest first. Damage met on the way is a
    :class:`CorruptLedgerError` naming the line; a missing ledger has no lines."""
    path = Path(path)
    found = tail(path)
    if found.end == 0:
        return
    with open(path, "rb") as handle:
        fd = handle.fileno()
        line, later = found.seq, None  # `later`: the line after this one (its prev, ours?)
        unchained = 0  # the earliest line of ours without prev met so far (0: none)
        pieces = _lines_backwards(fd, found.end)
        next(pieces)  # the empty piece after the last newline
        for text in pieces:
            raw = _checked(path, line, text, later)
            later = (raw.get("prev"), chain.is_ours(raw))
            if later[0] is None and later[1]:
                unchained = line
            elif later[0] is not None and unchained:  # the chain started before that line
                raise chain.unchained_error(path, unchained)
            yield text, _event(path, line, raw)
            line -= 1
        if later is not None and later[0] is not None and later[0] != chain.EMPTY_HEAD:
            raise chain.chain_error(path, 1)


def attempt_events(path: Path | str, routine_id: str,
                   attempt_id: str) -> Iterator[dict[str, Any]]:
    """The events of one routine attempt, newest first, its ``attempt_started`` last: the read
    stops there, so its cost is what was recorded since the attempt began."""
    for _, event in read_backwards(path):
        if event.get("routine_id") == routine_id and event.get("attempt_id") == attempt_id:
            yield event
            if event.get("type") == "attempt_started":
                return


def _checked(
    path: Path, line: int, text: bytes, later: tuple[Any, bool] | None,
) -> dict[str, Any]:
    """Line ``line`` parsed, checked against the line after it (``later``)."""
    try:
        raw = _parse(text)
    except orjson.JSONDecodeError as exc:
        raise CorruptLedgerError(str(path), line, f"invalid JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise CorruptLedgerError(str(path), line, "line is not a JSON object")
    if (raw.get("seq") != line or type(raw.get("seq")) is not int) and not is_upstream_line(raw):
        raise CorruptLedgerError(str(path), line,
                                 f"seq {raw.get('seq')!r} where {line} was expected")
    if later is not None:
        later_prev = later[0]
        if later_prev is not None and later_prev != chain.line_hash(text):
            raise chain.chain_error(path, line + 1)
    return raw


def _event(path: Path, line: int, raw: dict[str, Any]) -> dict[str, Any]:
    if is_upstream_line(raw):
        return upstream_event(raw, line)
    try:
        return upgrade(raw)
    except ValueError as exc:
        raise CorruptLedgerError(str(path), line, str(exc)) from None
