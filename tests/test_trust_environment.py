"""Full disks, directories where files should be, and FIFOs named like definitions: the outcome
comes first, environment errors are one clear line, only regular files are definitions."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.conftest import Project, console_script, tmpfs_at

SLOW_FILL = """\
name: Fills the disk
inputs:
  period: {type: string, required: true}
task:
  mode: command
  command: echo ran >> ran.log; cat /dev/zero > execution/fill 2>/dev/null || true; echo done
run:
  idempotency_key: "{{job_id}}:{{inputs.period}}"
"""


@pytest.fixture
def small_tmpfs(project: Project) -> Iterator[Path]:
    """The project's execution dir on a real 1 MiB tmpfs (skipped where mounting is refused)."""
    target = project.root / "execution"
    target.mkdir()
    with tmpfs_at(target, "size=1m"):
        yield target


def test_the_outcome_is_recorded_when_the_evidence_cannot_be_written(
    project: Project, small_tmpfs: Path,
) -> None:
    """The command fills the disk to the last byte and exits 0: the attempt is recorded
    succeeded with exit code 0 and the evidence problem as its reason; a retry is a duplicate
    (the command ran once); once space is back, `fold` makes the views match (--check clean)."""
    project.job("job-fill", SLOW_FILL)
    args = ("job", "run", "--job", "job-fill", "--input", "period=W1", "--json")
    done = project.cli(*args)
    events = [orjson.loads(x) for p in (small_tmpfs / "jobs" / "runs").glob("*.jsonl")
              for x in p.read_bytes().splitlines()]
    ended = [e for e in events if e["type"] == "attempt_ended"]
    assert [("succeeded", 0)] == [(e["status"], e.get("exit_code")) for e in ended], \
        done.stdout + done.stderr
    assert "evidence not written" in ended[0]["reason"]
    assert "No space left on device" in ended[0]["reason"]
    assert "succeeded" == orjson.loads(done.stdout)["state"]
    again = project.cli(*args)
    assert (0, True) == (again.returncode, orjson.loads(again.stdout)["duplicate_complete"])
    assert ["ran"] == (project.root / "ran.log").read_text().splitlines()
    (small_tmpfs / "fill").unlink()
    assert 0 == project.cli("fold").returncode
    assert 0 == project.cli("fold", "--check").returncode


def test_a_full_disk_is_one_clear_line(project: Project, small_tmpfs: Path) -> None:
    """ENOSPC while recording: `error: <path>: No space left on device (free some space …)`,
    exit 1, never an internal error."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [one]}\n")
    (small_tmpfs / "fill").write_bytes(b"")
    subprocess.run(f"cat /dev/zero > {small_tmpfs / 'fill'}", shell=True, check=False,
                   capture_output=True)
    project.job("job-x", SLOW_FILL.replace("cat /dev/zero > execution/fill", "true"))
    done = project.cli("job", "run", "--job", "job-x", "--input", "period=W1")
    assert 1 == done.returncode, done.stdout + done.stderr
    assert "internal error" not in done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("error: ") and "No space left on device" in line
    assert "free some space" in line and str(small_tmpfs) in line


def test_a_directory_where_the_ledger_should_be_is_one_clear_line(project: Project) -> None:
    """EISDIR: the path, `Is a directory`, what to do; exit 1."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [one]}\n")
    (project.root / "routines" / "generated" / "routine-runs.jsonl").mkdir(parents=True)
    done = project.cli("run", "--due", "--now", "2026-05-01T10:00:30Z")
    assert 1 == done.returncode
    [line] = done.stderr.splitlines()
    assert "internal error" not in line and "Is a directory" in line
    assert "routine-runs.jsonl" in line and "move it aside" in line
    assert [] == project.calls()


@pytest.mark.parametrize("key", ["routines_path", "jobs_path", "execution_path"])
@pytest.mark.parametrize("value", ["notes.txt", "notes.txt/below"])
@pytest.mark.parametrize("command", [("validate",), ("list",), ("run", "--due")])
def test_a_configured_folder_that_is_a_file_is_a_configuration_error(
    project: Project, key: str, value: str, command: tuple[str, ...],
) -> None:
    """A project folder the config points at a file (or below one): exit 2, one line naming
    the config, the key and what to do. `validate` said `0 routine(s)` and passed; `list` and
    `run` failed with exit 1 on a path below the file. Nothing is written."""
    (project.root / "notes.txt").write_text("notes\n")
    config = project.root / ".specdojo" / "specdojo.config.json"
    data = orjson.loads(config.read_bytes())
    data["projects"]["demo"][key] = value
    config.write_bytes(orjson.dumps(data))
    before = project.files()
    done = project.cli(*command)
    assert (2, [f'error: {config}: project "demo" "{key}" names {value}, which is not a '
                "folder; point it at a folder"]) == (done.returncode, done.stderr.splitlines())
    assert before == project.files()


