"""The rules of routine files (SPEC §3), on the machinery of :mod:`.validation`.

Checks report and carry on, so every problem of a file is found. A routine's ``job:`` action is
checked against the Job Definitions already loaded (a :class:`JobIndex`). The ``policy:`` block
has its own rules (:mod:`.policy_rules`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime

import attrs

from specdojo_routine.core import model
from specdojo_routine.core.cron_syntax import (
    cron_syntax_error,
    dom_dow_warning,
    interval_syntax_error,
    parse_interval,
)
from specdojo_routine.core.inputs import (
    blank_key_parts,
    check_value,
    parse_cli_value,
    parse_text,
)
from specdojo_routine.core.jobmodel import InputSpec, InputValue, JobDefinition
from specdojo_routine.core.policy_rules import policy_block, timeout
from specdojo_routine.core.templates import TemplateError, placeholders, render_routine_inputs
from specdojo_routine.core.validation import (
    JOB_ID,
    NO_NUL,
    ROUTINE_ID,
    Node,
    Report,
    check_id,
    flag,
    got,
    mapping,
    positive_int,
    required,
    template_pos,
    text,
    text_list,
    unknown_keys,
)
from specdojo_routine.core.zones import zone_problem

# --- routines (SPEC §3) ------------------------------------------------------------------------

ROUTINE_KEYS = ("id", "name", "description", "enabled", "trigger", "interval", "policy", "action")
_ACTION_KEYS: dict[str, tuple[str, ...]] = {
    "job": ("kind", "job", "inputs", "commit", "timeout"),
    "specdojo": ("kind", "args", "timeout"),
    "register": ("kind", "filter", "limit", "timeout"),
    "exec-auto": ("kind", "strategy", "parallel", "loop", "max_rounds", "timeout"),
    "exec-cycle": ("kind", "strategy", "parallel", "loop", "max_rounds", "timeout"),
    "exec-resume": ("kind", "parallel", "timeout"),
}
_FILTERS = (
    ("types", model.REGISTER_TYPES),
    ("priorities", model.REGISTER_PRIORITIES),
    ("statuses", model.REGISTER_STATUSES),
)


@attrs.frozen(kw_only=True, repr=False)
class JobIndex:
    """What a routine's ``job:`` can name: valid Jobs, ids of invalid Job files, where to look."""

    valid: Mapping[str, JobDefinition] = attrs.field(factory=dict)
    invalid: frozenset[str] = frozenset()
    where: str = "jobs"


