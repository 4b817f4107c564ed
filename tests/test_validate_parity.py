"""What ``validate`` accepts, a run can run; what it refuses, no run could (SPEC §3, §7.1-§7.3,
§11.1, §11.4): each case runs ``validate`` and then the run itself, on real files."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Project
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from specdojo_routine.core import inputs as input_rules
from specdojo_routine.core import jobplan
from specdojo_routine.core.errors import JobError
from specdojo_routine.core.inputs import blank_key_parts, build_input_spec
from specdojo_routine.core.jobmodel import CommandTask, InputSpec, InputValue, JobDefinition
from specdojo_routine.core.templates import job_context, template_text
from tests.agenthelper import AgentProject
from tests.test_jobs_e2e import env


def key_job(inputs: str, key: str, extra: str = "") -> str:
    """A command Job whose idempotency key is ``key`` (``inputs``: the YAML of its inputs)."""
    return (f"name: K\n{inputs}task: {{mode: command, command: echo hi}}\n"
            f"run: {{idempotency_key: {key}}}\n{extra}")


@pytest.mark.parametrize(("inputs", "why"), [
    ('inputs:\n  x: {type: string, default: ""}\n', 'inputs.x (default "")'),
    ("inputs:\n  x: {type: string}\n", "inputs.x (not given)"),
    ("inputs:\n  x: {type: list, default: []}\n", "inputs.x (default [])"),
    ("inputs:\n  x: {type: integer}\n", "inputs.x (not given)"),
])
def test_a_key_empty_without_inputs_is_a_validate_error(
    project: Project, inputs: str, why: str,
) -> None:
    """A key that renders empty when the Job runs with no input (its defaults) passed validate,
    and every such run failed with "renders empty"; validate now says so at the key."""
    project.job("job-k", key_job(inputs, '"{{inputs.x}}"'))
    checked = project.cli("validate", env=env(project))
    assert 1 == checked.returncode, checked.stdout + checked.stderr
    assert (f"jobs/job-k.yaml:{inputs.count(chr(10)) + 4}:24: run.idempotency_key renders "
            f"empty when the Job runs without inputs: {why}") in checked.stderr
    done = project.cli("job", "run", "--job", "job-k", env=env(project))
    assert 1 == done.returncode, done.stderr


@pytest.mark.parametrize(("inputs", "key", "given", "why"), [
    ("inputs:\n  x: {type: string, required: true}\n", '"{{inputs.x}}"', "x= ",
     'inputs.x (given as "")'),
    ("inputs:\n  x: {type: string, default: a}\n", '"{{inputs.x}}"', "x=",
     'inputs.x (given as "")'),
    ("inputs:\n  x: {type: list, required: true}\n", '" {{inputs.x}}"', "x=,",
     'inputs.x (given as "")'),
    ("inputs:\n  x: {type: string, required: true, enum: [a, ' ']}\n", '"{{inputs.x}}"', "x= ",
     'inputs.x (given as " ")'),
    ("", '"{{checkpoint.last}}"', "",
     "checkpoint.last (empty until a run has advanced the checkpoint)"),
])
def test_a_key_empty_for_some_inputs_is_a_validate_warning(
    project: Project, inputs: str, key: str, given: str, why: str,
) -> None:
    """A key that renders empty only for some values is a warning naming them (the run with
    those values fails); the same Job runs with other values."""
    extra = 'checkpoint: {values: {last: "{{job_id}}"}}\n' if "checkpoint" in key else ""
    project.job("job-k", key_job(inputs, key, extra))
    checked = project.cli("validate", env=env(project))
    assert 0 == checked.returncode, checked.stderr
    assert (f":24: warning: run.idempotency_key may render empty: {why}; a run whose key is "
            "empty fails") in checked.stderr
    done = project.cli("job", "run", "--job", "job-k",
                       *(("--input", given) if given else ()), env=env(project))
    assert 1 == done.returncode and "renders empty" in done.stderr, done.stderr


@pytest.mark.parametrize("inputs", [
    "inputs:\n  x: {type: string, required: true, enum: [a, b]}\n",
    "inputs:\n  x: {type: integer, required: true}\n",
    "inputs:\n  x: {type: boolean, default: false}\n",
    "inputs:\n  x: {type: string, required: true, git_revision: true}\n",
])
def test_a_key_that_is_never_empty_has_no_warning(project: Project, inputs: str) -> None:
    """A key whose inputs can never be blank (an enum without a blank value, an integer, a
    boolean, git HEAD) says nothing."""
    project.job("job-k", key_job(inputs, '"{{inputs.x}}"'))
    checked = project.cli("validate", env=env(project))
    assert (0, "0 warning(s)") == (checked.returncode, checked.stdout.strip()[-12:]), \
        checked.stdout + checked.stderr


def test_a_routine_input_that_empties_the_key_is_a_validate_error(project: Project) -> None:
    """A routine whose literal inputs make its Job's key empty fails every occurrence: it
    passed validate; it is now an error at the routine's input."""
    project.job("job-k", key_job("inputs:\n  x: {type: string, required: true}\n",
                                 '"{{inputs.x}}"'))
    project.routine("rtn-k", 'interval: 1h\naction: {kind: job, job: job-k, inputs: {x: " "}}\n')
    checked = project.cli("validate", env=env(project))
    assert 1 == checked.returncode, checked.stdout + checked.stderr
    assert ("routines/rtn-k.yaml:3:45: action.inputs.x makes the run.idempotency_key of job-k "
            'render empty: inputs.x (given as " "); every occurrence would fail') in checked.stderr
    done = project.cli("run", "--id", "rtn-k", env=env(project))
    assert 1 == done.returncode, done.stderr


