"""A long, valid routine ledger written directly (the bytes the codec writes), for tests of
reading from the end and for the history benchmark: a million events take seconds, not the
hours the CLI would."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson

from specdojo_routine.store.ledger import chain

OWNER = {"pid": 4242, "host": "bench-host"}
AT = "2026-08-07T08:00:00.000Z"
_START = {"never": "T-02", "success": "T-06", "failure": "T-07", "skipped": "T-08"}
_END = {"success": "T-03", "failure": "T-04", "skipped": "T-05"}


def _cycle(n: int, rid: str, last: dict[str, str]) -> Iterator[dict[str, object]]:
    aid, result = f"att-{n:08d}", ("success", "failure", "skipped")[n % 3]
    start, last[rid] = _START[last.get(rid, "never")], result
    scheduled = f"2026-08-07T08:{n % 60:02d}:00.000Z"
    yield {"type": "attempt_started", "routine_id": rid, "attempt_id": aid, "transition": start,
           "trigger": "due", "scheduled_for": scheduled, "last_run": "2026-08-07T08:00:03Z",
           "passed_over_since": None, "owner": OWNER, "schedule": "cron"}
    yield {"type": "action_started", "routine_id": rid, "attempt_id": aid, "index": 1,
           "kind": "specdojo"}
    yield {"type": "action_ended", "routine_id": rid, "attempt_id": aid, "index": 1,
           "kind": "specdojo", "result": result, "exit_code": 0}
    yield {"type": "attempt_ended", "routine_id": rid, "attempt_id": aid,
           "transition": _END[result], "result": result, "action_results": None,
           "scheduled_for": scheduled, "started_at": "2026-08-07T08:00:03Z",
           "completed_at": "2026-08-07T08:00:09Z", "job_run_ids": []}


def write_ledger(path: Path, events: int, routines: list[str]) -> None:
    """About ``events`` lines (whole attempts), chained, every routine registered first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    payloads: list[dict[str, object]] = [
        {"type": "routine_registered", "routine_id": rid, "digest": "0" * 64,
         "path": f"routines/{rid}.yaml"} for rid in routines]
    last: dict[str, str] = {}
    n = 0
    while len(payloads) < events:
        payloads.extend(_cycle(n, routines[n % len(routines)], last))
        n += 1
    prev = chain.EMPTY_HEAD
    with path.open("wb") as out:
        for seq, payload in enumerate(payloads, 1):
            line = orjson.dumps({"version": 1, "seq": seq, "type": payload.pop("type"),
                                 "at": AT, "prev": prev} | payload)
            out.write(line + b"\n")
            prev = chain.line_hash(line)
