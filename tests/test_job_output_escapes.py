"""Control characters in an input reach ``job run --dry-run`` and ``job show`` escaped, as in
every other output: a value cannot repaint or hide the lines an operator reviews."""

from __future__ import annotations

from conftest import Project, period_job

VALUE = "\x1b[31mRED\rOVER\u2028x\x85y"
SHOWN = "\\x1b[31mRED\\rOVER\\u2028x\\x85y"


def test_dry_run_and_show_escape_control_characters(project: Project) -> None:
    project.job("job-note", period_job("Note", "'printf \"%s\" \"{{inputs.period}}\" >/dev/null'"))
    dry = project.cli("job", "run", "--job", "job-note", "--input", f"period={VALUE}",
                      "--dry-run")
    assert 0 == dry.returncode, dry.stderr
    assert f"idempotency_key: job-note:{SHOWN}" in dry.stdout.splitlines()
    assert f"  period: {SHOWN}" in dry.stdout.splitlines()
    assert f"command: printf \"%s\" \"{SHOWN}\" >/dev/null" in dry.stdout.splitlines()
    assert not any(c in dry.stdout for c in "\x1b\r\u2028\x85")
    done = project.cli("job", "run", "--job", "job-note", "--input", f"period={VALUE}", "--json")
    assert 0 == done.returncode, done.stderr
    run_id = done.stdout.split('"run_id":')[1].split('"')[1]
    show = project.cli("job", "show", run_id)
    assert f"inputs: period={SHOWN}" in show.stdout.splitlines()
    assert f"idempotency_key: job-note:{SHOWN}" in show.stdout.splitlines()
    assert not any(c in show.stdout for c in "\x1b\r\u2028\x85")
