"""The POSIX-shell quoting scanner behind :func:`templates.render_shell` (pure).

A placeholder in task.command / precondition.command reaches /bin/sh as data: the scanner
tracks the POSIX quoting state of the literal text before each placeholder, and the value is
inserted so that the shell reads exactly the value, as part of the current word. Where the state
cannot be known for sure, :meth:`ShellScanner.unsafe` says why and the caller refuses instead of
guessing. The same where dash and bash (either may be /bin/sh) read the text differently, or
where bash evaluates even a quoted value as arithmetic (``$((`` closed by one ``)``, ``((``,
``$[``, and the commands :mod:`.shellwords` knows); and right after ``$NAME``, which a value
could lengthen. This module knows nothing of templates (:mod:`templates` imports it, not the
reverse).

A backslash-newline outside single quotes, comments and here-document bodies is a line
continuation: the shell removes it before it reads anything else, so the scanner skips it and
keeps its state, as if the two lines were one: in ``printf a \\<newline>#x`` the ``#`` starts a
comment, ``<\\<newline><EOF`` is a here-document and ``"$\\<newline>{X}"`` an expansion.
"""

from __future__ import annotations

import re

import attrs

from specdojo_routine.core.shellwords import CommandWords
from specdojo_routine.core.validation import NO_NUL

_DQ_SPECIAL = re.compile(r'[$`"\\]')
_HEREDOC_OP = re.compile(r"<<(-?)[ \t]*")
_HEREDOC_WORD = re.compile(r"""(?:[^\s;&|<>()'"\\]|'[^']*'|"(?:[^"\\]|\\.)*"|\\.)+""")
# A delimiter every shell reads alike: a plain word, or one wholly in '...' or "..." with no
# backslash, $ or backquote (quote removal differs by quote kind, and the shells differ on those).
_PLAIN_DELIMITER = re.compile(r"[^\s;&|<>()'\"\\$`]+|'[^'\\$`\n]+'|\"[^\"\\$`\n]+\"")
# A parameter name (or special parameter) that a value right after it could make longer.
_PARAMETER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]")
_UNQUOTE = re.compile(r"""\\(.)|['"]""")
_CONTINUATION = "\\\n"
# Characters whose meaning depends on the ones after them, and which of those may follow in
# turn (`$((`, `<<-`, `))`): the line continuations among them are removed before looking ahead.
_LOOKAHEAD = {"$": "({[", "<": "<-\t ", ")": ")", "(": "("}
_WORD_END = " \t\n;&|<>()"
_RAW = ("sq", "comment", "heredoc")  # where a backslash-newline is not removed
_INSIDE = {
    "heredoc": "a here-document body (pass the value as an argument instead)",
    "param": "a ${...} expansion",
    "arith": "an arithmetic expansion $((...)) or ((...)) (the shell evaluates the value as an "
             "expression)",
}
_CODE = ("top", "cmdsub", "backtick")


@attrs.define(repr=False)
class _Frame:
    kind: str  # top | cmdsub | backtick | sq | dq | param | arith | comment | heredoc
    depth: int = 0  # open parentheses inside $( ) and $(( ))
    strip_tabs: bool = False  # here-document of `<<-`
    delimiter: str = ""  # here-document delimiter
    quoted: bool = False  # here-document whose delimiter is quoted (its body is not expanded)
    command: CommandWords = attrs.Factory(CommandWords)  # of top, $( ) and `...`


