"""SPEC §13 "Notifications": `policy.notify` (or the config's `routine.notify`) runs a shell
command after failure, missed, held, interrupted and recovered events, with the event in
SPECDOJO_NOTIFY_* (secrets redacted); its outcome is `notification_sent` and never changes the
routine's result (a failing hook is a `warning:` line). Real hooks in real runs.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from specdojo_routine.execute import notify
from tests.conftest import Project, children, group_members

T0 = "2026-05-01T10:00:30Z"
T1 = "2026-05-01T12:00:30Z"
T2 = "2026-05-01T14:00:30Z"
SECRET = "s3cr3t-hook-value"


def _hook(project: Project, tail: str = "exit 3") -> str:
    """A hook that writes what it was given into the root, then ``tail``."""
    return ('printf "%s|%s|%s|%s|%s|%s" "$SPECDOJO_NOTIFY_EVENT" "$SPECDOJO_ROUTINE_ID" '
            '"$SPECDOJO_ATTEMPT_ID" "$SPECDOJO_SCHEDULED_FOR" "$SPECDOJO_RESULT" '
            '"$SPECDOJO_REASON" >> hook.out; echo >> hook.out; '
            'printf "%s\\n" "$SPECDOJO_NOTIFY_JSON" >> hook.json; ' + tail)


def _default_hook(project: Project, on: str, tail: str) -> None:
    """The project's ``routine.notify`` in the config: :func:`_hook` on events ``on`` (comma
    separated)."""
    config = project.root / ".specdojo" / "specdojo.config.json"
    data = orjson.loads(config.read_bytes())
    data["projects"]["demo"]["routine"] = {"notify": {"on": on.split(","),
                                                      "command": _hook(project, tail)}}
    config.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))


def _sent(project: Project) -> list[dict[str, Any]]:
    return [e for e in project.events() if e["type"] == "notification_sent"]


def test_a_failing_hook_is_a_warning_and_the_hook_sees_the_event_redacted(
    project: Project,
) -> None:
    """The action fails (its executable path holds a secret); the hook gets the event with
    the secret redacted and exits 3: `notification_sent` records exit 3, stderr has one
    `warning:` line and the run's result (exit 1, failure) is the action's, not the hook's."""
    command = orjson.dumps(_hook(project)).decode()
    project.routine("rtn-fail", f"""\
        interval: 1h
        policy: {{notify: {{on: [failure], command: {command}}}}}
        action: {{kind: specdojo, args: [go]}}
        """)
    env = project.env(SPECDOJO_CLI=f"/nowhere/{SECRET}/specdojo", HOOK_TOKEN=SECRET)
    done = project.cli("run", "--due", "--now", T0, env=env)
    assert 1 == done.returncode, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert 1 == len(warnings) and "failure notification hook exited with code 3" in warnings[0]
    assert warnings[0].endswith("(fix policy.notify.command in routines/rtn-fail.yaml)")
    attempt = next(e for e in project.events() if e["type"] == "attempt_ended")
    assert "failure" == attempt["result"]
    (sent,) = _sent(project)
    assert ("failure", 3, attempt["attempt_id"]) == (sent["event"], sent["exit_code"],
                                                     sent["attempt_id"])
    assert isinstance(sent["duration_s"], float)
    seen = (project.root / "hook.out").read_text().strip().split("|")
    assert ["failure", "rtn-fail", attempt["attempt_id"], attempt["scheduled_for"],
            "failure"] == seen[:5]
    assert "executable not found" in seen[5] and SECRET not in seen[5]
    event = orjson.loads((project.root / "hook.json").read_text())
    assert ("failure", "attempt_ended", attempt["attempt_id"]) == (
        event["event"], event["type"], event["attempt_id"])
    assert SECRET not in (project.root / "hook.json").read_text()
    assert SECRET not in project.ledger.read_text()
    history = project.cli("history", "rtn-fail", env=env)
    assert "notification_sent" in history.stdout and "exit 3" in history.stdout


def _failing_with_a_hanging_hook(project: Project) -> None:
    """``rtn-hang``, whose action fails and whose failure hook writes its process group to
    ``hook.pgid`` and sleeps in a child and a grandchild."""
    hook = orjson.dumps('echo $$ > hook.pgid; sh -c "sleep 60 & sleep 60"').decode()
    project.routine("rtn-hang", f"""\
        interval: 1h
        policy: {{notify: {{on: [failure], command: {hook}}}}}
        action: {{kind: specdojo, args: [go]}}
        """)
    project.exit_codes({"go": 4})


