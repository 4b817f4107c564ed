"""An input that is a secret only where it is used (SPEC §7.5): ``Bearer {{inputs.tok}}``,
``password={{inputs.tok}}``. The rendered command is redacted when recorded, but the inputs,
the idempotency key, the run view and the plan keep the value verbatim, so such a value is
refused before anything is written, as a value that looks like a secret alone is."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from conftest import Project

from specdojo_routine.core.errors import UsageError
from specdojo_routine.core.jobmodel import CommandTask, JobDefinition
from specdojo_routine.core.jobplan import refuse_secrets_in_place

TOKEN = "S3cr3tTokenValue0043"


def _job(project: Project, command: str, key: str = "{{job_id}}:{{inputs.tok}}") -> None:
    project.job("job-sec", f"""\
        name: Secret probe
        inputs:
          tok: {{type: string, required: true}}
        task:
          mode: command
          command: {command}
        run:
          idempotency_key: "{key}"
        """)


@pytest.mark.parametrize("command", [
    """'printf "%s\\n" "Authorization: Bearer {{inputs.tok}}"'""",
    "'printf %s password={{inputs.tok}}'",
    """'curl -H "X-Api-Key: x" --token {{inputs.tok}} https://example.invalid'""",
])
def test_an_input_redacted_where_it_is_used_is_refused_before_anything_is_written(
    project: Project, command: str,
) -> None:
    _job(project, command)
    before = project.files()
    done = project.cli("job", "run", "--job", "job-sec", "--input", f"tok={TOKEN}")
    assert (2, before) == (done.returncode, project.files()), done.stderr
    assert ["error: input tok of job-sec would be redacted where it is used, so it holds a "
            "secret; secrets must reach commands through the environment, never through "
            "inputs"] == done.stderr.splitlines()
    assert TOKEN not in done.stdout + done.stderr
    dry = project.cli("job", "run", "--job", "job-sec", "--input", f"tok={TOKEN}", "--dry-run")
    assert (2, False) == (dry.returncode, TOKEN in dry.stdout + dry.stderr)


def test_a_secret_place_in_the_key_alone_is_refused(project: Project) -> None:
    """The key is recorded verbatim too (``run_created``): a secret place there counts."""
    _job(project, "'printf %s {{inputs.tok}}'", key="{{job_id}}:token={{inputs.tok}}")
    done = project.cli("job", "run", "--job", "job-sec", "--input", f"tok={TOKEN}")
    assert 2 == done.returncode and "would be redacted where it is used" in done.stderr


def test_an_input_in_an_ordinary_place_still_runs(project: Project) -> None:
    """The same value where nothing redacts it is data like any other, and text the template
    itself redacts (``Bearer $TOKEN``) does not count against an input found inside it."""
    _job(project, """'printf "%s|" "Bearer $TOKEN" "{{inputs.tok}}"'""")
    env = project.env(TOKEN="abcdefTOKENabcdef")
    for value in (TOKEN, "TOKEN", "abc"):
        done = project.cli("job", "run", "--job", "job-sec", "--input", f"tok={value}", env=env)
        assert 0 == done.returncode, done.stderr


def _rendered(template: str) -> Any:
    def render(values: Mapping[str, Any]) -> Sequence[str]:
        return [template.replace("{tok}", str(values["tok"]))]
    return render


@pytest.mark.parametrize(("template", "value", "refused"), [
    ("Authorization: Bearer {tok}", TOKEN, True),
    ("password={tok}", "hunter2-XY", True),
    ("api_key: '{tok}'", "x", True),
    ("echo {tok}", TOKEN, False),
    ("Bearer abcdefghijk; echo {tok}", "abc", False),  # the template's own text
    ("password={tok}", "", False),
])
def test_refuse_secrets_in_place(template: str, value: str, refused: bool) -> None:
    """The rule alone: a value counts only where its own occurrences are redacted."""
    job = JobDefinition(id="job-x", path="jobs/job-x.yaml", name="X",
                        task=CommandTask(command="true"), idempotency_key="k")
    try:
        refuse_secrets_in_place(job, {"tok": value}, [], _rendered(template))
    except UsageError as exc:
        assert refused, exc
    else:
        assert not refused
