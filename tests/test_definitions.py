"""Definition loading (definitions.py, validation.py): discovery, safe YAML, the model built,
positions of problems, and project resolution (config.py)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specdojo_routine.core import jobmodel, model
from specdojo_routine.core.errors import ConfigError
from specdojo_routine.store.config import ProjectPaths, resolve_project
from specdojo_routine.store.definitions.load import (
    Definitions,
    digest,
    discover,
    load_definitions,
    load_jobs,
    read_definition,
)

REPO = Path(__file__).resolve().parent.parent
VALID = REPO / "fixtures" / "valid"
DEMO = REPO / "fixtures" / "demo"

MINIMAL = "id: {id}\ninterval: 1h\naction: {{kind: exec-auto}}\n"
JOB = (
    "id: {id}\nname: J\ninputs:\n  period: {{type: string, required: true}}\n"
    "task: {{mode: command, command: echo}}\nrun: {{idempotency_key: k}}\n"
)


def project(root: Path, files: dict[str, str] | None = None, **config: object) -> ProjectPaths:
    """A project at ``root`` with ``files`` (relative path -> text); returns its paths."""
    entry = {"routines_path": "routines", "jobs_path": "jobs", "execution_path": "execution"}
    data = {"version": 1, "current_project": "demo", "projects": {"demo": entry}, **config}
    (root / ".specdojo").mkdir(parents=True, exist_ok=True)
    (root / ".specdojo" / "specdojo.config.json").write_text(json.dumps(data))
    for rel, text in (files or {}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return resolve_project(root, env={})


def load(tmp_path: Path, files: dict[str, str]) -> Definitions:
    return load_definitions(project(tmp_path, files))


def messages(defs: Definitions) -> list[str]:
    return [str(p) for p in defs.problems]


def copy_tree(source: Path, target: Path) -> None:
    for path in source.rglob("*"):
        if path.is_file():
            (target / path.relative_to(source)).parent.mkdir(parents=True, exist_ok=True)
            (target / path.relative_to(source)).write_bytes(path.read_bytes())


# --- discovery -------------------------------------------------------------------------------


def test_discovery_is_recursive_and_sorted_by_relative_path(tmp_path: Path) -> None:
    """rtn-*.yaml and .yml anywhere below, in sorted relative-path order."""
    for rel in ("b/rtn-z.yaml", "rtn-b.yml", "a/rtn-c.yaml", "rtn-a.yaml", "a-b/rtn-d.yaml"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    found = [p.relative_to(tmp_path).as_posix() for p in discover(tmp_path, "rtn-")]
    assert ["a-b/rtn-d.yaml", "a/rtn-c.yaml", "b/rtn-z.yaml", "rtn-a.yaml", "rtn-b.yml"] == found


def test_discovery_ignores_other_names(tmp_path: Path) -> None:
    """Only the prefix and the two YAML suffixes count; a directory so named is found (to be
    reported as not a regular file), never entered."""
    for rel in ("routine.yaml", "rtn-a.json", "xrtn-b.yaml", "rtn-c.yaml.bak", "job-d.yaml"):
        (tmp_path / rel).write_text("")
    (tmp_path / "rtn-dir.yaml").mkdir()
    (tmp_path / "rtn-dir.yaml" / "rtn-inner.yaml").write_text("")
    assert [tmp_path / "rtn-dir.yaml"] == discover(tmp_path, "rtn-")


def test_discovery_skips_the_generated_directory(tmp_path: Path) -> None:
    """routines/generated/ holds the ledger and views, never definitions."""
    defs = load(tmp_path, {
        "routines/generated/rtn-ghost.yaml": "garbage: [",
        "routines/rtn-real.yaml": MINIMAL.format(id="rtn-real"),
    })
    assert (["rtn-real"], [], 1) == (
        [r.id for r in defs.routines], messages(defs), defs.routine_files
    )


def test_discovery_does_not_follow_a_symlink_loop(tmp_path: Path) -> None:
    """A directory symlink pointing upwards is not walked (no endless recursion)."""
    paths = project(tmp_path, {"routines/rtn-a.yaml": MINIMAL.format(id="rtn-a")})
    os.symlink(paths.routines_dir, paths.routines_dir / "loop")
    assert ["rtn-a"] == [r.id for r in load_definitions(paths).routines]


def test_missing_directories_mean_no_definitions(tmp_path: Path) -> None:
    """A project without routines/ or jobs/ has nothing to validate, and no problem."""
    defs = load_definitions(project(tmp_path))
    assert ((), (), (), 0, 0) == (
        defs.routines, defs.jobs, defs.problems, defs.routine_files, defs.job_files
    )


def test_routines_come_in_file_order(tmp_path: Path) -> None:
    """Definitions.routines follows the sorted file order."""
    defs = load(tmp_path, {
        f"routines/{rel}": MINIMAL.format(id=rel.rsplit("/", 1)[-1].split(".")[0])
        for rel in ("rtn-b.yaml", "x/rtn-a.yaml", "rtn-c.yml")
    })
    assert ["rtn-b", "rtn-c", "rtn-a"] == [r.id for r in defs.routines]


# --- the model built from valid files --------------------------------------------------------


@pytest.fixture(scope="module")
def valid(tmp_path_factory: pytest.TempPathFactory) -> Definitions:
    root = tmp_path_factory.mktemp("valid")
    copy_tree(VALID, root)
    return load_definitions(project(root))


def test_weekly_report_routine(valid: Definitions) -> None:
    """The seed's weekly report: cron in Tokyo, missed_run all, one job action."""
    routine = valid.routine("rtn-weekly-report")
    assert routine is not None
    assert (
        model.CronTrigger(cron="0 17 * * 5", timezone="Asia/Tokyo"),
        model.MissedRun.ALL,
        (model.JobAction(job="job-weekly-report",
                         inputs={"period": "{{scheduled_at | iso_week}}"}),),
        False,
    ) == (routine.trigger, routine.policy.missed_run, routine.actions, routine.is_list)


