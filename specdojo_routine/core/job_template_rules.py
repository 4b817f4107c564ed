"""The rules of a Job Definition's templates (SPEC §7.2), on the machinery of :mod:`.validation`.

Every templated string of a Job (its commands, descriptions, idempotency key and checkpoint
values) may name only what the Job declares - its inputs, its checkpoint values and a few plain
names - and a shell template only what the renderer can quote safely. Apart from the rest of a
Job file's rules (:mod:`.job_rules`) because they read the file as written, declarations valid
or not, so one bad declaration is not reported again at every use.
"""

from __future__ import annotations

from collections.abc import Sequence

from specdojo_routine.core import jobmodel
from specdojo_routine.core.inputs import NO_FIELDS
from specdojo_routine.core.templates import (
    Placeholder,
    TemplateError,
    check_shell_template,
    inner_shell_placeholders,
    placeholders,
)
from specdojo_routine.core.validation import NO_NUL, Node, Report, template_pos

_PLAIN_NAMES = ("job_id", "project_id", "specdojo", "scheduled_at", "job_run_id")


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


def check_job_templates(r: Report, root: Node, specs: Sequence[jobmodel.InputSpec]) -> None:
    """Report every placeholder of the Job Definition in ``root`` that names nothing it
    declares, and every shell template the renderer cannot quote safely."""
    inputs, values = _declared(root)
    declared = root.get("inputs")
    for spec in specs:
        source = spec.from_checkpoint
        problem = _names(f'"{source}"', source, values, "checkpoint") if source else None
        if problem is not None and declared is not None:
            where = declared.child(spec.name).child("from_checkpoint")
            r.error(where.pos, f"{where.label}: {problem}")
    lists = frozenset(spec.name for spec in specs if spec.type == "list")
    for node in _template_nodes(root):
        in_key = node.label == "run.idempotency_key"
        reported = len(r.problems)
        for ph in placeholders(r, node):
            problem = _placeholder_problem(ph, inputs, values, in_key=in_key, lists=lists)
            if problem is not None:
                r.error(template_pos(r, node, ph.start), f"{node.label}: {problem}")
        clean = len(r.problems) == reported  # one report per bad placeholder
        if clean and node.label in _SHELL_TEMPLATES and isinstance(node.value, str):
            _check_shell_safety(r, node)  # what run renders, with or without placeholders
        elif node.label not in _SHELL_TEMPLATES and (nul := str(node.value).find("\0")) >= 0:
            # a checkpoint value, a key or a description: it reaches a later run's command
            r.error(template_pos(r, node, nul),
                    f"{node.label}: a NUL character (\\0) is in it {NO_NUL}")


_SHELL_TEMPLATES = ("task.command", "task.precondition.command")


def _check_shell_safety(r: Report, node: Node) -> None:
    """A placeholder the shell renderer cannot quote safely is a validate error, not a
    run-time surprise (SPEC §7.2)."""
    try:
        check_shell_template(str(node.value))
    except TemplateError as exc:
        r.error(template_pos(r, node, exc.offset), f"{node.label}: {exc.message}")
        return
    for ph, command in inner_shell_placeholders(str(node.value)):
        r.warn(template_pos(r, node, ph.start),
               f"{node.label}: {{{{{ph.name}}}}} is in an argument `{command}` runs as shell "
               "code again, where quoting protects nothing; pass the value as a positional "
               f"argument instead (sh -c '... \"$1\"' sh \"{{{{{ph.name}}}}}\") or in the "
               "environment")


def _placeholder_problem(
    ph: Placeholder, inputs: Sequence[str], values: Sequence[str] | None, *, in_key: bool,
    lists: frozenset[str] = frozenset(),
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
        return _names(shown, rest, inputs, "input") or _field(shown, rest, lists)
    if head == "checkpoint" and rest:
        return _names(shown, rest, values, "checkpoint")
    return (f"unknown template value {shown} (use job_id, project_id, specdojo, scheduled_at, "
            "job_run_id, inputs.<name> or checkpoint.<key>)")


def _field(shown: str, path: str, lists: frozenset[str]) -> str | None:
    """Why ``{{inputs.x.y}}`` names nothing: an input is a string, number, boolean or list,
    never a mapping, so a path into it renders empty in every run (SPEC §7.2: an unknown
    name is a validate error). A list renders whole, joined with ``,``."""
    name, dot, _ = path.partition(".")
    if not dot:
        return None
    use = (f'a list renders whole, joined with ",": use {{{{inputs.{name}}}}}'
           if name in lists else f"use {{{{inputs.{name}}}}}")
    return f"{shown} is {NO_FIELDS} ({use})"


def _names(shown: str, path: str, declared: Sequence[str] | None, what: str) -> str | None:
    """None when the first segment of ``path`` is declared, else why not."""
    if declared is None:
        return f"{shown} names no checkpoint value (the job declares no checkpoint)"
    if path.split(".")[0] in declared:
        return None
    noun = "input" if what == "input" else "checkpoint value"
    return f"{shown} names no declared {noun} (declared: {', '.join(declared) or 'none'})"
