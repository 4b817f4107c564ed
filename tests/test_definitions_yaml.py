"""The located YAML path (store/definitions/safeyaml.py) on what the definitions audit found:
comments where the round-trip reader refused valid files, alias expansion measured in
characters, a file too big for memory, and block scalars the fast path must leave to it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from specdojo_routine.store.definitions import safeyaml
from tests.test_definitions import load, messages

ACTION = "action: {kind: specdojo, args: [index]}\n"


@pytest.fixture(params=["fast", "pure"])
def path_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test runs with the fast path on, and with every file read by the located path."""
    monkeypatch.setenv("SPECDOJO_ROUTINE_PURE_YAML", "1" if request.param == "pure" else "0")
    return str(request.param)


def parse(text: str) -> tuple[list[str], Any]:
    report, data = safeyaml._parse(text, "x.yaml", "routine")
    return [str(p) for p in report.problems], data


# --- comments ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "description"), [
    ("description:  # why\n  Weekly summary\n\n", "Weekly summary"),
    ("description:\n  # note\n  |- # x\n  text\n", "text"),
    ("description: # a\n  # b\n\n  >\n  folded\n  # not a comment here\n",
     "folded # not a comment here\n"),
])
def test_comments_before_a_value_on_the_next_line_are_valid_yaml(
    text: str, description: str) -> None:
    """A comment after ``key:`` or on a line of its own before the value: read, no problem."""
    problems, data = parse(f"id: rtn-x\ninterval: 6h\n{text}{ACTION}")
    assert ([], description) == (problems, data["description"])


def test_a_problem_beside_such_a_comment_is_located(tmp_path: Path, path_kind: str) -> None:
    """A real problem of a file with such a comment is reported where it is, on both paths."""
    text = f"id: rtn-y\ninterval: 6x\ndescription:  # why\n  Weekly summary\n\n{ACTION}"
    defs = load(tmp_path, {"routines/rtn-y.yaml": text})
    assert ["routines/rtn-y.yaml:2:11: Invalid interval"] == [
        m.split(': "', 1)[0] for m in messages(defs)]


def test_a_duplicate_id_beside_such_a_comment_is_located(
        tmp_path: Path, path_kind: str) -> None:
    """The duplicate routine id is reported at each file's ``id`` value, not at 1:1."""
    text = f"interval: 6h\ndescription:\n  # note\n  |- # x\n  t\nid: rtn-a\n{ACTION}"
    defs = load(tmp_path, {"routines/a/rtn-a.yaml": text, "routines/b/rtn-a.yaml": text})
    assert [6, 6] == [p.line for p in defs.problems if "duplicate routine id" in p.message]


def test_a_constructor_surprise_names_no_exception_class(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the YAML library raises while building, the message is the user's, at 1:1."""

    class Broken:
        def load(self, source: str) -> Any:
            raise AssertionError("")

    monkeypatch.setattr(safeyaml, "_yaml", Broken)
    problems, data = parse(f"id: rtn-x\ninterval: 6h\n{ACTION}")
    assert (None, ["x.yaml:1:1: YAML parse error: the document cannot be read as plain "
                   "data"]) == (data, problems)
