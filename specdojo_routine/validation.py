"""Shared checking machinery for definition files: located nodes, problems, templates.

A :class:`Node` is a loaded YAML value with its dotted label (``action.filter.types``) and its
1-based position; a :class:`Report` collects the problems of one file. The routine and job rules
(:mod:`.rules`) are written against these helpers, so every message is located and every
problem of a file is reported.
"""

from __future__ import annotations

import difflib
import functools
import re
import zoneinfo
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from . import model
from .errors import Problem
from .inputs import MAX_SAFE_INTEGER, check_value, parse_cli_value
from .schedule import cron_syntax_error, dom_dow_warning, interval_syntax_error, parse_interval
from .templates import Placeholder, TemplateError, find_placeholders

Pos = tuple[int, int]


class Report:
    """The problems of one definition file, and its source lines (for template columns)."""

    def __init__(self, path: str, text: str = "") -> None:
        self.path = path
        self.lines = text.splitlines()
        self.problems: list[Problem] = []

    def error(self, pos: Pos, message: str) -> None:
        self.problems.append(Problem(path=self.path, line=pos[0], col=pos[1], message=message))

    def warn(self, pos: Pos, message: str) -> None:
        self.problems.append(
            Problem(path=self.path, line=pos[0], col=pos[1], message=message, warning=True)
        )

    @property
    def failed(self) -> bool:
        return any(not p.warning for p in self.problems)


def _lc(container: Any, kind: str, key: object, fallback: Pos) -> Pos:
    """1-based position from ruamel's ``.lc`` (merged keys have none: use ``fallback``)."""
    try:
        line, col = getattr(container.lc, kind)(key)
    except (AttributeError, KeyError, IndexError, TypeError):
        return fallback
    return (int(line) + 1, int(col) + 1)