def test_a_routine_input_with_a_placeholder_keeps_the_key_non_empty(project: Project) -> None:
    """``{{scheduled_at}}`` never renders empty: the routine is valid and runs."""
    project.job("job-k", key_job("inputs:\n  x: {type: string, required: true}\n",
                                 '"{{inputs.x}}"'))
    project.routine("rtn-k", "interval: 1h\naction: {kind: job, job: job-k, inputs: "
                             '{x: " {{scheduled_at | iso_week}}"}}\n')
    checked = project.cli("validate", env=env(project))
    assert 0 == checked.returncode and "rtn-k" not in checked.stderr, checked.stderr
    done = project.cli("run", "--id", "rtn-k", env=env(project))
    assert 0 == done.returncode, done.stderr


# --- the static answer agrees with the run's own rendering of the key --------------------------


class _Git:
    """Every revision resolves (a sha); HEAD is a sha."""

    def head(self) -> str:
        return "h" * 40

    def commit(self, revision: str) -> str:
        return "c" * 40


_VALUES = {"string": st.sampled_from(["", " ", "a", "b c"]), "integer": st.integers(-3, 3),
           "boolean": st.booleans(), "list": st.lists(st.sampled_from(["", " ", "a"]), max_size=2)}


@st.composite
def _specs(draw: st.DrawFn) -> list[InputSpec]:
    specs = []
    for name in draw(st.lists(st.sampled_from(["x", "y", "z"]), unique=True, max_size=3)):
        kind = draw(st.sampled_from(list(_VALUES)))
        raw: dict[str, object] = {"type": kind, "required": draw(st.booleans())}
        if kind != "list" and draw(st.booleans()):
            raw["enum"] = draw(st.lists(_VALUES[kind], min_size=1, max_size=3, unique=True))
        elif kind == "list" and draw(st.booleans()):
            raw["enum"] = draw(st.lists(st.sampled_from(["", " ", "a"]), min_size=1,
                                        unique=True))
        if draw(st.booleans()):
            raw["default"] = draw(_VALUES[kind])
        if draw(st.booleans()):
            raw["from_checkpoint"] = f"saved.{name}"
        if kind == "string" and draw(st.booleans()):
            raw[draw(st.sampled_from(["resolve", "git_revision"]))] = \
                "git_head" if "resolve" in raw else True
        spec, _ = build_input_spec(name, raw)
        if spec is not None:
            specs.append(spec)
    return specs


_PARTS = ["", " ", "-", "{{job_id}}", "{{inputs.x}}", "{{inputs.y}}", "{{inputs.z}}",
          "{{inputs.x.f}}", "{{checkpoint.c}}"]