def test_translation_job_inputs(valid: Definitions) -> None:
    """Seed 002 §6.2: checkpointed, git-resolved and list inputs."""
    job = valid.job("job-translate-updated-docs")
    assert job is not None
    assert (
        jobmodel.InputSpec(name="from_revision", from_checkpoint="revision", default="HEAD~1",
                        git_revision=True),
        jobmodel.InputSpec(name="to_revision", resolve="git_head", git_revision=True),
        jobmodel.InputSpec(name="languages", type="list", enum=("en", "zh", "ko"), default=("en",)),
    ) == job.inputs


def test_translation_job_checkpoint_and_key(valid: Definitions) -> None:
    """The folded idempotency key and the checkpoint spec are kept as written."""
    job = valid.job("job-translate-updated-docs")
    assert job is not None
    assert (
        "{{job_id}}:{{inputs.from_revision}}:{{inputs.to_revision}}:{{inputs.languages}}",
        jobmodel.CheckpointSpec(values={"revision": "{{inputs.to_revision}}"}),
    ) == (job.idempotency_key, job.checkpoint)


def test_command_job_fields(valid: Definitions) -> None:
    """A command task with precondition, exit-code mapping, timeout and analysis."""
    job = valid.job("job-grade-changed-docs")
    assert job is not None and isinstance(job.task, jobmodel.CommandTask)
    task = job.task
    assert (
        jobmodel.Precondition(command='git diff --name-only "{{inputs.since}}" HEAD -- docs',
                           skip_when="empty-output"),
        (2,), 3, "30m", 1800, "claude-reporter",
    ) == (task.precondition, task.partial_exit_codes, task.noop_exit_code, task.timeout,
          task.timeout_seconds, task.analysis.agent if task.analysis else None)


def test_edit_job_fields(valid: Definitions) -> None:
    """An edit task keeps its agent pair, owner and targets."""
    job = valid.job("job-weekly-report")
    assert job is not None and isinstance(job.task, jobmodel.AgentTask)
    task = job.task
    assert ("edit", "claude-expert-executor", "claude-reporter", "PM", ("pr-progress-report",)) == (
        task.mode, task.executor, task.reporter, task.owner, task.targets
    )


def test_register_action(valid: Definitions) -> None:
    """The legacy register kind keeps its filter lists and limit."""
    routine = valid.routine("rtn-register-sweep")
    assert routine is not None
    assert (model.RegisterAction(types=("todo", "issue", "change-request"),
                                 priorities=("high", "medium"), statuses=("open",), limit=5),) == (
        routine.actions
    )


