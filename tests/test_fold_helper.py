"""The fold helper (store/foldhelper.py): a second process folds the second half of a long
routine ledger while this one folds the first. Real processes, real file descriptors: the
fold is the fold in one piece whatever the helper does (joins, fails, dies, answers garbage,
is killed, reads a file that is edited meanwhile); errors are reported as in one piece; no
helper outlives the fold."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from specdojo_routine.core import events as ev
from specdojo_routine.core import fold_parts
from specdojo_routine.core.errors import CorruptLedgerError, InvalidTransition
from specdojo_routine.store import foldhelper, ledger, proven
from tests.conftest import children

OWNER = ev.Owner(pid=7, host="h")
T = "2026-08-07T08:00:00.000Z"


def _history(routines: int, rounds: int, held: set[int] = frozenset()) -> Iterator[ev.Event]:
    """Rounds of attempts (start, action, end) of every routine; routine n fails under
    ``on_failure: hold`` in round 1 when n is in ``held``, and stays held (an occurrence held
    every round, and one backfill at five eighths) until the last quarter, when it is
    released. Interval routines: the start of a cron attempt reads the cursor before it (it
    never moves back), so a helper cannot speculate past one."""
    state = {n: "never" for n in range(routines)}
    label = {"never": "T-02", "success": "T-06", "failure": "T-07", "skipped": "T-08"}
    for n in range(routines):
        yield ev.RoutineRegistered(routine_id=f"rtn-{n:03d}", digest=f"{n:064d}",
                                   path=f"routines/rtn-{n:03d}.yaml")
    for r in range(rounds):
        for n in range(routines):
            rid, aid = f"rtn-{n:03d}", f"att-{r:05d}-{n:03d}"
            backfill = n in held and r == rounds * 5 // 8
            if n in held and 1 < r < rounds * 3 // 4 and not backfill:
                yield ev.OccurrenceHeld(routine_id=rid, scheduled_for=T, reason="held",
                                        passed_over_since=None, schedule="interval")
                continue
            if n in held and r == rounds * 3 // 4:
                yield ev.RoutineReleased(routine_id=rid, run="none", note=None,
                                         released_by="ops")
            result = "failure" if n in held and r == 1 else ("success", "skipped")[(r + n) % 2]
            yield ev.AttemptStarted(routine_id=rid, attempt_id=aid,
                                    transition=label[state[n]],  # type: ignore[arg-type]
                                    trigger="backfill" if backfill else "due",
                                    scheduled_for=T,
                                    last_run="2026-08-07T08:00:03Z", passed_over_since=None,
                                    owner=OWNER, schedule="interval",
                                    on_failure="hold" if n in held else None)
            yield ev.ActionEnded(routine_id=rid, attempt_id=aid, index=1, kind="job",
                                 result=result)  # type: ignore[arg-type]
            yield ev.AttemptEnded(routine_id=rid, attempt_id=aid,
                                  transition=ev.RESULT_TRANSITIONS[result],  # type: ignore[arg-type]
                                  result=result, reason=None,  # type: ignore[arg-type]
                                  action_results=None, scheduled_for=T,
                                  started_at="2026-08-07T08:00:03Z",
                                  completed_at="2026-08-07T08:00:09Z", job_run_ids=[])
            state[n] = result


def _ledger(tmp_path: Path, held: set[int] = frozenset(), name: str = "a") -> Path:
    path = tmp_path / name / "routine-runs.jsonl"
    path.parent.mkdir()
    ledger.Ledger(path).append_many(_history(30, 40, held))
    return path


@pytest.fixture(autouse=True)
def helped(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every fold in these tests starts the helper (cut at the middle); the list records what
    came of each: ``no answer`` (the helper gave none to trust), ``joined`` or ``refused``."""
    monkeypatch.setattr(foldhelper, "MIN_BYTES", 0)
    monkeypatch.setattr(foldhelper, "_START_BYTES", 0)
    outcomes: list[str] = []
    join, part = fold_parts.join, foldhelper.Helper.part

    def answered(self: foldhelper.Helper) -> Any:
        found = part(self)
        if found is None:
            outcomes.append("no answer")
        return found

    def joined(*args: Any, **kwargs: Any) -> bool:
        made: bool = join(*args, **kwargs)
        outcomes.append("joined" if made else "refused")
        return made

    monkeypatch.setattr(foldhelper.Helper, "part", answered)
    monkeypatch.setattr(fold_parts, "join", joined)
    return outcomes


