"""Values on the lines after their key (pure; SPEC §7.5).

A key whose last word is a credential word may end its line, its value on the next line(s): a
YAML plain scalar or block scalar, or the first word of the next line. Which lines are taken
for the value, and which are deliberately left, is listed with the other rules in the
docstring of :mod:`.redact_rules`; here is how they are found in a whole text
(:func:`_redact_next_lines`) and line by line (:func:`_carry_after`, :func:`_carried`, which
:class:`~specdojo_routine.core.redact_stream.LineRedactor` uses too).
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

from specdojo_routine.core.redact_rules import (
    _BLANK,
    _BLANK_CHARACTERS,
    _BLOCK,
    _NAME_ENDINGS,
    _OPTION_WORD,
    _SEP,
    REDACTED,
    _looks_like_a_secret,
    _lower_in_place,
    names_a_credential,
)


class _LinePatterns(NamedTuple):
    line_ends: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...]
    key_ending_line: re.Pattern[str]
    no_value: re.Pattern[str]
    word: re.Pattern[str]


@functools.cache
def _line_patterns() -> _LinePatterns:
    """The patterns of a key ending its line and of the lines below it, compiled on first
    use: start-up that a command which redacts nothing (`list`, `validate`) would pay."""
    return _LinePatterns(
        # the same words ending a line, after blanks a separator, a block indicator or a ``\``
        # (also after a separator: a quote left open, a ``\``, a comment)
        line_ends=tuple(
            (hints, re.compile(
                rf"""({hints[0]}{rest})["']?{_BLANK}*(?:{_SEP}{_BLANK}*(?:{_BLOCK}{_BLANK}*"""
                rf"""|["'\\]{_BLANK}*|#.*)?|\\{_BLANK}*)?\r?$""", re.M))
            for hints, rest in _NAME_ENDINGS
        ),
        # a key and its separator ending a line, with a block indicator (group 3), or what
        # says the value is below: a quote left open, a ``\`` (group 4), a comment after a
        # blank
        key_ending_line=re.compile(
            rf"""(?<![A-Za-z0-9_.])(["']?)([A-Za-z][A-Za-z0-9_.-]*)\1{_BLANK}*{_SEP}{_BLANK}*"""
            rf"""(?:({_BLOCK})|["']|(\\)|(?<=[{_BLANK_CHARACTERS}])#.*)?{_BLANK}*\Z"""
        ),
        # what opens a line below a key that is no value: a list item, a comment, the next key
        no_value=re.compile(
            rf"""-(?:{_BLANK}|\r?\Z)|#|["']?[A-Za-z_][A-Za-z0-9_.-]*["']?{_BLANK}*"""
            rf"""(?:[:\uff1a](?:{_BLANK}|\r?\Z)|[=\uff1d](?![=\uff1d]|\r?\Z))"""
        ),
        word=re.compile(r"[^\s,;]+"),
    )


class _Carry(NamedTuple):
    """What a line ending with a credential key leaves to the lines after it."""

    kind: str  # "yaml", "block", "word" or "any" (see _carried)
    indent: int  # the indentation of the key's line


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(_BLANK_CHARACTERS))


def _carry_after(line: str, indent: int) -> _Carry | None:
    """What ``line`` (indented by ``indent``) leaves to the next: a key whose last word is a
    credential word ending it with a separator (``password:``, ``token =``: "yaml"), also with
    a block indicator (``private_key: |``: "block"), or an option ending it (``--password``:
    "word"), also before a ``\\`` (a command going on on the next line: "any")."""
    end = line.rstrip(_BLANK_CHARACTERS + "\r")
    if not end:
        return None
    if end[-1] in ":=\uff1a\uff1d'\"\\" or "|" in end[-3:] or ">" in end[-3:] or "#" in end:
        # (in the line's last 256 characters: no key is longer, and a long line of names
        # with a character no name holds before the end would cost each name start a scan)
        key = _line_patterns().key_ending_line.search(end[-256:])
        if key is not None:
            kind = "block" if key[3] else "any" if key[4] else "yaml"
            return _Carry(kind, indent) if names_a_credential(key[2]) else None
    if "-" not in end:
        return None
    words = end.rsplit(None, 2)
    kind = "word"
    if words[-1] == "\\":
        kind, words = "any", words[:-1]
    option = _OPTION_WORD.fullmatch(words[-1].lstrip("\"'")) if words else None
    return _Carry(kind, indent) if option and names_a_credential(option[1]) else None


def _carried(line: str, carry: _Carry) -> tuple[str, _Carry | None, bool]:
    """``line`` with the value that ``carry`` says it holds redacted, the carry for the line
    after it, and whether the line was redacted whole.

    A blank line holds nothing and passes the carry on. Below a "yaml" key, a line indented
    more than the key's is its value (a YAML plain scalar), and so are the lines after it
    indented as much ("block"), each redacted whole; not a list item, a comment or a key
    (``- x``, ``# x``, ``min_length: 8``: the key holds a mapping). Otherwise the line's first
    word is the value after an option and a ``\\`` ("any"), and after an option or a "yaml"
    key is taken for it only if it looks like a secret (``Done.`` or ``The password to use``
    are no value), never if it starts with a dash (another option) or is the next key."""
    start = _indent(line)
    cr = "\r" if line.endswith("\r") else ""
    if start >= len(line) - len(cr):
        return line, carry, False
    patterns = _line_patterns()
    if carry.kind == "block" or (carry.kind == "yaml" and start > carry.indent
                                 and not patterns.no_value.match(line, start)):
        if start > carry.indent:
            return line[:start] + REDACTED + cr, _Carry("block", carry.indent), True
        return line, None, False
    word = patterns.word.match(line, start)
    if (word is None or word[0].startswith("-") or patterns.no_value.match(line, start)
            or (carry.kind != "any" and not _looks_like_a_secret(word[0]))):
        return line, None, False
    return line[:start] + REDACTED + line[word.end() :], None, False


def _redact_next_lines(text: str) -> str:
    """``text`` (redacted but for this) with the values on the lines after their keys
    redacted (:func:`_carried`). The keys ending a line are found from their ends in lower-case
    text, as :func:`_bare_keys` finds its keys."""
    lowered = _lower_in_place(text)
    ends: set[int] = set()
    for hints, pattern in _line_patterns().line_ends:
        if all(hint in lowered for hint in hints):
            ends.update(found.end() for found in pattern.finditer(lowered))
    out: list[str] = []
    pos = done = 0
    for end in sorted(ends):
        if end <= done:
            continue
        start = text.rfind("\n", 0, end) + 1
        carry = _carry_after(text[start:end], _indent(text[start:end]))
        while carry is not None and end < len(text):
            start = end + 1
            end = text.find("\n", start)
            end = len(text) if end < 0 else end
            line = text[start:end]
            shown, carry, _ = _carried(line, carry)
            if shown != line:
                out += [text[pos:start], shown]
                pos = end
            if carry is None:
                carry = _carry_after(shown, _indent(shown))
        done = end
    return "".join(out) + text[pos:]
