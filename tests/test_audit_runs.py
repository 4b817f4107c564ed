"""Audit of SPEC §5 (events, views), §6 (run, locks) and §6.5 (interrupted attempts): the
promises no other test pinned, end to end with `python -m specdojo_routine` in subprocesses."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from specdojo_routine.core import event_parts
from specdojo_routine.core import routine_events as rev
from specdojo_routine.core.timefmt import format_s, parse_instant
from specdojo_routine.store.ledger import chain
from specdojo_routine.store.ledger import journal as ledger
from tests.conftest import REPO, Project, period_job

LIST_ROUTINE = """\
interval: 1h
action:
  - {kind: job, job: job-weekly, inputs: {period: "{{scheduled_at | iso_week}}"}}
  - {kind: specdojo, args: [second]}
"""
WEEKLY_JOB = period_job("Weekly", 'echo "report {{inputs.period}}"',
                        'checkpoint:\n  values: {last_period: "{{inputs.period}}"}\n')
RUN_ID = "JBR-weekly-0123456789ab"


def _interrupted(project: Project, routine_id: str = "rtn-a") -> None:
    """A dead runner's attempt of ``routine_id`` (10:00Z): action 1 ended, action 2 started."""
    log = ledger.Ledger(project.ledger)
    common: dict[str, Any] = {"routine_id": routine_id, "attempt_id": "att-dead"}
    log.append_many([
        rev.RoutineRegistered(routine_id=routine_id, digest="old", path="routines/x.yaml"),
        rev.AttemptStarted(
            **common, transition="T-02", trigger="due",
            scheduled_for="2026-05-01T10:00:00.000Z", last_run="2026-05-01T10:00:00Z",
            passed_over_since=None, owner=event_parts.Owner(pid=999_999, host="elsewhere"),
            schedule="interval"),
        rev.ActionStarted(**common, index=1, kind="job"),
        rev.ActionEnded(**common, index=1, kind="job", result="success", job_run_id=RUN_ID),
        rev.ActionStarted(**common, index=2, kind="specdojo"),
    ])


@pytest.fixture
def listed(project: Project) -> Project:
    """A project with job-weekly and the list routine rtn-a (job + specdojo, every hour)."""
    project.job("job-weekly", WEEKLY_JOB)
    project.routine("rtn-a", LIST_ROUTINE)
    return project


#: When the ``held`` fixture's holder took the lock: two hours of wall-clock time ago.
HELD_SINCE = format_s(datetime.now(UTC) - timedelta(hours=2))


