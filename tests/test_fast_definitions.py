"""The fast definition path (store/definitions/fastyaml.py) changes speed,
never a result or a message.

Both paths run over every case of the bad-input corpus, the valid fixtures, the demo, the real
upstream project and generated documents: the fast path either gives up (``None``) or reads a
file exactly as the located slow path does, and whole-project results - definitions, problems,
`validate` output - are byte-identical with the fast path on and off
(``SPECDOJO_ROUTINE_PURE_YAML=1``).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specdojo_routine.core import validation
from specdojo_routine.store.config import resolve_project
from specdojo_routine.store.definitions import load as definitions
from specdojo_routine.store.definitions.fastyaml import FastReader
from tests.conftest import cli_environ
from tests.test_validate_corpus import CASES, DEMO, INVALID, VALID, make_project

REPO = Path(__file__).resolve().parent.parent
UPSTREAM = Path("/work/shared/fixtures/upstream-project.tar.gz")
FAST = definitions._fast()

pytestmark = pytest.mark.skipif(
    not FastReader.available(), reason="ruamel's C parser (ruamel.yaml.clib) is not installed"
)


def slow(source: str) -> tuple[list[str], Any]:
    report, data = definitions._parse(source, "x.yaml", "routine")
    return [str(p) for p in report.problems], data


def agrees(source: str) -> bool:
    """The fast path gave up, or it read what the slow path reads from a clean file."""
    fast = FAST.load(source)
    if fast is None:
        return True
    problems, data = slow(source)
    return problems == [] and validation.plain(data) == fast and _same_types(fast, data)


def _same_types(fast: Any, data: Any) -> bool:
    """Plain types match too: True is not 1, "1" is not 1."""
    if isinstance(fast, dict):
        return isinstance(data, dict) and list(fast) == list(data) and all(
            _same_types(fast[k], data[k]) for k in fast)
    if isinstance(fast, list):
        return isinstance(data, list) and len(fast) == len(data) and all(
            _same_types(a, b) for a, b in zip(fast, data, strict=True))
    base = (bool, int, str, type(None))
    return next(t for t in base if isinstance(fast, t)) is next(
        t for t in base if isinstance(data, t))


def corpus_files() -> list[tuple[str, str]]:
    """(name, text) of every definition file we have: corpus, fixtures, demo, upstream."""
    found = []
    for top in (INVALID, VALID, DEMO):
        for path in sorted(top.rglob("*.y*ml")):
            found.append((str(path.relative_to(REPO)), path.read_text("utf-8", "replace")))
    if UPSTREAM.is_file():
        with tarfile.open(UPSTREAM) as tar:
            for member in tar.getmembers():
                if member.isfile() and member.name.endswith((".yaml", ".yml")):
                    data = tar.extractfile(member)
                    assert data is not None
                    found.append((member.name, data.read().decode("utf-8", "replace")))
    return found


def test_every_corpus_file_reads_alike_or_takes_the_slow_path() -> None:
    """Per file: the fast path is sure only where it reads exactly what the slow path reads."""
    files = corpus_files()
    assert len(files) > 100
    assert [] == [name for name, text in files if not agrees(text)]


def test_the_fast_path_is_taken_for_the_valid_files() -> None:
    """Not a vacuous proof: the valid fixtures, the demo and upstream's files read fast."""
    files = [(n, t) for n, t in corpus_files() if not n.startswith("fixtures/invalid")]
    refused = [name for name, text in files if FAST.load(text) is None]
    assert ([], True) == (refused, len(files) >= 15)


