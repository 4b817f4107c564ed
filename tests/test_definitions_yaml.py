"""The located YAML path (store/definitions/safeyaml.py) on what the definitions audit found:
comments where the round-trip reader refused valid files, alias expansion measured in
characters, a file too big for memory, and block scalars the fast path must leave to it."""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from specdojo_routine.core.validation import Report
from specdojo_routine.store.definitions import load as definitions
from specdojo_routine.store.definitions import safeyaml
from specdojo_routine.store.definitions.deffile import MAX_CHARS, OUT_OF_MEMORY
from specdojo_routine.store.definitions.fastyaml import FastReader
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


# --- alias expansion ---------------------------------------------------------------------------


def test_aliases_of_a_long_scalar_stop_at_the_alias_past_the_character_budget(
        tmp_path: Path, path_kind: str) -> None:
    """Ten aliases of a 500,000-character scalar are 5 million characters from a 500 KB file:
    one located problem at the eighth alias (which passes ``MAX_CHARS``), none of the data
    built, on both paths (the fast path leaves every alias to the located one)."""
    text = (f"id: rtn-amp\ninterval: 6h\ndescription: &a {'x' * 500_000}\n"
            f"action: {{kind: specdojo, args: [{','.join(['*a'] * 10)}]}}\n")
    tracemalloc.start()
    defs = load(tmp_path, {"routines/rtn-amp.yaml": text})
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert FastReader.available() is False or definitions._fast().load(text) is None
    assert ([f"routines/rtn-amp.yaml:4:{33 + 7 * 3}: the document expands to more than "
             f"{MAX_CHARS} characters (an anchor/alias bomb?); a definition is small"], True) == (
        messages(defs), peak < 64 * 1024 * 1024)


def test_aliases_within_the_character_budget_are_read(tmp_path: Path) -> None:
    """A long scalar aliased a few times stays well inside the budget (four times the largest
    file)."""
    text = (f"id: rtn-amp\ninterval: 6h\ndescription: &a {'x' * 100_000}\n"
            f"action: {{kind: specdojo, args: [{','.join(['*a'] * 10)}]}}\n")
    defs = load(tmp_path, {"routines/rtn-amp.yaml": text})
    assert ([], 10) == (messages(defs), len(defs.routines[0].actions[0].args))


@st.composite
def aliased(draw: st.DrawFn) -> str:
    """A flow document whose strings, lists and mappings carry anchors that later aliases
    repeat, nested."""
    done: list[str] = []  # anchors whose node is complete, so an alias may name them

    def node(depth: int) -> str:
        kinds = ["str", "alias", "seq", "map"] if depth < 3 else ["str", "alias"]
        kind = draw(st.sampled_from(kinds))
        if kind == "alias" and done:
            return "*" + draw(st.sampled_from(done))
        if kind in ("str", "alias"):
            text = "'" + draw(st.text("xy é", max_size=6)) + "'"
        elif kind == "seq":
            text = "[" + ", ".join(node(depth + 1) for _ in range(draw(st.integers(0, 3)))) + "]"
        else:
            count = draw(st.integers(0, 3))
            text = "{" + ", ".join(f"k{i}: {node(depth + 1)}" for i in range(count)) + "}"
        if not draw(st.booleans()):
            return text
        done.append(f"a{len(done)}")
        return f"&{done[-1]} {text}"

    return f"top: {node(0)}\n"


def measure(value: Any) -> tuple[int, int]:
    """(values, characters of strings) of loaded data, every alias expanded."""
    if isinstance(value, dict):
        parts = [(1, len(k)) for k in value] + [measure(v) for v in value.values()]
    elif isinstance(value, list):
        parts = [measure(v) for v in value]
    else:
        return 1, len(value)
    return 1 + sum(n for n, _ in parts), sum(c for _, c in parts)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(aliased())
def test_the_scan_counts_what_aliases_expand_to(text: str) -> None:
    """The scan's values and characters (what the bounds are checked against) are those of
    the data the located path builds, aliases expanded."""
    scan = safeyaml._Scan(Report("x.yaml"))
    for event in YAML(typ="safe", pure=True).parse(text):
        scan.event(event)
    problems, data = parse(text)
    assert ([], measure(data)) == (problems, (scan.nodes, scan.chars))


# --- out of memory -----------------------------------------------------------------------------


def test_a_file_that_runs_out_of_memory_is_its_own_located_problem(
        tmp_path: Path, path_kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A MemoryError while one file is read or built is that file's problem at 1:1; the other
    files load."""
    from specdojo_routine.core import routine_rules

    real = routine_rules.build_routine

    def greedy(report: Report, node: Any, **kwargs: Any) -> Any:
        if kwargs["file_id"] == "rtn-b":
            raise MemoryError
        return real(report, node, **kwargs)

    monkeypatch.setattr(routine_rules, "build_routine", greedy)
    defs = load(tmp_path, {f"routines/{n}.yaml": f"id: {n}\ninterval: 6h\n{ACTION}"
                           for n in ("rtn-a", "rtn-b")})
    assert (["routines/rtn-b.yaml:1:1: " + OUT_OF_MEMORY], ["rtn-a"]) == (
        messages(defs), [r.id for r in defs.routines])


def test_running_out_of_memory_while_parsing_is_located_too(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The located path's own backstop, for the callers that build nothing (agent and
    notification configuration)."""

    class Greedy:
        def load(self, source: str) -> Any:
            raise MemoryError

    monkeypatch.setattr(safeyaml, "_yaml", Greedy)
    assert (["x.yaml:1:1: " + OUT_OF_MEMORY], None) == parse(f"id: rtn-x\n{ACTION}")
