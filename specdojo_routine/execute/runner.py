"""Subprocesses (edge): Job commands and delegated SpecDojo CLI calls (SPEC §7.3).

Every command runs in its own process group with stdin closed, and its group leader is killed
when the runner dies (``PR_SET_PDEATHSIG``; the caller records the group id, so a retry can see
whether anything of it still runs); stdout and stderr are captured
(the first 4 MiB of each) and streamed live, line by line and redacted, to an optional ``echo``
stream. When the command ends, or its timeout expires, the whole group is terminated (SIGTERM,
then SIGKILL after 2 s, or the caller's ``kill_grace_s`` on a timeout), and with it every
process that carries the command's mark in its environment (a daemon that forked twice and
left the group), so no background child outlives its Job. An operator's stop (SIGINT or
SIGTERM to the runner, :mod:`.stop`) terminates the group the same way with a 10 s grace, and
the outcome says ``stopped by SIG…``; once a stop is requested no command starts. How the
group is watched and terminated is :mod:`.termination`.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import re
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Literal, TextIO

import attrs

from specdojo_routine.core.redact import secret_values
from specdojo_routine.core.redact_stream import LineRedactor
from specdojo_routine.execute import proctree, stop, termination
from specdojo_routine.execute.echo import (  # re-exported: runner.<name> keeps working
    CAPTURE_LIMIT_BYTES as CAPTURE_LIMIT_BYTES,
)
from specdojo_routine.execute.echo import (
    ECHO_HOLD as ECHO_HOLD,
)
from specdojo_routine.execute.echo import (
    ECHO_LINE_LIMIT as ECHO_LINE_LIMIT,
)
from specdojo_routine.execute.echo import (
    ECHO_WITHHOLD_LIMIT as ECHO_WITHHOLD_LIMIT,
)
from specdojo_routine.execute.echo import Stream
from specdojo_routine.execute.prefix import specdojo_prefix as specdojo_prefix
from specdojo_routine.execute.termination import KILL_GRACE_S, KILL_POLL_S

SHELL = ("/bin/sh", "-eu", "-c")
DRAIN_GRACE_S = 2.0  # reading on after the group is gone (a detached process holding the pipe)
_POLL_S = 0.05  # without a pidfd, how often to look for the command's exit
#: The longest single wait for output: the poll takes at most ~24.8 days (2**31 - 1 ms), and a
#: timeout validate accepts may be longer; the loop waits again until the deadline.
_LONGEST_WAIT_S = 3600.0

# `git rev-parse --local-env-vars`: they would point a nested git at the caller's repository.
GIT_LOCAL_ENV = frozenset(
    {
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_CONFIG",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_OBJECT_DIRECTORY",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_IMPLICIT_WORK_TREE",
        "GIT_GRAFT_FILE",
        "GIT_INDEX_FILE",
        "GIT_NO_REPLACE_OBJECTS",
        "GIT_REPLACE_REF_BASE",
        "GIT_PREFIX",
        "GIT_INTERNAL_SUPER_PREFIX",
        "GIT_SHALLOW_FILE",
        "GIT_COMMON_DIR",
    }
)
_GIT_CONFIG_ENTRY = re.compile(r"GIT_CONFIG_(?:KEY|VALUE)_[0-9]+")


_PR_SET_PDEATHSIG = 1


def _load_prctl() -> Callable[..., int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        prctl: Callable[..., int] = libc.prctl
        return prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()  # resolved before any fork: the child only calls it


def _die_with_parent(parent: int) -> Callable[[], None]:
    """A ``preexec_fn``: the command (its group leader) gets SIGKILL when the runner dies
    (Linux ``PR_SET_PDEATHSIG``), also when the runner died before the call took effect."""

    def arm() -> None:
        if _PRCTL is not None:
            _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)

    return arm


@attrs.frozen(kw_only=True, repr=False)
class CommandOutcome:
    """What one command did. ``error`` is set exactly when ``exit_code`` is ``None``."""

    exit_code: int | None  # None: could not start, or killed by the timeout; 128+N for signal N
    stdout: str  # captured text (first 4 MiB), NOT redacted: the caller redacts
    stderr: str
    started_at: datetime
    completed_at: datetime
    duration_s: float
    timed_out: bool = False
    error: str | None = None  # e.g. "executable not found: specdojo", "timed out after 5s",
    # "stopped by SIGTERM" (an operator's stop: the group was terminated, :mod:`.stop`)
    stdout_truncated: bool = False  # more than 4 MiB was written; the head is kept
    stderr_truncated: bool = False


def child_env(base: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """``base`` without git's repository-local variables, plus ``extra``."""
    env = {
        name: value
        for name, value in base.items()
        if name not in GIT_LOCAL_ENV and not _GIT_CONFIG_ENTRY.fullmatch(name)
    }
    env.update(extra)
    return env


