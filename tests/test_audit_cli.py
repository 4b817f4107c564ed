"""Audit of SPEC §2 (layout, project selection), §3 (definitions, translations), §4 (due
rules, timestamps) and §8 (the CLI: commands, output shapes, exit codes, one-line errors),
through the real ``python -m specdojo_routine`` in subprocesses where the CLI is the promise.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from specdojo_routine.core.decide import delegated_argv
from specdojo_routine.core.model import ExecAutoAction
from tests.conftest import REPO, Project, period_job

REPORT_JOB = period_job("Report", 'echo "report {{inputs.period}}"')
STAMP_S = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
STAMP_MS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def bare(project: Project, *args: str, cwd: Path | None = None,
         **env: str) -> subprocess.CompletedProcess[str]:
    """The CLI without the fixture's ``--root`` (root found from ``cwd``)."""
    return subprocess.run(
        [sys.executable, "-m", "specdojo_routine", *args], cwd=cwd or project.root,
        env=project.env(**env), capture_output=True, text=True, timeout=60,
    )


def config(project: Project, current: str | None, *ids: str) -> None:
    """Rewrite the project's config with projects ``ids`` (each with its own directories)."""
    data: dict[str, Any] = {"version": 1, "projects": {
        pid: {"routines_path": f"r-{pid}", "jobs_path": f"j-{pid}", "execution_path": f"e-{pid}"}
        for pid in ids}}
    if current is not None:
        data["current_project"] = current
    (project.root / ".specdojo" / "specdojo.config.json").write_bytes(orjson.dumps(data))


def where(proc: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """``where`` output as {label: value}."""
    return dict(re.split(r"\s{2,}", line, maxsplit=1) for line in proc.stdout.splitlines())


def one_error_line(proc: subprocess.CompletedProcess[str]) -> tuple[int, bool]:
    """(exit code, stderr is exactly one `error: ` line and no traceback)."""
    lines = proc.stderr.splitlines()
    return proc.returncode, len(lines) == 1 and lines[0].startswith("error: ")


# --- §2 root and project selection ------------------------------------------------------------


def test_root_is_found_by_walking_up_from_the_cwd(project: Project) -> None:
    """Without --root the CLI finds the root above a nested working directory."""
    deep = project.root / "routines" / "a" / "b"
    deep.mkdir(parents=True)
    proc = bare(project, "where", cwd=deep)
    assert (0, str(project.root.resolve())) == (proc.returncode, where(proc)["root"])


def test_where_prints_project_and_every_path(project: Project) -> None:
    """`where` names the project and the ledger, state and evidence paths (SPEC §2 table)."""
    info = where(project.cli("where"))
    root = project.root.resolve()
    assert {
        "project": "demo",
        "routine ledger": str(root / "routines" / "generated" / "routine-runs.jsonl"),
        "routine state": str(root / "routines" / "generated" / "routine-state.json"),
        "job runs": str(root / "execution" / "jobs" / "runs"),
        "job state": str(root / "execution" / "jobs" / "generated" / "job-state.json"),
        "evidence": str(root / "execution" / "exec" / "evidence"),
    } == {k: info[k] for k in ("project", "routine ledger", "routine state", "job runs",
                               "job state", "evidence")}


def test_environment_project_beats_current_project_on_the_cli(project: Project) -> None:
    """$SPECDOJO_PROJECT selects the project when --project is absent."""
    config(project, "a", "a", "b")
    proc = bare(project, "where", SPECDOJO_PROJECT="b")
    assert ("b", str(project.root.resolve() / "r-b")) == (where(proc)["project"],
                                                           where(proc)["routines"])


def test_project_flag_beats_the_environment_on_the_cli(project: Project) -> None:
    """--project wins over $SPECDOJO_PROJECT."""
    config(project, "a", "a", "b", "c")
    assert "c" == where(bare(project, "where", "--project", "c", SPECDOJO_PROJECT="b"))["project"]


def test_without_current_project_the_first_project_is_used(project: Project) -> None:
    """No --project, no environment, no current_project: the first configured project."""
    config(project, None, "z", "a")
    assert "z" == where(bare(project, "where"))["project"]


def test_unknown_current_project_is_an_error_not_another_project(project: Project) -> None:
    """A current_project naming no project exits 2; it never falls back to another project."""
    config(project, "gone", "a", "b")
    proc = bare(project, "where")
    assert ((2, True), True) == (one_error_line(proc), '"current_project"' in proc.stderr)


def test_unknown_environment_project_names_the_variable(project: Project) -> None:
    """A stale $SPECDOJO_PROJECT is reported as such, so the operator knows what to fix."""
    proc = bare(project, "where", SPECDOJO_PROJECT="typo")
    assert ((2, True), True) == (one_error_line(proc), "$SPECDOJO_PROJECT" in proc.stderr)


# --- §8 errors and exit codes -----------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    [], ["bogus"], ["run"], ["run", "--due", "--id", "rtn-x"], ["list", "--now", "garbage"],
    ["history", "--limit", "0"], ["resolve", "rtn-x", "--result", "maybe", "--note", "n"],
    ["job", "run"],
], ids=lambda a: " ".join(a) or "nothing")
def test_usage_errors_exit_2_with_one_line(project: Project, argv: list[str]) -> None:
    """Bad command lines exit 2 with one `error: ` line on stderr, never a traceback."""
    assert (2, True) == one_error_line(project.cli(*argv))


