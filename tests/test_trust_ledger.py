"""A view is evidence, not truth (SPEC §5 tamper evidence): the hash chain, views that record
what they cover, and refusal before anything is delegated or appended - end to end."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from specdojo_routine.core import routine_events as rev
from specdojo_routine.core.errors import CorruptLedgerError
from specdojo_routine.execute import runner as execute_runner
from specdojo_routine.store.config import resolve_project
from specdojo_routine.store.ledger import chain, proven, views
from specdojo_routine.store.ledger import journal as ledger
from specdojo_routine.store.locks import execlock
from specdojo_routine.store.locks import routine as locks
from tests.conftest import Project, wait_for, wait_for_a_child_in_group

NOW = "2026-05-01T10:00:30Z"
LATER = "2026-05-01T11:00:30Z"




def _interrupted(project: Project, rid: str = "rtn-crash", seconds: int = 3,
                 policy: str = "") -> None:
    """The routine's runner is SIGKILLed while its action runs: the fake CLI (the group leader)
    dies with it, the ``sleep`` it started lives on in the action's process group and ends
    by itself after ``seconds``."""
    project.routine(rid, f"""\
        trigger: {{cron: "0 * * * *", timezone: UTC}}
        action: {{kind: specdojo, args: [sleep-{seconds}]}}
        {policy}""")
    proc = project.popen("run", "--due", "--now", NOW)
    wait_for(lambda: len(project.calls()) == 1)
    record = project.root / "routines" / ".locks" / "action-group.json"
    wait_for(record.exists)
    wait_for_a_child_in_group(orjson.loads(record.read_bytes())["pgid"])
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def _edit(path: Path, line: int, old: bytes, new: bytes) -> None:
    """Change line ``line`` (1-based) of a ledger in place, as a hand edit would."""
    lines = _lines(path)
    lines[line - 1] = lines[line - 1].replace(old, new)
    path.write_bytes(b"\n".join(lines) + b"\n")


def test_every_appended_line_carries_the_hash_of_the_line_before(project: Project) -> None:
    """prev of line 1 is sha256(""), of line n the sha256 of line n-1's bytes."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [one]}\n")
    assert 0 == project.cli("run", "--due", "--now", NOW).returncode
    lines = _lines(project.ledger)
    expected = [hashlib.sha256(b"").hexdigest(),
                *(hashlib.sha256(line).hexdigest() for line in lines[:-1])]
    assert expected == [orjson.loads(line)["prev"] for line in lines]
    assert 0 == project.cli("fold", "--check").returncode


def test_a_hand_edited_view_is_not_believed(project: Project) -> None:
    """An interrupted routine set to success in routine-state.json by hand is still
    interrupted: run --due keeps the edit (imported verbatim, SPEC §10) but an import never
    closes an open attempt, so it delivers nothing else and appends nothing else; fold stays
    clean."""
    _interrupted(project)
    state = orjson.loads(project.state_path.read_bytes())
    entry = state["routines"]["rtn-crash"]
    entry.update(status="success", last_result="success", open_attempt=None)
    project.state_path.write_bytes(orjson.dumps(state, option=orjson.OPT_INDENT_2) + b"\n")
    before, calls = project.ledger.read_bytes(), len(project.calls())
    again = project.cli("run", "--due", "--now", LATER)
    assert 1 == again.returncode, again.stdout + again.stderr
    assert "rtn-crash: interrupted" in again.stderr
    after = project.ledger.read_bytes()
    assert after.startswith(before) and calls == len(project.calls())
    added = [orjson.loads(x) for x in after[len(before):].splitlines()]
    assert [("routine_state_imported", entry)] == [(e["type"], e["record"]) for e in added]
    assert "running" == project.state()["routines"]["rtn-crash"]["status"]
    assert 0 == project.cli("fold", "--check").returncode


