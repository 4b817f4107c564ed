"""Job input value rules (inputs.py): one set of rules for defaults and run-time values."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specdojo_routine.core.inputs import (
    build_input_spec,
    check_value,
    coerce_value,
    parse_cli_value,
    parse_text,
)
from specdojo_routine.core.jobmodel import InputSpec
from specdojo_routine.core.validation import MAX_SAFE_INTEGER, describe


def spec(**fields: object) -> InputSpec:
    return InputSpec(name=str(fields.pop("name", "x")), **fields)  # type: ignore[arg-type]


# --- check_value -------------------------------------------------------------------------------


def test_a_string_value_of_a_string_input_is_fine() -> None:
    """A string is a valid value of a string input."""
    assert None is check_value(spec(type="string"), "2026-W32")


def test_a_number_is_not_a_string_value() -> None:
    """A YAML number given for a string input is reported, with what was given."""
    assert 'Input x must be a string (got 5)' == check_value(spec(type="string"), 5)


def test_enum_applies_to_scalars() -> None:
    """A scalar outside the enum names the allowed values and the value given."""
    rule = spec(type="string", enum=("daily", "weekly"))
    assert 'Input x must be one of: daily, weekly (got "monthly")' == check_value(rule, "monthly")


def test_enum_accepts_a_listed_scalar() -> None:
    """A scalar inside the enum passes."""
    assert None is check_value(spec(type="string", enum=("daily", "weekly")), "weekly")


def test_enum_applies_to_each_list_element() -> None:
    """For a list input the enum is checked element by element; the first stranger is named."""
    rule = spec(type="list", enum=("en", "ja"))
    assert 'Input x must be one of: en, ja (got "fr")' == check_value(rule, ("en", "fr"))


def test_a_list_of_allowed_elements_passes() -> None:
    """A list whose every element is in the enum passes (an empty list too)."""
    rule = spec(type="list", enum=("en", "ja"))
    assert (None, None) == (check_value(rule, ("ja", "en")), check_value(rule, ()))


def test_integer_enum_does_not_confuse_true_with_one() -> None:
    """``true`` is not the integer 1, even though Python says True == 1."""
    assert "Input x must be an integer (got true)" == check_value(
        spec(type="integer", enum=(1, 2)), True
    )


def test_boolean_enum_does_not_confuse_one_with_true() -> None:
    """The integer 1 is not a boolean."""
    assert "Input x must be true or false (got 1)" == check_value(
        spec(type="boolean", enum=(True,)), 1
    )


def test_minimum_is_inclusive() -> None:
    """The minimum itself is allowed; one below is not."""
    rule = spec(type="integer", minimum=1)
    assert (None, "Input x must be at least 1 (got 0)") == (
        check_value(rule, 1), check_value(rule, 0)
    )


def test_maximum_is_inclusive() -> None:
    """The maximum itself is allowed; one above is not."""
    rule = spec(type="integer", maximum=5)
    assert (None, "Input x must be at most 5 (got 6)") == (
        check_value(rule, 5), check_value(rule, 6)
    )


def test_integers_beyond_the_safe_range_are_refused() -> None:
    """Integers must survive JSON on both sides (the upstream tool is JavaScript)."""
    message = check_value(spec(type="integer"), MAX_SAFE_INTEGER + 1)
    assert f"Input x must be an integer between -{MAX_SAFE_INTEGER} and {MAX_SAFE_INTEGER}" == (
        message
    )


def test_a_list_must_hold_strings() -> None:
    """List inputs carry strings (they are rendered joined with commas)."""
    assert "Input x must be a list of strings (got [1, 2])" == check_value(
        spec(type="list"), (1, 2)
    )


def test_booleans_must_be_booleans() -> None:
    """The text "true" is not a boolean value (parse_cli_value turns text into one)."""
    assert 'Input x must be true or false (got "true")' == check_value(spec(type="boolean"), "true")


def test_null_is_no_value_of_any_type() -> None:
    """A null value (``default: ~``) is reported as null."""
    assert "Input x must be an integer (got null)" == check_value(spec(type="integer"), None)


# --- parse_cli_value ---------------------------------------------------------------------------


def test_cli_integer_text_becomes_an_int() -> None:
    """``--input n=42`` gives the integer 42."""
    assert 42 == parse_cli_value(spec(type="integer"), "42")


def test_cli_integer_accepts_a_sign() -> None:
    """A leading minus sign is part of the integer."""
    assert -3 == parse_cli_value(spec(type="integer"), "-3")


@pytest.mark.parametrize("text", ["4.5", "1_000", "0x10", "", "١٢", "12abc"])
def test_cli_integer_rejects_non_decimal_text(text: str) -> None:
    """Only ASCII decimal digits make an integer (no underscores, hex, other digits)."""
    with pytest.raises(ValueError, match="must be an integer"):
        parse_cli_value(spec(type="integer"), text)


def test_cli_integer_range_is_checked() -> None:
    """parse_cli_value checks the range too, with the same message as check_value."""
    with pytest.raises(ValueError) as caught:
        parse_cli_value(spec(type="integer", minimum=1, maximum=5), "9")
    assert "Input x must be at most 5 (got 9)" == str(caught.value)


@pytest.mark.parametrize(("text", "value"), [("true", True), ("false", False)])
def test_cli_boolean_accepts_true_and_false(text: str, value: bool) -> None:
    """Booleans are spelt true or false."""
    assert value is parse_cli_value(spec(type="boolean"), text)


@pytest.mark.parametrize("text", ["yes", "True", "1", "on", ""])
def test_cli_boolean_rejects_other_spellings(text: str) -> None:
    """yes/on/1/True are not booleans (YAML 1.2 and upstream agree)."""
    with pytest.raises(ValueError, match="must be true or false"):
        parse_cli_value(spec(type="boolean"), text)


def test_cli_list_splits_on_commas_and_trims() -> None:
    """A list input is comma-separated; blanks around items and empty items vanish."""
    assert ("en", "ja") == parse_cli_value(spec(type="list"), " en, ,ja ,")


def test_cli_list_checks_the_enum_per_element() -> None:
    """Each element of a list given on the command line is checked against the enum."""
    with pytest.raises(ValueError, match='got "fr"'):
        parse_cli_value(spec(type="list", enum=("en", "ja")), "en,fr")


def test_cli_string_is_taken_verbatim() -> None:
    """A string input keeps spaces, commas and equals signs."""
    assert " a=b, c " == parse_cli_value(spec(type="string"), " a=b, c ")


def test_cli_string_enum_is_checked() -> None:
    """A string outside the enum is refused."""
    with pytest.raises(ValueError, match="must be one of: daily, weekly"):
        parse_cli_value(spec(type="string", enum=("daily", "weekly")), "hourly")


@given(st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER))
def test_integer_text_round_trips(number: int) -> None:
    """Any safe integer written in decimal parses back to itself."""
    assert number == parse_text(spec(type="integer"), str(number))


@given(st.lists(st.text(alphabet="abcxyz-_ ", min_size=1).map(str.strip).filter(bool)))
def test_list_text_round_trips(items: list[str]) -> None:
    """Items without commas, joined with commas, parse back to the same items."""
    assert tuple(items) == parse_text(spec(type="list"), ",".join(items))


# --- coerce_value ------------------------------------------------------------------------------


def test_coerce_turns_checkpoint_text_into_the_input_type() -> None:
    """A stored text value (e.g. from a checkpoint) is parsed to the spec's type."""
    assert 7 == coerce_value(spec(type="integer"), "7")