def test_missing_config_exits_2_before_validating(tmp_path: Path, project: Project) -> None:
    """`validate` outside any project: exit 2, one line, no summary."""
    proc = subprocess.run([sys.executable, "-m", "specdojo_routine", "validate", "--root",
                           str(tmp_path)], capture_output=True, text=True, env=project.env())
    assert ((2, True), "") == (one_error_line(proc), proc.stdout)


def test_an_error_message_with_a_newline_stays_one_line(project: Project) -> None:
    """A newline inside an error (here: in the project id) is escaped, not printed."""
    assert (2, True) == one_error_line(project.cli("list", "--project", "x\ny"))


def test_a_reader_closing_the_pipe_is_not_an_internal_error(project: Project) -> None:
    """`history --json | head -1`: the closed pipe ends the command quietly."""
    project.ledger.parent.mkdir(parents=True)
    digest = "0" * 64
    project.ledger.write_bytes(b"".join(orjson.dumps({
        "version": 1, "seq": i, "type": "routine_registered", "at": "2026-08-07T08:00:00.000Z",
        "routine_id": "rtn-a", "digest": digest, "path": "routines/rtn-a.yaml" + " " * 200,
    }) + b"\n" for i in range(1, 2001)))
    proc = subprocess.Popen(
        [sys.executable, "-m", "specdojo_routine", "history", "--json", "--root",
         str(project.root)], env=project.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()
    proc.wait(timeout=60)
    assert "" == proc.stderr.read().decode()


# --- §8 history ---------------------------------------------------------------------------------


def _ledger(project: Project, case: str) -> bytes:
    project.ledger.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "fixtures" / "ledgers" / case / "routine-runs.jsonl", project.ledger)
    return project.ledger.read_bytes()


def test_history_json_prints_the_lines_exactly_as_stored(project: Project) -> None:
    """`history --json` prints old-version events as stored, not upgraded, one per line."""
    stored = _ledger(project, "routine-v0")
    proc = project.cli("history", "--json")
    assert (0, stored.decode()) == (proc.returncode, proc.stdout)


def test_history_filters_by_routine_and_keeps_the_newest(project: Project) -> None:
    """`history ID --limit N` shows that routine's last N events, newest last."""
    stored = _ledger(project, "routine-basic")
    events = [orjson.loads(line) for line in stored.splitlines()]
    rid = events[-1]["routine_id"]
    mine = [line.decode() + "\n" for line, e in zip(stored.splitlines(), events, strict=True)
            if e.get("routine_id") == rid]
    assert "".join(mine[-2:]) == project.cli("history", rid, "--limit", "2", "--json").stdout


def test_history_table_is_oldest_first_under_its_header(project: Project) -> None:
    """The table has the documented columns and lists events by ascending seq."""
    stored = _ledger(project, "routine-basic")
    lines = project.cli("history").stdout.splitlines()
    seqs = [int(line.split()[0]) for line in lines[1:]]
    assert (["SEQ", "AT", "ROUTINE", "EVENT", "DETAIL"], list(
        range(1, len(stored.splitlines()) + 1))) == (lines[0].split(), seqs)


