"""Real processes on one ledger (SPEC §5, §6.2): concurrent appends never interleave or get
lost; a writer killed with SIGKILL at any point loses nothing it acknowledged; a reader never
sees an append in progress."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson

from specdojo_routine.core import events  # noqa: F401 - an append's, loaded before writers fork
from specdojo_routine.core import routine_events as rev
from specdojo_routine.store.ledger import journal as ledger

REPO = Path(__file__).resolve().parent.parent

WRITER = """
import sys, time
from pathlib import Path
from specdojo_routine.core.routine_events import RoutineRegistered
from specdojo_routine.store.ledger import journal as ledger
path, name, count, go = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
log = ledger.Ledger(path)
while not go.exists():
    time.sleep(0.001)
for n in range(count):
    seq = log.append(RoutineRegistered(routine_id="rtn-w", digest=f"{name}-{n}", path="p"))
    print(seq, flush=True)
"""


def test_eight_writers_at_once_lose_and_interleave_nothing(tmp_path: Path) -> None:
    """8 processes x 500 appends: 4,000 whole lines, seq 1..4000, every ack where it says."""
    path, go = tmp_path / "generated" / "routine-runs.jsonl", tmp_path / "go"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"w{i}", "500", str(go)],
                                stdout=subprocess.PIPE, text=True, env=env) for i in range(8)]
    time.sleep(0.3)
    go.touch()
    acked = {f"w{i}": [int(s) for s in p.communicate(timeout=120)[0].split()]
             for i, p in enumerate(writers)}
    assert [0] * 8 == [p.returncode for p in writers]
    lines = path.read_bytes().split(b"\n")
    assert b"" == lines.pop()
    raws = [orjson.loads(line) for line in lines]
    assert list(range(1, 4001)) == [r["seq"] for r in raws]
    where = {r["digest"]: r["seq"] for r in raws}
    assert 4000 == len(where)
    for name, seqs in acked.items():
        assert [where[f"{name}-{n}"] for n in range(500)] == seqs


def _writer(path: Path, round_no: int, ack: int) -> None:
    """Child process: append forever, acknowledging each seq once append() returned."""
    try:
        log = ledger.Ledger(path)
        for n in range(10**9):
            seq = log.append(rev.RoutineRegistered(routine_id="rtn-w", digest=f"{round_no}-{n}",
                                                  path="p"))
            os.write(ack, f"{round_no}-{n} {seq}\n".encode())
    finally:
        os._exit(0)


def test_sigkilled_writers_lose_nothing_acknowledged(tmp_path: Path) -> None:
    """100 writers killed at random points (some after a torn write): every acknowledged event
    is there with its seq, seq stays contiguous, and each tear is moved aside by the next
    append."""
    path = tmp_path / "generated" / "routine-runs.jsonl"
    rng = random.Random(20260807)
    acked: dict[str, int] = {}
    tears: list[bytes] = []
    for round_no in range(100):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            _writer(path, round_no, write_end)
        os.close(write_end)
        time.sleep(rng.uniform(0.0, 0.03))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        with os.fdopen(read_end, "rb") as acks:
            for line in acks.read().decode().splitlines():
                key, seq = line.split()
                acked[key] = int(seq)
        found = ledger.tail(path)  # at most a torn tail: anything else raises
        assert found.end == found.size or found.torn
        if not found.torn and rng.random() < 0.3:  # a writer died mid-line
            tears.append(b'{"version":1,"seq":%d,"type":"routine_reg' % (found.seq + 1))
            with path.open("ab") as f:
                f.write(tears[-1])
    assert ledger.Ledger(path).append(rev.RoutineRegistered(routine_id="rtn-w", digest="last",
                                                           path="p")) > 0
    raws = [line.raw for line in ledger.read(path)]
    assert list(range(1, len(raws) + 1)) == [r["seq"] for r in raws]
    where = {r["digest"]: r["seq"] for r in raws}
    assert {key: where.get(key) for key in acked} == acked
    saved = [p.read_bytes() for p in path.parent.glob("routine-runs.jsonl.torn-*")]
    assert set(tears) <= set(saved)  # every tear was moved aside, once
    assert len(set(saved)) == len(saved) and not any(s.endswith(b"\n") for s in saved)
    assert len(acked) >= 20  # not vacuous: writers did get appends acknowledged



SLOW_WRITER = """
import os, sys, time
import orjson, portalocker
path, count = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
for seq in range(1, count + 1):  # a ledger append, as slow as a big line on a busy disk
    line = orjson.dumps({"version": 1, "seq": seq, "type": "routine_registered",
                         "at": "2026-08-07T08:00:00.000Z", "routine_id": "rtn-w",
                         "digest": "d", "path": "p"}) + b"\\n"
    portalocker.lock(fd, portalocker.LockFlags.EXCLUSIVE)
    os.write(fd, line[:40])
    time.sleep(0.002)
    os.write(fd, line[40:])
    portalocker.unlock(fd)
    time.sleep(0.001)
"""


def test_readers_under_the_shared_lock_never_see_an_append_in_progress(tmp_path: Path) -> None:
    """A writer appends each line in two writes under portalocker's exclusive lock while this
    process reads: every tail it takes (under the shared flock, taken without portalocker)
    ends at a complete line, and every read gives whole lines in seq order."""
    path = tmp_path / "routine-runs.jsonl"
    writer = subprocess.Popen([sys.executable, "-c", SLOW_WRITER, str(path), "300"])
    seen: list[int] = []
    while writer.poll() is None:
        found = ledger.tail(path)
        assert (False, found.size) == (found.torn, found.end)
        seen.append(found.seq)
        if found.seq:  # raises at a cut-short, torn or out-of-order line
            assert len(list(ledger.read(path, torn="raise"))) >= found.seq
    assert (0, True, 300) == (writer.wait(timeout=120), seen == sorted(seen),
                              ledger.tail(path).seq)
    assert len(set(seen)) > 20  # not vacuous: it read while the writer wrote

HOLDER = """
import sys, time
import portalocker
with open(sys.argv[1], "rb") as f:
    portalocker.lock(f, portalocker.LockFlags.EXCLUSIVE)
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def test_the_shared_read_lock_waits_for_portalockers_exclusive_lock(tmp_path: Path) -> None:
    """What a writer takes (portalocker's exclusive lock) keeps a reader out until released:
    the reader's own flock is the same lock, not a look-alike."""
    path = tmp_path / "routine-runs.jsonl"
    ledger.Ledger(path).append(rev.RoutineRegistered(routine_id="rtn-w", digest="d", path="p"))
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), "0.6"],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and "locked\n" == holder.stdout.readline()
    started = time.monotonic()
    found = ledger.tail(path)
    waited = time.monotonic() - started
    assert (0, 1, True) == (holder.wait(timeout=60), found.seq, waited > 0.3)
