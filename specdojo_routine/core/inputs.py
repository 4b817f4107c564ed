"""Job input values (SPEC §7.1, seed 002 §3): one set of rules for defaults and run-time values.

Pure: shared by definition validation (``default:``) and the Job runner (``--input k=v``,
routine inputs, checkpoint values). A message names the input (``Input level must be at least
1 (got 0)``) so callers can print it as it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

import attrs

from specdojo_routine.core.jobmodel import InputSpec, InputValue
from specdojo_routine.core.redact_rules import names_a_credential
from specdojo_routine.core.templates import find_placeholders, template_text
from specdojo_routine.core.validation import (
    MAX_SAFE_INTEGER,
    NO_NUL,
    describe,
    is_int,
    safe_int,
)

_INTEGER_TEXT = re.compile(r"[-+]?[0-9]{1,20}")
INPUT_TYPES = ("string", "integer", "boolean", "list")
INPUT_FIELDS = ("type", "description", "required", "default", "enum", "minimum", "maximum",
                "from_checkpoint", "resolve", "git_revision")
DOTTED_PATH = re.compile(r"[A-Za-z0-9_]+(?:\.[A-Za-z0-9_-]+)*")


def _type_error(spec: InputSpec, value: object) -> str | None:
    name, kind = spec.name, spec.type
    if kind == "string" and not isinstance(value, str):
        return f"Input {name} must be a string (got {describe(value)})"
    if kind == "boolean" and not isinstance(value, bool):
        return f"Input {name} must be true or false (got {describe(value)})"
    if kind == "integer":
        if not is_int(value):
            return f"Input {name} must be an integer (got {describe(value)})"
        assert isinstance(value, int)
        if abs(value) > MAX_SAFE_INTEGER:
            limit = MAX_SAFE_INTEGER
            return f"Input {name} must be an integer between -{limit} and {limit}"
    if kind == "list" and not (
        isinstance(value, list | tuple) and all(isinstance(item, str) for item in value)
    ):
        return f"Input {name} must be a list of strings (got {describe(value)})"
    return None


def secret_name(name: str) -> str | None:
    """A message when an input's name says its value is a credential
    (:func:`.redact.names_a_credential`): input values are recorded in the run ledger, view and
    plan (SPEC §7.3), where no secret may go (§7.5)."""
    if not names_a_credential(name):
        return None
    return (f"inputs.{name} is named like a secret, but input values are recorded in the run "
            "ledger, view and plan: pass a secret in an environment variable whose name "
            "contains SECRET, TOKEN or PASSWORD, which is redacted everywhere (SPEC §7.5)")


def check_value(spec: InputSpec, value: object) -> str | None:
    """``None`` when ``value`` is a valid value of ``spec``, else a one-line message.

    The type must already match (``parse_cli_value`` turns text into the type); ``enum`` applies
    to a scalar or to each element of a list, ``minimum``/``maximum`` to integers. (A value
    that holds a secret is refused where the environment's secrets are known too:
    :func:`.jobplan.refuse_secret_inputs`.)
    """
    problem = _type_error(spec, value)
    if problem is not None:
        return problem
    items = tuple(value) if isinstance(value, list | tuple) else (value,)
    if any(isinstance(item, str) and "\0" in item for item in items):
        return f"Input {spec.name} must not hold a NUL character (\\0) {NO_NUL}"
    if spec.enum is not None:
        for item in items:
            if not any(_same(item, allowed) for allowed in spec.enum):
                allowed_text = ", ".join(_plain(a) for a in spec.enum)
                return f"Input {spec.name} must be one of: {allowed_text} (got {describe(item)})"
    if spec.type == "integer" and isinstance(value, int):
        if spec.minimum is not None and value < spec.minimum:
            return f"Input {spec.name} must be at least {spec.minimum} (got {value})"
        if spec.maximum is not None and value > spec.maximum:
            return f"Input {spec.name} must be at most {spec.maximum} (got {value})"
    return None


def _same(a: object, b: object) -> bool:
    """Equality that keeps ``True`` and ``1`` apart."""
    return type(a) is type(b) and a == b


def _plain(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_text(spec: InputSpec, text: str) -> InputValue:
    """Turn command-line text into a value of the spec's type (no enum/range check).

    integer: optional sign and ASCII digits; boolean: ``true``/``false``; list: comma-separated,
    items stripped, empty items dropped; string: as is. Raises ``ValueError`` with a message.
    """
    if spec.type == "integer":
        stripped = text.strip()
        if not _INTEGER_TEXT.fullmatch(stripped):
            raise ValueError(f"Input {spec.name} must be an integer (got {describe(text)})")
        return int(stripped)
    if spec.type == "boolean":
        if text in ("true", "false"):
            return text == "true"
        raise ValueError(f"Input {spec.name} must be true or false (got {describe(text)})")
    if spec.type == "list":
        return tuple(item.strip() for item in text.split(",") if item.strip())
    return text


def parse_cli_value(spec: InputSpec, text: str) -> InputValue:
    """Parse ``--input k=v`` text (or a rendered routine input) and check it fully.

    Raises ``ValueError`` whose message is the one-line reason.
    """
    value = parse_text(spec, text)
    problem = check_value(spec, value)
    if problem is not None:
        raise ValueError(problem)
    return value


def coerce_value(spec: InputSpec, value: object) -> InputValue:
    """Normalise a stored value (checkpoint, git, YAML default) to the spec's type, then check it.

    Text is parsed like ``--input``; a list becomes a tuple; anything else must already have the
    type. Raises ``ValueError`` with a one-line message.
    """
    normal: object = value
    if isinstance(value, str) and spec.type != "string":
        normal = parse_text(spec, value)
    elif isinstance(value, list | tuple):
        normal = tuple(value)
    problem = check_value(spec, normal)
    if problem is not None:
        raise ValueError(problem)
    assert isinstance(normal, str | int | bool | tuple)
    return normal


# --- input declarations (a Job's ``inputs.<name>`` mapping) ------------------------------------

Complaint = tuple[str, str]  # (offending field, or "" for the declaration itself; message)


def build_input_spec(
    name: str, raw: Mapping[str, object]
) -> tuple[InputSpec | None, list[Complaint]]:
    """An :class:`InputSpec` from the declaration ``inputs.<name>`` (plain data; unknown fields
    are the caller's to report), and every problem as ``(field, message)``."""
    out: list[Complaint] = []

    def bad(field: str, message: str) -> None:
        out.append((field, f"inputs.{name}.{field} {message}"))

    kind = raw.get("type")
    if not isinstance(kind, str) or kind not in INPUT_TYPES:
        bad("type", f"must be string|integer|boolean|list (got {_given(raw, 'type')})")
        return None, out
    source, description = raw.get("from_checkpoint"), raw.get("description")
    spec = InputSpec(
        name=name, type=kind,  # type: ignore[arg-type]
        required=_flag(raw, "required", bad) is True,
        enum=_enum(raw, kind, bad),
        minimum=_bound(raw, "minimum", kind, bad), maximum=_bound(raw, "maximum", kind, bad),
        from_checkpoint=source if isinstance(source, str) else None,
        resolve="git_head" if raw.get("resolve") == "git_head" else None,
        git_revision=_flag(raw, "git_revision", bad) is True,
        description=description if isinstance(description, str) else None,
    )
    _check_declaration(spec, raw, bad)
    if "default" in raw:
        default = raw["default"]
        default = tuple(default) if isinstance(default, list) else default
        problem = check_value(spec, default)
        if problem is not None:
            bad("default", f"is invalid: {problem}")
        elif isinstance(default, str | int | tuple):
            spec = attrs.evolve(spec, default=default)
    return (spec if not out else None), out


def _check_declaration(
    spec: InputSpec, raw: Mapping[str, object], bad: Callable[[str, str], None]
) -> None:
    """The rules between fields, and those of the fields not checked while building."""
    if spec.git_revision and spec.type != "string":
        bad("git_revision", f"needs type string (got type {spec.type})")
    source = raw.get("from_checkpoint")
    if source is not None and (not isinstance(source, str) or not DOTTED_PATH.fullmatch(source)):
        bad("from_checkpoint", f"must be a dotted path such as revision (got {describe(source)})")
    if "resolve" in raw and spec.resolve is None:
        bad("resolve", f"must be git_head (got {describe(raw['resolve'])})")
    if "description" in raw and spec.description is None:
        bad("description", f"must be a string (got {describe(raw['description'])})")
    low, high = spec.minimum, spec.maximum
    if low is not None and high is not None and low > high:
        bad("minimum", f"must not exceed maximum ({low} > {high})")


def _given(raw: Mapping[str, object], key: str) -> str:
    return describe(raw[key]) if key in raw else "nothing"


def _flag(raw: Mapping[str, object], key: str, bad: Callable[[str, str], None]) -> bool | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, bool):
        bad(key, f"must be a boolean (true or false, got {describe(value)})")
        return None
    return value