def test_exec_cycle_action_and_policy(valid: Definitions) -> None:
    """exec-cycle options, and policy defaults filled in around the one given."""
    routine = valid.routine("rtn-exec-cycle")
    assert routine is not None
    assert (
        (model.ExecAutoAction(kind="exec-cycle", strategy="critical-first", parallel=2,
                              loop=True, max_rounds=3),),
        model.Policy(missed_run=model.MissedRun.SKIP),
    ) == (routine.actions, routine.policy)


def test_action_list(valid: Definitions) -> None:
    """A list action keeps its order and is flagged as a list."""
    routine = valid.routine("rtn-nightly")
    assert routine is not None
    assert (["specdojo", "exec-resume", "job", "exec-auto"], True) == (
        [a.kind for a in routine.actions], routine.is_list
    )


def test_interval_routine(valid: Definitions) -> None:
    """An interval is kept as written and in seconds; enabled defaults to true."""
    routine = valid.routine("rtn-translate-docs")
    assert routine is not None
    assert (model.Interval(text="6h", seconds=21600), None, True) == (
        routine.interval, routine.trigger, routine.enabled
    )


def test_paths_are_relative_posix(valid: Definitions) -> None:
    """Definitions remember their file relative to the project root."""
    routine = valid.routine("rtn-exec-cycle")
    assert routine is not None
    assert "routines/team/rtn-exec-cycle.yml" == routine.path


def test_lookup_of_an_unknown_id_is_none(valid: Definitions) -> None:
    """job()/routine() return None for ids that have no valid definition."""
    assert (None, None) == (valid.job("job-nope"), valid.routine("rtn-nope"))


def test_disabled_routine(tmp_path: Path) -> None:
    """enabled: false is the only way to disable."""
    text = "enabled: false\n" + MINIMAL.format(id="rtn-off")
    defs = load(tmp_path, {"routines/rtn-off.yaml": text})
    assert [False] == [r.enabled for r in defs.routines]


# --- YAML 1.2 reading ------------------------------------------------------------------------


def test_on_and_yes_stay_strings(tmp_path: Path) -> None:
    """YAML 1.2: on/off/yes/no are strings, so they can be enum values of a string input."""
    text = JOB.format(id="job-sw").replace(
        "{type: string, required: true}", "{type: string, enum: [on, off, yes, no], default: on}"
    )
    defs = load(tmp_path, {"jobs/job-sw.yaml": text})
    assert [("on", "off", "yes", "no")] == [spec.enum for job in defs.jobs for spec in job.inputs]


def test_dates_stay_strings(tmp_path: Path) -> None:
    """No implicit timestamps: a date-looking default of a string input is a string."""
    text = JOB.format(id="job-d").replace("required: true", "default: 2026-08-07")
    defs = load(tmp_path, {"jobs/job-d.yaml": text})
    assert ["2026-08-07"] == [spec.default for job in defs.jobs for spec in job.inputs]


def test_merge_keys_are_plain_yaml(tmp_path: Path) -> None:
    """``<<: *anchor`` merges work; a merged key without position is reported at its mapping."""
    text = (
        "id: rtn-m\ninterval: 1h\naction:\n  <<: {kind: exec-auto, paralel: 2}\n  loop: true\n"
    )
    assert ["routines/rtn-m.yaml:4:3: action has unknown key(s): paralel (did you mean "
            "\"parallel\"?)"] == messages(load(tmp_path, {"routines/rtn-m.yaml": text}))


def test_a_tag_is_never_constructed(tmp_path: Path) -> None:
    """A python tag is refused before anything is built: no file appears."""
    marker = tmp_path / "pwned"
    text = f'id: rtn-x\ninterval: 1h\naction: !!python/object/apply:os.system ["touch {marker}"]\n'
    defs = load(tmp_path, {"routines/rtn-x.yaml": text})
    assert (False, 1) == (marker.exists(), len(defs.errors))


def test_core_tags_are_allowed(tmp_path: Path) -> None:
    """Explicit core tags (!!str) are plain data and fine."""
    text = "id: rtn-t\nname: !!str 42\ninterval: 1h\naction: {kind: exec-auto}\n"
    defs = load(tmp_path, {"routines/rtn-t.yaml": text})
    assert (["42"], []) == ([r.name for r in defs.routines], messages(defs))