@pytest.fixture
def held(project: Project) -> Iterator[Project]:
    """Another live process holds the routine lock, since :data:`HELD_SINCE`."""
    locks_dir = project.root / "routines" / ".locks"
    holder = subprocess.Popen(
        [sys.executable, str(REPO / "tests" / "lockhelper.py"), "routine-hold", str(locks_dir),
         HELD_SINCE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert "held" == holder.stdout.readline().strip()  # type: ignore[union-attr]
        yield project
    finally:
        holder.stdin.close()  # type: ignore[union-attr]
        holder.wait(timeout=30)


def _types(project: Project) -> list[str]:
    return [e["type"] for e in project.events()]


# --- §6.5 interrupted attempts and resolve -------------------------------------------------------


def test_run_id_refuses_an_interrupted_routine(listed: Project) -> None:
    """run --id does not start an interrupted routine again: it reports it and exits 1."""
    _interrupted(listed)
    proc = listed.cli("run", "--id", "rtn-a", "--now", "2026-05-01T12:00:00Z")
    assert 1 == proc.returncode
    assert "rtn-a: interrupted attempt" in proc.stderr
    assert 1 == _types(listed).count("attempt_started")
    assert [] == listed.calls()


def test_run_due_refuses_the_interrupted_routine_and_runs_the_others(listed: Project) -> None:
    """run --due skips the interrupted routine (exit 1) but still runs every other due one."""
    listed.routine("rtn-b", "interval: 1h\naction: {kind: specdojo, args: [other]}\n")
    _interrupted(listed)
    proc = listed.cli("run", "--due", "--now", "2026-05-01T12:00:00Z")
    assert 1 == proc.returncode
    started = [e["routine_id"] for e in listed.events() if e["type"] == "attempt_started"]
    assert ["rtn-a", "rtn-b"] == started
    assert ["other --project demo"] == listed.calls()


def test_list_shows_an_interrupted_routine_and_exits_1(listed: Project) -> None:
    """SPEC §6.5/§8: `list` shows an interrupted routine (`"interrupted": true`, status
    running; the table's status says interrupted) and, as a health check, exits 1 for it
    (text and JSON alike)."""
    assert 0 == listed.cli("list", "--now", "2026-05-01T09:00:00Z").returncode
    _interrupted(listed)
    text = listed.cli("list", "--now", "2026-05-01T12:00:00Z")
    row_words = [line.split() for line in text.stdout.splitlines() if line.startswith("rtn-")]
    assert (1, "interrupted") == (text.returncode, row_words[0][1])
    proc = listed.cli("list", "--json", "--now", "2026-05-01T12:00:00Z")
    row = orjson.loads(proc.stdout)["routines"][0]
    assert (1, True, "running") == (proc.returncode, row["interrupted"], row["status"])


def test_open_attempt_under_a_live_lock_holder_is_running_not_interrupted(held: Project) -> None:
    """While another live process holds the lock, an open attempt is simply running."""
    held.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [x]}\n")
    _interrupted(held)
    row = orjson.loads(held.cli("list", "--json").stdout)["routines"][0]
    assert ("running", False, False) == (row["status"], row["interrupted"], row["due"])
    assert "interrupted" not in held.cli("list").stdout


def test_list_json_names_a_live_holder_and_flags_it_suspicious(held: Project) -> None:
    """list --json `lock`: the holder's pid, host and time; held over 1 hour is suspicious."""
    held.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [x]}\n")
    record = orjson.loads((held.root / "routines" / ".locks" / "routine-run.flock").read_bytes())
    lock = orjson.loads(held.cli("list", "--json").stdout)["lock"]
    assert {"held": True, "pid": record["pid"], "host": record["host"],
            "acquired_at": HELD_SINCE, "suspicious": True} == lock


def test_suspicious_counts_wall_clock_time_not_now(held: Project) -> None:
    """SPEC §8: `suspicious` is held for over 1 hour of wall-clock time: a `--now` equal to
    the holder's acquired_at does not make a lock held for two hours look fresh."""
    held.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [x]}\n")
    lock = orjson.loads(held.cli("list", "--json", "--now", HELD_SINCE).stdout)["lock"]
    assert (HELD_SINCE, True) == (lock["acquired_at"], lock["suspicious"])


def test_list_text_names_a_live_holder_and_flags_it_suspicious(held: Project) -> None:
    """SPEC §6.2: the text `list` shows the lock holder (pid, host, since when) and flags one
    held for over 1 hour as suspicious."""
    held.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [x]}\n")
    record = orjson.loads((held.root / "routines" / ".locks" / "routine-run.flock").read_bytes())
    lines = held.cli("list").stdout.splitlines()
    assert [f"lock: held by pid {record['pid']} on {record['host']} since {HELD_SINCE}"
            " - SUSPICIOUS: held for over 1 hour"] == [
        line for line in lines if line.startswith("lock:")]


def test_resolve_with_an_empty_note_is_a_usage_error(listed: Project) -> None:
    """resolve --note "" is refused in one line (exit 2), not an internal error; nothing is
    recorded."""
    _interrupted(listed)
    before = listed.ledger.read_bytes()
    proc = listed.cli("resolve", "rtn-a", "--result", "success", "--note", " ")
    assert (2, 1) == (proc.returncode, len(proc.stderr.splitlines()))
    assert proc.stderr.startswith("error: ") and "internal error" not in proc.stderr
    assert before == listed.ledger.read_bytes()


