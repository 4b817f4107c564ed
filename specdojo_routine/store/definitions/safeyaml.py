"""The located slow path of definition loading: YAML 1.2 read safely, with positions.

Every file with something to report is read here (and every file, with
``SPECDOJO_ROUTINE_PURE_YAML=1``): first the event stream is scanned for what must stop a load
(non-core tags, duplicate keys, nesting deeper than ``MAX_DEPTH``, alias expansion beyond
``MAX_NODES`` values or ``MAX_CHARS`` characters, recursive aliases, a YAML version other than
1.2), then ruamel's round-trip constructor builds the data with line/column marks for the
messages. Both read the text with ruamel's plain scanner and parser, which skip comments: the
round-trip ones keep comments for writing a file back, which a definition never is, and they
refuse some valid files (a comment after ``key:`` before its value on the next line, a comment
line before a block scalar's header). The fast path is :mod:`.fastyaml`; :mod:`.load` chooses
between them.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import attrs
from ruamel.yaml import YAML
from ruamel.yaml.constructor import RoundTripConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    DocumentStartEvent,
    MappingStartEvent,
    NodeEvent,
    ScalarEvent,
)
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.parser import Parser
from ruamel.yaml.reader import ReaderError
from ruamel.yaml.scanner import Scanner

from specdojo_routine.core.validation import Report, got
from specdojo_routine.store.definitions.deffile import (
    MAX_CHARS,
    MAX_DEPTH,
    MAX_NODES,
    OUT_OF_MEMORY,
    read_text,
)
from specdojo_routine.store.definitions.yamlcore import RESOLVER, CoreResolver

_CORE_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "map", "seq")
)
class _CoreConstructor(RoundTripConstructor):
    """Round-trip loading, but an explicit ``!!str`` gives a plain string."""

    def construct_yaml_str(self, node: Any) -> Any:
        return self.construct_scalar(node)


_CoreConstructor.add_constructor("tag:yaml.org,2002:str", _CoreConstructor.construct_yaml_str)


_TYPED_SCALAR_TAGS = {  # explicit tag -> the implicit types its value may have
    f"tag:yaml.org,2002:{tag}": frozenset(f"tag:yaml.org,2002:{t}" for t in kinds)
    for tag, kinds in (("int", ["int"]), ("float", ["float", "int"]), ("bool", ["bool"]),
                       ("null", ["null"]))
}


def _yaml() -> YAML:
    """Round-trip construction (positions on every mapping and list) from the plain scanner and
    parser, which skip comments (see the module docstring)."""
    yaml = YAML(typ="rt", pure=True)
    yaml.Scanner = Scanner
    yaml.Parser = Parser
    yaml.Resolver = CoreResolver
    yaml.Constructor = _CoreConstructor
    return yaml


def read_definition(path: Path | str, rel: str, kind: str) -> tuple[Report, Any]:
    """Read one definition file safely: ``(report, mapping)``; mapping is None after problems."""
    report = Report(rel)
    source = read_text(path, report)
    if source is None:
        return report, None
    return _parse(source, rel, kind)


def _parse(source: str, rel: str, kind: str) -> tuple[Report, Any]:
    """The located slow path: scan the events for limits, then a round-trip load."""
    report = Report(rel, source)
    if not _scan(source, report):
        return report, None
    try:
        with warnings.catch_warnings():  # ruamel warns (on stderr) about re-defined anchors,
            warnings.simplefilter("ignore")  # which YAML 1.2 allows: not the user's problem
            data = _yaml().load(source)
    except MarkedYAMLError as exc:
        report.error(_mark_pos(exc), _yaml_message(exc))
        return report, None
    except MemoryError:  # what the scan's bounds let through: still this file's problem
        report.error((1, 1), OUT_OF_MEMORY)
        return report, None
    except Exception as exc:  # a constructor surprise is a problem of the file, not a crash
        detail = str(exc).strip().splitlines()[:1]  # never the class name: not the user's word
        report.error((1, 1), "YAML parse error: the document cannot be read as plain data"
                     + (f" ({detail[0]})" if detail else ""))
        return report, None
    if not isinstance(data, dict):
        found = "the file is empty" if data is None else f"found {got(data)}"
        report.error((1, 1), f"{kind} file must be a YAML mapping ({found})")
        return report, None
    return report, data


_SURROGATE = re.compile("[\ud800-\udfff]")  # only a \\u escape makes one


@attrs.define(repr=False)
class _Frame:
    mapping: bool
    anchor: str | None
    start: int  # values counted before this collection
    start_chars: int  # characters counted before it
    children: int = 0
    keys: set[str] = attrs.field(factory=set)


class _Fatal(Exception):
    """A problem after which scanning stops and the file is not loaded."""

    def __init__(self, pos: tuple[int, int], message: str) -> None:
        super().__init__(message)
        self.pos, self.message = pos, message


@attrs.define(repr=False)
class _Scan:
    """Checks YAML events before anything is built: tags, duplicate keys, nesting depth, alias
    expansion (in values and in characters) and recursion, the YAML version."""

    report: Report
    stack: list[_Frame] = attrs.field(factory=list)
    sizes: dict[str, tuple[int, int]] = attrs.field(factory=dict)  # anchor -> (values,
    # characters) it expands to
    nodes: int = 0  # values so far, aliases expanded
    chars: int = 0  # characters of scalars so far, aliases expanded
    blocking: bool = False  # a problem that must stop the load was found

    def event(self, event: Any) -> None:
        pos = _pos(event)
        if isinstance(event, DocumentStartEvent) and event.version not in (None, (1, 2)):
            # not blocking: the file is read as YAML 1.2 anyway, so go on finding problems
            self.report.error(pos, "only YAML 1.2 is supported; remove the %YAML directive")
        if isinstance(event, ScalarEvent) and (half := _SURROGATE.search(event.value)):
            # not a character: UTF-8 cannot encode it, so no ledger, digest or command can
            # hold it, and every later step (the digest first) would fail
            self.report.error(pos, f"\\u{ord(half[0]):04x} is half of a UTF-16 surrogate "
                              "pair, not a character: no file or command can hold it (write "
                              "the character itself, or its \\U escape: \\U0001F600, not "
                              "\\ud83d\\ude00)")
            self.blocking = True
        if isinstance(event, NodeEvent):
            self._check_tag(event, pos)
            self._check_key(event, pos)
            self._count(event, pos)
        if isinstance(event, CollectionEndEvent) and self.stack:
            frame = self.stack.pop()
            if frame.anchor is not None:
                self.sizes[frame.anchor] = (self.nodes - frame.start,
                                            self.chars - frame.start_chars)
        if self.nodes > MAX_NODES:
            raise _Fatal(pos, f"the document expands to more than {MAX_NODES} values (an "
                         "anchor/alias bomb?); a definition is small")
        if self.chars > MAX_CHARS:
            raise _Fatal(pos, f"the document expands to more than {MAX_CHARS} characters (an "
                         "anchor/alias bomb?); a definition is small")

    def _count(self, event: Any, pos: tuple[int, int]) -> None:
        anchor = None if event.anchor is None else str(event.anchor)
        if isinstance(event, AliasEvent):
            if any(frame.anchor == anchor for frame in self.stack):
                raise _Fatal(pos, f"alias *{anchor} is inside its own anchor (recursive data "
                             "is not allowed)")
            nodes, chars = self.sizes.get(str(anchor), (1, 0))
            self.nodes += nodes
            self.chars += chars
            return
        self.nodes += 1
        if isinstance(event, ScalarEvent):
            self.chars += len(event.value)
            if anchor is not None:
                self.sizes[anchor] = (1, len(event.value))
            return
        self.stack.append(_Frame(isinstance(event, MappingStartEvent), anchor, self.nodes - 1,
                                 self.chars))
        if len(self.stack) > MAX_DEPTH:
            raise _Fatal(pos, f"data is nested deeper than {MAX_DEPTH} levels")

    def _check_tag(self, event: Any, pos: tuple[int, int]) -> None:
        tag = getattr(event, "tag", None)
        if tag is None:
            return
        shown = str(tag).replace("tag:yaml.org,2002:", "!!")
        if str(tag) not in _CORE_TAGS:
            self.report.error(pos, f'YAML tag "{shown}" is not allowed; definitions are plain '
                              "data (strings, numbers, booleans, null, lists, mappings)")
            self.blocking = True
        elif isinstance(event, ScalarEvent) and str(tag) in _TYPED_SCALAR_TAGS:
            plain = str(RESOLVER.resolve(ScalarNode, event.value, (True, False)))
            if plain not in _TYPED_SCALAR_TAGS[str(tag)]:
                self.report.error(pos, f'"{event.value}" is not a valid {shown} value')
                self.blocking = True

    def _check_key(self, event: Any, pos: tuple[int, int]) -> None:
        if not self.stack:
            return
        frame = self.stack[-1]
        is_key = frame.mapping and frame.children % 2 == 0
        frame.children += 1
        if is_key and isinstance(event, ScalarEvent):
            key = f"{event.style is None}:{event.value}"  # `a` and `"a"`: ruamel's check
            if key in frame.keys:
                self.report.error(pos, f'duplicate key "{event.value}" (each key may appear '
                                  "once in a mapping)")
                self.blocking = True
            frame.keys.add(key)


def _scan(source: str, report: Report) -> bool:
    """Report what the event stream shows; False when the file must not be loaded."""
    scan = _Scan(report)
    try:
        for event in YAML(typ="safe", pure=True).parse(source):  # no comment tracking
            scan.event(event)
    except _Fatal as exc:
        report.error(exc.pos, exc.message)
        return False
    except MarkedYAMLError as exc:
        report.error(_mark_pos(exc), _yaml_message(exc))
        return False
    except ReaderError as exc:
        report.error(_offset_pos(source, exc.position), "YAML parse error: unacceptable "
                     f"character #x{exc.character:04x} ({exc.reason})")
        return False
    except YAMLError as exc:
        report.error((1, 1), f"YAML parse error: {exc}")
        return False
    return not scan.blocking


def _pos(event: Any) -> tuple[int, int]:
    mark = event.start_mark
    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)


def _mark_pos(exc: MarkedYAMLError) -> tuple[int, int]:
    mark = exc.problem_mark or exc.context_mark
    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)


def _offset_pos(source: str, offset: int) -> tuple[int, int]:
    before = source[:offset]
    return (before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1)


def _yaml_message(exc: MarkedYAMLError) -> str:
    problem = str(exc.problem or exc.context or "invalid YAML").strip()
    if problem.startswith("found duplicate key"):
        key = problem.split('"')[1] if problem.count('"') >= 2 else "?"
        return f'duplicate key "{key}" (each key may appear once in a mapping)'
    hint = " (indent with spaces, not tabs)" if "\\t" in problem else ""
    context = f"{exc.context}, " if exc.context and exc.problem else ""
    return f"YAML parse error: {context}{problem}{hint}"