def test_a_hanging_hook_is_killed_at_its_timeout_and_leaves_no_process(
    project: Project,
) -> None:
    """A hook that sleeps in a child and a grandchild is killed at the timeout (1 s here, by
    the documented override): `notification_sent` has no exit code and says why; nothing of
    the hook remains."""
    _failing_with_a_hanging_hook(project)
    t0 = time.monotonic()
    done = project.cli("run", "--due", "--now", T0,
                       env=project.env(SPECDOJO_NOTIFY_TIMEOUT_S="1"))
    assert time.monotonic() - t0 < 30
    assert 1 == done.returncode, done.stderr
    (sent,) = _sent(project)
    assert (None, "timed out after 1s") == (sent["exit_code"], sent["reason"])
    assert 1.0 <= sent["duration_s"] < 10
    assert "warning: rtn-hang: the failure notification hook timed out after 1s" in done.stderr
    pgid = int((project.root / "hook.pgid").read_text())
    assert not group_members(pgid)


def test_a_stop_during_a_hook_ends_it_and_records_its_outcome(project: Project) -> None:
    """SIGTERM to the runner while its failure hook sleeps: the hook's group is ended, its
    `notification_sent` is recorded (no exit code, the stop as reason) and published before
    the runner exits 143 (`fold --check` is clean), and the lock is free."""
    _failing_with_a_hanging_hook(project)
    proc = project.popen("run", "--due", "--now", T0)
    marker = project.root / "hook.pgid"
    deadline = time.monotonic() + 30
    while not (marker.exists() and marker.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.02)
    pgid = int(marker.read_text())
    while len(group_members(pgid)) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)  # the hook's shell and both sleeps
    proc.send_signal(signal.SIGTERM)
    assert 143 == proc.wait(timeout=60), proc.stderr.read()
    (sent,) = _sent(project)
    attempt = next(e for e in project.events() if e["type"] == "attempt_ended")
    assert ("failure", None, "stopped by SIGTERM", attempt["attempt_id"]) == (
        sent["event"], sent["exit_code"], sent["reason"], sent["attempt_id"])
    assert "notification_sent" == project.events()[-1]["type"]
    checked = project.cli("fold", "--check")
    assert 0 == checked.returncode, checked.stdout
    assert not group_members(pgid)
    assert not (project.root / "routines" / ".locks" / "routine-run.lock").exists()


def _leave_interrupted(project: Project) -> None:
    """One attempt of ``rtn-x`` that succeeds, then its end cut from the ledger: an attempt
    left open by a runner that died (its pid is gone: it ran in a child)."""
    project.exit_codes({"go": 0})
    project.cli("run", "--due", "--now", T0, process=True)
    events = project.events()
    ended = next(i for i, e in enumerate(events) if e["type"] == "attempt_ended")
    project.ledger.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events[:ended]))
    assert 0 == project.cli("fold").returncode