def _valid(spec: InputSpec, *, blank: bool) -> InputValue | None:
    """A valid value of ``spec`` (a blank one when ``blank`` and one exists; else non-blank)."""
    candidates: list[InputValue] = [
        *((v,) for v in ("", " ", "a")), "", " ", "a", "b", 0, 1, 2, -1, True, False, (),
        *(spec.enum or ()), *((v,) for v in spec.enum or ()), *((v, v) for v in spec.enum or ())]
    for value in candidates:
        try:
            coerced = input_rules.coerce_value(spec, value)
        except ValueError:
            continue
        if (not template_text(coerced).strip()) != blank:
            continue
        return coerced
    return None


def _key_of(job: JobDefinition, explicit: dict[str, InputValue],
            checkpoint: dict[str, object] | None) -> str | None:
    """The run's rendered key, or None when the run refuses it as empty."""
    values = jobplan.resolve_inputs(job, explicit, checkpoint, _Git())
    context = job_context(job_id=job.id, project_id="demo", specdojo="specdojo",
                          scheduled_at="2026-08-07T08:00:00.000Z", inputs=values,
                          checkpoint=checkpoint, job_run_id=None)
    try:
        return jobplan.render_key(job, context)
    except JobError as exc:
        assert "renders empty" in str(exc)
        return None


@given(specs=_specs(), parts=st.lists(st.sampled_from(_PARTS), min_size=1, max_size=3))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_validate_foresees_an_empty_key_as_the_run_renders_it(
    specs: list[InputSpec], parts: list[str],
) -> None:
    """For random inputs and keys: the error case is exactly the run given only its required
    inputs (non-blank) with a checkpoint that holds every value; the warning case is exactly
    whether the blankest run (every input at its blankest valid value, no checkpoint) fails."""
    key = "".join(parts)
    declared = {s.name for s in specs}
    assume(key.strip() and all(f"inputs.{n}" not in key or n in declared for n in "xyz"))
    job = JobDefinition(id="job-k", path="jobs/job-k.yaml", name="K", inputs=tuple(specs),
                        task=CommandTask(command="echo"), idempotency_key=key)
    required = {s.name: v for s in specs if s.required and s.default is None
                and s.resolve is None and (v := _valid(s, blank=False)) is not None}
    assume(len(required) == sum(s.required and s.default is None and s.resolve is None
                                for s in specs))
    saved = {s.name: _valid(s, blank=False) for s in specs}
    saved |= {s.name: _valid(s, blank=True) for s in specs if s.git_revision and not saved[s.name]}
    full = {"c": "v", "saved": saved}  # (a revision becomes a sha, whatever it is)
    assert bool(blank_key_parts(key, specs)) == (_key_of(job, required, full) is None)
    blankest = {s.name: v for s in specs  # a revision resolves to a sha, or the run fails
                if not s.git_revision and (v := _valid(s, blank=True)) is not None}
    blankest |= {k: v for k, v in required.items() if k not in blankest}
    assert bool(blank_key_parts(key, specs, any_value=True)) == \
        (_key_of(job, blankest, None) is None)


# --- an agent's launch command (SPEC §11.1, §11.4) ---------------------------------------------


def _replace(path: Path, old: str, new: str) -> tuple[int, int]:
    """Replace the first ``old`` in ``path``; returns where it starts (1-based line, column)."""
    text = path.read_text()
    at = text.index(old)
    path.write_text(text.replace(old, new, 1))
    line = text.count("\n", 0, at) + 1
    return line, at - text.rfind("\n", 0, at)


NUL = "a NUL character (\\0) is in the command (no command can receive one: remove it)"
OPEN = "unterminated single quote in shell command"


