"""An unreadable view holds no facts (SPEC §10 rule 8): a ``routine-state.json``,
``runs/<id>.json`` or ``job-state.json`` that is not JSON, is empty, is not an object, has no
``routines`` / ``jobs`` object or is not a regular file is, while its ledger exists, moved
aside as ``<name>.unreadable-<UTC yyyymmddThhmmssZ>``, reported in one ``warning:`` line
naming both paths, rebuilt from the ledger, and the command goes on. A FIFO in a view's place
never hangs a command.

Every test starts from the demo project after a real ``run`` (the fake SpecDojo CLI), copied
with ``cp -a``; the CLI runs in subprocesses.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import orjson
import pytest

from tests.viewhelper import (
    T2,
    cli,
    cp_a,
    demo_after_run,
    fresh_fold,
    job_state,
    ledger,
    routine_state,
    runs_dir,
    views_of,
)

STAMP = r"\d{8}T\d{6}Z"
STATE = "routines/generated/routine-state.json"


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo project after one real run (never changed by a test: tests copy it)."""
    return demo_after_run(tmp_path_factory.mktemp("unreadable") / "demo")


@pytest.fixture
def demo(ran: Path, tmp_path: Path) -> Path:
    return cp_a(ran, tmp_path / "demo")


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("warning:")]


def _aside(path: Path) -> Path:
    """The one file ``path`` was moved aside to."""
    [moved] = path.parent.glob(f"{path.name}.unreadable-*")
    assert re.fullmatch(re.escape(path.name) + r"\.unreadable-" + STAMP, moved.name)
    return moved


@pytest.mark.parametrize(("content", "reason"), [
    (b"garbage\n", "not JSON"), (b"", "empty"), (b"[]\n", "not a JSON object"),
    (b'{"version": 1}\n', 'no "routines" object'),
], ids=["not-json", "empty", "not-an-object", "no-routines"])
def test_an_unreadable_routine_state_is_moved_aside_and_the_run_goes_on(
    demo: Path, content: bytes, reason: str
) -> None:
    """`run` succeeds and records its attempts; the file's bytes are kept aside under the
    stamped name, one warning names both paths and says why, and the view is the fold of the
    ledger (a second run warns no more)."""
    routine_state(demo).write_bytes(content)
    before = ledger(demo).stat().st_size
    done = cli(demo, "run", "--due", "--now", T2)
    assert 0 == done.returncode, done.stderr
    moved = _aside(routine_state(demo))
    assert content == moved.read_bytes()
    assert [f"warning: {STATE} holds no facts ({reason}); moved it aside to "
            f"{STATE}.{moved.name.split('.', 2)[2]} and rebuilt it from "
            "routines/generated/routine-runs.jsonl"] == _warnings(done.stderr)
    assert ledger(demo).stat().st_size > before  # the run went on and recorded its attempts
    assert fresh_fold(demo) == views_of(demo)
    again = cli(demo, "run", "--due", "--now", T2)
    assert (0, []) == (again.returncode, _warnings(again.stderr))
    assert 0 == cli(demo, "fold", "--check").returncode


def test_a_fifo_in_place_of_the_routine_state_never_hangs(demo: Path) -> None:
    """Read-only commands and `fold --check` do not wait on a FIFO and leave it there; `run`
    moves it aside (renamed, not opened), warns once and publishes the fold."""
    routine_state(demo).unlink()
    os.mkfifo(routine_state(demo))
    listed = cli(demo, "list", "--json", timeout=60)
    assert 0 == listed.returncode, listed.stderr
    check = cli(demo, "fold", "--check", timeout=60)
    assert (1, f"drift: {STATE} differs from the fold of its ledger\n") == (
        check.returncode, check.stderr)
    assert stat.S_ISFIFO(routine_state(demo).lstat().st_mode)
    done = cli(demo, "run", "--due", "--now", T2, timeout=60)
    assert 0 == done.returncode, done.stderr
    assert stat.S_ISFIFO(_aside(routine_state(demo)).lstat().st_mode)
    [warning] = _warnings(done.stderr)
    assert "(not a regular file)" in warning
    assert stat.S_ISREG(routine_state(demo).lstat().st_mode)
    assert fresh_fold(demo) == views_of(demo)


def test_read_only_commands_show_the_fold_and_write_nothing(ran: Path, demo: Path) -> None:
    """`list` and `run --dry-run` over an unreadable view show what the ledger says (as on
    the project before the damage) and leave every file as it was."""
    routine_state(demo).write_bytes(b"garbage\n")
    files = {p: p.read_bytes() for p in demo.rglob("*") if p.is_file()}
    for args in (["list", "--json", "--now", T2],
                 ["run", "--due", "--dry-run", "--now", T2, "--json"]):
        damaged, intact = cli(demo, *args), cli(ran, *args)
        assert (intact.returncode, intact.stdout) == (damaged.returncode, damaged.stdout)
    assert files == {p: p.read_bytes() for p in demo.rglob("*") if p.is_file()}