def test_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    """A UTF-8 BOM (Windows editors) does not make a file invalid."""
    defs = load(tmp_path, {"routines/rtn-bom.yaml": "\ufeff" + MINIMAL.format(id="rtn-bom")})
    assert (["rtn-bom"], []) == ([r.id for r in defs.routines], messages(defs))


def test_read_definition_reports_an_unreadable_path(tmp_path: Path) -> None:
    """A path that cannot be opened is a located problem, not an exception."""
    report, data = read_definition(tmp_path / "missing.yaml", "routines/missing.yaml", "routine")
    assert (None, 1, (1, 1)) == (
        data, len(report.problems), (report.problems[0].line, report.problems[0].col)
    )


# --- positions -------------------------------------------------------------------------------


def test_unknown_key_is_located_at_the_key(tmp_path: Path) -> None:
    """Line and column of the offending key (1-based)."""
    text = "id: rtn-k\ninterval: 1h\naction:\n  kind: exec-auto\n    \n  lopp: true\n"
    expected = 'routines/rtn-k.yaml:6:3: action has unknown key(s): lopp (did you mean "loop"?)'
    assert [expected] == messages(load(tmp_path, {"routines/rtn-k.yaml": text}))


def test_unknown_keys_are_one_sorted_line_in_upstreams_wording(tmp_path: Path) -> None:
    """`<field> has unknown key(s): a, b` once per mapping (upstream's wording), at the first
    unknown key, with our detail appended; list positions are 0-based (SPEC §3)."""
    text = ("id: rtn-k\ninterval: 1h\npolicy: {zeta: 1, missed_run: sometimes, alpha: 2}\n"
            "action:\n  - {kind: exec-auto}\n  - {kind: exec-auto, lopp: true}\n")
    assert [
        "routines/rtn-k.yaml:3:10: policy has unknown key(s): alpha, zeta (allowed: "
        "missed_run, overlap, on_interrupted, on_failure, starting_deadline, timeout, notify, "
        "retry)",
        'routines/rtn-k.yaml:3:31: policy.missed_run must be skip, latest, or all (got '
        '"sometimes")',
        'routines/rtn-k.yaml:6:23: action[1] has unknown key(s): lopp (did you mean "loop"?)',
    ] == messages(load(tmp_path, {"routines/rtn-k.yaml": text}))


def test_bad_value_is_located_at_the_value(tmp_path: Path) -> None:
    """Line and column of the offending value."""
    text = "id: rtn-v\ninterval: 1h\naction:\n  kind: exec-auto\n  parallel:    0\n"
    assert ["routines/rtn-v.yaml:5:16: action.parallel must be a positive integer (got 0)"] == (
        messages(load(tmp_path, {"routines/rtn-v.yaml": text}))
    )


def test_placeholder_column_inside_a_plain_scalar(tmp_path: Path) -> None:
    """A template problem points at the placeholder itself inside a one-line scalar."""
    text = (
        "id: job-p\nname: P\ntask:\n  mode: command\n  command: echo a {{nope}}\n"
        "run: {idempotency_key: k}\n"
    )
    expected = ("jobs/job-p.yaml:5:19: task.command: unknown template value {{nope}} (use "
                "job_id, project_id, specdojo, scheduled_at, job_run_id, inputs.<name> or "
                "checkpoint.<key>)")
    assert [expected] == messages(load(tmp_path, {"jobs/job-p.yaml": text}))


def test_placeholder_in_a_literal_block_points_at_the_placeholder(tmp_path: Path) -> None:
    """In a literal block (``|``) the content lines are the source lines, so a template
    problem points at the placeholder itself (multi-line commands are written this way)."""
    text = (
        "id: job-b\nname: B\ntask:\n  mode: command\n  command: |\n    echo one\n\n"
        "      echo {{inputs.x}}\nrun: {idempotency_key: k}\n"
    )
    assert ["jobs/job-b.yaml:8:12: task.command: {{inputs.x}} names no declared input "
            "(declared: none)"] == messages(load(tmp_path, {"jobs/job-b.yaml": text}))


