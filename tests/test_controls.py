"""Operator controls end to end, in real subprocesses (SPEC §13): pause / resume, resolve
--attempt, and the wrong targets each refuses."""

from __future__ import annotations

from typing import Any

import orjson

from tests.conftest import Project, period_job

HOURLY_ALL = """\
trigger: {cron: "0 * * * *", timezone: UTC}
policy: {missed_run: all}
action: {kind: specdojo, args: [work]}
"""
HOURLY_LATEST = HOURLY_ALL.replace("missed_run: all", "missed_run: latest")


def _json(proc: Any) -> Any:
    assert "Traceback" not in proc.stderr, proc.stderr
    return orjson.loads(proc.stdout)


def _refused(project: Project, *args: str) -> str:
    """The command exits 1 with one `error:` line and appends nothing; returns the line."""
    before = project.ledger.read_bytes() if project.ledger.exists() else b""
    proc = project.cli(*args)
    assert (1, "") == (proc.returncode, proc.stdout), proc.stderr
    lines = proc.stderr.splitlines()
    assert 1 == len(lines) and lines[0].startswith("error: "), proc.stderr
    assert before == (project.ledger.read_bytes() if project.ledger.exists() else b"")
    return lines[0]


def test_pause_accounts_each_due_occurrence_once_and_resume_catches_nothing_up(
    project: Project,
) -> None:
    """Paused: run --due starts nothing and records each due occurrence once as paused, with
    who and why; list and status show it (healthy); resume runs nothing by itself, and the
    occurrence of the paused span no run saw is recorded paused by the next run --due, while
    later ones run."""
    project.routine("rtn-h", HOURLY_ALL)
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T10:00:10Z").returncode
    done = project.cli("pause", "rtn-h", "--note", "db migration", "--by", "alice",
                       "--now", "2026-05-01T10:30:00Z")
    assert (0, "rtn-h: paused\n") == (done.returncode, done.stdout), done.stderr
    listed = project.cli("list", "--json", "--now", "2026-05-01T11:30:00Z")
    row = _json(listed)["routines"][0]
    assert (0, {"by": "alice", "at": "2026-05-01T10:30:00.000Z", "note": "db migration"},
            False) == (listed.returncode, row["paused"], row["due"])
    status = project.cli("status", "rtn-h", "--now", "2026-05-01T11:30:00Z")
    assert "state     paused (paused by alice at 2026-05-01T10:30:00.000Z: db migration)" in (
        status.stdout), status.stdout
    assert 0 == status.returncode
    assert row["paused"] == _json(project.cli("status", "rtn-h", "--json", "--now",
                                              "2026-05-01T11:30:00Z"))["routines"][0]["paused"]
    calls = len(project.calls())
    for now in ("2026-05-01T11:30:00Z", "2026-05-01T11:40:00Z"):  # the second: nothing new
        ran = project.cli("run", "--due", "--now", now, "--json")
        assert 0 == ran.returncode, ran.stderr
    paused = [e for e in project.events() if e["type"] == "occurrence_paused"]
    assert [("2026-05-01T11:00:00.000Z", "paused by alice: db migration")] == [
        (e["scheduled_for"], e["reason"]) for e in paused]
    assert calls == len(project.calls())
    resumed = project.cli("resume", "rtn-h", "--by", "bob", "--now", "2026-05-01T12:30:00Z")
    assert 0 == resumed.returncode, resumed.stderr
    assert calls == len(project.calls()), "resume runs nothing by itself"
    ran = project.cli("run", "--due", "--now", "2026-05-01T13:10:00Z", "--json")
    doc = _json(ran)
    assert (["2026-05-01T12:00:00.000Z"], ["2026-05-01T13:00:00.000Z"]) == (
        [p["scheduled_for"] for p in doc["paused"]], [r["scheduled_for"] for r in doc["results"]])
    assert calls + 1 == len(project.calls())
    history = project.cli("history", "rtn-h").stdout
    assert "routine_paused" in history and "by alice at 2026-05-01T10:30:00.000Z: db migration" \
        in history and "routine_resumed" in history and "occurrence_paused" in history
    assert 0 == project.cli("fold", "--check").returncode


