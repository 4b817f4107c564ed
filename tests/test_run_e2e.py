"""`run --due` / `run --id` end to end, in real subprocesses with a fake SpecDojo CLI (SPEC §6)."""

from __future__ import annotations

import itertools
from pathlib import Path

import orjson
import pytest

from tests.conftest import FAKE_CLI, Project

ALL_KINDS = """\
interval: 1h
action:
  - kind: specdojo
    args: [index, rebuild]
  - kind: register
    filter: {types: [todo, issue], priorities: [high], statuses: [open, waiting]}
    limit: 5
  - kind: register
  - kind: exec-auto
    strategy: fifo
    parallel: 2
    loop: true
    max_rounds: 3
  - kind: exec-auto
  - kind: exec-resume
    parallel: 4
  - kind: exec-cycle
    strategy: critical-first
    parallel: 1
"""


def test_every_kind_delegates_the_exact_argv(project: Project) -> None:
    """Each action kind becomes exactly the SpecDojo CLI call of SPEC §3."""
    project.routine("rtn-all", ALL_KINDS)
    proc = project.cli("run", "--due")
    assert 0 == proc.returncode, proc.stderr
    assert [
        "index rebuild --project demo",
        "exec run --register-filter --project demo --on-failure continue --if-busy skip "
        "--register-types todo,issue --register-priorities high "
        "--register-statuses open,waiting --register-limit 5",
        "exec run --register-filter --project demo --on-failure continue --if-busy skip",
        "exec run --auto --project demo --if-busy skip --strategy fifo --parallel 2 --loop "
        "--max-rounds 3",
        "exec run --auto --project demo --if-busy skip",
        "exec resume --due --project demo --if-busy skip --parallel 4",
        "exec cycle --project demo --if-busy skip --strategy critical-first --parallel 1",
    ] == project.calls()


def test_a_failure_in_the_middle_does_not_stop_the_list(project: Project) -> None:
    """Every action runs after a failure; the attempt is a failure with per-action results."""
    project.routine("rtn-list", """\
        interval: 1h
        action:
          - {kind: specdojo, args: [first]}
          - {kind: specdojo, args: [second]}
          - {kind: specdojo, args: [third]}
        """)
    project.exit_codes({"second": 3})
    proc = project.cli("run", "--due", "--json")
    assert 1 == proc.returncode
    assert ["first --project demo", "second --project demo", "third --project demo"] == \
        project.calls()
    result = orjson.loads(proc.stdout)["results"][0]
    assert [{"index": 1, "kind": "specdojo", "result": "success"},
            {"index": 2, "kind": "specdojo", "result": "failure"},
            {"index": 3, "kind": "specdojo", "result": "success"}] == result["action_results"]
    assert "failure" == result["result"]
    ended = [e for e in project.events() if e["type"] == "action_ended"]
    assert "command exited with code 3" == ended[1]["reason"]


CODES = {"success": 0, "skipped": 75, "failure": 2}


@pytest.mark.parametrize("outcomes", list(itertools.product(CODES, repeat=2)))
def test_aggregation_is_failure_then_skipped_then_success(
    project: Project, outcomes: tuple[str, str]
) -> None:
    """failure if any failed, else skipped if any skipped, else success (seed 000 §1.2)."""
    project.routine("rtn-agg", """\
        interval: 1h
        action:
          - {kind: specdojo, args: [one]}
          - {kind: specdojo, args: [two]}
        """)
    project.exit_codes({"one": CODES[outcomes[0]], "two": CODES[outcomes[1]]})
    proc = project.cli("run", "--due", "--json")
    expected = ("failure" if "failure" in outcomes else
                "skipped" if "skipped" in outcomes else "success")
    assert expected == orjson.loads(proc.stdout)["results"][0]["result"]
    assert (1 if expected == "failure" else 0) == proc.returncode
    assert expected == project.state()["routines"]["rtn-agg"]["last_result"]