def test_the_fast_path_refuses_what_it_is_not_sure_of() -> None:
    """Tags, anchors, floats, merge keys, odd line breaks, directives: the slow path's job."""
    doubtful = [
        "a: !!str 1\n", "a: &x 1\nb: *x\n", "a: 1.5\n", "<<: {a: 1}\n", "a: b\u2028c\n",
        "%YAML 1.2\n---\na: 1\n", "a: 0x1f\n", "a: 017\n", "a: 1_000\n", "[1, 2]\n", "",
        "a: 1\n---\nb: 2\n", "? [a]\n: 1\n", "a: 1\na: 2\n", "1: x\n", "\ufeffa: 1\n",
        "a: ! x\n", "a: yes\nb: [" + "[" * 70 + "]" * 71 + "\n", "k: 1\n...\n...\n",
        "k: \t1\n", "k: |#\n  x\n", "k: >x\n", "k:\n  |#\n  x\n", "k:\n  # c\n  >#\n  x\n",
        "k:\n- - |#\n    x\n", "? k\n: |#\n  x\n", "k: |\n  \n    x\n", "k: >-\n \n  \n x\n",
        "k: |\n   \n    \nz: 1\n", 'k: ["m":]\n', "k: [a, 'm':x]\n", 'k: {"m":x}\n',
    ]
    assert [] == [text for text in doubtful if FAST.load(text) is not None]
    assert {"a": "yes", "b": "on", "c": None, "d": True, "e": -12} == FAST.load(
        "a: yes\nb: on\nc: ~\nd: true\ne: -12\n")
    assert {"a": "x\n", "b": "\n\ny", "c": "\nz"} == FAST.load(  # block scalars it is sure of
        "a:\n  # c\n  | # c\n  x\nb: |-\n\n    \n    y\nc: >-\n  \n  z\n")


@pytest.mark.parametrize("case", CASES)
def test_corpus_case_is_byte_identical_on_both_paths(case: str, tmp_path: Path) -> None:
    """Every bad-input case: the same definitions and the same problems, fast path on or off."""
    root = make_project(tmp_path / "project", INVALID / case)
    assert load(root, pure=False) == load(root, pure=True)


@pytest.mark.parametrize("source", [VALID, DEMO])
def test_valid_projects_load_identically_on_both_paths(source: Path, tmp_path: Path) -> None:
    root = make_project(tmp_path / "project", source) if source is VALID else source
    fast, pure = load(root, pure=False), load(root, pure=True)
    assert (fast, True) == (pure, len(fast.routines) >= 5)


def test_validate_output_is_byte_identical_in_real_processes(tmp_path: Path) -> None:
    """Every corpus case through the real CLI in a fresh process per path: stdout, stderr
    and the exit code of `validate` are the same bytes."""
    roots = [str(make_project(tmp_path / case, INVALID / case)) for case in CASES]
    fast, pure = cli(roots, "0"), cli(roots, "1")
    assert (fast, len(CASES)) == (pure, len(fast))
    assert all(code == 1 and err for code, _, err in fast)


def test_a_duplicate_id_found_on_the_fast_path_is_located(tmp_path: Path) -> None:
    """The second file with a taken id is re-read slowly so its message has the id's place."""
    root = make_project(tmp_path / "project")
    for name in ("rtn-a", "rtn-b"):
        (root / "routines" / f"{name}.yaml").write_text(
            "name: x\n\n   \nid: rtn-a\ninterval: 1h\naction: {kind: exec-auto}\n")
    fast, pure = load(root, pure=False), load(root, pure=True)
    messages = [str(p) for p in fast.problems]
    assert (fast, True) == (pure, any(m.startswith("routines/rtn-b.yaml:4:5:") for m in messages))


def load(root: Path, *, pure: bool) -> definitions.Definitions:
    previous = os.environ.get("SPECDOJO_ROUTINE_PURE_YAML")
    os.environ["SPECDOJO_ROUTINE_PURE_YAML"] = "1" if pure else "0"
    try:
        return definitions.load_definitions(resolve_project(root, env={}))
    finally:
        if previous is None:
            del os.environ["SPECDOJO_ROUTINE_PURE_YAML"]
        else:
            os.environ["SPECDOJO_ROUTINE_PURE_YAML"] = previous


