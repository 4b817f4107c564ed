"""The command runner: shell semantics, process groups, timeouts, capture and echo (SPEC §7.3)."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import signal
import time
from collections.abc import Mapping
from pathlib import Path

import pytest

from specdojo_routine.core.errors import ConfigError
from specdojo_routine.execute import runner
from specdojo_routine.execute.runner import (
    CAPTURE_LIMIT_BYTES,
    GIT_LOCAL_ENV,
    child_env,
    run_argv,
    run_shell,
    specdojo_prefix,
)

ENV: Mapping[str, str] = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8"}


def _state(pid: int) -> str | None:
    """The /proc state letter of ``pid`` (None when it no longer exists)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rpartition(b")")[2].split()[0].decode()
    except OSError:
        return None


def _group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes whose process group is ``pgid``."""
    members = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as handle:
                    fields = handle.read().rpartition(b")")[2].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
                members.append(int(name))
    return members


@pytest.mark.parametrize("code", [0, 1, 3, 75, 255])
def test_exit_code_passes_through(code: int, tmp_path: Path) -> None:
    """The shell's exit code is the outcome's exit code."""
    assert code == run_shell(f"exit {code}", cwd=tmp_path, env=ENV).exit_code


def test_stdout_and_stderr_are_captured_separately(tmp_path: Path) -> None:
    """stdout and stderr are captured as two texts."""
    outcome = run_shell("echo out; echo err >&2", cwd=tmp_path, env=ENV)
    assert ("out\n", "err\n") == (outcome.stdout, outcome.stderr)


def test_runs_in_cwd(tmp_path: Path) -> None:
    """The command runs in the given working directory."""
    assert f"{tmp_path}\n" == run_shell("pwd -P", cwd=tmp_path, env=ENV).stdout


def test_stdin_is_closed(tmp_path: Path) -> None:
    """A command reading stdin gets EOF at once instead of hanging."""
    outcome = run_shell("cat; read line || echo eof", cwd=tmp_path, env=ENV, timeout_s=10)
    assert (0, "eof\n", False) == (outcome.exit_code, outcome.stdout, outcome.timed_out)


def test_unset_variable_fails(tmp_path: Path) -> None:
    """-u: expanding an unset variable fails the command before the next step."""
    outcome = run_shell("echo $NOT_SET_ANYWHERE; echo after", cwd=tmp_path, env=ENV)
    assert (2, "") == (outcome.exit_code, outcome.stdout)


def test_failing_step_stops_the_command(tmp_path: Path) -> None:
    """-e: a failing simple command ends the script with its status."""
    outcome = run_shell("false; echo after", cwd=tmp_path, env=ENV)
    assert (1, "") == (outcome.exit_code, outcome.stdout)


def test_timestamps_are_utc_and_ordered(tmp_path: Path) -> None:
    """started_at <= completed_at, both aware UTC, and duration_s is measured."""
    outcome = run_shell("sleep 0.1", cwd=tmp_path, env=ENV)
    assert (True, True, True) == (
        outcome.started_at <= outcome.completed_at,
        outcome.started_at.utcoffset() is not None and not outcome.started_at.utcoffset(),
        0.1 <= outcome.duration_s < 5,
    )


def test_environment_has_extras_and_no_git_dir(tmp_path: Path) -> None:
    """child_env drops git-local variables and adds the extras the command sees."""
    base = {**ENV, "GIT_DIR": "/elsewhere/.git", "GIT_CONFIG_KEY_0": "x", "KEEP": "1"}
    env = child_env(base, {"SPECDOJO_JOB_RUN_ID": "JBR-a-1", "SPECDOJO_ROUTINE_EXEC": "1"})
    outcome = run_shell("env", cwd=tmp_path, env=env)
    seen = dict(line.split("=", 1) for line in outcome.stdout.splitlines())
    assert ("JBR-a-1", "1", "1", None, None) == (
        seen.get("SPECDOJO_JOB_RUN_ID"),
        seen.get("SPECDOJO_ROUTINE_EXEC"),
        seen.get("KEEP"),
        seen.get("GIT_DIR"),
        seen.get("GIT_CONFIG_KEY_0"),
    )


def test_child_env_removes_every_git_local_variable() -> None:
    """Every variable of `git rev-parse --local-env-vars` is removed; extras win."""
    base = {name: "x" for name in GIT_LOCAL_ENV} | {"GIT_AUTHOR_NAME": "a", "HOME": "/h"}
    assert {"GIT_AUTHOR_NAME": "a", "HOME": "/other"} == child_env(base, {"HOME": "/other"})


class _Recorder(io.StringIO):
    """An echo stream that creates a file once it has seen a given line."""

    def __init__(self, trigger: str, flag: Path) -> None:
        super().__init__()
        self.trigger, self.flag = trigger, flag

    def write(self, text: str) -> int:
        if text == self.trigger:
            self.flag.touch()
        return super().write(text)


def test_output_is_streamed_live_to_echo(tmp_path: Path) -> None:
    """echo receives a line while the command is still running (it waits for that)."""
    flag = tmp_path / "seen"
    echo = _Recorder("first\n", flag)
    command = "echo first; i=0; while [ ! -e seen ]; do i=$((i+1)); sleep 0.01; done; echo second"
    outcome = run_shell(command, cwd=tmp_path, env=ENV, timeout_s=10, echo=echo)
    assert (0, "first\nsecond\n") == (outcome.exit_code, echo.getvalue())


def test_echo_is_redacted_but_capture_is_not(tmp_path: Path) -> None:
    """Echoed lines are redacted (env secrets too); the captured text is left to the caller."""
    env = {**ENV, "MY_API_TOKEN": "tok-live-123456"}
    echo = io.StringIO()
    outcome = run_shell(
        "echo $MY_API_TOKEN; echo password=abc >&2", cwd=tmp_path, env=env, echo=echo
    )
    assert ("[REDACTED]\npassword=[REDACTED]\n", "tok-live-123456\n") == (
        "".join(sorted(echo.getvalue().splitlines(keepends=True))),
        outcome.stdout,
    )


def test_echo_gets_a_last_line_without_newline(tmp_path: Path) -> None:
    """A final partial line is echoed when the command ends."""
    echo = io.StringIO()
    run_shell("printf 'a\\nb'", cwd=tmp_path, env=ENV, echo=echo)
    assert "a\nb" == echo.getvalue()


def test_runs_in_its_own_process_group(tmp_path: Path) -> None:
    """The shell leads a new process group (so the group can be killed as a whole)."""
    outcome = run_shell("echo $$; cut -d' ' -f5 /proc/$$/stat", cwd=tmp_path, env=ENV)
    shell_pid, pgid = outcome.stdout.split()
    assert shell_pid == pgid


def test_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    """On timeout the shell and its background children are all gone; the reason says so.

    Gone means dead: a killed orphan may stay a zombie until init reaps it, so the check reads
    /proc for live members rather than asking kill(2), which also counts zombies.
    """
    command = "echo $$; sleep 100 & echo $!; sleep 100 & echo $!; wait"
    outcome = run_shell(command, cwd=tmp_path, env=ENV, timeout_s=0.5)
    pgid, *children = (int(pid) for pid in outcome.stdout.split())
    assert (None, True, "timed out after 0.5s", [], [True, True]) == (
        outcome.exit_code,
        outcome.timed_out,
        outcome.error,
        _group_members(pgid),
        [_state(child) in (None, "Z") for child in children],
    )


def test_timeout_kills_children_that_ignore_sigterm(tmp_path: Path) -> None:
    """Processes ignoring SIGTERM are killed with SIGKILL after the grace period."""
    outcome = run_shell("trap '' TERM; echo $$; sleep 100", cwd=tmp_path, env=ENV, timeout_s=0.2)
    assert (True, []) == (outcome.timed_out, _group_members(int(outcome.stdout)))


def test_background_child_does_not_outlive_the_command(tmp_path: Path) -> None:
    """A background child left running at normal exit is terminated, and does not block."""
    start = time.monotonic()
    outcome = run_shell("sleep 100 & echo $!", cwd=tmp_path, env=ENV, timeout_s=30)
    child = int(outcome.stdout)
    assert (0, True, True) == (
        outcome.exit_code,
        _state(child) in (None, "Z"),
        time.monotonic() - start < 5,
    )


#: A daemon as a command starts one: it forks twice (``setsid``, then a background subshell
#: whose parent exits at once), so it is in neither the command's group nor its tree, ignores
#: SIGTERM, and holds none of the command's pipes.
_DAEMON = ("setsid sh -c '(exec sh -c \"trap \\\"\\\" TERM; echo \\$\\$ > daemon.pid; "
           "exec sleep 100\") </dev/null >/dev/null 2>&1 &'; "
           "while [ ! -s daemon.pid ]; do sleep 0.01; done; ")


@pytest.mark.parametrize("ending", ["exit", "timeout"])
def test_a_daemon_that_forked_twice_does_not_outlive_the_command(
    ending: str, tmp_path: Path,
) -> None:
    """SPEC §6.5, §13: what a command started ends with it, also a daemon that left both its
    process group and its tree (its parent is gone: the init process adopted it). It carries
    the variable the runner gave the command, which is how it is found; it ignores SIGTERM,
    so it gets SIGKILL after the grace."""
    tail = "echo started" if ending == "exit" else "echo started; sleep 100"
    outcome = run_shell(_DAEMON + tail, cwd=tmp_path, env=ENV,
                        timeout_s=30 if ending == "exit" else 1)
    daemon = int((tmp_path / "daemon.pid").read_text())
    try:
        assert ("started\n", ending == "timeout", True) == (
            outcome.stdout, outcome.timed_out, _state(daemon) in (None, "Z"))
    finally:
        with contextlib.suppress(OSError):
            os.kill(daemon, signal.SIGKILL)


def _running(tag: str) -> list[int]:
    """The live processes whose command line (its words joined by spaces) holds ``tag``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            words = cmdline.read_bytes().replace(b"\0", b" ")
            if tag.encode() in words and _state(int(cmdline.parent.name)) not in (None, "Z"):
                found.append(int(cmdline.parent.name))
    return found


