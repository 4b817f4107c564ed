"""Command evidence of a Job Run attempt and of a delegated routine action (edge; SPEC §7.5,
§14, seed 002).

``<evidence_dir>/<run_id>/attempt-<n>/`` holds ``command.stdout.log``, ``command.stderr.log``
and ``evidence.json``. Every text is redacted first and then bounded (64 KiB per stream, cut at
a character boundary); ``evidence.json`` carries the same bounded text as the logs, so a reader
(or an analysis agent) needs nothing else. Each file is written atomically; ``evidence.json``
is written last, so its presence means the attempt's evidence is complete.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

import orjson

from specdojo_routine.core.errors import JobError
from specdojo_routine.core.redact import bound, redact, redact_words
from specdojo_routine.core.timefmt import format_s
from specdojo_routine.execute.runner import SHELL, CommandOutcome
from specdojo_routine.store.config import read_regular

SCHEMA_VERSION = 1
LOG_LIMIT_BYTES = 65536
FINAL_MESSAGE_LIMIT = 4000  # characters, as the upstream executor evidence
STDOUT_LOG = "command.stdout.log"
STDERR_LOG = "command.stderr.log"
EVIDENCE_JSON = "evidence.json"
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def attempt_dir(evidence_dir: Path, run_id: str, attempt: int) -> Path:
    """``<evidence_dir>/<run_id>/attempt-<n>``; refuses ids that could leave the directory."""
    if not _RUN_ID.fullmatch(run_id) or attempt < 1:
        raise JobError(f"invalid evidence location: run {run_id!r}, attempt {attempt}")
    return evidence_dir / run_id / f"attempt-{attempt}"


def made_dir(evidence_dir: Path, target: Path) -> Path:
    """``target`` (a folder below ``evidence_dir``) made as real directories: ``evidence_dir``
    itself may be a link (evidence kept on another disk), but every level below it is one this
    tool makes, and a symbolic link or a file already at one of them is not written through
    (it could name any directory): ``NotADirectoryError`` naming it. The caller says what the
    evidence not written costs."""
    evidence_dir.mkdir(parents=True, exist_ok=True)
    level = evidence_dir
    for name in target.relative_to(evidence_dir).parts:
        level = level / name
        with contextlib.suppress(FileExistsError):
            os.mkdir(level)
        if not stat.S_ISDIR(os.lstat(level).st_mode):
            raise NotADirectoryError(
                errno.ENOTDIR, "not a directory this tool made (a symbolic link or a file): "
                "evidence is not written through it", str(level))
    return target


def write_evidence(
    evidence_dir: Path,
    *,
    run_id: str,
    attempt: int,
    command: str,
    outcome: CommandOutcome,
    secrets: Iterable[str],
    final_message: str,
    root: Path,
) -> str:
    """Write the attempt's evidence; return the root-relative (POSIX) path of its
    ``evidence.json``, which upstream readers open as JSON (SPEC §7.6)."""
    secrets = tuple(secrets)
    target = made_dir(evidence_dir, attempt_dir(evidence_dir, run_id, attempt))
    streams = _write_logs(target, outcome, secrets, root)
    document = {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "attempt": attempt,
        "command": {
            "shell": " ".join(SHELL),
            "value": redact(command, secrets),
            "exit_code": outcome.exit_code,
            "timed_out": outcome.timed_out,
            "error": None if outcome.error is None else redact(outcome.error, secrets),
            **streams,
        },
        "started_at": format_s(outcome.started_at),
        "completed_at": format_s(outcome.completed_at),
        "duration_s": round(outcome.duration_s, 3),
        "final_message": _final_message(final_message, secrets),
    }
    _write_atomic(
        target / EVIDENCE_JSON, orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"
    )
    return relative_ref(target / EVIDENCE_JSON, root)


def _final_message(final_message: str, secrets: tuple[str, ...]) -> str:
    """The attempt's final message, redacted and cut to ``FINAL_MESSAGE_LIMIT`` characters
    (its last one then an ellipsis)."""
    message = redact(final_message, secrets)
    return message[: FINAL_MESSAGE_LIMIT - 1] + "…" if len(message) > FINAL_MESSAGE_LIMIT \
        else message


def action_dir(evidence_dir: Path, attempt_id: str, index: int) -> Path:
    """``<evidence_dir>/routines/<attempt_id>/action-<n>``: a routine action's own evidence
    (delegated SpecDojo calls, which have no Job Run to keep it); refuses ids that could
    leave the directory."""
    if not _RUN_ID.fullmatch(attempt_id) or index < 1:
        raise JobError(f"invalid evidence location: attempt {attempt_id!r}, action {index}")
    return evidence_dir / "routines" / attempt_id / f"action-{index}"


def write_action_evidence(
    evidence_dir: Path,
    *,
    routine_id: str,
    attempt_id: str,
    index: int,
    kind: str,
    argv: list[str],
    outcome: CommandOutcome,
    secrets: Iterable[str],
    root: Path,
) -> str:
    """Write a delegated call's evidence (its stdout and stderr, redacted then bounded as a Job
    Run's); return the root-relative path of its ``evidence.json`` (``action_ended``'s
    ``evidence_ref``)."""
    secrets = tuple(secrets)
    target = made_dir(evidence_dir, action_dir(evidence_dir, attempt_id, index))
    streams = _write_logs(target, outcome, secrets, root)
    document = {
        "schema_version": SCHEMA_VERSION,
        "routine_id": routine_id,
        "attempt_id": attempt_id,
        "action": index,
        "kind": kind,
        "command": {
            "argv": redact_words(argv, secrets),
            "exit_code": outcome.exit_code,
            "timed_out": outcome.timed_out,
            "error": None if outcome.error is None else redact(outcome.error, secrets),
            **streams,
        },
        "started_at": format_s(outcome.started_at),
        "completed_at": format_s(outcome.completed_at),
        "duration_s": round(outcome.duration_s, 3),
    }
    _write_atomic(
        target / EVIDENCE_JSON, orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"
    )
    return relative_ref(target / EVIDENCE_JSON, root)


def _write_logs(
    target: Path, outcome: CommandOutcome, secrets: tuple[str, ...], root: Path
) -> dict[str, object]:
    """Write both stream logs (redacted, then bounded); their evidence.json fields."""
    fields: dict[str, object] = {}
    for name, log_name, text, cut_before in (
        ("stdout", STDOUT_LOG, outcome.stdout, outcome.stdout_truncated),
        ("stderr", STDERR_LOG, outcome.stderr, outcome.stderr_truncated),
    ):
        bounded, cut = bound(redact(text, secrets), LOG_LIMIT_BYTES)
        _write_atomic(target / log_name, bounded.encode("utf-8"))
        fields[name] = bounded
        fields[f"{name}_ref"] = relative_ref(target / log_name, root)
        fields[f"{name}_truncated"] = cut_before or cut
    return fields


def relative_ref(path: Path, root: Path) -> str:
    """``path`` relative to ``root``, POSIX form (``..`` steps if it lies outside), by the
    names alone: an evidence folder that is a link to another disk still gives
    ``execution/exec/evidence/…``, the path upstream readers open (SPEC §7.6)."""
    return Path(os.path.relpath(os.path.abspath(path), os.path.abspath(root))).as_posix()


def _write_atomic(path: Path, data: bytes) -> None:
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o644)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def read_evidence(root: Path, ref: str | None, within: Path) -> dict[str, object] | None:
    """The ``evidence.json`` a ledger names (root-relative), or None when there is none or it
    cannot be read (pruned, never written after a full disk, another tool's). ``within``: the
    evidence folder; a ledger line is evidence, not a fact, so a reference that leads out of
    it (``..``, an absolute path, a link inside it pointing out) is not opened."""
    if not ref:
        return None
    if not (root / ref).resolve().is_relative_to(within.resolve()):
        return None
    try:
        document = orjson.loads(read_regular(root / ref))  # not a FIFO or device: no wait
    except (OSError, orjson.JSONDecodeError):
        return None
    return document if isinstance(document, dict) else None


def streams_of(document: dict[str, object]) -> dict[str, str]:
    """The captured streams of an evidence document (``stdout``/``stderr`` of its command,
    already redacted and bounded when written)."""
    command = document.get("command")
    found: dict[str, str] = {}
    if isinstance(command, dict):
        for name in ("stdout", "stderr"):
            if isinstance(command.get(name), str):
                found[name] = command[name]
    return found


def stderr_tail(root: Path, ref: str | None, within: Path) -> list[str]:
    """The last lines of the stderr an evidence file keeps (empty when there is none; see
    :func:`read_evidence` for ``within``)."""
    from specdojo_routine.core.tail import last_lines

    document = read_evidence(root, ref, within)
    return last_lines(streams_of(document).get("stderr", "")) if document else []