def test_latest_is_cut_at_the_resume(project: Project) -> None:
    """Under `latest`, what a run after the resume would coalesce is cut at the resume: one
    paused occurrence covers the paused span, and the run covers only what came after."""
    project.routine("rtn-l", HOURLY_LATEST)
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T10:00:10Z").returncode
    assert 0 == project.cli("pause", "rtn-l", "--now", "2026-05-01T10:30:00Z").returncode
    assert 0 == project.cli("resume", "rtn-l", "--now", "2026-05-01T12:30:00Z").returncode
    doc = _json(project.cli("run", "--due", "--now", "2026-05-01T15:10:00Z", "--json"))
    assert [{"routine_id": "rtn-l", "scheduled_for": "2026-05-01T12:00:00.000Z",
             "reason": f"paused by {_user(project)}"}] == doc["paused"]
    events = project.events()
    paused = next(e for e in events if e["type"] == "occurrence_paused")
    started = [e for e in events if e["type"] == "attempt_started"][-1]
    assert ("2026-05-01T11:00:00.000Z", "2026-05-01T15:00:00.000Z", "2026-05-01T13:00:00.000Z") \
        == (paused["passed_over_since"], started["scheduled_for"], started["passed_over_since"])


def test_a_pause_longer_than_the_cap_under_all_is_one_paused_occurrence(project: Project) -> None:
    """`all` every 5 minutes, paused for 4 days (over 1000 occurrences no run saw): while
    paused, run --due records the span as one occurrence_paused (coalescing the rest) and
    exits 0; after the resume, the span up to it likewise, then only the occurrences after
    the resume run - the routine is not wedged on "Too many missed cron occurrences"."""
    project.routine("rtn-f", HOURLY_ALL.replace('"0 * * * *"', '"*/5 * * * *"'))
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T10:00:10Z").returncode
    assert 0 == project.cli("pause", "rtn-f", "--now", "2026-05-01T10:01:00Z").returncode
    while_paused = project.cli("run", "--due", "--now", "2026-05-05T09:00:00Z", "--json")
    assert (0, [], []) == (while_paused.returncode, _json(while_paused)["errors"],
                           _json(while_paused)["results"]), while_paused.stderr
    assert 0 == project.cli("resume", "rtn-f", "--now", "2026-05-09T10:00:00Z").returncode
    ran = project.cli("run", "--due", "--now", "2026-05-09T10:12:00Z", "--json")
    doc = _json(ran)
    assert (0, [], ["2026-05-09T10:00:00.000Z"],
            ["2026-05-09T10:05:00.000Z", "2026-05-09T10:10:00.000Z"]) == (
        ran.returncode, doc["errors"], [p["scheduled_for"] for p in doc["paused"]],
        [r["scheduled_for"] for r in doc["results"]]), ran.stderr
    paused = [(e["scheduled_for"], e["passed_over_since"]) for e in project.events()
              if e["type"] == "occurrence_paused"]
    assert [("2026-05-05T09:00:00.000Z", "2026-05-01T10:05:00.000Z"),
            ("2026-05-09T10:00:00.000Z", "2026-05-05T09:05:00.000Z")] == paused
    assert 0 == project.cli("fold", "--check").returncode


def test_the_collapse_of_a_long_pause_begins_where_the_pause_began(project: Project) -> None:
    """`all` every 5 minutes, last run 10:00, paused only at 12:00 (the occurrences after the
    last run and before the pause are a backlog), resumed four days later: the paused span
    alone is one occurrence_paused (from 12:00: an occurrence at the pause's instant is inside
    it); the backlog before it stays one event per occurrence, and the occurrences after the
    resume run."""
    project.routine("rtn-g", HOURLY_ALL.replace('"0 * * * *"', '"*/5 * * * *"'))
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T10:00:10Z").returncode
    assert 0 == project.cli("pause", "rtn-g", "--now", "2026-05-01T12:00:00Z").returncode
    assert 0 == project.cli("resume", "rtn-g", "--now", "2026-05-05T10:00:00Z").returncode
    ran = project.cli("run", "--due", "--now", "2026-05-05T10:07:00Z", "--json")
    assert (0, [], ["2026-05-05T10:05:00.000Z"]) == (
        ran.returncode, _json(ran)["errors"],
        [r["scheduled_for"] for r in _json(ran)["results"]]), ran.stderr
    paused = [(e["scheduled_for"], e["passed_over_since"]) for e in project.events()
              if e["type"] == "occurrence_paused"]
    backlog = [(f"2026-05-01T{m // 60 + 10:02}:{m % 60:02}:00.000Z", None)
               for m in range(5, 120, 5)]  # 10:05 .. 11:55, one each
    assert [*backlog, ("2026-05-05T10:00:00.000Z", "2026-05-01T12:00:00.000Z")] == paused
    assert 0 == project.cli("fold", "--check").returncode


