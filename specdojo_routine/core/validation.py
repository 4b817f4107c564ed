"""The checking machinery of definition files, shared by the rules of routines
(:mod:`.routine_rules`, SPEC §3) and of Job Definitions (:mod:`.job_rules`, SPEC §7.1,
§7.2).

A :class:`Node` is a loaded YAML value with its dotted label (``task.precondition``) and its
1-based position; a :class:`Report` collects the problems of one file. Checks report and carry
on, so every problem of a file is found. Sections: values, messages, checking machinery,
checks, template positions (the placeholder check itself is
:func:`specdojo_routine.core.templates.placeholders`, with the template language). Loading and
discovery are :mod:`specdojo_routine.store.definitions.load`'s.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, TypeGuard

from specdojo_routine.core.errors import Problem
from specdojo_routine.core.redact import redact

Pos = tuple[int, int]
# Integers are bounded like the upstream tool's (JavaScript "safe integers"), so every value
# round-trips through JSON on both sides.
MAX_SAFE_INTEGER = 2**53 - 1


# --- values ------------------------------------------------------------------------------------


def is_int(value: object) -> TypeGuard[int]:
    """An integer, not a boolean."""
    return isinstance(value, int) and not isinstance(value, bool)


def describe(value: object) -> str:
    """A short description of a value for a ``(got …)`` message suffix."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"' if len(value) <= 60 else f'"{value[:57]}..."'
    if isinstance(value, int):
        digits = str(value)
        return digits if len(digits) <= 30 else f"a {len(digits)}-digit number"
    if isinstance(value, float):
        return repr(float(value))
    if isinstance(value, list | tuple) and len(value) <= 5 and all(map(_scalar, value)):
        return "[" + ", ".join(describe(item) for item in value) + "]"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _scalar(value: object) -> bool:
    return value is None or isinstance(value, str | int | float)


def safe_int(value: object) -> bool:
    """An integer (not a boolean) that JSON carries exactly on both sides."""
    return is_int(value) and abs(value) <= MAX_SAFE_INTEGER


got = describe


# --- messages ----------------------------------------------------------------------------------


#: Why a NUL character is refused wherever a definition's text reaches a process (a command,
#: an argument, an input value), and what to do: one wording for every such message.
NO_NUL = "(no command can receive one: remove it)"


def one_line(message: str) -> str:
    """``message`` with control characters escaped, so that a problem is one line."""
    if message.isprintable():
        return message
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)


def shown(message: str) -> str:
    """A message as it may be shown - a problem, an error line: one line, and redacted (it may
    quote a file's text - a symlink to a key file, a literal ``--password=...`` - or a command
    line, and secrets never reach an error message, SPEC §7.5)."""
    return one_line(redact(message))


class Report:
    """The problems of one definition file, and its source lines (for template columns)."""

    def __init__(self, path: str, source: str = "") -> None:
        self.path = path
        self.lines = source.splitlines()
        self.problems: list[Problem] = []

    def error(self, pos: Pos, message: str) -> None:
        self.problems.append(
            Problem(path=self.path, line=pos[0], col=pos[1], message=shown(message))
        )

    def warn(self, pos: Pos, message: str) -> None:
        self.problems.append(Problem(
            path=self.path, line=pos[0], col=pos[1], message=shown(message), warning=True
        ))

    @property
    def failed(self) -> bool:
        return any(not p.warning for p in self.problems)


def _lc(container: Any, kind: str, key: object, fallback: Pos) -> Pos:
    """1-based position from ruamel's ``.lc`` (merged keys and fast-path data have none:
    ``fallback``)."""
    if type(container) is dict or type(container) is list:  # plain data: no positions
        return fallback
    try:
        line, col = getattr(container.lc, kind)(key)
    except (AttributeError, KeyError, IndexError, TypeError):
        return fallback
    return (int(line) + 1, int(col) + 1)