def _wait_for_hook(project: Project) -> Path:
    """``hook.pgid`` once the hook has written its process group there."""
    marker = project.root / "hook.pgid"
    deadline = time.monotonic() + 30
    while not (marker.exists() and marker.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return marker


def test_a_runner_killed_during_an_interrupted_hook_has_it_told_again(
    project: Project,
) -> None:
    """The documented exception to "at most once": a runner SIGKILLed while the hook of an
    attempt awaiting `resolve` runs recorded no `notification_sent`, so the next run tells
    it again (and the run after that does not)."""
    hook = orjson.dumps('echo $$ > hook.pgid; [ -e told ] || { touch told; sleep 60; }; '
                        'echo x >> hook.count').decode()
    project.routine("rtn-x", f"""\
        interval: 1h
        policy: {{notify: {{on: [interrupted], command: {hook}}}}}
        action: {{kind: specdojo, args: [go]}}
        """)
    _leave_interrupted(project)
    proc = project.popen("run", "--due", "--now", T1)
    pgid = int(_wait_for_hook(project).read_text())
    proc.kill()
    proc.wait(timeout=30)
    with contextlib.suppress(ProcessLookupError):  # the hook's sleep outlives its shell
        os.killpg(pgid, signal.SIGKILL)
    assert [] == _sent(project)
    project.cli("run", "--due", "--now", T1)
    project.cli("run", "--due", "--now", T2)
    (sent,) = _sent(project)
    assert (0, ["x"]) == (sent["exit_code"],
                          (project.root / "hook.count").read_text().split())


@pytest.mark.parametrize("kind", ["held", "interrupted"])
def test_a_stop_during_a_hook_outside_an_attempt_publishes_what_it_recorded(
    project: Project, kind: str,
) -> None:
    """SIGTERM to the runner while the hook of an occurrence held, or of an attempt found
    interrupted, runs (no attempt of this run is open): the runner exits 143 with the event
    and the hook's `notification_sent` in the ledger and in the published view alike
    (`fold --check` is clean), as after a stop during a failure's hook."""
    hook = orjson.dumps("echo $$ > hook.pgid; sleep 60").decode()
    project.routine("rtn-x", f"""\
        interval: 1h
        policy: {{on_failure: hold, notify: {{on: [{kind}], command: {hook}}}}}
        action: {{kind: specdojo, args: [go]}}
        """)
    if kind == "held":
        project.exit_codes({"go": 1})
        project.cli("run", "--due", "--now", T0)
    else:
        _leave_interrupted(project)
    proc = project.popen("run", "--due", "--now", T1)
    marker = _wait_for_hook(project)
    proc.send_signal(signal.SIGTERM)
    assert 143 == proc.wait(timeout=60), proc.stderr.read()
    (sent,) = _sent(project)
    assert (kind, "stopped by SIGTERM") == (sent["event"], sent["reason"])
    checked = project.cli("fold", "--check")
    assert 0 == checked.returncode, checked.stdout
    assert not group_members(int(marker.read_text()))


def test_the_hook_runs_in_the_root_in_its_own_group_with_stdin_closed(
    project: Project,
) -> None:
    """SPEC §13: `/bin/sh -c` in the root, its own process group (the shell leads it, apart
    from the runner's), stdin closed: a `read` meets end of input at once, it never waits for
    the terminal or cron's pipe."""
    hook = orjson.dumps(
        'pwd -P > hook.cwd; ps -o pgid= -p $$ | tr -d " " > hook.pgid; echo $$ > hook.pid; '
        'ps -o pgid= -p $PPID | tr -d " " > hook.parent-pgid; '
        'if read -r line; then echo "read: $line"; else echo eof; fi > hook.stdin').decode()
    project.routine("rtn-fail", f"""\
        interval: 1h
        policy: {{notify: {{on: [failure], command: {hook}}}}}
        action: {{kind: specdojo, args: [go]}}
        """)
    project.exit_codes({"go": 4})
    done = subprocess.run(  # a runner whose own stdin has a line waiting
        [sys.executable, "-m", "specdojo_routine", "run", "--due", "--now", T0, "--root",
         str(project.root)], input="a line the hook must not see\n", cwd=project.root,
        env=project.env(), capture_output=True, text=True, timeout=60, check=False)
    assert 1 == done.returncode, done.stderr
    (sent,) = _sent(project)
    assert 0 == sent["exit_code"], sent
    assert str(project.root.resolve()) == (project.root / "hook.cwd").read_text().strip()
    pid, pgid = ((project.root / name).read_text().strip() for name in ("hook.pid", "hook.pgid"))
    assert pid == pgid  # the hook's shell leads a group of its own
    assert pgid != (project.root / "hook.parent-pgid").read_text().strip()  # not the runner's
    assert "eof" == (project.root / "hook.stdin").read_text().strip()


def test_the_default_timeout_is_sixty_seconds() -> None:
    assert 60.0 == notify.TIMEOUT_S
    assert 60.0 == notify.timeout_s({})
    assert 60.0 == notify.timeout_s({notify.TIMEOUT_ENV: "soon"})
    assert 60.0 == notify.timeout_s({notify.TIMEOUT_ENV: "-1"})
    assert 2.5 == notify.timeout_s({notify.TIMEOUT_ENV: "2.5"})


def test_recovered_fires_on_the_first_success_after_a_failure_from_the_config_default(
    project: Project,
) -> None:
    """The project's routine.notify (on: [recovered]) is the default: the failure is not
    notified, the next success is (`recovered`), the success after it is not."""
    _default_hook(project, "recovered", "exit 0")
    project.routine("rtn-flaky", "interval: 1h\naction: {kind: specdojo, args: [go]}\n")
    project.exit_codes({"go": 1})
    assert 1 == project.cli("run", "--due", "--now", T0).returncode
    project.exit_codes({})
    ok = project.cli("run", "--due", "--now", T1)
    assert 0 == ok.returncode and "warning" not in ok.stderr, ok.stderr
    assert 0 == project.cli("run", "--due", "--now", T2).returncode
    sent = _sent(project)
    assert [("recovered", 0)] == [(e["event"], e["exit_code"]) for e in sent]
    lines = (project.root / "hook.out").read_text().splitlines()
    assert 1 == len(lines) and lines[0].startswith("recovered|rtn-flaky|att-")
    assert "|success|" in lines[0]


def test_a_failing_default_hook_names_the_config_to_fix(project: Project) -> None:
    """The warning of a failing hook names where it is written: the project's
    ``routine.notify`` in the config file when the routine has no hook of its own."""
    _default_hook(project, "failure", "exit 4")
    project.routine("rtn-flaky", "interval: 1h\naction: {kind: specdojo, args: [go]}\n")
    project.exit_codes({"go": 1})
    done = project.cli("run", "--due", "--now", T0)
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert 1 == len(warnings), done.stderr
    assert warnings[0].endswith(
        "(fix routine.notify in .specdojo/specdojo.config.json)"), warnings[0]


def test_missed_and_held_are_notified(project: Project) -> None:
    """An occurrence past its starting deadline is `missed`; under hold, the next occurrence
    after a failure is `held`; each hook run is recorded."""
    hook = orjson.dumps(_hook(project, "exit 0")).decode()
    project.routine("rtn-late", f"""\
        trigger: {{cron: "0 * * * *", timezone: UTC}}
        policy: {{starting_deadline: 1m, notify: {{on: [missed], command: {hook}}}}}
        action: {{kind: specdojo, args: [late]}}
        """)
    project.routine("rtn-hold", f"""\
        trigger: {{cron: "0 * * * *", timezone: UTC}}
        policy: {{on_failure: hold, notify: {{on: [held], command: {hook}}}}}
        action: {{kind: specdojo, args: [hold]}}
        """)
    project.exit_codes({"hold": 1})
    project.cli("run", "--due", "--now", "2026-05-01T10:00:10Z")
    project.cli("run", "--due", "--now", "2026-05-01T11:05:00Z")
    sent = sorted((e["routine_id"], e["event"]) for e in _sent(project))
    assert [("rtn-hold", "held"), ("rtn-late", "missed")] == sent
    lines = sorted((project.root / "hook.out").read_text().splitlines())
    assert lines[0].startswith("held|rtn-hold||2026-05-01T11:00:00.000Z||held after failure")
    assert lines[1].startswith("missed|rtn-late||2026-05-01T11:00:00.000Z||started 5m late")


def test_an_interrupted_attempt_is_notified_once(project: Project) -> None:
    """A runner SIGKILLed mid-action leaves an interrupted attempt: the next run notifies
    `interrupted` and publishes what it recorded (`fold --check` is clean), the run after it
    (still interrupted) does not notify again."""
    hook = orjson.dumps(_hook(project, "exit 0")).decode()
    project.routine("rtn-crash", f"""\
        interval: 1h
        policy: {{notify: {{on: [interrupted], command: {hook}}}}}
        action: {{kind: specdojo, args: [sleep-30]}}
        """)
    proc = project.popen("run", "--due", "--now", T0)
    deadline = time.monotonic() + 30
    while not project.calls() and time.monotonic() < deadline:
        time.sleep(0.02)
    sleepers = children(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    for child in sleepers:
        os.killpg(child, signal.SIGKILL)
    first = project.cli("run", "--due", "--now", T1)
    checked = project.cli("fold", "--check")
    assert 0 == checked.returncode, checked.stdout
    second = project.cli("run", "--due", "--now", T2)
    assert (1, 1) == (first.returncode, second.returncode)
    (sent,) = _sent(project)
    started = next(e for e in project.events() if e["type"] == "attempt_started")
    assert ("interrupted", started["attempt_id"]) == (sent["event"], sent["attempt_id"])


def test_validate_locates_notify_problems(project: Project) -> None:
    project.routine("rtn-bad", """\
        interval: 1h
        policy:
          notify: {on: [failure, sometimes], command: ""}
        action: {kind: specdojo, args: [x]}
        """)
    config = project.root / ".specdojo" / "specdojo.config.json"
    data = orjson.loads(config.read_bytes())
    data["projects"]["demo"]["routine"] = {"notify": {"on": "failure"}}
    config.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))
    done = project.cli("validate")
    assert 1 == done.returncode
    text = done.stdout + done.stderr
    assert ('routines/rtn-bad.yaml:4:26: policy.notify.on contains unknown event "sometimes"'
            in text), text
    assert "routines/rtn-bad.yaml:4:47: policy.notify.command must not be empty" in text
    assert (".specdojo/specdojo.config.json:11:17: projects.demo.routine.notify.on must be a "
            "non-empty list of" in text), text
    assert ".specdojo/specdojo.config.json:10:9:" in text and "command is required" in text