def test_a_pause_does_not_hide_a_backlog_from_before_it(project: Project) -> None:
    """`all` every minute, last run in May, paused and resumed in December: the seven months
    before the pause are more than 1000 missed occurrences no pause covers, so run --due
    fails the routine with "Too many missed cron occurrences" (SPEC §4) and records
    nothing, instead of calling them paused."""
    project.routine("rtn-h", HOURLY_ALL.replace('"0 * * * *"', '"* * * * *"'))
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T00:00:10Z").returncode
    assert 0 == project.cli("pause", "rtn-h", "--now", "2026-12-07T00:00:00Z").returncode
    assert 0 == project.cli("resume", "rtn-h", "--now", "2026-12-07T00:03:00Z").returncode
    before = project.ledger.read_bytes()
    ran = project.cli("run", "--due", "--now", "2026-12-07T00:05:30Z")
    assert 1 == ran.returncode and "Too many missed cron occurrences for rtn-h" in ran.stderr
    assert before == project.ledger.read_bytes()


def test_list_due_says_what_run_due_would_start(project: Project) -> None:
    """DUE is "would `run --due` start it now": no for an occurrence the run only records as
    paused (after a resume) or missed (past its deadline); yes for a retry that is due."""
    project.routine("rtn-p", HOURLY_ALL)
    project.routine("rtn-m", HOURLY_ALL.replace("missed_run: all", "starting_deadline: 5m"))
    project.routine("rtn-r", HOURLY_ALL.replace("missed_run: all",
                                                "retry: {attempts: 3, delay: 5m}"))
    project.exit_codes({"work": 1})
    project.cli("run", "--due", "--now", "2026-05-01T10:00:00Z")
    project.exit_codes({})
    rows = {r["id"]: r["due"] for r in _json(project.cli(
        "list", "--json", "--now", "2026-05-01T10:10:00Z"))["routines"]}
    assert {"rtn-p": False, "rtn-m": False, "rtn-r": True} == rows  # the retry is due
    assert 0 == project.cli("pause", "rtn-p", "--now", "2026-05-01T10:20:00Z").returncode
    assert 0 == project.cli("resume", "rtn-p", "--now", "2026-05-01T11:10:00Z").returncode
    rows = {r["id"]: r["due"] for r in _json(project.cli(
        "list", "--json", "--now", "2026-05-01T11:30:00Z"))["routines"]}
    assert {"rtn-p": False, "rtn-m": False, "rtn-r": True} == rows
    doc = _json(project.cli("run", "--due", "--dry-run", "--now", "2026-05-01T11:30:00Z",
                            "--json"))
    assert (["rtn-r"], ["rtn-p"], ["rtn-m"]) == (
        [s["routine_id"] for s in doc["selected"]], [p["routine_id"] for p in doc["paused"]],
        [m["routine_id"] for m in doc["missed"]])
    table = project.cli("list", "--now", "2026-05-01T12:02:00Z").stdout
    assert all(" yes " in line for line in table.splitlines()[1:4]), table


def _user(project: Project) -> str:
    return next(e for e in project.events() if e["type"] == "routine_paused")["paused_by"]


def test_run_id_runs_a_paused_routine_and_all_acts_on_every_routine(project: Project) -> None:
    """run --id still runs a paused routine (and keeps it paused); pause --all / resume --all
    record one event per routine, and only for those not already in that state."""
    project.routine("rtn-a", HOURLY_ALL)
    project.routine("rtn-b", HOURLY_ALL)
    assert 0 == project.cli("pause", "rtn-a", "--by", "ops").returncode
    both = project.cli("pause", "--all", "--note", "maintenance window", "--by", "ops")
    assert (0, "rtn-b: paused\n") == (both.returncode, both.stdout), both.stderr
    ran = project.cli("run", "--id", "rtn-a")
    assert (0, 1) == (ran.returncode, len(project.calls())), ran.stderr
    assert _json(project.cli("list", "--json"))["routines"][0]["paused"] is not None
    again = project.cli("resume", "--all")
    assert (0, "rtn-a: resumed (nothing runs until its next occurrence)\n"
               "rtn-b: resumed (nothing runs until its next occurrence)\n") == (
        again.returncode, again.stdout)
    kinds = [e["type"] for e in project.events() if e["type"].startswith("routine_")
             and e["type"] != "routine_registered"]
    assert ["routine_paused"] * 2 + ["routine_resumed"] * 2 == kinds