def test_bytes_changed_mid_ledger_are_refused_before_anything_runs(project: Project) -> None:
    """Two bytes changed in the middle of the ledger (same length, still valid JSON): run
    --due refuses naming file and line, delivers nothing and appends nothing."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [one]}\n")
    assert 0 == project.cli("run", "--due", "--now", NOW).returncode
    assert b'"kind":"specdojo"' in _lines(project.ledger)[2]  # action_started of rtn-a
    _edit(project.ledger, 3, b'"index":1', b'"index":7')
    before, calls = project.ledger.read_bytes(), len(project.calls())
    again = project.cli("run", "--due", "--now", "2026-05-01T12:00:30Z")
    assert 1 == again.returncode
    assert f"{project.ledger}:3: line 3 does not hash to the prev that line 4" in again.stderr
    assert "restore the ledger from a backup" in again.stderr
    assert (before, calls) == (project.ledger.read_bytes(), len(project.calls()))
    check = project.cli("fold", "--check")
    assert 1 == check.returncode and ":3: line 3 does not hash" in check.stderr


def test_a_ledger_from_before_the_chain_still_reads_and_the_chain_starts_after_it(
    project: Project,
) -> None:
    """Lines without prev (older versions, upstream) stay valid; the next append chains on."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [one]}\n")
    assert 0 == project.cli("run", "--due", "--now", NOW).returncode
    old = [orjson.loads(line) for line in _lines(project.ledger)]
    for raw in old:
        del raw["prev"]
    project.ledger.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in old))
    project.state_path.unlink()
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T12:00:30Z").returncode
    lines = _lines(project.ledger)
    first_new = orjson.loads(lines[len(old)])
    assert hashlib.sha256(lines[len(old) - 1]).hexdigest() == first_new["prev"]
    assert 0 == project.cli("fold", "--check").returncode


# --- the protocol, in process --------------------------------------------------------------------


@pytest.fixture
def paths(project: Project) -> Any:
    return resolve_project(project.root)


def _resumed_at(paths: Any) -> int:
    """The seq the next incremental fold would continue after (0: from scratch)."""
    return proven.prove(paths.routine_ledger, paths.routine_state,
                        paths.routine_snapshot).resumed_at


def _registered(n: int) -> rev.RoutineRegistered:
    return rev.RoutineRegistered(routine_id="rtn-a", digest=f"{n}" * 64, path="routines/a.yaml")


def test_own_appends_continue_incrementally_and_anything_else_refolds(paths: Any) -> None:
    """After this process's own append the fold continues from the view; after a change by
    anyone else (here: a same-length edit of the last covered line) it starts from scratch."""
    log = ledger.Ledger(paths.routine_ledger)
    log.append_many([_registered(n) for n in range(3)])
    views.refresh_routine_view(paths)
    log.append(_registered(3))
    assert 3 == _resumed_at(paths)
    views.refresh_routine_view(paths)
    data = paths.routine_ledger.read_bytes()
    assert data.endswith(b'a.yaml"}\n')
    paths.routine_ledger.write_bytes(data[:-4] + b'X"}\n')  # same length, still valid JSON
    assert 0 == _resumed_at(paths)


def test_an_edited_view_is_refolded_even_in_canonical_form(paths: Any) -> None:
    """A view whose bytes are not the ones its snapshot records is not continued from."""
    ledger.Ledger(paths.routine_ledger).append_many([_registered(n) for n in range(2)])
    views.refresh_routine_view(paths)
    assert 2 == _resumed_at(paths)
    doc = orjson.loads(paths.routine_state.read_bytes())
    doc["routines"]["rtn-a"]["digest"] = "9" * 64
    paths.routine_state.write_bytes(views.render(doc))
    assert 0 == _resumed_at(paths)
    assert "1" * 64 == views.refresh_routine_view(paths).get("rtn-a")["digest"]


def test_another_file_under_the_same_name_is_refolded(paths: Any) -> None:
    """A ledger replaced by another file (another inode) is folded from scratch."""
    ledger.Ledger(paths.routine_ledger).append_many([_registered(n) for n in range(2)])
    views.refresh_routine_view(paths)
    copy = paths.routine_ledger.with_name("copy.jsonl")
    copy.write_bytes(paths.routine_ledger.read_bytes())
    os.replace(copy, paths.routine_ledger)
    assert 0 == _resumed_at(paths)