@pytest.mark.parametrize(("command", "code", "said"), [
    ("\"echo 'done\"", 0, "warning: policy.notify.command: unterminated single quote in shell "
     "command: /bin/sh will refuse it"),
    ('"echo a\\0b"', 1, "policy.notify.command: a NUL character (\\0) is in the command"),
], ids=["open-quote", "nul"])
def test_validate_says_what_sh_cannot_run_in_a_notify_command(
    project: Project, command: str, code: int, said: str,
) -> None:
    """A hook command that /bin/sh refuses would fail every notification, found at 3 a.m.:
    validate warns of a quote left open (the run itself only warns when a hook fails), and a
    NUL, which no process can receive, is an error - both at the command."""
    project.routine("rtn-hook", f"""\
        interval: 1h
        policy:
          notify: {{on: [failure], command: {command}}}
        action: {{kind: specdojo, args: [x]}}
        """)
    done = project.cli("validate")
    assert code == done.returncode, done.stderr
    assert f"routines/rtn-hook.yaml:4:36: {said}" in done.stdout + done.stderr


def test_a_paused_routine_starts_no_retry_and_sends_no_hook(project: Project) -> None:
    """SPEC §13: while paused, run --due starts nothing for the routine - not the retry its
    failed attempt waits for - and the occurrence recorded as paused is an operator's
    decision, not a `missed` or `held` alarm."""
    hook = orjson.dumps(_hook(project, "exit 0")).decode()
    project.routine("rtn-paused", f"""\
        trigger: {{cron: "0 * * * *", timezone: UTC}}
        policy: {{retry: {{attempts: 3, delay: 1m}}, on_failure: hold,
                  notify: {{on: [missed, held], command: {hook}}}}}
        action: {{kind: specdojo, args: [boom]}}
        """)
    project.exit_codes({"boom": 1})
    project.cli("run", "--due", "--now", "2026-05-01T10:00:10Z")
    paused = project.cli("pause", "rtn-paused", "--note", "window", "--by", "ops",
                         "--now", "2026-05-01T10:00:30Z")
    assert 0 == paused.returncode, paused.stderr
    project.cli("run", "--due", "--now", "2026-05-01T10:05:00Z")  # the retry's delay passed
    project.cli("run", "--due", "--now", "2026-05-01T11:00:10Z")  # the next occurrence
    kinds = [e["type"] for e in project.events()]
    triggers = [e["trigger"] for e in project.events() if e["type"] == "attempt_started"]
    assert ["due"] == triggers, "no retry while paused"
    assert "occurrence_paused" in kinds
    assert [] == _sent(project), "a pause is not an alarm"