def test_exit_75_is_skipped_with_the_reason(project: Project) -> None:
    """A delegated call exiting 75 (project busy, E-03) makes the action skipped."""
    project.routine("rtn-busy", "interval: 1h\naction: {kind: exec-cycle}\n")
    project.exit_codes({"cycle": 75})
    proc = project.cli("run", "--due")
    assert 0 == proc.returncode, proc.stderr
    state = project.state()["routines"]["rtn-busy"]
    assert ("skipped", "skipped") == (state["status"], state["last_result"])
    assert "last_action_results" not in state  # a single action records no list (absent)


def test_missing_executable_is_a_failure_with_reason(project: Project) -> None:
    """A SpecDojo CLI that does not exist fails the action and records why."""
    project.routine("rtn-missing", "interval: 1h\naction: {kind: exec-resume}\n")
    proc = project.cli("run", "--due", env=project.env(SPECDOJO_CLI="/nonexistent/specdojo"))
    assert 1 == proc.returncode
    ended = next(e for e in project.events() if e["type"] == "action_ended")
    assert "failure" == ended["result"]
    assert "/nonexistent/specdojo" in ended["reason"]
    assert "Traceback" not in proc.stderr


GHP = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"


@pytest.mark.parametrize(("cli", "extra", "secret"), [
    (f"/nonexistent/{GHP}/specdojo", {}, GHP),
    ("/nonexistent/s3cr3t-VALUE-42/specdojo", {"DEPLOY_TOKEN": "s3cr3t-VALUE-42"},
     "s3cr3t-VALUE-42"),
], ids=["token-in-path", "value-of-a-TOKEN-variable"])
def test_a_failure_reason_is_redacted_everywhere_it_is_shown(
    project: Project, cli: str, extra: dict[str, str], secret: str,
) -> None:
    """SPEC §7.5: no secret reaches a ledger, view or console. A failure reason comes from
    outside (here an executable path holding a token, or the value of a *TOKEN variable):
    it is redacted where it is recorded, so the ledger, the views, the run's own lines and
    what `list` and `history` show later name the failure without the secret."""
    project.routine("rtn-missing", "interval: 1h\naction: [{kind: exec-resume}]\n")
    env = project.env(SPECDOJO_CLI=cli, **extra)
    proc = project.cli("run", "--id", "rtn-missing", env=env)
    assert 1 == proc.returncode, proc.stderr
    assert "failure - action 1 (exec-resume): executable not found: /nonexistent/" in proc.stdout
    shown = [proc, project.cli("list", env=env), project.cli("history", "rtn-missing", env=env),
             project.cli("list", "--json", env=env)]
    assert [] == [p.args[3] for p in shown if secret in p.stdout + p.stderr]
    generated = sorted((project.root / "routines" / "generated").iterdir())
    assert [] == [p.name for p in generated if secret.encode() in p.read_bytes()]
    ended = [e for e in project.events() if e["type"] in ("action_ended", "attempt_ended")]
    assert 2 == len(ended) and all("[REDACTED]" in e["reason"] for e in ended)


def test_a_cli_that_cannot_be_started_says_what_to_do(project: Project, tmp_path: Path) -> None:
    """Every failure says why and what to do where people look: a delegated call whose
    SpecDojo CLI is missing or not executable names the CLI and the two ways to provide it,
    in the run's lines, in `status` and in the recorded reason."""
    project.routine("rtn-cli", "interval: 1h\naction: [{kind: specdojo, args: [index]}]\n")
    plain = tmp_path / "not-executable"
    plain.write_text("#!/bin/sh\n")
    for cli, error in ((str(tmp_path / "missing"), "executable not found"),
                       (str(plain), "permission denied")):
        env = project.env(SPECDOJO_CLI=cli)
        proc = project.cli("run", "--id", "rtn-cli", env=env)
        assert 1 == proc.returncode, proc.stderr
        hint = f"{error}: {cli} (the SpecDojo CLI: put specdojo on PATH or set SPECDOJO_CLI)"
        assert hint in proc.stdout
        assert hint in project.cli("status", "rtn-cli", env=env).stdout
        assert hint == [e for e in project.events() if e["type"] == "action_ended"][-1]["reason"]


