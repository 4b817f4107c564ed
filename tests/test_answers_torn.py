"""The read-only answers over a ledger whose last line is torn (SPEC §5 "Damage"): they write
nothing and answer as before, and say once, on stderr, which ledger is torn and what repairs it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import Project

NOW = ("--now", "2026-08-07T08:02:00Z")


def _torn_line(ledger: Path) -> str:
    """Tear ``ledger`` as a crash mid-append does; the warning it should get."""
    line = len(ledger.read_bytes().splitlines()) + 1
    with ledger.open("ab") as f:
        f.write(b'{"version":1,"seq":')
    return (f"warning: {ledger}:{line}: last line is torn (a crash mid-write); `fold --repair` "
            "or the next command that appends to this ledger moves it aside (this answer "
            "leaves it out)")


@pytest.fixture
def torn(project: Project, tmp_path: Path) -> Project:
    """A project with one routine run and one Job Run, both ledgers intact."""
    project.routine("rtn-a", "interval: 1h\naction: {kind: specdojo, args: [ok]}\n")
    project.job("job-a", 'name: A\ntask: {mode: command, command: "echo hi"}\n'
                         'run: {idempotency_key: "{{job_id}}"}\n')
    assert 0 == project.cli("run", "--id", "rtn-a", *NOW).returncode
    assert 0 == project.cli("job", "run", "--job", "job-a").returncode
    return project


def _run_id(project: Project) -> str:
    runs = orjson.loads(project.cli("job", "list", "--json").stdout)["runs"]
    return str(runs[0]["run_id"])


def _routine_answers(report: Path) -> list[list[str]]:
    return [["list", *NOW], ["list", "--json", *NOW], ["status", *NOW],
            ["status", "--json", *NOW], ["status", "rtn-a", *NOW],
            ["status", "rtn-a", "--json", *NOW], ["history"], ["history", "--json"],
            ["history", "--attempts"], ["history", "rtn-a", "--attempts", "--json"],
            ["logs", "rtn-a"], ["logs", "rtn-a", "--json"], ["next", *NOW],
            ["next", "--json", *NOW], ["next", "rtn-a", *NOW], ["next", "rtn-a", "--json", *NOW],
            ["report", "--html", str(report), *NOW]]


def test_answers_over_a_torn_routine_ledger_say_so_once_and_write_nothing(
    torn: Project, tmp_path: Path,
) -> None:
    """Every read-only answer about routines still answers exactly as before the tear (same
    stdout, same exit code, nothing written) and adds one stderr line naming the torn routine
    ledger, what tore it and what repairs it; `--json` stays one document."""
    asked = _routine_answers(tmp_path / "report.html")
    before = [torn.cli(*args) for args in asked]
    warning = _torn_line(torn.ledger)
    _answer_as_before(torn, asked, before, warning)


def test_job_answers_over_a_torn_job_run_ledger_say_so_once_and_write_nothing(
    torn: Project,
) -> None:
    """`job list`, `job show` and `job logs` over a Job Run ledger whose last line is torn
    answer as before and name that ledger once on stderr; a torn routine ledger, which they do
    not read, is not theirs to mention."""
    run_id = _run_id(torn)
    asked = [["job", "list"], ["job", "list", "--json"], ["job", "show", run_id],
             ["job", "show", run_id, "--json"], ["job", "logs", run_id],
             ["job", "logs", run_id, "--json"]]
    before = [torn.cli(*args) for args in asked]
    warning = _torn_line(torn.root / "execution" / "jobs" / "runs" / f"{run_id}.jsonl")
    _torn_line(torn.ledger)
    _answer_as_before(torn, asked, before, warning)


def _answer_as_before(torn: Project, asked: list[list[str]], before: list[Any],
                      warning: str) -> None:
    """Each command of ``asked`` answers now as it did in ``before`` (stdout, exit code), adds
    ``warning`` and no other line about the tear on stderr, and writes nothing."""
    files = torn.files()
    after = [torn.cli(*args) for args in asked]
    assert files == torn.files()
    for args, was, now in zip(asked, before, after, strict=True):
        assert (was.returncode, was.stdout, [warning]) == (
            now.returncode, now.stdout, [x for x in now.stderr.splitlines() if "torn" in x]), (
            args, now.stderr)


@pytest.mark.parametrize("check", [["--check"], []])
@pytest.mark.parametrize("which", ["routine", "run"])
def test_fold_json_over_a_damaged_ledger_is_one_document_naming_it(
    torn: Project, check: list[str], which: str,
) -> None:
    """`fold --json` (with `--check` or without) over a ledger whose last line is torn, or
    damaged elsewhere, printed only the `error:` line and no JSON, where its other outcomes
    are a document. It prints one document naming the ledger, the line and the message, with
    `drifted` and `conflicts` null (the fold stopped there, so they are not known) and the
    exit code of the text form; the text form is unchanged, and `--check` writes nothing."""
    ledger = (torn.ledger if which == "routine" else
              torn.root / "execution" / "jobs" / "runs" / f"{_run_id(torn)}.jsonl")
    rel = str(ledger.relative_to(torn.root))
    original = ledger.read_bytes()
    for damage, is_torn in ((b'{"version":1,"seq":', True), (b"{}\n", False)):
        ledger.write_bytes(original + damage)
        line = len(original.splitlines()) + 1
        files = torn.files()
        text = torn.cli("fold", *check)
        done = torn.cli("fold", *check, "--json")
        assert not check or files == torn.files()
        assert ("", 1) == (text.stdout, text.returncode), text.stderr
        (error,) = text.stderr.splitlines()
        assert error.startswith(f"error: {ledger}:{line}: ")
        assert (1, "") == (done.returncode, done.stderr), done.stdout
        assert {"check": bool(check), "drifted": None, "repaired": [], "conflicts": None,
                "damaged": {"path": rel, "line": line, "torn": is_torn,
                            "message": error.removeprefix("error: ")}} == \
            orjson.loads(done.stdout)


def _snapshot(project: Project) -> tuple[bytes, int, int] | None:
    path = project.root / "routines" / ".cache" / "routine-state.snapshot.json"
    if not path.exists():
        return None
    st = path.stat()
    return path.read_bytes(), st.st_mtime_ns, st.st_ino


@pytest.mark.parametrize("snapshot", ["kept", "deleted"])
def test_fold_refusing_a_torn_tail_leaves_the_snapshot_untouched(
    torn: Project, snapshot: str,
) -> None:
    """A plain ``fold`` refuses a routine ledger whose last line is torn (exit 1, pointing at
    ``--repair``) and leaves no new state behind: the private snapshot under ``R/.cache/``
    keeps its bytes and mtime (or stays absent), and the view its bytes; ``fold --repair``
    then writes a snapshot again."""
    path = torn.root / "routines" / ".cache" / "routine-state.snapshot.json"
    if snapshot == "deleted":
        path.unlink()
    _torn_line(torn.ledger)
    before, view = _snapshot(torn), torn.state_path.read_bytes()
    for _ in range(2):
        done = torn.cli("fold")
        assert (1, True) == (done.returncode, "--repair" in done.stderr), done.stderr
        assert (before, view) == (_snapshot(torn), torn.state_path.read_bytes())
    assert 0 == torn.cli("fold", "--repair").returncode
    assert _snapshot(torn) not in (None, before)