@pytest.mark.parametrize(("where", "old", "new", "nickname", "message"), [
    ("members.yaml", 'command: "', 'command: "\\0', "own-command",
     f"members[6].command: {NUL}"),
    ("members.yaml", 'command: "', "command: \"'", "own-command",
     f"members[6].command: {OPEN}"),
    (".specdojo/exec-defaults.yaml", "--mode=", "\\0--mode=", "editor",
     f"providers.fake.command_template for member editor: {NUL}"),
    (".specdojo/exec-defaults.yaml", "--mode=", "'--mode=", "editor",
     f"providers.fake.command_template for member editor: {OPEN}"),
    # a NUL in a command_params variable: tests/test_agent_launch_values.py (at the value)
])
def test_validate_refuses_an_agent_command_sh_cannot_run(
    tmp_path: Path, where: str, old: str, new: str, nickname: str, message: str,
) -> None:
    """A NUL or an open quote in a member's ``command``, in a provider's ``command_template``
    or in a variable it expands passed validate, and every launch of that agent failed
    ("could not start /bin/sh: embedded null byte", "exited with code 2"). validate refuses
    it where it is written (a template at the template, naming the member), and the run says
    the same."""
    ap = AgentProject(tmp_path / "proj")
    field = "command: " if where == "members.yaml" else "command_template: "
    line, col = _replace(ap.root / where, old, new)
    line, col = _replace(ap.root / where, field, field)  # the template, which variables fill
    ap.edit_job("job-e", agent=f"{{executor: {nickname}}}")
    checked = ap.cli("validate")
    assert 1 == checked.returncode, checked.stdout + checked.stderr
    assert f"{where}:{line}:{col + len(field)}: {message}" in checked.stderr
    done = ap.cli("job", "run", "--job", "job-e", "--input", "period=w1")
    assert 1 == done.returncode, done.stdout + done.stderr
    assert message.split(": ", 1)[1] in done.stdout + done.stderr
    assert [] == ap.launches()


# --- a templated routine input against the Job's enum (SPEC §3, §7.1) --------------------------


@pytest.mark.parametrize("value", ["{{scheduled_at | iso_week}}", "{{scheduled_at}}"])
def test_a_templated_routine_input_for_an_enum_is_a_warning_whatever_the_sample(
    project: Project, value: str,
) -> None:
    """validate rendered the input for one sample occurrence (2026-08-07 08:00 UTC) and warned
    only when that value missed the enum: an enum holding the sample's value passed silently,
    and every other occurrence failed. The value changes with each occurrence and an enum is a
    fixed list, so a placeholder beside an enum is always a warning."""
    sample = "2026-W32" if "iso_week" in value else "2026-08-07T08:00:00.000Z"
    project.job("job-note", "name: Note\ninputs:\n  period: {type: string, enum: "
                f'["{sample}"]}}\ntask: {{mode: command, command: "echo {{{{inputs.period}}}}"}}\n'
                'run: {idempotency_key: "{{job_id}}:{{inputs.period}}"}\n')
    project.routine("rtn-r", "interval: 1h\naction: {kind: job, job: job-note, inputs: "
                             f'{{period: "{value}"}}}}\n')
    checked = project.cli("validate", env=env(project))
    assert 0 == checked.returncode, checked.stderr
    assert ("routines/rtn-r.yaml:3:53: warning: action.inputs.period renders to a different "
            "value at each occurrence (") in checked.stderr
    done = project.cli("run", "--id", "rtn-r", "--now", "2026-09-01T00:00:00Z",
                       env=env(project))
    assert 1 == done.returncode and "must be one of" in done.stdout + done.stderr, \
        done.stdout + done.stderr


# --- a timeout validate accepts (SPEC §7.1, §13) ------------------------------------------------


@pytest.mark.parametrize("timeout", ["4w", "2147484s", "9999999999s"])
def test_a_long_timeout_validate_accepts_runs(project: Project, timeout: str) -> None:
    """A ``timeout`` over 24.8 days (``4w``) passed validate, and every command still running
    when the runner first waited for output failed with "runner error: timeout is too large"
    (the poll's limit); a routine's run stopped with "a time is out of range". The runner now
    waits in bounded steps, so any timeout validate accepts runs."""
    project.job("job-t", f"name: T\ntask: {{mode: command, command: sleep 0.3, timeout: "
                f"{timeout}}}\nrun: {{idempotency_key: k}}\n")
    project.routine("rtn-t", f"interval: 1h\naction: {{kind: specdojo, args: [sleep-0.3], "
                             f"timeout: {timeout}}}\n")
    checked = project.cli("validate", env=env(project))
    assert 0 == checked.returncode, checked.stderr
    done = project.cli("job", "run", "--job", "job-t", env=env(project))
    assert (0, "") == (done.returncode, done.stderr), done.stdout
    done = project.cli("run", "--id", "rtn-t", env=env(project))
    assert (0, "") == (done.returncode, done.stderr), done.stdout


