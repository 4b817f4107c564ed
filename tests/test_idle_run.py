"""The call cron makes every minute (SPEC §6, §12): ``run --due`` with nothing due takes the
lock, folds and selects like any run, and answers from what the definitions cache remembers -
each cron routine's next occurrence after its cursor - without iterating a schedule."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from specdojo_routine.store.definitions.defcache import _next_key
from tests.conftest import Project

RAN = "2026-08-07T05:00:30Z"
MINUTE_LATER = "2026-08-07T05:01:30Z"
TWO_MINUTES_LATER = "2026-08-07T05:02:30Z"
NEXT_DAY = "2026-08-08T05:00:30Z"
#: what a run with nothing due must not need (each costs more than the rest of such a call)
HEAVY = ("croniter", "dateutil", "portalocker", "redis", "ruamel.yaml", "cattrs")
#: nor what only a mistyped id (difflib) or a resolve without --by or USER (getpass) needs,
#: nor, with every definition served by the cache and nothing due, the rules that build
#: definitions, the syntax of a schedule, or what starts and runs an attempt
UNNEEDED = ("difflib", "getpass", "specdojo_routine.core.routine_rules",
            "specdojo_routine.core.policy_rules",
            "specdojo_routine.core.job_rules", "specdojo_routine.core.job_template_rules",
            "specdojo_routine.core.templates",
            "specdojo_routine.core.cron_syntax", "specdojo_routine.core.retry_rules",
            "specdojo_routine.core.timeouts", "specdojo_routine.store.ledger.backwards",
            "specdojo_routine.app.actions")


def _imported(stderr: str) -> set[str]:
    """The modules ``python -X importtime`` reported."""
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines()
            if line.startswith("import time:") and "|" in line}


def test_nothing_due_needs_no_schedule_iteration_and_still_sees_the_next_occurrence(
    project: Project,
) -> None:
    for n in range(3):
        project.routine(f"rtn-d{n}", f"""\
            trigger: {{cron: "{n} 4 * * *", timezone: UTC}}
            action: {{kind: specdojo, args: [d{n}]}}
            """)
    first = project.cli("run", "--due", "--now", RAN)
    assert 0 == first.returncode and "Ran 3 attempt(s)" in first.stdout, first.stdout
    # the run remembers each routine's next occurrence after the cursor it left ...
    cache = project.root / "routines" / ".cache" / "definitions.json"
    assert {_next_key(f"{n} 4 * * *", "UTC", f"2026-08-07T04:0{n}:00.000Z"):
            f"2026-08-08T04:0{n}:00.000Z" for n in range(3)} == orjson.loads(
                cache.read_bytes())["next"]
    # ... so every later call with nothing due, and `list`, answer from them
    before = project.ledger.read_bytes()
    for minute in (MINUTE_LATER, TWO_MINUTES_LATER):
        idle = project.cli("run", "--due", "--now", minute,
                           env=project.env(PYTHONPROFILEIMPORTTIME="1"), process=True)
        assert (0, "no due routines\n") == (idle.returncode, idle.stdout), idle.stderr[-2000:]
        imported = _imported(idle.stderr)
        assert "specdojo_routine.app.handlers" in imported  # the measurement saw the run
        assert [] == [m for m in imported
                      if any(m == h or m.startswith(h + ".") for h in (*HEAVY, *UNNEEDED))]
    assert before == project.ledger.read_bytes()  # nothing recorded
    # a dry run selects as the run does, from the same remembered occurrences
    dry = project.cli("run", "--due", "--dry-run", "--now", MINUTE_LATER,
                      env=project.env(PYTHONPROFILEIMPORTTIME="1"), process=True)
    assert (0, "no due routines\n") == (dry.returncode, dry.stdout), dry.stderr[-2000:]
    assert not any(m.startswith(("croniter", "dateutil")) for m in _imported(dry.stderr))
    listed = project.cli("list", "--json", "--now", MINUTE_LATER,
                         env=project.env(PYTHONPROFILEIMPORTTIME="1"), process=True)
    assert not any(m.startswith("croniter") for m in _imported(listed.stderr))
    worked_out = project.cli("list", "--json", "--now", MINUTE_LATER,
                             env=project.env(SPECDOJO_ROUTINE_PURE_YAML="1"))  # no cache
    assert (0, worked_out.stdout) == (listed.returncode, listed.stdout)
    assert all(row["next_occurrence"] and not row["due"]
               for row in orjson.loads(listed.stdout)["routines"])
    again = project.cli("run", "--due", "--now", NEXT_DAY)
    assert 0 == again.returncode
    assert "Ran 3 attempt(s)" in again.stdout  # the remembered occurrence is due: it runs


def test_a_changed_schedule_is_not_answered_from_the_old_one(project: Project) -> None:
    """The remembered occurrence belongs to the schedule and cursor it was computed for: a
    routine whose cron changed is due at its new time."""
    body = 'trigger: {{cron: "{}", timezone: UTC}}\naction: {{kind: specdojo, args: [c]}}\n'
    project.routine("rtn-c", body.format("0 5 * * *"))
    assert 0 == project.cli("run", "--due", "--now", RAN).returncode
    assert "no due routines" in project.cli("run", "--due", "--now", MINUTE_LATER).stdout
    project.routine("rtn-c", body.format("1 5 * * *"))
    moved = project.cli("run", "--due", "--now", MINUTE_LATER)
    assert 0 == moved.returncode and "Ran 1 attempt(s)" in moved.stdout, moved.stdout


def test_a_remembered_occurrence_holds_only_under_the_zone_rules_it_was_worked_out_with(
    project: Project, tmp_path: Path,
) -> None:
    """A remembered next occurrence is an instant worked out with the zone's rules as this
    machine had them; when they change (a country moves its clocks, the machine's zone data is
    updated), the occurrence is worked out again with the new rules - neither a run nor
    ``list`` answers from the old instant."""
    import tzdata

    rules = Path(tzdata.__file__).parent / "zoneinfo"
    zones = tmp_path / "zoneinfo"
    (zones / "Test").mkdir(parents=True)
    shifting = zones / "Test" / "Shift"
    shifting.write_bytes((rules / "Europe" / "Berlin").read_bytes())  # UTC+1 in winter
    env = project.env(PYTHONTZPATH=str(zones))
    project.routine("rtn-z", """\
        trigger: {cron: "0 9 * * *", timezone: Test/Shift}
        action: {kind: specdojo, args: [z]}
        """)
    first = project.cli("run", "--due", "--now", "2026-12-07T08:00:30Z", env=env, process=True)
    assert 0 == first.returncode and "Ran 1 attempt(s)" in first.stdout, first.stderr
    remembered = orjson.loads(
        (project.root / "routines" / ".cache" / "definitions.json").read_bytes())["next"]
    assert ["2026-12-08T08:00:00.000Z"] == list(remembered.values())  # 09:00 in Berlin
    shifting.write_bytes((rules / "Asia" / "Tokyo").read_bytes())  # the zone's clocks move
    now = "2026-12-08T00:00:30Z"  # 09:00 under the new rules, long before the old instant
    listed = project.cli("list", "--json", "--now", now, env=env, process=True)
    row = orjson.loads(listed.stdout)["routines"][0]
    assert (True, "2026-12-09T00:00:00.000Z") == (row["due"], row["next_occurrence"]), row
    dry = project.cli("run", "--due", "--dry-run", "--now", now, env=env, process=True)
    assert "rtn-z" in dry.stdout, dry.stdout
    ran = project.cli("run", "--due", "--now", now, env=env, process=True)
    assert 0 == ran.returncode and "Ran 1 attempt(s)" in ran.stdout, ran.stdout
    assert "2026-12-08T00:00:00.000Z" == project.events()[-1]["scheduled_for"]


def test_a_run_proves_the_ledger_once_and_a_stale_proof_is_not_taken(
    project: Project, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The import check and the run's first refresh read the same bytes under the same lock:
    the view and snapshot are checked once. A proof the ledger has moved past since (an
    append: another size, change time and last line), or whose view another tool has
    rewritten since, is never taken as the refresh."""
    from specdojo_routine.store.config import resolve_project
    from specdojo_routine.store.ledger import adopt, proven, views

    project.routine("rtn-d", """\
        trigger: {cron: "0 4 * * *", timezone: UTC}
        action: {kind: specdojo, args: [d]}
        """)
    assert 0 == project.cli("run", "--due", "--now", RAN).returncode
    checked: list[object] = []
    resumable = proven._resumable
    monkeypatch.setattr(proven, "_resumable",
                        lambda *a, **k: checked.append(a) or resumable(*a, **k))
    idle = project.cli("run", "--due", "--now", MINUTE_LATER)
    assert (0, "no due routines\n", 1) == (idle.returncode, idle.stdout, len(checked))
    paths = resolve_project(project.root)
    stale = adopt.plan_routine_imports(paths).proof
    assert stale is not None
    assert 0 == project.cli("run", "--due", "--now", NEXT_DAY).returncode  # appends
    fresh = views.refresh_routine_view(paths, stale).document
    last = project.events()[-1]
    assert (last["seq"], last["result"]) == (fresh["ledger"]["seq"],
                                             fresh["routines"]["rtn-d"]["status"])
    proof = adopt.plan_routine_imports(paths).proof
    assert proof is not None and proof.resumed_at > 0 and proof.still_holds(
        paths.routine_ledger, paths.routine_state)
    view = paths.routine_state
    view.write_bytes(orjson.dumps(orjson.loads(view.read_bytes())))  # same facts, other bytes
    assert not proof.still_holds(paths.routine_ledger, view)
    checked.clear()
    views.refresh_routine_view(paths, proof)
    assert 1 == len(checked)  # proved again, from the file as it now is