def test_placeholder_in_a_folded_block_points_at_the_scalar(tmp_path: Path) -> None:
    """A folded block (``>``) joins its lines, so offsets are not source columns: the
    scalar's start is reported."""
    text = (
        "id: job-b\nname: B\ntask:\n  mode: command\n  command: >\n    echo one\n"
        "    echo {{inputs.x}}\nrun: {idempotency_key: k}\n"
    )
    assert ["jobs/job-b.yaml:5:12: task.command: {{inputs.x}} names no declared input "
            "(declared: none)"] == messages(load(tmp_path, {"jobs/job-b.yaml": text}))


def test_problems_are_sorted_by_path_line_column(tmp_path: Path) -> None:
    """Jobs before routines (path order), then line and column order."""
    defs = load(tmp_path, {
        "routines/rtn-a.yaml": "id: rtn-a\nzzz: 1\ninterval: 1h\naaa: 2\naction: [x]\n",
        "jobs/job-a.yaml": "id: job-a\n",
    })
    keys = [(p.path, p.line, p.col) for p in defs.problems]
    assert sorted(keys) == keys


# --- cross-file rules ------------------------------------------------------------------------


def test_invalid_job_ids_are_listed(tmp_path: Path) -> None:
    """A job file with errors is not loaded; its base name is in invalid_job_ids."""
    files = {"jobs/job-bad.yaml": "id: job-bad\n", "jobs/job-ok.yaml": JOB.format(id="job-ok")}
    defs = load(tmp_path, files)
    assert (["job-ok"], frozenset({"job-bad"})) == ([j.id for j in defs.jobs], defs.invalid_job_ids)


def test_routine_naming_an_invalid_job_is_not_itself_invalid(tmp_path: Path) -> None:
    """The action fails at run time instead (`invalid Job Definition: <id>`)."""
    defs = load(tmp_path, {
        "jobs/job-bad.yaml": "id: job-bad\n",
        "routines/rtn-r.yaml": "id: rtn-r\ninterval: 1h\naction: {kind: job, job: job-bad}\n",
    })
    assert (["rtn-r"], {"jobs/job-bad.yaml"}) == (
        [r.id for r in defs.routines], {p.path for p in defs.errors}
    )


def test_duplicate_job_keeps_the_first_in_file_order(tmp_path: Path) -> None:
    """The later file is reported; the first stays valid and its id is not 'invalid'."""
    defs = load(tmp_path, {"jobs/job-a.yaml": JOB.format(id="job-a"),
                           "jobs/z/job-a.yml": JOB.format(id="job-a")})
    assert (["jobs/job-a.yaml"], frozenset(), ["jobs/z/job-a.yml"]) == (
        [j.path for j in defs.jobs], defs.invalid_job_ids, [p.path for p in defs.errors]
    )


def test_load_jobs_reads_no_routines(tmp_path: Path) -> None:
    """load_jobs ignores routine files entirely (not even counted)."""
    files = {"routines/rtn-x.yaml": "[", "jobs/job-a.yaml": JOB.format(id="job-a")}
    defs = load_jobs(project(tmp_path, files))
    assert ((), ["job-a"], (), 0) == (
        defs.routines, [j.id for j in defs.jobs], defs.problems, defs.routine_files
    )


def test_routine_literal_input_is_checked_against_the_job(tmp_path: Path) -> None:
    """A literal routine input is parsed with the Job's rules (here: integer range)."""
    job = JOB.format(id="job-n").replace(
        "{type: string, required: true}", "{type: integer, minimum: 1}"
    )
    routine = (
        'id: rtn-n\ninterval: 1h\naction:\n  kind: job\n  job: job-n\n  inputs: {period: "0"}\n'
    )
    assert ["routines/rtn-n.yaml:6:20: action.inputs.period: Input period must be at least 1 "
            "(got 0)"] == messages(load(tmp_path, {"jobs/job-n.yaml": job,
                                                   "routines/rtn-n.yaml": routine}))


# --- digest ----------------------------------------------------------------------------------


def test_digest_ignores_formatting_comments_and_key_order() -> None:
    """The digest is of the data, not the text."""
    from ruamel.yaml import YAML

    one = YAML(typ="rt").load("a: 1\nb: [x, y]\n")
    two = YAML(typ="rt").load("# comment\nb:   ['x', \"y\"]\na: 1\n")
    assert digest(one) == digest(two)


def test_digest_changes_with_the_data() -> None:
    """Any change of a value changes the digest."""
    assert digest({"a": 1}) != digest({"a": 2})


