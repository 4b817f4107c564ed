"""One captured output stream of a command: the head kept, the live echo redacted (SPEC §7.5,
§11.4 "Console"), whatever the line length or how the writes fall."""

from __future__ import annotations

import codecs
from typing import TextIO

from specdojo_routine.core.redact import redact
from specdojo_routine.core.redact_stream import LineRedactor, cut_is_clean

__all__ = ["CAPTURE_LIMIT_BYTES", "ECHO_HOLD", "ECHO_LINE_LIMIT", "ECHO_WITHHOLD_LIMIT", "Stream"]

CAPTURE_LIMIT_BYTES = 4 * 1024 * 1024
ECHO_LINE_LIMIT = 1024 * 1024  # a longer line is echoed in pieces (see _Stream)
ECHO_HOLD = 4096  # characters at the end of a long line kept back: they may start a secret
ECHO_WITHHOLD_LIMIT = 8 * ECHO_LINE_LIMIT  # a line without a safe cut is not echoed at all


class Stream:
    """One captured output stream: the head in memory, lines echoed redacted.

    A line is echoed once complete. A line longer than ``ECHO_LINE_LIMIT`` is echoed in pieces,
    each cut after a separator (whitespace, ``,`` or ``;``) at least ``ECHO_HOLD`` characters
    (and the longest secret) before the end of what has arrived, and only where
    :func:`~specdojo_routine.core.redact_stream.cut_is_clean` says no redaction spans the cut,
    now or once the rest arrives: so no secret is ever shown cut in two, nor a value cut from
    its key, whatever the line length or how the writes fall. A line without such a cut is
    held, and past ``ECHO_WITHHOLD_LIMIT`` replaced by a note."""

    def __init__(self, echo: TextIO | None, redactor: LineRedactor) -> None:
        self.head = bytearray()
        self.dropped = 0
        self.echo = echo
        self.redactor = redactor
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.partial = ""
        self.searched = 0  # a start of ``partial`` already searched for a cut: not searched again
        self.retry_at = 0  # after a search without a clean cut, the length to search again at
        # a secret may arrive in its JSON-escaped form (up to 12 characters for one)
        self.hold = ECHO_HOLD + 12 * max((len(x) for x in redactor.secrets), default=0)

    def feed(self, data: bytes) -> None:
        room = CAPTURE_LIMIT_BYTES - len(self.head)
        self.head += data[:room]
        self.dropped += max(0, len(data) - room)
        if self.echo is not None:
            self._echo(self.decoder.decode(data))

    def close(self) -> None:
        if self.echo is not None:
            self._echo(self.decoder.decode(b"", final=True), final=True)

    def _echo(self, text: str, final: bool = False) -> None:
        if "\n" in text:
            *lines, self.partial = (self.partial + text).split("\n")
            self.searched, self.retry_at = 0, 0
        else:  # the line goes on: only the new text is new (a long line costs linear time)
            lines, self.partial = [], self.partial + text
        out = [self.redactor.line(line + "\n") for line in lines]
        if final and self.partial:
            out.append(self.redactor.line(self.partial))
            self.partial = ""
        elif len(self.partial) > ECHO_LINE_LIMIT:
            out.append(self._safe_piece())
        try:
            for piece in out:
                if piece:
                    self.echo.write(piece)  # type: ignore[union-attr]
            self.echo.flush()  # type: ignore[union-attr]
        except (OSError, ValueError):
            self.echo = None  # a closed echo stream must not break the run

    def _safe_piece(self) -> str:
        """Redacted start of an over-long line that can be shown now ("" to keep holding)."""
        held, secrets = self.partial, self.redactor.secrets
        end = len(held) - self.hold
        if len(held) >= self.retry_at:
            whole = None
            cut = end
            for _ in range(4):
                cut = max(held.rfind(sep, self.searched, cut) for sep in " \t,;") + 1
                if cut <= 0:
                    break
                whole = redact(held, secrets) if whole is None else whole
                if cut_is_clean(held, cut, secrets, whole):
                    self.partial, self.searched, self.retry_at = held[cut:], 0, 0
                    return self.redactor.line(held[:cut])
                cut -= 1
            # a later read searches only the new text (a long line costs linear time) ...
            self.searched = max(self.searched, end)
            if whole is not None:  # ... and, after redacting all held in vain, a MiB later
                self.retry_at = len(held) + ECHO_LINE_LIMIT
        if len(held) > ECHO_WITHHOLD_LIMIT:  # no clean cut in sight: never show it
            self.partial, self.searched, self.retry_at = "", 0, 0
            return f"[REDACTED: {len(held)} characters of one output line not echoed]"
        return ""

    def text(self) -> tuple[str, bool]:
        if not self.dropped:
            return bytes(self.head).decode("utf-8", errors="replace"), False
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        return decoder.decode(bytes(self.head), final=False), True  # no torn last character
