"""A routine view that cannot be written once the ledger has the event (SPEC §2, §5).

The ledger is the source of truth and ``routine-state.json`` is derived from it. Here the
fault is real: ``routines/generated`` is a small tmpfs whose inodes are all used, so the
ledger (which exists) still takes appends while the view's temp file cannot be made. A
control that is recorded is done (exit 0, one ``warning:`` line naming the view, the reason
and `fold`); a run delegates nothing before its attempt's view is out (SPEC §6), and once it
is, the attempt goes on and ends as its actions make it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Project, tmpfs_at


def _use_up_inodes(target: Path) -> None:
    for n in range(256):
        try:
            (target / f".fill-{n}").write_bytes(b"")
        except OSError:
            return
    raise AssertionError("the tmpfs kept making files")


def _free_inodes(target: Path) -> None:
    for path in target.glob(".fill-*"):
        path.unlink()


@pytest.fixture
def no_inodes(project: Project) -> Iterator[Path]:
    """``routines/generated`` on a tmpfs of 16 inodes, the ledger and view already there
    (skipped where mounting is refused); call the result's ``fill`` to use up the rest."""
    target = project.root / "routines" / "generated"
    target.mkdir(parents=True)
    with tmpfs_at(target, "size=1m,nr_inodes=16"):
        yield target


def _one_warning(stderr: str) -> str:
    [line] = stderr.splitlines()
    assert line.startswith("warning: "), line
    return line


def test_a_pause_recorded_while_its_view_cannot_be_written_is_done(
        project: Project, no_inodes: Path) -> None:
    """`pause` appends `routine_paused`, then the view cannot be written: exit 0 and one
    warning naming the view, the reason and `fold` - not an error that a second `pause`
    answers with "already paused". `fold` writes the view once inodes are free."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [one]}\n")
    assert 0 == project.cli("pause", "rtn-a", "--note", "setup").returncode
    assert 0 == project.cli("resume", "rtn-a").returncode
    _use_up_inodes(no_inodes)
    done = project.cli("pause", "rtn-a", "--note", "disk")
    assert (0, "rtn-a: paused\n") == (done.returncode, done.stdout), done.stderr
    line = _one_warning(done.stderr)
    assert str(project.state_path) in line and "No space left on device" in line
    assert "the pause of rtn-a is recorded in the ledger" in line
    assert "run `fold` once" in line and "df -i" in line
    assert "routine_paused" == project.events()[-1]["type"]
    _free_inodes(no_inodes)
    assert 0 == project.cli("fold").returncode
    assert "disk" == project.state()["routines"]["rtn-a"]["pause"]["note"]
    assert 0 == project.cli("fold", "--check").returncode


def test_an_override_recorded_while_its_view_cannot_be_written_is_done(
        project: Project, no_inodes: Path) -> None:
    """`resolve --attempt` records `attempt_resolved`, then the view cannot be written:
    exit 0 with the usual line on stdout and one warning, the view written by `fold`."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [one]}\n")
    assert 0 == project.cli("run", "--due").returncode
    [attempt] = [e["attempt_id"] for e in project.events() if e["type"] == "attempt_ended"]
    _use_up_inodes(no_inodes)
    done = project.cli("resolve", "rtn-a", "--attempt", attempt, "--result", "failure",
                       "--note", "checked")
    assert 0 == done.returncode, done.stderr
    assert f"rtn-a: attempt {attempt} overridden as failure\n" == done.stdout
    line = _one_warning(done.stderr)
    assert f"the override of attempt {attempt} is recorded in the ledger" in line
    assert "attempt_resolved" == project.events()[-1]["type"]
    _free_inodes(no_inodes)
    assert 0 == project.cli("fold").returncode
    assert "failure" == project.state()["routines"]["rtn-a"]["status"]


def test_a_run_whose_view_cannot_be_published_before_delegating_delegates_nothing(
        project: Project, no_inodes: Path) -> None:
    """The view published before an attempt's first action is required (SPEC §6: readers,
    the upstream CLI among them, must see it running with its cursor moved): when it cannot
    be written, nothing is delegated, and the attempt ends as a failure that says why."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [rtn-a-one]}\n")
    assert 0 == project.cli("run", "--due", "--now", "2026-05-01T10:00:00Z").returncode
    _use_up_inodes(no_inodes)
    done = project.cli("run", "--due", "--now", "2026-05-01T12:00:00Z")
    assert 1 == done.returncode, done.stdout + done.stderr
    assert 1 == len([c for c in project.calls() if "rtn-a-one" in c])  # the 10:00 run only
    ended = [e for e in project.events() if e["type"] == "attempt_ended"]
    assert ("failure", True) == (ended[-1]["result"],
                                 ended[-1]["reason"].startswith("run aborted: "))
    _free_inodes(no_inodes)
    assert 0 == project.cli("fold").returncode


def test_a_view_that_cannot_be_written_once_the_attempt_runs_is_a_warning(
        project: Project, no_inodes: Path) -> None:
    """Once the attempt's view is out, its first action uses up the inodes of the view's
    folder: the later views cannot be written, yet every action runs, the attempt ends
    `success` (not "run aborted"), no failure hook fires, exit 0, and stderr has one warning
    saying the view is stale and to run `fold`."""
    told = project.root / "told"
    fill = ("for n in $(seq 0 255); do touch routines/generated/.fill-$n 2>/dev/null || break; "
            "done; true")
    project.job("job-fill", f"""\
        name: Fill
        task:
          mode: command
          command: "{fill}"
        run:
          idempotency_key: "{{{{job_id}}}}:{{{{scheduled_at}}}}"
        """)
    project.routine("rtn-a", f"""\
        interval: 1h
        policy:
          notify: {{on: [failure], command: "echo $SPECDOJO_RESULT >> {told}"}}
        action:
          - {{kind: job, job: job-fill}}
          - {{kind: specdojo, args: [rtn-a-two]}}
        """)
    done = project.cli("run", "--due", "--now", "2026-05-01T12:00:00Z")
    assert 0 == done.returncode, done.stdout + done.stderr
    line = _one_warning(done.stderr)
    assert str(project.state_path) in line and "every event of this run is recorded" in line
    assert "run `fold` once" in line
    ended = [(e["routine_id"], e["result"], e.get("reason")) for e in project.events()
             if e["type"] == "attempt_ended"]
    assert [("rtn-a", "success", None)] == ended
    assert 1 == len([c for c in project.calls() if "rtn-a-two" in c])
    assert not told.exists()
    _free_inodes(no_inodes)
    assert 0 == project.cli("fold").returncode
    assert 0 == project.cli("fold", "--check").returncode
