"""An invalid definition makes `list` exit 1 (the health rule it shares with `status`, SPEC
§14): `list` says so on stdout as `status` does, and `list --json` and `status --json` carry
`problems`, so a health check learns why it failed, not only that it did."""

from __future__ import annotations

import orjson

from tests.conftest import Project


def _one_good_one_broken(project: Project) -> None:
    project.routine("rtn-ok", "interval: 1h\naction: {kind: specdojo, args: [a]}\n")
    assert 0 == project.cli("run", "--due").returncode
    project.routine("rtn-bad", "interval: 1h\naction: {kind: specdojo, args: [a]\n")


def test_list_says_why_it_exits_1_for_an_invalid_definition(project: Project) -> None:
    _one_good_one_broken(project)
    listed = project.cli("list")
    status = project.cli("status")
    assert (1, 1) == (listed.returncode, status.returncode)
    assert "routines/rtn-bad.yaml:4:1: YAML parse error" in listed.stderr
    assert "unhealthy: invalid definitions (see stderr; run `validate`)" in \
        listed.stdout.splitlines()
    assert "unhealthy: invalid definitions (see stderr; run `validate`)" in \
        status.stdout.splitlines()


def test_status_names_invalid_definitions_beside_unhealthy_routines(project: Project) -> None:
    """Both reasons for exit 1 are said, not only the first."""
    project.routine("rtn-fail", "interval: 1h\naction: {kind: specdojo, args: [broken]}\n")
    project.exit_codes({"broken": 3})
    assert 1 == project.cli("run", "--due").returncode
    project.routine("rtn-bad", "interval: 1h\naction: {kind: specdojo, args: [a]\n")
    lines = project.cli("status").stdout.splitlines()
    assert ["unhealthy: 1 of 1 routine(s): rtn-fail",
            "unhealthy: invalid definitions (see stderr; run `validate`)"] == lines[-2:]
    assert "unhealthy: invalid definitions (see stderr; run `validate`)" in \
        project.cli("list").stdout.splitlines()


def test_list_json_carries_the_problems_that_make_it_exit_1(project: Project) -> None:
    """SPEC §8's document plus `problems`, as `status --json` has: each invalid definition's
    line with its file:line:col; empty when every definition is valid."""
    project.routine("rtn-ok", "interval: 1h\naction: {kind: specdojo, args: [a]}\n")
    assert [] == orjson.loads(project.cli("list", "--json").stdout)["problems"]
    _one_good_one_broken(project)
    listed = project.cli("list", "--json")
    doc = orjson.loads(listed.stdout)
    assert 1 == listed.returncode
    assert ["rtn-ok"] == [r["id"] for r in doc["routines"]]
    [problem] = doc["problems"]
    assert "routines/rtn-bad.yaml:4:1: YAML parse error" in problem