def test_list_of_a_project_that_never_ran_loads_no_ledger_code(project: Project) -> None:
    """Neither the ledger nor the view exists before the first run (ours or another tool's):
    ``list`` shows every routine as never run without loading the ledger's code, and once a
    run wrote them it reads them."""
    project.routine("rtn-n", """\
        trigger: {cron: "0 4 * * *", timezone: UTC}
        action: {kind: specdojo, args: [n]}
        """)
    fresh = project.cli("list", "--json", "--now", RAN,
                        env=project.env(PYTHONPROFILEIMPORTTIME="1"), process=True)
    assert 0 == fresh.returncode, fresh.stderr[-2000:]
    imported = _imported(fresh.stderr)
    assert "specdojo_routine.app.listing" in imported  # the measurement saw the command
    assert [] == [m for m in imported if m.startswith("specdojo_routine.store.ledger")]
    (row,) = orjson.loads(fresh.stdout)["routines"]
    assert ("never", None, True) == (row["status"], row["last_run"], row["due"])
    assert not project.ledger.exists()  # and list wrote none
    assert 0 == project.cli("run", "--due", "--now", RAN).returncode
    ran = project.cli("list", "--json", "--now", MINUTE_LATER,
                      env=project.env(PYTHONPROFILEIMPORTTIME="1"), process=True)
    assert "specdojo_routine.store.ledger.adopt" in _imported(ran.stderr)
    (row,) = orjson.loads(ran.stdout)["routines"]
    assert ("success", False) == (row["status"], row["due"])


def test_a_dry_run_asks_the_due_engine_where_the_cache_does_not_know_the_cursor(
    project: Project, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A dry run keeps nothing, so for a cursor the cache does not know (no cache, or one of
    other code) it does not work out the next occurrence to remember: the due engine alone
    answers, as a dry run always did."""
    from specdojo_routine.core import schedule

    project.routine("rtn-u", """\
        trigger: {cron: "0 4 * * *", timezone: UTC}
        action: {kind: specdojo, args: [u]}
        """)
    assert 0 == project.cli("run", "--due", "--now", RAN).returncode
    (project.root / "routines" / ".cache" / "definitions.json").unlink()

    def unwanted(*args: object) -> None:
        raise AssertionError("a dry run worked out an occurrence to remember")

    monkeypatch.setattr(schedule, "next_after", unwanted)
    dry = project.cli("run", "--due", "--dry-run", "--now", MINUTE_LATER)
    assert (0, "no due routines\n") == (dry.returncode, dry.stdout), dry.stderr
    assert not (project.root / "routines" / ".cache" / "definitions.json").exists()