def test_a_daemon_started_just_before_the_command_exits_does_not_outlive_it(
        tmp_path: Path) -> None:
    """A command that starts a daemon (a background subshell whose child calls setsid) and
    exits at once: the daemon may leave the group while the group's processes are looked for,
    or be forked by one of them meanwhile. It outlived the command in about one run of four;
    the runner now looks again until a look finds no process of the command left."""
    left = []
    for n in range(20):
        tag = f"79.{os.getpid()}{n:03d}"
        run_shell(f'(setsid sh -c "sleep {tag}" >/dev/null 2>&1 &); echo ok', cwd=tmp_path,
                  env=ENV, timeout_s=30)
        time.sleep(0.1)  # what outlived the command shows itself
        found = _running(f"sleep {tag}")
        left += found
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    assert [] == left


def test_interrupt_kills_a_daemon_that_forked_twice(tmp_path: Path) -> None:
    """The same when the runner is interrupted (Ctrl-C) while the command runs."""
    echo = _Interrupting()
    with pytest.raises(KeyboardInterrupt):
        run_shell(_DAEMON + "echo started; sleep 100", cwd=tmp_path, env=ENV, timeout_s=30,
                  echo=echo)
    daemon = int((tmp_path / "daemon.pid").read_text())
    try:
        deadline = time.monotonic() + 5
        while _state(daemon) not in (None, "Z") and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _state(daemon) in (None, "Z")
    finally:
        with contextlib.suppress(OSError):
            os.kill(daemon, signal.SIGKILL)


