"""The forked helper of long loads (store/forked.py): real fork, real pipe, real SIGKILL.

A helper can only save time: every way it can fail leaves its part to this process, and a
definitions load with a helper gives exactly what it gives without one.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from specdojo_routine.store import definitions, forked
from specdojo_routine.store.config import resolve_project
from tests.conftest import cli_environ, copy_source
from tests.test_validate_corpus import CASES, INVALID, VALID, make_project

REPO = Path(__file__).resolve().parent.parent
ITEMS = list(range(2 * forked.MIN_ITEMS))


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The pids of the children forked during the test (as this process saw them)."""
    made: list[int] = []
    real = os.fork

    def spy() -> int:
        pid = real()
        if pid:
            made.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", spy)
    yield made


def squares(part: Sequence[int]) -> list[int]:
    return [n * n for n in part]


def in_child(parent: int, act: Callable[[], object]) -> Callable[[Sequence[int]], list[int]]:
    """``squares``, but the child does ``act`` first."""
    def work(part: Sequence[int]) -> list[int]:
        if os.getpid() != parent:
            act()
        return squares(part)

    return work


def expected() -> tuple[list[int], list[int]]:
    cut = round(len(ITEMS) * forked.HERE)
    return squares(ITEMS[:cut]), squares(ITEMS[cut:])


def test_the_rest_is_done_by_a_forked_child(forks: list[int]) -> None:
    parent = os.getpid()
    pids: list[int] = []

    def work(part: Sequence[int]) -> list[int]:
        pids.append(os.getpid())  # the child's append is lost with it
        return squares(part) if os.getpid() == parent else [os.getpid(), *squares(part)]

    with forked.allowed():
        here, there = forked.in_two(work, ITEMS)
    assert (here, there[1:]) == expected()
    assert (len(forks), [there[0]], pids) == (1, forks, [parent])