def test_a_broken_chain_is_found_wherever_it_is(tmp_path: Path) -> None:
    """A full fold names the first line whose hash is not its successor's prev."""
    path = tmp_path / "routine-runs.jsonl"
    ledger.Ledger(path).append_many([_registered(n) for n in range(6)])
    _edit(path, 4, b'"digest":"3', b'"digest":"8')
    with pytest.raises(CorruptLedgerError) as info:
        proven.from_scratch(path)
    assert 4 == info.value.line
    with pytest.raises(CorruptLedgerError):
        list(ledger.read(path))


def test_chunked_chain_check_agrees_across_chunk_boundaries(tmp_path: Path,
                                                            monkeypatch: Any) -> None:
    """With tiny read chunks, lines cut by chunk boundaries are still checked and folded."""
    monkeypatch.setattr(chain, "_READ_CHUNK", 7)
    path = tmp_path / "routine-runs.jsonl"
    ledger.Ledger(path).append_many([_registered(n) for n in range(5)])
    assert 5 == proven.from_scratch(path).state.seq
    _edit(path, 2, b'"digest":"1', b'"digest":"7')
    with pytest.raises(CorruptLedgerError) as info:
        proven.from_scratch(path)
    assert 2 == info.value.line


@pytest.mark.parametrize("chunk", [7, 1 << 16], ids=["tiny-chunks", "64-kib-chunks"])
def test_the_chunked_reader_stops_at_end_and_refuses_a_line_cut_short(
        tmp_path: Path, monkeypatch: Any, chunk: int) -> None:
    """The reader hands out the lines before ``end`` and no more: a line appended after it is
    not folded (the head returned is the one at ``end``); an ``end`` inside a line, or a
    ledger that ends before ``end``, is refused naming the line cut short, after the lines
    before it were handed out."""
    monkeypatch.setattr(chain, "_READ_CHUNK", chunk)
    path = tmp_path / "routine-runs.jsonl"
    ledger.Ledger(path).append_many([_registered(n) for n in range(5)])
    data = path.read_bytes()
    ends = [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]
    seqs: list[int] = []

    def read(end: int) -> str:
        seqs.clear()
        with open(path, "rb", buffering=chain.READ_BUFFER) as f:
            chunks = chain.verified_chunks(f, path, 0, end, line=1, head=chain.EMPTY_HEAD,
                                           started=False)
            while True:
                try:
                    seqs.extend(raw["seq"] for raw in next(chunks))
                except StopIteration as done:
                    return str(done.value)

    assert chain.line_hash(data[ends[1]:ends[2] - 1]) == read(ends[2])
    assert [1, 2, 3] == seqs
    for end, cut in ((ends[2] + 5, None), (ends[4], ends[3] + 5), (ends[4], ends[3])):
        if cut is not None:
            path.write_bytes(data[:cut])
        with pytest.raises(CorruptLedgerError, match="line is cut short") as info:
            read(end)
        expected = ([1, 2, 3], 4) if cut is None else ([1, 2, 3, 4], 5)
        assert expected == (seqs, info.value.line)


# --- never rob the living (SPEC §6.2, §6.5) -------------------------------------------------------


