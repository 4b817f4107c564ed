"""A FIFO where a command reads a file of its own (the project config, a cache or snapshot,
the routine view) never blocks the command: only regular files are read.

Each command runs in a subprocess with a timeout, so a regression fails instead of hanging.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys

from tests.conftest import Project, period_job

TIMEOUT_S = 20
NOW = "2026-05-01T10:00:30Z"


def test_a_fifo_as_the_project_config_is_one_line_and_exit_2(project: Project) -> None:
    """--root names a project whose config is a FIFO: a usage/config error naming the path."""
    config = project.root / ".specdojo" / "specdojo.config.json"
    config.unlink()
    os.mkfifo(config)
    done = project.cli("list", timeout=TIMEOUT_S)
    assert (2, 1) == (done.returncode, len(done.stderr.splitlines())), done.stderr
    assert done.stderr.startswith(f"error: {config}: not a regular file (a FIFO)")


def test_a_fifo_config_found_from_the_working_directory_is_refused_too(
    project: Project,
) -> None:
    """Without --root the walk up stops at the project whose config is a FIFO (it is refused,
    not passed over for a parent directory's project)."""
    config = project.root / ".specdojo" / "specdojo.config.json"
    config.unlink()
    os.mkfifo(config)
    done = subprocess.run([sys.executable, "-m", "specdojo_routine", "list"],
                          cwd=project.root / "routines", env=project.env(),
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert (2, 1) == (done.returncode, len(done.stderr.splitlines())), done.stderr
    assert f"{config}: not a regular file (a FIFO)" in done.stderr


def test_a_fifo_as_the_definition_cache_is_ignored_and_replaced(project: Project) -> None:
    """R/.cache/definitions.json as a FIFO: `list` reads the definitions without it, and the
    next recording command writes a regular cache in its place (which `list` then uses)."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [a]}\n")
    cache = project.root / "routines" / ".cache" / "definitions.json"
    cache.parent.mkdir()
    os.mkfifo(cache)
    listed = project.cli("list", "--now", NOW, timeout=TIMEOUT_S)
    assert (0, "") == (listed.returncode, listed.stderr)
    assert "rtn-a" in listed.stdout
    ran = project.cli("run", "--due", "--now", NOW, timeout=TIMEOUT_S)
    assert 0 == ran.returncode, ran.stderr
    assert stat.S_ISREG(cache.lstat().st_mode)
    assert cache.read_bytes().startswith(b"{")
    again = project.cli("list", "--now", NOW, timeout=TIMEOUT_S)
    assert (0, "") == (again.returncode, again.stderr)


def test_a_fifo_as_the_import_checks_snapshot_is_ignored_and_replaced(project: Project) -> None:
    """E/.cache/job-runs/<job>.json as a FIFO: `job run --dry-run` and `job run` check the
    Job's runs without it, and the run writes a regular snapshot in its place."""
    project.job("job-n", period_job("n", "'true'"))
    first = project.cli("job", "run", "--job", "job-n", "--input", "period=a")
    assert 0 == first.returncode, first.stderr
    snapshot = project.root / "execution" / ".cache" / "job-runs" / "job-n.json"
    snapshot.unlink()
    os.mkfifo(snapshot)
    for extra in (["--dry-run"], []):
        done = project.cli("job", "run", "--job", "job-n", "--input", "period=b", *extra,
                           timeout=TIMEOUT_S)
        assert (0, "") == (done.returncode, done.stderr)
    assert stat.S_ISREG(snapshot.lstat().st_mode)


def test_a_fifo_as_the_routine_state_never_blocks_the_routine_id_check(project: Project) -> None:
    """`history`, `logs` and `status` of an id no definition names look in the ledger when
    routine-state.json is a FIFO: an id the ledger names is answered, another is exit 2."""
    rule = project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [a]}\n")
    ran = project.cli("run", "--due", "--now", NOW)
    assert 0 == ran.returncode, ran.stderr
    rule.unlink()  # rtn-a is now known from the ledger alone
    project.state_path.unlink()
    os.mkfifo(project.state_path)
    done = project.cli("history", "rtn-a", timeout=TIMEOUT_S)
    assert (0, "") == (done.returncode, done.stderr)
    for command in ("history", "logs", "status"):
        done = project.cli(command, "rtn-gone", timeout=TIMEOUT_S)
        assert (2, 1) == (done.returncode, len(done.stderr.splitlines())), done.stderr


def test_a_fifo_as_a_lock_directorys_owner_file_never_blocks(project: Project) -> None:
    """The owner files of the upstream routine lock directory and of the exec lock are written
    by whichever tool holds the lock - another tool's files: a FIFO there is an owner that
    cannot be read (the directory is still a lock), never a wait. ``list`` reports, ``run``
    is busy (75), ``job list`` answers."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [a]}\n")
    routine_lock = project.root / "routines" / ".locks" / "routine-run.lock"
    exec_lock = project.root / "execution" / "exec" / ".locks" / "exec-run.lock"
    for lock in (routine_lock, exec_lock):
        lock.mkdir(parents=True)
        os.mkfifo(lock / "owner.json")
    listed = project.cli("list", "--now", NOW, timeout=TIMEOUT_S)
    assert (0, "rtn-a") == (listed.returncode, listed.stdout.splitlines()[1].split()[0]), \
        listed.stderr
    ran = project.cli("run", "--due", "--now", NOW, timeout=TIMEOUT_S)
    assert (75, []) == (ran.returncode, project.events()), ran.stderr
    jobs = project.cli("job", "list", timeout=TIMEOUT_S)
    assert 0 == jobs.returncode, jobs.stderr


def test_a_fifo_as_a_process_group_record_is_no_record(project: Project) -> None:
    """The record of the process group an open attempt's action (or a Job Run's command) runs
    in is read only as a regular file: a FIFO there is no record, never a wait (it is asked
    when a run finds an attempt left open)."""
    record = project.root / "routines" / ".locks" / "action-group.json"
    record.parent.mkdir(parents=True)
    os.mkfifo(record)
    asked = subprocess.run(
        [sys.executable, "-c", "import sys; from pathlib import Path; "
         "from specdojo_routine.execute import groups; "
         "print(groups.still_running(Path(sys.argv[1]), attempt_id='att-1'))", str(record)],
        capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert (0, "None\n") == (asked.returncode, asked.stdout), asked.stderr


def test_a_fifo_as_the_routine_flock_file_never_blocks(project: Project) -> None:
    """``list`` reads who holds the routine lock from its lock file: a FIFO there is a holder
    that cannot be read, never a wait; ``run`` refuses it in one line (not a lock file of
    ours) and records nothing."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [a]}\n")
    flock = project.root / "routines" / ".locks" / "routine-run.flock"
    flock.parent.mkdir(parents=True)
    os.mkfifo(flock)
    listed = project.cli("list", "--now", NOW, timeout=TIMEOUT_S)
    assert (0, "rtn-a") == (listed.returncode, listed.stdout.splitlines()[1].split()[0]), \
        listed.stderr
    ran = project.cli("run", "--due", "--now", NOW, timeout=TIMEOUT_S)
    assert (1, [], "not a regular file (remove it") == (
        ran.returncode, project.events(), ran.stderr[ran.stderr.find("not a regular"):][:29]), \
        ran.stderr
    assert 1 == len(ran.stderr.splitlines())


