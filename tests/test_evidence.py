"""Evidence files of a Job Run attempt: layout, fields, redaction and bounds (SPEC §7.5)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest

from specdojo_routine.core.errors import JobError
from specdojo_routine.core.redact import secret_values
from specdojo_routine.execute.evidence import write_evidence
from specdojo_routine.execute.runner import CommandOutcome, child_env, run_shell

RUN_ID = "JBR-weekly-0123456789ab"
START = datetime(2026, 8, 7, 8, 0, 0, 250000, tzinfo=UTC)


def _outcome(stdout: str = "", stderr: str = "", **changes: object) -> CommandOutcome:
    values: dict[str, object] = {
        "exit_code": 0,
        "stdout": stdout,
        "stderr": stderr,
        "started_at": START,
        "completed_at": START + timedelta(seconds=1.5),
        "duration_s": 1.5004,
    }
    values.update(changes)
    return CommandOutcome(**values)  # type: ignore[arg-type]


def _write(root: Path, outcome: CommandOutcome, command: str = "echo hi", **kw: object) -> str:
    args: dict[str, object] = {
        "run_id": RUN_ID,
        "attempt": 1,
        "command": command,
        "outcome": outcome,
        "secrets": (),
        "final_message": "done",
        "root": root,
    }
    args.update(kw)
    return write_evidence(root / "exec" / "evidence", **args)  # type: ignore[arg-type]


def _document(root: Path, ref: str) -> dict[str, object]:
    loaded: dict[str, object] = json.loads(((root / ref).parent / "evidence.json").read_bytes())
    return loaded


def test_evidence_ref_is_the_attempts_evidence_json_relative_to_root(tmp_path: Path) -> None:
    """The returned ref is <evidence>/<run_id>/attempt-<n>/evidence.json relative to the root,
    POSIX: a file upstream readers open as JSON (SPEC §7.6, §10 rule 6)."""
    ref = _write(tmp_path, _outcome("hi\n"), attempt=2)
    assert (
        f"exec/evidence/{RUN_ID}/attempt-2/evidence.json",
        ["command.stderr.log", "command.stdout.log", "evidence.json"],
    ) == (ref, sorted(os.listdir((tmp_path / ref).parent)))
    assert 2 == orjson.loads((tmp_path / ref).read_bytes())["attempt"]


def test_evidence_document_fields(tmp_path: Path) -> None:
    """evidence.json carries the command, its streams and references, and the timing."""
    ref = _write(tmp_path, _outcome("hi\n", "warn\n", exit_code=3), command="printf hi")
    assert {
        "schema_version": 1,
        "run_id": RUN_ID,
        "attempt": 1,
        "command": {
            "shell": "/bin/sh -eu -c",
            "value": "printf hi",
            "exit_code": 3,
            "timed_out": False,
            "error": None,
            "stdout": "hi\n",
            "stderr": "warn\n",
            "stdout_ref": ref.replace("evidence.json", "command.stdout.log"),
            "stderr_ref": ref.replace("evidence.json", "command.stderr.log"),
            "stdout_truncated": False,
            "stderr_truncated": False,
        },
        "started_at": "2026-08-07T08:00:00Z",
        "completed_at": "2026-08-07T08:00:01Z",
        "duration_s": 1.5,
        "final_message": "done",
    } == _document(tmp_path, ref)


def test_evidence_logs_hold_the_same_text_as_the_document(tmp_path: Path) -> None:
    """The log files contain exactly the stdout/stderr text of evidence.json."""
    ref = _write(tmp_path, _outcome("out ✓\n", "err\n"))
    command = _document(tmp_path, ref)["command"]
    assert isinstance(command, dict)
    assert (command["stdout"], command["stderr"]) == (
        (tmp_path / command["stdout_ref"]).read_text("utf-8"),
        (tmp_path / command["stderr_ref"]).read_text("utf-8"),
    )


def test_timed_out_attempt_is_recorded(tmp_path: Path) -> None:
    """A timeout leaves exit_code null, timed_out true and the reason text."""
    outcome = _outcome(exit_code=None, timed_out=True, error="timed out after 5s")
    command = _document(tmp_path, _write(tmp_path, outcome))["command"]
    assert isinstance(command, dict)
    assert (None, True, "timed out after 5s") == (
        command["exit_code"],
        command["timed_out"],
        command["error"],
    )


SECRETS = {
    "api_key": "abcDEF123456ghi",
    "bearer": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
    "github": "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    "pem_body": "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
    "env_token": "env-token-value-777",
}


def test_no_secret_reaches_any_evidence_file(tmp_path: Path) -> None:
    """Secrets printed by a real command (and in its text) are in no evidence file's bytes."""
    script = (
        f"echo api_key={SECRETS['api_key']}\n"
        f"echo 'Authorization: Bearer {SECRETS['bearer']}' >&2\n"
        f"echo 'token for ci: {SECRETS['github']}'\n"
        "printf '%s\\n' '-----BEGIN PRIVATE KEY-----' "
        f"'{SECRETS['pem_body']}' '-----END PRIVATE KEY-----'\n"
        'echo "value: $MY_API_TOKEN"\n'
        f"# the text mentions {SECRETS['env_token']} and 'api_key': '{SECRETS['api_key']}'\n"
    )
    env = child_env(dict(os.environ), {"MY_API_TOKEN": SECRETS["env_token"]})
    outcome = run_shell(script, cwd=tmp_path, env=env)
    ref = _write(
        tmp_path,
        outcome,
        command=script,
        secrets=secret_values(env),
        final_message=f"leaked {SECRETS['env_token']}?",
    )
    blobs = [p.read_bytes() for p in (tmp_path / "exec").rglob("*") if p.is_file()]
    leaks = sorted(name for name, s in SECRETS.items() for b in blobs if s.encode() in b)
    assert (0, [], 3) == (outcome.exit_code, leaks, len(blobs))
    assert b"[REDACTED]" in ((tmp_path / ref).parent / "command.stdout.log").read_bytes()