@pytest.mark.parametrize("key", ["routines_path", "jobs_path", "execution_path",
                                 "members_path", "run.worktree_base", "run.exec_defaults"])
def test_a_nul_in_a_configured_path_is_one_clear_line(project: Project, key: str) -> None:
    """A config path holding `\\u0000`: exit 2 and one line naming the config, the key and
    what to do - not an internal error - and nothing is written."""
    config = project.root / ".specdojo" / "specdojo.config.json"
    data = orjson.loads(config.read_bytes())
    entry = data["projects"]["demo"]
    if key.startswith("run."):
        entry = entry.setdefault("run", {})
    entry[key.removeprefix("run.")] = "some\0where"
    config.write_bytes(orjson.dumps(data))
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [one]}\n")
    before = project.files()
    done = project.cli("run", "--due", timeout=60)
    assert (2, [f'error: {config}: project "demo" "{key.removeprefix("run.")}" holds a NUL '
                "character (\\u0000); write the path without it"]) == (
        done.returncode, done.stderr.splitlines())
    assert (before, []) == (project.files(), project.calls())


@pytest.mark.parametrize("command", [["validate"], ["list"],
                                     ["run", "--due", "--now", "2026-05-01T10:00:30Z"]])
def test_a_fifo_named_like_a_definition_is_reported_not_read(project: Project,
                                                              command: list[str]) -> None:
    """A FIFO `rtn-x.yaml` is a located error, never opened for a blocking read (no hang);
    the valid routine beside it is still validated (and run)."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [one]}\n")
    os.mkfifo(project.root / "routines" / "rtn-x.yaml")
    (project.root / "jobs" / "job-dir.yaml").mkdir()
    done = project.cli(*command, timeout=30)
    assert 1 == done.returncode, done.stdout + done.stderr
    assert "rtn-x.yaml:1:1: not a regular file (a FIFO)" in done.stderr
    assert "job-dir.yaml:1:1: not a regular file (a directory)" in done.stderr
    assert (1 if command[0] == "run" else 0) == len(project.calls())


def test_a_32_mb_torn_line_is_found_and_repaired_in_linear_time(tmp_path: Path) -> None:
    """The last-line scan looks at each byte once: a 32 MB torn line is repaired fast."""
    import time

    from specdojo_routine.core import routine_events as rev
    from specdojo_routine.store.ledger import journal as ledger

    path = tmp_path / "routine-runs.jsonl"
    log = ledger.Ledger(path)
    log.append(rev.RoutineRegistered(routine_id="rtn-a", digest="0" * 64, path="a.yaml"))
    with path.open("ab") as f:
        f.write(b'{"version":1,"seq":2,"x":"' + b"y" * (32 << 20))
    started = time.perf_counter()
    moved = ledger.repair(path)
    took = time.perf_counter() - started
    assert moved is not None and "routine-runs.jsonl.torn-2" == moved.name
    assert took < 2.0, took
    assert 1 == ledger.tail(path).seq


def test_a_torn_tail_repair_on_a_full_disk_leaves_no_empty_fragment(
    project: Project, small_tmpfs: Path,
) -> None:
    """Repair on a full disk fails cleanly (nothing truncated, no empty `.torn-<seq>`); after
    space is freed the fragment lands in `<ledger>.torn-<seq>`, as SPEC §5 names it."""
    from specdojo_routine.core import routine_events as rev
    from specdojo_routine.store.ledger import journal as ledger

    path = small_tmpfs / "routine-runs.jsonl"
    ledger.Ledger(path).append(rev.RoutineRegistered(routine_id="rtn-a", digest="0" * 64,
                                                    path="a.yaml"))
    with path.open("ab") as f:
        f.write(b'{"version":1,"seq":2,"type":"rout')
    subprocess.run(f"cat /dev/zero > {small_tmpfs / 'fill'}", shell=True, check=False,
                   capture_output=True)
    before = path.read_bytes()
    with pytest.raises(OSError):
        ledger.repair(path)
    assert before == path.read_bytes()
    assert [] == sorted(p.name for p in small_tmpfs.iterdir() if ".torn-" in p.name)
    (small_tmpfs / "fill").unlink()
    moved = ledger.repair(path)
    assert moved is not None and "routine-runs.jsonl.torn-2" == moved.name
    assert b'{"version":1,"seq":2,"type":"rout' == moved.read_bytes()
    assert ["routine-runs.jsonl.torn-2"] == sorted(
        p.name for p in small_tmpfs.iterdir() if ".torn-" in p.name)


def test_a_run_that_aborts_still_reports_the_attempts_it_finished(project: Project) -> None:
    """An environment error mid-run (here from a job action) ends the run with one error line,
    and the summary still lists the attempt that finished before it, and the one the error
    cut short, which its runner ended as a failure."""
    from specdojo_routine.app import handlers
    from specdojo_routine.store.config import resolve_project

    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [one]}\n")
    project.job("job-x", SLOW_FILL.replace("cat /dev/zero > execution/fill", "true"))
    project.routine("rtn-b", "interval: 1h\naction: {kind: job, job: job-x, "
                             "inputs: {period: W1}}\n")

    def full_disk(*_args: object, **_kw: object) -> handlers.JobActionOutcome:
        raise OSError(28, "No space left on device", str(project.root / "execution" / "x"))

    report = handlers.run(resolve_project(project.root), env=project.env(),
                          job_runner=full_disk)  # type: ignore[arg-type]
    assert [("rtn-a", "success"), ("rtn-b", "failure")] == [
        (r.routine_id, r.result) for r in report.results]
    assert 1 == report.exit_code
    assert ["error: run aborted: " + str(project.root / "execution" / "x") +
            ": No space left on device (free some space on that file system and run the "
            "command again)"] == report.errors


_WITHOUT = """\
import importlib.abc, runpy, sys
GONE = sys.argv[1]
class Gone(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == GONE:
            raise ModuleNotFoundError(f"No module named {GONE!r}", name=GONE)
sys.meta_path.insert(0, Gone())
SCRIPT = sys.argv[2]
sys.argv = ["specdojo_routine", *sys.argv[3:]]
if SCRIPT:  # the console script's own code
    exec(SCRIPT)
runpy.run_module("specdojo_routine", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize("script", [False, True], ids=["python -m", "specdojo-routine"])
@pytest.mark.parametrize("module", ["orjson", "ruamel", "croniter"])
def test_a_missing_dependency_is_one_clear_line(
    project: Project, module: str, script: bool
) -> None:
    """A package missing from the environment (orjson: before anything of ours runs; ruamel and
    croniter: imported on first use) is named in one line that says what to do, exit 1, under
    `python -m` and the installed script alike."""
    project.routine("rtn-a", 'trigger: {cron: "0 * * * *", timezone: UTC}\n'
                             "action: {kind: specdojo, args: [x]}\n")
    code = console_script()[2] if script else ""
    done = subprocess.run([sys.executable, "-c", _WITHOUT, module, code, "list", "--root",
                           str(project.root)], capture_output=True, text=True, check=False)
    assert 1 == done.returncode, done.stdout + done.stderr
    assert [f"error: No module named '{module}': a package specdojo_routine needs is missing "
            "or broken in this Python environment; install specdojo_routine with its "
            "dependencies (pip install -e . in its clone) and run the command again"] == (
        done.stderr.splitlines())


def test_a_planted_link_in_the_evidence_folder_costs_the_evidence_not_the_outcome(
    project: Project, tmp_path: Path,
) -> None:
    """A link at the run's evidence folder pointing out of the project: the command runs and
    its outcome is recorded, the reason says the evidence was not written and why, and nothing
    is written where the link points (SPEC §7.5)."""
    project.job("job-x", SLOW_FILL.replace("cat /dev/zero > execution/fill 2>/dev/null || true; ",
                                           ""))
    args = ("job", "run", "--job", "job-x", "--input", "period=W1", "--json")
    run_id = orjson.loads(project.cli(*args[:-1], "--dry-run", "--json").stdout)["run_id"]
    outside = tmp_path / "outside"
    outside.mkdir()
    evidence = project.root / "execution" / "exec" / "evidence"
    evidence.mkdir(parents=True)
    (evidence / run_id).symlink_to(outside)
    done = project.cli(*args)
    assert (0, "succeeded") == (done.returncode, orjson.loads(done.stdout)["state"]), done.stderr
    [ended] = [e for e in map(orjson.loads, (project.root / "execution" / "jobs" / "runs" /
                                             f"{run_id}.jsonl").read_bytes().splitlines())
               if e["type"] == "attempt_ended"]
    assert "evidence not written" in ended["reason"] and "symbolic link" in ended["reason"]
    assert (None, []) == (ended.get("evidence_ref"), os.listdir(outside))


def test_inodes_used_up_are_named_as_such_not_as_a_full_disk(project: Project) -> None:
    """ENOSPC while bytes are still free (every inode used, which `df -h` does not show):
    the one line says there are no free inodes and points at `df -i`, not "free some
    space"."""
    target = project.root / "execution"
    target.mkdir()
    with tmpfs_at(target, "size=1m,nr_inodes=16"):
        for n in range(64):  # use up every inode (some are the root's)
            try:
                (target / f"f{n}").write_bytes(b"")
            except OSError:
                break
        project.job("job-x", SLOW_FILL.replace("cat /dev/zero > execution/fill", "true"))
        done = project.cli("job", "run", "--job", "job-x", "--input", "period=W1")
    assert 1 == done.returncode, done.stdout + done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("error: ") and "No space left on device" in line, line
    assert "no free inodes on that file system (df -i)" in line and str(target) in line
    assert "free some space" not in line


def test_a_first_append_on_a_full_disk_leaves_no_empty_ledger(
    project: Project, small_tmpfs: Path,
) -> None:
    """The disk is full (an inode is free, no byte): the first append raises ENOSPC and no
    0-byte ledger is left behind (it would list as a Job Run that was never recorded); once
    space is back the same handle creates and writes it."""
    from specdojo_routine.core import routine_events as rev
    from specdojo_routine.store.ledger import journal as ledger

    path = small_tmpfs / "jobs" / "runs" / "JBR-x.jsonl"
    path.parent.mkdir(parents=True)
    subprocess.run(f"cat /dev/zero > {small_tmpfs / 'fill'}", shell=True, check=False,
                   capture_output=True)
    log = ledger.Ledger(path)
    event = rev.RoutineRegistered(routine_id="rtn-a", digest="0" * 64, path="a.yaml")
    with pytest.raises(OSError) as raised:
        log.append(event)
    assert (28, []) == (raised.value.errno, sorted(p.name for p in path.parent.iterdir()))
    (small_tmpfs / "fill").unlink()
    assert 1 == log.append(event)
    assert 1 == len(path.read_bytes().splitlines())


def test_a_job_run_whose_plan_or_creation_cannot_be_written_leaves_nothing(
    project: Project, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The plan is written before `run_created` is appended: a plan that cannot be written
    (ENOSPC) records nothing, and a `run_created` the ledger refuses takes its plan back -
    never a run left `running` with no attempt and not interrupted. One `error:` line, exit
    1, and the next `job run` (space back) creates the run as usual."""
    from specdojo_routine.execute import jobfiles
    from specdojo_routine.store.ledger import journal

    project.job("job-x", SLOW_FILL.replace("cat /dev/zero > execution/fill", "true"))
    args = ("job", "run", "--job", "job-x", "--input", "period=W1")
    full = OSError(28, os.strerror(28), str(project.root / "execution" / "x"))

    def no_space(*_args: object, **_kw: object) -> None:
        raise full

    for where, name in ((jobfiles, "write_plan"), (journal.Ledger, "append_many")):
        with monkeypatch.context() as patched:
            patched.setattr(where, name, no_space)
            done = project.cli(*args)
        [line] = done.stderr.splitlines()
        assert (1, True) == (done.returncode, line.startswith("error: ")), done.stderr
        runs = project.root / "execution" / "jobs" / "runs"
        plans = project.root / "execution" / "exec" / "plans"
        left = [p.name for d in (runs, plans) if d.is_dir() for p in d.iterdir()]
        assert [] == left, name
        assert "JBR-" not in project.cli("job", "list").stdout
    done = project.cli(*args)
    assert 0 == done.returncode, done.stderr


def test_a_stop_that_lands_after_run_created_is_written_keeps_the_runs_plan(
    project: Project, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only the disk's refusal takes a new run's plan back: a stop (SIGTERM) that lands
    during the append, after the line is written, leaves the recorded run with its plan."""
    import signal

    from specdojo_routine.execute import stop
    from specdojo_routine.store.ledger import journal

    project.job("job-x", SLOW_FILL.replace("cat /dev/zero > execution/fill", "true"))
    written = journal.Ledger.append_many

    def then_stopped(self: journal.Ledger, events: object) -> list[int]:
        written(self, events)  # type: ignore[arg-type]
        raise stop.Stopped(signal.SIGTERM)

    monkeypatch.setattr(journal.Ledger, "append_many", then_stopped)
    done = project.cli("job", "run", "--job", "job-x", "--input", "period=W1")
    monkeypatch.undo()
    assert 0 != done.returncode
    [ledger] = (project.root / "execution" / "jobs" / "runs").glob("JBR-*.jsonl")
    assert b'"run_created"' in ledger.read_bytes()
    plan = project.root / "execution" / "exec" / "plans" / f"{ledger.stem}-plan.md"
    assert plan.is_file()