class Node:
    """A loaded YAML value, its label for messages, and where it and its key are (treat it as
    immutable). A plain slotted class: 10,000 files make ~250,000 of them, and an attrs class
    costs a third more per node."""

    __slots__ = ("key_pos", "label", "pos", "value")

    def __init__(
        self, value: Any, label: str = "", pos: Pos = (1, 1), key_pos: Pos = (1, 1)
    ) -> None:
        self.value = value
        self.label = label
        self.pos = pos
        self.key_pos = key_pos

    def __repr__(self) -> str:
        return (f"Node(value={self.value!r}, label={self.label!r}, pos={self.pos!r}, "
                f"key_pos={self.key_pos!r})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Node):
            return NotImplemented
        return (self.value, self.label, self.pos, self.key_pos) == (
            other.value, other.label, other.pos, other.key_pos)

    __hash__ = None  # type: ignore[assignment]  # mutable, like the attrs class it replaced

    def get(self, key: str) -> Node | None:
        value = self.value
        if type(value) is dict:  # plain data (the usual case, inlined): no positions
            if key not in value:
                return None
            return Node(value[key], f"{self.label}.{key}" if self.label else key, self.pos,
                        self.pos)
        if not isinstance(value, dict):
            return None
        return self.child(key) if key in value else None

    def child(self, key: object) -> Node:
        parent = self.value
        label = f"{self.label}.{key}" if self.label else str(key)
        if type(parent) is dict:  # plain (fast-path) data has no positions: the parent's
            return Node(parent[key], label, self.pos, self.pos)
        return Node(parent[key], label, _lc(parent, "value", key, self.pos),
                    _lc(parent, "key", key, self.pos))

    def entries(self) -> list[tuple[object, Node]]:
        """The (key, child) pairs of a mapping, in file order."""
        if not isinstance(self.value, dict):
            return []
        return [(key, self.child(key)) for key in self.value]

    def elements(self, label: Callable[[int], str] | None = None) -> list[Node]:
        """The items of a list; ``label(i)`` names item ``i`` (0-based) in messages."""
        items = self.value
        if not isinstance(items, list):
            return []
        if type(items) is list and label is None:  # plain data: no positions, one label
            here, name = self.pos, self.label
            return [Node(item, name, here, here) for item in items]
        out = []
        for i, item in enumerate(items):
            pos = _lc(items, "item", i, self.pos)
            out.append(Node(item, label(i) if label is not None else self.label, pos, pos))
        return out

    def where(self) -> Pos:
        """The value's position, or the key's for a missing (null) value."""
        return self.pos if self.value is not None else self.key_pos


def plain(value: Any) -> Any:
    """Loaded YAML as plain data: dict, list, str, int, float, bool, None."""
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(plain(k)): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    for kind in (str, int, float):
        if isinstance(value, kind):
            return kind(value)
    return value


# --- checks: each reports and returns the value, or None ---------------------------------------


def unknown_keys(r: Report, node: Node, allowed: Sequence[str], owner: str, hint: str = "") -> None:
    """Report the keys of ``node`` not in ``allowed`` as one sorted line, upstream's wording
    (``<field> has unknown key(s): a, b``), at the first of them, our detail appended."""
    unknown: list[tuple[str, Pos]] = []
    keys = node.value if isinstance(node.value, dict) else ()
    for key in keys:
        if key in allowed:
            continue
        child = node.child(key)
        if not isinstance(key, str | int | float | bool) or key is None:
            r.error(child.key_pos, f"{node.label or owner} has a key that is not a plain "
                                   "scalar (a mapping or list used as a key); use a string key")
            continue
        unknown.append((str(key), child.key_pos))
    if not unknown:
        return
    names = sorted(k for k, _pos in unknown)
    guesses = [(k, close_matches(k, list(allowed))) for k in names]
    more = "; ".join(f'did you mean "{c[0]}" for "{k}"?' if len(names) > 1 else
                     f'did you mean "{c[0]}"?' for k, c in guesses if c)
    more = more or hint or "allowed: " + ", ".join(allowed)
    r.error(unknown[0][1], f"{node.label or owner} has unknown key(s): {', '.join(names)} "
                           f"({more})")


def close_matches(word: str, choices: Sequence[str]) -> list[str]:
    """The choice closest to a misspelt ``word`` (at most one; none when nothing is close):
    the "did you mean" of a message. ``difflib`` is imported here, only for a bad file."""
    import difflib

    return difflib.get_close_matches(word, choices, n=1)


def mapping(r: Report, node: Node, what: str) -> bool:
    if isinstance(node.value, dict):
        return True
    r.error(node.where(), f"{node.label} must be a mapping{what} (got {got(node.value)})")
    return False


def required(r: Report, parent: Node, key: str, message: str = "") -> Node | None:
    """``parent[key]``, reporting ``<label>.<key> is required`` (at the parent) when absent."""
    child = parent.get(key)
    if child is None:
        label = f"{parent.label}.{key}" if parent.label else key
        r.error(parent.key_pos, message or f"{label} is required")
    return child


def text(r: Report, node: Node | None, *, nonempty: bool = False) -> str | None:
    if node is None:
        return None
    if not isinstance(node.value, str):
        r.error(node.where(), f"{node.label} must be a string (got {got(node.value)})")
        return None
    if nonempty and not node.value.strip():
        r.error(node.pos, f"{node.label} must not be empty")
        return None
    return str(node.value)


def flag(r: Report, node: Node | None) -> bool | None:
    if node is None:
        return None
    if not isinstance(node.value, bool):
        shown = got(node.value)
        r.error(node.where(), f"{node.label} must be a boolean (true or false, got {shown})")
        return None
    return bool(node.value)


def positive_int(r: Report, node: Node | None) -> int | None:
    if node is None:
        return None
    value = node.value
    if not safe_int(value) or value < 1:
        limit = f", at most {MAX_SAFE_INTEGER}" if is_int(value) and value > 1 else ""
        r.error(node.where(), f"{node.label} must be a positive integer (got {got(value)}{limit})")
        return None
    return int(value)


def _alternatives(allowed: Sequence[str]) -> str:
    """``a, b, or c`` (upstream's wording: ``policy.missed_run must be skip, latest, or all``)."""
    items = list(allowed)
    if len(items) <= 2:
        return " or ".join(items)
    return ", ".join(items[:-1]) + ", or " + items[-1]


def choice(
    r: Report, node: Node | None, allowed: Sequence[str], shown: str | None = None
) -> str | None:
    """``node``'s value when it is one of ``allowed``; else reported as ``<label> must be
    <shown>`` (default: the alternatives in words) plus what it got."""
    if node is None:
        return None
    if not isinstance(node.value, str) or node.value not in allowed:
        r.error(node.where(), f"{node.label} must be {shown or _alternatives(allowed)} "
                f"(got {got(node.value)})")
        return None
    return str(node.value)


def text_list(r: Report, node: Node | None) -> tuple[str, ...] | None:
    """A non-empty list of non-empty strings."""
    if node is None:
        return None
    if not isinstance(node.value, list) or not node.value:
        r.error(node.where(), f"{node.label} must be a non-empty list of strings "
                f"(got {got(node.value)})")
        return None
    if type(node.value) is list and all(type(v) is str and v for v in node.value):
        return tuple(node.value)  # plain data, all good (the usual case, without nodes)
    bad = [item for item in node.elements() if not isinstance(item.value, str) or not item.value]
    for item in bad:
        r.error(item.pos, f"{node.label} items must be non-empty strings (got {got(item.value)})")
    return None if bad else tuple(str(v) for v in node.value)


ROUTINE_ID = re.compile(r"rtn-[a-z0-9][a-z0-9-]*")
JOB_ID = re.compile(r"job-[a-z0-9][a-z0-9-]*")


def check_id(
    r: Report, root: Node, file_id: str, pattern: re.Pattern[str], shape: str
) -> str | None:
    """The ``id``: required, of the right shape, equal to the file name base."""
    node = required(r, root, "id", f'id is required (use "{file_id}", the file name base)')
    value = text(r, node, nonempty=True)
    if node is None or value is None:
        return None
    ok = bool(pattern.fullmatch(value))
    if not ok:
        r.error(node.pos, f'id "{value}" must match {shape} (lowercase letters, digits, hyphens)')
    if value != file_id:
        r.error(node.pos, f'id "{value}" must match the file name base "{file_id}"')
    return value if ok and value == file_id else None


# --- templates ---------------------------------------------------------------------------------


def template_pos(r: Report, node: Node, offset: int) -> Pos:
    """Where character ``offset`` of the string in ``node`` is: exact for a one-line plain or
    quoted scalar written without escapes and for a literal block (``|``), whose lines are the
    source lines after it, else the scalar's start."""
    line, col = node.pos
    value = node.value
    if not isinstance(value, str) or not 0 < line <= len(r.lines):
        return node.pos
    source = r.lines[line - 1]
    start = col - 1
    if source[start : start + 1] == "|":
        return _literal_block_pos(r.lines, line, value, offset) or node.pos
    if source[start : start + len(value)] == value:
        return (line, col + offset)
    quoted = source[start + 1 : start + 1 + len(value)] == value
    if source[start : start + 1] in ("'", '"') and quoted:
        return (line, col + 1 + offset)
    return node.pos


def _literal_block_pos(lines: list[str], line: int, value: str, offset: int) -> Pos | None:
    """``offset`` of ``value`` in the literal block scalar whose ``|`` is on ``line``; ``None``
    unless the source lines up to it read as the value (the content is not simply indented)."""
    index = value.count("\n", 0, offset)
    col = offset - value.rfind("\n", 0, offset) - 1
    block = lines[line : line + index + 1]
    first = next((text for text in block if text.strip()), "")
    indent = len(first) - len(first.lstrip(" "))
    wanted = value.split("\n")[: index + 1]
    if indent == 0 or len(block) != len(wanted) or any(
        text[indent:] != want for text, want in zip(block, wanted, strict=True)
    ):
        return None
    return (line + 1 + index, indent + 1 + col)
