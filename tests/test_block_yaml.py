"""The line-by-line recogniser (store/blockyaml.py) reads what the located slow path reads, or
gives up: property tests over generated block documents, clean and damaged."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specdojo_routine.store import blockyaml, definitions
from tests.test_fast_definitions import PIECES, _same_types, slow

FAST = definitions._fast()


def recognised(text: str) -> Any:
    return blockyaml.read(text, FAST._plain, definitions.MAX_DEPTH)


def agrees(text: str) -> bool:
    """The recogniser gave up, or read exactly what the slow path reads from a clean file."""
    fast = recognised(text)
    if fast is None:
        return True
    problems, data = slow(text)
    from specdojo_routine.core import validation

    return problems == [] and validation.plain(data) == fast and _same_types(fast, data)


KEYS = ["id", "name", "a", "b-c", "_x", "Id", "on", "y", "no", "true", "null", "True", "NULL",
        "k1", "a_b", "x-", "e"]
WORDS = ["x", "Daily report 1", "Asia/Tokyo", "rtn-a", "0", "1", "-12", "007", "-0", "1.5", "1e3",
         "0o17", "0x1f", "+1", "1_000", "yes", "no", "on", "~", "null", "Null", "True", "FALSE",
         ".inf", ".nan", "=", "<<", "a b", "a  b", "(x)", "$HOME", "^x", "./x", "~x", "日報",
         "é", "-x", "--", "- x", "a -b", "x.y", "1/2", "12:30", "a:b", "a #b", "a#b", "a,b",
         "[a]", "{a}", "&a", "*a", "!x", "|", ">", "'", '"', "%", "@", "`", "?", "? x", ": x",
         "99999999999999999999", "123456789012345678", "-", "a\\b", "\u00a0", "x ",
         # at and beyond the edges of the non-ASCII ranges the reader takes
         "\u00c0x", "x\u024f", "\u0250", "\u00bf", "\u30ff", "\u3100", "\u9fff", "\ua000",
         "x\U0001f600", "\u2028"]
QUOTED = ["", " ", "a # b", "a: b", "it''s", "'", "x\\n", "[a]", "\u00e9", "#", "a,b", " lead",
          "trail ", "\U0001f600", "\u00a0"]


def scalar() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(WORDS),
        st.sampled_from(QUOTED).map(lambda q: "'" + q + "'"),
        st.sampled_from(QUOTED).map(lambda q: '"' + q.replace('"', "") + '"'),
    )


def flow() -> st.SearchStrategy[str]:
    seps = st.sampled_from([", ", ",", " , ", ",  "])
    return st.tuples(st.lists(scalar(), max_size=4), seps, st.sampled_from(["", " "])).map(
        lambda t: "[" + t[2] + t[1].join(t[0]) + t[2] + "]")


TAILS = ["", "", "", " ", "  ", " # note", "# x", " #", "\t"]


@st.composite
def block(draw: st.DrawFn, indent: int = 0, depth: int = 0) -> list[str]:
    """The lines of a block mapping at ``indent``, sometimes nested, sometimes subtly off."""
    lines: list[str] = []
    for key in draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=5)):
        pad = " " * indent
        kind = draw(st.sampled_from(["value", "value", "flow", "map", "list", "empty"]
                                    if depth < 3 else ["value", "flow", "empty"]))
        tail = draw(st.sampled_from(TAILS))
        if kind == "value":
            lines.append(f"{pad}{key}: {draw(scalar())}{tail}")
        elif kind == "flow":
            lines.append(f"{pad}{key}: {draw(flow())}{tail}")
        elif kind == "empty":
            lines.append(f"{pad}{key}:{tail}")
        else:
            lines.append(f"{pad}{key}:{tail}")
            step = draw(st.sampled_from([2, 2, 4, 1, 0]))
            if kind == "map":
                lines += draw(block(indent + step, depth + 1))
            else:
                for item in draw(st.lists(st.one_of(scalar(), flow()), min_size=1, max_size=3)):
                    lines.append(f"{pad}{' ' * step}- {item}{draw(st.sampled_from(TAILS))}")
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(st.sampled_from(["", "   ", "# comment", f"{pad}  # c", "---",
                                               "...", " x", "- y", "%YAML 1.2"])))
    return lines


@st.composite
def documents(draw: st.DrawFn) -> str:
    text = "\n".join(draw(block()))
    if draw(st.booleans()):  # damage: a YAML-significant piece somewhere
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(PIECES)) + text[at:]
    return text + draw(st.sampled_from(["\n", "", "\n\n", "\r\n"]))


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_generated_block_documents_read_alike_or_give_up(text: str) -> None:
    assert agrees(text)


SAFE_WORDS = ["x", "Daily report 1", "Asia/Tokyo", "0", "-12", "yes", "on", "~", "true", "日報",
              "a -b", "(x)", "$HOME"]


@st.composite
def clean_documents(draw: st.DrawFn) -> str:
    """Documents wholly inside the recognised grammar: read, and read alike, every time."""
    def value() -> st.SearchStrategy[str]:
        words = st.sampled_from(SAFE_WORDS)
        return st.one_of(words, words.map(lambda w: f"'{w}'"), words.map(lambda w: f'"{w}"'),
                         st.lists(words, max_size=3).map(lambda ws: "[" + ", ".join(ws) + "]"))

    keys = draw(st.lists(st.sampled_from(["id", "name", "trigger", "on", "y", "k-1"]),
                         min_size=1, max_size=5, unique=True))
    lines = []
    for key in keys:
        shape = draw(st.sampled_from(["value", "map", "list", "null"]))
        if shape == "value":
            lines.append(f"{key}: {draw(value())}")
        elif shape == "null":
            lines.append(f"{key}:  # nothing")
        elif shape == "map":
            lines.append(f"{key}:")
            subkeys = draw(st.lists(st.sampled_from(["cron", "kind", "a"]), min_size=1,
                                    max_size=3, unique=True))
            lines += [f"  {sub}: {draw(value())}" for sub in subkeys]
        else:
            lines.append(f"{key}:")
            lines += [f"  - {draw(value())}" for _ in range(draw(st.integers(1, 3)))]
    return "\n".join(lines) + "\n"


@settings(max_examples=400, deadline=None)
@given(clean_documents())
def test_documents_of_the_grammar_are_recognised_and_read_alike(text: str) -> None:
    """Not a vacuous proof: inside the grammar the recogniser always answers, and rightly."""
    assert (recognised(text) is not None, True) == (True, agrees(text))


def test_what_it_gives_up_on() -> None:
    doubtful = ["a: 0o17\n", "a:\n- x\n", "true: 1\n", "a: 1\na: 2\n", "  a: 1\n", "a: b: c\n",
                "a: [a, [b]]\n", "a: {b: c}\n", "a: |\n  x\n", "a: &x 1\n", "a: !!str 1\n",
                "a: 'x'y\n", "a: b\n  c\n", "- a\n", "", "# only\n", "a: 1\r\n", "a: 1.5\n",
                "a:\n  - b: c\n", "? a\n: b\n", '"a": 1\n', "a: b#c\n"]
    assert [] == [text for text in doubtful if recognised(text) is not None]
    assert {"a": "yes", "b": ["x", "y'z"], "c": None, "d": {"e": -12, "f": "2 words"}} == \
        recognised("a: yes # c\nb: ['x', 'y''z']\nc:\n\n# c\nd:\n  e: -12\n  f: 2 words  \n")
