"""A newcomer's first ten minutes: the README's two set-up commands, in either order and as often
as you like, and `.ci/run`, which runs exactly those two commands, read from the README.

- tests copy only source files out of the repository (``copy_source``), never the state a run of
  the demo left in ``fixtures/``;
- the demo writes only git-ignored paths, and a second run right away has nothing due;
- `.ci/run` makes a fresh venv, runs README command 1 then 2, and stops when one fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.conftest import REPO, cli_environ, copy_source, extract_archive, source_files

CI = REPO / ".ci"
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid",
                           "-c", "commit.gpgsign=false", *args], cwd=cwd, capture_output=True,
                          text=True, check=True, timeout=60).stdout


def _readme_command(n: int, readme_dir: Path = REPO) -> str:
    done = subprocess.run([sys.executable, str(readme_dir / ".ci" / "readme_command.py"), str(n)],
                          capture_output=True, text=True, check=True, timeout=60)
    return done.stdout.strip()


@needs_git
def test_copy_source_takes_tracked_and_new_files_but_not_ignored_state(tmp_path: Path) -> None:
    """In a git checkout: tracked files and new unignored ones are copied; ignored runtime state
    (a ledger the demo wrote) is not."""
    repo = tmp_path / "repo"
    (repo / "demo" / "routines" / "generated").mkdir(parents=True)
    (repo / ".gitignore").write_text("demo/routines/generated/\n")
    (repo / "demo" / "routines" / "rtn-a.yaml").write_text("id: rtn-a\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "source")
    (repo / "demo" / "routines" / "rtn-new.yaml").write_text("id: rtn-new\n")
    (repo / "demo" / "routines" / "generated" / "routine-runs.jsonl").write_text("{}\n")
    copied = copy_source(repo / "demo", tmp_path / "copy")
    on_disk = sorted(p.relative_to(tmp_path / "copy").as_posix()
                     for p in (tmp_path / "copy").rglob("*") if p.is_file())
    assert (["routines/rtn-a.yaml", "routines/rtn-new.yaml"], on_disk) == (copied, copied)


def test_copy_source_outside_git_skips_runtime_state(tmp_path: Path) -> None:
    """Outside a git checkout (an unpacked sdist) the runtime-state directories are skipped."""
    src = tmp_path / "demo"
    for name in ("routines/rtn-a.yaml", "routines/generated/routine-state.json",
                 "routines/.locks/routine.lock", "execution/demo/heartbeat.log", "jobs/job-a.yaml"):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text("x\n")
    env_free = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path)}
    outside = subprocess.run(["git", "rev-parse"], cwd=src, env=env_free, capture_output=True,
                             check=False) if shutil.which("git") else None
    if outside is not None and outside.returncode == 0:
        pytest.skip("the temp dir is inside a git checkout")
    assert ["jobs/job-a.yaml", "routines/rtn-a.yaml"] == source_files(src)


def test_readme_has_exactly_the_two_set_up_commands() -> None:
    """What `.ci/run` runs: command 1 runs the demo, command 2 the test suite."""
    one, two = _readme_command(1), _readme_command(2)
    assert (True, True, True) == (
        one.startswith("python -m pip install -e . && ") and "run --due --root fixtures/demo"
        in one, two == "python -m pip install -e '.[test]' && python -m pytest -n auto",
        one in (REPO / "README.md").read_text(encoding="utf-8"))


@needs_git
def test_the_readme_demo_runs_twice_and_leaves_git_status_clean(tmp_path: Path) -> None:
    """README command 1 (its install step skipped: the package is installed) in a committed copy
    of the source tree: exit 0 twice, nothing due the second time, `git status` clean."""
    clone = tmp_path / "clone"
    copy_source(REPO, clone)
    _git(clone, "init", "-q")
    _git(clone, "add", "-A")
    _git(clone, "commit", "-q", "-m", "source")
    demo = _readme_command(1).split(" && ", 1)[1]
    env = cli_environ()
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    runs = [subprocess.run(["/bin/sh", "-ec", demo], cwd=clone, env=env, capture_output=True,
                           text=True, timeout=300) for _ in range(2)]
    state = sorted(p.relative_to(clone).as_posix() for p in clone.glob("fixtures/demo/**/*.json*"))
    assert (0, 0, "no due routines\n", "", True) == (
        runs[0].returncode, runs[1].returncode, runs[1].stdout,
        _git(clone, "status", "--porcelain", "--untracked-files=all"),
        "fixtures/demo/routines/generated/routine-runs.jsonl" in state), runs[0].stderr


def _ci_copy(tmp_path: Path, one: str, two: str) -> Path:
    """A directory holding this repository's .ci/ and a README whose set-up commands are ``one``
    and ``two``, with a stale .venv that `.ci/run` must replace."""
    work = tmp_path / "ci"
    shutil.copytree(CI, work / ".ci")
    (work / "README.md").write_text(
        f"# x\n\n## Set-up: two commands\n\n```sh\n{one}\n```\n\ntext\n\n```sh\n{two}\n```\n\n"
        "## Next\n\n```sh\necho never\n```\n", encoding="utf-8")
    (work / ".venv").mkdir()
    (work / ".venv" / "stale").write_text("left over\n")
    return work


def _ci_run(work: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env.update(CI="true", **extra)
    return subprocess.run([shutil.which("bash") or "bash", str(work / ".ci" / "run")], cwd=work,
                          env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=600)


def test_ci_installs_the_system_packages_the_tests_use_when_they_are_missing(
    tmp_path: Path,
) -> None:
    """On a machine without redis-server and chromium, `.ci/run` has apt-get update once and
    install each; one that cannot be installed is said in one line, and the README commands
    still run (its tests skip with their reason)."""
    work = _ci_copy(tmp_path, "echo one > order.txt", "echo two >> order.txt")
    bin_dir = tmp_path / "bin"  # a PATH with what .ci/run needs, and neither package
    bin_dir.mkdir()
    for name in ("sh", "rm", "dirname"):
        (bin_dir / name).symlink_to(shutil.which(name) or f"/bin/{name}")
    # the interpreter itself, not a launcher on PATH (a pyenv shim is a bash script that
    # needs bash and env, which this PATH leaves out)
    (bin_dir / "python3").symlink_to(Path(sys.executable).resolve())
    (bin_dir / "apt-get").write_text(
        '#!/bin/sh\necho "$*" >> "$APT_LOG"\ncase "$*" in *chromium*) exit 100 ;; esac\n')
    (bin_dir / "apt-get").chmod(0o755)
    log = tmp_path / "apt.log"
    done = _ci_run(work, PATH=str(bin_dir), APT_LOG=str(log))
    assert (0, "one\ntwo\n", ["update -qq", "install -y -qq redis-server",
                               "install -y -qq chromium"]) == (
        done.returncode, (work / "order.txt").read_text() if (work / "order.txt").exists()
        else done.stdout + done.stderr, log.read_text().splitlines())
    assert "ci: could not install chromium; the tests that need it will skip" in done.stderr


def test_ci_runs_readme_command_1_then_2_in_a_fresh_venv(tmp_path: Path) -> None:
    """`.ci/run` replaces any old .venv, then runs the README's first and second set-up
    commands, in that order, with the fresh venv's python first on PATH."""
    work = _ci_copy(tmp_path, 'echo "one $(command -v python)" > order.txt',
                    "echo two >> order.txt")
    done = _ci_run(work)
    venv_python = str(work / ".venv" / "bin" / "python")
    assert (0, f"one {venv_python}\ntwo\n", False, True) == (
        done.returncode, (work / "order.txt").read_text() if (work / "order.txt").exists()
        else done.stdout + done.stderr, (work / ".venv" / "stale").exists(),
        done.stdout.index("README command 1") < done.stdout.index("README command 2"))


