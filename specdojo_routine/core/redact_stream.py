"""Redaction of a stream that arrives in pieces (pure; SPEC §7.5).

The console echoes the output of what a routine runs as it comes, and must show what the
evidence keeps (:func:`.redact.redact` over the whole text): a line is redacted as it arrives
(:class:`LineRedactor`, which carries a PEM private key block, and a key's value on the next
line, from one line to the next), and a long line is shown in pieces only where
:func:`cut_is_clean` says no redaction spans the cut.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from specdojo_routine.core.redact import _redact, redact
from specdojo_routine.core.redact_lines import _carried, _Carry, _carry_after
from specdojo_routine.core.redact_rules import _BLANK_CHARACTERS, _SEP, REDACTED, _shapes

# What may stand between a credential key (or ``Bearer``) and its value: blanks, a ``:``/``=``
# and (the start of) a scheme word such as ``Basic``. A tail of nothing else may be followed by
# the value of a key before it.
_BLANKS_TO_END = re.compile(rf"\s*(?:{_SEP}\s*)?(?:[A-Za-z]{{1,6}}\s*)?\Z")
_USERINFO_TO_END = re.compile(r"[^/\s]*")
# A separator, a value that looks like a secret, both closing quotes: appended to a head that
# ends with a key (with or without its ``:``/``=``, or with blanks only, ``Authorization Basic``
# too), with ``Bearer`` or inside a quoted value, it is redacted with what comes before it.
_PROBE = "=x0x0x0\"'"


def cut_is_clean(
    text: str, cut: int, secrets: Iterable[str] = (), whole: str | None = None
) -> bool:
    """Whether ``text[:cut]`` can be redacted and shown before its line is complete.

    ``text`` is what has arrived of a line, ``cut`` a position after a separator, and
    ``text[cut:]`` longer than any secret's (JSON-escaped) form and any PEM header. True when
    redacting ``text[:cut]`` and ``text[cut:]`` apart gives what redacting ``text`` gives, and
    no match can come to span the cut when more text follows: ``text[:cut]`` does not end with
    a key (with or without its ``:``/``=``) or ``Bearer``, whose value would follow the cut,
    nor inside a quoted value or ``user:password@``. Otherwise the text after the cut,
    redacted alone, could show a secret in clear. Comparing the two redactions is not enough
    by itself: ``token: ghp_...`` cut after the key redacts the same both ways, but the value
    may go on past what has arrived. ``whole`` is ``redact(text, secrets)``, if the caller
    has it.
    """
    secrets = tuple(secrets)
    head, tail = text[:cut], text[cut:]
    probed = redact(head + _PROBE, secrets)
    if not probed.endswith(_PROBE):
        return False  # what follows the cut is redacted with what comes before it
    # no match touched the probe, so the rest is redact(head) (one pass over head, not two)
    shown = probed[: -len(_PROBE)]
    if shown + redact(tail, secrets) != (redact(text, secrets) if whole is None else whole):
        return False  # a match spans the cut
    if _BLANKS_TO_END.match(tail):
        return False  # only blanks since a key in head: its value may still come
    if head[-1:] in (",", ";"):
        scheme = head.rfind("://")
        if scheme >= 0 and _USERINFO_TO_END.fullmatch(head, scheme + 3):
            return False  # inside ``user:password@`` whose ``@`` has not come
    return True


class LineRedactor:
    """Redacts a stream line by line, remembering when it is inside a PEM private key block."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.secrets = tuple(secrets)
        self.in_key = False
        self.carry: _Carry | None = None  # what the last line left to this one
        self.lead = ""  # blanks that opened this line, while nothing else has come
        self.indent: int | None = None  # this line's indentation, once known
        self.blanking = False  # the rest of this line is part of a value redacted whole

    def line(self, text: str) -> str:
        """The redacted form of one line (with or without its line ending), or of a piece of
        a long line: a text without a line ending is followed by the rest of its line."""
        body, ending = (text[:-1], "\n") if text.endswith("\n") else (text, "")
        shapes = _shapes()
        if self.in_key:
            end = shapes.pem_end_line.search(body)
            if end is None:
                return self._ended(REDACTED, ending)
            self.in_key = False
            body = REDACTED + body[end.end() :]
        begin = shapes.pem_begin_line.search(body)
        if begin is not None and shapes.pem_end_line.search(body, begin.end()) is None:
            self.in_key = True
        shown, named = _redact(body, self.secrets)
        lead = self.lead if self.indent is None else None  # None: not at the line's start
        if lead is not None:
            content = len(body.lstrip(_BLANK_CHARACTERS))
            if content:
                self.indent = len(lead) + len(body) - content
            else:
                self.lead += body
        if self.blanking:  # (the line's ``\r`` kept, as where the line is redacted whole)
            shown = "\r" if ending and body.endswith("\r") else ""
        elif self.carry is not None and lead is not None:
            shown, self.carry, self.blanking = _carried(lead + shown, self.carry)
            shown = shown[len(lead) :]
        if ending and self.carry is None and named:
            self.carry = _carry_after(shown, self.indent or 0)
        return self._ended(shown, ending)

    def _ended(self, shown: str, ending: str) -> str:
        if ending:
            self.lead, self.indent, self.blanking = "", None, False
        return shown + ending