def _alone(path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The fold in one piece: the reference."""
    with monkeypatch.context() as m:
        m.setattr(foldhelper, "MIN_BYTES", 1 << 62)
        return proven.from_scratch(path).document()


def _edit(path: Path, line: int) -> None:
    """One digit of line ``line`` changed in place (same length)."""
    lines = path.read_bytes().split(b"\n")
    at = sum(len(x) + 1 for x in lines[:line - 1]) + lines[line - 1].index(b'"seq":') + 6
    with path.open("r+b") as f:
        f.seek(at + len(str(line)) - 1)
        f.write(b"9" if str(line)[-1] != "9" else b"8")


def test_the_helper_folds_the_second_half_and_the_view_is_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, helped: list[str]
) -> None:
    """The helper's part is joined, and the document is byte for byte the fold in one piece."""
    path = _ledger(tmp_path)
    expected = _alone(path, monkeypatch)
    assert expected == proven.from_scratch(path).document()
    assert ["joined"] == helped
    assert [] == children(os.getpid())


def test_a_routine_held_across_the_cut_is_folded_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, helped: list[str]
) -> None:
    """Two routines held where the second part anchors them (a backfill while held): the
    helper assumed them free, so its speculation fails (it sees an occurrence held after the
    backfill) and this process folds the second half itself, to the same document."""
    path = _ledger(tmp_path, held={3, 17})
    expected = _alone(path, monkeypatch)
    assert expected == proven.from_scratch(path).document()
    assert ["no answer"] == helped


@pytest.mark.parametrize("where", ["first half", "at the cut", "second half"])
def test_a_changed_line_is_reported_as_in_one_piece(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    path = _ledger(tmp_path)
    lines = path.read_bytes().count(b"\n")
    with path.open("rb") as f:
        cut = foldhelper._cut(f.fileno(), 0, path.stat().st_size)
    assert cut is not None
    at_cut = path.read_bytes()[:cut].count(b"\n") + 1
    line = {"first half": lines // 4, "at the cut": at_cut, "second half": lines * 3 // 4}[where]
    _edit(path, line)
    with pytest.raises(CorruptLedgerError) as alone:
        _alone(path, monkeypatch)
    with pytest.raises(CorruptLedgerError) as helped:
        proven.from_scratch(path)
    assert str(alone.value) == str(helped.value)
    assert [] == children(os.getpid())


def test_an_illegal_event_in_the_second_half_is_reported_as_in_one_piece(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _ledger(tmp_path)
    ledger.Ledger(path).append(ev.RoutineReleased(routine_id="rtn-004", run="none", note=None,
                                                  released_by="ops"))
    with pytest.raises(InvalidTransition) as alone:
        _alone(path, monkeypatch)
    with pytest.raises(InvalidTransition) as helped:
        proven.from_scratch(path)
    assert str(alone.value) == str(helped.value)


@pytest.mark.parametrize("script", [
    "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",  # killed
    "import sys; sys.exit(3)",  # fails
    "import sys; sys.stdout.buffer.write(b'not a pickle')",  # garbage
    "import pickle, sys; sys.stdout.buffer.write(pickle.dumps({'seq': 1}))",  # not a Part
    foldhelper._SCRIPT + "; import os; os._exit(1)",  # a whole answer, then a failed exit
])
def test_a_faulty_helper_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, helped: list[str], script: str
) -> None:
    path = _ledger(tmp_path)
    expected = _alone(path, monkeypatch)
    monkeypatch.setattr(foldhelper, "_SCRIPT", script)
    assert expected == proven.from_scratch(path).document()
    assert ["no answer"] == helped
    assert [] == children(os.getpid())


def test_a_python_that_cannot_start_leaves_it_all_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, helped: list[str]
) -> None:
    path = _ledger(tmp_path)
    expected = _alone(path, monkeypatch)
    monkeypatch.setattr(foldhelper.sys, "executable", str(tmp_path / "no-such-python"))
    assert expected == proven.from_scratch(path).document()
    assert [] == helped  # no helper at all


def test_an_edit_after_the_helper_read_the_file_is_still_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, helped: list[str]
) -> None:
    """The helper folds the second half and exits; then a line of it is edited in place,
    before this process takes the answer: the answer is of bytes the file no longer holds,
    so this process folds the second half itself and finds the edit."""
    path = _ledger(tmp_path)
    line = path.read_bytes().count(b"\n") * 3 // 4
    part = foldhelper.Helper.part

    def edited_first(self: foldhelper.Helper) -> Any:
        self._child.wait()
        _edit(path, line)
        return part(self)

    monkeypatch.setattr(foldhelper.Helper, "part", edited_first)
    with pytest.raises(CorruptLedgerError) as info:
        proven.from_scratch(path)
    assert line == info.value.line  # it no longer hashes to the next line's prev
    assert ["no answer"] == helped


def test_an_interrupted_fold_leaves_no_helper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """^C while this process folds the first half: the helper is killed and reaped."""
    path = _ledger(tmp_path)
    apply_all, calls = proven.apply_all, [0]

    def interrupted(*args: Any, **kwargs: Any) -> None:
        calls[0] += 1
        if calls[0] == 3:
            assert children(os.getpid())  # the helper is running
            raise KeyboardInterrupt
        apply_all(*args, **kwargs)

    monkeypatch.setattr(proven, "apply_all", interrupted)
    with pytest.raises(KeyboardInterrupt):
        proven.from_scratch(path)
    assert [] == children(os.getpid())