def test_an_explicit_run_in_the_past_does_not_move_the_cursor_back(project: Project) -> None:
    """SPEC §4: the cron cursor never moves back. `run --id` with a `--now` before the cursor
    (a clock that went back) runs and records last_run, but the next `run --due` selects
    nothing already run: every occurrence runs once."""
    project.routine("rtn-hourly", 'trigger: {cron: "0 * * * *", timezone: UTC}\n'
                                  "action: {kind: exec-resume}\n")
    steps = [("--due", "2026-08-07T10:30:00Z"), ("--due", "2026-08-07T12:30:00Z"),
             ("--id", "2026-08-07T09:00:00Z"), ("--due", "2026-08-07T12:40:00Z"),
             ("--due", "2026-08-07T13:05:00Z")]
    for how, now in steps:
        args = ["run", "--due"] if how == "--due" else ["run", "--id", "rtn-hourly"]
        proc = project.cli(*args, "--now", now)
        assert 0 == proc.returncode, proc.stderr
    due = [e["scheduled_for"] for e in project.events()
           if e["type"] == "attempt_started" and e["trigger"] == "due"]
    assert ["2026-08-07T10:00:00.000Z", "2026-08-07T12:00:00.000Z",
            "2026-08-07T13:00:00.000Z"] == due
    assert 4 == len(project.calls())  # three due runs and the explicit one
    state = project.state()["routines"]["rtn-hourly"]
    assert "2026-08-07T13:00:00.000Z" == state["last_scheduled_for"]


def test_attempt_is_recorded_before_delegation(project: Project) -> None:
    """attempt_started is on disk before the delegated command starts (T-02)."""
    project.routine("rtn-order", "interval: 1h\naction: {kind: specdojo, args: [peek]}\n")
    peek = project.root / "peek.sh"
    peek.write_text(f"#!/bin/sh\ncp {project.ledger} {project.root}/seen.jsonl\n")
    peek.chmod(0o755)
    proc = project.cli("run", "--due", env=project.env(SPECDOJO_CLI=str(peek)))
    assert 0 == proc.returncode, proc.stderr
    seen_lines = (project.root / "seen.jsonl").read_bytes().splitlines()
    seen = [orjson.loads(x)["type"] for x in seen_lines]
    assert ["routine_registered", "attempt_started", "action_started"] == seen
    assert "job_run_id" not in orjson.loads(seen_lines[-1])  # a delegated call runs no Job


def test_nothing_due_prints_and_exits_zero(project: Project) -> None:
    """With nothing due: `no due routines`, exit 0, and no attempt recorded."""
    project.routine("rtn-later", """\
        trigger: {cron: "0 17 * * 5", timezone: Asia/Tokyo}
        action: {kind: exec-resume}
        """)
    first = project.cli("run", "--due", "--now", "2026-08-07T08:02:00Z")
    assert 0 == first.returncode, first.stderr
    again = project.cli("run", "--due", "--now", "2026-08-07T08:30:00Z")
    assert (0, "no due routines\n") == (again.returncode, again.stdout)
    assert 1 == sum(e["type"] == "attempt_started" for e in project.events())