def test_routine_digest_is_sha256_of_canonical_json(tmp_path: Path) -> None:
    """Routine.digest = sha256 hex of the sorted-keys compact JSON of the file's data."""
    import hashlib

    defs = load(tmp_path, {"routines/rtn-d.yaml": MINIMAL.format(id="rtn-d")})
    canonical = '{"action":{"kind":"exec-auto"},"id":"rtn-d","interval":"1h"}'
    assert [hashlib.sha256(canonical.encode()).hexdigest()] == [r.digest for r in defs.routines]


# --- config.resolve_project ------------------------------------------------------------------


def write_config(root: Path, data: object) -> None:
    (root / ".specdojo").mkdir(parents=True, exist_ok=True)
    (root / ".specdojo" / "specdojo.config.json").write_text(json.dumps(data))


def two_projects(root: Path, current: str | None = "b") -> None:
    entry = {"routines_path": "r", "jobs_path": "j", "execution_path": "e"}
    data: dict[str, object] = {"version": 1, "projects": {"a": entry, "b": entry, "c": entry}}
    if current is not None:
        data["current_project"] = current
    write_config(root, data)


def test_project_flag_wins(tmp_path: Path) -> None:
    """--project beats SPECDOJO_PROJECT and current_project."""
    two_projects(tmp_path)
    paths = resolve_project(tmp_path, "c", env={"SPECDOJO_PROJECT": "a"})
    assert "c" == paths.project_id


def test_environment_beats_current_project(tmp_path: Path) -> None:
    """SPECDOJO_PROJECT is next."""
    two_projects(tmp_path)
    assert "a" == resolve_project(tmp_path, env={"SPECDOJO_PROJECT": "a"}).project_id


def test_current_project_beats_the_first(tmp_path: Path) -> None:
    """Then current_project."""
    two_projects(tmp_path)
    assert "b" == resolve_project(tmp_path, env={}).project_id


def test_first_project_is_the_fallback(tmp_path: Path) -> None:
    """Without any choice the first configured project is used."""
    two_projects(tmp_path, current=None)
    assert "a" == resolve_project(tmp_path, env={}).project_id


def test_unknown_project_is_a_config_error(tmp_path: Path) -> None:
    """Asking for a project that is not configured names the known ones."""
    two_projects(tmp_path)
    with pytest.raises(ConfigError, match=r'unknown project "zz" \(known: a, b, c\)'):
        resolve_project(tmp_path, "zz", env={})


def test_a_project_id_starting_with_a_dash_is_a_config_error(tmp_path: Path) -> None:
    """The SpecDojo CLI is called with ``--project ID``: an id such as ``--help`` would be
    read as an option there, so it is refused wherever it is chosen (exit 2)."""
    entry = {"routines_path": "r", "jobs_path": "j", "execution_path": "e"}
    write_config(tmp_path, {"version": 1, "current_project": "--all",
                            "projects": {"--all": entry, "ok": entry}})
    with pytest.raises(ConfigError, match='project id "--all" must not start with "-"') as caught:
        resolve_project(tmp_path, env={})
    assert 2 == caught.value.exit_code
    assert "ok" == resolve_project(tmp_path, "ok", env={}).project_id


def test_root_is_found_by_walking_up(tmp_path: Path) -> None:
    """Without --root, the nearest parent holding the config is the root."""
    two_projects(tmp_path)
    deep = tmp_path / "x" / "y"
    deep.mkdir(parents=True)
    paths = resolve_project(cwd=deep, env={})
    assert (tmp_path.resolve(), tmp_path.resolve() / "r") == (paths.root, paths.routines_dir)


def test_no_config_anywhere_is_a_config_error(tmp_path: Path) -> None:
    """Outside any project the error says what to do."""
    with pytest.raises(ConfigError, match="pass --root DIR"):
        resolve_project(cwd=tmp_path, env={})


def test_invalid_config_json_is_a_config_error(tmp_path: Path) -> None:
    """A broken config file is reported, not a traceback."""
    (tmp_path / ".specdojo").mkdir()
    (tmp_path / ".specdojo" / "specdojo.config.json").write_text("{nope")
    with pytest.raises(ConfigError, match="invalid JSON"):
        resolve_project(tmp_path, env={})


