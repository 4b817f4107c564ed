"""Every code block of the documentation runs, and every sample output is what the code prints,
so the docs cannot rot.

Pages: README.md, fixtures/demo/README.md and every page under docs/ (English and Japanese).

- ```python blocks are executed (in a fresh namespace, cwd = a copy of the demo project);
- ```sh / ```bash blocks run as one /bin/sh script in a scratch copy of the repository's
  ``fixtures/`` (cwd = that copy's parent, so ``fixtures/demo`` is the demo), with
  ``SPECDOJO_CLI`` set to the demo's stand-in SpecDojo CLI. Lines run in order in the same
  shell, so a ``cd`` or an ``export`` carries to the next line. Each line's exit code is checked:
  a trailing ``# exit N`` comment states it (default 0). ``pip install`` lines are skipped (the
  package is installed already), and so is the README's ``python -m pytest`` (the suite that
  runs this test). No line may print a traceback.
- A sample output is a ```text or ```json block right after a comment
  ``<!-- output of: COMMAND -->`` or ``<!-- output of the block above: COMMAND -->``. The test
  runs, in a fresh copy, the nearest ```sh block above it first (the second form only), then
  the comment's lines (all but the last are set-up, run like a block's lines; the last is
  the command whose stdout is the sample), and compares:
  - paths: the scratch copy's directory is cut from what is printed (``fixtures/demo/`` too, so
    the demo's paths read root-relative, as the pages show them);
  - text: line by line, trailing blanks ignored; a line ``…`` stands for any number of lines;
    an ISO 8601 instant in the sample must be the one printed, unless the printed one is
    a wall-clock stamp of this test's run (a ledger's ``at``: not reproducible); an attempt
    id's random tail (``att-…-6ec04874``) may differ;
  - json: the sample is a part of the document printed: its keys, with the same values, in
    objects; its items, in order, among the printed list's items (so a sample may leave
    routines out); the same allowances for instants and attempt ids.
- Every other ```text block is marked ``<!-- shown, not run: why -->`` (a command to type,
  an illustration from another machine), so that a new sample output cannot go unchecked.
- blocks fenced as ```yaml, ```json (unmarked), ```console, ```crontab, ```ini or ```mermaid
  are shown, not run.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import copy_source

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", REPO / "fixtures" / "demo" / "README.md",
        *sorted((REPO / "docs").glob("**/*.md"))]
FENCE = re.compile(r"^```([a-z]*)[^\n]*\n(.*?)^```", re.M | re.S)
EXIT = re.compile(r"\s+#\s*exit\s+(\d+)\s*$")
MARK = re.compile(r"<!--\s*(output of(?P<above> the block above)?:|shown, not run:)"
                  r"(?P<body>.*?)-->\s*\n\Z", re.S)
INSTANT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d{1,6})?)?(?:Z|[+-]\d\d:\d\d)"
                     r"|\d{8}T\d{6}Z")  # and the compact form of file names
ATTEMPT = re.compile(r"(att-\d{8}T\d{6}Z-)[0-9a-f]{8}")
ELIDED = ("…", "...")


class Block:
    """One fenced block of a page, with the marker comment right above it (if any)."""

    def __init__(self, path: Path, text: str, match: re.Match[str]) -> None:
        self.path, self.lang, self.body = path, match.group(1), match.group(2)
        self.line = text.count("\n", 0, match.start()) + 1
        before = text[:match.start()]
        mark = MARK.search(before[before.rfind("<!--"):]) if "<!--" in before else None
        self.kind = None if mark is None else ("shown" if mark.group(1).startswith("shown")
                                               else "output")
        self.above = bool(mark and mark.group("above"))
        self.command = mark.group("body").strip() if mark else ""

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def page_blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    return [Block(path, text, m) for m in FENCE.finditer(text)]


def blocks(path: Path) -> list[tuple[str, str, int]]:
    """(language, body, line number) of every fenced block."""
    return [(b.lang, b.body, b.line) for b in page_blocks(path)]


def _distinct(found: list[Block], key: Callable[[Block], object]) -> list[Block]:
    """The first of each group of blocks that would run the same commands and check the same
    thing (a Japanese twin's copy of its English page's block, a set-up shown twice): running
    the copy again proves nothing more: a block left out is, byte for byte, one that runs."""
    seen: dict[object, Block] = {}
    for block in found:
        seen.setdefault(key(block), block)
    return list(seen.values())


ALL = [b for p in DOCS for b in page_blocks(p)]
#: every runnable block, each distinct one once
CASES = _distinct([b for b in ALL if b.lang in ("python", "sh", "bash")],
                  lambda b: (b.lang, b.body))


@pytest.fixture(scope="session")
def _fixtures_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's fixtures (source files only), copied once per session (per worker);
    never run in: each block gets its own copy of it (:func:`_workspace`)."""
    work = tmp_path_factory.mktemp("docs-fixtures") / "fixtures"
    copy_source(REPO / "fixtures", work)
    return work