def test_dry_run_writes_nothing_and_shows_the_commands(project: Project) -> None:
    """--dry-run prints occurrences and exact commands and writes no file at all."""
    project.routine("rtn-weekly", """\
        trigger: {cron: "0 17 * * 5", timezone: Asia/Tokyo}
        action: {kind: exec-auto, strategy: fifo}
        """)
    before = project.files()
    proc = project.cli("run", "--due", "--dry-run", "--json", "--now", "2026-08-07T08:02:00Z")
    assert 0 == proc.returncode, proc.stderr
    assert before == project.files()
    doc = orjson.loads(proc.stdout)
    assert [] == doc["results"]
    assert {"routine_id": "rtn-weekly", "scheduled_for": "2026-08-07T08:00:00.000Z",
            "trigger": "due",
            "actions": [{"index": 1, "kind": "exec-auto", "command": [
                str(project.env()["SPECDOJO_CLI"]), "exec", "run", "--auto", "--project",
                "demo", "--if-busy", "skip", "--strategy", "fifo"]}]} == doc["selected"][0]
    assert [] == project.calls()


def test_explicit_id_runs_a_disabled_routine(project: Project) -> None:
    """run --id selects a routine even when disabled or not due, scheduled_for = now."""
    project.routine("rtn-off", "enabled: false\ninterval: 1d\naction: {kind: exec-resume}\n")
    assert "no due routines\n" == project.cli("run", "--due").stdout
    # SPEC §4 "disabled: state untouched": registered like every valid definition (T-01),
    # nothing else; its view entry has no last_run
    assert ["routine_registered"] == [e["type"] for e in project.events()]
    view = project.root / "routines" / "generated" / "routine-state.json"
    state = orjson.loads(view.read_bytes())["routines"]["rtn-off"]
    assert (None, "never") == (state.get("last_run"), state["status"])
    proc = project.cli("run", "--id", "rtn-off", "--now", "2026-03-01T10:00:00Z", "--json")
    assert 0 == proc.returncode, proc.stderr
    result = orjson.loads(proc.stdout)["results"][0]
    assert "2026-03-01T10:00:00.000Z" == result["scheduled_for"]
    started = next(e for e in project.events() if e["type"] == "attempt_started")
    assert ("id", "T-02") == (started["trigger"], started["transition"])


def test_unknown_routine_id_is_a_usage_error(project: Project) -> None:
    """run --id with an unknown id exits 2 with one line."""
    proc = project.cli("run", "--id", "rtn-nope")
    assert 2 == proc.returncode
    assert proc.stderr.startswith("error: ") and 1 == len(proc.stderr.splitlines())


def test_the_dry_run_refuses_what_the_run_refuses_first(project: Project) -> None:
    """With an unknown id and a damaged ledger, the dry run reports what the run reports:
    the unknown routine (exit 2), the definitions being read first."""
    project.routine("rtn-ok", "interval: 1h\naction: {kind: exec-resume}\n")
    assert 0 == project.cli("run", "--due").returncode
    with project.ledger.open("ab") as f:
        f.write(b'{"version":1,"seq":999}\n')
    dry, real = (project.cli("run", "--id", "rtn-nope", *extra) for extra in (["--dry-run"], []))
    assert (2, 'error: unknown routine "rtn-nope" (see `list`)\n') == (dry.returncode, dry.stderr)
    assert (dry.returncode, dry.stderr) == (real.returncode, real.stderr)


def test_an_invalid_routine_is_never_run_but_others_are(project: Project) -> None:
    """An invalid file is reported and not run; valid routines still run; exit 1."""
    project.routine("rtn-good", "interval: 1h\naction: {kind: exec-resume}\n")
    project.routine("rtn-bad", "interval: 0h\naction: {kind: exec-resume}\n")
    proc = project.cli("run", "--due")
    assert 1 == proc.returncode
    assert "rtn-bad.yaml" in proc.stderr
    assert {"rtn-good"} == {e["routine_id"] for e in project.events()}