def test_a_job_naming_a_member_that_cannot_be_launched_is_a_validate_error(
    tmp_path: Path,
) -> None:
    """A member without a ``command`` whose provider has no ``command_template`` cannot be
    launched: a Job naming it passed validate and every run failed with "member ghost has no
    command ...". validate now says so at the nickname, in those words, and the run refuses
    the invalid Job before starting an attempt, as for an unknown nickname."""
    ap = AgentProject(tmp_path / "proj")
    roster = ap.root / "members.yaml"
    roster.write_text(roster.read_text() + "  - nickname: ghost\n    type: agent\n"
                                           "    provider: nope\n    mode: edit\n")
    ap.edit_job("job-e", agent="{executor: ghost}")
    why = ("member ghost has no command and provider nope has no command_template in "
           ".specdojo/exec-defaults.yaml")
    checked = ap.cli("validate")
    assert 1 == checked.returncode, checked.stdout + checked.stderr
    assert f'jobs/job-e.yaml:9:21: task.agent.executor "ghost" cannot be launched: {why}' \
        in checked.stderr
    done = ap.cli("job", "run", "--job", "job-e", "--input", "period=w1")
    assert 1 == done.returncode and "invalid Job Definition: job-e" in done.stderr, \
        done.stdout + done.stderr
    assert not (ap.root / "execution").exists()


# --- a command_params variable that is no text (SPEC §11.1, §11.4) ------------------------------


@pytest.mark.parametrize(("value", "why"), [
    ("null", 'is null for member editor; write "" for an empty value'),
    ("~", 'is null for member editor; write "" for an empty value'),
    ("true", 'must be text (got true) for member editor; quote it ("true")'),
    ("[a, b]", 'must be text (got ["a", "b"]) for member editor; write it as one text'),
])
def test_a_command_params_variable_that_is_no_text_is_refused_by_validate_and_run(
    tmp_path: Path, value: str, why: str,
) -> None:
    """A ``command_params`` variable written as ``null`` (or ``true``, or a list) was put into
    the launch command as Python wrote it: ``--mode=edit None``. Such a value is refused where
    the template is checked, naming the variable and the member, and the run refuses it in
    the same words before launching anything; ``""`` is the empty value."""
    ap = AgentProject(tmp_path / "proj")
    path = ap.root / ".specdojo" / "exec-defaults.yaml"
    _replace(path, '{flags: "--edit"}', f"{{flags: {value}}}")
    line, col = _replace(path, "command_template: ", "command_template: ")
    ap.edit_job("job-e", agent="{executor: editor}")
    message = f"providers.fake.command_params.by_mode.edit.flags {why}"
    checked = ap.cli("validate")
    assert 1 == checked.returncode, checked.stdout + checked.stderr
    assert f".specdojo/exec-defaults.yaml:{line}:{col + 18}: {message}" in checked.stderr
    done = ap.cli("job", "run", "--job", "job-e", "--input", "period=w1")
    assert 1 == done.returncode, done.stdout + done.stderr
    assert message in done.stdout + done.stderr
    assert "None" not in done.stdout + done.stderr
    assert [] == ap.launches()


def test_an_empty_command_params_variable_is_the_empty_text(tmp_path: Path) -> None:
    """``""`` (and a number, as written) is a variable's value as it stands."""
    ap = AgentProject(tmp_path / "proj")
    path = ap.root / ".specdojo" / "exec-defaults.yaml"
    _replace(path, '{flags: "--edit"}', '{flags: "", n: 3}')
    _replace(path, '{flags: "--review"}', '{flags: "--review", n: 0.5}')
    _replace(path, "{flags}", "{flags} --n={n}")
    ap.edit_job("job-e", agent="{executor: editor}")
    checked = ap.cli("validate")
    assert 0 == checked.returncode, checked.stdout + checked.stderr
    done = ap.cli("job", "run", "--job", "job-e", "--input", "period=w1")
    assert 0 == done.returncode, done.stdout + done.stderr
    assert [["--mode=edit", "--n=3"]] == [x["argv"] for x in ap.launches()]


# --- a field of an input (SPEC §7.2) ----------------------------------------------------------

