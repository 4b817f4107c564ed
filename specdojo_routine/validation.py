"""The rules of definition files: routines (SPEC §3) and Job Definitions (SPEC §7.1, §7.2).

A :class:`Node` is a loaded YAML value with its dotted label (``task.precondition``) and its
1-based position; a :class:`Report` collects the problems of one file. Checks report and carry
on, so every problem of a file is found. Sections: checking machinery, routines, Jobs, Job
templates. Loading and discovery are :mod:`.definitions`'.
"""

from __future__ import annotations

import difflib
import functools
import re
import zoneinfo
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import attrs

from . import model
from .errors import Problem
from .inputs import (
    INPUT_FIELDS,
    MAX_SAFE_INTEGER,
    build_input_spec,
    describe,
    is_int,
    parse_cli_value,
    safe_int,
)
from .schedule import cron_syntax_error, dom_dow_warning, interval_syntax_error, parse_interval
from .templates import Placeholder, TemplateError, find_placeholders

Pos = tuple[int, int]
got = describe


def one_line(message: str) -> str:
    """``message`` with control characters escaped, so that a problem is one line."""
    if message.isprintable():
        return message
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)


class Report:
    """The problems of one definition file, and its source lines (for template columns)."""

    def __init__(self, path: str, source: str = "") -> None:
        self.path = path
        self.lines = source.splitlines()
        self.problems: list[Problem] = []

    def error(self, pos: Pos, message: str) -> None:
        self.problems.append(
            Problem(path=self.path, line=pos[0], col=pos[1], message=one_line(message))
        )

    def warn(self, pos: Pos, message: str) -> None:
        self.problems.append(Problem(
            path=self.path, line=pos[0], col=pos[1], message=one_line(message), warning=True
        ))

    @property
    def failed(self) -> bool:
        return any(not p.warning for p in self.problems)


def _lc(container: Any, kind: str, key: object, fallback: Pos) -> Pos:
    """1-based position from ruamel's ``.lc`` (merged keys have none: ``fallback``)."""
    try:
        line, col = getattr(container.lc, kind)(key)
    except (AttributeError, KeyError, IndexError, TypeError):
        return fallback
    return (int(line) + 1, int(col) + 1)


@attrs.frozen(kw_only=True)
class Node:
    """A loaded YAML value, its label for messages, and where it and its key are."""

    value: Any
    label: str = ""
    pos: Pos = (1, 1)
    key_pos: Pos = (1, 1)

    def get(self, key: str) -> Node | None:
        if not isinstance(self.value, dict) or key not in self.value:
            return None
        return self.child(key)

    def child(self, key: object) -> Node:
        parent = self.value
        return Node(
            value=parent[key],
            label=f"{self.label}.{key}" if self.label else str(key),
            pos=_lc(parent, "value", key, self.pos),
            key_pos=_lc(parent, "key", key, self.pos),
        )

    def entries(self) -> list[tuple[object, Node]]:
        """The (key, child) pairs of a mapping, in file order."""
        if not isinstance(self.value, dict):
            return []
        return [(key, self.child(key)) for key in self.value]

    def elements(self, label: Callable[[int], str] | None = None) -> list[Node]:
        """The items of a list; ``label(i)`` names item ``i`` (0-based) in messages."""
        if not isinstance(self.value, list):
            return []
        out = []
        for i, item in enumerate(self.value):
            pos = _lc(self.value, "item", i, self.pos)
            name = label(i) if label is not None else self.label
            out.append(Node(value=item, label=name, pos=pos, key_pos=pos))
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
    """Report every key of ``node`` not in ``allowed``, at the key."""
    for key, child in node.entries():
        if key in allowed:
            continue
        close = difflib.get_close_matches(str(key), list(allowed), n=1)
        more = f'did you mean "{close[0]}"?' if close else hint or "allowed: " + ", ".join(allowed)
        r.error(child.key_pos, f'{node.label or owner} has unknown key "{key}" ({more})')


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