def _single_quoted(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"


def _joined(text: str, i: int, follow: str) -> str:
    """``text`` without the line continuations right after ``text[i]``, nor after each next
    character in ``follow``: the shell joins those lines before it reads the operator that
    ``text[i]`` starts, so the scanner must look ahead on the joined text too."""
    j = i + 1
    while True:
        while text.startswith(_CONTINUATION, j):
            text = text[:j] + text[j + 2 :]
        if j >= len(text) or text[j] not in follow:
            return text
        j += 1


class ShellScanner:
    """The quoting state of a shell template, fed the literal text between placeholders."""

    def __init__(self) -> None:
        self.stack = [_Frame("top")]
        self.word_start = True  # the next character starts a word (so `#` starts a comment)
        self.word = ""  # the current unquoted word, to spot `case` inside $( )
        self.pending: list[_Frame] = []  # here-documents whose body starts at the next newline
        self.line = ""  # the current here-document body line
        self.hazard: str | None = None  # what the next placeholder would directly follow
        self.uncertain: str | None = None  # the state may be wrong from here on

    @property
    def top(self) -> _Frame:
        return self.stack[-1]

    def _ticks(self) -> int:
        return sum(frame.kind == "backtick" for frame in self.stack)

    def _push(self, kind: str) -> None:
        self.stack.append(_Frame(kind))
        self.word_start, self.word = kind in ("cmdsub", "backtick"), ""

    def _pop(self) -> None:
        self.stack.pop()
        self.word_start, self.word = False, "\0"

    def feed(self, text: str) -> None:
        self.hazard = None
        i = 0
        while i < len(text):
            if text[i] in _LOOKAHEAD and self.top.kind not in _RAW:
                text = _joined(text, i, _LOOKAHEAD[text[i]])
            if text[i] == "`" and self.top.kind != "backtick" and self._ticks():
                self.uncertain = "a backquote nested inside `...` (use $( ) instead)"
            i = self._step(text, i)

    def _step(self, text: str, i: int) -> int:
        kind, c = self.top.kind, text[i]
        if kind == "sq":
            if c == "'":
                self._pop()
            return i + 1
        if kind == "comment":
            if c == "\n":
                self.stack.pop()
                return i  # the newline also ends the line for the frame below
            return i + 1
        if kind == "heredoc":
            return self._heredoc_body(c, i)
        if c == "\\":
            return self._escape(text, i)
        if c == "$":
            return self._dollar(text, i)
        if kind == "dq":
            if c in '"`':
                self._pop() if c == '"' else self._push("backtick")
            return i + 1
        if kind in ("param", "arith"):
            return self._nested(text, i)
        return self._bare(text, i)

    def _escape(self, text: str, i: int) -> int:
        if i + 1 >= len(text):
            self.hazard = "a backslash"
            return i + 1
        nxt, kinds = text[i + 1], [frame.kind for frame in self.stack]
        if nxt == "\n":
            return i + 2  # a line continuation: removed by the shell, the state goes on
        if "backtick" in kinds and (
            nxt in "`\\$" or (nxt == '"' and "dq" in kinds[: kinds.index("backtick")])
        ):
            self.uncertain = f"an escaped {nxt} inside `...` (use $( ) instead)"
        self.word_start, self.word = False, "\0"
        return i + 2

    def _dollar(self, text: str, i: int) -> int:
        nxt = text[i + 1 : i + 2]
        self.word_start, self.word = False, "\0"
        if not nxt:
            self.hazard = "'$'"
            return i + 1
        if text.startswith("$((", i):
            self._push("arith")
            return i + 3
        if nxt in "({":
            self._push("cmdsub" if nxt == "(" else "param")
            return i + 2
        if nxt == "'" and self.top.kind != "dq":
            self.uncertain = "a $'...' string"
        elif nxt == "[":
            self.uncertain = "a $[...] expansion (bash arithmetic; write $((...)) instead)"
        rest = text[i + 1 :].replace(_CONTINUATION, "")
        name = _PARAMETER.match(rest)
        if name is not None and name.end() == len(rest):
            # `$HOME{{x}}`: a value starting with a letter would lengthen the name
            self.hazard = f"the parameter ${name[0]} (write ${{{name[0]}}} instead)"
        return i + 1

    def _nested(self, text: str, i: int) -> int:
        c, frame = text[i], self.top
        if c == "`":
            self._push("backtick")
        elif c == '"':
            self._push("dq")
        elif c == "'" and frame.kind == "param":
            if any(f.kind in ("dq", "arith") for f in self.stack):
                self.uncertain = 'a single quote inside "${...}" or inside a ${...} within $((...))'
            self._push("sq")
        elif c == "}" and frame.kind == "param":
            self._pop()
        elif c == "(" and frame.kind == "arith":
            frame.depth += 1
        elif c == ")" and frame.kind == "arith":
            if frame.depth:
                frame.depth -= 1
            else:
                self._pop()
                if text[i + 1 : i + 2] == ")":
                    return i + 2
                # bash then reads `$((` as `$( (` and `((` as `( (`; dash does not
                self.uncertain = ("a $(( or (( closed by a single ) (write $( ( or ( ( with a "
                                  "space for a subshell)")
        return i + 1

    def _bare(self, text: str, i: int) -> int:
        c, frame = text[i], self.top
        if c in "'\"":
            self._push("sq" if c == "'" else "dq")
        elif c == "`":
            self._pop() if frame.kind == "backtick" else self._push("backtick")
        elif c == "#" and self.word_start:
            self.stack.append(_Frame("comment"))
        elif text.startswith("<<", i):
            return self._heredoc_op(text, i)
        elif text.startswith("((", i) and self.word_start:
            self._end_word()  # bash's arithmetic command (and `for ((`), two subshells to dash
            self._push("arith")
            return i + 2
        elif c == ")" and frame.kind == "cmdsub" and not frame.depth:
            self._end_word()
            self._pop()
        elif c in " \t\n;&|()<>":
            self._end_word()
            if c in "\n;&|()":
                frame.command.end_command()
            if frame.kind == "cmdsub" and c in "()":
                frame.depth += 1 if c == "(" else -1
            self.word_start = True
            if c == "\n" and self.pending:
                self.stack.append(self.pending.pop(0))
        else:
            if c in "[]":
                frame.command.bracket(self.word, "]" if c == "]" else text[i + 1 : i + 2])
            self.word_start = False
            self.word += c
        return i + 1

    def _end_word(self) -> None:
        if self.word == "case" and self._ticks() + sum(f.kind == "cmdsub" for f in self.stack):
            self.uncertain = "a case statement inside $( ) or `...`"
        declared = self.top.command.end_word(self.word)
        self.uncertain = self.uncertain or declared
        self.word = ""

    def _heredoc_op(self, text: str, i: int) -> int:
        if text.startswith("<<<", i):
            return i + 3
        op = _HEREDOC_OP.match(text, i)
        assert op is not None
        word = _HEREDOC_WORD.match(text, op.end())
        if word is None or word.end() == len(text) or text[word.end()] not in _WORD_END:
            self.uncertain = "a here-document operator without a literal delimiter"
            return op.end()
        if not _PLAIN_DELIMITER.fullmatch(word[0]):
            self.uncertain = ("a here-document delimiter with a backslash, $, backquote or "
                              "partial quoting (write <<'EOF' or <<EOF)")
        delimiter = _UNQUOTE.sub(lambda m: m.group(1) or "", word[0])
        self.pending.append(_Frame("heredoc", strip_tabs=op[1] == "-", delimiter=delimiter,
                                   quoted=delimiter != word[0]))
        self.word_start = False
        return word.end()

    def _heredoc_body(self, c: str, i: int) -> int:
        if c != "\n":
            self.line += c
            return i + 1
        frame = self.top
        line = self.line.lstrip("\t") if frame.strip_tabs else self.line
        self.line = ""
        if not frame.quoted and line.endswith("\\"):
            # dash and bash disagree on whether the joined line can be the delimiter
            self.uncertain = "a backslash-newline inside a here-document body"
        if line == frame.delimiter:
            self.stack.pop()
            if self.pending:
                self.stack.append(self.pending.pop(0))
        return i + 1

    def _quoted_in_expansion(self) -> str | None:
        """A "..." inside $((...)), or inside a ${...} that is itself double-quoted or inside
        $((...)): the shells read the single quotes of an insertion there literally."""
        if self.top.kind != "dq":
            return None
        below = [frame.kind for frame in reversed(self.stack[:-1])]
        outer = next((kind for kind in below if kind != "param"), "top")
        if below[0] == "arith" or (below[0] == "param" and outer in ("dq", "arith")):
            return 'a "..." string within "${...}" or $((...))'
        return None

    def _arithmetic(self) -> str | None:
        """Whether bash could evaluate the value as arithmetic, whatever its quotes: inside
        $((...)) or ((...)) (even through a $( ) within), in [[ ... ]] or a let command."""
        if any(frame.kind == "arith" for frame in self.stack):
            return _INSIDE["arith"]
        found = (frame.command.arithmetic() for frame in self.stack if frame.kind in _CODE)
        return next((why for why in found if why is not None), None)

    def unsafe(self) -> str | None:
        """Why a value cannot be inserted safely here (``"inside ..."``; ``None``: it can)."""
        where = (self.uncertain or self.hazard or _INSIDE.get(self.top.kind)
                 or self._quoted_in_expansion() or self._arithmetic())
        if where is None:
            return None
        verb = "after" if self.uncertain else "right after" if self.hazard else "inside"
        return f"{verb} {where}"

    def inner_shell(self) -> str | None:
        """The command (``sh -c``, ``ssh``, ``eval``...) whose argument the next value is part
        of, and which runs it as shell code again, if any: quoting protects one shell only."""
        found = (frame.command.inner_shell() for frame in self.stack if frame.kind in _CODE)
        return next((name for name in found if name is not None), None)

    def insert(self, value: str, trusted: bool) -> str:
        """The text to put here so that the shell reads exactly ``value`` (check :meth:`unsafe`
        first)."""
        kind = self.top.kind
        if kind == "comment":
            text = value.replace("\r", " ").replace("\n", " ")
        elif kind == "sq":
            text = value.replace("'", "'\\''")
        elif kind == "dq":
            text = f'"{_single_quoted(value)}"' if _DQ_SPECIAL.search(value) else value
        else:
            text = value if trusted else _single_quoted(value)
            self.word_start, self.word = False, "\0"
        if self._ticks():
            text = text.replace("\\", "\\\\").replace("`", "\\`").replace("$", "\\$")
        return text

    def unterminated(self) -> str | None:
        """What the text fed so far leaves open (``"single quote"``, ``"$("``...), if anything."""
        if self.top.kind not in ("top", "comment", "heredoc"):
            names = {"sq": "single quote", "dq": "double quote", "backtick": "backquote"}
            return names.get(self.top.kind, self.top.kind.replace("cmdsub", "$("))
        return None


def shell_problem(command: str) -> str | None:
    """What makes ``/bin/sh -c command`` fail before it runs anything, or None: a NUL (no
    process receives one in its arguments) or a quote or substitution left open (a syntax
    error). One wording for ``validate`` and the run of every operator-written command."""
    if "\0" in command:
        return f"a NUL character (\\0) is in the command {NO_NUL}"
    scanner = ShellScanner()
    scanner.feed(command)
    left = scanner.unterminated()
    return None if left is None else f"unterminated {left} in shell command"