@pytest.mark.parametrize(("err", "advice"), [
    (errno.EMFILE, "raise its limit (ulimit -n)"), (errno.ENFILE, "fs.file-max"),
    (errno.ENOMEM, "free memory"), (errno.EAGAIN, "raise ulimit -u")])
def test_a_hook_that_cannot_start_for_lack_of_resources_blames_the_machine(
    project: Project, monkeypatch: pytest.MonkeyPatch, err: int, advice: str,
) -> None:
    """Starting the hook's /bin/sh fails with EMFILE, ENFILE, ENOMEM or EAGAIN (the process
    table, memory or file descriptors ran out): the warning says it is an environment limit
    and what to do about it, and does not send the operator to fix the routine's YAML."""
    from specdojo_routine.execute import runner

    real = runner.subprocess.Popen

    def popen(argv: list[str], *args: Any, **kw: Any) -> Any:
        if argv[0] == "/bin/sh":
            raise OSError(err, os.strerror(err))
        return real(argv, *args, **kw)

    monkeypatch.setattr(runner.subprocess, "Popen", popen)
    project.routine("rtn-fail", """\
        interval: 1h
        policy: {notify: {on: [failure], command: "echo told"}}
        action: {kind: specdojo, args: [go]}
        """)
    project.exit_codes({"go": 3})
    done = project.cli("run", "--due", "--now", T0)
    assert 1 == done.returncode, done.stderr
    [warning] = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert f"the failure notification hook could not start /bin/sh: {os.strerror(err)}" \
        in warning, warning
    assert "an environment limit, not the command" in warning and advice in warning
    assert "fix policy.notify.command" not in warning