def run_shell(
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float | None = None,
    echo: TextIO | None = None,
    on_start: Callable[[int], None] | None = None,
    kill_grace_s: float = KILL_GRACE_S,
) -> CommandOutcome:
    """Run ``/bin/sh -eu -c command`` in ``cwd`` (see the module docstring); ``on_start``
    is given the command's process group id as soon as it runs; ``kill_grace_s`` as for
    :func:`run_argv`."""
    return _run([*SHELL, command], cwd=cwd, env=env, timeout_s=timeout_s, echo=echo,
                on_start=on_start, kill_grace_s=kill_grace_s)


def run_argv(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float | None = None,
    echo: TextIO | None = None,
    on_start: Callable[[int], None] | None = None,
    kill_grace_s: float = KILL_GRACE_S,
) -> CommandOutcome:
    """Run ``argv`` without a shell; a missing executable is an outcome, not an exception;
    ``on_start`` as for :func:`run_shell`; ``kill_grace_s``: how long the group has between
    SIGTERM and SIGKILL when the timeout expires."""
    return _run(list(argv), cwd=cwd, env=env, timeout_s=timeout_s, echo=echo,
                on_start=on_start, kill_grace_s=kill_grace_s)


def executable_unusable(error: str, executable: str) -> bool:
    """Whether ``error`` (a :class:`CommandOutcome`'s) says ``executable`` itself could not be
    started: not found, or not executable."""
    return error in (f"executable not found: {executable}", f"permission denied: {executable}")


#: Start failures that say this machine or process is short of something, not that the
#: command is wrong: what to do about each (no definition needs fixing).
_LIMITS = {
    errno.EMFILE: "this process has too many open files: raise its limit (ulimit -n)",
    errno.ENFILE: "the system has too many open files: close programs or raise fs.file-max",
    errno.ENOMEM: "the system is out of memory: free memory",
    errno.EAGAIN: "the process or memory limit is reached: raise ulimit -u or free memory",
}

#: The words every such start error carries (:func:`environment_limit` looks for them).
_LIMIT_WORDS = "an environment limit, not the command"


def environment_limit(error: str | None) -> bool:
    """Whether ``error`` (a :class:`CommandOutcome`'s) says the command could not start for
    lack of file descriptors, processes or memory: advice to fix the command would mislead."""
    return error is not None and f"({_LIMIT_WORDS}: " in error


def _start_error(exc: Exception, argv: Sequence[str], cwd: Path) -> str:
    if not argv:
        return "empty command"
    if not isinstance(exc, OSError):
        return f"could not start {argv[0]}: {exc}"
    if exc.filename is not None and os.fspath(exc.filename) == os.fspath(cwd):
        return f"working directory not found: {cwd}"
    if isinstance(exc, FileNotFoundError):
        return f"executable not found: {argv[0]}"
    if isinstance(exc, PermissionError):
        return f"permission denied: {argv[0]}"
    limit = _LIMITS.get(exc.errno or 0)
    if limit is not None:
        return (f"could not start {argv[0]}: {exc.strerror or exc} ({_LIMIT_WORDS}: "
                f"{limit}, then run it again)")
    return f"could not start {argv[0]}: {exc.strerror or exc}"