def cli(roots: list[str], pure: str) -> list[list[Any]]:
    """``validate`` of each root, in one process: [exit code, stdout, stderr] each."""
    env = cli_environ()
    env["SPECDOJO_ROUTINE_PURE_YAML"] = pure
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, *roots], capture_output=True, text=True, cwd=REPO,
        env=env, timeout=300, check=True,
    )
    return list(json.loads(done.stdout))


SCRIPT = """
import contextlib, io, json, sys
from specdojo_routine.cli import main
results = []
for root in sys.argv[1:]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["validate", "--root", root])
    results.append([code, out.getvalue(), err.getvalue()])
print(json.dumps(results))
"""


# --- generated documents -----------------------------------------------------------------------

PIECES = [
    "id", "rtn-a", "a", "b", " ", "  ", "\n", "\t", ":", ": ", "- ", "-", "#", " #", "'", '"',
    "\\", "[", "]", "{", "}", ",", "?", "? ", "|", ">", "|-", ">+", "&", "*", "!", "%", "@", "`",
    "~", "null", "true", "yes", "on", "0", "1", "-1", "07", "0x1", "1e3", ".5", "1_0", "12:30",
    "2026-08-07", "\r\n", "\r", "é", "\u00a0", "\u0085", "...", "---", "<<", "=", "\\n", "\\x41",
    "\\u00e9", "\\/", "\\ ", "\n  |#", "\n  |", "\n    ", "|#", '"m":', "'m':",
]


@st.composite
def documents(draw: st.DrawFn) -> str:
    """Text built from YAML-significant pieces: mostly broken, sometimes subtle."""
    starts = st.sampled_from(["k: ", "k2: ", "  k: ", "- ", "k:", ""])
    lines = draw(st.lists(st.tuples(starts, st.lists(st.sampled_from(PIECES), max_size=6)),
                          min_size=1, max_size=6))
    text = "\n".join(start + "".join(rest) for start, rest in lines)
    return text + draw(st.sampled_from(["", "\n"]))