def test_coerce_turns_a_stored_list_into_a_tuple() -> None:
    """A JSON list becomes the tuple form used for list inputs."""
    assert ("en",) == coerce_value(spec(type="list"), ["en"])


def test_coerce_still_checks_the_rules() -> None:
    """Coercion does not bypass enum/range checks."""
    with pytest.raises(ValueError, match="at least 1"):
        coerce_value(spec(type="integer", minimum=1), 0)


# --- build_input_spec --------------------------------------------------------------------------


def test_declaration_builds_a_spec_with_its_default() -> None:
    """A valid declaration becomes an InputSpec carrying the checked default."""
    built, problems = build_input_spec("level", {"type": "integer", "minimum": 1, "default": 3})
    assert ([], InputSpec(name="level", type="integer", minimum=1, default=3)) == (problems, built)


def test_list_default_is_kept_as_a_tuple() -> None:
    """A list default is stored as a tuple (frozen values)."""
    built, _ = build_input_spec("langs", {"type": "list", "default": ["en"]})
    assert built is not None
    assert ("en",) == built.default


def test_default_violating_the_enum_is_a_problem_of_the_default_field() -> None:
    """Defaults follow the run-time rules; the problem points at ``default``."""
    built, problems = build_input_spec(
        "cadence", {"type": "string", "enum": ["daily"], "default": "weekly"}
    )
    expected = ("default", 'inputs.cadence.default is invalid: Input cadence must be one of: '
                'daily (got "weekly")')
    assert (None, [expected]) == (built, problems)