def choice(r: Report, node: Node | None, allowed: Sequence[str]) -> str | None:
    if node is None:
        return None
    if not isinstance(node.value, str) or node.value not in allowed:
        r.error(node.where(), f"{node.label} must be one of: {', '.join(allowed)} "
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
    quoted scalar written without escapes, else the scalar's start."""
    line, col = node.pos
    value = node.value
    if not isinstance(value, str) or not 0 < line <= len(r.lines):
        return node.pos
    source = r.lines[line - 1]
    start = col - 1
    if source[start : start + len(value)] == value:
        return (line, col + offset)
    quoted = source[start + 1 : start + 1 + len(value)] == value
    if source[start : start + 1] in ("'", '"') and quoted:
        return (line, col + 1 + offset)
    return node.pos


def placeholders(r: Report, node: Node) -> list[Placeholder]:
    """The placeholders of a template string; a syntax error is reported (and gives none)."""
    if not isinstance(node.value, str):
        return []
    try:
        return find_placeholders(node.value)
    except TemplateError as exc:
        r.error(template_pos(r, node, exc.offset), f"{node.label}: {exc.message}")
        return []


# --- routines (SPEC §3) ------------------------------------------------------------------------

ROUTINE_KEYS = ("id", "name", "description", "enabled", "trigger", "interval", "policy", "action")
_ACTION_KEYS: dict[str, tuple[str, ...]] = {
    "job": ("kind", "job", "inputs"),
    "specdojo": ("kind", "args"),
    "register": ("kind", "filter", "limit"),
    "exec-auto": ("kind", "strategy", "parallel", "loop", "max_rounds"),
    "exec-cycle": ("kind", "strategy", "parallel", "loop", "max_rounds"),
    "exec-resume": ("kind", "parallel"),
}
_FILTERS = (
    ("types", model.REGISTER_TYPES),
    ("priorities", model.REGISTER_PRIORITIES),
    ("statuses", model.REGISTER_STATUSES),
)


@attrs.frozen(kw_only=True)
class JobIndex:
    """What a routine's ``job:`` can name: valid Jobs, ids of invalid Job files, where to look."""

    valid: Mapping[str, model.JobDefinition] = attrs.field(factory=dict)
    invalid: frozenset[str] = frozenset()
    where: str = "jobs"


def build_routine(r: Report, root: Node, *, file_id: str, jobs: JobIndex) -> model.Routine | None:
    """The routine in ``root`` (a loaded ``rtn-*.yaml``), or None after reporting its problems."""
    unknown_keys(r, root, ROUTINE_KEYS, "routine")
    routine_id = check_id(r, root, file_id, ROUTINE_ID, "rtn-<slug>")
    name = text(r, root.get("name"))
    description = text(r, root.get("description"))
    enabled = flag(r, root.get("enabled"))
    trigger, interval = _schedule(r, root)
    policy = _policy(r, root.get("policy"))
    actions, is_list = _actions(r, root, jobs)
    if r.failed or routine_id is None or policy is None:
        return None
    return model.Routine(
        id=routine_id, path=r.path, digest="", name=name, description=description,
        enabled=enabled is not False, trigger=trigger, interval=interval, policy=policy,
        actions=actions, is_list=is_list,
    )


def _schedule(r: Report, root: Node) -> tuple[model.CronTrigger | None, model.Interval | None]:
    interval_node, trigger_node = root.get("interval"), root.get("trigger")
    if interval_node is not None and trigger_node is not None:
        second = max(interval_node.key_pos, trigger_node.key_pos)
        r.error(second, "specify either interval or trigger, not both")
    if interval_node is None and trigger_node is None:
        r.error((1, 1), 'interval or trigger is required (e.g. interval: 6h, or trigger: '
                '{cron: "0 17 * * 5", timezone: Asia/Tokyo})')
    interval = None
    if interval_node is not None:
        problem = interval_syntax_error(interval_node.value)
        if problem is not None:
            r.error(interval_node.where(), problem)
        else:
            seconds = parse_interval(interval_node.value)
            assert seconds is not None
            interval = model.Interval(text=str(interval_node.value), seconds=seconds)
    trigger = _trigger(r, trigger_node) if trigger_node is not None else None
    return trigger, interval


def _trigger(r: Report, node: Node) -> model.CronTrigger | None:
    if not mapping(r, node, " with cron and timezone"):
        return None
    unknown_keys(r, node, ("cron", "timezone"), "trigger")
    cron_node, zone_node = required(r, node, "cron"), required(r, node, "timezone")
    cron, zone = text(r, cron_node, nonempty=True), text(r, zone_node, nonempty=True)
    if cron is not None and cron_node is not None:
        problem = cron_syntax_error(cron)
        if problem is not None:
            r.error(cron_node.pos, problem)
            cron = None
        elif (warning := dom_dow_warning(cron)) is not None:
            r.warn(cron_node.pos, warning)
    if zone is not None and zone_node is not None and (problem := _zone_error(zone)):
        r.error(zone_node.pos, problem)
        zone = None
    return model.CronTrigger(cron=cron, timezone=zone) if cron and zone else None


def _zone_error(name: str) -> str | None:
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        close = difflib.get_close_matches(name, _zone_names(), n=1)
        hint = f'did you mean "{close[0]}"?' if close else "use an IANA name such as Asia/Tokyo"
        return f"Invalid trigger.timezone: {name} ({hint})"
    return None


@functools.cache
def _zone_names() -> list[str]:
    return sorted(zoneinfo.available_timezones())


def _policy(r: Report, node: Node | None) -> model.Policy | None:
    if node is None:
        return model.Policy()
    if not mapping(r, node, " (missed_run, overlap, on_interrupted)"):
        return None
    unknown_keys(r, node, ("missed_run", "overlap", "on_interrupted"), "policy")
    missed = choice(r, node.get("missed_run"), [m.value for m in model.MissedRun])
    overlap = choice(r, node.get("overlap"), ("skip",))
    resume = choice(r, node.get("on_interrupted"), [m.value for m in model.OnInterrupted])
    return model.Policy(
        missed_run=model.MissedRun(missed or "latest"),
        overlap=overlap or "skip",
        on_interrupted=model.OnInterrupted(resume or "review"),
    )


def _actions(r: Report, root: Node, jobs: JobIndex) -> tuple[tuple[model.Action, ...], bool]:
    node = root.get("action")
    if node is None:
        r.error((1, 1), "action is required (a mapping with kind, or a non-empty list of them)")
        return (), False
    if isinstance(node.value, list):
        if not node.value:
            r.error(node.pos, "action must be a mapping with kind or a non-empty list (got [])")
        items = node.elements(lambda i: f"action[{i + 1}]")
        built = [_action(r, item, jobs) for item in items]
        return tuple(a for a in built if a is not None), True
    one = _action(r, node, jobs)
    return ((one,) if one is not None else ()), False


def _action(r: Report, node: Node, jobs: JobIndex) -> model.Action | None:
    if not mapping(r, node, " with kind"):
        return None
    kind_node = node.get("kind")
    kind = kind_node.value if kind_node is not None else None
    if not isinstance(kind, str) or kind not in model.ACTION_KINDS:
        shown = got(kind) if kind_node is not None else "nothing"
        r.error(
            kind_node.where() if kind_node is not None else node.key_pos,
            f"{node.label}.kind must be one of: {', '.join(model.ACTION_KINDS)} (got {shown})",
        )
        return None
    allowed = _ACTION_KEYS[kind]
    unknown_keys(r, node, allowed, "action", hint=f"kind {kind} takes: {', '.join(allowed)}")
    if kind == "job":
        return _job_action(r, node, jobs)
    if kind == "specdojo":
        return _specdojo_action(r, node)
    if kind == "register":
        return _register_action(r, node)
    if kind == "exec-resume":
        return model.ExecResumeAction(parallel=positive_int(r, node.get("parallel")))
    return _exec_auto_action(r, node, kind)


def _specdojo_action(r: Report, node: Node) -> model.SpecdojoAction | None:
    args_node = required(r, node, "args")
    if args_node is None:
        return None
    args = text_list(r, args_node)
    for item in args_node.elements():
        word = item.value
        if word == "exec":
            r.error(item.pos, f'{args_node.label} must not contain "exec" '
                    "(use kind exec-auto, exec-resume or exec-cycle)")
        elif isinstance(word, str) and (word == "--project" or word.startswith("--project=")):
            r.error(item.pos, f'{args_node.label} must not contain "--project" '
                    "(the routine's project is appended)")
    return model.SpecdojoAction(args=args) if args else None


def _register_action(r: Report, node: Node) -> model.RegisterAction:
    chosen: dict[str, tuple[str, ...]] = {}
    filter_node = node.get("filter")
    if filter_node is not None and mapping(r, filter_node, " (types, priorities, statuses)"):
        unknown_keys(r, filter_node, [name for name, _ in _FILTERS], "filter")
        for name, allowed in _FILTERS:
            values = _filter_list(r, filter_node.get(name), allowed)
            if values:
                chosen[name] = values
    return model.RegisterAction(
        types=chosen.get("types", ()), priorities=chosen.get("priorities", ()),
        statuses=chosen.get("statuses", ()), limit=positive_int(r, node.get("limit")),
    )


def _filter_list(r: Report, node: Node | None, allowed: Sequence[str]) -> tuple[str, ...] | None:
    if node is None:
        return None
    if not isinstance(node.value, list) or not node.value:
        r.error(node.where(), f"{node.label} must be a non-empty list of strings "
                f"(omit it for the default; got {got(node.value)})")
        return None
    for item in node.elements():
        if item.value not in allowed or not isinstance(item.value, str):
            r.error(item.pos, f"{node.label} contains unknown value {got(item.value)}. "
                    f"Allowed: {', '.join(allowed)}")
    return tuple(str(v) for v in node.value)


def _exec_auto_action(r: Report, node: Node, kind: str) -> model.ExecAutoAction:
    strategy_node = node.get("strategy")
    strategy = None
    if strategy_node is not None:
        if strategy_node.value in model.EXEC_STRATEGIES:
            strategy = str(strategy_node.value)
        else:
            r.error(strategy_node.where(), f'{strategy_node.label} must be "critical-first" or '
                    f'"fifo" (got {got(strategy_node.value)})')
    loop = flag(r, node.get("loop"))
    rounds_node = node.get("max_rounds")
    rounds = positive_int(r, rounds_node)
    if rounds_node is not None and rounds is not None and loop is not True:
        r.warn(rounds_node.key_pos, f"{rounds_node.label} has no effect without loop: true")
    return model.ExecAutoAction(
        kind="exec-cycle" if kind == "exec-cycle" else "exec-auto",
        strategy=strategy, parallel=positive_int(r, node.get("parallel")),
        loop=loop is True, max_rounds=rounds,
    )


def _job_action(r: Report, node: Node, jobs: JobIndex) -> model.JobAction | None:
    job_node = node.get("job")
    job_id = job_node.value if job_node is not None else None
    if not isinstance(job_id, str) or not JOB_ID.fullmatch(job_id):
        shown = got(job_id) if job_node is not None else "nothing"
        where = job_node.where() if job_node is not None else node.key_pos
        r.error(where, f"{node.label}.job must match job-<slug> (got {shown})")
        job_id = None
    inputs_node = node.get("inputs")
    inputs = _routine_inputs(r, inputs_node)
    if job_id is None or job_node is None:
        return None
    job = jobs.valid.get(job_id)
    if job is not None:
        _check_job_inputs(r, job, job_node, inputs_node, inputs)
    elif job_id not in jobs.invalid:  # an invalid Job file fails the action at run time
        r.error(job_node.pos, f'{job_node.label} "{job_id}" names no Job Definition '
                f"(no {jobs.where}/**/{job_id}.yaml)")
    return model.JobAction(job=job_id, inputs={k: str(v.value) for k, v in inputs.items()})


def _routine_inputs(r: Report, node: Node | None) -> dict[str, Node]:
    if node is None or not mapping(r, node, " of string values"):
        return {}
    found: dict[str, Node] = {}
    for key, child in node.entries():
        if not isinstance(key, str):
            r.error(child.key_pos, f"{node.label} keys must be input names (got {got(key)})")
        elif not isinstance(child.value, str):
            r.error(child.where(), f"{child.label} must be a string "
                    f"(got {got(child.value)}; quote it)")
        else:
            found[key] = child
            _check_routine_template(r, child)
    return found


def _check_routine_template(r: Report, node: Node) -> None:
    for ph in placeholders(r, node):
        if ph.name != "scheduled_at" or ph.filter not in (None, "iso_week"):
            r.error(template_pos(r, node, ph.start),
                    f"{node.label}: unknown template value {{{{{ph.expression}}}}}; routine "
                    "inputs may use only {{scheduled_at}} and {{scheduled_at | iso_week}}")


def _check_job_inputs(
    r: Report, job: model.JobDefinition, job_node: Node, inputs_node: Node | None,
    inputs: dict[str, Node],
) -> None:
    """Routine inputs against the Job's declarations: declared, valid when literal, complete."""
    declared = ", ".join(spec.name for spec in job.inputs) or "none"
    for key, child in inputs.items():
        spec = job.input_spec(key)
        if spec is None:
            r.error(child.key_pos, f"{child.label} is not an input of {job.id} "
                    f"(declared: {declared})")
        elif "{{" not in child.value:
            try:
                parse_cli_value(spec, child.value)
            except ValueError as exc:
                r.error(child.pos, f"{child.label}: {exc}")
    given = inputs_node.value if inputs_node is not None else {}
    if not isinstance(given, dict):
        return
    for spec in job.inputs:
        unresolved = spec.default is None and spec.from_checkpoint is None and spec.resolve is None
        if spec.required and unresolved and spec.name not in given:
            label = job_node.label.rsplit(".", 1)[0]
            r.error(job_node.pos, f'{label}.inputs must set "{spec.name}": {job.id} requires '
                    "it and has no default")


# --- Job Definitions ---------------------------------------------------------------------------

SNAKE = re.compile(r"[a-z][a-z0-9_]*")
NICKNAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
_TIMEOUT_SECONDS = re.compile(r"([1-9][0-9]{0,9})s")
JOB_KEYS = ("id", "name", "description", "inputs", "task", "run", "checkpoint")
# upstream accepts owner/targets/paths in every mode; only edit/review carry them
_COMMON_TASK_KEYS = ("mode", "owner", "targets", "paths")
_COMMAND_ONLY = ("command", "precondition", "partial_exit_code", "noop_exit_code", "timeout",
                 "analysis")
_AGENT_ONLY = ("description", "agent", "capabilities", "proficiency")
_NOT_IN_COMMAND_MODE = {
    "agent": "task.agent is not allowed in command mode; use task.analysis.agent",
    "description": "task.description is not allowed in command mode; use "
    "task.analysis.description",
    "capabilities": "task.capabilities is not allowed in command mode",
    "proficiency": "task.proficiency is not allowed in command mode",
}
_ONLY_IN_COMMAND_MODE = {k: f"task.{k} is only allowed in command mode" for k in _COMMAND_ONLY}
PROFICIENCIES = ("low", "normal", "high", "expert")
BUSY_EXIT_CODE = 75  # a command exiting 75 means "project busy" (SPEC §7.3)
_PLAIN_NAMES = ("job_id", "project_id", "specdojo", "scheduled_at", "job_run_id")
_ADVANCE = ("succeeded", "noop")


def build_job(r: Report, root: Node, *, file_id: str) -> model.JobDefinition | None:
    """The Job Definition in ``root`` (a loaded ``job-*.yaml``), or None after reporting."""
    unknown_keys(r, root, JOB_KEYS, "job")
    job_id = check_id(r, root, file_id, JOB_ID, "job-<slug>")
    name = text(r, required(r, root, "name"), nonempty=True)
    description = text(r, root.get("description"))
    specs = _input_specs(r, root.get("inputs"))
    task = _task(r, root.get("task"))
    key = _idempotency_key(r, root.get("run"))
    checkpoint = _checkpoint(r, root.get("checkpoint"))
    _check_job_templates(r, root, specs)
    if r.failed or job_id is None or name is None or task is None or key is None:
        return None
    return model.JobDefinition(
        id=job_id, path=r.path, name=name, description=description, inputs=specs,
        task=task, idempotency_key=key, checkpoint=checkpoint,
    )


def _input_specs(r: Report, node: Node | None) -> tuple[model.InputSpec, ...]:
    if node is None or not mapping(r, node, " of input names"):
        return ()
    specs = []
    for name, child in node.entries():
        if not isinstance(name, str) or not SNAKE.fullmatch(name):
            r.error(child.key_pos, f"{child.label} must use lowercase snake_case")
        elif mapping(r, child, " (type, required, default, ...)"):
            unknown_keys(r, child, INPUT_FIELDS, "input")
            spec, complaints = build_input_spec(name, plain(child.value))
            for field, message in complaints:
                located = child.get(field)
                r.error(located.where() if located is not None else child.key_pos, message)
            if spec is not None:
                specs.append(spec)
    return tuple(specs)


def _task(r: Report, node: Node | None) -> model.Task | None:
    if node is None:
        r.error((1, 1), "task is required and must be a mapping")
        return None
    if not mapping(r, node, " with mode"):
        return None
    mode_node = node.get("mode")
    mode = mode_node.value if mode_node is not None else None
    if mode == "command":
        return _command_task(r, node)
    if mode in ("edit", "review"):
        return _agent_task(r, node, "edit" if mode == "edit" else "review")
    shown = got(mode) if mode_node is not None else "nothing"
    where = mode_node.where() if mode_node is not None else node.key_pos
    r.error(where, f"task.mode must be edit, review, or command (got {shown})")
    return None


def _task_common(
    r: Report, node: Node, allowed: Sequence[str], misplaced: Mapping[str, str]
) -> str | None:
    """Keys valid in this mode, and the fields every mode takes; returns the owner."""
    for key, child in node.entries():
        if key in misplaced:
            r.error(child.key_pos, misplaced[str(key)])
    unknown_keys(r, node, [*allowed, *misplaced], "task")
    for key in ("targets", "paths"):
        text_list(r, node.get(key))
    return text(r, node.get("owner"), nonempty=True)


def _command_task(r: Report, node: Node) -> model.CommandTask | None:
    _task_common(r, node, (*_COMMON_TASK_KEYS, *_COMMAND_ONLY), _NOT_IN_COMMAND_MODE)
    command_node = required(r, node, "command", "task.command is required for command mode")
    command = text(r, command_node, nonempty=True)
    partial = _exit_codes(r, node.get("partial_exit_code"))
    noop_node = node.get("noop_exit_code")
    noop = _exit_code(r, noop_node)
    if noop_node is not None and noop is not None and noop in partial:
        r.error(noop_node.pos, f"task.noop_exit_code {noop} is also in task.partial_exit_code")
    timeout, seconds = _timeout(r, node.get("timeout"))
    precondition = _precondition(r, node.get("precondition"))
    analysis = _analysis(r, node.get("analysis"))
    if command is None:
        return None
    return model.CommandTask(
        command=command, precondition=precondition, partial_exit_codes=partial,
        noop_exit_code=noop, timeout=timeout, timeout_seconds=seconds, analysis=analysis,
    )


def _exit_code(r: Report, node: Node | None) -> int | None:
    if node is None:
        return None
    value = node.value
    if not is_int(value) or not 1 <= value <= 255 or value == BUSY_EXIT_CODE:
        r.error(node.where(), f"{node.label} must be an exit code from 1 to 255 other than "
                f"{BUSY_EXIT_CODE} (which means project busy; got {got(value)})")
        return None
    return int(value)


def _exit_codes(r: Report, node: Node | None) -> tuple[int, ...]:
    if node is None:
        return ()
    if not isinstance(node.value, list) or not node.value:
        r.error(node.where(), f"{node.label} must be a non-empty list of exit codes "
                f"(got {got(node.value)})")
        return ()
    codes = [_exit_code(r, item) for item in node.elements()]
    return tuple(code for code in codes if code is not None)


def _timeout(r: Report, node: Node | None) -> tuple[str | None, int | None]:
    if node is None:
        return None, None
    value = node.value
    seconds = None
    if isinstance(value, str):
        match = _TIMEOUT_SECONDS.fullmatch(value.strip())
        seconds = int(match.group(1)) if match else parse_interval(value)
    if seconds is None:
        r.error(node.where(), "task.timeout must be <positive integer><unit> with unit "
                f"s|m|h|d|w, e.g. 90s or 10m (got {got(value)})")
        return None, None
    return str(value), seconds


def _precondition(r: Report, node: Node | None) -> model.Precondition | None:
    if node is None or not mapping(r, node, " with command and skip_when"):
        return None
    unknown_keys(r, node, ("command", "skip_when"), "task.precondition")
    command = text(r, required(r, node, "command"), nonempty=True)
    skip_node = node.get("skip_when")
    skip: Any = skip_node.value if skip_node is not None else None
    if skip != "empty-output" and not (is_int(skip) and 0 <= skip <= 255):
        where = skip_node.where() if skip_node is not None else node.key_pos
        r.error(where, "task.precondition.skip_when must be empty-output or an exit code "
                f"from 0 to 255 (got {got(skip) if skip_node is not None else 'nothing'})")
        return None
    if command is None:
        return None
    return model.Precondition(command=command, skip_when="empty-output" if skip is None else skip)


def _analysis(r: Report, node: Node | None) -> model.Analysis | None:
    if node is None or not mapping(r, node, " with agent and description"):
        return None
    unknown_keys(r, node, ("agent", "description"), "task.analysis")
    agent = _nickname(r, required(r, node, "agent"))
    description = text(r, required(r, node, "description"), nonempty=True)
    return model.Analysis(agent=agent, description=description) if agent and description else None


def _nickname(r: Report, node: Node | None) -> str | None:
    if node is None:
        return None
    if not isinstance(node.value, str) or not NICKNAME.fullmatch(node.value):
        r.error(node.where(), f"{node.label} must be an agent nickname from pm-members.yaml "
                f"(got {got(node.value)})")
        return None
    return str(node.value)


def _agent_task(r: Report, node: Node, mode: Literal["edit", "review"]) -> model.AgentTask | None:
    owner = _task_common(r, node, (*_COMMON_TASK_KEYS, *_AGENT_ONLY), _ONLY_IN_COMMAND_MODE)
    description = text(r, required(r, node, "description"), nonempty=True)
    targets, paths = node.get("targets"), node.get("paths")
    if targets is None and paths is None:
        r.error(node.key_pos, "task.targets or task.paths must be a non-empty string list")
    executor = reporter = None
    agent = node.get("agent")
    if agent is not None and mapping(r, agent, " with executor and optional reporter"):
        unknown_keys(r, agent, ("executor", "reporter"), "task.agent")
        executor = _nickname(r, required(r, agent, "executor"))
        reporter = _nickname(r, agent.get("reporter"))
    capabilities = text_list(r, node.get("capabilities"))
    proficiency = choice(r, node.get("proficiency"), PROFICIENCIES)
    if description is None:
        return None
    return model.AgentTask(
        mode=mode, description=description, targets=_strings(targets), paths=_strings(paths),
        executor=executor, reporter=reporter, capabilities=capabilities or (),
        proficiency=proficiency, owner=owner,
    )


def _strings(node: Node | None) -> tuple[str, ...]:
    if node is None or not isinstance(node.value, list):
        return ()
    return tuple(str(v) for v in node.value)


def _idempotency_key(r: Report, node: Node | None) -> str | None:
    if node is None:
        r.error((1, 1), "run.idempotency_key is required")
        return None
    if not mapping(r, node, " with idempotency_key"):
        return None
    unknown_keys(r, node, ("idempotency_key",), "run")
    return text(r, required(r, node, "idempotency_key"), nonempty=True)


def _checkpoint(r: Report, node: Node | None) -> model.CheckpointSpec | None:
    if node is None or not mapping(r, node, " with values"):
        return None
    unknown_keys(r, node, ("values", "advance_on"), "checkpoint")
    values_node = required(r, node, "values", "checkpoint.values must be a mapping")
    values: dict[str, str] = {}
    if values_node is not None and mapping(r, values_node, " of snake_case keys to templates"):
        for key, child in values_node.entries():
            if not isinstance(key, str) or not SNAKE.fullmatch(key):
                r.error(child.key_pos, f"{child.label} must use a lowercase snake_case key")
            elif (value := text(r, child)) is not None:
                values[key] = value
    advance = frozenset(_ADVANCE)
    advance_node = node.get("advance_on")
    if advance_node is not None:
        listed = advance_node.value
        if isinstance(listed, list) and listed and all(v in _ADVANCE for v in listed):
            advance = frozenset(str(v) for v in listed)
        else:
            r.error(advance_node.where(), "checkpoint.advance_on must contain succeeded and/or "
                    f"noop (got {got(listed)})")
    return model.CheckpointSpec(values=values, advance_on=advance)


# --- Job templates (SPEC §7.2) -----------------------------------------------------------------


def _template_nodes(root: Node) -> list[Node]:
    """Every templated string of a Job Definition."""
    found: list[Node | None] = []
    task = root.get("task")
    if task is not None:
        found += [task.get("command"), task.get("description")]
        for key, field in (("precondition", "command"), ("analysis", "description")):
            child = task.get(key)
            found.append(child.get(field) if child is not None else None)
    run = root.get("run")
    found.append(run.get("idempotency_key") if run is not None else None)
    checkpoint = root.get("checkpoint")
    values = checkpoint.get("values") if checkpoint is not None else None
    found += [child for _, child in values.entries()] if values is not None else []
    return [n for n in found if n is not None and isinstance(n.value, str)]


def _declared(root: Node) -> tuple[list[str], list[str] | None]:
    """Input names and checkpoint value keys as written (valid or not, so that one bad
    declaration is not reported again at every use); None when there is no checkpoint."""
    inputs = root.get("inputs")
    given = inputs.value if inputs is not None and isinstance(inputs.value, dict) else {}
    names = [k for k in given if isinstance(k, str)]
    checkpoint = root.get("checkpoint")
    if checkpoint is None:
        return names, None
    values = checkpoint.get("values")
    keys = values.value if values is not None and isinstance(values.value, dict) else {}
    return names, [k for k in keys if isinstance(k, str)]


def _check_job_templates(r: Report, root: Node, specs: Sequence[model.InputSpec]) -> None:
    inputs, values = _declared(root)
    declared = root.get("inputs")
    for spec in specs:
        source = spec.from_checkpoint
        problem = _names(f'"{source}"', source, values, "checkpoint") if source else None
        if problem is not None and declared is not None:
            where = declared.child(spec.name).child("from_checkpoint")
            r.error(where.pos, f"{where.label}: {problem}")
    for node in _template_nodes(root):
        in_key = node.label == "run.idempotency_key"
        for ph in placeholders(r, node):
            problem = _placeholder_problem(ph, inputs, values, in_key=in_key)
            if problem is not None:
                r.error(template_pos(r, node, ph.start), f"{node.label}: {problem}")


def _placeholder_problem(
    ph: Placeholder, inputs: Sequence[str], values: Sequence[str] | None, *, in_key: bool
) -> str | None:
    shown = f"{{{{{ph.expression}}}}}"
    if ph.filter is not None:
        return f"{shown}: Job templates take no filters"
    if ph.name == "job_run_id" and in_key:
        return "cannot use {{job_run_id}} (the Job Run id is derived from this key)"
    if ph.name in _PLAIN_NAMES:
        return None
    head, _, rest = ph.name.partition(".")
    if head == "inputs" and rest:
        return _names(shown, rest, inputs, "input")
    if head == "checkpoint" and rest:
        return _names(shown, rest, values, "checkpoint")
    return (f"unknown template value {shown} (use job_id, project_id, specdojo, scheduled_at, "
            "job_run_id, inputs.<name> or checkpoint.<key>)")


def _names(shown: str, path: str, declared: Sequence[str] | None, what: str) -> str | None:
    """None when the first segment of ``path`` is declared, else why not."""
    if declared is None:
        return f"{shown} names no checkpoint value (the job declares no checkpoint)"
    if path.split(".")[0] in declared:
        return None
    noun = "input" if what == "input" else "checkpoint value"
    return f"{shown} names no declared {noun} (declared: {', '.join(declared) or 'none'})"