@st.composite
def mappings(draw: st.DrawFn) -> str:
    """Well-formed block and flow mappings with tricky scalars in every quoting style."""
    scalar = st.sampled_from(PIECES).map(str.strip).filter(bool)
    value = st.one_of(
        scalar, scalar.map(lambda s: "'" + s.replace("'", "''") + "'"),
        scalar.map(lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'),
        st.lists(scalar, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
        scalar.map(lambda s: "|\n  " + s), scalar.map(lambda s: ">-\n  " + s + "\n  " + s),
    )
    keys = draw(st.lists(st.sampled_from(["id", "a", "b", "c d", "k-1", "x"]), min_size=1,
                         max_size=5, unique=True))
    return "".join(f"{key}: {draw(value)}\n" for key in keys)


@st.composite
def block_scalars(draw: st.DrawFn) -> str:
    """Block scalars with every kind of header, on the key's line or a line of their own, and
    leading empty lines of any width before content of any indentation."""
    header = draw(st.sampled_from("|>")) + draw(st.sampled_from(
        ["", "-", "+", "2", "-1", "+2", "2-", "#", "-#", " #c", "  # c", "x", " x", "0"]))
    where = draw(st.sampled_from([" ", "\n  ", "\n  # c\n  ", "\n- ", "\n  - ", "  "]))
    empty = draw(st.lists(st.sampled_from(["", " ", "  ", "   ", "    "]), max_size=3))
    content = draw(st.lists(st.sampled_from(["  a", "   b", "    c", "  ", "", " d"]),
                            max_size=3))
    end = draw(st.sampled_from(["\n", "\nz: 1\n", "", "\r\n"]))
    return "".join(["k:", where, header, "\n", *(e + "\n" for e in empty), "\n".join(content),
                    end])


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(block_scalars())
def test_generated_block_scalars_read_alike_or_take_the_slow_path(text: str) -> None:
    assert agrees(text)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_generated_text_reads_alike_or_takes_the_slow_path(text: str) -> None:
    assert agrees(text)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mappings())
def test_generated_mappings_read_alike_or_take_the_slow_path(text: str) -> None:
    assert agrees(text)


@st.composite
def commented(draw: st.DrawFn) -> str:
    """Valid mappings with comments wherever YAML allows one: after a key whose value is on
    the next line, on lines of their own before a value or a block scalar's header, after a
    header, between entries."""
    word = st.sampled_from(["a", "b c", "on", "12", "x: y", "'q'", '"d"', "- e"])
    comment = st.sampled_from(["# c", "#", "# k: v", "# |"])
    forms = [  # what follows the key's colon
        lambda w, c: f" {_quoted(w)}  {c}\n",
        lambda w, c: f"  {c}\n  {_quoted(w)}\n",
        lambda w, c: f"\n  {c}\n\n  {_quoted(w)}\n",
        lambda w, c: f"\n  {c}\n  |- {c}\n  {w}\n",
        lambda w, c: f"  {c}\n  >\n  {w}\n  {c}\n",
        lambda w, c: f" | {c}\n  {w}\n\n",
    ]
    keys = draw(st.lists(st.sampled_from(["id", "a", "b", "k-1", "x"]), min_size=1, max_size=4,
                         unique=True))
    text = ""
    for key in keys:
        form = draw(st.sampled_from(forms))
        text += draw(st.sampled_from(["", "\n", "# between\n"]))
        text += f"{key}:" + form(draw(word), draw(comment))
    return text


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commented())
def test_comments_anywhere_are_read_alike_by_both_paths(text: str) -> None:
    """The located path reads every such file without a problem, and as the fast path does
    (which reads them all)."""
    problems, data = slow(text)
    fast = FAST.load(text)
    assert ([], True) == (problems, fast is not None and agrees(text))
    assert validation.plain(data) == fast


def test_without_the_c_parser_everything_takes_the_slow_path(tmp_path: Path) -> None:
    """``SPECDOJO_ROUTINE_PURE_YAML=1`` (what a missing extension also gives) turns it off."""
    root = make_project(tmp_path / "project", VALID)
    calls = io.StringIO()
    real = FAST.load

    def spy(source: str) -> Any:
        calls.write("x")
        return real(source)

    FAST.load = spy  # type: ignore[method-assign]
    try:
        load(root, pure=True)
        pure_calls = len(calls.getvalue())
        load(root, pure=False)
    finally:
        FAST.load = real  # type: ignore[method-assign]
    assert (0, True) == (pure_calls, len(calls.getvalue()) >= 8)


# --- the digest ----------------------------------------------------------------------------------

PLAIN = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text()
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=500, deadline=None)
@given(PLAIN)
def test_the_digest_is_the_canonical_json_of_before(data: Any) -> None:
    """orjson's bytes are json.dumps' (sorted keys, compact, UTF-8), so the routine digests
    in existing ledgers do not change."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                           allow_nan=False).encode("utf-8")
    assert hashlib.sha256(canonical).hexdigest() == definitions.digest(data)


@pytest.mark.parametrize("escape", ["\\ud800", "\\uDFFF", "\\U0000d83d"])
def test_a_surrogate_escape_is_left_to_the_slow_path_which_locates_it(escape: str) -> None:
    """A ``\\u`` escape of half a surrogate pair is not a character: the fast path gives up
    (its data would reach the digest, which cannot encode it) and the slow path reports it
    where it is written."""
    source = f'id: rtn-s\ninterval: 1h\naction: {{kind: specdojo, args: ["a{escape}"]}}\n'
    problems, data = slow(source)
    assert (None, None) == (FAST.load(source), data)
    assert 1 == len(problems) and problems[0].startswith("x.yaml:3:33: \\ud"), problems