def test_a_deleted_lock_file_does_not_rob_a_live_run(project: Project) -> None:
    """Delete the flock file under a live run: a second run exits 75 without calling the live
    attempt interrupted or recording anything, resolve is refused, and the live run finishes
    cleanly (one delivery, fold --check clean). The live call waits for a gate file the test
    creates after its checks, so a slow machine cannot end it first."""
    gate = project.root / "gate"
    project.routine("rtn-slow", f"""\
        trigger: {{cron: "0 * * * *", timezone: UTC}}
        action: {{kind: specdojo, args: [gate-{gate}]}}
        """)
    first = project.popen("run", "--due", "--now", NOW)
    wait_for(lambda: len(project.calls()) == 1)
    (project.root / "routines" / ".locks" / "routine-run.flock").unlink()
    before = project.ledger.read_bytes()
    second = project.cli("run", "--due", "--now", LATER)
    assert 75 == second.returncode, second.stdout + second.stderr
    # the live run's announced routine-run.lock/ directory (SPEC §6.2) or its live attempt
    # owner refuses the second run; either way nobody calls the live attempt interrupted
    assert ("is owned by live pid" in second.stderr
            or "routine-run.lock, holder pid" in second.stderr), second.stderr
    assert "interrupted" not in second.stderr
    resolve = project.cli("resolve", "rtn-slow", "--result", "failure", "--note", "x")
    assert 75 == resolve.returncode, resolve.stderr
    listing = orjson.loads(project.cli("list", "--json", "--now", LATER).stdout)
    assert [False] == [row["interrupted"] for row in listing["routines"]]
    assert before == project.ledger.read_bytes()
    assert first.poll() is None  # the checks above all ran while the first run was live
    gate.touch()
    assert 0 == first.wait(timeout=60)
    assert 1 == len(project.calls())
    assert ["success"] == [e["result"] for e in project.events() if e["type"] == "attempt_ended"]
    assert 0 == project.cli("fold", "--check").returncode


def _killed_mid_action(project: Project, policy: str = "") -> int:
    """rtn-long is interrupted while its action's `sleep 20` runs; returns that action's
    process group, as the runner recorded it."""
    _interrupted(project, "rtn-long", 20, policy)
    record = project.root / "routines" / ".locks" / "action-group.json"
    pgid: int = orjson.loads(record.read_bytes())["pgid"]
    assert execute_runner.group_alive(pgid)
    return pgid


def _end_group(pgid: int) -> None:
    os.killpg(pgid, signal.SIGKILL)
    wait_for(lambda: not execute_runner.group_alive(pgid))


def test_resolve_waits_for_an_action_that_outlived_its_runner(project: Project) -> None:
    """SPEC §6.5: closing the attempt while its action's group still works would let a later
    run do that work a second time: resolve exits 75 and records nothing until it has ended."""
    pgid = _killed_mid_action(project)
    before = project.ledger.read_bytes()
    refused = project.cli("resolve", "rtn-long", "--result", "failure", "--note", "checked")
    assert 75 == refused.returncode, refused.stdout + refused.stderr
    assert f"process group {pgid} outlived its runner" in refused.stderr
    assert before == project.ledger.read_bytes()
    _end_group(pgid)
    done = project.cli("resolve", "rtn-long", "--result", "failure", "--note", "checked")
    assert 0 == done.returncode, done.stderr
    assert 0 == project.cli("fold", "--check").returncode


