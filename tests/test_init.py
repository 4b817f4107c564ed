"""`init` (SPEC §8): a new project skeleton that `validate` accepts, `run --due --dry-run`
explains and `run --due` runs; it never overwrites anything. Through the real CLI, in
subprocesses, as a newcomer types it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from specdojo_routine.app.skeleton import skeleton
from tests.conftest import cli_environ
from tests.test_schemas import error_paths

FILES = [".specdojo/specdojo.config.json", "routines/rtn-example.yaml", "jobs/job-example.yaml",
         ".gitignore"]


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "specdojo_routine", *args], cwd=cwd,
                          env=cli_environ(), capture_output=True, text=True, timeout=120,
                          check=False)


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_init_then_validate_then_a_dry_run_that_explains_the_example(tmp_path: Path) -> None:
    """In an empty directory: init names what it wrote and what to run next; validate finds
    one routine and one Job and nothing wrong; the dry run shows the example routine due, with
    its Job action, and writes nothing."""
    root = tmp_path / "reports"
    root.mkdir()
    made = cli(root, "init")
    validated = cli(root, "validate")
    before = tree(root)
    dry = cli(root, "run", "--due", "--dry-run")
    assert (0, "") == (made.returncode, made.stderr)
    assert made.stdout == (f'Created project "reports" in {root}:\n'
                           + "".join(f"  {name}\n" for name in FILES)
                           + "Next: python -m specdojo_routine validate\n"
                           "      python -m specdojo_routine run --due --dry-run\n")
    assert (0, "Validated: 1 routine(s), 1 job(s), 0 error(s), 0 warning(s)\n", "") == (
        validated.returncode, validated.stdout, validated.stderr)
    lines = dry.stdout.splitlines()
    assert (0, "dry run - nothing is recorded or executed", True, "  1. job job-example",
            before) == (dry.returncode, lines[0], lines[1].startswith("rtn-example  ")
                        and lines[1].endswith("  [due]"), lines[2], tree(root)), dry.stderr


def test_the_skeleton_runs_its_example_and_nothing_is_due_right_after(tmp_path: Path) -> None:
    """`run --due` runs the example Job (a shell echo: no SpecDojo CLI needed) and succeeds;
    the next `run --due` has nothing due (the example is hourly)."""
    assert 0 == cli(tmp_path, "init", "--project", "demo2").returncode
    ran, again = cli(tmp_path, "run", "--due"), cli(tmp_path, "run", "--due")
    assert (0, True, True, 0, "no due routines\n") == (
        ran.returncode, "hello from job-example, scheduled at " in ran.stdout,
        "Ran 1 attempt(s): 1 success, 0 failure, 0 skipped" in ran.stdout,
        again.returncode, again.stdout), ran.stdout + ran.stderr


def test_init_twice_refuses_and_changes_nothing(tmp_path: Path) -> None:
    """The second init: exit 2, one `error:` line naming the file that exists, every byte of
    the project as the first init left it."""
    assert 0 == cli(tmp_path, "init", "--project", "p").returncode
    first = tree(tmp_path)
    second = cli(tmp_path, "init", "--project", "p")
    assert (2, "", [f"error: {tmp_path / FILES[0]} already exists; init writes only new files "
                    "and wrote nothing (run it in an empty directory, or --root DIR)"],
            first) == (second.returncode, second.stdout, second.stderr.splitlines(),
                       tree(tmp_path))


@pytest.mark.parametrize("existing", FILES[1:])
def test_one_existing_file_of_the_skeleton_means_nothing_is_written(
    tmp_path: Path, existing: str
) -> None:
    """A directory that already has a file where the skeleton would put one (an own
    `.gitignore`, a routine of the same name): refused before anything is written."""
    (tmp_path / existing).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / existing).write_text("mine\n")
    done = cli(tmp_path, "init", "--project", "p")
    assert (2, True, {existing: b"mine\n"}) == (
        done.returncode, done.stderr.startswith(f"error: {tmp_path / existing} already exists"),
        tree(tmp_path))


def test_root_and_project_name_the_new_project(tmp_path: Path) -> None:
    """`--root DIR` (made if missing) and `--project ID`: the config selects that project, with
    `schedule_path` for the upstream CLI, and `where` finds it; the hints carry the --root."""
    done = cli(tmp_path, "init", "--root", "sub/new", "--project", "web.site_2")
    config = orjson.loads((tmp_path / "sub/new" / FILES[0]).read_bytes())
    where = cli(tmp_path, "where", "--root", "sub/new")
    assert (0, "Next: python -m specdojo_routine validate --root sub/new") == (
        done.returncode, done.stdout.splitlines()[-2])
    assert ({"version": 1, "current_project": "web.site_2", "projects": {"web.site_2": {
        "schedule_path": "schedule", "routines_path": "routines", "jobs_path": "jobs",
        "execution_path": "execution"}}}, "project         web.site_2") == (
        config, where.stdout.splitlines()[1])


@pytest.mark.parametrize(("args", "named"), [
    (["--project=-x"], '"-x" (--project)'),
    (["--project", "a b"], '"a b" (--project)'),
    (["--root", "My Project"], "\"My Project\" (the directory's name)"),
])
def test_an_unusable_project_id_is_a_usage_error(
    tmp_path: Path, args: list[str], named: str
) -> None:
    """An id that a shell or git would read as something else: exit 2, nothing written."""
    done = cli(tmp_path, "init", *args)
    assert (2, True, {}) == (done.returncode, done.stderr.startswith(
        f"error: cannot use {named} as a project id: "), tree(tmp_path)), done.stderr


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_gitignore_keeps_locks_and_caches_out_and_the_ledgers_in(tmp_path: Path) -> None:
    """After a run in a git checkout of the skeleton: the locks and caches are ignored, the
    routine ledger and the Job Run ledger are not (they are the audit trail)."""
    assert 0 == cli(tmp_path, "init", "--project", "p").returncode
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True, timeout=60)
    assert 0 == cli(tmp_path, "run", "--due").returncode
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all",
                             "--ignored"], cwd=tmp_path, capture_output=True, text=True,
                            check=True, timeout=60).stdout.splitlines()
    ignored = {line[3:] for line in status if line.startswith("!! ")}
    untracked = {line[3:] for line in status if line.startswith("?? ")}
    assert (True, True, True, True) == (
        {"routines/.locks/routine-run.flock", "routines/.cache/definitions.json"} <= ignored,
        all(".locks/" in p or ".cache/" in p for p in ignored),
        {"routines/generated/routine-runs.jsonl", *FILES} <= untracked,
        any(p.startswith("execution/jobs/runs/") and p.endswith(".jsonl") for p in untracked))


def test_the_skeleton_names_each_file_once_in_the_order_init_reports() -> None:
    """What init writes is what it lists (the CLI tests above read that list)."""
    assert FILES == list(skeleton("p"))


@pytest.mark.parametrize(("name", "kind"), [(FILES[1], "rtn"), (FILES[2], "job")])
def test_the_examples_match_the_schemas_editors_use(name: str, kind: str) -> None:
    """The example routine and Job validate against docs/schemas/, as a user's copies will."""
    from ruamel.yaml import YAML

    assert set() == error_paths(kind, YAML(typ="safe").load(skeleton("p")[name]))


def test_a_command_outside_any_project_points_at_init(tmp_path: Path) -> None:
    """A newcomer who runs a command where there is no project (no config up the tree, or
    none at --root) is told, in one line, how to reach one or to create one here with init
    - and following that advice works."""
    empty = tmp_path / "empty"
    empty.mkdir()
    config = empty / ".specdojo" / "specdojo.config.json"
    if any((p / ".specdojo" / "specdojo.config.json").exists() for p in tmp_path.parents):
        pytest.skip("a project above the temporary directory is found by the walk")
    walked, rooted = cli(empty, "status"), cli(tmp_path, "status", "--root", str(empty))
    assert (2, f"error: no .specdojo/specdojo.config.json found in {empty} or any parent; "
               "run inside a SpecDojo project, pass --root DIR, or create one here with "
               "`init`\n") == (walked.returncode, walked.stderr)
    assert (2, f"error: {config}: no SpecDojo config here; pass the --root of a project, or "
               f"create one here with `init --root {empty}`\n") == (rooted.returncode,
                                                                     rooted.stderr)
    assert 0 == cli(tmp_path, "init", "--root", str(empty)).returncode
    assert 0 == cli(empty, "status").returncode