_NESTED_INPUTS = ("inputs:\n  x: {type: string, default: a}\n"
                  "  tags: {type: list, default: [a, b]}\n")


@pytest.mark.parametrize(("body", "label", "placeholder", "use"), [
    ('task: {mode: command, command: "echo {{inputs.x.y}}"}\nrun: {idempotency_key: k}\n',
     "task.command", "{{inputs.x.y}}", "use {{inputs.x}}"),
    ("task:\n  mode: command\n  command: echo\n  precondition: {command: 'test "
     "-n \"{{inputs.tags.0}}\"', skip_when: 1}\nrun: {idempotency_key: k}\n",
     "task.precondition.command", "{{inputs.tags.0}}",
     'a list renders whole, joined with ",": use {{inputs.tags}}'),
    ("task: {mode: edit, description: 'Edit {{inputs.x.y}}', paths: [docs]}\n"
     "run: {idempotency_key: k}\n", "task.description", "{{inputs.x.y}}", "use {{inputs.x}}"),
    ("task: {mode: command, command: echo}\nrun: {idempotency_key: k}\n"
     "checkpoint: {values: {seen: '{{inputs.x.y}}'}}\n", "checkpoint.values.seen",
     "{{inputs.x.y}}", "use {{inputs.x}}"),
    ('task: {mode: command, command: echo}\nrun: {idempotency_key: "{{job_id}}:'
     '{{inputs.x.y}}"}\n', "run.idempotency_key", "{{inputs.x.y}}", "use {{inputs.x}}"),
    ('task: {mode: command, command: echo}\nrun: {idempotency_key: "{{inputs.x.y}}"}\n',
     "run.idempotency_key", "{{inputs.x.y}}", "use {{inputs.x}}"),
])
def test_a_field_of_an_input_is_a_validate_error_wherever_it_is_written(
    project: Project, body: str, label: str, placeholder: str, use: str,
) -> None:
    """An input has no fields (a list is joined with ``,``, not indexed), so ``{{inputs.x.y}}``
    renders empty in every run: in a command, a description (the agent's prompt) or a
    checkpoint value it did so silently, and validate passed it. It names nothing that can
    exist, which SPEC §7.2 makes a validate error, reported at the placeholder in the words
    the idempotency key's check uses; the run refuses the Job as invalid. A key that is only
    such a placeholder gets this one report, not a second one saying the key renders empty."""
    path = project.job("job-n", f"name: N\n{_NESTED_INPUTS}{body}")
    text = path.read_text()
    at = text.index(placeholder)
    line, col = text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)
    checked = project.cli("validate", env=env(project))
    assert 1 == checked.returncode, checked.stdout + checked.stderr
    assert [f"jobs/job-n.yaml:{line}:{col}: {label}: {placeholder} is always empty: an input "
            f"has no fields ({use})"] == checked.stderr.splitlines()
    done = project.cli("job", "run", "--job", "job-n", env=env(project))
    assert 1 == done.returncode and "invalid Job Definition: job-n" in done.stderr, \
        done.stdout + done.stderr
    assert not (project.root / "execution" / "jobs" / "runs").exists()


# --- the member the run picks when a Job names none (SPEC §11.3, §11.4) -------------------------

_GHOST = "member ghost has no command and provider nope has no command_template in " \
    ".specdojo/exec-defaults.yaml"


def _ghost(ap: AgentProject, mode: str, extra: str = "") -> None:
    roster = ap.root / "members.yaml"
    roster.write_text(roster.read_text() + "  - nickname: ghost\n    type: agent\n"
                      f"    provider: nope\n    mode: {mode}\n    priority: 0\n{extra}")


def test_a_job_naming_no_executor_is_checked_with_the_member_the_run_picks(
    tmp_path: Path,
) -> None:
    """A Job that names no ``task.agent.executor`` runs the enabled agent of its mode with the
    lowest priority. validate checked only named members, so when the one the run picks cannot
    be launched it passed, and every run failed with "member ghost has no command ...".
    validate now foresees the pick and says so at the task's mode, in those words, and the run
    refuses the invalid Job as it does one naming that member."""
    ap = AgentProject(tmp_path / "proj")
    _ghost(ap, "edit")
    ap.edit_job("job-e")
    checked = ap.cli("validate")
    assert 1 == checked.returncode, checked.stdout + checked.stderr
    assert [f'jobs/job-e.yaml:6:9: task.mode edit: task.agent.executor is not given, and the '
            f'member the run picks, "ghost" (the enabled agent with mode: edit and the lowest '
            f"priority), cannot be launched: {_GHOST}"] == checked.stderr.splitlines()
    done = ap.cli("job", "run", "--job", "job-e", "--input", "period=w1")
    assert 1 == done.returncode and "invalid Job Definition: job-e" in done.stderr, \
        done.stdout + done.stderr
    assert not (ap.root / "execution").exists()
    assert [] == ap.launches()