def _workspace(tmp_path: Path, fixtures: Path) -> Path:
    """A scratch copy of the repository's fixtures, laid out like the repository."""
    work = tmp_path / "repo"
    shutil.copytree(fixtures, work / "fixtures", symlinks=True)
    return work


def _env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["SPECDOJO_CLI"] = str(work / "fixtures" / "demo" / "bin" / "fake-specdojo")
    env.pop("SPECDOJO_PROJECT", None)
    env.pop("SPECDOJO_ROUTINE_QUIET", None)
    return env


def _script_lines(body: str) -> Iterator[tuple[str, int]]:
    """(command, expected exit code) of each line of a shell block that runs."""
    for raw in body.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or ("pip install" in line and "&&" not in line):
            continue
        if "pip install" in line:  # "pip install … && cmd": the package is installed already
            line = line.split("&&", 1)[1].strip()
        if line.startswith("python -m pytest"):
            continue  # the test suite itself: it is what is running this
        match = EXIT.search(line)
        yield EXIT.sub("", line), int(match.group(1)) if match else 0


def _script(body: str, capture: str | None = None) -> str:
    """One /bin/sh script running every line of ``body`` with its exit code checked; with
    ``capture``, the last line's stdout goes to that file."""
    lines = list(_script_lines(body))
    out = ['__check() { __rc=$?; if [ "$__rc" -ne "$1" ]; then',
           '  printf "\\n>>> line %s exited %s, expected %s\\n" "$2" "$__rc" "$1" >&2; exit 99;',
           "fi; }"]
    for n, (command, expected) in enumerate(lines, 1):
        out.append(f"printf '%s\\n' {_quote('$ ' + command)}")
        if capture is not None and n == len(lines):
            out.append(f"{{ {command}\n}} >{_quote(capture)}")
        else:
            out.append(command)
        out.append(f"__check {expected} {n}")
    return "\n".join(out) + "\n"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def _run_shell(body: str, work: Path, capture: str | None = None) -> None:
    proc = subprocess.run(["/bin/sh", "-c", _script(body, capture)], cwd=work, env=_env(work),
                          capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert 0 == proc.returncode, f"{proc.stdout}\n{proc.stderr}"


@pytest.mark.parametrize("block", CASES, ids=[b.name for b in CASES])
def test_doc_block_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                        _fixtures_copy: Path) -> None:
    """The code block runs as written."""
    work = _workspace(tmp_path, _fixtures_copy)
    if block.lang == "python":
        monkeypatch.chdir(work / "fixtures" / "demo")
        for key, value in _env(work).items():
            monkeypatch.setenv(key, value)
        exec(compile(block.body, block.name, "exec"), {"__name__": "__doc_block__"})
    else:
        _run_shell(block.body, work)


# --- sample outputs ----------------------------------------------------------------------------


class Window:
    """The wall-clock span of one sample's commands: an instant printed within it is a stamp
    of this run (a ledger's ``at``), which no sample can reproduce."""

    def __init__(self) -> None:
        self.start = datetime.now(UTC) - timedelta(seconds=2)
        self.end = self.start

    def close(self) -> None:
        self.end = datetime.now(UTC) + timedelta(seconds=2)

    def holds(self, text: str) -> bool:
        try:
            when = datetime.fromisoformat(text.replace("Z", "+00:00"))  # both forms parse
        except ValueError:
            return False
        return when.tzinfo is not None and self.start <= when <= self.end


def _same_word(sample: str, printed: str, window: Window) -> bool:
    """Two pieces of text with instants and attempt ids in them: equal but for those."""
    pattern, instants, pos = [], [], 0
    sample = ATTEMPT.sub(r"\1", sample)
    for m in INSTANT.finditer(sample):
        pattern += [re.escape(sample[pos:m.start()]), f"({INSTANT.pattern})"]
        instants.append(m.group(0))
        pos = m.end()
    pattern.append(re.escape(sample[pos:]))
    got = re.fullmatch("".join(pattern), ATTEMPT.sub(r"\1", printed))
    if got is None:
        return False
    return all(g == want or window.holds(g) for g, want in zip(got.groups(), instants,
                                                                 strict=True))


def _text_matches(sample: list[str], printed: list[str], window: Window) -> bool:
    """Line by line, ``…`` standing for any number of lines."""
    if not sample:
        return not printed
    head, rest = sample[0], sample[1:]
    if head.strip() in ELIDED:
        return any(_text_matches(rest, printed[i:], window) for i in range(len(printed) + 1))
    return bool(printed) and _same_word(head.rstrip(), printed[0].rstrip(), window) and \
        _text_matches(rest, printed[1:], window)


