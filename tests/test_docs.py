"""Every code block in README.md and docs/ runs, so the docs cannot rot.

- ```python blocks are executed (in a fresh namespace, cwd = a copy of the demo project);
- ```sh / ```bash blocks: every command line is run by /bin/sh in a copy of the repository's
  demo (``pip install`` lines are skipped: the package is installed already). A trailing
  ``# exit N`` comment states the expected exit code (default 0). Lines inside a block run in
  order in the same directory, so a block can set up what the next line needs. The README's
  ``python -m pytest`` is skipped: it is the suite that runs this test.
- blocks fenced as ```text, ```yaml, ```json, ```console or ```crontab are shown, not run.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import copy_source

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("**/*.md"))]
FENCE = re.compile(r"^```([a-z]*)[^\n]*\n(.*?)^```", re.M | re.S)
EXIT = re.compile(r"\s+#\s*exit\s+(\d+)\s*$")


def blocks(path: Path) -> list[tuple[str, str, int]]:
    """(language, body, line number) of every fenced block."""
    text = path.read_text(encoding="utf-8")
    return [(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1)
            for m in FENCE.finditer(text)]


CASES = [(p, lang, body, line) for p in DOCS for lang, body, line in blocks(p)
         if lang in ("python", "sh", "bash")]


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
    return env


def _run_shell_block(body: str, work: Path) -> None:
    for raw in body.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or ("pip install" in line and "&&" not in line):
            continue
        if "pip install" in line:  # "pip install … && cmd": the package is installed already
            line = line.split("&&", 1)[1].strip()
        if line.startswith("python -m pytest"):
            continue  # the test suite itself: it is what is running this
        match = EXIT.search(line)
        expected = int(match.group(1)) if match else 0
        command = EXIT.sub("", line)
        proc = subprocess.run(["/bin/sh", "-c", command], cwd=work, env=_env(work),
                              capture_output=True, text=True, timeout=120)
        assert "Traceback" not in proc.stderr, proc.stderr
        assert expected == proc.returncode, f"{command}\n{proc.stdout}\n{proc.stderr}"


@pytest.mark.parametrize(("path", "lang", "body", "line"), CASES,
                         ids=[f"{p.relative_to(REPO)}:{line}" for p, _, _, line in CASES])
def test_doc_block_runs(path: Path, lang: str, body: str, line: int, tmp_path: Path,
                        monkeypatch: pytest.MonkeyPatch, _fixtures_copy: Path) -> None:
    """The code block runs as written."""
    work = _workspace(tmp_path, _fixtures_copy)
    if lang == "python":
        monkeypatch.chdir(work / "fixtures" / "demo")
        for key, value in _env(work).items():
            monkeypatch.setenv(key, value)
        exec(compile(body, f"{path.name}:{line}", "exec"), {"__name__": "__doc_block__"})
    else:
        _run_shell_block(body, work)


def test_docs_have_runnable_blocks() -> None:
    """The README carries the two set-up commands, so this test is not vacuous."""
    readme = [b for lang, b, _ in blocks(REPO / "README.md") if lang == "sh"]
    assert any("run --due" in b for b in readme)
    assert any("pytest" in b for b in readme)
