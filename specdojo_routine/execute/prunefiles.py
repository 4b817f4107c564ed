"""The files retention removes (SPEC §15): which exist, what they weigh, removing them.

Two kinds of owner have files around their record:

- a Job Run: its evidence directory ``exec/evidence/<run_id>/``, its plan and result documents
  (``exec/plans/<run_id>-plan.md``, ``-review-plan.md``, ``-analysis-plan.md``;
  ``exec/results/<run_id>-result.md``, ``-review-result.md``) and the review worktrees kept
  for it (``<worktree_base>/<run_id>`` and ``…-attempt-<n>``);
- a routine attempt: the evidence of its delegated actions,
  ``exec/evidence/routines/<attempt_id>/`` (whose attempt it is, and whether it ended, the
  routine ledger says: nothing in the folder is taken on its word).

Each kind is a pair of small functions here (which owners have files, which files an owner
has); the rule that decides and the record that comes first are elsewhere. A kept worktree is
removed with ``git worktree remove --force`` (its branch stays: the commits are not lost),
within the caller's deadline if it has one; a directory that git does not know as a worktree
(or no longer does: a removal stopped half way) is removed as a directory; a worktree of
another repository by the run's name is left alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import stat
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from specdojo_routine.core.event_parts import RUN_ID
from specdojo_routine.execute import runner
from specdojo_routine.execute.worktree import GIT_TIMEOUT_S, common_git_dir
from specdojo_routine.store.config import ProjectPaths, read_regular

__all__ = ["REMOVAL_MARKER", "ROUTINE_EVIDENCE", "attempt_files", "attempts_with_files",
           "mark_removal", "recorded_run_files", "removal_marked", "remove", "run_files",
           "runs_with_files", "size", "stamp", "unmark_removal"]

PLAN_SUFFIXES = ("-plan.md", "-review-plan.md", "-analysis-plan.md")
RESULT_SUFFIXES = ("-result.md", "-review-result.md")
ROUTINE_EVIDENCE = "routines"  # exec/evidence/routines/<attempt_id>/action-<n>/
#: Written into an attempt's evidence directory before its removal is recorded (it holds where
#: the routine ledger ended then): a removal begun and never recorded is undone by the next
#: prune; whether the record was appended, the routine ledger itself says.
REMOVAL_MARKER = ".prune.json"
_KEPT = re.compile(r"(?P<run>.+)-attempt-\d+")
_ATTEMPT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _names(directory: Path) -> list[str]:
    try:
        return [entry.name for entry in os.scandir(directory)]
    except (FileNotFoundError, NotADirectoryError):
        return []


# --- Job Runs ----------------------------------------------------------------------------------


def runs_with_files(paths: ProjectPaths) -> set[str]:
    """Every run id that has an evidence directory, a plan or result document or a kept
    worktree (only the names are listed: nothing is opened)."""
    found = {n for n in _names(paths.evidence_dir) if n != ROUTINE_EVIDENCE}
    for directory, suffixes in ((paths.plans_dir, PLAN_SUFFIXES),
                                (paths.results_dir, RESULT_SUFFIXES)):
        for name in _names(directory):
            found.update(name[: -len(s)] for s in suffixes if name.endswith(s))
    for name in _names(paths.worktrees):
        kept = _KEPT.fullmatch(name)
        found.update([name, kept["run"]] if kept else [name])
    return {n for n in found if RUN_ID.fullmatch(n)}


def run_files(paths: ProjectPaths, run_id: str, env: Mapping[str, str]) -> list[Path]:
    """The files and directories around ``run_id`` that exist now. A worktree by the run's
    name that git finds in another repository than the project's is not among them: the
    default worktree base (``../worktrees``) is shared by sibling clones, and two clones of a
    project give a Job Run the same id. One git finds in no repository is the project's (a
    worktree git has forgotten)."""
    files, worktrees = _run_names(paths, run_id)
    worktrees = [p for p in worktrees if os.path.lexists(p)]
    ours = common_git_dir(paths.root, env) if worktrees else None
    return [p for p in files if os.path.lexists(p)] + [
        p for p in worktrees
        if common_git_dir(p, env, ceiling=paths.worktrees) in (None, ours)]


def recorded_run_files(paths: ProjectPaths, run_id: str, recorded: Iterable[str]) -> list[Path]:
    """The recorded paths (root-relative, as ``evidence_pruned`` names them) that are among
    the run's own file names and still exist. A ledger line is evidence, not a fact: a path
    it names outside the run's evidence, plan, result and worktree names (``..``, an absolute
    path, another run's files) is never removed on its word."""
    files, worktrees = _run_names(paths, run_id)
    own = {paths.rel(p): p for p in (*files, *worktrees)}
    return [own[p] for p in dict.fromkeys(recorded) if p in own and os.path.lexists(own[p])]


