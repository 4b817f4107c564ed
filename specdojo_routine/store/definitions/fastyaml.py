"""The fast path of definition loading: libyaml's C parser, for files with nothing to report.

:mod:`.safeyaml` reads a file with a located, round-trip parse (pure-Python ruamel):
exact, but slow for thousands of files. Most definition files are plain mappings of strings,
integers and booleans, so this module first reads them from the C parser's event stream (ruamel's
``ruamel.yaml.clibz``/``ruamel.yaml.clib`` extension) into plain Python data, and
gives up - returns ``None`` - at the first thing it is not *sure* the slow path reads the same
way:

- any explicit tag, anchor or alias, a ``%YAML``/``%TAG`` directive, more than one document;
- any scalar whose YAML 1.2 type (decided by the very resolver the slow path uses) is not a
  string, null, ``true``/``false`` or a plain decimal integer (floats, merge keys ``<<``, ...);
- a key that is not a string, or a duplicate key; nesting deeper than the slow path allows;
- a character that the slow path's reader refuses or that YAML 1.1 (libyaml) and 1.2 (ruamel)
  read differently (NEL, LINE/PARAGRAPH SEPARATOR, a BOM), and any tab (libyaml accepts tabs
  where ruamel refuses them), a document end marker ``...`` (libyaml skips a repeated one);
- a block scalar whose header, read from the text where its event starts, is other than
  ``|``/``>`` with chomping, indentation and a comment (libyaml takes ``|#``), or whose
  leading empty lines grow more indented after the first (ruamel refuses them, libyaml not);
- a quoted scalar with ``:`` right after it and no space after that (``["m":]``, ``["m":x]``:
  ruamel refuses the JSON-like key in a flow sequence, libyaml reads a mapping);
- any error of the C parser; a top-level value that is not a mapping.

A ``None`` sends the file down the slow path, which reports whatever there is to report, with
its positions; :mod:`.load` also re-reads a file slowly whenever the rules find a
problem in fast-path data (the rules need positions for their messages). So the fast path
changes speed only, never a message: ``tests/test_fast_definitions.py`` runs both paths over
every file of the bad-input corpus and over generated documents.

Without the C extension (``ruamel.yaml.clib``, a dependency where it has a wheel), or with
``SPECDOJO_ROUTINE_PURE_YAML=1``, every file takes the slow path.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
from typing import Any

from ruamel.yaml.events import (
    AliasEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.resolver import BaseResolver

from specdojo_routine.store.definitions.deffile import PURE_YAML

CParser: Any
try:
    CParser = importlib.import_module("ruamel.yaml.cyaml").CParser
except ImportError:  # the C extension is an optional extra of ruamel.yaml
    CParser = None

# what ruamel's reader accepts (its NON_PRINTABLE, inverted), minus tabs and what 1.1 and 1.2
# read differently
@functools.cache  # compiled for the first text that is not ASCII (its ranges are costly)
def _doubtful_character() -> re.Pattern[str]:
    return re.compile(
        "[^\x0a\x0d\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
        "|[\u2028\u2029\ufeff]"
    )


_DOUBTFUL_ASCII = re.compile("[\x00-\x09\x0b\x0c\x0e-\x1f\x7f]")  # the same, for ASCII text
_ESCAPED_SURROGATE = re.compile(r"\\(?:u|U0000)[dD][89abcdefABCDEF]")  # \ud800-\udfff
_DOCUMENT_END = re.compile(r"^\.\.\.", re.M)  # libyaml skips a repeated `...`; ruamel refuses it
_ADJACENT_VALUE = re.compile(r"[\"']:[^ \r\n]")  # `["m":]`: libyaml reads it, ruamel refuses it
# a block scalar's header line (from its indicator) and what ruamel accepts after the indicator
# (libyaml also takes `|#`); its leading empty lines, and the first one's indentation
_HEADER_LINE = re.compile(r"[|>]([^\n\r]*)(?:\r\n|\r|\n)?")
_GOOD_HEADER = re.compile(r"(?:[-+][1-9]?|[1-9][-+]?)?(?: +#.*)? *")
_EMPTY_LINE = re.compile(r"( *)(?:\r\n|\r|\n)")
_SPACES = re.compile(r" *")
_BLOCK_STYLES = ("|", ">")
_DECIMAL = re.compile(r"0|-?[1-9][0-9]{0,17}")
_STR, _NULL, _BOOL, _INT = (
    f"tag:yaml.org,2002:{name}" for name in ("str", "null", "bool", "int")
)
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False,
          "FALSE": False}
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_MAX_MEMO = 50_000


class _Unsure(Exception):
    """The fast path is not sure it reads this file as the slow path does."""


class FastReader:
    """Reads plain definition files through the C parser; see the module docstring."""

    def __init__(self, resolver: BaseResolver, max_depth: int) -> None:
        self._resolver = resolver
        self._max_depth = max_depth
        self._tags: dict[str, str] = {}  # plain scalar -> its implicit tag (values repeat)
        # the first characters for which the resolver has an implicit type: a plain scalar
        # starting with any other is a string, by the resolver's own lookup (resolve())
        table = getattr(resolver, "versioned_resolver", {})
        plain_only = None not in table and not getattr(resolver, "yaml_path_resolvers", True)
        self._typed_first = frozenset(k for k in table if k) if plain_only else None

    @staticmethod
    def available() -> bool:
        return CParser is not None and os.environ.get(PURE_YAML) != "1"

    def load(self, source: str) -> dict[str, Any] | None:
        """The document as plain data, or None when the slow path must read it."""
        doubtful = _DOUBTFUL_ASCII if source.isascii() else _doubtful_character()
        if CParser is None or doubtful.search(source):
            return None
        # each pattern below scans the whole text, and cannot match a text without "..." or
        # without "|" and ">" - which most definition files are
        if ("\\u" in source or "\\U" in source) and _ESCAPED_SURROGATE.search(source):
            return None  # not a character: the slow path reports where it is
        if "..." in source and _DOCUMENT_END.search(source):
            return None
        if ('":' in source or "':" in source) and _ADJACENT_VALUE.search(source):
            return None
        try:
            root = self._build(CParser(source), source)
        except _Unsure:
            return None
        except Exception:  # any complaint of libyaml: the slow path words it
            return None
        return root if type(root) is dict else None

    def _build(self, parser: Any, source: str) -> Any:
        """The document the events hold. An event's tag is read as ruamel keeps it (``ctag``,
        None without one): its ``tag`` property makes a string of it for every event."""
        stack: list[list[Any]] = []  # [container, pending key, key seen]
        root: Any = None
        documents = 0
        get, typed = parser.get_event, self._plain
        while (event := get()) is not None:
            kind = type(event)
            if kind is ScalarEvent:
                if event.ctag is not None or event.anchor is not None:
                    raise _Unsure
                plain, quoted = event.implicit
                if plain:
                    value = typed(event.value)
                elif quoted:  # a quoted or block scalar without a tag: a string
                    if event.style in _BLOCK_STYLES and not _block_alike(
                            source, event.start_mark.index):
                        raise _Unsure
                    value = event.value
                else:
                    raise _Unsure
            elif kind is MappingStartEvent or kind is SequenceStartEvent:
                if event.ctag is not None or event.anchor is not None:
                    raise _Unsure
                if len(stack) >= self._max_depth:
                    raise _Unsure
                stack.append([{} if kind is MappingStartEvent else [], None, False])
                continue
            elif kind is MappingEndEvent or kind is SequenceEndEvent:
                value = stack.pop()[0]
            elif kind is DocumentStartEvent:
                documents += 1
                if documents > 1 or event.version is not None or event.tags:
                    raise _Unsure
                continue
            elif kind is AliasEvent:
                raise _Unsure
            else:  # stream start/end, document end
                continue
            if not stack:
                root = value
            else:
                _add(stack[-1], value)
        return root

    def _plain(self, value: str) -> Any:
        """A plain scalar, typed by the slow path's resolver (only the types both read
        alike: strings, null, booleans, decimal integers)."""
        typed = self._typed_first
        if typed is not None and value and value[0] not in typed:
            return value
        tag = self._tags.get(value)
        if tag is None:
            tag = str(self._resolver.resolve(ScalarNode, value, (True, False)))
            if len(self._tags) < _MAX_MEMO:
                self._tags[value] = tag
        if tag == _STR:
            return value
        if tag == _NULL and value in _NULLS:
            return None
        if tag == _BOOL and value in _BOOLS:
            return _BOOLS[value]
        if tag == _INT and _DECIMAL.fullmatch(value):
            return int(value)
        raise _Unsure


def _block_alike(source: str, at: int) -> bool:
    """Whether the block scalar whose indicator is at ``at`` reads alike on both paths: a
    header ruamel accepts, and no leading empty line (nor the first content line) more indented
    than the first empty line when that one has spaces: ruamel refuses that ("more indented
    follow up line than first"), libyaml does not."""
    header = _HEADER_LINE.match(source, at)
    if header is None or not _GOOD_HEADER.fullmatch(header[1]):
        return False
    first, widest, pos = -1, 0, header.end()
    while (empty := _EMPTY_LINE.match(source, pos)) is not None:
        spaces = len(empty[1])
        first = spaces if first < 0 else first
        widest, pos = max(widest, spaces), empty.end()
    content = _SPACES.match(source, pos)  # the first content line's indentation
    widest = max(widest, content.end() - pos if content else 0)
    return not (first > 0 and widest > first)


def _add(frame: list[Any], value: Any) -> None:
    container = frame[0]
    if type(container) is list:
        container.append(value)
    elif frame[2]:
        container[frame[1]] = value
        frame[2] = False
    else:
        if type(value) is not str or value in container:
            raise _Unsure
        frame[1] = value
        frame[2] = True
