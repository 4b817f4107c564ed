"""Job input values (SPEC §7.1, seed 002 §3): one set of rules for defaults and run-time values.

Pure: shared by definition validation (``default:``) and the Job runner (``--input k=v``,
routine inputs, checkpoint values). A message names the input (``Input level must be at least
1 (got 0)``) so callers can print it as it is.
"""

from __future__ import annotations

import re

from .model import InputSpec, InputValue

# Integers are bounded like the upstream tool's (JavaScript "safe integers"), so every value
# round-trips through JSON on both sides.
MAX_SAFE_INTEGER = 2**53 - 1

_INTEGER_TEXT = re.compile(r"[-+]?[0-9]{1,20}")


def _is_integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _show(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_show(item) for item in value) + "]"
    return str(value)


def _type_error(spec: InputSpec, value: object) -> str | None:
    name, kind = spec.name, spec.type
    if kind == "string" and not isinstance(value, str):
        return f"Input {name} must be a string (got {_show(value)})"
    if kind == "boolean" and not isinstance(value, bool):
        return f"Input {name} must be true or false (got {_show(value)})"
    if kind == "integer":
        if not _is_integer(value):
            return f"Input {name} must be an integer (got {_show(value)})"
        assert isinstance(value, int)
        if abs(value) > MAX_SAFE_INTEGER:
            return f"Input {name} must be an integer between -{MAX_SAFE_INTEGER} and {MAX_SAFE_INTEGER}"
    if kind == "list" and not (
        isinstance(value, list | tuple) and all(isinstance(item, str) for item in value)
    ):
        return f"Input {name} must be a list of strings (got {_show(value)})"
    return None


def check_value(spec: InputSpec, value: object) -> str | None:
    """``None`` when ``value`` is a valid value of ``spec``, else a one-line message.

    The type must already match (``parse_cli_value`` turns text into the type); ``enum`` applies
    to a scalar or to each element of a list, ``minimum``/``maximum`` to integers.
    """
    problem = _type_error(spec, value)
    if problem is not None:
        return problem
    items = tuple(value) if isinstance(value, list | tuple) else (value,)
    if spec.enum is not None:
        for item in items:
            if not any(_same(item, allowed) for allowed in spec.enum):
                allowed_text = ", ".join(_plain(a) for a in spec.enum)
                return f"Input {spec.name} must be one of: {allowed_text} (got {_show(item)})"
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
            raise ValueError(f"Input {spec.name} must be an integer (got {_show(text)})")
        return int(stripped)
    if spec.type == "boolean":
        if text in ("true", "false"):
            return text == "true"
        raise ValueError(f"Input {spec.name} must be true or false (got {_show(text)})")
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