def _run(
    argv: list[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float | None,
    echo: TextIO | None,
    on_start: Callable[[int], None] | None = None,
    kill_grace_s: float = KILL_GRACE_S,
) -> CommandOutcome:
    """Run one command to its end; a stop arriving meanwhile ends it in order (its outcome
    is returned inside a deferred section, :mod:`.stop`; raised as ``Stopped`` outside)."""
    with stop.deferred():
        return _run_deferred(argv, cwd=cwd, env=env, timeout_s=timeout_s, echo=echo,
                             on_start=on_start, kill_grace_s=kill_grace_s)


def _run_deferred(
    argv: list[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float | None,
    echo: TextIO | None,
    on_start: Callable[[int], None] | None,
    kill_grace_s: float = KILL_GRACE_S,
) -> CommandOutcome:
    """:func:`_run` inside its deferred section: start the command unless a stop came first,
    read its output until its group is gone, then say how it ended."""
    started_at, t0 = datetime.now(UTC), time.monotonic()
    if stop.requested() is not None:  # a stop starts nothing more
        return _not_started(started_at, t0, stop.reason() or "stopped")
    mark = termination.new_mark()
    proc = _spawn(argv, cwd, {**env, termination.MARK: mark})
    if isinstance(proc, str):
        return _not_started(started_at, t0, proc)
    assert proc.stdout is not None and proc.stderr is not None
    if on_start is not None:
        with contextlib.suppress(OSError):  # recording the group is best effort (full disk)
            on_start(proc.pid)
    secrets = secret_values(env)
    streams = {pipe: Stream(echo, LineRedactor(secrets)) for pipe in (proc.stdout, proc.stderr)}
    try:
        ending = _pump(proc, streams, timeout_s, kill_grace_s, mark)
    except BaseException:  # e.g. Ctrl-C: the command's own group does not get the signal
        termination.kill_now(proc, mark)
        raise
    for pipe, stream in streams.items():
        pipe.close()
        stream.close()
    return _finished(proc.wait(), streams[proc.stdout], streams[proc.stderr], started_at, t0,
                     ending, timeout_s)


def _spawn(argv: list[str], cwd: Path, env: Mapping[str, str]) -> subprocess.Popen[bytes] | str:
    """The command started in a process group of its own, stdin closed, both outputs piped
    and its leader dying with the runner; or why it could not start."""
    try:
        return subprocess.Popen(
            argv,
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=_die_with_parent(os.getpid()),
        )
    except (OSError, ValueError, IndexError) as exc:  # ValueError: a NUL; IndexError: no argv
        return _start_error(exc, argv, cwd)
    except subprocess.SubprocessError as exc:  # the preexec hook failed
        return f"could not start {argv[0]}: {exc}"


def _not_started(started_at: datetime, t0: float, error: str) -> CommandOutcome:
    return CommandOutcome(
        exit_code=None,
        stdout="",
        stderr="",
        started_at=started_at,
        completed_at=datetime.now(UTC),
        duration_s=time.monotonic() - t0,
        error=error,
    )


def _finished(
    returncode: int,
    out: Stream,
    err: Stream,
    started_at: datetime,
    t0: float,
    ending: _Ending,
    timeout_s: float | None,
) -> CommandOutcome:
    (stdout, stdout_cut), (stderr, stderr_cut) = out.text(), err.text()
    error = {None: None, "timeout": f"timed out after {timeout_s or 0:g}s",
             "stopped": stop.reason()}[ending]
    if ending == "stopped":
        stop.tell("command", "the command that was running was ended")
    return CommandOutcome(
        exit_code=None if ending else returncode if returncode >= 0 else 128 - returncode,
        stdout=stdout,
        stderr=stderr,
        started_at=started_at,
        completed_at=datetime.now(UTC),
        duration_s=time.monotonic() - t0,
        timed_out=ending == "timeout",
        error=error,
        stdout_truncated=stdout_cut,
        stderr_truncated=stderr_cut,
    )


_Ending = Literal[None, "timeout", "stopped"]


def _pump(
    proc: subprocess.Popen[bytes], streams: Mapping[IO[bytes], Stream], timeout_s: float | None,
    kill_grace_s: float = KILL_GRACE_S, mark: str | None = None,
) -> _Ending:
    """Read both pipes until the command and its process group are gone; how we ended it:
    None (it ended itself), "timeout", or "stopped" (an operator's stop, :mod:`.stop`).
    ``mark``: the value of :data:`.termination.MARK` its processes carry."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    killer: termination.GroupKiller | None = None
    ending: _Ending = None
    wake_fd = stop.wakeup_fd()
    with selectors.DefaultSelector() as selector, termination.exit_fd(proc.pid) as exit_fd:
        _watch(selector, [*streams, exit_fd, wake_fd])
        open_pipes, watching_exit = len(streams), exit_fd is not None
        while True:
            now, exited = time.monotonic(), termination.exited(proc.pid)
            ending, killer = _begin_ending(proc.pid, ending, killer, exited, now, deadline,
                                           kill_grace_s, mark)
            if (
                killer is not None
                and killer.step(now, exited)
                and (not open_pipes or now >= killer.done_at + DRAIN_GRACE_S)
            ):
                return ending
            for key, _ in selector.select(_wait_s(now, deadline, killer, watching_exit)):
                if key.fileobj == exit_fd:  # the command exited: the next round notices
                    selector.unregister(exit_fd)
                    watching_exit = False
                    continue
                if key.fileobj == wake_fd:  # a stop: the next round starts terminating
                    stop.drain()
                    continue
                data = os.read(key.fd, 65536)
                if data:
                    streams[key.fileobj].feed(data)  # type: ignore[index]
                else:
                    selector.unregister(key.fileobj)
                    open_pipes -= 1


def _watch(selector: selectors.BaseSelector, sources: Iterable[IO[bytes] | int | None]) -> None:
    """Register each source (a pipe or a file descriptor; None: there is none) for reading."""
    for source in sources:
        if source is not None:
            selector.register(source, selectors.EVENT_READ)


def _begin_ending(
    pid: int, ending: _Ending, killer: termination.GroupKiller | None, exited: bool,
    now: float, deadline: float | None, kill_grace_s: float, mark: str | None = None,
) -> tuple[_Ending, termination.GroupKiller | None]:
    """The ending and the killer of the command's group, started once the command exited,
    its deadline passed or a stop was asked (a second stop drops the grace); else as they
    were."""
    if killer is None:
        if not exited and stop.requested() is not None:
            return "stopped", termination.GroupKiller(pid, grace_s=stop.GRACE_S, mark=mark)
        if exited or (deadline is not None and now >= deadline):
            ending = None if exited else "timeout"
            return ending, termination.GroupKiller(
                pid, grace_s=kill_grace_s if ending else KILL_GRACE_S, mark=mark)
    elif ending == "stopped" and stop.count() > 1:
        killer.hurry()  # a second stop: no more grace
    return ending, killer


def _wait_s(
    now: float, deadline: float | None, killer: termination.GroupKiller | None, watching_exit: bool
) -> float | None:
    """How long to wait for output: no polling while the exit itself is an event."""
    if killer is not None:  # soon at first (most groups end at once), then at a gentler pace
        early = killer.term_at is None or now < killer.term_at + 1.0
        return KILL_POLL_S if early else _POLL_S
    if not watching_exit:
        return _POLL_S
    return None if deadline is None else min(max(0.0, deadline - now), _LONGEST_WAIT_S)


def group_alive(pgid: int) -> bool:
    """Whether a live (non-zombie) process is in group ``pgid`` on this host."""
    return pgid > 1 and proctree.group_alive(pgid)