def test_dry_run_with_an_invalid_routine_exits_1_and_still_shows_the_valid_ones(
    project: Project,
) -> None:
    """SPEC §8: a validation error is exit 1 also in `run --dry-run`, which still prints what
    the valid routines would do (and, being a dry run, writes nothing)."""
    project.routine("rtn-good", "interval: 1h\naction: {kind: specdojo, args: [work]}\n")
    project.routine("rtn-bad", "interval: 0h\naction: {kind: exec-resume}\n")
    before = project.files()
    proc = project.cli("run", "--due", "--dry-run", "--now", "2026-05-01T10:00:00Z")
    assert (1, before, []) == (proc.returncode, project.files(), project.calls())
    assert "rtn-bad.yaml" in proc.stderr and "Traceback" not in proc.stderr
    assert "rtn-good  2026-05-01T10:00:00.000Z  [due]" in proc.stdout
    assert f"{FAKE_CLI} work --project demo" in proc.stdout
    doc = orjson.loads(project.cli("run", "--due", "--dry-run", "--json").stdout)
    assert (["rtn-good"], [], 1) == ([s["routine_id"] for s in doc["selected"]],
                                     doc["results"], len(doc["errors"]))


def test_a_busy_routine_lock_exits_75_and_records_nothing(project: Project) -> None:
    """A live holder of the routine lock makes `run` exit 75 with the holder named."""
    project.routine("rtn-slow", "interval: 1h\naction: {kind: specdojo, args: [sleep-3]}\n")
    first = project.popen("run", "--due")
    try:
        import time
        deadline = time.monotonic() + 20
        while not project.log.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        before = project.ledger.read_bytes()
        second = project.cli("run", "--due")
        assert 75 == second.returncode
        assert "Another routine run is in progress (lock: " in second.stderr
        assert f"holder pid {first.pid} on " in second.stderr
        assert before == project.ledger.read_bytes()
    finally:
        first.wait(timeout=60)
    assert 0 == first.returncode


def test_run_json_explains_exit_1(project: Project) -> None:
    """run --json lists invalid-definition errors, so a machine sees why the exit is 1."""
    project.routine("rtn-bad", "interval: 0h\naction: {kind: exec-resume}\n")
    proc = project.cli("run", "--due", "--json")
    doc = orjson.loads(proc.stdout)
    assert 1 == proc.returncode
    assert ([], []) == (doc["selected"], doc["interrupted"])
    assert 1 == len(doc["errors"]) and "rtn-bad.yaml" in doc["errors"][0]


def test_too_many_missed_fails_only_that_routine(project: Project) -> None:
    """missed_run: all over 1000 occurrences: that routine fails with the spec's message and
    a hint; other routines still run (SPEC §4)."""
    project.routine("rtn-flood", """\
        trigger: {cron: "* * * * *", timezone: UTC}
        policy: {missed_run: all}
        action: {kind: exec-resume}
        """)
    project.routine("rtn-other", "interval: 1h\naction: {kind: exec-cycle}\n")
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T00:00:00Z").returncode
    proc = project.cli("run", "--due", "--now", "2026-05-02T00:00:00Z")
    assert 1 == proc.returncode
    assert "Too many missed cron occurrences for rtn-flood\n" in proc.stderr
    assert "missed_run: latest" in proc.stderr
    started = [e["routine_id"] for e in project.events() if e["type"] == "attempt_started"]
    assert ["rtn-flood", "rtn-other", "rtn-other"] == started


def test_too_many_missed_alone_does_not_say_no_due_routines(project: Project) -> None:
    """A run whose only due routine failed with too many missed occurrences says that nothing
    was run because of the error, not "no due routines"."""
    project.routine("rtn-flood", 'trigger: {cron: "* * * * *", timezone: UTC}\n'
                                 "policy: {missed_run: all}\naction: {kind: exec-resume}\n")
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T00:00:00Z").returncode
    proc = project.cli("run", "--due", "--now", "2026-05-02T00:00:00Z")
    assert (1, "nothing was run: see the error(s) above\n") == (proc.returncode, proc.stdout)
    assert proc.stderr.startswith("Too many missed cron occurrences for rtn-flood\n")


