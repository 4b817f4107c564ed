"""The console is redacted like evidence (SPEC §11.4 "Console"): the live echo of a command
never shows a secret, whatever the line length or how the writes fall."""

from __future__ import annotations

import io
import itertools
import os
import sys
from pathlib import Path
from unittest import mock

import pytest
from conftest import Project, period_job
from hypothesis import given, settings
from hypothesis import strategies as st

from specdojo_routine.execute import runner

SECRET = "s3cr3t-VALUE-0123456789"
ENV = {**os.environ, "DEPLOY_TOKEN": SECRET}


def _echoed(tmp_path: Path, command: str) -> str:
    echo = io.StringIO()
    outcome = runner.run_shell(command, cwd=tmp_path, env=ENV, echo=echo)
    assert 0 == outcome.exit_code, outcome.stderr
    return echo.getvalue()


def test_a_secret_at_the_end_of_a_line_over_1_mib_is_not_echoed(tmp_path: Path) -> None:
    """A 1.5 MiB line (words) ending in the secret: echoed complete, the secret redacted."""
    script = tmp_path / "long.py"
    script.write_text("import os, sys\nsys.stdout.write('word ' * 300000 + "
                      "os.environ['DEPLOY_TOKEN'] + '\\n')\n")
    text = _echoed(tmp_path, f"python3 {script}")
    assert SECRET not in text and SECRET[:8] not in text
    assert text.endswith("[REDACTED]\n") and text.count("word ") == 300000


def test_a_secret_across_the_1_mib_cut_is_not_echoed(tmp_path: Path) -> None:
    """A 3 MiB line that is the secret over and over: wherever a piece is cut, no part of a
    secret shows."""
    script = tmp_path / "cut.py"
    script.write_text(
        "import os, sys\nt = os.environ['DEPLOY_TOKEN']\n"
        "sys.stdout.write((t + ' ') * (3 * 1024 * 1024 // (len(t) + 1)) + '\\n')\n")
    text = _echoed(tmp_path, f"python3 {script}")
    assert SECRET not in text
    for n in range(6, len(SECRET)):
        assert SECRET[:n] not in text and SECRET[-n:] not in text


def test_a_secret_split_across_two_flushes_is_not_echoed(tmp_path: Path) -> None:
    """The secret written in two halves with a pause between (two reads of the pipe)."""
    half = len(SECRET) // 2
    text = _echoed(tmp_path, f"printf 'deploy {SECRET[:half]}'; sleep 0.3; "
                             f"printf '{SECRET[half:]} done\\n'; printf 'ghp_abcd'; sleep 0.3; "
                             "printf 'efgh12345678\\n'")
    assert SECRET not in text and SECRET[:half] not in text and "abcdefgh" not in text
    assert "deploy [REDACTED] done\n[REDACTED]\n" == text


def test_a_line_without_any_safe_cut_is_withheld_not_leaked(tmp_path: Path) -> None:
    """9 MiB without a separator ending in the secret: never shown (a note instead)."""
    script = tmp_path / "blob.py"
    script.write_text("import os, sys\nsys.stdout.write('x' * (9 << 20) + "
                      "os.environ['DEPLOY_TOKEN'] + '\\n')\n")
    text = _echoed(tmp_path, f"python3 {script}")
    assert SECRET not in text and "characters of one output line not echoed" in text


def _fed(text: str, piece: int = 1 << 16) -> tuple[str, int]:
    """(echo of ``text`` fed to one stream in ``piece``-byte reads, calls of redact on what
    was held)."""
    from specdojo_routine.core.redact_stream import LineRedactor
    from specdojo_routine.execute import echo as echo_module

    calls = 0
    real = echo_module.redact

    def counted(held: str, secrets: tuple[str, ...]) -> str:
        nonlocal calls
        calls += 1
        return real(held, secrets)

    out = io.StringIO()
    stream = echo_module.Stream(out, LineRedactor([SECRET]))
    data = text.encode()
    original, echo_module.redact = echo_module.redact, counted
    try:
        for start in range(0, len(data), piece):
            stream.feed(data[start:start + piece])
        stream.close()
    finally:
        echo_module.redact = original
    return out.getvalue(), calls


