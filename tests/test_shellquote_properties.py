"""A property of the shell quoting scanner (SPEC §7.2): values are data, never code.

Command templates are built from pieces whose meaning is known - bare, quoted and nested
placeholders, comments, here-documents, ``${...}`` - with backslash-newlines (line continuations)
sprinkled where the shell removes them, and filled with hostile values. Either the renderer
refuses the template (it must, where no quoting is safe), or both dash and bash (``/bin/sh`` is
either, depending on the host) accept the command with ``-n`` and running it prints exactly the
expected words: the value arrives as one literal word, or as literal text inside the quotes it
sits in, and the marker file the value tries to create never appears.

Some pieces are where the two shells read a template differently, or where bash evaluates a
quoted value as arithmetic (``a[$(cmd)]`` runs ``cmd``): a here-document delimiter holding a
backslash, a value right after ``$NAME``, ``$((`` closed by one ``)``, ``[[ ]]``, ``(( ))``,
``let``, ``declare -i`` and array subscripts. There the renderer may refuse; if it renders, both
shells must print what a literal value gives.
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
    renders: bool | None = True  # must render (True), must refuse (False), either (None)


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
    Piece(f"printf '%s\\0' \"${BNL}{{X:-{P}}}\"", lambda v: [], renders=False),
    Piece(f"tr '\\n' '\\0' <{BNL}<EOF\n{P}\nEOF", lambda v: [], renders=False),
    Piece(f"printf '%s\\0' ${BNL}({BNL}( 1 + {P} ))", lambda v: [], renders=False),
    Piece(f"printf '%s\\0' $[ {P} ]", lambda v: [], renders=False),
]
# Where the shells disagree, or bash evaluates a quoted value: refused, or exact in both.
DISPUTED = [
    Piece(f"tr '\\n' '\\0' <<'E\\X'\nEX\n{P}\nE\\X", lambda v: ["EX", v], renders=None),
    Piece(f"tr '\\n' '\\0' <<\"E\\X\"\nEX\n{P}\nE\\X", lambda v: ["EX", v], renders=None),
    Piece(f"printf '%s\\0' \"${BNL}PATH{BNL}{P}\"", lambda v: [os.environ["PATH"] + v],
          renders=None),
    Piece(f"printf '%s\\0' \"$((printf %s a) ; printf %s \"{P}\")\"",
          lambda v: _chomp(f"a{v}"), renders=None),
    Piece(f"[[ {P} -eq 1 ]] 2>/dev/null || printf '%s\\0' no", lambda v: ["no"], renders=None),
    Piece(f"({BNL}( {P} > 1 )) 2>/dev/null || printf '%s\\0' no", lambda v: ["no"],
          renders=None),
    Piece(f"let n={P} 2>/dev/null || printf '%s\\0' no", lambda v: ["no"], renders=None),
    Piece(f"a[\"{P}\"]=1 2>/dev/null || printf '%s\\0' no", lambda v: ["no"], renders=None),
    Piece(f"declare -i n 2>/dev/null || :; n=\"{P}\"; printf '%s\\0' \"$n\"", lambda v: [v],
          renders=None),
]

HOSTILE = ["'", '"', "$(touch PWNED)", "`touch PWNED`", "\n", "#", "\\", ";", "&&", " ", "\\\n",
           "'$(touch PWNED)'", "\ntouch PWNED\n#", "EOF", "}", ")", "${X:-y}", "*", "\t", "-n",
           "E\\X", "\nE\\X\ntouch PWNED #", "HOME[$(touch PWNED)]", "_X", "1", "9"]
values = st.lists(
    st.sampled_from(HOSTILE) | st.text(st.characters(codec="utf-8", exclude_characters="\0"),
                                       max_size=3),
    max_size=8,
).map("".join)


SHELLS = ("/bin/dash", "/bin/bash")


def _sh(shell: str, *args: str, cwd: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([shell, *args], cwd=cwd, capture_output=True, timeout=20,
                          env={"PATH": os.environ["PATH"]}, stdin=subprocess.DEVNULL)


@settings(max_examples=150, deadline=None)
@given(pieces=st.lists(st.sampled_from(PIECES), min_size=1, max_size=4), value=values,
       continuations=st.lists(st.booleans(), min_size=24, max_size=24))
def test_a_value_is_one_literal_word_whatever_the_template(
    pieces: list[Piece], value: str, continuations: list[bool],
) -> None:
    """Rendered commands parse in dash and bash, print the value literally in both and never
    run it; templates where no quoting is safe are refused."""
    _check(pieces, value, continuations)


@settings(max_examples=150, deadline=None)
@given(disputed=st.sampled_from(DISPUTED), value=values,
       around=st.lists(st.sampled_from(PIECES[:12]), max_size=2), at=st.integers(0, 2),
       continuations=st.lists(st.booleans(), min_size=24, max_size=24))
def test_where_the_shells_disagree_a_value_is_refused_or_literal_in_both(
    disputed: Piece, value: str, around: list[Piece], at: int, continuations: list[bool],
) -> None:
    """A disputed context among ordinary ones: the renderer refuses it, or dash and bash both
    print exactly the value and run none of it."""
    _check([*around[:at], disputed, *around[at:]], value, continuations)


def _check(pieces: list[Piece], value: str, continuations: list[bool]) -> None:
    flags = iter(continuations)
    template = "\n".join(piece.template for piece in pieces)
    while BNL in template:
        template = template.replace(BNL, "\\\n" if next(flags, False) else "", 1)
    if any(piece.renders is False for piece in pieces):
        with pytest.raises(TemplateError):
            render_shell(template, {"inputs.v": value})
        return
    try:
        command = render_shell(template, {"inputs.v": value})
    except TemplateError:
        assert not all(piece.renders for piece in pieces), template
        return
    expected = [word for piece in pieces for word in piece.words(value)]
    for shell in SHELLS:
        with tempfile.TemporaryDirectory() as cwd:
            checked = _sh(shell, "-n", "-c", command, cwd=cwd)
            assert 0 == checked.returncode, (shell, command, checked.stderr)
            done = _sh(shell, "-eu", "-c", command, cwd=cwd)
            assert (0, []) == (done.returncode, os.listdir(cwd)), (shell, command, done.stderr)
        assert [*expected, ""] == done.stdout.decode().split("\0"), (shell, command)