def test_controls_speak_json_for_scripts(project: Project) -> None:
    """pause, resume and resolve take --json: one document naming what changed, the same
    events recorded as without it."""
    project.routine("rtn-a", HOURLY_ALL)
    project.routine("rtn-b", HOURLY_ALL)
    assert {"paused": ["rtn-a"]} == _json(project.cli("pause", "rtn-a", "--json"))
    assert {"paused": ["rtn-b"]} == _json(project.cli("pause", "--all", "--json"))
    assert {"resumed": ["rtn-a", "rtn-b"]} == _json(project.cli("resume", "--all", "--json"))
    project.exit_codes({"work": 1})
    assert 1 == project.cli("run", "--id", "rtn-a").returncode
    attempt = [e for e in project.events() if e["type"] == "attempt_ended"][-1]["attempt_id"]
    assert {"routine_id": "rtn-a", "attempt_id": attempt, "result": "success",
            "overrides": True} == _json(project.cli("resolve", "rtn-a", "--attempt", attempt,
                                                    "--result", "success", "--note", "by hand",
                                                    "--json"))
    kinds = [e["type"] for e in project.events() if e["type"] != "routine_registered"]
    assert ["routine_paused", "routine_paused", "routine_resumed", "routine_resumed"] == [
        k for k in kinds if k.startswith("routine_")]
    assert "attempt_resolved" == kinds[-1]


def test_wrong_targets_are_refused_and_record_nothing(project: Project) -> None:
    """resume of a routine that is not paused, pause of a paused one, stop with nothing
    running, resolve --attempt of an unknown or open attempt: one error line, exit 1."""
    project.routine("rtn-h", HOURLY_ALL)
    assert 0 == project.cli("run", "--id", "rtn-h").returncode
    assert "rtn-h is not paused" in _refused(project, "resume", "rtn-h")
    assert "no routine is paused; nothing to resume" in _refused(project, "resume", "--all")
    assert 0 == project.cli("pause", "rtn-h").returncode
    assert "every routine is already paused; nothing to pause" in _refused(project, "pause",
                                                                            "--all")
    assert "rtn-h is already paused" in _refused(project, "pause", "rtn-h")
    assert "has no running attempt to stop" in _refused(project, "stop", "rtn-h")
    assert "has no attempt att-nope" in _refused(
        project, "resolve", "rtn-h", "--attempt", "att-nope", "--result", "success",
        "--note", "x")
    # an attempt still open (its runner died: SIGKILL leaves it so)
    last = project.events()[-1]
    started = next(e for e in project.events() if e["type"] == "attempt_started")
    line = orjson.dumps({**started, "seq": last["seq"] + 1, "attempt_id": "att-open",
                         "transition": "T-06", "owner": {"pid": 999999999, "host": "h"},
                         "prev": _prev(project)}) + b"\n"
    with project.ledger.open("ab") as fh:
        fh.write(line)
    assert "att-open of rtn-h is still open" in _refused(
        project, "resolve", "rtn-h", "--attempt", "att-open", "--result", "success",
        "--note", "x")


def _prev(project: Project) -> str:
    import hashlib

    return hashlib.sha256(project.ledger.read_bytes().splitlines()[-1]).hexdigest()