def test_history_without_limit_shows_the_whole_ledger(project: Project) -> None:
    """SPEC §8: `history` shows the routine ledger, all of it unless --limit: a long
    ledger (601 events) is shown whole, as JSON lines and as the table."""
    from specdojo_routine.store.ledger import journal as ledger
    from tests.test_fold import ended, registered, started

    events: list[Any] = [registered()]
    for n in range(300):
        events += [started(aid=f"a{n}", transition="T-06" if n else "T-02"),
                   ended(aid=f"a{n}")]
    project.ledger.parent.mkdir(parents=True)
    ledger.Ledger(project.ledger).append_many(events)
    stored = project.ledger.read_bytes()
    assert 601 == len(stored.splitlines())
    assert stored.decode() == project.cli("history", "--json").stdout
    table = project.cli("history").stdout.splitlines()
    assert list(range(1, 602)) == [int(line.split()[0]) for line in table[1:]]
    assert 3 == len(project.cli("history", "--limit", "3", "--json").stdout.splitlines())


def test_history_without_a_ledger_says_no_events(project: Project) -> None:
    """A fresh project: `no events`, exit 0, nothing created."""
    before = project.files()
    proc = project.cli("history")
    assert (0, "no events\n", before) == (proc.returncode, proc.stdout, project.files())


# --- §8 list ------------------------------------------------------------------------------------


def test_list_json_has_exactly_the_documented_keys(project: Project) -> None:
    """`list --json`: {now, routines: [...], lock: {...}} with exactly the SPEC §8 keys (plus
    §14's last_reason and problems, §9.5's held, held_occurrences, last_missed and §13's
    retrying)."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: exec-resume}\n")
    doc = orjson.loads(project.cli("list", "--json").stdout)
    assert (
        ["now", "routines", "lock", "problems"],
        ["id", "enabled", "schedule", "kinds", "status", "interrupted", "last_run",
         "last_result", "last_scheduled_for", "last_reason", "due", "next_occurrence", "held",
         "held_occurrences", "last_missed", "paused", "retrying"],
        ["held", "pid", "host", "acquired_at", "suspicious"],
    ) == (list(doc), list(doc["routines"][0]), list(doc["lock"]))


def test_list_json_schedule_and_kinds(project: Project) -> None:
    """SPEC §8 (docs/reference.md `list --json`): a cron routine's `schedule` reads
    `cron <expr> (<zone>)`; `kinds` names each action's kind, one per action, in order."""
    project.routine("rtn-a", """\
        trigger: {cron: "0 17 * * 5", timezone: Asia/Tokyo}
        action:
          - {kind: specdojo, args: [x]}
          - {kind: exec-resume}
          - {kind: specdojo, args: [y]}
        """)
    row = orjson.loads(project.cli("list", "--json").stdout)["routines"][0]
    assert ("cron 0 17 * * 5 (Asia/Tokyo)", ["specdojo", "exec-resume", "specdojo"]) == (
        row["schedule"], row["kinds"])


