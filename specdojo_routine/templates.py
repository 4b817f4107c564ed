"""The restricted template language of Job Definitions and routine inputs (pure).

A placeholder is ``{{ name }}`` or ``{{ name | filter }}``; a name is a dotted path
(``inputs.period``, ``checkpoint.revision``). Nothing else is evaluated: no code, no environment.
"""

from __future__ import annotations

import re

import attrs

_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}", re.S)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_][A-Za-z0-9_-]*)*")


class TemplateError(ValueError):
    """A template is malformed; ``offset`` is the character offset of the problem."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


@attrs.frozen(kw_only=True)
class Placeholder:
    name: str  # e.g. "inputs.period"
    filter: str | None  # e.g. "iso_week"
    start: int  # offset of "{{"
    end: int  # offset just past "}}"

    @property
    def root(self) -> str:
        """The first segment of the name (``inputs`` for ``inputs.period``)."""
        return self.name.split(".", 1)[0]

    @property
    def expression(self) -> str:
        return f"{self.name} | {self.filter}" if self.filter else self.name


def find_placeholders(text: str) -> list[Placeholder]:
    """Every placeholder in ``text``, in order. Raises :class:`TemplateError` on bad syntax."""
    found: list[Placeholder] = []
    for match in _PLACEHOLDER.finditer(text):
        body = match.group(1)
        name_part, _, filter_part = body.partition("|")
        name = name_part.strip()
        if not _NAME.fullmatch(name):
            raise TemplateError(f"invalid template expression {{{{{body}}}}}", match.start())
        flt = filter_part.strip() if "|" in body else None
        if flt is not None and not re.fullmatch(r"[a-z_]+", flt):
            raise TemplateError(f"invalid template filter {{{{{body}}}}}", match.start())
        found.append(Placeholder(name=name, filter=flt, start=match.start(), end=match.end()))
    unclosed = text.find("{{", found[-1].end if found else 0)
    if unclosed != -1:
        raise TemplateError("unclosed template placeholder '{{'", unclosed)
    return found
