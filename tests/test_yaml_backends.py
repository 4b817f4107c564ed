"""The C parser of the fast definition path comes from a wheel, and its absence only costs speed.

ruamel.yaml 0.19 reads through ``ruamel.yaml.clibz``, which ships no wheels (pip downloads a Zig
toolchain and compiles it on every cold install); the dependencies pin ruamel.yaml below 0.19,
whose C parser is ``ruamel.yaml.clib`` (wheels for CPython 3.11-3.13 on Linux and macOS). Where
no wheel exists (another interpreter, a newer Python) the extension is missing: every file then
takes the located pure-Python path, with the same messages and the same results.
``nox -s wheels`` checks that every dependency has a wheel on each supported target.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

from tests.conftest import REPO, cli_environ
from tests.test_validate_corpus import DEMO, INVALID, VALID, make_project

# Run one `validate` per root in a process where the C extension cannot be imported (as where
# pip found no wheel for it), or where it can; prints [[code, stdout, stderr], ...] and whether
# the fast path was available.
SCRIPT = """
import contextlib, io, json, sys
if sys.argv[1] == "without":
    for name in ("_ruamel_yaml", "_ruamel_yaml_clibz"):
        sys.modules[name] = None  # import of it raises ImportError
from specdojo_routine.cli import main
from specdojo_routine.store.definitions.fastyaml import FastReader
results = []
for root in sys.argv[2:]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["validate", "--root", root])
    results.append([code, out.getvalue(), err.getvalue()])
print(json.dumps([FastReader.available(), results]))
"""


def _validate(extension: str, roots: list[Path]) -> tuple[bool, list[list[object]]]:
    done = subprocess.run([sys.executable, "-c", SCRIPT, extension, *map(str, roots)],
                          cwd=REPO, env=cli_environ(), capture_output=True, text=True,
                          timeout=300, check=True)
    available, results = json.loads(done.stdout)
    return bool(available), results


def test_without_the_c_extension_validate_says_the_same_through_the_pure_path(
    tmp_path: Path,
) -> None:
    """With ``_ruamel_yaml`` not importable the fast path is off, and `validate` gives every
    exit code, summary and message that it gives with the C parser."""
    roots = [make_project(tmp_path / "valid", VALID), DEMO]
    roots += [make_project(tmp_path / case, INVALID / case)
              for case in ("yaml-tabs", "yaml-duplicate-keys", "routine-unknown-keys",
                           "job-templates", "action-job-inputs")]
    fast_available, fast = _validate("with", roots)
    pure_available, pure = _validate("without", roots)
    assert (True, False, fast) == (fast_available, pure_available, pure)
    assert [0, 0] == [code for code, _, _ in fast[:2]]


def test_ruamel_is_capped_below_the_release_whose_c_parser_has_no_wheels() -> None:
    """The dependencies name ruamel.yaml < 0.19 and its wheel-shipping ``ruamel.yaml.clib``
    (on CPython), never the ``libyaml`` extra (0.19's ``ruamel.yaml.clibz``, built from
    source)."""
    deps = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))[
        "project"]["dependencies"]
    named = {Requirement(d).name: Requirement(d) for d in deps}
    ruamel, clib = named["ruamel.yaml"], named.get("ruamel.yaml.clib")
    assert (set(), False, True, True) == (
        ruamel.extras, ruamel.specifier.contains("0.19.0"), ruamel.specifier.contains("0.18.17"),
        clib is not None and clib.marker is not None
        and clib.marker.evaluate({"platform_python_implementation": "CPython",
                                  "python_version": "3.13"}))
