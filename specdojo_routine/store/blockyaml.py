"""The plainest block YAML, recognised line by line: the first tier of :mod:`.fastyaml`.

Most definition files are a block mapping of ``key: value`` lines, nested mappings under a
``key:`` line, and lists of scalars (``- item`` lines or ``[a, b]``). :func:`read` reads exactly
such a file - ten times faster than even the C parser's event stream, which builds a Python
object per event - and gives up (``None``) at anything else, so the file goes on to the C parser
(:class:`.fastyaml.FastReader`) and, when that is not sure either, to the located slow path.

What it accepts, every line being one of:

- blank (spaces only) or a comment line (spaces, then ``#``);
- ``<indent><key>:`` followed by nothing or a comment: a nested block follows, more indented
  (a mapping or a list of ``- item`` lines), or the value is null;
- ``<indent><key>: <value>`` and ``<indent>- <value>``, a value being a plain scalar of a
  conservative character set (no ``:`` ``#`` ``,`` ``[`` ``]`` ``{`` ``}`` ``&`` ``*`` ``!``
  ``|`` ``>`` ``'`` ``"`` ``%`` ``@`` `````, starting with a letter, digit or one of
  ``_ . / ~ + $ ^ = (``, or ``-`` and a digit), a one-line quoted string without escapes, or a
  one-line flow list of those; optionally a comment after it.

Keys are ``[A-Za-z_][A-Za-z0-9_-]*`` and must type as strings; every plain scalar is typed by
the resolver the slow path uses, and only strings, null, booleans and plain decimal integers
are taken (as in :mod:`.fastyaml`). Indentation must be consistent, keys unique, nesting within
the slow path's depth limit; the text must hold no character :mod:`.fastyaml` doubts and no
carriage return. ``tests/test_fast_definitions.py`` holds it to the slow path (property tests).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

#: The only characters beyond ASCII a file this reader takes may hold (checked once per file,
#: :func:`_foreign`): so the line patterns can say "not ASCII" (a class re compiles at once)
#: where they mean these ranges (a class re compiles in ~1 ms, a Python loop per code point).
_NON_ASCII = "\u00c0-\u024f\u3040-\u30ff\u4e00-\u9fff"
_LETTER = r"[^\x00-\x7f]"  # = one of _NON_ASCII in a file _foreign passed
_PLAIN_START = rf"(?:[A-Za-z0-9_./~+$^=(]|{_LETTER}|-[0-9])"
_PLAIN_NONSPACE = rf"(?:[A-Za-z0-9_./~+$^=()-]|{_LETTER})"
_PLAIN = rf"{_PLAIN_START}(?: *{_PLAIN_NONSPACE})*"  # never ending in a space
_SINGLE = r"'(?:[^'\n]|'')*'"
_DOUBLE = r'"[^"\\\n]*"'
_ITEM = rf"(?:{_PLAIN}|{_SINGLE}|{_DOUBLE})"
_VALUE = rf"(?:{_ITEM}|\[ *(?:{_ITEM}(?: *, *{_ITEM})*)? *\])"
_TAIL = r"(?: +#.*)? *"
# indent, key (absent for a list item), `-` (a list item), value (absent after a bare `key:`;
# a list item without one is refused by the reader); the value pattern appears once
_LINE = re.compile(
    rf"( *)(?:([A-Za-z_][A-Za-z0-9_-]*):|(-)(?= ))(?: +({_VALUE}))?{_TAIL}"
)
_ITEMS = re.compile(rf"({_PLAIN}|{_SINGLE}|{_DOUBLE})")
_SKIPPED = re.compile(r" *(?:#.*)?")


@functools.cache  # compiled for the first file that is not ASCII
def _foreign() -> re.Pattern[str]:
    return re.compile(f"[^\\x00-\\x7f{_NON_ASCII}]")


class Unsure(Exception):
    """The recogniser is not sure it reads this text as the slow path does."""


def read(
    source: str, plain: Callable[[str], Any], max_depth: int
) -> dict[str, Any] | None:
    """The document as plain data, or None when it is not the plainest block YAML.

    ``plain(text)`` types a plain scalar (raising :class:`Unsure` for a type not taken)."""
    if "\r" in source or (not source.isascii() and _foreign().search(source)):
        return None
    try:
        return _read(source, plain, max_depth)
    except Unsure:
        return None


def _read(source: str, plain: Callable[[str], Any], max_depth: int) -> dict[str, Any] | None:
    root: dict[str, Any] = {}
    container: Any = root
    stack: list[tuple[int, Any]] = [(0, root)]  # (indent, container) of the open blocks
    at = 0  # the indentation of the innermost open block, `container`
    pending: str | None = None  # a `key:` of `container` awaiting its block
    line_of, skipped = _LINE.fullmatch, _SKIPPED.fullmatch
    for line in source.split("\n"):
        match = line_of(line)
        if match is None:
            if skipped(line):
                continue
            raise Unsure
        spaces, key, _, value = match.groups()
        indent = len(spaces)
        if pending is not None:
            if indent > at:
                if len(stack) >= max_depth:
                    raise Unsure
                block: Any = [] if key is None else {}
                container[pending] = block
                at, container = indent, block
                stack.append((at, container))
            pending = None  # else the value stays null
        if indent != at:
            while stack[-1][0] > indent:
                stack.pop()
            at, container = stack[-1]
            if at != indent:
                raise Unsure
        if key is None:
            if type(container) is not list or value is None:
                raise Unsure
            container.append(_value(value, plain))
        elif type(container) is not dict or key in container or type(plain(key)) is not str:
            raise Unsure
        elif value is None:
            pending = key
            container[key] = None  # the place of the key, in file order
        else:
            container[key] = _value(value, plain)
    return root if root else None


def _value(text: str, plain: Callable[[str], Any]) -> Any:
    first = text[0]
    if first == '"':
        return text[1:-1]
    if first == "'":
        return text[1:-1].replace("''", "'")
    if first == "[":
        return [_value(item, plain) for item in _ITEMS.findall(text)]
    return plain(text)
