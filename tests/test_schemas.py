"""docs/schemas/*.schema.json agree with the definitions the loader accepts and rejects.

Every routine and Job Definition under fixtures/valid/ and fixtures/demo/ validates against its
schema; the schema-detectable cases of fixtures/invalid/ fail it at the offending key; the
schemas' key and value sets are the loader's own constants, so the two cannot drift apart.
"""

from __future__ import annotations

import functools
import json
import re
import zoneinfo
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, ValidationError
from ruamel.yaml import YAML

from specdojo_routine.core import inputs, job_rules, model, routine_rules
from specdojo_routine.core.cron_syntax import cron_syntax_error

REPO = Path(__file__).resolve().parent.parent
SCHEMAS = REPO / "docs" / "schemas"
FIXTURES = REPO / "fixtures"


@functools.cache
def schema(kind: str) -> dict[str, Any]:
    """The parsed schema document ``rtn`` or ``job``."""
    document: dict[str, Any] = json.loads((SCHEMAS / f"{kind}.schema.json").read_text("utf-8"))
    return document


def validator(kind: str) -> Draft202012Validator:
    return Draft202012Validator(schema(kind))


def kind_of(path: Path) -> str:
    return "rtn" if path.name.startswith("rtn-") else "job"


def load(path: Path) -> Any:
    return YAML(typ="safe").load(path.read_text(encoding="utf-8"))


def error_paths(kind: str, data: Any) -> set[str]:
    """The JSON path of every error, including those nested under anyOf/oneOf."""
    found: set[str] = set()
    pending: list[ValidationError] = list(validator(kind).iter_errors(data))
    while pending:
        error = pending.pop()
        found.add(error.json_path)
        pending.extend(error.context or ())
    return found


def definition_files(*roots: Path) -> list[Path]:
    found = [p for root in roots for pattern in ("**/rtn-*.y*ml", "**/job-*.y*ml")
             for p in root.glob(pattern) if "generated" not in p.parts]
    return sorted(found)


VALID = definition_files(FIXTURES / "valid", FIXTURES / "demo")

# (file under fixtures/invalid/, JSON paths the schema must report) - the cases a schema can
# detect: unknown keys, wrong types, id/interval/cron/timezone shapes, enum values, both or
# neither of interval and trigger, exit codes, closed option sets.
INVALID = [
    ("routine-unknown-keys/routines/rtn-keys.yaml", {"$", "$.action"}),
    ("job-unknown-keys/jobs/job-keys.yaml",
     {"$", "$.task", "$.task.precondition", "$.task.analysis", "$.run", "$.checkpoint"}),
    ("routine-field-types/routines/rtn-types.yaml", {"$.name", "$.description", "$.enabled"}),
    ("action-exec-options/routines/rtn-exec.yaml",
     {"$.action[0].strategy", "$.action[0].loop", "$.action[1].parallel", "$.action[2]"}),
    ("action-register/routines/rtn-register.yaml",
     {"$.action.filter", "$.action.filter.types[1]", "$.action.limit"}),
    ("routine-id-bad-shape/routines/rtn-Daily_Run.yml", {"$.id"}),
    ("job-identity/jobs/job-Bad.yaml", {"$", "$.id"}),
    ("routine-bad-policy/routines/rtn-policy.yaml",
     {"$.policy", "$.policy.missed_run", "$.policy.overlap", "$.policy.on_interrupted",
      "$.policy.on_failure", "$.policy.starting_deadline"}),
    ("routine-interval-and-trigger/routines/rtn-both.yaml", {"$"}),
    ("routine-no-schedule/routines/rtn-never.yaml", {"$"}),
    ("action-unknown-kind/routines/rtn-kind.yaml", {"$.action.kind"}),
    ("action-list-unknown-kind/routines/rtn-kinds.yaml",
     {"$.action[0]", "$.action[1].kind", "$.action[3]"}),
    ("action-specdojo-args/routines/rtn-s1.yaml",
     {"$.action.args[0]", "$.action.args[2]", "$.action.args[4]"}),
    ("action-specdojo-args/routines/rtn-s6.yaml", {"$.action.args[1]"}),
    ("routine-bad-intervals/routines/rtn-i1.yaml", {"$.interval"}),
    ("routine-bad-intervals/routines/rtn-i2.yaml", {"$.interval"}),
    ("routine-bad-cron/routines/rtn-c2.yaml", {"$.trigger.cron"}),
    ("routine-bad-cron/routines/rtn-c4.yaml", {"$.trigger.cron"}),
    ("routine-bad-cron/routines/rtn-c5.yaml", {"$.trigger.cron"}),
    ("routine-trigger-shape/routines/rtn-t3.yaml", {"$.trigger", "$.trigger.cron"}),
    ("routine-unknown-timezone/routines/rtn-tz2.yaml", {"$.trigger.timezone"}),
    ("job-task-mode/jobs/job-m2.yaml", {"$.task.mode"}),
    ("job-edit-mode/jobs/job-edit.yaml", {"$.task", "$.task.proficiency", "$.task.owner"}),
    ("job-command-mode-fields/jobs/job-cmd.yaml", {"$.task"}),
    ("job-exit-codes/jobs/job-e1.yaml", {"$.task.partial_exit_code", "$.task.noop_exit_code"}),
    ("job-timeout/jobs/job-t2.yaml", {"$.task.timeout"}),
    ("job-precondition/jobs/job-p2.yaml", {"$.task.precondition.skip_when"}),
    ("job-checkpoint/jobs/job-cp2.yaml",
     {"$.checkpoint.values", "$.checkpoint.values.count", "$.checkpoint.advance_on[1]"}),
    ("job-inputs-declarations/jobs/job-inputs.yaml",
     {"$.inputs", "$.inputs.count.type", "$.inputs.size", "$.inputs.bad", "$.inputs.scalar"}),
]