def _run_names(paths: ProjectPaths, run_id: str) -> tuple[list[Path], list[Path]]:
    """The names a run's files may have: evidence, plans and results; kept worktrees (those
    by the run's name, and the ``-attempt-<n>`` ones listed now)."""
    if not RUN_ID.fullmatch(run_id):
        raise ValueError(f"not a Job Run id: {run_id!r}")
    files = [paths.evidence_dir / run_id,
             *(paths.plans_dir / f"{run_id}{s}" for s in PLAN_SUFFIXES),
             *(paths.results_dir / f"{run_id}{s}" for s in RESULT_SUFFIXES)]
    kept = re.compile(re.escape(run_id) + r"-attempt-\d+")
    return files, [paths.worktrees / run_id, *sorted(
        paths.worktrees / n for n in _names(paths.worktrees) if kept.fullmatch(n))]



# --- routine attempts --------------------------------------------------------------------------


def attempts_with_files(paths: ProjectPaths) -> set[str]:
    """Every routine attempt id that has an evidence directory. The runner makes each as a
    directory: a symlink by an attempt's name is not one of ours, and is neither read nor
    written through (it could name a directory anywhere) nor removed."""
    try:
        entries = list(os.scandir(paths.evidence_dir / ROUTINE_EVIDENCE))
    except (FileNotFoundError, NotADirectoryError):
        return set()
    return {entry.name for entry in entries
            if _ATTEMPT_ID.fullmatch(entry.name) and not entry.is_symlink()}


def attempt_files(paths: ProjectPaths, attempt_id: str) -> list[Path]:
    """The evidence directory of a routine attempt, if it exists."""
    if not _ATTEMPT_ID.fullmatch(attempt_id):
        raise ValueError(f"not an attempt id: {attempt_id!r}")
    found = paths.evidence_dir / ROUTINE_EVIDENCE / attempt_id
    return [found] if os.path.lexists(found) else []


def removal_marked(paths: ProjectPaths, attempt_id: str) -> bool:
    """Whether the marker is there: a regular file (a symlink by its name is not ours)."""
    try:
        found = os.lstat(paths.evidence_dir / ROUTINE_EVIDENCE / attempt_id / REMOVAL_MARKER)
    except OSError:
        return False
    return stat.S_ISREG(found.st_mode)


def mark_removal(paths: ProjectPaths, attempt_id: str, offset: int, seq: int) -> None:
    """Write the marker (durably: it must be there before the record is appended). Whatever
    else holds its name goes first and the marker is created afresh: a symlink there is not
    followed (its target, perhaps outside the project, is not written) and a FIFO is not
    opened (that would wait for a reader for ever)."""
    target = paths.evidence_dir / ROUTINE_EVIDENCE / attempt_id / REMOVAL_MARKER
    with contextlib.suppress(FileNotFoundError):
        target.unlink()
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o644)
    try:
        os.write(fd, orjson.dumps({"offset": offset, "seq": seq}))
        os.fsync(fd)
    finally:
        os.close(fd)