def test_project_without_a_path_is_a_config_error(tmp_path: Path) -> None:
    """Each of the three paths is required."""
    write_config(tmp_path, {"projects": {"a": {"routines_path": "r", "jobs_path": "j"}}})
    with pytest.raises(ConfigError, match='needs "execution_path"'):
        resolve_project(tmp_path, env={})


def test_unknown_config_keys_are_ignored(tmp_path: Path) -> None:
    """Other SpecDojo settings in the same file do not disturb us."""
    entry = {"routines_path": "r", "jobs_path": "j", "execution_path": "e", "docs_path": "d"}
    write_config(tmp_path, {"version": 1, "projects": {"a": entry}, "llm": {"model": "x"}})
    assert "a" == resolve_project(tmp_path, env={}).project_id


def test_demo_config_resolves_its_paths() -> None:
    """fixtures/demo is a project: project demo with the three paths."""
    paths = resolve_project(DEMO, env={})
    assert ("demo", DEMO / "routines", DEMO / "jobs", DEMO / "execution") == (
        paths.project_id, paths.routines_dir, paths.jobs_dir, paths.execution_dir
    )


# --- hostile details -------------------------------------------------------------------------


def test_a_problem_is_always_one_line(tmp_path: Path) -> None:
    """Newlines and control characters in values and keys are escaped in messages."""
    text = 'id: "rtn-a\\nb"\n"x\\ty": 1\ninterval: 1h\naction: {kind: "exec\\u0007"}\n'
    defs = load(tmp_path, {"routines/rtn-a.yaml": text})
    assert (4, [True] * 4) == (
        len(defs.errors), ["\n" not in str(p) and str(p).isprintable() for p in defs.errors]
    )


def test_complex_keys_do_not_crash(tmp_path: Path) -> None:
    """A list used as a mapping key (``? [a]``) is reported as such, not as its Python repr."""
    text = JOB.format(id="job-k").replace("required: true}", "required: true, ? [a] : 1}")
    defs = load(tmp_path, {"jobs/job-k.yaml": text})
    assert ["inputs.period has a key that is not a plain scalar"] == [
        p.message.split(" (", 1)[0] for p in defs.errors
    ]


FRAGMENTS = [
    "id: rtn-f\n", "interval: 1h\n", "trigger: {cron: '0 * * * *', timezone: UTC}\n",
    "action:\n", "  kind: job\n", "  job: job-a\n", "  inputs: {p: '{{scheduled_at}}'}\n",
    "- ", "[", "]", "{", "}", ", ", ": ", "&a ", "*a ", "!!int ", "!!str ", "!!bool ", "!x ",
    "\t", '"', "'", "\n", "  ", "    ", "<<: ", "%YAML 1.1\n---\n", "---\n", "# c\n", "? ",
    "|\n", ">-\n", "{{", "}}", "{{ inputs.p | iso_week }}", "99999999999999999999999", "~",
    "kind: exec-auto\n", "parallel: 0\n", "policy: {missed_run: all}\n", "\x00", "\ufeff", "é",
    "description:  # why\n", "  # note\n", "  |- # x\n", "  text\n",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=40), st.sampled_from(["rtn-f", "job-a"]))
def test_any_text_gives_located_one_line_problems_never_an_exception(
    parts: list[str], name: str
) -> None:
    """Whatever the text, loading returns problems (1-based, inside the file, one line each,
    never naming a Python exception class) and never raises."""
    text = "".join(parts)
    folder = "routines" if name.startswith("rtn-") else "jobs"
    with tempfile.TemporaryDirectory() as tmp:
        defs = load(Path(tmp), {f"{folder}/{name}.yaml": text})
    lines = max(1, len(text.splitlines()) + 1)
    bad = [str(p) for p in defs.problems
           if not (1 <= p.line <= lines and p.col >= 1 and str(p).isprintable())
           or "Error: " in str(p) or "Exception: " in str(p)]
    assert [] == bad


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_give_problems_never_an_exception(data: bytes) -> None:
    """Arbitrary bytes are read without raising; problems stay one line."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = project(Path(tmp))
        (paths.routines_dir).mkdir()
        (paths.routines_dir / "rtn-b.yaml").write_bytes(data)
        defs = load_definitions(paths)
    assert [] == [str(p) for p in defs.problems if not str(p).isprintable()]