def test_unreadable_job_views_are_moved_aside_and_rebuilt(demo: Path) -> None:
    """`fold` moves an unreadable run view and job-state.json aside (one warning each,
    naming both paths) and rebuilds both from the Job Run ledgers."""
    [run_view, _] = sorted(runs_dir(demo).glob("*.json"))
    run_view.write_bytes(b"[]\n")
    job_state(demo).write_bytes(b"")
    done = cli(demo, "fold")
    assert 0 == done.returncode, done.stderr
    assert (b"[]\n", b"") == (_aside(run_view).read_bytes(), _aside(job_state(demo)).read_bytes())
    rel_run = run_view.relative_to(demo).as_posix()
    assert sorted(_warnings(done.stderr)) == [
        f"warning: execution/jobs/generated/job-state.json holds no facts (empty); moved it "
        f"aside to {_aside(job_state(demo)).relative_to(demo).as_posix()} and rebuilt it from "
        "the Job Run ledgers",
        f"warning: {rel_run} holds no facts (not a JSON object); moved it aside to "
        f"{_aside(run_view).relative_to(demo).as_posix()} and rebuilt it from "
        f"{rel_run}l"]
    assert fresh_fold(demo) == views_of(demo)


@pytest.mark.parametrize(("content", "reason"), [
    (b"garbage\n", "not JSON"), (b"", "empty"), (b"[]\n", "not a JSON object"),
    (b'{"version": 1}\n', 'no "jobs" object'),
], ids=["not-json", "empty", "not-an-object", "no-jobs"])
def test_an_unreadable_job_state_does_not_stop_a_job_action(
    demo: Path, content: bytes, reason: str
) -> None:
    """A routine whose Job action runs under the exec lock imports first: an unreadable
    job-state.json (each way SPEC §10 rule 8 names) is moved aside, one warning says why,
    and the Job runs."""
    job_state(demo).write_bytes(content)
    runs = len(list(runs_dir(demo).glob("*.jsonl")))
    done = cli(demo, "run", "--due", "--now", T2)
    assert 0 == done.returncode, done.stderr
    moved = _aside(job_state(demo))
    assert content == moved.read_bytes()
    assert [f"warning: execution/jobs/generated/job-state.json holds no facts ({reason}); "
            f"moved it aside to {moved.relative_to(demo).as_posix()} and rebuilt it from the "
            "Job Run ledgers"] == _warnings(done.stderr)
    assert runs + 1 == len(list(runs_dir(demo).glob("*.jsonl")))
    assert fresh_fold(demo) == views_of(demo)


def test_job_run_moves_an_unreadable_view_of_its_jobs_run_aside_and_goes_on(
        demo: Path) -> None:
    """SPEC §10 rules 3, 8: `job run` imports its Job's runs first, under the exec lock: an
    unreadable view of an earlier run is moved aside, named in one warning with its ledger,
    rebuilt from it, and the new run goes on."""
    view = runs_dir(demo) / "JBR-weekly-report-a99cc98957a3.json"
    view.write_bytes(b"garbage\n")
    runs = len(list(runs_dir(demo).glob("*.jsonl")))
    done = cli(demo, "job", "run", "--job", "job-weekly-report", "--input", "period=2026-W33")
    assert 0 == done.returncode, done.stderr
    rel = view.relative_to(demo).as_posix()
    assert [f"warning: {rel} holds no facts (not JSON); moved it aside to "
            f"{_aside(view).relative_to(demo).as_posix()} and rebuilt it from {rel}l"] == \
        _warnings(done.stderr)
    assert (b"garbage\n", runs + 1) == (_aside(view).read_bytes(),
                                        len(list(runs_dir(demo).glob("*.jsonl"))))
    assert fresh_fold(demo) == views_of(demo)


def test_a_duplicate_complete_moves_the_unreadable_view_of_its_run_aside(demo: Path) -> None:
    """SPEC §10 rules 3, 8: `job run` answered duplicate complete from the run's ledger is
    still a recording command: the run's unreadable view is moved aside with one warning and
    rebuilt, not left for the next `fold`."""
    view = runs_dir(demo) / "JBR-weekly-report-a99cc98957a3.json"
    view.write_bytes(b"garbage\n")
    done = cli(demo, "job", "run", "--job", "job-weekly-report", "--input", "period=2026-W32",
               "--json")
    assert (0, True) == (done.returncode, orjson.loads(done.stdout)["duplicate_complete"])
    assert [b"garbage\n"] == [p.read_bytes() for p in runs_dir(demo).glob("*.unreadable-*")]
    assert 1 == len(_warnings(done.stderr))
    assert fresh_fold(demo) == views_of(demo)
