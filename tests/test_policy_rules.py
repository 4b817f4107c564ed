"""`policy.on_failure` and `policy.starting_deadline` in definitions (SPEC §9.1, §9.2)."""

from __future__ import annotations

import pytest

from specdojo_routine.core import cron_syntax, model
from specdojo_routine.store.config import resolve_project
from specdojo_routine.store.definitions import load as definitions
from tests.conftest import Project


def _policy(project: Project, text: str) -> model.Policy:
    project.routine("rtn-p", f'trigger: {{cron: "0 * * * *", timezone: UTC}}\n'
                             f"policy: {text}\naction: {{kind: exec-resume}}\n")
    defs = definitions.load_definitions(resolve_project(project.root))
    assert [] == [str(p) for p in defs.errors]
    routine = defs.routine("rtn-p")
    assert routine is not None
    return routine.policy


def test_defaults_are_continue_and_no_deadline(project: Project) -> None:
    """Without the keys, on_failure is continue and there is no starting deadline."""
    policy = _policy(project, "{missed_run: all}")
    assert (model.OnFailure.CONTINUE, None) == (policy.on_failure, policy.starting_deadline)


@pytest.mark.parametrize(("text", "seconds"), [("90s", 90), ("2m", 120), ("6h", 21600),
                                               ("1d", 86400), ("2w", 1209600)])
def test_deadline_is_parsed_with_its_text(project: Project, text: str, seconds: int) -> None:
    """starting_deadline keeps what was written and its length in seconds."""
    policy = _policy(project, f"{{on_failure: hold, starting_deadline: {text}}}")
    assert (model.OnFailure.HOLD, model.Duration(text=text, seconds=seconds)) == (
        policy.on_failure, policy.starting_deadline)


@pytest.mark.parametrize("text", ["soon", "0s", "05m", "1y", "", "1.5h", "-3m", "m"])
def test_bad_durations_are_refused(text: str) -> None:
    """Only <positive int, no leading zero><s|m|h|d|w> is a duration."""
    assert None is cron_syntax.parse_duration(text)


def test_bad_values_are_located(project: Project) -> None:
    """Bad values name file:line:col and what was given; nothing runs from the file."""
    project.routine("rtn-p", 'interval: 1h\npolicy:\n  on_failure: pause\n'
                             "  starting_deadline: 10\naction: {kind: exec-resume}\n")
    proc = project.cli("validate")
    assert 1 == proc.returncode
    assert [
        'routines/rtn-p.yaml:4:15: policy.on_failure must be continue or hold (got "pause")',
        "routines/rtn-p.yaml:5:22: policy.starting_deadline must be <n>s|m|h|d|w (got 10)",
    ] == proc.stderr.splitlines()
