"""The operator's answers (SPEC §14) while real runners live and die: a runner SIGKILLed
mid-attempt, another run holding the routine lock meanwhile."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable

import orjson

from tests.conftest import Project, wait_for


def _wait_for(predicate: Callable[[], bool], proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while not predicate():
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr
        time.sleep(0.02)


def _gated(project: Project, rid: str, gate: str) -> None:
    """A routine whose one delegated call waits until the file ``gate`` exists."""
    project.routine(rid, f"interval: 1h\naction: {{kind: specdojo, args: "
                         f"[gate-{project.root / gate}]}}\n")


def _kill_runner_of(project: Project, rid: str, calls: int) -> None:
    """Start ``run --id rid``, wait for its delegated call (the ``calls``-th of the project),
    then SIGKILL the runner: its attempt stays open with a dead owner."""
    dead = project.popen("run", "--id", rid)
    _wait_for(lambda: len(project.calls()) == calls, dead)
    dead.send_signal(signal.SIGKILL)
    dead.wait(timeout=30)


def test_an_interrupted_attempt_stays_interrupted_while_another_run_holds_the_lock(
    project: Project,
) -> None:
    """A routine whose runner was SIGKILLed is interrupted (unhealthy, exit 1) also while
    another routine's run holds the lock: that run is not the dead attempt's runner."""
    _gated(project, "rtn-dead", "never")
    _gated(project, "rtn-long", "go")
    try:
        _kill_runner_of(project, "rtn-dead", calls=1)
        long = project.popen("run", "--id", "rtn-long")
        _wait_for(lambda: len(project.calls()) == 2, long)
        listed = project.cli("list", "--json")
        status = project.cli("status", "--json")
        text = project.cli("status")
    finally:
        (project.root / "never").touch()
        (project.root / "go").touch()
    assert 0 == long.wait(timeout=60), long.stderr.read() if long.stderr else ""
    doc = orjson.loads(listed.stdout)
    assert (1, True, {"rtn-dead": (True, "running"), "rtn-long": (False, "running")}) == (
        listed.returncode, doc["lock"]["held"],
        {r["id"]: (r["interrupted"], r["status"]) for r in doc["routines"]})
    states = {r["id"]: (r["state"], r["healthy"]) for r in orjson.loads(status.stdout)[
        "routines"]}
    assert (1, {"rtn-dead": ("interrupted", False), "rtn-long": ("running", True)}) == (
        status.returncode, states)
    assert (1, "unhealthy: 1 of 2 routine(s): rtn-dead") == (
        text.returncode, text.stdout.splitlines()[-1])


def test_next_of_a_disabled_paused_or_held_routine_says_it_will_not_run(
    project: Project,
) -> None:
    """`next ID`: a disabled routine has no occurrence (as `list` and `status` say); a paused
    or held one lists its occurrences under one line saying they are recorded, not run, and
    what lets them run again."""
    project.routine("rtn-off", "interval: 1h\nenabled: false\n"
                               "action: {kind: specdojo, args: [ok]}\n")
    project.routine("rtn-paused", "interval: 1h\naction: {kind: specdojo, args: [ok]}\n")
    project.routine("rtn-held", "interval: 1h\npolicy: {on_failure: hold}\n"
                                "action: {kind: specdojo, args: [boom]}\n")
    project.exit_codes({"boom": 3})
    assert 1 == project.cli("run", "--id", "rtn-held").returncode
    assert 0 == project.cli("pause", "rtn-paused", "--note", "disk swap", "--by", "dave"
                            ).returncode
    off = project.cli("next", "rtn-off")
    assert (0, "note: rtn-off is disabled: nothing runs until it is enabled\n") == (
        off.returncode, off.stdout)
    assert [] == orjson.loads(project.cli("next", "rtn-off", "--json").stdout)["occurrences"]
    paused = project.cli("next", "rtn-paused", "-n", "1").stdout.splitlines()
    assert ("note: rtn-paused is paused (by dave: disk swap): these occurrences are recorded "
            "as paused, not run, until `resume rtn-paused`", 3) == (paused[0], len(paused))
    held = project.cli("next", "rtn-held", "-n", "1").stdout.splitlines()
    assert (True, True, 3) == (held[0].startswith("note: rtn-held is on hold (held after "
                                                  "failure of att-"),
                               held[0].endswith("recorded as held, not run, until "
                                                "`release rtn-held`"), len(held))
    standing = {rid: orjson.loads(project.cli("next", rid, "--json").stdout)["standing"]
                for rid in ("rtn-off", "rtn-paused", "rtn-held")}
    assert {"rtn-off": None, "rtn-paused": "paused", "rtn-held": "held"} == standing


def test_status_of_an_interrupted_routine_calls_its_open_attempt_interrupted(
    project: Project,
) -> None:
    """`status ID` after the runner was SIGKILLed: the state, the last line and the attempt's
    row all say interrupted, not running (nothing runs it any more)."""
    _gated(project, "rtn-dead", "never")
    try:
        _kill_runner_of(project, "rtn-dead", calls=1)
        done = project.cli("status", "rtn-dead")
    finally:
        (project.root / "never").touch()
    lines = done.stdout.splitlines()
    assert (1, "  state     interrupted - unhealthy: interrupted", True, True, []) == (
        done.returncode, next(x for x in lines if x.startswith("  state")),
        next(x for x in lines if x.startswith("  last")).startswith(
            "  last      interrupted "),
        lines[-1].rstrip().endswith("interrupted"),
        [x for x in lines if "running" in x])


def test_logs_of_an_interrupted_attempt_calls_it_interrupted(project: Project) -> None:
    """`logs ID` after the runner was SIGKILLed heads the attempt's output with interrupted,
    as `list` and `status` call it, not running: nothing runs it any more and it waits for
    `resolve`. While its runner lives it is running."""
    _gated(project, "rtn-dead", "never")
    try:
        live = project.popen("run", "--id", "rtn-dead")
        _wait_for(lambda: len(project.calls()) == 1, live)
        running = project.cli("logs", "rtn-dead")
        live.send_signal(signal.SIGKILL)
        live.wait(timeout=30)
        done = project.cli("logs", "rtn-dead")
    finally:
        (project.root / "never").touch()
    assert (0, True) == (running.returncode, running.stdout.splitlines()[0].endswith(", running)"))
    assert (0, True) == (done.returncode, done.stdout.splitlines()[0].endswith(", interrupted)")), (
        done.stdout)


def test_history_attempts_calls_an_attempt_whose_runner_died_interrupted(
    project: Project,
) -> None:
    """`history --attempts` after the runner was SIGKILLed says interrupted, as `list`,
    `status ID` and `logs ID` do, in text and in JSON (where the result stays null: nothing
    recorded one), and `--result interrupted` finds it; while its runner lives it is running."""
    _gated(project, "rtn-dead", "never")
    try:
        live = project.popen("run", "--id", "rtn-dead")
        _wait_for(lambda: len(project.calls()) == 1, live)
        running = project.cli("history", "rtn-dead", "--attempts", "--json")
        live.send_signal(signal.SIGKILL)
        live.wait(timeout=30)
        text = project.cli("history", "rtn-dead", "--attempts")
        doc = project.cli("history", "rtn-dead", "--attempts", "--json")
        found = project.cli("history", "--attempts", "--result", "interrupted")
        gone = project.cli("history", "--attempts", "--result", "running")
    finally:
        (project.root / "never").touch()
    before = orjson.loads(running.stdout)
    assert (None, False) == (before["result"], before["interrupted"])
    header, row = text.stdout.splitlines()
    assert (0, "interrupted") == (text.returncode, row[header.index("RESULT"):].split()[0])
    after = orjson.loads(doc.stdout)
    assert (None, True) == (after["result"], after["interrupted"])
    assert (1, "no attempts") == (len(found.stdout.splitlines()) - 1,
                                  gone.stdout.strip()), (found.stdout, gone.stdout)


def test_logs_of_an_interrupted_attempt_calls_its_open_action_interrupted(
    project: Project,
) -> None:
    """`logs ID` after the runner was SIGKILLed: the action it was running is interrupted, as
    the heading says, not running, in text and in `--json`'s titles; it kept no output because
    its runner died before recording any."""
    _gated(project, "rtn-dead", "never")
    try:
        _kill_runner_of(project, "rtn-dead", calls=1)
        text = project.cli("logs", "rtn-dead")
        doc = orjson.loads(project.cli("logs", "rtn-dead", "--json").stdout)
    finally:
        (project.root / "never").touch()
    assert ["rtn-dead attempt", "== action 1 (specdojo): interrupted",
            "   (no output: its runner died before it recorded any; see `status rtn-dead`)"] == [
        text.stdout.splitlines()[0][:16], *text.stdout.splitlines()[1:]]
    assert ("action 1 (specdojo): interrupted", None) == (
        doc["outputs"][0]["title"], doc["result"])


def _evidence_result(project: Project, rid: str) -> str:
    """The result cell of ``rid``'s row in the report's "Job Runs and evidence" table."""
    target = project.root / "report.html"
    assert 0 == project.cli("report", "--html", str(target)).returncode
    table = target.read_text().split("<table class=\"evidence\">")[1]
    row = next(r for r in table.split("<tr>") if f"<td class=\"id\">{rid}</td>" in r)
    return row.split("<td>")[2].split("</td>")[0]


def test_logs_and_report_of_a_job_action_whose_runner_died_agree_with_the_ledger(
    project: Project,
) -> None:
    """A runner SIGKILLed during a Job action: its action is interrupted in `logs` and in the
    report's evidence table (as the grid says), never running; once `resolve` records the
    attempt's outcome, both give that outcome, as `history --attempts` does."""
    started, gate = project.root / "started", project.root / "gate"
    project.job("job-gate", f"""\
        name: Gate
        task:
          mode: command
          command: touch {started}; while [ ! -e {gate} ]; do sleep 0.05; done
          timeout: 60s
        run:
          idempotency_key: "{{{{job_id}}}}:{{{{scheduled_at}}}}"
        """)
    project.routine("rtn-j", "interval: 1h\naction: {kind: job, job: job-gate}\n")
    try:
        dead = project.popen("run", "--id", "rtn-j")
        _wait_for(started.exists, dead)
        dead.send_signal(signal.SIGKILL)
        dead.wait(timeout=30)
        before = project.cli("logs", "rtn-j")
        before_row = _evidence_result(project, "rtn-j")
    finally:
        gate.touch()
    assert ": interrupted" in before.stdout.splitlines()[1], before.stdout
    assert "interrupted" == before_row
    codes: list[int] = []  # resolve waits (75) until the freed command has ended

    def resolved() -> bool:
        codes.append(project.cli("resolve", "rtn-j", "--result", "failure",
                                 "--note", "x").returncode)
        return codes[-1] != 75

    wait_for(resolved)
    assert 0 == codes[-1], codes
    text = project.cli("logs", "rtn-j")
    doc = orjson.loads(project.cli("logs", "rtn-j", "--json").stdout)
    title = text.stdout.splitlines()[1]
    assert title.startswith("== action 1 (job) JBR-") and title.endswith(": failure"), title
    assert "still running" not in text.stdout
    assert (title[3:], "failure") == (doc["outputs"][0]["title"], doc["result"])
    assert "still running" not in str(doc["outputs"][0]["missing"])
    assert "failure" == _evidence_result(project, "rtn-j")