class _Interrupting(io.StringIO):
    """An echo stream that raises KeyboardInterrupt (as Ctrl-C would) after its first line."""

    def write(self, text: str) -> int:
        super().write(text)
        raise KeyboardInterrupt


def test_interrupt_kills_the_group(tmp_path: Path) -> None:
    """If the runner is interrupted, the command's group (which Ctrl-C misses) is killed."""
    echo = _Interrupting()
    with pytest.raises(KeyboardInterrupt):
        run_shell("echo $$; sleep 100 & wait", cwd=tmp_path, env=ENV, timeout_s=30, echo=echo)
    assert [] == _group_members(int(echo.getvalue()))


def test_capture_keeps_the_head_of_large_output(tmp_path: Path) -> None:
    """Output beyond 4 MiB is dropped from memory and the truncation is flagged."""
    outcome = run_shell("head -c 5000000 /dev/zero | tr '\\0' a", cwd=tmp_path, env=ENV)
    assert (CAPTURE_LIMIT_BYTES, True, False) == (
        len(outcome.stdout),
        outcome.stdout_truncated,
        outcome.stderr_truncated,
    )


def test_invalid_utf8_is_replaced(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 decode to U+FFFD instead of failing."""
    assert "a\ufffdb" == run_shell("printf 'a\\377b'", cwd=tmp_path, env=ENV).stdout


def test_run_argv_uses_no_shell(tmp_path: Path) -> None:
    """run_argv passes arguments as they are: no expansion happens."""
    outcome = run_argv(["printf", "%s", "$HOME *"], cwd=tmp_path, env=ENV)
    assert (0, "$HOME *") == (outcome.exit_code, outcome.stdout)


def test_run_argv_missing_executable_is_an_outcome(tmp_path: Path) -> None:
    """A missing executable gives exit_code None and an error text, not an exception."""
    outcome = run_argv(["specdojo-does-not-exist", "exec"], cwd=tmp_path, env=ENV)
    assert (None, "executable not found: specdojo-does-not-exist", False) == (
        outcome.exit_code,
        outcome.error,
        outcome.timed_out,
    )


def test_empty_argv_is_an_outcome(tmp_path: Path) -> None:
    """An empty argv is reported, not raised."""
    outcome = run_argv([], cwd=tmp_path, env=ENV)
    assert (None, "empty command") == (outcome.exit_code, outcome.error)


def test_nul_in_command_is_an_outcome(tmp_path: Path) -> None:
    """A NUL character cannot reach a process; it is reported, not raised."""
    outcome = run_shell("echo a\0b", cwd=tmp_path, env=ENV)
    assert (None, "could not start /bin/sh: embedded null byte") == (
        outcome.exit_code,
        outcome.error,
    )


def test_missing_working_directory_is_an_outcome(tmp_path: Path) -> None:
    """A missing working directory is reported as such."""
    missing = tmp_path / "gone"
    outcome = run_argv(["true"], cwd=missing, env=ENV)
    assert (None, f"working directory not found: {missing}") == (outcome.exit_code, outcome.error)


def test_signal_exit_is_128_plus_signal(tmp_path: Path) -> None:
    """A command killed by a signal (not our timeout) reports 128 + the signal number."""
    assert 128 + 9 == run_argv(["sh", "-c", "kill -9 $$"], cwd=tmp_path, env=ENV).exit_code


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, ["specdojo"]),
        ("", ["specdojo"]),
        ("  ", ["specdojo"]),
        ("node '/opt/spec dojo/cli.js'", ["node", "/opt/spec dojo/cli.js"]),
        ("npx specdojo", ["npx", "specdojo"]),
    ],
)
def test_specdojo_prefix(value: str | None, expected: list[str]) -> None:
    """$SPECDOJO_CLI is split like a shell would; unset or blank means `specdojo`."""
    env = {} if value is None else {"SPECDOJO_CLI": value}
    assert expected == specdojo_prefix(env)


def test_specdojo_prefix_bad_quoting_is_a_config_error() -> None:
    """An unbalanced quote in $SPECDOJO_CLI is a configuration error with a message."""
    with pytest.raises(ConfigError, match="SPECDOJO_CLI is not valid shell syntax"):
        specdojo_prefix({"SPECDOJO_CLI": "node 'unterminated"})


def test_a_start_that_fails_for_lack_of_file_descriptors_is_not_the_commands_fault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """EMFILE while starting a command: the error says it is an environment limit and to
    raise the limit (``runner.environment_limit`` tells), while a missing executable still
    says so and is not taken for one."""
    def popen(*_args: object, **_kw: object) -> object:
        raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

    missing = runner.run_argv(["/nowhere/tool"], cwd=tmp_path, env={}, timeout_s=5)
    monkeypatch.setattr(runner.subprocess, "Popen", popen)
    out = runner.run_argv(["/bin/true"], cwd=tmp_path, env={}, timeout_s=5)
    assert out.exit_code is None and out.error is not None
    assert out.error.startswith("could not start /bin/true: Too many open files (an "
                                "environment limit, not the command: ")
    assert "ulimit -n" in out.error and runner.environment_limit(out.error)
    assert ("executable not found: /nowhere/tool", False) == (
        missing.error, runner.environment_limit(missing.error))
