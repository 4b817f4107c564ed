"""The words of the simple command a shell template is in, for the rules that depend on which
command a placeholder is an argument of (pure; :mod:`.shellquote` feeds it).

Bash evaluates some arguments as arithmetic, where a quoted value such as ``a[$(cmd)]`` still
runs ``cmd``: the operands of ``[[ ... ]]``, the arguments of ``let``, the subscript of an
array element assigned (``a[...]=``, ``declare a[...]``, ``a=([...]=v)``), and every later
assignment to a variable declared ``-i`` (a name reference, ``-n``, reads the variable its
value names). dash reads the same text as ordinary words, so no quoting is safe for both:
:meth:`CommandWords.arithmetic` and :meth:`CommandWords.end_word` say why a value is refused.
Other commands run an argument as a shell command of their own (``sh -c``, ``ssh``,
``eval``...): quoting protects the outer shell only, and :meth:`CommandWords.inner_shell`
names them so that ``validate`` can warn.
"""

from __future__ import annotations

import re

# Words before the command name: reserved words, prefixes that run the next word.
_PREFIXES = frozenset({"!", "{", "if", "then", "else", "elif", "do", "while", "until", "time",
                       "command", "builtin", "exec", "nohup"})
_DECLARERS = frozenset({"declare", "typeset", "local"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "su"})
_RUNS_ITS_ARGUMENTS = frozenset({"eval", "ssh"})
# Patterns as text: ``re`` compiles (and caches) one when a template first needs it, not at
# the import that every command loading a Job Definition pays for.
_ASSIGNMENT = r"[A-Za-z_][A-Za-z0-9_]*\+?="
_INTEGER_OR_REFERENCE = r"[-+][A-Za-z]*[in][A-Za-z]*"
_COMMAND_OPTION = r"-[A-Za-z]*c[A-Za-z]*"
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"


class CommandWords:
    """The plain words of the current simple command of one code frame (top, ``$( )``, or
    ``...``), as far as the scanner has read. A plain class: one per frame of a scan."""

    __slots__ = ("name", "subscript", "test", "words")

    def __init__(self) -> None:
        self.words: list[str] = []
        self.name: str | None = None  # the first word not a prefix or assignment
        self.test = False  # inside [[ ... ]] (which a separator such as && does not end)
        self.subscript = False  # inside the [...] of an array element being assigned

    def end_word(self, word: str) -> str | None:
        """Record a word that ended. Returns what makes every later placeholder unsafe (a
        ``declare -i`` or ``-n``), else None."""
        if not word:
            return None
        self.words.append(word)
        if word in ("[[", "]]"):
            self.test = word == "[["
        if self.name is None:
            if word not in _PREFIXES and not re.match(_ASSIGNMENT, word):
                self.name = word
        elif self.name in _DECLARERS and re.fullmatch(_INTEGER_OR_REFERENCE, word):
            return (f"`{self.name} {word}` (bash evaluates later assignments to an integer "
                    "variable as arithmetic, and a name reference reads the variable its value "
                    "names; use a plain variable)")
        return None

    def end_command(self) -> None:
        """A separator (``;``, ``&``, ``|``, a newline, a parenthesis) ended the command."""
        self.words.clear()
        self.name = None
        self.subscript = False

    def bracket(self, word: str, following: str) -> None:
        """A ``[`` (``following`` is the character after it) or ``]`` outside quotes, ``word``
        the plain text of the word before it: opens or closes an array subscript where bash
        may assign one (``[`` starting a word and followed by a blank, or ``[[``, is a test)."""
        if following == "]":
            self.subscript = False
            return
        assigns = self.name is None or self.name in (*_DECLARERS, "export", "readonly")
        test = following in (" ", "\t", "\n", "[")  # `[ ... ]`, `[[`: not a subscript
        if assigns and (re.fullmatch(_NAME, word) or (not word and not test)):
            self.subscript = True

    def arithmetic(self) -> str | None:
        """Why a value in an argument of this command would be evaluated as arithmetic."""
        if self.test:
            return ("a [[ ... ]] test (bash evaluates its operands as arithmetic; use "
                    "[ ... ] instead)")
        if self.name == "let":
            return "a let command (bash evaluates its arguments as arithmetic)"
        if self.subscript:
            return "an array subscript [...] (bash evaluates it as arithmetic)"
        return None

    def inner_shell(self) -> str | None:
        """The command that runs the word being read as shell code of its own, if any: every
        argument of ``eval`` and ``ssh``; the word after ``-c`` of a shell or ``su`` (the
        arguments after it are data: ``sh -c '... "$1"' sh VALUE``)."""
        for index, word in enumerate(self.words):
            base = word.rsplit("/", 1)[-1]
            if base in _RUNS_ITS_ARGUMENTS:
                return base
            if base in _SHELLS and index + 1 < len(self.words) and re.fullmatch(
                    _COMMAND_OPTION, self.words[-1]):
                return f"{base} {self.words[-1]}"
        return None