def unmark_removal(paths: ProjectPaths, attempt_id: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        (paths.evidence_dir / ROUTINE_EVIDENCE / attempt_id / REMOVAL_MARKER).unlink()


def _json(path: Path) -> Any:
    """The JSON document in the regular file ``path``, else None: a symlink is not followed
    and a FIFO or device is not read (it could block for ever, or never end)."""
    try:
        return orjson.loads(read_regular(path, follow=False))
    except (OSError, orjson.JSONDecodeError):  # NotRegularFile is an OSError
        return None


# --- any owner ---------------------------------------------------------------------------------


def stamp(files: Iterable[Path]) -> str:
    """One short digest of the identity, size and change times of ``files`` (a missing one
    counts as missing): what a cache of facts read from them is keyed by."""
    facts: list[Any] = []
    for path in files:
        try:
            st = os.stat(path)
        except OSError:
            facts.append(None)
            continue
        facts.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return hashlib.sha256(orjson.dumps(facts)).hexdigest()[:20]


def size(files: Iterable[Path]) -> int:
    """The bytes of every regular file at or under ``files`` (links are not followed)."""
    total = 0
    for path in files:
        if path.is_dir() and not path.is_symlink():
            for folder, _dirs, names in os.walk(path):
                total += sum(_file_size(Path(folder, name)) for name in names)
        else:
            total += _file_size(path)
    return total


def _file_size(path: Path) -> int:
    try:
        st = os.lstat(path)
    except OSError:
        return 0
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


def remove(paths: ProjectPaths, files: Iterable[Path], env: Mapping[str, str], *,
           deadline: float | None = None) -> list[Path]:
    """Remove each path (a file, a directory, a kept worktree); one already gone is fine.
    ``deadline`` (a :func:`time.monotonic` instant) bounds the git that removes a worktree:
    the worktrees git had not finished removing by then are returned, left for the next
    prune (which finishes one left half removed); the others are all removed."""
    left = []
    for path in files:
        if not os.path.lexists(path):
            continue
        if not path.is_dir() or path.is_symlink():
            path.unlink()
            continue
        if path.parent == paths.worktrees \
                and not _remove_worktree(paths, path, env, deadline) and os.path.lexists(path):
            left.append(path)
            continue
        if os.path.lexists(path):
            _rmtree_marker_last(path)
    return left


def _rmtree_marker_last(path: Path) -> None:
    """Remove a directory, its removal marker (if any) last: a folder a crash left half
    removed still says its removal was begun. (What finishes it is the routine ledger's
    record of the removal: a crash after the marker went, before the folder did, leaves an
    empty folder the next prune removes without a second record.)"""
    marker = path / REMOVAL_MARKER
    for name in _names(path):
        child = path / name
        if name == REMOVAL_MARKER:
            continue
        if child.is_dir() and not child.is_symlink():
            _rmtree(child)
        else:
            child.unlink(missing_ok=True)
    marker.unlink(missing_ok=True)
    path.rmdir()


def _rmtree(path: Path) -> None:
    """``shutil.rmtree``, its errors naming the whole path: its safe walk removes by
    directory descriptor, so its own error names only ``evidence.json``, which says nothing
    of where (on a read-only or full disk, the file the operator must look at)."""
    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=lambda _f, at, exc: _named(at, exc))
    else:
        shutil.rmtree(path, onerror=lambda _f, at, info: _named(at, info[1]))


def _named(path: str, exc: BaseException) -> None:
    if isinstance(exc, OSError):
        raise OSError(exc.errno, exc.strerror, path) from None
    raise exc


def _remove_worktree(paths: ProjectPaths, path: Path, env: Mapping[str, str],
                     deadline: float | None) -> bool:
    """``git worktree remove --force`` (then ``git worktree prune`` for what git still
    remembers of a directory removed by hand, or emptied by a git stopped half way); a failing
    git leaves the directory to rmtree. False when ``deadline`` came first: git (its whole
    process group: a hook's children too) is killed, and what it left is for the next prune.
    Without a deadline each git has a bound of its own, then the directory goes by rmtree."""
    for args in (["worktree", "remove", "--force", str(path)], ["worktree", "prune"]):
        limit = GIT_TIMEOUT_S if deadline is None else \
            min(GIT_TIMEOUT_S, deadline - time.monotonic())
        if limit <= 0:
            return False
        done = runner.run_argv(["git", *args], cwd=paths.root, env=runner.child_env(env, {}),
                               timeout_s=limit, kill_grace_s=0)
        if done.timed_out and deadline is not None:
            return False
    return True