def test_resolve_defaults_resolved_by_to_user(listed: Project) -> None:
    """Without --by, resolved_by is $USER (not LOGNAME, which getpass would read first)."""
    _interrupted(listed)
    proc = listed.cli("resolve", "rtn-a", "--result", "skipped", "--note", "looked",
                      env=listed.env(USER="carol", LOGNAME="dave"))
    assert 0 == proc.returncode, proc.stderr
    resolved = listed.events()[-1]
    assert ("attempt_resolved", "carol", "T-05", "att-dead") == (
        resolved["type"], resolved["resolved_by"], resolved["transition"],
        resolved["attempt_id"])


def test_resolve_while_the_lock_is_held_exits_75_and_records_nothing(held: Project) -> None:
    """resolve takes the routine lock: busy -> exit 75 with the holder named, no event."""
    held.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [x]}\n")
    _interrupted(held)
    before = held.ledger.read_bytes()
    proc = held.cli("resolve", "rtn-a", "--result", "failure", "--note", "n", "--by", "bob")
    assert 75 == proc.returncode
    assert "Another routine run is in progress" in proc.stderr
    assert before == held.ledger.read_bytes()


def test_resume_closes_with_what_the_dead_attempt_recorded(listed: Project) -> None:
    """on_interrupted: resume closes the attempt with the action results and Job Run ids it
    recorded, completed_at = when closed; the ledger only grows; exit 0."""
    path = listed.root / "routines" / "rtn-a.yaml"
    path.write_text(path.read_text() + "policy: {on_interrupted: resume}\n")
    _interrupted(listed)
    before = listed.ledger.read_bytes()
    proc = listed.cli("run", "--due", "--now", "2026-05-01T10:30:00Z")
    assert 0 == proc.returncode, proc.stderr
    ended = listed.events()[-1]
    assert {"type": "attempt_ended", "attempt_id": "att-dead", "transition": "T-04",
            "result": "failure", "reason": "interrupted",
            "action_results": [{"index": 1, "kind": "job", "result": "success"}],
            "job_run_ids": [RUN_ID], "scheduled_for": "2026-05-01T10:00:00.000Z",
            "started_at": "2026-05-01T10:00:00Z", "completed_at": "2026-05-01T10:30:00Z",
            } == {k: ended[k] for k in ("type", "attempt_id", "transition", "result", "reason",
                                        "action_results", "job_run_ids", "scheduled_for",
                                        "started_at", "completed_at")}
    assert listed.ledger.read_bytes().startswith(before)


# --- §6 run ------------------------------------------------------------------------------------


def test_routines_run_in_sorted_file_order(project: Project) -> None:
    """Routines are attempted in sorted file order (a/rtn-zeta before b/rtn-alpha)."""
    for folder, rid in (("b", "rtn-alpha"), ("a", "rtn-zeta")):
        (project.root / "routines" / folder).mkdir()
        (project.root / "routines" / folder / f"{rid}.yaml").write_text(
            f"id: {rid}\ninterval: 1h\naction: {{kind: specdojo, args: [{rid}]}}\n")
    assert 0 == project.cli("run", "--due").returncode
    started = [e["routine_id"] for e in project.events() if e["type"] == "attempt_started"]
    assert ["rtn-zeta", "rtn-alpha"] == started


def test_missed_occurrences_run_oldest_first_each_one_complete(project: Project) -> None:
    """missed_run: all: each occurrence is started, run and ended before the next, oldest
    first."""
    project.routine("rtn-hourly", """\
        trigger: {cron: "0 * * * *", timezone: UTC}
        policy: {missed_run: all}
        action: {kind: specdojo, args: [tick]}
        """)
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T10:00:30Z").returncode
    seen = len(project.events())
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T12:00:30Z").returncode
    later = [(e["type"], e.get("scheduled_for")) for e in project.events()[seen:]]
    one = ["attempt_started", "action_started", "action_ended", "attempt_ended"]
    assert [t for _ in range(2) for t in one] == [t for t, _ in later]
    assert ["2026-05-01T11:00:00.000Z", "2026-05-01T12:00:00.000Z"] == [
        s for t, s in later if t == "attempt_started"]