def _json_part(sample: Any, printed: Any, window: Window) -> bool:
    """``sample`` is a part of ``printed``: see the module's docstring."""
    if isinstance(sample, dict):
        return isinstance(printed, dict) and all(
            k in printed and _json_part(v, printed[k], window) for k, v in sample.items())
    if isinstance(sample, list):
        if not isinstance(printed, list):
            return False
        items = iter(printed)
        return all(any(_json_part(want, got, window) for got in items) for want in sample)
    if isinstance(sample, str) and isinstance(printed, str):
        return _same_word(sample, printed, window)
    return bool(sample == printed and type(sample) is type(printed))


def _above(block: Block) -> Block:
    """The nearest shell block above ``block`` on its page."""
    found = [b for b in page_blocks(block.path) if b.line < block.line and b.lang in ("sh", "bash")]
    assert found, f"{block.name}: no sh block above it"
    return found[-1]


#: every sample output, each distinct one (same set-up, command and sample) once
OUTPUTS = _distinct([b for b in ALL if b.kind == "output"],
                    lambda b: (b.lang, b.body, b.command, b.above and _above(b).body))


@pytest.mark.parametrize("block", OUTPUTS, ids=[b.name for b in OUTPUTS])
def test_sample_output_is_what_the_command_prints(block: Block, tmp_path: Path,
                                                 _fixtures_copy: Path) -> None:
    """The sample is the output of its command, run for real (the set-up above it first)."""
    assert block.command and block.lang in ("text", "json"), block.name
    work = _workspace(tmp_path, _fixtures_copy)
    window = Window()
    if block.above:
        _run_shell(_above(block).body, work)
    capture = tmp_path / "printed.out"
    _run_shell(block.command, work, capture=str(capture))
    window.close()
    demo = f"{work / 'fixtures' / 'demo'}{os.sep}"
    printed = capture.read_text(encoding="utf-8").replace(demo, "").replace(f"{work}{os.sep}", "")
    if block.lang == "json":
        assert _json_part(orjson.loads(block.body), orjson.loads(printed), window), \
            f"{block.name}: the sample is not part of what `{block.command}` printed:\n{printed}"
    else:
        assert _text_matches(block.body.splitlines(), printed.splitlines(), window), \
            f"{block.name}: `{block.command}` printed:\n{printed}"


def test_every_text_block_is_a_checked_output_or_says_why_not() -> None:
    """A ```text block is either a sample output (checked above) or marked as shown only."""
    unmarked = [b.name for b in ALL if b.lang == "text" and b.kind is None]
    assert [] == unmarked


def test_the_japanese_twins_check_the_same_outputs() -> None:
    """A page and its Japanese twin show the same commands' outputs."""
    for ja in sorted((REPO / "docs").glob("*.ja.md")):
        en = ja.with_name(ja.name.replace(".ja.md", ".md"))
        commands = [[b.command for b in page_blocks(p) if b.kind == "output"] for p in (en, ja)]
        assert commands[0] == commands[1], ja.name


def test_the_comparison_can_fail(tmp_path: Path) -> None:
    """The allowances are narrow: a changed word, a missing line, an instant not of this run or
    a JSON value that differs is a mismatch."""
    window = Window()
    window.close()
    now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert _text_matches(["a 2026-08-07T02:30:00.000Z", "…", "z"],
                         [f"a {now}", "b", "c", "z"], window)
    assert _text_matches(["run att-20260807T080200Z-6ec04874"],
                         ["run att-20260807T080200Z-0123abcd"], window)
    assert not _text_matches(["a 2026-08-07T02:30:00.000Z"], ["a 2026-08-07T02:31:00.000Z"],
                             window)
    assert not _text_matches(["a", "b"], ["a"], window)
    assert not _text_matches(["a"], ["a", "b"], window)
    assert not _text_matches(["run att-20260807T080200Z-6ec04874"],
                             ["run att-20260808T080200Z-6ec04874"], window)
    assert _json_part({"x": [{"id": 2}]}, {"x": [{"id": 1}, {"id": 2, "y": 0}], "z": 1}, window)
    assert not _json_part({"x": [{"id": 2}, {"id": 1}]}, {"x": [{"id": 1}, {"id": 2}]}, window)
    assert not _json_part({"x": 1}, {"x": True}, window)
    assert not _json_part({"x": None}, {}, window)


def test_docs_have_runnable_blocks() -> None:
    """The README carries the two set-up commands, and the pages carry sample outputs, so
    these tests are not vacuous."""
    readme = [b for lang, b, _ in blocks(REPO / "README.md") if lang == "sh"]
    assert any("run --due" in b for b in readme)
    assert any("pytest" in b for b in readme)
    assert {b.path.name for b in ALL if b.kind == "output"} >= {
        "operator-guide.md", "operator-guide.ja.md", "README.md", "reference.md"}
    assert len(OUTPUTS) > 10 and len(CASES) > 40  # the copies left out, not the blocks
