"""The restricted template language of Job Definitions and routine inputs (pure).

A placeholder is ``{{ name }}`` or ``{{ name | filter }}``; a name is a dotted path
(``inputs.period``, ``checkpoint.revision``). Nothing else is evaluated: no code, no environment.
:func:`placeholders` is the check of a definition's template string, located in its file.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import attrs

from specdojo_routine.core.shellquote import ShellScanner
from specdojo_routine.core.timefmt import format_ms, to_utc
from specdojo_routine.core.validation import NO_NUL, Node, Report, template_pos

_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}", re.S)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_][A-Za-z0-9_-]*)*")


class TemplateError(ValueError):
    """A template is malformed; ``offset`` is the character offset of the problem."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


@attrs.frozen(kw_only=True, repr=False)
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


def template_text(value: object) -> str:
    """A value as a template renders it: lists joined with ``,``, booleans ``true``/``false``,
    ``None`` empty."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list | tuple):
        return ",".join(template_text(item) for item in value)
    return str(value)


def _flatten(prefix: str, value: object, out: dict[str, str]) -> None:
    if isinstance(value, Mapping):
        for key, item in value.items():
            _flatten(f"{prefix}.{key}", item, out)
    else:
        out[prefix] = template_text(value)


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
# A placeholder in task.command / precondition.command reaches /bin/sh as data: the scanner of
# :mod:`shellquote` tracks the POSIX quoting state of the literal text before each placeholder,
# and the value is inserted so that the shell reads exactly the value, as part of the current
# word. Where the state cannot be known for sure, rendering refuses instead of guessing.


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
    (here-document bodies, ``${...}``, ``$((...))``, right after ``\\`` or ``$``), for a
    command with an unterminated quote or substitution, and for a NUL character in the command
    or in a value: no process can receive one in its arguments.
    """
    if (nul := template.find("\0")) >= 0:
        raise TemplateError(f"a NUL character (\\0) is in the command {NO_NUL}", nul)
    scanner = ShellScanner()

    def insert(literal: str, ph: Placeholder) -> str:
        scanner.feed(literal)
        value = _lookup(ph, values, empty_if_missing)
        if "\0" in value:
            raise TemplateError(
                f"the value of {{{{{ph.expression}}}}} holds a NUL character (\\0) {NO_NUL}",
                ph.start)
        unsafe = scanner.unsafe()
        if unsafe is not None:
            raise TemplateError(
                f"placeholder {{{{{ph.expression}}}}} cannot be used safely {unsafe}", ph.start
            )
        return scanner.insert(value, ph.name in trusted)

    rendered = _substitute(template, insert)
    found = find_placeholders(template)
    scanner.feed(template[found[-1].end :] if found else template)
    unterminated = scanner.unterminated()
    if unterminated is not None:
        raise TemplateError(f"unterminated {unterminated} in shell command", 0)
    return rendered


def check_shell_template(template: str) -> None:
    """Raise :class:`TemplateError` if ``template`` cannot be rendered safely by render_shell."""
    names = {ph.name: "x" for ph in find_placeholders(template)}
    render_shell(template, names)


def inner_shell_placeholders(template: str) -> list[tuple[Placeholder, str]]:
    """The placeholders of a shell template (one :func:`check_shell_template` accepts) that
    stand in an argument a command runs as shell code again (``sh -c``, ``ssh``, ``eval``...),
    each with that command: quoting protects the outer shell only, so there the value is code
    to the inner one."""
    scanner = ShellScanner()
    found: list[tuple[Placeholder, str]] = []
    last = 0
    for ph in find_placeholders(template):
        scanner.feed(template[last : ph.start])
        command = scanner.inner_shell()
        if command is not None:
            found.append((ph, command))
        scanner.insert("x", ph.name == "specdojo")  # the state after a value, as rendered
        last = ph.end
    return found


# --- the check of a definition's template strings ---------------------------------------------


def placeholders(r: Report, node: Node) -> list[Placeholder]:
    """The placeholders of a template string; a syntax error is reported (and gives none)."""
    if not isinstance(node.value, str):
        return []
    try:
        return find_placeholders(node.value)
    except TemplateError as exc:
        r.error(template_pos(r, node, exc.offset), f"{node.label}: {exc.message}")
        return []