def test_a_long_line_without_a_separator_is_not_searched_again_on_every_read() -> None:
    """9 MiB without a separator, read 64 KiB at a time: each read searches only what is new
    for a cut (before, every read redacted and searched all that was held: 11 s for this
    line), and the line is withheld."""
    text, calls = _fed("x" * (9 << 20) + SECRET + "\n")
    assert (0, False) == (calls, SECRET in text)
    assert "characters of one output line not echoed" in text


def test_a_separator_after_a_long_bare_start_is_still_a_cut() -> None:
    """2 MiB without a separator, then words and the secret: the words after the bare start
    are echoed in pieces and the secret never shows."""
    text, _ = _fed("x" * (2 << 20) + " word" * 300_000 + " " + SECRET + " end\n")
    assert SECRET not in text and SECRET[:8] not in text
    assert text.startswith("x" * (2 << 20) + " word") and text.endswith("[REDACTED] end\n")
    assert text.count(" word") == 300_000


@pytest.mark.parametrize("key", ["token: ", "TOKEN= ", "db_password = "])
def test_a_secret_value_past_the_first_mib_of_a_line_is_not_echoed_by_the_cli(
    project: Project, key: str,
) -> None:
    """A key and its value with a separator between them (``token: v``), the value starting at
    byte 1,048,579 of a line over 1 MiB: the long line is echoed in pieces, and no piece may
    end between the key and its value, which redacted alone would show in clear. Through the
    real CLI, the console (its stdout and stderr) never shows the value; the evidence does not
    either."""
    value = "s3cr3tVALUE" * 12_000
    line = "A" * (1_048_577 - len(key)) + " " + key + value + " tail"
    assert 1_048_578 == line.index(value)  # 0-based: the 1,048,579th byte
    (project.root / "long.py").write_text(f"import sys\nsys.stdout.write({line!r} + '\\n')\n")
    project.job("job-long", period_job("Long", f"{sys.executable} long.py"))
    done = project.cli("job", "run", "--job", "job-long", "--input", "period=p",
                       env=project.env())
    assert 0 == done.returncode, done.stderr[-2000:]
    console = done.stdout + done.stderr
    assert "A" * 1000 in console and "tail" in console  # the line was echoed
    assert "s3cr3t" not in console
    for path in project.root.rglob("*"):
        if path.is_file() and path.name != "long.py":
            assert b"s3cr3t" not in path.read_bytes(), path


FRAGMENTS = ["word", " ", "  ", ",", ";", "\t", "token: ", "TOKEN=", "db_password = ", "key",
             "password", ":", "=", "Bearer ", "Authorization: Basic ", "Basic", '"', "'", "\\",
             "https://us;er:pa,ss@h ", "://", "@", "/", "ghp_abcdefgh1234", SECRET, "s3cr3tVALUE",
             "s3cr3tVALUE" * 9, " " * 40, "xoxb-", "sk-", "[REDACTED]", "open sesame; 42"]


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.sampled_from(FRAGMENTS), max_size=60),
       reads=st.lists(st.integers(1, 90), min_size=1, max_size=40))
def test_a_long_line_echoed_in_pieces_reads_as_the_line_redacted(
    parts: list[str], reads: list[int],
) -> None:
    """With the limits made small (a line is long past 64 characters), a line of keys, values,
    quotes, URLs and secrets, read in any pieces, is echoed exactly as the whole line
    redacted: no piece ends where redacting the two sides apart would show more."""
    from specdojo_routine.core.redact_stream import LineRedactor
    from specdojo_routine.execute import echo as echo_module

    line = "".join(parts)
    data = (line + "\n").encode()
    out = io.StringIO()
    with mock.patch.multiple(echo_module, ECHO_LINE_LIMIT=64, ECHO_HOLD=48,
                             ECHO_WITHHOLD_LIMIT=1 << 30):
        stream = echo_module.Stream(out, LineRedactor([SECRET, "open sesame; 42"]))
        start = 0
        for size in itertools.cycle(reads):
            if start >= len(data):
                break
            stream.feed(data[start:start + size])
            start += size
        stream.close()
    assert LineRedactor([SECRET, "open sesame; 42"]).line(line + "\n") == out.getvalue()