def test_ci_fails_when_a_readme_command_fails(tmp_path: Path) -> None:
    """Command 1 fails: `.ci/run` exits with its code, says so and never runs command 2."""
    work = _ci_copy(tmp_path, "exit 3", "touch ran-two")
    done = _ci_run(work)
    assert (3, False, True) == (done.returncode, (work / "ran-two").exists(),
                                "README command 1 failed (exit 3)" in done.stderr)


# Without the filter attribute, a 3.12 or later warns that 3.14 will filter by default: an
# artefact of pretending to be an older 3.11, which does not warn.
@pytest.mark.filterwarnings("ignore:Python 3.14 will:DeprecationWarning")
@pytest.mark.parametrize("has_filter", [True, False])
def test_the_fixture_archives_extract_safely_on_every_python_311(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, has_filter: bool
) -> None:
    """A Python 3.11 before 3.11.4 (Debian 12's) has no tar ``"data"`` filter: the tests'
    extraction then checks the members itself, and refuses one that leaves the directory."""
    if not has_filter:
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    archive = tmp_path / "evil.tar"
    (tmp_path / "payload").write_text("x")
    with tarfile.open(archive, "w") as tar:
        tar.add(tmp_path / "payload", arcname="ok/file")
        tar.add(tmp_path / "payload", arcname="../escaped")
    into = tmp_path / "into"
    into.mkdir()
    with pytest.raises((ValueError, tarfile.TarError)):
        extract_archive(archive, into)
    assert not (tmp_path / "escaped").exists()
    extract_archive(REPO / "fixtures" / "upstream" / "upstream-project.tar.gz", into)
    assert (into / "upstream-project").is_dir()
