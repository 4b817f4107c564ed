"""Git for review before merge (SPEC §11.3, §11.4): preflight, branch and worktree, commit,
merge, cleanup. Edge module: every function runs ``git`` and raises :class:`GitError` with one
line saying what failed; the decisions are :mod:`specdojo_routine.core.review_rules`'.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from specdojo_routine.core.errors import JobError
from specdojo_routine.core.review_rules import parse_porcelain
from specdojo_routine.execute import runner

GIT_TIMEOUT_S = 120.0
_IDENTITY = ("-c", "user.name=specdojo_routine", "-c", "user.email=specdojo-routine@localhost")


class GitError(JobError):
    """A git step of the review flow failed (the message is one line)."""


@attrs.frozen(kw_only=True, repr=False)
class Git:
    root: Path
    env: Mapping[str, str]

    def run(self, *args: str, cwd: Path | None = None, check: bool = True,
            what: str = "") -> subprocess.CompletedProcess[str]:
        try:
            done = subprocess.run(["git", *args], cwd=cwd or self.root, text=True,
                                  capture_output=True, env=runner.child_env(self.env, {}),
                                  stdin=subprocess.DEVNULL, timeout=GIT_TIMEOUT_S, check=False)
        except FileNotFoundError:
            raise GitError("git is not installed (the review flow needs git)") from None
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise GitError(f"git {args[0]} failed: {exc}") from None
        if check and done.returncode != 0:
            raise GitError(f"{what or 'git ' + args[0]}: {_last_line(done)}")
        return done

    def out(self, *args: str, cwd: Path | None = None, what: str = "") -> str:
        return self.run(*args, cwd=cwd, what=what).stdout.strip()

    def identity(self) -> tuple[str, ...]:
        """``-c user.*`` when the repository has no identity configured (commits need one)."""
        has = self.run("config", "user.email", check=False).stdout.strip()
        return () if has else _IDENTITY


@attrs.frozen(kw_only=True, repr=False)
class Integration:
    branch: str  # the branch checked out at the root
    head: str


def preflight(git: Git, exclude: Sequence[Path]) -> Integration:
    """The root is a git checkout on a branch with no tracked changes (outside ``exclude``:
    the project's own ledger and state directories)."""
    inside = git.run("rev-parse", "--show-toplevel", check=False)
    if inside.returncode != 0:
        raise GitError(f"{git.root} is not inside a git repository (the review flow needs one)")
    branch = git.run("symbolic-ref", "--quiet", "--short", "HEAD", check=False)
    if branch.returncode != 0:
        raise GitError(f"the checkout at {git.root} is detached; check out the integration "
                       "branch first")
    head = git.out("rev-parse", "--verify", "HEAD", what="no commit at HEAD")
    specs = [f":(exclude){path}" for path in exclude if _inside(path, git.root)]
    dirty = git.out("status", "--porcelain", "--untracked-files=no", "--", ".", *specs)
    if dirty:
        first = dirty.splitlines()[0].strip()
        raise GitError(f"the checkout at {git.root} has uncommitted changes ({first} ...); "
                       "commit or stash them first")
    return Integration(branch=branch.stdout.strip(), head=head)


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def branch_exists(git: Git, branch: str) -> bool:
    return git.run("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}",
                   check=False).returncode == 0


def create(git: Git, branch: str, path: Path, base: str, *, keep_suffix: str) -> None:
    """A fresh ``branch`` at ``base`` checked out at ``path``; a previous attempt's branch and
    worktree are kept, renamed with ``keep_suffix`` (``-attempt-<n>``): nothing is lost.

    The worktree base is shared by sibling clones (``../worktrees`` by default) and two clones
    of a project give a Job Run the same id, so a directory by either name may be another
    repository's: then nothing is done and the attempt fails saying so (git would refuse to
    move it, and would move this repository's worktree *into* a directory by the kept name).
    A previous worktree deleted by hand is still registered with git, which would refuse the
    path to every later attempt: its registration is pruned (its branch is kept as above).
    """
    if os.path.lexists(path):
        kept = path.with_name(path.name + keep_suffix)
        if os.path.islink(path) or os.path.realpath(path) not in _known(git):
            raise GitError(_not_ours(git, path))
        if os.path.lexists(kept):
            raise GitError(f"cannot keep the previous worktree: {_not_ours(git, kept)}")
        git.run("worktree", "move", str(path), str(kept),
                what=f"cannot keep the previous worktree {path}")
    elif os.path.realpath(path) in _known(git):
        git.run("worktree", "prune", what="cannot prune the deleted previous worktree")
    if branch_exists(git, branch):
        git.run("branch", "-m", branch, branch + keep_suffix,
                what="cannot keep the previous branch")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GitError(f"cannot create the worktree base {path.parent}: {exc.strerror}; make it "
                       "a writable directory or set run.worktree_base in this project's config"
                       ) from None
    added = git.run("worktree", "add", "-b", branch, str(path), base, check=False)
    if added.returncode != 0:  # git may have created the branch first: never leave it alone
        git.run("branch", "-D", branch, check=False)  # (git keeps one a worktree checked out)
        raise GitError(f"cannot create the worktree {path}: {_last_line(added)}")


def _last_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = (done.stderr.strip() or done.stdout.strip()).splitlines()
    return lines[-1] if lines else "failed"


def _known(git: Git) -> set[str]:
    """The worktrees this repository knows (real paths)."""
    listed = git.run("worktree", "list", "--porcelain", "-z",
                     what="cannot list the worktrees").stdout
    return {os.path.realpath(field.removeprefix("worktree "))
            for field in listed.split("\0") if field.startswith("worktree ")}


def common_git_dir(where: Path, env: Mapping[str, str], *,
                   ceiling: Path | None = None) -> str | None:
    """The repository that ``where`` is in (the real path of its common git directory, which
    a main checkout and its worktrees share), looked for no higher than ``ceiling``; None when
    there is none, or git cannot tell. A directory named like one of our worktrees in a
    worktree base that sibling clones share may be another clone's: this tells them apart."""
    if not os.path.isdir(where):
        return None
    extra = {} if ceiling is None else {"GIT_CEILING_DIRECTORIES": str(ceiling)}
    try:
        done = subprocess.run(["git", "rev-parse", "--path-format=absolute", "--git-common-dir"],
                              cwd=where, env=runner.child_env(env, extra), capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, timeout=GIT_TIMEOUT_S,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return os.path.realpath(done.stdout.strip()) if done.returncode == 0 else None


def _not_ours(git: Git, path: Path) -> str:
    """Why ``path`` is not this repository's to use, and what to do (one line)."""
    if os.path.islink(path):
        return (f"{path} is a symbolic link, where the run's worktree goes: remove it (a "
                "worktree is never made or moved through a link)")
    theirs = common_git_dir(path, git.env, ceiling=path.parent)
    if theirs is not None and theirs != common_git_dir(git.root, git.env):
        return (f"{path} is a worktree of another repository ({theirs}), a clone sharing this "
                "worktree base: set run.worktree_base in this project's config to a directory "
                "of its own")
    return (f"{path} is in the way (not a worktree of this repository that can be kept): "
            "move it away, or set run.worktree_base in this project's config to a directory "
            "of its own")


def changed_files(git: Git, worktree: Path) -> list[str]:
    output = git.run("status", "--porcelain=v1", "-z", "--untracked-files=all",
                     cwd=worktree).stdout
    return parse_porcelain(output)


def head(git: Git, cwd: Path) -> str:
    return git.out("rev-parse", "HEAD", cwd=cwd)


def commit(git: Git, worktree: Path, files: Sequence[str], subject: str, body: str) -> str:
    """Commit exactly ``files`` (added, changed or deleted) on the worktree's branch."""
    git.run("add", "-A", "--", *files, cwd=worktree, what="cannot stage the run's changes")
    git.run(*git.identity(), "commit", "--quiet", "--no-verify", "-m", subject, "-m", body,
            cwd=worktree, what="cannot commit the run's changes")
    return head(git, worktree)


def merge(git: Git, branch: str, message: str, *,
          into: str) -> tuple[str | None, str | None]:
    """``git merge --no-ff`` into ``into``, the integration branch checked out at the root
    when the run began: (merge commit, None) or (None, reason). A root moved to another branch
    or detached meanwhile is not merged into (the work would land elsewhere, and a detached
    merge would leave it on no branch once the exec branch is removed). A failed merge is
    aborted so the integration branch is untouched."""
    now = git.run("symbolic-ref", "--quiet", "--short", "HEAD", check=False).stdout.strip()
    if now != into:
        return None, (f"not merged: the checkout at {git.root} is no longer on {into} (now "
                      f"{now or 'a detached HEAD'}); check out {into}, then merge the kept "
                      "branch by hand or run the Job again")
    before = head(git, git.root)
    done = git.run(*git.identity(), "merge", "--no-ff", "--no-edit", "-m", message, branch,
                   check=False)
    if done.returncode == 0:
        return head(git, git.root), None
    git.run("merge", "--abort", check=False)  # never leave anything half-merged behind
    if head(git, git.root) != before:
        raise GitError(f"the integration branch moved during a failed merge of {branch}")
    return None, merge_failure(done.stdout + "\n" + done.stderr)


def merge_failure(output: str) -> str:
    """Why ``git merge`` failed, in one line: the conflict, or git's own ``error:`` with the
    files it names and its advice (an untracked file or a local change in the root's checkout
    in the way), rather than its closing ``Merge with strategy ort failed.``"""
    lines = [line.rstrip() for line in output.splitlines() if line.strip()]
    conflict = next((line for line in lines if "CONFLICT" in line), None)
    if conflict is not None:
        return f"merge conflict: {conflict.strip()}"
    start = next((i for i, line in enumerate(lines) if line.startswith("error: ")), None)
    if start is None:
        return f"merge failed: {lines[-1].strip() if lines else 'git merge failed'}"
    said = [lines[start].removeprefix("error: ").strip()]
    files = [line.strip() for line in lines[start + 1:] if line[:1] in ("\t", " ")]
    advice = next((line.strip() for line in lines[start + 1:] if line.startswith("Please ")),
                  None)
    shown = ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
    return "merge failed: " + " ".join(
        x for x in (said[0] + (f" {shown}." if shown else ""), advice) if x)


def remove(git: Git, worktree: Path, branch: str) -> None:
    git.run("worktree", "remove", "--force", str(worktree),
            what=f"cannot remove the worktree {worktree}")
    git.run("branch", "-D", branch, what=f"cannot delete the exec branch {branch}")
