"""Lock holder / contender run in a subprocess by tests/test_locks.py.

Usage: python tests/lockhelper.py MODE DIR [ARG]
  routine-hold DIR [AT]  take the routine lock (clock fixed at AT), print "held", wait for stdin EOF
  routine-try DIR        take and release the routine lock: exit 0, or print the error, exit 75
  routine-cycle DIR N    take/release the routine lock N times; print the number of LockBusy
  exec-hold DIR          take the exec lock, print its token, wait for stdin EOF
  exec-race DIR GO       print "ready", wait for file GO, try the exec lock once:
                         print "won" and wait for stdin EOF, or print "busy" and exit 75
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from specdojo_routine.core import errors, timefmt
from specdojo_routine.store.locks import execlock
from specdojo_routine.store.locks import routine as locks


def _say(text: str) -> None:
    print(text, flush=True)


def _routine_hold(path: Path, at: str | None) -> int:
    fixed = timefmt.parse_instant(at) if at else datetime.now(UTC)

    def clock() -> datetime:
        return fixed if at else datetime.now(UTC)

    with locks.routine_lock(path, clock=clock):
        _say("held")
        sys.stdin.read()
    return 0


def _routine_try(path: Path) -> int:
    try:
        with locks.routine_lock(path):
            pass
    except errors.LockBusy as exc:
        _say(str(exc))
        return exc.exit_code
    _say("acquired")
    return 0


def _routine_cycle(path: Path, count: int) -> int:
    busy = 0
    for _ in range(count):
        try:
            with locks.routine_lock(path):
                time.sleep(0.001)
        except errors.LockBusy:
            busy += 1
        time.sleep(0.001)
    _say(str(busy))
    return 0


def _exec_hold(path: Path) -> int:
    with execlock.exec_lock(path, actor="lockhelper", env={}) as handle:
        _say(handle.token)
        sys.stdin.read()
    return 0


def _exec_race(path: Path, go: Path) -> int:
    _say("ready")
    while not go.exists():
        time.sleep(0.0005)
    try:
        with execlock.exec_lock(path, actor="racer", env={}):
            _say("won")
            sys.stdin.read()
    except execlock.ExecLockBusy:
        _say("busy")
        return errors.EXIT_BUSY
    return 0


def main(argv: list[str]) -> int:
    mode, path, rest = argv[0], Path(argv[1]), argv[2:]
    if mode == "routine-hold":
        return _routine_hold(path, rest[0] if rest else None)
    if mode == "routine-try":
        return _routine_try(path)
    if mode == "routine-cycle":
        return _routine_cycle(path, int(rest[0]))
    if mode == "exec-hold":
        return _exec_hold(path)
    if mode == "exec-race":
        return _exec_race(path, Path(rest[0]))
    raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
