"""The restricted template language of Job Definitions and routine inputs (pure).

A placeholder is ``{{ name }}`` or ``{{ name | filter }}``; a name is a dotted path
(``inputs.period``, ``checkpoint.revision``). Nothing else is evaluated: no code, no environment.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import attrs

from .timeutil import format_ms, to_utc

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


# --- values ----------------------------------------------------------------------------------


def iso_week(instant: datetime, timezone: str | None) -> str:
    """The ISO week (``2026-W32``) of ``instant`` in ``timezone`` (UTC when ``None``)."""
    try:
        zone = ZoneInfo(timezone) if timezone else UTC
    except (ZoneInfoNotFoundError, ValueError):
        raise TemplateError(f"unknown timezone {timezone!r}", 0) from None
    year, week, _ = to_utc(instant).astimezone(zone).isocalendar()
    return f"{year:04d}-W{week:02d}"


def _substitute(template: str, replace: Callable[[str, Placeholder], str]) -> str:
    """``template`` with each placeholder replaced by ``replace(text_before_it, placeholder)``."""
    out: list[str] = []
    last = 0
    for ph in find_placeholders(template):
        literal = template[last : ph.start]
        out += [literal, replace(literal, ph)]
        last = ph.end
    return "".join(out) + template[last:]


def _routine_value(
    key: str, scheduled_for: datetime, timezone: str | None, _: str, ph: Placeholder
) -> str:
    if ph.name != "scheduled_at" or ph.filter not in (None, "iso_week"):
        raise TemplateError(
            f"routine input {key}: unknown template value {{{{{ph.expression}}}}} "
            "(use {{scheduled_at}} or {{scheduled_at | iso_week}})",
            ph.start,
        )
    return iso_week(scheduled_for, timezone) if ph.filter else format_ms(scheduled_for)


def render_routine_inputs(
    inputs: Mapping[str, str], *, scheduled_for: datetime, timezone: str | None
) -> dict[str, str]:
    """Render a routine's job ``inputs``: only ``{{scheduled_at}}`` and its ``iso_week``."""
    rendered: dict[str, str] = {}
    for key, template in inputs.items():
        value = functools.partial(_routine_value, key, scheduled_for, timezone)
        rendered[key] = _substitute(template, value)
    return rendered


def _lookup(ph: Placeholder, values: Mapping[str, str], empty_if_missing: frozenset[str]) -> str:
    if ph.filter is not None:
        raise TemplateError(f"unknown template filter {{{{{ph.expression}}}}}", ph.start)
    value = values.get(ph.name)
    if value is not None:
        return value
    if ph.root in empty_if_missing and "." in ph.name:
        return ""
    if ph.name == "job_run_id":
        raise TemplateError(
            "template value job_run_id is unavailable before the Job Run identity exists", ph.start
        )
    raise TemplateError(f"unknown template value {{{{{ph.name}}}}}", ph.start)


def render_text(
    template: str, values: Mapping[str, str], *, empty_if_missing: frozenset[str] = frozenset()
) -> str:
    """Plain substitution (idempotency keys, checkpoint values, descriptions).

    ``values`` is keyed by full name (``inputs.period``). A missing name is a
    :class:`TemplateError`, except dotted names under a root in ``empty_if_missing``
    (e.g. ``{"inputs", "checkpoint"}``: an optional input or a first-run checkpoint), which
    render as ``""`` like the upstream tool.
    """
    return _substitute(template, lambda _, ph: _lookup(ph, values, empty_if_missing))


def _scalar(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list | tuple):
        return ",".join(_scalar(item) for item in value)
    return str(value)


def _flatten(prefix: str, value: object, out: dict[str, str]) -> None:
    if isinstance(value, Mapping):
        for key, item in value.items():
            _flatten(f"{prefix}.{key}", item, out)
    else:
        out[prefix] = _scalar(value)


def job_context(
    *,
    job_id: str,
    project_id: str,
    specdojo: str,
    scheduled_at: str,
    inputs: Mapping[str, object],
    checkpoint: Mapping[str, object] | None,
    job_run_id: str | None,
) -> dict[str, str]:
    """The template values of a Job, keyed by full name (``inputs.period``, ``checkpoint.a.b``).

    Lists are joined with ``,``; booleans are ``true``/``false``; ``None`` is ``""``; nested
    mappings are reachable by dotted path. ``job_run_id`` is absent while it is ``None``.
    """
    out = {
        "job_id": job_id,
        "project_id": project_id,
        "specdojo": specdojo,
        "scheduled_at": scheduled_at,
    }
    _flatten("inputs", inputs, out)
    _flatten("checkpoint", checkpoint or {}, out)
    if job_run_id is not None:
        out["job_run_id"] = job_run_id
    return out