def test_list_writes_nothing_and_takes_no_lock(project: Project) -> None:
    """`list` reads only: no view, no ledger, no lock file appear."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: exec-resume}\n")
    before = project.files()
    assert 0 == project.cli("list").returncode
    assert (before, False) == (project.files(), (project.root / "routines" / ".locks").exists())


def test_a_time_without_offset_is_utc(project: Project) -> None:
    """--now without an offset is taken as UTC."""
    doc = orjson.loads(project.cli("list", "--json", "--now", "2026-08-07T08:02:00").stdout)
    assert "2026-08-07T08:02:00Z" == doc["now"]


def test_list_table_has_the_documented_columns(project: Project) -> None:
    """The table's columns are ID STATUS LAST RUN RESULT DUE NEXT: narrow enough for 80
    columns; schedule and kinds are in `list --json` and `status`."""
    project.routine("rtn-a", """\
        trigger: {cron: "0 17 * * 5", timezone: Asia/Tokyo}
        action: [{kind: exec-resume}, {kind: register}]
        """)
    lines = project.cli("list", "--now", "2026-08-07T08:02:00Z").stdout.splitlines()
    assert (["ID", "STATUS", "LAST", "RUN", "RESULT", "DUE", "NEXT"],
            ["rtn-a", "never", "-", "-", "yes", "in", "6d"]) == (
        lines[0].split(), lines[1].split())


# --- §8 run output ------------------------------------------------------------------------------


def test_run_json_is_one_document_while_actions_print(project: Project) -> None:
    """With --json, delegated and Job output go to stderr; stdout is one JSON document with
    the documented keys."""
    project.job("job-report", REPORT_JOB)
    project.routine("rtn-a", """\
        interval: 1h
        action:
          - {kind: specdojo, args: [status]}
          - {kind: job, job: job-report, inputs: {period: "{{scheduled_at | iso_week}}"}}
        """)
    proc = project.cli("run", "--due", "--json", "--now", "2026-08-07T08:02:00Z")
    doc = orjson.loads(proc.stdout)
    assert (0, ["routine_id", "scheduled_for", "trigger", "actions"],
            ["routine_id", "attempt_id", "scheduled_for", "result", "reason", "job_run_ids",
             "action_results"],
            {"index": 2, "kind": "job", "job": "job-report", "inputs": {"period": "2026-W32"}},
            True, True) == (
        proc.returncode, list(doc["selected"][0]), list(doc["results"][0]),
        doc["selected"][0]["actions"][1], "fake specdojo: ok" in proc.stderr,
        "report 2026-W32" in proc.stderr)


def test_run_text_prints_each_attempt_and_the_counts(project: Project) -> None:
    """Text mode: `<id>  <scheduled_for>  <result> - <reason>`, the failed action with its
    evidence (SPEC §14), then the summary; exit 1."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [broken]}\n")
    project.exit_codes({"broken": 3})
    proc = project.cli("run", "--due", "--now", "2026-08-07T08:02:00Z")
    lines = proc.stdout.splitlines()
    assert (1, [
        "rtn-a  2026-08-07T08:02:00.000Z  failure - action 1 (specdojo): command exited "
        "with code 3",
        "  action 1 (specdojo) failure: command exited with code 3",
        "Ran 1 attempt(s): 0 success, 1 failure, 0 skipped",
    ]) == (proc.returncode, [*lines[-4:-2], lines[-1]])
    assert lines[-2].startswith("    evidence: execution/exec/evidence/routines/att-")


def test_dry_run_text_shows_command_lines_and_rendered_inputs(project: Project) -> None:
    """--dry-run (text) prints each occurrence, the exact delegated command line and the
    rendered Job inputs, and writes nothing."""
    project.job("job-report", REPORT_JOB)
    project.routine("rtn-a", """\
        interval: 1h
        action:
          - {kind: exec-resume, parallel: 2}
          - {kind: job, job: job-report, inputs: {period: "{{scheduled_at | iso_week}}"}}
        """)
    before = project.files()
    proc = project.cli("run", "--due", "--dry-run", "--now", "2026-08-07T08:02:00Z")
    cli = project.env()["SPECDOJO_CLI"]
    assert (0, [
        "dry run - nothing is recorded or executed",
        "rtn-a  2026-08-07T08:02:00.000Z  [due]",
        f"  1. exec-resume: {cli} exec resume --due --project demo --if-busy skip --parallel 2",
        "  2. job job-report (period=2026-W32)",
    ], before) == (proc.returncode, proc.stdout.splitlines(), project.files())


# --- §3 routine inputs, translations, invalid files ---------------------------------------------


def _dry_inputs(project: Project, now: str) -> dict[str, str]:
    doc = orjson.loads(project.cli("run", "--due", "--dry-run", "--json", "--now", now).stdout)
    inputs: dict[str, str] = doc["selected"][0]["actions"][0]["inputs"]
    return inputs


def test_iso_week_uses_the_routine_timezone(project: Project) -> None:
    """Monday 01:00 in Tokyo is Sunday in UTC: the ISO week is Tokyo's; scheduled_at is UTC."""
    project.job("job-report", REPORT_JOB.replace("period: {", "at: {type: string}\n  period: {"))
    project.routine("rtn-a", """\
        trigger: {cron: "0 1 * * 1", timezone: Asia/Tokyo}
        action:
          kind: job
          job: job-report
          inputs: {period: "{{scheduled_at | iso_week}}", at: "{{ scheduled_at }}"}
        """)
    assert {"period": "2026-W33", "at": "2026-08-09T16:00:00.000Z"} == _dry_inputs(
        project, "2026-08-09T16:00:30Z")


def test_iso_week_of_an_interval_routine_is_utc(project: Project) -> None:
    """An interval routine has no timezone: its ISO week is the UTC one."""
    project.job("job-report", REPORT_JOB)
    project.routine("rtn-a", """\
        interval: 1d
        action: {kind: job, job: job-report, inputs: {period: "{{scheduled_at|iso_week}}"}}
        """)
    assert {"period": "2026-W32"} == _dry_inputs(project, "2026-08-09T16:00:30Z")