@pytest.mark.parametrize("failure", ["killed", "raises", "half an answer", "not a pickle"])
def test_a_child_that_fails_leaves_its_part_here(
    failure: str, forks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    parent, real_write = os.getpid(), os.write

    def fail() -> None:
        if failure == "killed":
            os.kill(os.getpid(), signal.SIGKILL)
        if failure == "raises":
            raise RuntimeError("boom")
        if failure == "half an answer":  # exits 0, having written half
            def half(fd: int, data: bytes) -> int:
                real_write(fd, bytes(data)[:len(data) // 2])
                return len(data)

            monkeypatch.setattr(os, "write", half)
        if failure == "not a pickle":  # a whole answer, of garbage
            monkeypatch.setattr("pickle.dumps", lambda obj, protocol: b"\x00not a pickle")

    with forked.allowed():
        assert forked.in_two(in_child(parent, fail), ITEMS) == expected()
    assert len(forks) == 1


def test_the_child_is_killed_and_reaped_when_this_part_fails(forks: list[int]) -> None:
    parent = os.getpid()

    def work(part: Sequence[int]) -> list[int]:
        if os.getpid() == parent:
            raise KeyboardInterrupt
        signal.pause()  # the child would wait forever
        return []

    with forked.allowed(), pytest.raises(KeyboardInterrupt):
        forked.in_two(work, ITEMS)
    with pytest.raises(ChildProcessError):  # already reaped: no zombie, no orphan
        os.waitpid(forks[0], os.WNOHANG)


def test_no_fork_unless_allowed_alone_and_long(forks: list[int]) -> None:
    """Not outside `allowed()` (a program importing the package), not with another thread
    running, not for a short list; the result is the same."""
    whole = (squares(ITEMS), [])
    assert forked.in_two(squares, ITEMS) == whole
    with forked.allowed():
        assert forked.in_two(squares, ITEMS[:forked.MIN_ITEMS - 1]) == (
            squares(ITEMS[:forked.MIN_ITEMS - 1]), [])
        stop = threading.Event()
        other = threading.Thread(target=stop.wait)
        other.start()
        try:
            assert forked.in_two(squares, ITEMS) == whole
        finally:
            stop.set()
            other.join()
    assert forks == []


# --- a definitions load with and without the helper -------------------------------------------


def big_project(root: Path, count: int = 1200) -> Path:
    """The valid fixture, generated routines, and every invalid case twice - once sorted
    before the generated files (the part done here), once after (the helper's part) - so that
    every message, and duplicate ids across the two parts, come from both."""
    make_project(root, VALID)
    for case in CASES:
        for side in ("a", "z"):
            if (INVALID / case / "routines").is_dir():
                copy_source(INVALID / case / "routines", root / "routines" / side / case)
        if (INVALID / case / "jobs").is_dir():
            copy_source(INVALID / case / "jobs", root / "jobs" / case)
    for n in range(count):
        trigger = (f'cron: "{n % 60} {n % 24} * * *"\n  timezone: Asia/Tokyo' if n % 2
                   else f"interval: {n % 9 + 1}h")
        (root / "routines" / "m" / f"rtn-gen-{n:04d}.yaml").parent.mkdir(
            parents=True, exist_ok=True)
        (root / "routines" / "m" / f"rtn-gen-{n:04d}.yaml").write_text(
            f"id: rtn-gen-{n:04d}\nname: Généré {n}\ntrigger:\n  {trigger}\n"
            "action:\n  kind: specdojo\n  args: [index, build]\n"
            if n % 2 else
            f"id: rtn-gen-{n:04d}\nname: Generated {n}\n{trigger}\n"
            "action: {kind: specdojo, args: [index, build]}\n")
    return root


def test_a_load_with_the_helper_is_the_load_without_it(tmp_path: Path, forks: list[int]) -> None:
    """Same routines, problems (every message of the corpus, from both parts) and cache, cold
    and then warm (after the cache was written)."""
    paths = resolve_project(big_project(tmp_path / "p"), env={})
    cache = paths.routines_dir / ".cache" / "definitions.json"
    results = []
    for warm in (False, True):
        for helper in (False, True):
            if not warm:
                cache.unlink(missing_ok=True)
            with forked.allowed() if helper else contextlib.nullcontext():
                defs = definitions.load_definitions(paths)
            assert defs.cache is not None
            results.append((defs, [str(p) for p in defs.problems], defs.cache.records()))
            if not warm:
                assert definitions.remember(defs)
                results[-1] += (cache.read_bytes(),)
    (cold, cold_forked, warm, warm_forked) = results
    assert len(forks) == 2
    assert len(cold[0].routines) > forked.MIN_ITEMS
    for side in ("routines/a/", "routines/z/"):  # problems from both parts, duplicates too
        assert any(m.startswith(side) for m in cold[1])
        assert any(m.startswith(side) and "duplicate routine id" in m for m in cold[1])
    assert cold == cold_forked
    assert [list(r) for r in cold[2]] == [list(r) for r in cold_forked[2]]  # key order too
    assert warm[:2] == warm_forked[:2] == cold[:2]


def test_the_cli_dry_run_and_validate_say_the_same_with_and_without_the_helper(
    tmp_path: Path,
) -> None:
    """The real CLI, in a fresh process, with a helper and with none (`list` forks only when
    its lock reader thread has ended before the load: the same either way)."""
    root = big_project(tmp_path / "p")
    probe = ("import os, sys; from specdojo_routine.store import forked; "
             "forked.MIN_ITEMS = int(sys.argv[2]); real, made = os.fork, []; "
             "os.fork = lambda: made.append(1) or real(); "
             "from specdojo_routine.cli import main; code = main(sys.argv[3:]); "
             "open(sys.argv[1], 'a').write(f'{len(made)}\\n'); sys.exit(code)")
    env = cli_environ()
    forks = tmp_path / "forks"
    for args in (["run", "--due", "--dry-run", "--now", "2026-08-07T08:02:00Z"], ["validate"],
                 ["list", "--json", "--now", "2026-08-07T08:02:00Z"]):
        said = [subprocess.run([sys.executable, "-c", probe, str(forks), minimum, *args,
                                "--root", str(root)], cwd=REPO, env=env, capture_output=True,
                               text=True, timeout=120, check=False)
                for minimum in ("1", str(10**9))]
        assert (said[0].returncode, said[0].stdout, said[0].stderr) == (
            said[1].returncode, said[1].stdout, said[1].stderr)
        assert said[0].stdout + said[0].stderr
    assert forks.read_text().split()[:4] == ["1", "0", "1", "0"]