def test_an_invalid_default_hook_is_a_warning_of_the_run_not_a_silent_loss(
    project: Project,
) -> None:
    """The config's `routine.notify` lists an unknown event: `validate` names it, but cron
    only runs `run --due`. A failure that hook would have heard is not notified (the block is
    not used), and the run says so in one `warning:` line with the config's file:line:col,
    once per routine and kind; the routine's result stands."""
    _default_hook(project, "failure,sometimes", "exit 0")
    project.routine("rtn-fail", """\
        interval: 1h
        action: {kind: specdojo, args: [go]}
        """)
    project.exit_codes({"go": 3})
    done = project.cli("run", "--due", "--now", T0)
    assert 1 == done.returncode, done.stderr
    assert [] == _sent(project) and not (project.root / "hook.out").exists()
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert [
        "warning: rtn-fail: the failure notification was not sent: "
        '.specdojo/specdojo.config.json:13:13: projects.demo.routine.notify.on contains unknown '
        'event "sometimes". Allowed: failure, missed, held, interrupted, recovered '
        "(fix routine.notify in .specdojo/specdojo.config.json; `validate` lists every problem)"
    ] == warnings, done.stderr


@pytest.mark.parametrize(("command", "said"), [
    ("./no-such-hook", "exited with code 127 (the shell did not find the command (or a file "
     "it runs));"),
    ("./routines", "exited with code 126 (the shell found the command but could not execute "
     "it);"),
], ids=["not-found", "a-directory"])
def test_a_hook_the_shell_cannot_run_says_so(project: Project, command: str, said: str) -> None:
    """A hook command that is not there, or is a directory: the warning says what the
    shell's exit code means, and points to no stderr (a hook's is not kept)."""
    project.routine("rtn-fail", f"""\
        interval: 1h
        policy: {{notify: {{on: [failure], command: {command}}}}}
        action: {{kind: specdojo, args: [go]}}
        """)
    project.exit_codes({"go": 3})
    done = project.cli("run", "--due", "--now", T0)
    [warning] = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert f"the failure notification hook {said}" in warning, warning


def test_a_reason_of_any_length_reaches_the_hook_bounded(project: Project) -> None:
    """A reason longer than one environment string may be (128 KiB on Linux): the hook still
    starts and exits 0 - no `could not start /bin/sh: Argument list too long` blamed on its
    command - and gets the head of the reason, in SPECDOJO_REASON and SPECDOJO_NOTIFY_JSON
    alike, with the cut marked."""
    out = notify.run_hook(_hook(project, "exit 0"), root=project.root, env=project.env(),
                          payload={"event": "failure", "reason": "x" * 200_000}, secrets=[])
    assert (0, None) == (out.exit_code, out.error)
    reason = (project.root / "hook.out").read_text().strip().split("|")[5]
    event = orjson.loads((project.root / "hook.json").read_text())
    assert reason == event["reason"] == "x" * (notify.VALUE_LIMIT - 1) + "…"


def test_a_nul_in_what_the_hook_receives_does_not_stop_it(project: Project) -> None:
    """No process can receive a NUL in its environment: one in a reason (an agent's message,
    say) is shown as ``\\0`` and the hook runs."""
    out = notify.run_hook('printf "%s" "$SPECDOJO_REASON" > reason.txt', root=project.root,
                          env=project.env(), payload={"event": "failure", "reason": "a\0b"},
                          secrets=[])
    assert (0, None) == (out.exit_code, out.error)
    assert "a\\0b" == (project.root / "reason.txt").read_text()