def _killed_mid_job(project: Project, policy: str = "") -> tuple[Path, int]:
    """rtn-job's runner is SIGKILLed while its Job action's command (`sleep 20`, the first
    time only: a resumed run of it ends at once) runs; the run's ``process.json`` and that
    command's process group, still alive."""
    from tests.conftest import period_job

    project.job("job-slow", period_job("slow", "'[ -e slept ] || { touch slept; sleep 20; }'"))
    project.routine("rtn-job", f"""\
        trigger: {{cron: "0 * * * *", timezone: UTC}}
        action: {{kind: job, job: job-slow, inputs: {{period: "{{{{scheduled_at}}}}"}}}}
        {policy}""")
    proc = project.popen("run", "--due", "--now", NOW)
    evidence = project.root / "execution" / "exec" / "evidence"
    wait_for(lambda: any(evidence.glob("*/attempt-1/process.json")))
    [record] = evidence.glob("*/attempt-1/process.json")
    pgid: int = orjson.loads(record.read_bytes())["pgid"]
    wait_for_a_child_in_group(pgid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert execute_runner.group_alive(pgid)
    return record, pgid


def test_resolve_waits_for_a_job_runs_command_that_outlived_its_runner(project: Project) -> None:
    """SPEC §6.5, §7.3: the same for a Job action. Its command's group is recorded with the
    Job Run (``process.json``), not as the routine's action: resolve said `resolved` while
    it still ran, and the run was left interrupted. Now it exits 75 and records nothing in
    either ledger until the command has ended; then one decision resolves both."""
    record, pgid = _killed_mid_job(project)
    runs = project.root / "execution" / "jobs" / "runs"
    before = project.ledger.read_bytes(), [p.read_bytes() for p in sorted(runs.glob("*.jsonl"))]
    refused = project.cli("resolve", "rtn-job", "--result", "failure", "--note", "checked")
    assert 75 == refused.returncode, refused.stdout + refused.stderr
    assert f"Job Run {record.parent.parent.name} is still running (process group {pgid}" \
        in refused.stderr
    assert before == (project.ledger.read_bytes(),
                      [p.read_bytes() for p in sorted(runs.glob("*.jsonl"))])
    _end_group(pgid)
    done = project.cli("resolve", "rtn-job", "--result", "failure", "--note", "checked")
    assert 0 == done.returncode, done.stderr
    shown = orjson.loads(project.cli("job", "show", record.parent.parent.name, "--json").stdout)
    assert "failed" == shown["state"], shown
    assert 0 == project.cli("fold", "--check").returncode


def test_resume_is_a_busy_skip_while_a_job_runs_command_lives(project: Project) -> None:
    """on_interrupted: resume with a Job action: while the command of the Job Run the
    interrupted attempt started still runs (its group is recorded with the run), the next
    `run --due` closes nothing and starts nothing: it said it closed the attempt and started
    a second one beside the first one's command."""
    _, pgid = _killed_mid_job(project, "policy: {on_interrupted: resume}\n")
    events = len(project.events())
    skipped = project.cli("run", "--due", "--now", LATER, "--json")
    assert 0 == skipped.returncode, skipped.stderr
    assert ["rtn-job"] == orjson.loads(skipped.stdout)["still_running"]
    assert events == len(project.events())
    _end_group(pgid)
    closed = project.cli("run", "--due", "--now", LATER, "--json")
    assert ["rtn-job"] == orjson.loads(closed.stdout)["closed_interrupted"], closed.stderr


def test_resume_is_a_busy_skip_while_the_action_lives(project: Project) -> None:
    """on_interrupted: resume closes an interrupted attempt and runs again - not while the
    interrupted action's process group lives: one execution at a time, even after a crash."""
    pgid = _killed_mid_action(project, "policy: {on_interrupted: resume}\n")
    events = len(project.events())
    skipped = project.cli("run", "--due", "--now", LATER, "--json")
    assert 0 == skipped.returncode, skipped.stderr
    assert ["rtn-long"] == orjson.loads(skipped.stdout)["still_running"]
    assert "action is still running" in skipped.stderr
    assert (1, events) == (len(project.calls()), len(project.events()))
    _end_group(pgid)
    path = project.root / "routines" / "rtn-long.yaml"
    path.write_text(path.read_text().replace("sleep-20", "again"))
    resumed = project.cli("run", "--due", "--now", LATER)
    assert "closed its interrupted attempt" in resumed.stderr
    assert 2 == len(project.calls())
    assert 0 == project.cli("fold", "--check").returncode


def test_a_reused_pid_is_not_the_owner() -> None:
    """A live pid whose start time differs from the recorded one is another process."""
    me = os.getpid()
    start = locks.process_start(me)
    assert start is not None
    assert locks.owner_alive(me, locks.this_host(), start) is True
    assert locks.owner_alive(me, locks.this_host(), start + 1) is False
    assert locks.owner_alive(me, "some-other-host", start) is None
    assert locks.owner_alive(0, locks.this_host()) is False


def test_an_exec_lock_of_a_live_owner_is_never_stale(tmp_path: Path) -> None:
    """A heartbeat older than the timeout does not make a live local owner's lock stale; a
    dead or reused pid does at once; another host's lock only by the timeout."""
    lock_dir = tmp_path / execlock.EXEC_LOCK_NAME
    lock_dir.mkdir()
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        start = locks.process_start(sleeper.pid)
        owner = {"actor": "x", "pid": sleeper.pid, "token": "t", "acquired_at_utc": "",
                 "host": locks.this_host(), "start": start}
        (lock_dir / "owner.json").write_bytes(orjson.dumps(owner))
        os.utime(lock_dir, (time.time() - 3600, time.time() - 3600))
        assert not execlock._exec_lock_stale(lock_dir, 30.0)
        (lock_dir / "owner.json").write_bytes(orjson.dumps(owner | {"start": (start or 0) + 1}))
        assert execlock._exec_lock_stale(lock_dir, 30.0)
        (lock_dir / "owner.json").write_bytes(orjson.dumps(owner | {"host": "elsewhere"}))
        assert execlock._exec_lock_stale(lock_dir, 30.0)
        os.utime(lock_dir)
        assert not execlock._exec_lock_stale(lock_dir, 30.0)
    finally:
        sleeper.kill()
        sleeper.wait()


def _strip_prev_from(path: Path, first: int) -> None:
    """Delete ``prev`` from line ``first`` (1-based) to the end, as a forger would who cannot
    compute hashes: the rewritten lines no longer claim any chain."""
    lines = _lines(path)
    for n in range(first - 1, len(lines)):
        raw = orjson.loads(lines[n])
        del raw["prev"]
        lines[n] = orjson.dumps(raw)
    path.write_bytes(b"\n".join(lines) + b"\n")


def test_a_line_without_prev_after_the_chain_started_is_damage(project: Project) -> None:
    """A middle line of a real run edited, and ``prev`` deleted from it to the end (SPEC §5:
    damage, not a line from before the chain): run --due and fold --check refuse with one
    line naming file and line, deliver nothing and append nothing."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [one]}\n")
    assert 0 == project.cli("run", "--due", "--now", NOW).returncode
    assert b'"kind":"specdojo"' in _lines(project.ledger)[2]  # action_started of rtn-a
    _edit(project.ledger, 3, b'"index":1', b'"index":7')
    _strip_prev_from(project.ledger, 3)
    before, calls = project.ledger.read_bytes(), len(project.calls())
    again = project.cli("run", "--due", "--now", "2026-05-01T12:00:30Z")
    assert 1 == again.returncode, again.stdout + again.stderr
    assert 1 == len(again.stderr.splitlines()), again.stderr
    assert again.stderr.startswith(f"error: {project.ledger}:3: line has no prev although the "
                                   "hash chain started before it"), again.stderr
    assert (before, calls) == (project.ledger.read_bytes(), len(project.calls()))
    check = project.cli("fold", "--check")
    assert 1 == check.returncode
    assert 1 == len(check.stderr.splitlines()) and ":3: line has no prev" in check.stderr


def test_an_unchained_line_is_refused_by_every_reader(tmp_path: Path) -> None:
    """The full fold, the line reader, an incremental fold that resumes after the chain
    started, and the backwards reader all refuse our line without prev after a chained one;
    upstream lines (no type, no seq: SPEC §10) in between stay valid."""
    from specdojo_routine.store.ledger import backwards

    path = tmp_path / "routine-runs.jsonl"
    ledger.Ledger(path).append_many([_registered(n) for n in range(4)])
    upstream = orjson.dumps({"version": 1, "routine_id": "rtn-a", "scheduled_for": None,
                             "started_at": "2026-05-01T10:00:00Z",
                             "completed_at": "2026-05-01T10:00:01Z", "result": "success",
                             "job_run_ids": []})
    path.write_bytes(path.read_bytes() + upstream + b"\n")
    assert 5 == proven.from_scratch(path).state.seq  # upstream lines carry no prev
    ledger.Ledger(path).append(_registered(5))
    assert 6 == proven.from_scratch(path).state.seq  # and the chain continues after them
    _strip_prev_from(path, 6)
    for fold in (lambda: proven.from_scratch(path), lambda: list(ledger.read(path)),
                 lambda: list(ledger.read(path, *_start_of_line(path, 6))),
                 lambda: list(backwards.read_backwards(path))):
        with pytest.raises(CorruptLedgerError, match="no prev although") as info:
            fold()
        assert 6 == info.value.line


def _start_of_line(path: Path, line: int) -> tuple[int, int]:
    """(byte offset, line number) where line ``line`` starts."""
    return sum(len(text) + 1 for text in _lines(path)[: line - 1]), line