@pytest.mark.parametrize("kind", ["rtn", "job"])
def test_schema_is_valid_draft_2020_12(kind: str) -> None:
    """The schema document is itself a valid JSON Schema draft 2020-12."""
    assert "https://json-schema.org/draft/2020-12/schema" == schema(kind)["$schema"]
    Draft202012Validator.check_schema(schema(kind))


def test_fixture_sets_are_not_empty() -> None:
    """Both fixture trees contribute definitions, so the parametrised test is not vacuous."""
    assert 17 <= len(VALID)
    assert {"demo", "valid"} == {p.relative_to(FIXTURES).parts[0] for p in VALID}


@pytest.mark.parametrize("path", VALID, ids=[str(p.relative_to(FIXTURES)) for p in VALID])
def test_valid_definition_matches_its_schema(path: Path) -> None:
    """A definition the project ships as valid validates against its schema."""
    assert set() == error_paths(kind_of(path), load(path))


@pytest.mark.parametrize(("name", "expected"), INVALID, ids=[name for name, _ in INVALID])
def test_invalid_definition_fails_its_schema_at_the_key(name: str, expected: set[str]) -> None:
    """A schema-detectable mistake fails the schema, reported at the offending key."""
    path = FIXTURES / "invalid" / name
    found = error_paths(kind_of(path), load(path))
    assert expected <= found, f"missing {sorted(expected - found)}; got {sorted(found)}"


def _properties(node: dict[str, Any]) -> set[str]:
    return set(node["properties"])


def test_routine_keys_are_the_loaders() -> None:
    """The routine schema allows exactly the keys the loader allows."""
    assert set(routine_rules.ROUTINE_KEYS) == _properties(schema("rtn"))


def test_job_keys_are_the_loaders() -> None:
    """The job schema allows exactly the top-level and input keys the loader allows."""
    assert set(job_rules.JOB_KEYS) == _properties(schema("job"))
    assert set(inputs.INPUT_FIELDS) == _properties(schema("job")["$defs"]["input"])