def test_a_job_whose_mode_no_member_has_is_a_validate_warning(tmp_path: Path) -> None:
    """No enabled agent of the task's mode and none named: every run without ``--by`` or
    ``--executor-by`` fails with "no agent executor configured for mode edit" (SPEC §11.4, the
    run's outcome, not a refusal), so validate warns in those words; ``--by`` still runs it."""
    ap = AgentProject(tmp_path / "proj")
    roster = ap.root / "members.yaml"
    roster.write_text(roster.read_text().replace("mode: edit", "mode: review"))
    ap.edit_job("job-e")
    checked = ap.cli("validate")
    assert 0 == checked.returncode, checked.stdout + checked.stderr
    assert ["jobs/job-e.yaml:6:9: warning: task.mode edit: no agent executor configured for "
            "mode edit: task.agent.executor is not given and members.yaml has no enabled agent "
            "with mode: edit; every run fails unless job run --by or --executor-by names one"] \
        == checked.stderr.splitlines()
    done = ap.cli("job", "run", "--job", "job-e", "--input", "period=w1")
    assert 1 == done.returncode, done.stdout + done.stderr
    assert "no agent executor configured for mode edit" in done.stdout
    done = ap.cli("job", "run", "--job", "job-e", "--input", "period=w2", "--by", "editor")
    assert 0 == done.returncode, done.stdout + done.stderr


def test_a_declared_review_is_checked_with_the_agents_the_run_picks(tmp_path: Path) -> None:
    """``task.review`` without ``agent.executor`` is reviewed by the enabled agent with
    ``mode: review`` and the lowest priority, and reported by the ``stage_role: reporter``
    agent with the lowest priority: validate foresees both, as for a named one."""
    ap = AgentProject(tmp_path / "proj")
    _ghost(ap, "review", "    stage_role: reporter\n")
    ap.job("job-c", """\
        name: C
        task:
          mode: command
          command: "true"
          review: {}
        run: {idempotency_key: "{{job_id}}"}
        """)
    checked = ap.cli("validate")
    assert 1 == checked.returncode, checked.stdout + checked.stderr
    assert [f'jobs/job-c.yaml:6:11: task.review: task.review.agent.executor is not given, and '
            f'the member the run picks, "ghost" (the enabled agent with mode: review and the '
            f"lowest priority), cannot be launched: {_GHOST}",
            f'jobs/job-c.yaml:6:11: task.review: task.review.agent.reporter is not given, and '
            f'the member the run picks, "ghost" (the enabled agent with stage_role: reporter '
            f"and the lowest priority), cannot be launched: {_GHOST}"] \
        == checked.stderr.splitlines()


def test_a_declared_review_no_member_can_do_is_a_validate_warning(tmp_path: Path) -> None:
    """No enabled agent with ``mode: review`` and none named: every review of the run ends
    ``blocked`` ("no review agent configured"), which validate now says in those words."""
    ap = AgentProject(tmp_path / "proj")
    roster = ap.root / "members.yaml"
    roster.write_text(roster.read_text().replace("mode: review", "mode: edit"))
    ap.job("job-c", """\
        name: C
        task: {mode: command, command: "true", review: {}}
        run: {idempotency_key: "{{job_id}}"}
        """)
    checked = ap.cli("validate")
    assert 0 == checked.returncode, checked.stdout + checked.stderr
    assert ["jobs/job-c.yaml:3:48: warning: task.review: no review agent configured (no "
            "enabled agent with mode: review): task.review.agent.executor is not given and "
            "members.yaml has none; every review ends blocked, not merged, unless job run "
            "--review-by names one"] == checked.stderr.splitlines()