def test_at_and_lock_holder_time_are_the_wall_clock_under_now(project: Project) -> None:
    """--now moves the schedule only: `at` and the lock's acquired_at are the wall clock."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [x]}\n")
    assert 0 == project.cli("run", "--due", "--now", "2020-01-01T00:00:00Z").returncode
    record = orjson.loads((project.root / "routines" / ".locks" / "routine-run.flock").read_bytes())
    stamps = [e["at"] for e in project.events()] + [record["acquired_at"]]
    now = datetime.now(UTC)
    assert [] == [s for s in stamps if abs(parse_instant(s) - now) > timedelta(minutes=5)]
    assert "2020-01-01T00:00:00Z" == project.events()[1]["last_run"]


def test_dry_run_creates_no_file_or_directory(project: Project) -> None:
    """--dry-run on a fresh project leaves the tree exactly as it was, directories included."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [x]}\n")
    before = sorted(p.relative_to(project.root).as_posix() for p in project.root.rglob("*"))
    assert 0 == project.cli("run", "--due", "--dry-run").returncode
    assert before == sorted(p.relative_to(project.root).as_posix()
                            for p in project.root.rglob("*"))


def test_dry_run_shows_rendered_job_inputs(listed: Project) -> None:
    """--dry-run shows a job action's Job and its rendered inputs (JSON and text)."""
    doc = orjson.loads(listed.cli("run", "--due", "--dry-run", "--json", "--now",
                                  "2026-08-07T08:02:00Z").stdout)
    assert {"index": 1, "kind": "job", "job": "job-weekly",
            "inputs": {"period": "2026-W32"}} == doc["selected"][0]["actions"][0]
    text = listed.cli("run", "--due", "--dry-run", "--now", "2026-08-07T08:02:00Z").stdout
    assert "  1. job job-weekly (period=2026-W32)\n" in text


def test_dry_run_takes_no_lock(held: Project) -> None:
    """--dry-run works while another process holds the routine lock (no 75) and writes
    nothing."""
    held.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [x]}\n")
    before = held.files()
    proc = held.cli("run", "--due", "--dry-run")
    assert 0 == proc.returncode, proc.stderr
    assert "rtn-a" in proc.stdout
    assert before == held.files()