def test_default_below_minimum_is_a_problem() -> None:
    """An integer default below the minimum is reported like a run-time value."""
    _, problems = build_input_spec("n", {"type": "integer", "minimum": 2, "default": 1})
    assert [("default", "inputs.n.default is invalid: Input n must be at least 2 (got 1)")] == (
        problems
    )


def test_missing_type_stops_the_declaration() -> None:
    """Without a type nothing else can be checked; one problem, no spec."""
    expected = [("type", "inputs.x.type must be string|integer|boolean|list (got nothing)")]
    assert (None, expected) == build_input_spec("x", {"required": True})


def test_bounds_only_apply_to_integers() -> None:
    """minimum/maximum on a string input are refused."""
    _, problems = build_input_spec("s", {"type": "string", "maximum": 3})
    assert [("maximum", "inputs.s.maximum is only allowed as an integer constraint (type "
             "string, got 3)")] == problems


def test_minimum_above_maximum_is_a_problem() -> None:
    """An empty range cannot be satisfied."""
    _, problems = build_input_spec("n", {"type": "integer", "minimum": 5, "maximum": 1})
    assert [("minimum", "inputs.n.minimum must not exceed maximum (5 > 1)")] == problems


def test_enum_items_must_have_the_input_type() -> None:
    """An integer input's enum holds integers."""
    _, problems = build_input_spec("n", {"type": "integer", "enum": [1, "2"]})
    assert ["enum"] == [field for field, _ in problems]


def test_enum_items_must_be_unique() -> None:
    """Duplicated enum items are refused."""
    _, problems = build_input_spec("s", {"type": "string", "enum": ["a", "a"]})
    assert ["enum"] == [field for field, _ in problems]


def test_git_revision_needs_a_string_input() -> None:
    """git_revision only makes sense for text."""
    _, problems = build_input_spec("n", {"type": "integer", "git_revision": True})
    assert [("git_revision", "inputs.n.git_revision needs type string (got type integer)")] == (
        problems
    )


def test_resolve_only_knows_git_head() -> None:
    """resolve: anything but git_head is refused."""
    _, problems = build_input_spec("r", {"type": "string", "resolve": "git_tail"})
    assert [("resolve", 'inputs.r.resolve must be git_head (got "git_tail")')] == problems


def test_describe_shortens_long_values() -> None:
    """Long strings and huge integers are abbreviated in messages."""
    assert ('"' + "a" * 57 + '..."', "a 40-digit number") == (
        describe("a" * 100), describe(10**39)
    )