def test_list_json_shows_an_overdue_interval_routine_as_due_now(project: Project) -> None:
    """list --json: an interval routine past its interval is due, next occurrence = now."""
    project.routine("rtn-hourly", "interval: 1h\naction: {kind: exec-cycle}\n")
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T10:00:00Z").returncode
    doc = orjson.loads(project.cli("list", "--json", "--now", "2026-05-01T13:30:00Z").stdout)
    row = doc["routines"][0]
    assert ("2026-05-01T13:30:00Z", True, "success") == (
        row["next_occurrence"], row["due"], row["status"])
    assert {"held": False, "pid": None, "host": None, "acquired_at": None,
            "suspicious": False} == doc["lock"]
    later = orjson.loads(project.cli("list", "--json", "--now", "2026-05-01T10:20:00Z").stdout)
    assert ("2026-05-01T11:00:00Z", False) == (later["routines"][0]["next_occurrence"],
                                                later["routines"][0]["due"])


def test_every_valid_definition_is_registered_once_and_on_change(project: Project) -> None:
    """T-01: a run records routine_registered for each valid routine it sees (due or not),
    and again only when the definition's digest changes."""
    project.routine("rtn-due", "interval: 1h\naction: {kind: exec-cycle}\n")
    project.routine("rtn-later", """\
        trigger: {cron: "0 17 * * 5", timezone: Asia/Tokyo}
        policy: {missed_run: skip}
        action: {kind: exec-resume}
        """)
    project.cli("run", "--due", "--now", "2026-05-01T10:00:00Z")
    project.cli("run", "--due", "--now", "2026-05-01T10:10:00Z")
    registered = [e["routine_id"] for e in project.events() if e["type"] == "routine_registered"]
    assert ["rtn-due", "rtn-later"] == registered
    assert "never" == project.state()["routines"]["rtn-later"]["status"]
    path = project.root / "routines" / "rtn-later.yaml"
    path.write_text(path.read_text().replace("0 17", "0 18"))
    project.cli("run", "--due", "--now", "2026-05-01T10:20:00Z")
    registered = [e["routine_id"] for e in project.events() if e["type"] == "routine_registered"]
    assert ["rtn-due", "rtn-later", "rtn-later"] == registered


def test_list_exits_1_on_an_invalid_definition_or_an_interrupted_routine(
    project: Project,
) -> None:
    """list is a health check: exit 0 when all is well, 1 for a validation error (SPEC §8)."""
    project.routine("rtn-ok", "interval: 1h\naction: {kind: exec-cycle}\n")
    assert 0 == project.cli("list").returncode
    project.routine("rtn-bad", "interval: 1x\naction: {kind: exec-cycle}\n")
    proc = project.cli("list")
    assert 1 == proc.returncode
    assert "rtn-bad.yaml" in proc.stderr


def test_fold_repair_says_what_it_moved_and_fold_waits_for_no_one(project: Project) -> None:
    """fold --repair names the torn fragment it moved aside; fold is refused (75) while a run
    holds the routine lock, so it cannot publish a view a concurrent run made stale."""
    project.routine("rtn-f", "interval: 1h\naction: {kind: specdojo, args: [sleep-2]}\n")
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T10:00:00Z").returncode
    with project.ledger.open("ab") as ledger:
        ledger.write(b'{"version":1,"seq":9')
    repaired = project.cli("fold", "--repair")
    assert 0 == repaired.returncode, repaired.stderr
    assert "repaired: moved a torn last line aside to routines/generated/routine-runs.jsonl.torn-" \
        in repaired.stdout
    slow = project.popen("run", "--due", "--now", "2026-05-01T12:00:00Z")
    try:
        import time
        while len(project.calls()) < 2:
            time.sleep(0.05)
        busy = project.cli("fold")
        assert 75 == busy.returncode
        assert "Another routine run is in progress" in busy.stderr
    finally:
        slow.wait(timeout=60)
    assert 0 == project.cli("fold", "--check").returncode