def test_large_output_is_bounded_at_a_character_boundary(tmp_path: Path) -> None:
    """200 KB of multi-byte output gives logs of at most 64 KiB of valid UTF-8, flagged."""
    script = (
        'i=0; while [ $i -lt 7000 ]; do echo "日本語テキスト 😀 line $i"; i=$((i+1)); done; '
        'i=0; while [ $i -lt 6000 ]; do echo "エラー 🚨 $i" >&2; i=$((i+1)); done'
    )
    outcome = run_shell(script, cwd=tmp_path, env=dict(os.environ))
    ref = _write(tmp_path, outcome)
    logs = [
        ((tmp_path / ref).parent / name).read_bytes()
        for name in ("command.stdout.log", "command.stderr.log")
    ]
    command = _document(tmp_path, ref)["command"]
    assert isinstance(command, dict)
    assert (True, [True, True], [True, True], True) == (
        len(outcome.stdout.encode()) > 200_000,
        [65536 - 4 < len(log) <= 65536 for log in logs],
        [command["stdout_truncated"], command["stderr_truncated"]],
        command["stdout"] == logs[0].decode("utf-8"),  # strict decode: valid UTF-8
    )


def test_capture_truncation_is_carried_into_the_flags(tmp_path: Path) -> None:
    """A stream the runner already truncated stays flagged even when it fits 64 KiB."""
    command = _document(tmp_path, _write(tmp_path, _outcome("short", stderr_truncated=True)))[
        "command"
    ]
    assert isinstance(command, dict)
    assert (False, True) == (command["stdout_truncated"], command["stderr_truncated"])


def test_rewriting_an_attempt_replaces_its_files(tmp_path: Path) -> None:
    """Writing the same attempt again replaces the files and leaves no temporary file."""
    _write(tmp_path, _outcome("first"))
    ref = _write(tmp_path, _outcome("second"))
    assert ("second", ["command.stderr.log", "command.stdout.log", "evidence.json"]) == (
        ((tmp_path / ref).parent / "command.stdout.log").read_text("utf-8"),
        sorted(os.listdir((tmp_path / ref).parent)),
    )


def test_final_message_is_redacted_and_limited(tmp_path: Path) -> None:
    """final_message is redacted and cut to 4000 characters."""
    message = "password=hunter22 " + "x" * 5000
    written = _document(tmp_path, _write(tmp_path, _outcome(), final_message=message))
    final = written["final_message"]
    assert isinstance(final, str)
    assert (4000, True, False) == (len(final), final.endswith("…"), "hunter22" in final)


@pytest.mark.parametrize(("run_id", "attempt"), [("../escape", 1), ("a/b", 1), (RUN_ID, 0)])
def test_invalid_location_is_refused(run_id: str, attempt: int, tmp_path: Path) -> None:
    """A run id that could leave the evidence directory, or attempt < 1, is a JobError."""
    with pytest.raises(JobError, match="invalid evidence location"):
        _write(tmp_path, _outcome(), run_id=run_id, attempt=attempt)


@pytest.mark.parametrize("level", ["run", "attempt"])
def test_a_link_where_the_tool_makes_a_folder_is_not_written_through(
    level: str, tmp_path: Path,
) -> None:
    """A symbolic link at ``<run_id>`` or ``attempt-<n>`` (another tool's, or planted) could
    name any directory: nothing is written through it, and the error names it (SPEC §7.5)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    run_dir = tmp_path / "exec" / "evidence" / RUN_ID
    link = run_dir if level == "run" else run_dir / "attempt-1"
    link.parent.mkdir(parents=True)
    link.symlink_to(outside)
    with pytest.raises(NotADirectoryError) as caught:
        _write(tmp_path, _outcome("hi\n"))
    assert (str(link), [], True) == (caught.value.filename, sorted(os.listdir(outside)),
                                     link.is_symlink())


def test_evidence_kept_on_another_disk_is_named_by_its_path_in_the_project(
    tmp_path: Path,
) -> None:
    """The evidence folder itself may be a link (evidence on another disk): it is written
    through, and the ref is the path under the root that upstream readers open, not the
    link's target with ``..`` steps (SPEC §7.6)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    (tmp_path / "root" / "exec").mkdir(parents=True)
    (tmp_path / "root" / "exec" / "evidence").symlink_to(disk)
    ref = _write(tmp_path / "root", _outcome("hi\n"))
    assert f"exec/evidence/{RUN_ID}/attempt-1/evidence.json" == ref
    assert (disk / RUN_ID / "attempt-1" / "evidence.json").is_file()
    assert _document(tmp_path / "root", ref)["run_id"] == RUN_ID


def test_a_routine_actions_evidence_is_not_written_through_a_link(tmp_path: Path) -> None:
    """The same for a delegated call's evidence: a link at ``routines/<attempt_id>``."""
    from specdojo_routine.execute.evidence import write_action_evidence

    outside = tmp_path / "outside"
    outside.mkdir()
    evidence = tmp_path / "exec" / "evidence"
    (evidence / "routines").mkdir(parents=True)
    (evidence / "routines" / "att-1").symlink_to(outside)
    with pytest.raises(NotADirectoryError):
        write_action_evidence(evidence, routine_id="rtn-a", attempt_id="att-1", index=1,
                              kind="specdojo", argv=["x"], outcome=_outcome("hi\n"),
                              secrets=(), root=tmp_path)
    assert [] == os.listdir(outside)