def test_resolve_attempt_overrides_an_ended_attempt_and_ends_its_hold(project: Project) -> None:
    """A failed attempt under hold is overridden as success: attempt_resolved with overrides
    true, the routine takes the new result, the hold that attempt began ends, and history
    --attempts shows the new outcome. Without --attempt a failed attempt is still refused."""
    project.routine("rtn-h", HOURLY_ALL.replace("missed_run: all", "missed_run: all, "
                                                "on_failure: hold"))
    project.exit_codes({"work": 1})
    assert 1 == project.cli("run", "--due", "--now", "2026-05-01T10:00:10Z").returncode
    attempt = next(e for e in project.events() if e["type"] == "attempt_started")["attempt_id"]
    assert "no open attempt" in _refused(project, "resolve", "rtn-h", "--result", "success",
                                         "--note", "x")
    done = project.cli("resolve", "rtn-h", "--attempt", attempt, "--result", "success",
                       "--note", "re-sent by hand", "--by", "carol")
    assert (0, f"rtn-h: attempt {attempt} overridden as success\n") == (
        done.returncode, done.stdout), done.stderr
    event = project.events()[-1]
    assert ("attempt_resolved", True, "T-03", "carol") == (
        event["type"], event["overrides"], event["transition"], event["resolved_by"])
    entry = project.state()["routines"]["rtn-h"]
    assert ("success", "success", False, "re-sent by hand") == (
        entry["status"], entry["last_result"], entry["held"], entry["last_reason"])
    shown = project.cli("history", "rtn-h", "--attempts", "--json").stdout.splitlines()
    assert [(attempt, "success", "re-sent by hand", "carol")] == [
        (a["attempt_id"], a["result"], a["reason"], a["resolved_by"])
        for a in map(orjson.loads, shown)]
    assert "overrides the end of" in project.cli("history", "rtn-h").stdout
    said = "  resolved by carol: re-sent by hand\n"  # the REASON column: who first, so that
    assert said in project.cli("history", "rtn-h", "--attempts").stdout  # status's 80 columns
    assert "  success  resolved by carol: re-sent …\n" in project.cli(  # keep it
        "status", "rtn-h", "--now", "2026-05-01T10:10:00Z").stdout
    assert 0 == project.cli("list", "--now", "2026-05-01T10:10:00Z").returncode
    assert 0 == project.cli("fold", "--check").returncode


def _job_routine(project: Project) -> None:
    project.job("job-report", period_job("report", "'echo {{inputs.period}}'"))
    project.routine("rtn-report", """\
        interval: 1d
        action: {kind: job, job: job-report, inputs: {period: "{{scheduled_at | iso_week}}"}}
        """)


def test_run_id_input_overrides_the_job_inputs_for_that_attempt(project: Project) -> None:
    """run --id --input k=v: the attempt's Job action runs with the given value (its Job Run
    records it), attempt_started.inputs_override records it; the next attempt is as defined.
    Unknown names, --due and secrets are refused (exit 2) with nothing recorded."""
    _job_routine(project)
    secret = "s3cr3t-t0ken-value"
    env = project.env(API_TOKEN=secret)
    for args in (["--id", "rtn-report", "--input", "nope=1"],
                 ["--due", "--input", "period=x"],
                 ["--id", "rtn-report", "--input", "period=a", "--input", "period=b"],
                 ["--id", "rtn-report", "--input", f"period={secret}"]):
        proc = project.cli("run", *args, env=env)
        assert (2, 1) == (proc.returncode, len(proc.stderr.splitlines())), proc.stderr
        assert proc.stderr.startswith("error: ") and not project.ledger.exists()
    assert "unknown input nope for the Job actions of rtn-report (declared: period)" in (
        project.cli("run", "--id", "rtn-report", "--input", "nope=1").stderr)
    dry = _json(project.cli("run", "--id", "rtn-report", "--input", "period=2026-W01",
                            "--dry-run", "--json"))
    assert {"period": "2026-W01"} == dry["selected"][0]["actions"][0]["inputs"]
    ran = project.cli("run", "--id", "rtn-report", "--input", "period=2026-W01", env=env)
    assert 0 == ran.returncode, ran.stderr + ran.stdout
    started = next(e for e in project.events() if e["type"] == "attempt_started")
    assert {"period": "2026-W01"} == started["inputs_override"]
    runs = sorted((project.root / "execution" / "jobs" / "runs").glob("*.jsonl"))
    created = orjson.loads(runs[0].read_bytes().splitlines()[0])
    assert {"period": "2026-W01"} == created["inputs"]
    again = project.cli("run", "--id", "rtn-report", env=env)
    assert 0 == again.returncode, again.stderr
    last = [e for e in project.events() if e["type"] == "attempt_started"][-1]
    assert "inputs_override" not in last