def build_routine(
    r: Report, root: Node, *, file_id: str, jobs: JobIndex, digest: Callable[[], str] = str,
) -> model.Routine | None:
    """The routine in ``root`` (a loaded ``rtn-*.yaml``), or None after reporting its problems;
    ``digest()`` gives the routine's digest (asked only for a valid routine)."""
    unknown_keys(r, root, ROUTINE_KEYS, "routine")
    routine_id = check_id(r, root, file_id, ROUTINE_ID, "rtn-<slug>")
    name = text(r, root.get("name"))
    description = text(r, root.get("description"))
    enabled = flag(r, root.get("enabled"))
    trigger, interval = _schedule(r, root)
    policy = policy_block(r, root.get("policy"))
    actions, is_list = _actions(r, root, jobs)
    if r.failed or routine_id is None or policy is None:
        return None
    return model.Routine(
        id=routine_id, path=r.path, digest=digest(), name=name, description=description,
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
    problem = zone_problem(name)
    return None if problem is None else f"Invalid trigger.timezone: {name} ({problem})"


def _actions(r: Report, root: Node, jobs: JobIndex) -> tuple[tuple[model.Action, ...], bool]:
    node = root.get("action")
    if node is None:
        r.error((1, 1), "action is required and must be a mapping with kind (or a non-empty "
                        "list of them)")
        return (), False
    if isinstance(node.value, list):
        if not node.value:
            r.error(node.pos, "action must contain at least one action (got [])")
        items = node.elements(lambda i: f"action[{i}]")  # 0-based, as upstream and JSON paths
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
    own = timeout(r, node.get("timeout"))
    built = _action_of_kind(r, node, kind, jobs)
    return built if built is None or own is None else attrs.evolve(built, timeout=own)


def _action_of_kind(r: Report, node: Node, kind: str, jobs: JobIndex) -> model.Action | None:
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
    for index, item in enumerate(args_node.elements()):
        word = item.value
        rule = f"{args_node.label} must not include exec or --project"
        if word == "exec":
            r.error(item.pos, f'{rule} (got "exec"; use kind exec-auto, exec-resume or '
                    "exec-cycle)")
        elif isinstance(word, str) and (word == "--project" or word.startswith("--project=")):
            r.error(item.pos, f"{rule} (got {got(word)}; the routine's project is appended)")
        elif word == "--":  # the appended --project ID would become operands
            r.error(item.pos, f'{args_node.label} must not include "--" (the routine\'s '
                    "--project is appended after args and must stay an option; remove it)")
        elif isinstance(word, str) and "\0" in word:  # the call's start would fail every run
            r.error(item.pos,
                    f"{args_node.label}[{index}] must not hold a NUL character (\\0) {NO_NUL}")
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
    commit = flag(r, node.get("commit"))  # legacy commit: true (SPEC §11.3)
    if job_id is None or job_node is None:
        return None
    job = jobs.valid.get(job_id)
    if job is not None:
        _check_job_inputs(r, job, job_node, inputs_node, inputs)
    elif job_id not in jobs.invalid:  # an invalid Job file fails the action at run time
        r.error(job_node.pos, f'{job_node.label} "{job_id}" names no Job Definition '
                f"(no {jobs.where}/**/{job_id}.yaml)")
    return model.JobAction(job=job_id, inputs={k: str(v.value) for k, v in inputs.items()},
                           commit=bool(commit))


def _routine_inputs(r: Report, node: Node | None) -> dict[str, Node]:
    if node is None or not mapping(r, node, " of string values"):
        return {}
    found: dict[str, Node] = {}
    for key, child in node.entries():
        if not isinstance(key, str):
            r.error(child.key_pos, f"{node.label} keys must be input names (got {got(key)})")
        elif not isinstance(child.value, str):
            r.error(child.where(), f"{node.label} must be a mapping of string values "
                    f"(got {got(child.value)} for {child.label}; quote it)")
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


#: The occurrence a templated routine input is rendered for at validate: what
#: ``{{scheduled_at}}`` renders has the same shape for every occurrence.
_SAMPLE_OCCURRENCE = datetime(2026, 8, 7, 8, 0, tzinfo=UTC)


def _check_rendered_input(
    r: Report, job: JobDefinition, spec: InputSpec, child: Node
) -> InputValue | None:
    """A templated routine input as every run renders it: a NUL or a value of the wrong type
    (an integer input given ``{{scheduled_at}}``) would fail every occurrence, so it is an
    error. Against an ``enum`` it is a warning whatever the sample renders: the value changes
    with each occurrence and the enum is a fixed list, so all but a few occurrences fail,
    whether or not the sample's value is one of them."""
    try:
        text = render_routine_inputs({spec.name: child.value}, scheduled_for=_SAMPLE_OCCURRENCE,
                                     timezone="UTC")[spec.name]
    except TemplateError:
        return None  # an unknown placeholder, reported by _check_routine_template
    try:
        value = parse_text(spec, text)
    except ValueError as exc:  # the type: the same for every occurrence
        r.error(child.pos, f"{child.label} renders to a value {job.id} refuses at every run: "
                f"{exc}")
        return None
    problem = check_value(spec, value)
    if problem is not None and (spec.enum is None or "\0" in text):
        r.error(child.pos, f"{child.label} renders to a value {job.id} refuses at every run: "
                f"{problem}")
        return None
    if spec.enum is not None:
        when = f"{_SAMPLE_OCCURRENCE:%Y-%m-%d %H:%M} UTC"
        allowed = ", ".join(str(item) for item in spec.enum)
        r.warn(child.pos, f"{child.label} renders to a different value at each occurrence "
               f"({got(text)} at {when}), and {job.id} accepts only one of: {allowed}; every "
               "occurrence whose value is not one of them fails")
    return value


def _check_blank_key(
    r: Report, job: JobDefinition, inputs: Mapping[str, Node], given: Mapping[str, InputValue]
) -> None:
    """Inputs that make the Job's idempotency key render empty fail every occurrence (SPEC
    §7.3 step 1): an error at the first of them."""
    parts = blank_key_parts(job.idempotency_key, job.inputs, given)
    names = [name.removeprefix("inputs.") for name, _ in parts]
    child = next((inputs[name] for name in names if name in inputs), None)
    if child is not None:
        listed = ", ".join(f"{name} ({why})" for name, why in parts)
        r.error(child.pos, f"{child.label} makes the run.idempotency_key of {job.id} render "
                f"empty: {listed}; every occurrence would fail")


def _check_job_inputs(
    r: Report, job: JobDefinition, job_node: Node, inputs_node: Node | None,
    inputs: dict[str, Node],
) -> None:
    """Routine inputs against the Job's declarations: declared, valid when literal, complete."""
    declared = ", ".join(spec.name for spec in job.inputs) or "none"
    values: dict[str, InputValue | None] = {}
    for key, child in inputs.items():
        spec = job.input_spec(key)
        values[key] = None
        if spec is None:
            r.error(child.key_pos, f"{child.label} is not an input of {job.id} "
                    f"(declared: {declared})")
        elif "{{" not in child.value:
            try:
                values[key] = parse_cli_value(spec, child.value)
            except ValueError as exc:
                r.error(child.pos, f"{child.label}: {exc}")
        else:
            values[key] = _check_rendered_input(r, job, spec, child)
    if all(value is not None for value in values.values()):
        _check_blank_key(r, job, inputs, {k: v for k, v in values.items() if v is not None})
    given = inputs_node.value if inputs_node is not None else {}
    if not isinstance(given, dict):
        return
    for spec in job.inputs:
        unresolved = spec.default is None and spec.from_checkpoint is None and spec.resolve is None
        if spec.required and unresolved and spec.name not in given:
            label = job_node.label.rsplit(".", 1)[0]
            r.error(job_node.pos, f'{label}.inputs must set "{spec.name}": {job.id} requires '
                    "it and has no default")