def test_young_upstream_lock_dir_makes_run_exit_75_recording_nothing(project: Project) -> None:
    """The upstream routine-run.lock/ directory (fresh) is busy: exit 75, no ledger."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [x]}\n")
    (project.root / "routines" / ".locks" / "routine-run.lock").mkdir(parents=True)
    proc = project.cli("run", "--due")
    assert 75 == proc.returncode
    assert "routine-run.lock" in proc.stderr
    assert (False, []) == (project.ledger.exists(), project.calls())


# --- §5 events and views -----------------------------------------------------------------------


def test_routine_state_shape_and_ledger_position(project: Project) -> None:
    """routine-state.json: the §5 keys (+ digest, open_attempt), the ledger's seq, byte size
    and chain head (nothing of the file: no device, inode or ctime); last_scheduled_for for
    cron only, last_action_results for list actions only."""
    project.routine("rtn-cron", """\
        trigger: {cron: "0 * * * *", timezone: UTC}
        action: [{kind: specdojo, args: [one]}, {kind: specdojo, args: [two]}]
        """)
    project.routine("rtn-int", "interval: 1h\naction: {kind: specdojo, args: [three]}\n")
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T10:00:30Z").returncode
    state = project.state()
    assert (["version", "ledger", "routines"], 1) == (list(state), state["version"])
    last = project.ledger.read_bytes().splitlines()[-1]
    assert {"seq": len(project.events()), "offset": project.ledger.stat().st_size,
            "head": hashlib.sha256(last).hexdigest()} == state["ledger"]
    keys = ["status", "last_run", "last_result", "last_scheduled_for", "last_action_results",
            "last_reason", "attempt_id", "digest", "last_accounted_for", "held",
            "hold_attempt_id", "held_occurrences", "last_missed", "pause", "open_attempt"]
    upstream_absent = ["last_scheduled_for", "last_action_results"]  # absent, never null
    assert [keys, [k for k in keys if k not in upstream_absent]] == [
        list(e) for e in state["routines"].values()]
    cron, interval = state["routines"]["rtn-cron"], state["routines"]["rtn-int"]
    assert ("2026-05-01T10:00:00.000Z", 2) == (cron["last_scheduled_for"],
                                                len(cron["last_action_results"]))
    assert not {"last_scheduled_for", "last_action_results"} & set(interval)


def test_a_job_actions_run_id_is_recorded_in_its_attempt(listed: Project) -> None:
    """The Job Run of a job action is named in action_ended and attempt_ended.job_run_ids."""
    assert 0 == listed.cli("run", "--due", "--now", "2026-08-07T08:00:00Z").returncode
    [run_view] = (listed.root / "execution" / "jobs" / "runs").glob("*.json")
    action = next(e for e in listed.events() if e["type"] == "action_ended")
    ended = next(e for e in listed.events() if e["type"] == "attempt_ended")
    assert ([run_view.stem], run_view.stem) == (ended["job_run_ids"], action["job_run_id"])


def test_views_of_a_real_run_are_rebuilt_byte_for_byte(listed: Project) -> None:
    """After runs with Job actions, deleting every view and running `fold` restores each one
    exactly (routine-state, runs/<id>.json, job-state)."""
    for now in ("2026-08-07T08:00:00Z", "2026-08-14T08:00:00Z"):
        assert 0 == listed.cli("run", "--due", "--now", now).returncode
    derived = [p for p in listed.root.rglob("*.json")
               if p.parent.name in ("generated", "runs")]
    saved = {p: p.read_bytes() for p in derived}
    assert 4 == len(saved)  # routine-state, two run views, job-state
    for p in derived:
        p.unlink()
    assert 0 == listed.cli("fold").returncode
    assert saved == {p: p.read_bytes() for p in derived}


@pytest.mark.parametrize("command", [
    ["list"], ["run", "--due"], ["run", "--due", "--dry-run"], ["fold"], ["fold", "--check"],
    ["history"], ["resolve", "rtn-a", "--result", "success", "--note", "n"],
])
def test_unknown_event_type_is_refused_naming_file_and_line(
    project: Project, command: list[str]
) -> None:
    """Every command reading the routine ledger refuses an unknown event type with file and
    line (exit 1, one line) and records nothing."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [x]}\n")
    ledger.Ledger(project.ledger).append(
        rev.RoutineRegistered(routine_id="rtn-a", digest="d", path="p"))
    prev = chain.line_hash(project.ledger.read_bytes().splitlines()[-1])  # a chained line
    with project.ledger.open("ab") as f:
        f.write(b'{"version":1,"seq":2,"type":"attempt_paused","at":"2026-05-01T10:00:00.000Z",'
                b'"routine_id":"rtn-a","prev":"' + prev.encode() + b'"}\n')
    before = project.ledger.read_bytes()
    proc = project.cli(*command)
    assert (1, 1) == (proc.returncode, len(proc.stderr.splitlines())), proc.stderr
    assert proc.stderr.startswith(f"error: {project.ledger}:2: unknown routine event type "
                                  "'attempt_paused'")
    assert before == project.ledger.read_bytes()


def test_unknown_job_event_type_is_refused_by_fold(project: Project) -> None:
    """`fold` refuses a Job Run ledger line of an unknown type, naming file and line."""
    runs = project.root / "execution" / "jobs" / "runs"
    runs.mkdir(parents=True)
    bad = runs / "JBR-x-000000000000.jsonl"
    bad.write_bytes(b'{"version":1,"seq":1,"type":"run_paused","at":"2026-05-01T10:00:00.000Z",'
                    b'"run_id":"JBR-x-000000000000"}\n')
    proc = project.cli("fold")
    assert 1 == proc.returncode
    assert proc.stderr.startswith(f"error: {bad}:1: unknown job event type 'run_paused'")
    assert not (runs / "JBR-x-000000000000.json").exists()