def test_the_helper_reads_its_own_description_of_the_same_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, helped: list[str]
) -> None:
    """The ledger is replaced under its name once the fold has opened it: both halves are
    still the opened file's (the helper is handed the open file, not the name)."""
    path = _ledger(tmp_path)
    expected = _alone(path, monkeypatch)
    other = _ledger(tmp_path, held={1, 2, 3}, name="b")
    start = foldhelper._start

    def replaced_then_started(fd: int, offset: int, end: int) -> Any:
        os.replace(other, path)
        return start(fd, offset, end)

    monkeypatch.setattr(foldhelper, "_start", replaced_then_started)
    assert expected == proven.from_scratch(path).document()
    assert ["joined"] == helped


def _upstream_line(rid: str, result: str) -> bytes:
    """A line the upstream CLI appends to the routine ledger: no type, no seq (SPEC §10)."""
    return orjson.dumps({"version": 1, "routine_id": rid, "scheduled_for": T,
                         "started_at": "2026-08-07T08:00:05Z", "completed_at":
                         "2026-08-07T08:00:09Z", "result": result, "job_run_ids": []}) + b"\n"


@pytest.mark.parametrize("where", ["in the second half", "at the cut"])
def test_upstream_lines_in_the_second_half_fold_as_in_one_piece(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, helped: list[str], where: str
) -> None:
    """Upstream run records between our lines (SPEC §10 rule 2) are folded with the line
    number as seq. Inside the helper's half it numbers them itself; one that begins the half
    gives it no seq to start from, and this process folds that half."""
    path = tmp_path / "a" / "routine-runs.jsonl"
    path.parent.mkdir()
    events = list(_history(30, 40))
    ledger.Ledger(path).append_many(events[:len(events) * 2 // 3])
    at, state = path.stat().st_size, _alone(path, monkeypatch)["routines"]
    with path.open("ab") as f:  # each records the result the routine has there (a legal line)
        for rid in ("rtn-004", "rtn-017"):
            status = state[rid]["status"]
            f.write(_upstream_line(rid, status if status != "running" else "success"))
    ledger.Ledger(path).append_many(events[len(events) * 2 // 3:])
    if where == "at the cut":
        monkeypatch.setattr(foldhelper, "_cut", lambda fd, offset, end: at)
    expected = _alone(path, monkeypatch)
    assert expected == proven.from_scratch(path).document()
    assert (["joined"] if where == "in the second half" else ["no answer"]) == helped
    assert 2 == sum(1 for line in path.read_bytes().splitlines() if b'"type"' not in line)


def test_a_torn_last_line_is_left_out_as_in_one_piece(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, helped: list[str]
) -> None:
    """A crash mid-append left a fragment (SPEC §5): the helper's half ends before it, the
    view is the one in one piece, and the torn line is reported."""
    path = _ledger(tmp_path)
    with path.open("ab") as f:
        f.write(b'{"version":1,"seq":')
    expected = _alone(path, monkeypatch)
    found = proven.from_scratch(path)
    assert (expected, path.read_bytes().count(b"\n") + 1) == (found.document(),
                                                               found.tail.torn_line)
    assert ["joined"] == helped


def test_a_short_range_starts_no_helper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(foldhelper, "MIN_BYTES", 8 << 20)
    path = _ledger(tmp_path)
    started: list[object] = []
    monkeypatch.setattr(foldhelper, "_start", lambda *a: started.append(a))
    assert path.read_bytes().count(b"\n") == proven.from_scratch(path).state.seq
    assert [] == started


def test_a_helper_writes_no_bytecode_where_this_process_may_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python -B` (or PYTHONDONTWRITEBYTECODE) folding with a helper: the helper, started
    with -I, which ignores the environment, is told too; a copy of the package gains no
    __pycache__."""
    import shutil
    import subprocess
    import sys

    package = tmp_path / "src" / "specdojo_routine"
    shutil.copytree(Path(foldhelper.__file__).parents[1], package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    path = _ledger(tmp_path)
    script = ("import sys; from specdojo_routine.store import foldhelper, proven; "
              "foldhelper.MIN_BYTES = foldhelper._START_BYTES = 0; "
              "helper = foldhelper._start; started = []; "
              "foldhelper._start = lambda *a: started.append(helper(*a)) or started[-1]; "
              "print(proven.from_scratch(sys.argv[1]).state.seq, len(started), "
              "foldhelper.__file__)")
    done = subprocess.run([sys.executable, "-B", "-c", script, str(path)], cwd=tmp_path,
                          env=os.environ | {"PYTHONPATH": str(package.parent)},
                          capture_output=True, text=True, check=True)
    lines = path.read_bytes().count(b"\n")
    # folded, with a helper, by the copy
    assert f"{lines} 1 {package / 'store' / 'foldhelper.py'}" == done.stdout.strip()
    assert [] == sorted(package.rglob("__pycache__"))