def test_action_kinds_and_their_keys_are_the_loaders() -> None:
    """Each action kind takes exactly the keys the loader allows for it."""
    defs = schema("rtn")["$defs"]
    assert list(model.ACTION_KINDS) == defs["action"]["properties"]["kind"]["enum"]
    by_kind = {"job": "jobAction", "specdojo": "specdojoAction", "register": "registerAction",
               "exec-auto": "execAutoAction", "exec-cycle": "execAutoAction",
               "exec-resume": "execResumeAction"}
    allowed = {kind: set(keys) for kind, keys in routine_rules._ACTION_KEYS.items()}
    assert allowed == {kind: _properties(defs[name]) for kind, name in by_kind.items()}


def test_enumerated_values_are_the_models() -> None:
    """Policies, register filters, strategies and proficiencies list the model's values."""
    rtn, job = schema("rtn"), schema("job")
    policy = rtn["properties"]["policy"]["properties"]
    assert [m.value for m in model.MissedRun] == policy["missed_run"]["enum"]
    assert [m.value for m in model.OnInterrupted] == policy["on_interrupted"]["enum"]
    assert [m.value for m in model.OnFailure] == policy["on_failure"]["enum"]
    register = rtn["$defs"]["registerAction"]["properties"]["filter"]["properties"]
    assert list(model.REGISTER_TYPES) == register["types"]["items"]["enum"]
    assert list(model.REGISTER_PRIORITIES) == register["priorities"]["items"]["enum"]
    assert list(model.REGISTER_STATUSES) == register["statuses"]["items"]["enum"]
    strategy = rtn["$defs"]["execAutoAction"]["properties"]["strategy"]["enum"]
    assert list(model.EXEC_STRATEGIES) == strategy
    proficiency = job["$defs"]["agentTask"]["properties"]["proficiency"]["enum"]
    assert list(job_rules.PROFICIENCIES) == proficiency


def test_every_iana_zone_matches_the_timezone_pattern() -> None:
    """No time zone the loader accepts is rejected by the schema's shape check."""
    pattern = re.compile(schema("rtn")["properties"]["trigger"]["properties"]["timezone"]
                         ["pattern"])
    assert [] == [z for z in sorted(zoneinfo.available_timezones()) if not pattern.search(z)]


_NAMES = ["jan", "dec", "sun", "sat", "MON"]
_ATOM = st.one_of(st.integers(0, 70).map(str), st.sampled_from(_NAMES), st.just("*"),
                  st.sampled_from(["L", "W", "?", "H", "#", "@daily", "5#2", "1.5", ""]))
_TOKEN = st.builds(lambda a, b, step: a + (f"-{b}" if b else "") + (f"/{step}" if step else ""),
                   _ATOM, st.one_of(st.none(), _ATOM),
                   st.one_of(st.none(), st.integers(0, 15).map(str)))
_FIELD = st.lists(_TOKEN, min_size=1, max_size=3).map(",".join)
_CRON = st.lists(_FIELD, min_size=4, max_size=6).map(" ".join)


@given(_CRON)
def test_cron_the_loader_accepts_matches_the_schema_pattern(expr: str) -> None:
    """The cron shape check never rejects an expression `validate` accepts."""
    pattern = re.compile(schema("rtn")["$defs"]["cron"]["pattern"])
    if cron_syntax_error(expr) is None:
        assert pattern.search(expr) is not None, expr


@pytest.mark.parametrize("expr", ["@daily", "0 0 * *", "0 0 0 * * *", "0 0 L * *", "0 0 ? * *",
                                  "0 0 * * mon#2", "0 H * * *", "0 0 * * 5L", "*-5 * * * *"])
def test_cron_shape_the_loader_rejects_fails_the_schema_pattern(expr: str) -> None:
    """Macros, wrong field counts and L W # ? H fail the schema, as they fail `validate`."""
    assert cron_syntax_error(expr) is not None
    assert {"$.trigger.cron"} == error_paths(
        "rtn", {"id": "rtn-x", "trigger": {"cron": expr, "timezone": "UTC"},
                "action": {"kind": "exec-resume"}})