def test_a_note_with_control_characters_is_shown_as_one_escaped_line(project: Project) -> None:
    """An operator's note or name is stored as typed, but every table cell is one line with
    control characters escaped: a newline does not split a row, and an escape sequence (clear
    the screen, move the cursor) never reaches the terminal."""
    project.routine("rtn-a", HOURLY_ALL)
    note = "disk full\nsee \x1b[2Jticket"
    assert 0 == project.cli("pause", "rtn-a", "--note", note, "--by", "ops\x1b[31m").returncode
    assert note == next(e for e in project.events() if e["type"] == "routine_paused")["note"]
    for command in (["history", "rtn-a"], ["status"], ["status", "rtn-a"], ["list"]):
        shown = project.cli(*command).stdout
        assert ("\x1b" not in shown) and "\\x1b[31m" in shown, (command, shown)
    [row] = [line for line in project.cli("history", "rtn-a").stdout.splitlines()
             if "routine_paused" in line]
    assert "disk full\\nsee \\x1b[2Jticket" in row


def test_run_shows_notes_reasons_inputs_and_stderr_as_escaped_lines(project: Project) -> None:
    """The same for what `run` prints: a paused occurrence's reason (it quotes the note), a
    failed action's reason and the last lines of its stderr (a command may print escape
    sequences), a dry run's Job inputs, and `list`'s line for the last failure. Anyone who may
    pause a routine or run a command must not set the operator's terminal title or forge a
    line of cron's mail. The command's output echoed live as it runs stays as the command
    wrote it, as a terminal would show it."""
    forged = "x\x1b]0;TITLE\x07\nFAKE: all healthy"
    project.routine("rtn-a", HOURLY_ALL)
    project.job("job-bad", period_job("bad", "printf 'boom\\033]0;HACKED\\007\\n' >&2; exit 1"))
    project.routine("rtn-b", HOURLY_ALL.replace(
        "{kind: specdojo, args: [work]}", '{kind: job, job: job-bad, inputs: {period: "p"}}'))
    assert 0 == project.cli("pause", "rtn-a", "--note", forged).returncode
    outputs = [project.cli("run", "--due", "--dry-run", "--now", "2026-08-07T08:00:30Z"),
               project.cli("run", "--id", "rtn-b", "--dry-run", "--input", f"period={forged}"),
               project.cli("run", "--due", "--now", "2026-08-07T08:00:30Z"),
               project.cli("list", "--now", "2026-08-07T08:00:40Z")]
    for done in outputs:  # the command's own output, echoed live as it runs, is left as is
        text = "".join(line for line in (done.stdout + done.stderr).splitlines(keepends=True)
                       if not line.startswith("[rtn-b] "))
        assert "\x1b" not in text and "\x07" not in text, (done.args, text)
        assert not any(line.startswith("FAKE") for line in text.splitlines()), (done.args, text)
    assert "x\\x1b]0;TITLE\\x07\\nFAKE: all healthy" in outputs[0].stdout
    assert "boom\\x1b]0;HACKED\\x07" in outputs[2].stdout


def test_a_blank_by_names_nobody_and_is_refused(project: Project) -> None:
    """Every control records who acted (SPEC §13): ``--by " "`` would record nobody, so each
    command that takes ``--by`` refuses it as a usage error (exit 2, one line) before it
    records anything, as it refuses a blank ``--note``."""
    project.routine("rtn-h", HOURLY_ALL)
    assert 0 == project.cli("run", "--id", "rtn-h").returncode
    before = project.ledger.read_bytes()
    for args in (["pause", "rtn-h"], ["resume", "rtn-h"], ["stop", "rtn-h"],
                 ["release", "rtn-h"],
                 ["resolve", "rtn-h", "--result", "success", "--note", "checked"],
                 ["job", "resolve", "JBR-nope-000000000000", "--status", "noop", "--note", "x"]):
        proc = project.cli(*args, "--by", " \t")
        assert (2, "") == (proc.returncode, proc.stdout), (args, proc.stderr)
        assert ["error: --by must name who you are (leave it out for $USER)"] == [
            line.split(" (see `")[0] for line in proc.stderr.splitlines()], (args, proc.stderr)
    assert before == project.ledger.read_bytes()
    assert 0 == project.cli("pause", "rtn-h", "--by", "ops").returncode
    assert "ops" == project.events()[-1]["paused_by"]