def _bound(
    raw: Mapping[str, object], key: str, kind: str, bad: Callable[[str, str], None]
) -> int | None:
    if key not in raw:
        return None
    value = raw[key]
    if kind != "integer" or not safe_int(value):
        bad(key, f"is only allowed as an integer constraint (type {kind}, got {describe(value)})")
        return None
    assert isinstance(value, int)
    return value


def _enum(
    raw: Mapping[str, object], kind: str, bad: Callable[[str, str], None]
) -> tuple[str | int | bool, ...] | None:
    if "enum" not in raw:
        return None
    value = raw["enum"]
    item_kind = "string" if kind == "list" else kind
    fits: dict[str, Callable[[object], bool]] = {
        "string": lambda v: isinstance(v, str), "integer": safe_int,
        "boolean": lambda v: isinstance(v, bool),
    }
    items = value if isinstance(value, list | tuple) else []
    good = [v for v in items if fits[item_kind](v)]
    if not items or len(good) != len(items) or len({(type(v), v) for v in good}) != len(good):
        shown = describe(value)
        bad("enum", f"must be a non-empty unique list of {item_kind} values (got {shown})")
        return None
    return tuple(v for v in good if isinstance(v, str | int))


# --- an idempotency key that renders empty (SPEC §7.3 step 1) -----------------------------------