# --- shell templates -------------------------------------------------------------------------
# A placeholder in task.command / precondition.command reaches /bin/sh as data: the scanner
# below tracks the POSIX quoting state of the literal text before each placeholder, and the
# value is inserted so that the shell reads exactly the value, as part of the current word.
# Where the state cannot be known for sure, rendering refuses instead of guessing.

_DQ_SPECIAL = re.compile(r'[$`"\\]')
_HEREDOC_OP = re.compile(r"<<(-?)[ \t]*")
_HEREDOC_WORD = re.compile(r"""(?:[^\s;&|<>()'"\\]|'[^']*'|"(?:[^"\\]|\\.)*"|\\.)+""")
_UNQUOTE = re.compile(r"""\\(.)|['"]""")
_INSIDE = {
    "heredoc": "a here-document body (pass the value as an argument instead)",
    "param": "a ${...} expansion",
    "arith": "an arithmetic expansion $((...))",
}


@attrs.define
class _Frame:
    kind: str  # top | cmdsub | backtick | sq | dq | param | arith | comment | heredoc
    depth: int = 0  # open parentheses inside $( ) and $(( ))
    strip_tabs: bool = False  # here-document of `<<-`
    delimiter: str = ""  # here-document delimiter


def _single_quoted(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"


class _ShellScanner:
    """The quoting state of a shell template, fed the literal text between placeholders."""

    def __init__(self) -> None:
        self.stack = [_Frame("top")]
        self.word_start = True  # the next character starts a word (so `#` starts a comment)
        self.word = ""  # the current unquoted word, to spot `case` inside $( )
        self.pending: list[_Frame] = []  # here-documents whose body starts at the next newline
        self.line = ""  # the current here-document body line
        self.hazard: str | None = None  # what the next placeholder would directly follow
        self.uncertain: str | None = None  # the state may be wrong from here on

    @property
    def top(self) -> _Frame:
        return self.stack[-1]

    def _ticks(self) -> int:
        return sum(frame.kind == "backtick" for frame in self.stack)

    def _push(self, kind: str) -> None:
        self.stack.append(_Frame(kind))
        self.word_start, self.word = kind in ("cmdsub", "backtick"), ""

    def _pop(self) -> None:
        self.stack.pop()
        self.word_start, self.word = False, "\0"

    def feed(self, text: str) -> None:
        self.hazard = None
        i = 0
        while i < len(text):
            if text[i] == "`" and self.top.kind != "backtick" and self._ticks():
                self.uncertain = "a backquote nested inside `...` (use $( ) instead)"
            i = self._step(text, i)

    def _step(self, text: str, i: int) -> int:
        kind, c = self.top.kind, text[i]
        if kind == "sq":
            if c == "'":
                self._pop()
            return i + 1
        if kind == "comment":
            if c == "\n":
                self.stack.pop()
                return i  # the newline also ends the line for the frame below
            return i + 1
        if kind == "heredoc":
            return self._heredoc_body(c, i)
        if c == "\\":
            return self._escape(text, i)
        if c == "$":
            return self._dollar(text, i)
        if kind == "dq":
            if c in '"`':
                self._pop() if c == '"' else self._push("backtick")
            return i + 1
        if kind in ("param", "arith"):
            return self._nested(text, i)
        return self._bare(text, i)

    def _escape(self, text: str, i: int) -> int:
        if i + 1 >= len(text):
            self.hazard = "a backslash"
            return i + 1
        nxt, kinds = text[i + 1], [frame.kind for frame in self.stack]
        if "backtick" in kinds and (
            nxt == "`" or (nxt == '"' and "dq" in kinds[: kinds.index("backtick")])
        ):
            self.uncertain = f"an escaped {nxt} inside `...` (use $( ) instead)"
        self.word_start, self.word = False, "\0"
        return i + 2

    def _dollar(self, text: str, i: int) -> int:
        nxt = text[i + 1 : i + 2]
        self.word_start, self.word = False, "\0"
        if not nxt:
            self.hazard = "'$'"
            return i + 1
        if text.startswith("$((", i):
            self._push("arith")
            return i + 3
        if nxt in "({":
            self._push("cmdsub" if nxt == "(" else "param")
            return i + 2
        if nxt == "'" and self.top.kind != "dq":
            self.uncertain = "a $'...' string"
        return i + 1

    def _nested(self, text: str, i: int) -> int:
        c, frame = text[i], self.top
        if c == "`":
            self._push("backtick")
        elif c == '"':
            self._push("dq")
        elif c == "'" and frame.kind == "param":
            if any(f.kind == "dq" for f in self.stack):
                self.uncertain = 'a single quote inside "${...}"'
            self._push("sq")
        elif c == "}" and frame.kind == "param":
            self._pop()
        elif c == "(" and frame.kind == "arith":
            frame.depth += 1
        elif c == ")" and frame.kind == "arith":
            if frame.depth:
                frame.depth -= 1
            else:
                self._pop()
                return i + 2 if text[i + 1 : i + 2] == ")" else i + 1
        return i + 1

    def _bare(self, text: str, i: int) -> int:
        c, frame = text[i], self.top
        if c in "'\"":
            self._push("sq" if c == "'" else "dq")
        elif c == "`":
            self._pop() if frame.kind == "backtick" else self._push("backtick")
        elif c == "#" and self.word_start:
            self.stack.append(_Frame("comment"))
        elif text.startswith("<<", i):
            return self._heredoc_op(text, i)
        elif c == ")" and frame.kind == "cmdsub" and not frame.depth:
            self._end_word()
            self._pop()
        elif c in " \t\n;&|()<>":
            self._end_word()
            if frame.kind == "cmdsub" and c in "()":
                frame.depth += 1 if c == "(" else -1
            self.word_start = True
            if c == "\n" and self.pending:
                self.stack.append(self.pending.pop(0))
        else:
            self.word_start = False
            self.word += c
        return i + 1

    def _end_word(self) -> None:
        if self.word == "case" and self._ticks() + sum(f.kind == "cmdsub" for f in self.stack):
            self.uncertain = "a case statement inside $( ) or `...`"
        self.word = ""

    def _heredoc_op(self, text: str, i: int) -> int:
        if text.startswith("<<<", i):
            return i + 3
        op = _HEREDOC_OP.match(text, i)
        assert op is not None
        word = _HEREDOC_WORD.match(text, op.end())
        if word is None or word.end() == len(text):
            self.uncertain = "a here-document operator without a literal delimiter"
            return op.end()
        delimiter = _UNQUOTE.sub(lambda m: m.group(1) or "", word[0])
        self.pending.append(_Frame("heredoc", strip_tabs=op[1] == "-", delimiter=delimiter))
        self.word_start = False
        return word.end()

    def _heredoc_body(self, c: str, i: int) -> int:
        if c != "\n":
            self.line += c
            return i + 1
        frame = self.top
        line = self.line.lstrip("\t") if frame.strip_tabs else self.line
        self.line = ""
        if line == frame.delimiter:
            self.stack.pop()
            if self.pending:
                self.stack.append(self.pending.pop(0))
        return i + 1

    def insert(self, ph: Placeholder, value: str, trusted: bool) -> str:
        """The text to put in place of ``ph`` so that the shell reads exactly ``value``."""
        where = self.uncertain or self.hazard or _INSIDE.get(self.top.kind)
        if where is not None:
            verb = "after" if self.uncertain else "right after" if self.hazard else "inside"
            raise TemplateError(
                f"placeholder {{{{{ph.expression}}}}} cannot be used safely {verb} {where}",
                ph.start,
            )
        kind = self.top.kind
        if kind == "comment":
            text = value.replace("\r", " ").replace("\n", " ")
        elif kind == "sq":
            text = value.replace("'", "'\\''")
        elif kind == "dq":
            text = f'"{_single_quoted(value)}"' if _DQ_SPECIAL.search(value) else value
        else:
            text = value if trusted else _single_quoted(value)
            self.word_start, self.word = False, "\0"
        if self._ticks():
            text = text.replace("\\", "\\\\").replace("`", "\\`").replace("$", "\\$")
        return text

    def finish(self) -> None:
        if self.top.kind not in ("top", "comment", "heredoc"):
            names = {"sq": "single quote", "dq": "double quote", "backtick": "backquote"}
            what = names.get(self.top.kind, self.top.kind.replace("cmdsub", "$("))
            raise TemplateError(f"unterminated {what} in shell command", 0)


def render_shell(
    template: str,
    values: Mapping[str, str],
    *,
    trusted: frozenset[str] = frozenset({"specdojo"}),
    empty_if_missing: frozenset[str] = frozenset(),
) -> str:
    """Render ``task.command`` / ``precondition.command``: every value reaches the shell as data.

    Each placeholder expands to exactly its value, as part of one word, whether it stands bare,
    inside double quotes or inside single quotes. Names in ``trusted`` (``{{specdojo}}``, the
    CLI prefix, already shell-quoted) are inserted verbatim as words when they stand bare.
    Raises :class:`TemplateError` for a placeholder whose quoting context is unsafe or unknown
    (here-document bodies, ``${...}``, ``$((...))``, right after ``\\`` or ``$``) and for a
    command with an unterminated quote or substitution.
    """
    scanner = _ShellScanner()

    def insert(literal: str, ph: Placeholder) -> str:
        scanner.feed(literal)
        return scanner.insert(ph, _lookup(ph, values, empty_if_missing), ph.name in trusted)

    rendered = _substitute(template, insert)
    found = find_placeholders(template)
    scanner.feed(template[found[-1].end :] if found else template)
    scanner.finish()
    return rendered


def check_shell_template(template: str) -> None:
    """Raise :class:`TemplateError` if ``template`` cannot be rendered safely by render_shell."""
    names = {ph.name: "x" for ph in find_placeholders(template)}
    render_shell(template, names)
