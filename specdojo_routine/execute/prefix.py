"""Child output that names its routine (SPEC §14): ``[rtn-nightly] ERROR: disk full``."""

from __future__ import annotations

from typing import Any, TextIO, cast


class Prefixed:
    """An echo stream that starts every line with ``[<routine id>] ``: the output of several
    routines' children in one log (cron mail, CI) says whose it is."""

    def __init__(self, stream: TextIO, prefix: str) -> None:
        self._stream, self._prefix = stream, f"[{prefix}] "
        self._line_start = True

    def write(self, text: str) -> int:
        if not text:
            return 0
        lines = text.split("\n")
        parts = []
        for i, piece in enumerate(lines):
            if i > 0:
                parts.append("\n")
                self._line_start = True
            if piece:
                if self._line_start:
                    parts.append(self._prefix)
                parts.append(piece)
                self._line_start = False
        self._stream.write("".join(parts))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def prefixed(stream: TextIO | None, routine_id: str) -> TextIO | None:
    """``stream`` with every line starting ``[routine_id] `` (None stays None)."""
    return None if stream is None else cast(TextIO, Prefixed(stream, routine_id))
