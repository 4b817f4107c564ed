"""A property of the shell quoting scanner (SPEC §7.2): values are data, never code.

Command templates are built from pieces whose meaning is known - bare, quoted and nested
placeholders, comments, here-documents, ``${...}`` - with backslash-newlines (line continuations)
sprinkled where the shell removes them, and filled with hostile values. Either the renderer
refuses the template (it must, where no quoting is safe), or ``/bin/sh -n`` accepts the command
and running it prints exactly the expected words: the value arrives as one literal word, or as
literal text inside the quotes it sits in, and the marker file the value tries to create never
appears.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specdojo_routine.core.templates import TemplateError, render_shell

P = "{{inputs.v}}"
# Where a template may hold a line continuation: the shell removes it, the meaning stays.
BNL = "¦"
MARKER = "PWNED"


@attrs.frozen
class Piece:
    """One command line of a template, and the NUL-terminated words it prints for value v."""

    template: str
    words: Callable[[str], list[str]]
    safe: bool = True


def _chomp(v: str) -> list[str]:
    return [v.rstrip("\n")]  # $( ) drops the trailing newlines of its output


PIECES = [
    Piece(f"pr{BNL}intf '%s\\0' {BNL}{P}{BNL}", lambda v: [v]),
    Piece(f"printf{BNL} '%s\\0' \"a{BNL}{P}{BNL}b\"", lambda v: [f"a{v}b"]),
    Piece(f"printf '%s\\0' 'a{P}b' --x={BNL}{P}", lambda v: [f"a{v}b", f"--x={v}"]),
    # inside single quotes a backslash-newline is two literal characters
    Piece(f"printf '%s\\0' 'a\\\n{P}'", lambda v: [f"a\\\n{v}"]),
    Piece(f"printf '%s\\0' \"it's {BNL}{P}\" 'say \"{P}\"'", lambda v: [f"it's {v}", f'say "{v}"']),
    Piece(f"printf '%s\\0' \"${BNL}({BNL}printf '%s' {BNL}{P}{BNL})\"", _chomp),
    Piece(f"printf '%s\\0' \"$(printf '%s' \"$(printf '%s' \"{BNL}{P}\")\")\"", _chomp),
    Piece(f"printf '%s\\0' \"`printf '%s' \"{BNL}{P}\"`\"", _chomp),
    # after a continuation, `#` still starts a word, hence a comment
    Piece(f"printf '%s\\0' start {BNL}#{P} {P}", lambda v: ["start"]),
    Piece(f"printf '%s\\0' \"${BNL}{{X:-d}}\" ${BNL}{{X:-\"a b\"}}", lambda v: ["d", "a b"]),
    Piece(f"tr '\\n' '\\0' <{BNL}<{BNL}'EOF'\nlit $(touch {MARKER}) 'q\\\nEOF",
          lambda v: ["lit $(touch PWNED) 'q\\"]),
    Piece(f"tr '\\n' '\\0' <{BNL}<{BNL}-{BNL}EOF\n\thome ${{X:-d}} $(printf sub)\n\tEOF",
          lambda v: ["home d sub"]),
    # no quoting is safe in these: the renderer must refuse them
    Piece(f"printf '%s\\0' \"${BNL}{{X:-{P}}}\"", lambda v: [], safe=False),
    Piece(f"tr '\\n' '\\0' <{BNL}<EOF\n{P}\nEOF", lambda v: [], safe=False),
    Piece(f"printf '%s\\0' ${BNL}({BNL}( 1 + {P} ))", lambda v: [], safe=False),
]

HOSTILE = ["'", '"', "$(touch PWNED)", "`touch PWNED`", "\n", "#", "\\", ";", "&&", " ", "\\\n",
           "'$(touch PWNED)'", "\ntouch PWNED\n#", "EOF", "}", ")", "${X:-y}", "*", "\t", "-n"]
values = st.lists(
    st.sampled_from(HOSTILE) | st.text(st.characters(codec="utf-8", exclude_characters="\0"),
                                       max_size=3),
    max_size=8,
).map("".join)


def _sh(*args: str, cwd: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["/bin/sh", *args], cwd=cwd, capture_output=True, timeout=20,
                          env={"PATH": os.environ["PATH"]}, stdin=subprocess.DEVNULL)


@settings(max_examples=150, deadline=None)
@given(pieces=st.lists(st.sampled_from(PIECES), min_size=1, max_size=4), value=values,
       continuations=st.lists(st.booleans(), min_size=24, max_size=24))
def test_a_value_is_one_literal_word_whatever_the_template(
    pieces: list[Piece], value: str, continuations: list[bool],
) -> None:
    """Rendered commands parse, print the value literally and never run it; templates where
    no quoting is safe are refused."""
    flags = iter(continuations)
    template = "\n".join(piece.template for piece in pieces)
    while BNL in template:
        template = template.replace(BNL, "\\\n" if next(flags, False) else "", 1)
    if not all(piece.safe for piece in pieces):
        with pytest.raises(TemplateError):
            render_shell(template, {"inputs.v": value})
        return
    command = render_shell(template, {"inputs.v": value})
    with tempfile.TemporaryDirectory() as cwd:
        checked = _sh("-n", "-c", command, cwd=cwd)
        assert 0 == checked.returncode, (command, checked.stderr)
        done = _sh("-eu", "-c", command, cwd=cwd)
        assert (0, []) == (done.returncode, os.listdir(cwd)), (command, done.stderr)
    expected = [word for piece in pieces for word in piece.words(value)]
    assert [*expected, ""] == done.stdout.decode().split("\0"), command