def test_torn_tail_is_repaired_by_the_next_run(project: Project) -> None:
    """A torn last line is moved to <ledger>.torn-<seq> by the next run's locked append,
    which continues at that seq; the views then match the ledger."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [x]}\n")
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T10:00:00Z").returncode
    seq = len(project.events()) + 1
    with project.ledger.open("ab") as f:
        f.write(b'{"version":1,"seq":%d,"ty' % seq)
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T12:00:00Z").returncode
    fragment = project.ledger.with_name(f"routine-runs.jsonl.torn-{seq}")
    assert b'{"version":1,"seq":%d,"ty' % seq == fragment.read_bytes()
    assert list(range(1, len(project.events()) + 1)) == [e["seq"] for e in project.events()]
    assert 0 == project.cli("fold", "--check").returncode


def test_fold_refuses_a_torn_tail_until_repair(project: Project) -> None:
    """`fold` exits 1 naming the torn line; `fold --repair` moves it aside and folds."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [x]}\n")
    assert 0 == project.cli("run", "--due").returncode
    seq = len(project.events()) + 1
    with project.ledger.open("ab") as f:
        f.write(b"{")
    refused = project.cli("fold")
    assert 1 == refused.returncode
    assert f"{project.ledger}:{seq}: last line is torn" in refused.stderr
    assert 0 == project.cli("fold", "--repair").returncode
    assert b"{" == project.ledger.with_name(f"routine-runs.jsonl.torn-{seq}").read_bytes()
    assert project.ledger.read_bytes().endswith(b"}\n")


def test_fold_check_reports_a_drifted_view_and_writes_nothing(project: Project) -> None:
    """`fold --check` exits 1 naming the edited view and leaves it as it was. The edit is to
    our own key (`status`), not to an upstream fact: there is nothing in it to import, so it
    is drift (an edited `last_result` would be imported: SPEC §10 rule 3)."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [x]}\n")
    assert 0 == project.cli("run", "--due").returncode
    view = project.root / "routines" / "generated" / "routine-state.json"
    edited = view.read_bytes().replace(b'"status": "success"', b'"status": "failure"')
    assert edited != view.read_bytes()
    view.write_bytes(edited)
    proc = project.cli("fold", "--check")
    assert 1 == proc.returncode
    assert "drift: routines/generated/routine-state.json" in proc.stderr
    assert edited == view.read_bytes()


def test_version_0_lines_are_upgraded_and_new_lines_are_version_1(project: Project) -> None:
    """A ledger of pre-version (v0) lines folds; the next run appends v1 lines after them."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [x]}\n")
    common = {"routine_id": "rtn-a", "attempt_id": "att-old"}
    v0 = [
        {"seq": 1, "type": "attempt_started", "at": "2026-05-01T09:00:00.000Z", **common,
         "transition": "T-02", "trigger": "due", "scheduled_for": "2026-05-01T09:00:00.000Z",
         "last_run": "2026-05-01T09:00:00Z", "cron": False},
        {"seq": 2, "type": "attempt_ended", "at": "2026-05-01T09:00:01.000Z", **common,
         "transition": "T-03", "result": "success", "action_results": None,
         "scheduled_for": "2026-05-01T09:00:00.000Z", "started_at": "2026-05-01T09:00:00Z",
         "completed_at": "2026-05-01T09:00:01Z", "job_run_ids": []},
    ]
    project.ledger.parent.mkdir(parents=True)
    project.ledger.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in v0))
    row = orjson.loads(project.cli("list", "--json", "--now", "2026-05-01T09:30:00Z").stdout)[
        "routines"][0]
    assert ("success", "2026-05-01T09:00:00Z", False) == (row["status"], row["last_run"],
                                                          row["due"])
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T10:00:00Z").returncode
    appended = project.events()[2:]
    assert [(1, n) for n in range(3, 3 + len(appended))] == [
        (e["version"], e["seq"]) for e in appended]
    assert "T-06" == next(e for e in appended if e["type"] == "attempt_started")["transition"]
