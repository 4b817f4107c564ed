"""A stand-in agent CLI for tests: ``python fake_agent.py NICKNAME CONTROL_JSON``.

It reads its whole stdin (the plan), appends what it got to ``CONTROL_JSON.record.jsonl`` (one
JSON object per launch: nickname, role, stdin, the file it came from (``stdin_from``), cwd,
the SPECDOJO_* environment) and behaves as
the control file says. The control file maps ``"<nickname>:<role>"`` or ``"<nickname>"`` to:

- ``stdout`` / ``stderr``: text to print (``{env:NAME}`` is replaced by ``$NAME``);
- ``write``: ``{path: text}`` files to write, relative to the working directory;
- ``fill`` (default true): fill the result file's mandatory ``_TODO_`` markers;
- ``outcome`` / ``verdict``: a key written into the result frontmatter's ``specdojo:`` block;
- ``result_extra``: text appended to the result (``{env:NAME}`` expanded too);
- ``recommendation``: what replaces ``recommendation: _TODO_`` (default ``approve``);
- ``sleep``: seconds to sleep (after printing); ``child``: start a background ``sleep 60``
  first and write its pid to ``CONTROL_JSON.child.pid``;
- ``ignore_term``: ignore SIGTERM (only SIGKILL ends it);
- ``result``: ``"remove"`` or ``"empty"`` the result file instead of filling it;
- ``exit``: the exit code (default 0).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def main() -> int:
    nickname, control_path = sys.argv[1], Path(sys.argv[2])
    stdin = sys.stdin.read()
    role = os.environ.get("SPECDOJO_AGENT_ROLE", "")
    control = json.loads(control_path.read_text()) if control_path.exists() else {}
    how = control.get(f"{nickname}:{role}", control.get(nickname, {}))
    record = {"nickname": nickname, "role": role, "stdin": stdin,
              "stdin_from": os.readlink("/proc/self/fd/0"), "cwd": os.getcwd(),
              "argv": sys.argv[3:],
              "env": {k: v for k, v in os.environ.items() if k.startswith("SPECDOJO_")}}
    with open(f"{control_path}.record.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
    if how.get("ignore_term"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if how.get("child"):
        child = subprocess.Popen(["sleep", "60"], start_new_session=False)
        Path(f"{control_path}.child.pid").write_text(str(child.pid))
    for rel, text in (how.get("write") or {}).items():
        target = Path(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    sys.stdout.write(_expand(how.get("stdout", f"{nickname} {role}: working\n")))
    sys.stderr.write(_expand(how.get("stderr", "")))
    sys.stdout.flush()
    sys.stderr.flush()
    _result(how)
    if how.get("sleep"):
        time.sleep(float(how["sleep"]))
    return int(how.get("exit", 0))


def _expand(text: str) -> str:
    for name, value in os.environ.items():
        text = text.replace(f"{{env:{name}}}", value)
    return text


def _result(how: dict[str, object]) -> None:
    path = Path(os.environ["SPECDOJO_RESULT_PATH"])
    if not path.exists():
        return
    if how.get("result") in ("remove", "empty"):
        path.unlink() if how["result"] == "remove" else path.write_text("")
        return
    text = path.read_text(encoding="utf-8")
    if how.get("fill", True):
        text = text.replace("_TODO_: 実施した内容", "Did the work.")
        text = text.replace("_TODO_: 変更したファイル", "see the commit")
        text = text.replace("recommendation: _TODO_",
                            f"recommendation: {how.get('recommendation', 'approve')}")
    text += _expand(str(how.get("result_extra", "")))
    for key in ("outcome", "verdict"):
        if key in how:
            text = text.replace("specdojo:\n", f"specdojo:\n  {key}: {how[key]}\n", 1)
    path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