def test_a_job_action_naming_an_invalid_job_fails_at_run_time(project: Project) -> None:
    """The Job file is the error; the routine runs and its action fails with the reason."""
    project.job("job-bad", "name: Bad\n")
    project.routine("rtn-a", "interval: 1h\naction: {kind: job, job: job-bad}\n")
    validated = project.cli("validate")
    proc = project.cli("run", "--due")
    ended = [e for e in project.events() if e["type"] == "action_ended"]
    assert (True, False, 1, [("failure", "invalid Job Definition: job-bad")]) == (
        "jobs/job-bad.yaml:" in validated.stderr, "rtn-a.yaml:" in validated.stderr,
        proc.returncode, [(e["result"], e["reason"]) for e in ended])


def test_run_id_of_an_invalid_routine_is_refused(project: Project) -> None:
    """`run --id` of an invalid file: exit 1, says to validate, records nothing."""
    project.routine("rtn-a", "interval: 0h\naction: {kind: exec-resume}\n")
    proc = project.cli("run", "--id", "rtn-a")
    assert (1, True, []) == (proc.returncode, "rtn-a is invalid" in proc.stderr, project.events())


def test_a_routine_that_became_invalid_is_not_touched(project: Project) -> None:
    """Once its file is invalid, a routine is neither run nor registered again."""
    path = project.routine("rtn-a", "interval: 1h\naction: {kind: exec-resume}\n")
    project.cli("run", "--due", "--now", "2026-08-07T08:00:00Z")
    before = project.ledger.read_bytes()
    path.write_text(path.read_text().replace("1h", "1x"))
    proc = project.cli("run", "--due", "--now", "2026-08-07T12:00:00Z")
    assert (1, before) == (proc.returncode, project.ledger.read_bytes())


def test_exec_cycle_translates_loop_options_like_exec_auto() -> None:
    """exec-cycle takes exec-auto's options: `exec cycle … --loop --max-rounds N`."""
    action = ExecAutoAction(kind="exec-cycle", strategy="fifo", parallel=3, loop=True,
                            max_rounds=2)
    assert ["exec", "cycle", "--project", "p", "--if-busy", "skip", "--strategy", "fifo",
            "--parallel", "3", "--loop", "--max-rounds", "2"] == delegated_argv(action, "p")


def test_max_rounds_without_loop_is_not_passed_on() -> None:
    """max_rounds has no effect without loop (validate warns): it is left out."""
    action = ExecAutoAction(kind="exec-auto", loop=False, max_rounds=2)
    assert ["exec", "run", "--auto", "--project", "p", "--if-busy", "skip"] == delegated_argv(
        action, "p")


# --- §4 due rules end to end and stored timestamps ----------------------------------------------


def test_a_failed_interval_routine_waits_for_its_interval(project: Project) -> None:
    """A failure does not re-run early; the interval is inclusive."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [broken]}\n")
    project.exit_codes({"broken": 3})
    runs = [project.cli("run", "--due", "--now", t) for t in (
        "2026-08-07T10:00:00Z", "2026-08-07T10:59:59Z", "2026-08-07T11:00:00Z")]
    assert [1, "no due routines\n", 1] == [runs[0].returncode, runs[1].stdout, runs[2].returncode]


def test_stored_timestamps_use_the_two_formats(project: Project) -> None:
    """scheduled_for / last_scheduled_for / `at` carry milliseconds; last_run, started_at and
    completed_at do not (SPEC §4)."""
    project.routine("rtn-a", """\
        trigger: {cron: "0 17 * * 5", timezone: Asia/Tokyo}
        action: {kind: exec-resume}
        """)
    project.cli("run", "--due", "--now", "2026-08-07T08:02:30.250Z")
    started, ended = (next(e for e in project.events() if e["type"] == t)
                      for t in ("attempt_started", "attempt_ended"))
    state = project.state()["routines"]["rtn-a"]
    assert ("2026-08-07T08:00:00.000Z", "2026-08-07T08:02:30Z", "2026-08-07T08:00:00.000Z",
            "2026-08-07T08:02:30Z") == (started["scheduled_for"], started["last_run"],
                                        state["last_scheduled_for"], state["last_run"])
    assert all(STAMP_MS.fullmatch(e["at"]) for e in project.events())
    assert (True, True) == (bool(STAMP_S.fullmatch(ended["started_at"])),
                            bool(STAMP_S.fullmatch(ended["completed_at"])))