#: why ``{{inputs.x.y}}`` renders empty, in the key's check and at any template's placeholder
NO_FIELDS = "always empty: an input has no fields"


def blank_key_parts(
    key: str, specs: Sequence[InputSpec], given: Mapping[str, InputValue] | None = None, *,
    any_value: bool = False,
) -> list[tuple[str, str]]:
    """Why ``run.idempotency_key`` renders empty, as ``(placeholder name, why)`` pairs; empty
    when it cannot. A run with an empty key fails (:func:`.jobplan.render_key`), so
    ``validate`` asks this of the run it can foresee: the inputs in ``given`` (a routine's),
    the others left to their defaults, a required one given some value, a checkpoint that
    could hold a value; with ``any_value``, of every run: each input given its blankest
    value, before any checkpoint. ``key`` must parse (:func:`.templates.find_placeholders`)."""
    found = find_placeholders(key)
    bounds = [0, *(i for ph in found for i in (ph.start, ph.end)), len(key)]
    if any(key[a:b].strip() for a, b in zip(bounds[::2], bounds[1::2], strict=True)):
        return []  # literal text is never blank
    by_name = {spec.name: spec for spec in specs}
    parts: dict[str, str] = {}
    for ph in found:
        head, _, rest = ph.name.partition(".")
        why: str | None = None  # a name never blank, or unknown (reported where it is written)
        if head == "checkpoint" and any_value:
            why = "empty until a run has advanced the checkpoint"
        elif head == "inputs" and "." in rest:
            why = NO_FIELDS
        elif head == "inputs" and rest in by_name:
            why = _blank_input(by_name[rest], (given or {}).get(rest), any_value=any_value)
        if why is None:
            return []
        parts.setdefault(ph.name, why)
    return list(parts.items())


def _blank_input(spec: InputSpec, given: InputValue | None, *, any_value: bool) -> str | None:
    """Why input ``spec`` renders blank in the run :func:`blank_key_parts` foresees, or None."""
    if given is not None:
        shown = template_text(given)
        return None if shown.strip() or spec.git_revision else f"given as {describe(shown)}"
    if any_value and (blank := _blankest(spec)) is not None:
        return f"given as {describe(blank)}"
    if spec.type == "string" and not spec.git_revision and spec.enum is not None and all(
            isinstance(item, str) and not item.strip() for item in spec.enum):
        return "always empty: its enum allows only blank values"
    if spec.resolve == "git_head" or (spec.required and spec.default is None):
        return None  # a commit sha, or a value the run must be given
    if spec.from_checkpoint is not None and not any_value:
        return None  # the checkpoint may hold it (an imported one, SPEC §10)
    if spec.default is not None:
        default = spec.default
        if template_text(default).strip() or spec.git_revision:
            return None
        return f"default {describe(list(default) if isinstance(default, tuple) else default)}"
    if spec.from_checkpoint is not None:
        return f"not given, and empty until the checkpoint holds {spec.from_checkpoint}"
    return "not given"


def _blankest(spec: InputSpec) -> str | None:
    """The blank text an input may be given (``--input x=``), or None when none is valid."""
    if spec.git_revision or spec.type in ("integer", "boolean"):
        return None  # a commit sha; a number or true/false
    if spec.enum is None or spec.type == "list":  # no item at all passes any enum
        return ""
    return next((item for item in spec.enum if isinstance(item, str) and not item.strip()), None)