def test_fifos_where_a_run_reads_a_stop_request_or_evidence_are_nothing(project: Project) -> None:
    """A stop request (``R/.locks/stop-<attempt>.json``, taken between actions), an action's
    ``evidence.json`` named by a ledger (another tool's record may name any path) and an
    agent's log beside it are read only as regular files: a FIFO or a device is none."""
    locks = project.root / "routines" / ".locks"
    evidence = project.root / "execution" / "evidence" / "JBR-x"
    for folder in (locks, evidence):
        folder.mkdir(parents=True)
    for fifo in (locks / "stop-att-1.json", evidence / "evidence.json",
                 evidence / "agent-review.stdout.log"):
        os.mkfifo(fifo)
    asked = subprocess.run(
        [sys.executable, "-c", "import sys; from pathlib import Path; "
         "from specdojo_routine.execute import evidence; from specdojo_routine.app import logs; "
         "from specdojo_routine.store.locks import stoprequest; root = Path(sys.argv[1]); "
         "print(stoprequest.take(root / 'routines/.locks', 'att-1'), "
         "evidence.read_evidence(root, 'execution/evidence/JBR-x/evidence.json', "
         "root / 'execution/evidence'), "
         "evidence.read_evidence(root, '/dev/zero', Path('/')), "  # a device, within reach
         "logs._agent_logs(root / 'execution/evidence/JBR-x/evidence.json'))",
         str(project.root)], capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert (0, "None None None {}\n") == (asked.returncode, asked.stdout), asked.stderr


def test_a_fifo_as_a_ledger_is_one_line_never_a_wait(project: Project) -> None:
    """A ledger is a regular file: a FIFO at the routine ledger is refused in one line naming
    it (exit 1) by every command that reads it, never waited on."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [a]}\n")
    project.ledger.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(project.ledger)
    for command in (["list", "--now", NOW], ["run", "--due", "--now", NOW],
                    ["history", "rtn-a"], ["fold", "--check"]):
        done = project.cli(*command, timeout=TIMEOUT_S)
        assert (1, [f"error: {project.ledger}: not a regular file (a FIFO)"]) == (
            done.returncode, [line[:line.find(" (check")] for line in done.stderr.splitlines()]
        ), done.stderr
    assert stat.S_ISFIFO(os.lstat(project.ledger).st_mode)  # left as it was


def test_a_fifo_as_an_agents_result_or_a_template_is_none(project: Project) -> None:
    """An agent's result file (another program writes it) and a project template are read
    only as regular files: a FIFO is no result and no template, never a wait."""
    result = project.root / "result.md"
    os.mkfifo(result)
    from specdojo_routine.execute.agents import TEMPLATES_DIR

    (project.root / TEMPLATES_DIR).mkdir(parents=True, exist_ok=True)
    os.mkfifo(project.root / TEMPLATES_DIR / "plan.md")
    asked = subprocess.run(
        [sys.executable, "-c", "import sys; from pathlib import Path; "
         "from specdojo_routine.execute import agents; "
         "from specdojo_routine.store.config import resolve_project; root = Path(sys.argv[1]); "
         "print(repr(agents.read_result(root / 'result.md')), "
         "agents.template(resolve_project(root), 'plan.md', 'builtin'))", str(project.root)],
        capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert (0, "'' builtin\n") == (asked.returncode, asked.stdout), asked.stderr