@attrs.frozen(kw_only=True)
class Node:
    """A loaded YAML value, its label for messages and where it is."""

    value: Any
    label: str = ""
    pos: Pos = (1, 1)
    key_pos: Pos = (1, 1)

    def _sub(self, key: object) -> str:
        return f"{self.label}.{key}" if self.label else str(key)

    def get(self, key: str) -> Node | None:
        value = self.value
        if not isinstance(value, dict) or key not in value:
            return None
        return self.child(key)

    def child(self, key: object) -> Node:
        mapping = self.value
        return Node(
            value=mapping[key],
            label=self._sub(key),
            pos=_lc(mapping, "value", key, self.pos),
            key_pos=_lc(mapping, "key", key, self.pos),
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
        name = label or (lambda _i: self.label)
        out = []
        for i, item in enumerate(self.value):
            pos = _lc(self.value, "item", i, self.pos)
            out.append(Node(value=item, label=name(i), pos=pos, key_pos=pos))
        return out


# --- describing values ------------------------------------------------------------------------


def got(value: object) -> str:
    """A short description of ``value`` for a ``(got …)`` suffix."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"' if len(value) <= 60 else f'"{value[:57]}..."'
    if isinstance(value, int):
        text = str(value)
        return text if len(text) <= 30 else f"a {len(text)}-digit number"
    if isinstance(value, float):
        return repr(float(value))
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def plain(value: Any) -> Any:
    """Loaded YAML as plain data: dict, list, str, int, float, bool, None."""
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    for kind in (str, int, float):
        if isinstance(value, kind):
            return kind(value)
    return value


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def safe_int(value: object) -> bool:
    return is_int(value) and abs(value) <= MAX_SAFE_INTEGER  # type: ignore[arg-type]


# --- checking helpers (each reports and returns the value, or None) ---------------------------


def unknown_keys(
    r: Report, node: Node, allowed: Sequence[str], owner: str, *, hint: str = ""
) -> None:
    """Report every key of ``node`` not in ``allowed``, at the key's position."""
    where = node.label or owner
    for key, child in node.entries():
        if key in allowed:
            continue
        close = difflib.get_close_matches(str(key), list(allowed), n=1)
        more = f'did you mean "{close[0]}"?' if close else hint or "allowed: " + ", ".join(allowed)
        r.error(child.key_pos, f'{where} has unknown key "{key}" ({more})')


def mapping(r: Report, node: Node, what: str) -> bool:
    if isinstance(node.value, dict):
        return True
    r.error(node.pos, f"{node.label} must be a mapping{what} (got {got(node.value)})")
    return False


def text(r: Report, node: Node | None, *, nonempty: bool = False) -> str | None:
    if node is None:
        return None
    if not isinstance(node.value, str):
        r.error(node.pos, f"{node.label} must be a string (got {got(node.value)})")
        return None
    if nonempty and not node.value.strip():
        r.error(node.pos, f"{node.label} must not be empty")
        return None
    return str(node.value)


def flag(r: Report, node: Node | None) -> bool | None:
    if node is None:
        return None
    if not isinstance(node.value, bool):
        r.error(node.pos, f"{node.label} must be a boolean (true or false, got {got(node.value)})")
        return None
    return node.value


def positive_int(r: Report, node: Node | None) -> int | None:
    if node is None:
        return None
    value = node.value
    if not safe_int(value) or value < 1:
        limit = f", at most {MAX_SAFE_INTEGER}" if is_int(value) and value > 1 else ""
        r.error(node.pos, f"{node.label} must be a positive integer (got {got(value)}{limit})")
        return None
    return int(value)


def choice(r: Report, node: Node | None, allowed: Sequence[str]) -> str | None:
    if node is None:
        return None
    if node.value not in allowed or not isinstance(node.value, str):
        r.error(
            node.pos,
            f"{node.label} must be one of: {', '.join(allowed)} (got {got(node.value)})",
        )
        return None
    return str(node.value)


def text_list(r: Report, node: Node | None, *, allow_empty: bool = False) -> tuple[str, ...] | None:
    """A list of non-empty strings (non-empty unless ``allow_empty``)."""
    if node is None:
        return None
    value = node.value
    if not isinstance(value, list) or (not value and not allow_empty):
        r.error(node.pos, f"{node.label} must be a non-empty list of strings (got {got(value)})")
        return None
    ok = True
    for item in node.elements():
        if not isinstance(item.value, str) or not item.value.strip():
            r.error(item.pos, f"{node.label} items must be non-empty strings (got {got(item.value)})")
            ok = False
    return tuple(str(v) for v in value) if ok else None


# --- templates ---------------------------------------------------------------------------------


def template_pos(r: Report, node: Node, offset: int) -> Pos:
    """The position of character ``offset`` of the string in ``node``: exact for a one-line
    plain or quoted scalar written without escapes, else the scalar's start."""
    line, col = node.pos
    if not isinstance(node.value, str) or not 0 < line <= len(r.lines):
        return node.pos
    source, value = r.lines[line - 1], node.value
    start = col - 1
    if source[start : start + len(value)] == value:
        return (line, col + offset)
    if source[start : start + 1] in ("'", '"') and source[start + 1 : start + 1 + len(value)] == value:
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

ROUTINE_ID = re.compile(r"rtn-[a-z0-9][a-z0-9-]*")
JOB_ID = re.compile(r"job-[a-z0-9][a-z0-9-]*")
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


def check_id(r: Report, root: Node, file_id: str, pattern: re.Pattern[str], shape: str) -> str | None:
    node = root.get("id")
    if node is None:
        r.error((1, 1), f'id is required (use "{file_id}", the file name base)')
        return None
    value = text(r, node, nonempty=True)
    if value is None:
        return None
    ok = True
    if not pattern.fullmatch(value):
        r.error(node.pos, f'id "{value}" must match {shape} (lowercase letters, digits, hyphens)')
        ok = False
    if value != file_id:
        r.error(node.pos, f'id "{value}" must match the file name base "{file_id}"')
        ok = False
    return value if ok else None


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
            r.error(interval_node.pos, problem)
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
    cron_node, zone_node = node.get("cron"), node.get("timezone")
    for key, child in (("cron", cron_node), ("timezone", zone_node)):
        if child is None:
            r.error(node.key_pos, f"trigger.{key} is required")
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
            kind_node.pos if kind_node is not None else node.key_pos,
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
    args_node = node.get("args")
    if args_node is None:
        r.error(node.key_pos, f"{node.label}.args is required (a non-empty list of strings)")
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
    return model.RegisterAction(limit=positive_int(r, node.get("limit")), **chosen)


def _filter_list(r: Report, node: Node | None, allowed: Sequence[str]) -> tuple[str, ...] | None:
    if node is None:
        return None
    if not isinstance(node.value, list) or not node.value:
        r.error(node.pos, f"{node.label} must be a non-empty list of strings "
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
            r.error(strategy_node.pos, f'{strategy_node.label} must be "critical-first" or '
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
        where = job_node.pos if job_node is not None else node.key_pos
        r.error(where, f"{node.label}.job must match job-<slug> (got {shown})")
        job_id = None
    inputs = _routine_inputs(r, node.get("inputs"))
    if job_id is None or job_node is None:
        return None
    _check_job_ref(r, node, job_node, inputs, jobs)
    return model.JobAction(job=job_id, inputs={k: str(v.value) for k, v in inputs.items()})


def _routine_inputs(r: Report, node: Node | None) -> dict[str, Node]:
    if node is None or not mapping(r, node, " of string values"):
        return {}
    found: dict[str, Node] = {}
    for key, child in node.entries():
        if not isinstance(key, str):
            r.error(child.key_pos, f"{node.label} keys must be input names (got {got(key)})")
            continue
        if not isinstance(child.value, str):
            r.error(child.pos, f"{child.label} must be a string (got {got(child.value)}; quote it)")
            continue
        found[key] = child
        for ph in placeholders(r, child):
            if ph.name != "scheduled_at" or ph.filter not in (None, "iso_week"):
                r.error(template_pos(r, child, ph.start),
                        f"{child.label}: unknown template value {{{{{ph.expression}}}}}; routine "
                        "inputs may use only {{scheduled_at}} and {{scheduled_at | iso_week}}")
    return found


def _check_job_ref(
    r: Report, action: Node, job_node: Node, inputs: dict[str, Node], jobs: JobIndex
) -> None:
    job_id = str(job_node.value)
    job = jobs.valid.get(job_id)
    if job is None:
        if job_id not in jobs.invalid:
            r.error(job_node.pos, f'{job_node.label} "{job_id}" names no Job Definition '
                    f"(no {jobs.where}/**/{job_id}.yaml)")
        return
    declared = ", ".join(spec.name for spec in job.inputs) or "none"
    for key, child in inputs.items():
        spec = job.input_spec(key)
        if spec is None:
            r.error(child.key_pos, f"{child.label} is not an input of {job_id} (declared: {declared})")
        elif "{{" not in child.value:
            try:
                parse_cli_value(spec, child.value)
            except ValueError as exc:
                r.error(child.pos, f"{child.label}: {exc}")
    for spec in job.inputs:
        unresolved = spec.default is None and spec.from_checkpoint is None and spec.resolve is None
        if spec.required and unresolved and spec.name not in inputs:
            r.error(job_node.pos, f'{action.label}.inputs must set "{spec.name}": {job_id} '
                    "requires it and has no default")


# --- Job Definitions (SPEC §7.1, §7.2) ----------------------------------------------------------

JOB_KEYS = ("id", "name", "description", "inputs", "task", "run", "checkpoint")
INPUT_KEYS = ("type", "description", "required", "default", "enum", "minimum", "maximum",
              "from_checkpoint", "resolve", "git_revision")
INPUT_TYPES = ("string", "integer", "boolean", "list")
SNAKE = re.compile(r"[a-z][a-z0-9_]*")
NICKNAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
DOTTED = re.compile(r"[A-Za-z0-9_]+(?:\.[A-Za-z0-9_-]+)*")
TIMEOUT_SECONDS = re.compile(r"([1-9][0-9]{0,9})s")
_COMMON_TASK_KEYS = ("mode", "owner", "targets", "paths")
_COMMAND_ONLY = ("command", "precondition", "partial_exit_code", "noop_exit_code", "timeout",
                 "analysis")
_AGENT_ONLY = ("description", "agent", "capabilities", "proficiency")
_IN_COMMAND_MODE = {
    "agent": "task.agent is not allowed in command mode; use task.analysis.agent",
    "description": "task.description is not allowed in command mode; "
    "use task.analysis.description",
    "capabilities": "task.capabilities is not allowed in command mode",
    "proficiency": "task.proficiency is not allowed in command mode",
}
PROFICIENCIES = ("low", "normal", "high", "expert")
BUSY_EXIT_CODE = 75
_SCALAR_TEMPLATE_NAMES = ("job_id", "project_id", "specdojo", "scheduled_at", "job_run_id")


def build_job(r: Report, root: Node, *, file_id: str) -> model.JobDefinition | None:
    """The Job Definition in ``root`` (a loaded ``job-*.yaml``), or None after reporting."""
    unknown_keys(r, root, JOB_KEYS, "job")
    job_id = check_id(r, root, file_id, JOB_ID, "job-<slug>")
    name_node = root.get("name")
    if name_node is None:
        r.error((1, 1), "name is required")
    name = text(r, name_node, nonempty=True)
    description = text(r, root.get("description"))
    specs = _input_specs(r, root.get("inputs"))
    task = _task(r, root.get("task"))
    key = _idempotency_key(r, root.get("run"))
    checkpoint = _checkpoint(r, root.get("checkpoint"))
    _check_job_templates(r, root, specs, checkpoint)
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
    for key, child in node.entries():
        if not isinstance(key, str) or not SNAKE.fullmatch(key):
            r.error(child.key_pos, f"{child.label} must use lowercase snake_case")
        elif mapping(r, child, " (type, required, default, ...)"):
            spec = _input_spec(r, key, child)
            if spec is not None:
                specs.append(spec)
    return tuple(specs)


def _input_spec(r: Report, name: str, node: Node) -> model.InputSpec | None:
    unknown_keys(r, node, INPUT_KEYS, "input")
    type_node = node.get("type")
    kind = type_node.value if type_node is not None else None
    if kind not in INPUT_TYPES or not isinstance(kind, str):
        shown = got(kind) if type_node is not None else "nothing"
        where = type_node.pos if type_node is not None else node.key_pos
        r.error(where, f"{node.label}.type must be string|integer|boolean|list (got {shown})")
        return None
    source = node.get("from_checkpoint")
    if (path := text(r, source, nonempty=True)) is not None and not DOTTED.fullmatch(path):
        r.error(source.pos if source else node.pos,
                f"{node.label}.from_checkpoint must be a dotted path such as revision")
    resolve = choice(r, node.get("resolve"), ("git_head",))
    git_node = node.get("git_revision")
    if flag(r, git_node) and kind != "string" and git_node is not None:
        r.error(git_node.pos, f"{node.label}.git_revision needs type string (got type {kind})")
    bounds = [_bound(r, node.get(side), kind) for side in ("minimum", "maximum")]
    if bounds[0] is not None and bounds[1] is not None and bounds[0] > bounds[1]:
        r.error(node.child("minimum").pos, f"{node.label}.minimum must not exceed maximum")
    spec = model.InputSpec(
        name=name, type=kind, required=flag(r, node.get("required")) is True,  # type: ignore[arg-type]
        enum=_enum(r, node.get("enum"), kind), minimum=bounds[0], maximum=bounds[1],
        from_checkpoint=path, resolve="git_head" if resolve else None,
        git_revision=bool(git_node is not None and git_node.value is True),
        description=text(r, node.get("description")),
    )
    default_node = node.get("default")
    if default_node is None:
        return spec
    default = plain(default_node.value)
    default = tuple(default) if isinstance(default, list) else default
    problem = check_value(spec, default)
    if problem is not None:
        r.error(default_node.pos, f"{default_node.label} is invalid: {problem}")
        return None
    return attrs.evolve(spec, default=default)


def _bound(r: Report, node: Node | None, kind: str) -> int | None:
    if node is None:
        return None
    if kind != "integer" or not safe_int(node.value):
        r.error(node.pos, f"{node.label} is only allowed as an integer constraint "
                f"(type {kind}, got {got(node.value)})")
        return None
    return int(node.value)


def _enum(r: Report, node: Node | None, kind: str) -> tuple[str | int | bool, ...] | None:
    if node is None:
        return None
    value = node.value
    item_kind = "string" if kind == "list" else kind
    fits = {"string": lambda v: isinstance(v, str), "integer": safe_int,
            "boolean": lambda v: isinstance(v, bool)}[item_kind]
    unique = isinstance(value, list) and len({(type(v), v) for v in value if fits(v)}) == len(value)
    if not isinstance(value, list) or not value or not unique:
        r.error(node.pos, f"{node.label} must be a non-empty unique list of {item_kind} values")
        return None
    return tuple(plain(v) for v in value)


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
        return _agent_task(r, node, str(mode))
    shown = got(mode) if mode_node is not None else "nothing"
    r.error(mode_node.pos if mode_node else node.key_pos,
            f"task.mode must be edit, review, or command (got {shown})")
    return None


def _task_keys(r: Report, node: Node, allowed: Sequence[str], misplaced: Mapping[str, str]) -> None:
    for key, child in node.entries():
        if key in misplaced:
            r.error(child.key_pos, misplaced[key])
    rest = Node(value={k: v for k, v in node.value.items() if k not in misplaced}, label="task")
    unknown_keys(r, attrs.evolve(rest, value=node.value) if not misplaced else node,
                 [*allowed, *misplaced], "task")
    text(r, node.get("owner"), nonempty=True)
    for key in ("targets", "paths"):
        text_list(r, node.get(key))


def _command_task(r: Report, node: Node) -> model.CommandTask | None:
    _task_keys(r, node, (*_COMMON_TASK_KEYS, *_COMMAND_ONLY), _IN_COMMAND_MODE)
    command_node = node.get("command")
    if command_node is None:
        r.error(node.key_pos, "task.command is required for command mode")
    command = text(r, command_node, nonempty=True)
    partial = _exit_codes(r, node.get("partial_exit_code"))
    noop_node = node.get("noop_exit_code")
    noop = _exit_code(r, noop_node)
    if noop is not None and noop in (partial or ()) and noop_node is not None:
        r.error(noop_node.pos, f"task.noop_exit_code {noop} is also in task.partial_exit_code")
    timeout, seconds = _timeout(r, node.get("timeout"))
    if command is None:
        return None
    return model.CommandTask(
        command=command, precondition=_precondition(r, node.get("precondition")),
        partial_exit_codes=partial or (), noop_exit_code=noop, timeout=timeout,
        timeout_seconds=seconds, analysis=_analysis(r, node.get("analysis")),
    )


def _exit_code(r: Report, node: Node | None) -> int | None:
    if node is None:
        return None
    value = node.value
    if not is_int(value) or not 1 <= value <= 255 or value == BUSY_EXIT_CODE:
        r.error(node.pos, f"{node.label} must be an exit code from 1 to 255 other than "
                f"{BUSY_EXIT_CODE} (reserved for project busy; got {got(value)})")
        return None
    return int(value)


def _exit_codes(r: Report, node: Node | None) -> tuple[int, ...] | None:
    if node is None:
        return None
    if not isinstance(node.value, list) or not node.value:
        r.error(node.pos, f"{node.label} must be a non-empty list of exit codes (got {got(node.value)})")
        return None
    codes = [_exit_code(r, item) for item in node.elements(lambda _i: node.label)]
    return tuple(c for c in codes if c is not None)


def _timeout(r: Report, node: Node | None) -> tuple[str | None, int | None]:
    if node is None:
        return None, None
    value = node.value
    seconds = None
    if isinstance(value, str):
        match = TIMEOUT_SECONDS.fullmatch(value.strip())
        seconds = int(match.group(1)) if match else parse_interval(value)
    if seconds is None:
        r.error(node.pos, f"task.timeout must be <positive integer><unit> with unit s|m|h|d|w "
                f"(e.g. 90s, 10m; got {got(value)})")
        return None, None
    return str(value), seconds


def _precondition(r: Report, node: Node | None) -> model.Precondition | None:
    if node is None or not mapping(r, node, " with command and skip_when"):
        return None
    unknown_keys(r, node, ("command", "skip_when"), "task.precondition")
    command_node, skip_node = node.get("command"), node.get("skip_when")
    if command_node is None:
        r.error(node.key_pos, "task.precondition.command is required")
    command = text(r, command_node, nonempty=True)
    skip = skip_node.value if skip_node is not None else None
    if skip != "empty-output" and not (is_int(skip) and 0 <= skip <= 255):
        r.error(skip_node.pos if skip_node else node.key_pos, "task.precondition.skip_when "
                f"must be empty-output or an exit code from 0 to 255 (got {got(skip)})")
        return None
    return model.Precondition(command=command, skip_when=skip) if command else None


def _analysis(r: Report, node: Node | None) -> model.Analysis | None:
    if node is None or not mapping(r, node, " with agent and description"):
        return None
    unknown_keys(r, node, ("agent", "description"), "task.analysis")
    agent = _nickname(r, node, "agent", required=True)
    description_node = node.get("description")
    if description_node is None:
        r.error(node.key_pos, "task.analysis.description is required")
    description = text(r, description_node, nonempty=True)
    return model.Analysis(agent=agent, description=description) if agent and description else None


def _nickname(r: Report, node: Node, key: str, *, required: bool) -> str | None:
    child = node.get(key)
    if child is None:
        if required:
            r.error(node.key_pos, f"{node.label}.{key} is required")
        return None
    if not isinstance(child.value, str) or not NICKNAME.fullmatch(child.value):
        r.error(child.pos, f"{child.label} must be an agent nickname from pm-members.yaml "
                f"(got {got(child.value)})")
        return None
    return str(child.value)


def _agent_task(r: Report, node: Node, mode: str) -> model.AgentTask | None:
    misplaced = {key: f"task.{key} is only allowed in command mode" for key in _COMMAND_ONLY}
    _task_keys(r, node, (*_COMMON_TASK_KEYS, *_AGENT_ONLY), misplaced)
    description_node = node.get("description")
    if description_node is None:
        r.error(node.key_pos, "task.description is required")
    description = text(r, description_node, nonempty=True)
    targets, paths = node.get("targets"), node.get("paths")
    if targets is None and paths is None:
        r.error(node.key_pos, "task.targets or task.paths must be a non-empty string list")
    executor = reporter = None
    agent = node.get("agent")
    if agent is not None and mapping(r, agent, " with executor and optional reporter"):
        unknown_keys(r, agent, ("executor", "reporter"), "task.agent")
        executor = _nickname(r, agent, "executor", required=True)
        reporter = _nickname(r, agent, "reporter", required=False)
    capabilities = text_list(r, node.get("capabilities"))
    proficiency = choice(r, node.get("proficiency"), PROFICIENCIES)
    if description is None:
        return None
    return model.AgentTask(
        mode="edit" if mode == "edit" else "review", description=description,
        targets=_strings(targets), paths=_strings(paths), executor=executor,
        reporter=reporter, capabilities=capabilities or (), proficiency=proficiency,
        owner=text(Report(r.path), node.get("owner")),
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
    key_node = node.get("idempotency_key")
    if key_node is None:
        r.error(node.key_pos, "run.idempotency_key is required")
    return text(r, key_node, nonempty=True)


def _checkpoint(r: Report, node: Node | None) -> model.CheckpointSpec | None:
    if node is None or not mapping(r, node, " with values"):
        return None
    unknown_keys(r, node, ("values", "advance_on"), "checkpoint")
    values_node = node.get("values")
    if values_node is None:
        r.error(node.key_pos, "checkpoint.values must be a mapping")
        return None
    values: dict[str, str] = {}
    if mapping(r, values_node, " of snake_case keys to templates"):
        for key, child in values_node.entries():
            if not isinstance(key, str) or not SNAKE.fullmatch(key) or not isinstance(child.value, str):
                r.error(child.key_pos, f"{child.label} must be a string with a lowercase "
                        "snake_case key")
            else:
                values[key] = child.value
    advance = _advance_on(r, node.get("advance_on"))
    return model.CheckpointSpec(values=values, advance_on=advance)


def _advance_on(r: Report, node: Node | None) -> frozenset[str]:
    if node is None:
        return frozenset({"succeeded", "noop"})
    value = node.value
    if not isinstance(value, list) or not value or any(v not in ("succeeded", "noop") for v in value):
        r.error(node.pos, f"checkpoint.advance_on must contain succeeded and/or noop "
                f"(got {got(value)})")
        return frozenset({"succeeded", "noop"})
    return frozenset(str(v) for v in value)


def _template_nodes(root: Node) -> list[Node]:
    """Every templated string of a Job Definition."""
    found: list[Node | None] = []
    task = root.get("task")
    if task is not None and isinstance(task.value, dict):
        found += [task.get("command"), task.get("description")]
        for key in ("precondition", "analysis"):
            child = task.get(key)
            if child is not None and isinstance(child.value, dict):
                found.append(child.get("command" if key == "precondition" else "description"))
    run = root.get("run")
    if run is not None and isinstance(run.value, dict):
        found.append(run.get("idempotency_key"))
    checkpoint = root.get("checkpoint")
    values = checkpoint.get("values") if checkpoint is not None else None
    if values is not None:
        found += [child for _, child in values.entries()]
    return [n for n in found if n is not None and isinstance(n.value, str)]


def _check_job_templates(
    r: Report, root: Node, specs: Sequence[model.InputSpec], checkpoint: model.CheckpointSpec | None
) -> None:
    inputs = [spec.name for spec in specs]
    values = sorted(checkpoint.values) if checkpoint is not None else None
    for spec_node in _input_nodes(root):
        path = spec_node.value
        if isinstance(path, str) and DOTTED.fullmatch(path):
            problem = _segment_problem("checkpoint", path.split(".")[0], values)
            if problem:
                r.error(spec_node.pos, f"{spec_node.label}: {problem}")
    for node in _template_nodes(root):
        in_key = node.label == "run.idempotency_key"
        for ph in placeholders(r, node):
            problem = _placeholder_problem(ph, inputs, values, in_key=in_key)
            if problem is not None:
                r.error(template_pos(r, node, ph.start), f"{node.label}: {problem}")


def _input_nodes(root: Node) -> list[Node]:
    inputs = root.get("inputs")
    found = []
    for _, spec in inputs.entries() if inputs is not None else []:
        source = spec.get("from_checkpoint")
        if source is not None:
            found.append(source)
    return found


def _placeholder_problem(
    ph: Placeholder, inputs: Sequence[str], values: Sequence[str] | None, *, in_key: bool
) -> str | None:
    shown = f"{{{{{ph.expression}}}}}"
    if ph.filter is not None:
        return f"{shown}: Job templates take no filters"
    if ph.name == "job_run_id" and in_key:
        return "cannot use {{job_run_id}} (the Job Run id is derived from this key)"
    if ph.name in _SCALAR_TEMPLATE_NAMES:
        return None
    head, _, rest = ph.name.partition(".")
    if head == "inputs" and rest:
        return _segment_problem("input", rest.split(".")[0], inputs, shown)
    if head == "checkpoint" and rest:
        return _segment_problem("checkpoint", rest.split(".")[0], values, shown)
    return (f"unknown template value {shown} (use job_id, project_id, specdojo, scheduled_at, "
            "job_run_id, inputs.<name> or checkpoint.<key>)")


def _segment_problem(
    what: str, name: str, declared: Sequence[str] | None, shown: str = ""
) -> str | None:
    subject = shown or f'"{name}"'
    if declared is None:
        return f"{subject} names no checkpoint value (the job declares no checkpoint)"
    if name in declared:
        return None
    noun = "input" if what == "input" else "checkpoint value"
    return f"{subject} names no declared {noun} (declared: {', '.join(declared) or 'none'})"
