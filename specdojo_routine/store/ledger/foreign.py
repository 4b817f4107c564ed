"""Foreign view files (SPEC §10): reading one, and planning the import of ``routine-state.json``.

A view file is *ours* only if its bytes equal the fold of its ledger; anything else is foreign
and its facts are imported before anything replaces it. This module reads such files (an
unreadable one holds no facts, SPEC §10 rule 8: see :mod:`.adopt`) and computes, in memory, the
routine-state import :mod:`.adopt` appends; :func:`import_before_publishing` is what
:mod:`.views` calls when the ``routine-state.json`` it is about to replace is not what it last
published. It builds on :mod:`.proven`, never on :mod:`.views` (which builds on it).
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable, Collection, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from specdojo_routine.core import adopt as rules
from specdojo_routine.core.fold import RoutineFold, RoutineView, apply_all, routine_document
from specdojo_routine.store.config import NotRegularFile, ProjectPaths, read_regular
from specdojo_routine.store.ledger import chain, codec, documents, proven
from specdojo_routine.store.ledger import journal as ledger

if TYPE_CHECKING:  # the event classes are created where an import event is made
    from specdojo_routine.core import routine_events

__all__ = ["IN_MEMORY_AT", "RoutineImports", "import_before_publishing", "look", "move_aside",
           "plan_routine_imports", "raw_event", "sha256_hex", "upstream_line_warnings"]

#: The ``at`` of an event folded in memory before it is appended (import plans).
IN_MEMORY_AT = "1970-01-01T00:00:00.000Z"


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def look(path: Path, member: str | None) -> tuple[bytes | None, str | None]:
    """The bytes of a view file (None: no regular file there) and, when it holds no facts
    (SPEC §10 rule 8), why: not a regular file, empty, not JSON, not a JSON object, or (with
    ``member``) no ``member`` object in it."""
    try:
        data = read_regular(path)
    except FileNotFoundError:
        return None, None
    except NotRegularFile:  # a FIFO is checked with fstat, never read
        return None, "not a regular file"
    if not data:
        return data, "empty"
    doc = documents.parse(data)
    if doc is None and data.strip() != b"null":
        return data, "not JSON"
    if not isinstance(doc, dict):
        return data, "not a JSON object"
    if member is not None and not isinstance(doc.get(member), dict):
        return data, f'no "{member}" object'
    return data, None


def move_aside(
    paths: ProjectPaths, path: Path, reason: str, source: str, clock: Callable[[], datetime]
) -> None:
    """Rename an unreadable view to ``<name>.unreadable-<UTC stamp>`` (``.<n>`` added when
    that name is taken: nothing is overwritten) and say so in one ``warning:`` line. The
    caller holds the lock that guards the view, so the name cannot be taken meanwhile."""
    stamp = clock().astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    target, n = path.with_name(f"{path.name}.unreadable-{stamp}"), 1
    while os.path.lexists(target):
        n += 1
        target = path.with_name(f"{path.name}.unreadable-{stamp}.{n}")
    try:
        os.rename(path, target)
    except FileNotFoundError:
        return  # gone already: nothing to keep
    print(f"warning: {paths.rel(path)} holds no facts ({reason}); moved it aside to "
          f"{paths.rel(target)} and rebuilt it from {source}", file=sys.stderr)


def raw_event(event: Any, seq: int, at: str) -> dict[str, Any]:
    """The parsed ledger line ``event`` would be (to fold it in memory)."""
    from specdojo_routine.core import events as ev

    return {"version": 1, "seq": seq, "type": ev.tag_of(event), "at": at, **codec.payload(event)}


# --- the routine ledger ----------------------------------------------------------------------


@attrs.frozen(kw_only=True, repr=False)
class RoutineImports:
    """What importing ``routine-state.json`` would append, and the view that would follow."""

    events: list[routine_events.RoutineStateImported]
    conflicts: list[str]
    view: RoutineView  # the fold of the ledger plus ``events`` (in memory)
    foreign: bool  # the file on disk is not the fold of our ledger
    unreadable: str | None = None  # why the file holds no facts (SPEC §10 rule 8): move it aside
    #: The ledger's fold as it stands, when no planned event was applied to it: applying the
    #: plan publishes it, so a chain verified here is not verified again by the command.
    proof: proven.Proven | None = None


def plan_routine_imports(
    paths: ProjectPaths, found: proven.Proven | None = None
) -> RoutineImports:
    """Whose is ``routine-state.json``? A view the snapshot proves (:mod:`.proven`: the view's
    bytes, the ledger's identity and chain head) is ours, and so is one whose bytes equal the
    full fold; any other is compared with the full fold (another tool may have rewritten it in
    our shape) and the entries that differ from it are imported. ``found``: the fold the
    caller proved just now (it is folded further, in memory, when there is something to
    import)."""
    if found is None:
        found = proven.prove(paths.routine_ledger, paths.routine_state, paths.routine_snapshot)
        if found.resumed_at > 0:  # it continued from the view: those bytes are ours
            return RoutineImports(events=[], conflicts=[], foreign=False, proof=found,
                                  view=RoutineView(document=found.document(),
                                                   torn_line=found.tail.torn_line))
    data, unreadable = look(paths.routine_state, "routines")
    document = found.document()
    ours = RoutineView(document=document, torn_line=found.tail.torn_line)
    if unreadable is not None:
        if paths.routine_ledger.exists():
            return RoutineImports(events=[], conflicts=[], view=ours, foreign=True,
                                  unreadable=unreadable, proof=found)
        return RoutineImports(events=[], conflicts=[
            f"conflict: {paths.rel(paths.routine_state)} is not a routine state document "
            f"({unreadable}); move it aside or fix it, then run `import` again"],
            view=ours, foreign=True)
    if data is None or found.resumed_at > 0 or data == proven.render(document):
        return RoutineImports(events=[], conflicts=[], view=ours, foreign=False, proof=found)
    events, conflicts = _routine_entries(paths, data, document["routines"], found.tail.end)
    if not events:
        return RoutineImports(events=[], conflicts=conflicts, view=ours, foreign=True,
                              proof=found)
    seq = found.state.seq
    raws = [raw_event(e, seq + i, IN_MEMORY_AT) for i, e in enumerate(events, 1)]
    apply_all(found.state, raws, where="<import>", upgrade=codec.upgrade)
    document = found.content()  # in memory only: it covers lines not yet written
    view = RoutineView(document=document, torn_line=found.tail.torn_line)
    return RoutineImports(events=events, conflicts=conflicts, view=view, foreign=True)


def _routine_history(
    paths: ProjectPaths, wanted: Collection[str], end: int
) -> dict[str, list[dict[str, Any]]]:
    """Every entry our fold gave each routine of ``wanted``, line by line of the routine
    ledger (in published form): what tells a view of ours not yet republished, or a copy of
    it another tool wrote back, from facts our ledger lacks. Only read for a foreign file, and
    only for its entries that differ from the fold: the ledger is folded once, in chunks as a
    proof folds it, and an entry is pictured after each line of its own routine, up to
    ``end``: the lines the fold being compared with covers."""
    history: dict[str, list[dict[str, Any]]] = {routine_id: [] for routine_id in wanted}
    path, state = paths.routine_ledger, RoutineFold()
    if not end:
        return history
    with open(path, "rb", buffering=chain.READ_BUFFER) as f:
        for raws in chain.verified_chunks(f, path, 0, end, line=1, head=chain.EMPTY_HEAD,
                                          started=False):
            folded = 0
            for index, raw in enumerate(raws):
                routine_id = raw.get("routine_id") if type(raw) is dict else None
                if type(routine_id) is str and routine_id in history:
                    apply_all(state, raws[folded:index + 1], where=str(path),
                              upgrade=codec.upgrade)
                    folded = index + 1
                    if (entry := state.routines.get(routine_id)) is not None:
                        history[routine_id].append(_picture(routine_id, entry))
            apply_all(state, raws[folded:], where=str(path), upgrade=codec.upgrade)
    return history


def _picture(routine_id: str, entry: Any) -> dict[str, Any]:
    """A routine's entry as the fold would publish it now."""
    doc = routine_document(RoutineFold(routines={routine_id: entry}), 0)
    picture: dict[str, Any] = orjson.loads(orjson.dumps(doc["routines"][routine_id]))
    return picture


def _routine_entries(
    paths: ProjectPaths, data: bytes, ours: Mapping[str, Any], end: int
) -> tuple[list[routine_events.RoutineStateImported], list[str]]:
    """The import events and conflicts of a foreign view's entries (``data``) against ours,
    the fold of the ledger's lines before byte ``end``."""
    from specdojo_routine.core import event_parts, routine_events

    source = paths.rel(paths.routine_state)
    routines = documents.parse(data)["routines"]  # a dict: look found the document readable
    found, conflicts, sha = [], [], sha256_hex(data)
    verdicts = {routine_id: rules.routine_entry_verdict(record, ours.get(routine_id))
                for routine_id, record in routines.items()}
    # An entry that differs from the fold may still be a picture our own fold gave earlier
    # (a view a crash left unpublished): even one the fold could not apply as a fact, as the
    # picture of a first attempt still running (no result yet) is. An entry no picture of
    # ours can be (a result we never write) is not looked for: that would fold the whole
    # ledger again on every command while the entry stays.
    wanted = [routine_id for routine_id, verdict in verdicts.items()
              if verdict == "import" or (verdict == "conflict"
                                         and rules.routine_entry_usable(routines[routine_id]))]
    history = _routine_history(paths, wanted, end) if wanted else {}
    for routine_id, record in routines.items():
        verdict = verdicts[routine_id]
        if verdict in ("import", "conflict"):
            verdict = rules.routine_entry_verdict(record, ours.get(routine_id),
                                                  history.get(routine_id, ()))
        if verdict == "import" and event_parts.ROUTINE_ID.fullmatch(routine_id):
            found.append(routine_events.RoutineStateImported(routine_id=routine_id, record=record,
                                              source=source, source_sha256=sha))
        elif verdict in ("import", "conflict"):
            conflicts.append(f"conflict: {source} entry {routine_id!r} cannot be imported (it "
                             "needs a routine id, a last_run and a last_result of success, "
                             "failure or skipped, or no last_result while the routine never "
                             "ran); fix or remove the entry")
    return found, conflicts


def import_before_publishing(
    paths: ProjectPaths, found: proven.Proven,
    clock: Callable[[], datetime] = ledger.wall_clock,
) -> bool | None:
    """The routine-state.json about to be replaced is not ours: append its facts (SPEC §10
    rule 1; the caller holds the routine lock and publishes next). An unreadable file is
    moved aside. False when it holds an entry that cannot be imported: it is kept, and a
    ``warning:`` line says why (`import` shows the conflict). None when it held nothing new
    (``found`` is still the fold to publish); True when events were appended."""
    plan = plan_routine_imports(paths, found)
    if plan.unreadable is not None:
        move_aside(paths, paths.routine_state, plan.unreadable,
                    paths.rel(paths.routine_ledger), clock)
    if plan.conflicts:
        print(f"warning: {paths.rel(paths.routine_state)} was rewritten by another tool and "
              f"is kept as it is ({'; '.join(plan.conflicts)})", file=sys.stderr)
        return False
    if not plan.events:
        return None
    ledger.Ledger(paths.routine_ledger, clock=clock).append_many(plan.events)
    return True




#: How every line we append begins (compact JSON, SPEC §5): such a line is never upstream's.
_OUR_LINE = b'{"version":1,"seq":'


def upstream_line_warnings(paths: ProjectPaths) -> list[str]:
    """One ``warning:`` line per upstream run line in the routine ledger whose result the
    fold does not take (:func:`specdojo_routine.core.adopt.upstream_line_problem`), naming
    file and line. Only ``import`` and ``fold`` ask (the lines stay in an append-only ledger,
    so they are shown, not conflicts that would refuse every command for good); our lines
    are passed over by their first bytes, unparsed."""
    where, found = paths.rel(paths.routine_ledger), []
    try:
        f = open(paths.routine_ledger, "rb", buffering=chain.READ_BUFFER)  # noqa: SIM115
    except FileNotFoundError:
        return []
    with f:
        for number, line in enumerate(f, 1):
            if line.startswith(_OUR_LINE):
                continue
            raw = documents.parse(line)
            why = rules.upstream_line_problem(raw) if rules.is_upstream_line(raw) else None
            if why is not None:
                found.append(f"warning: {where}:{number}: upstream run line of "
                             f"{raw['routine_id']} has {why}: it accounts for its "
                             "scheduled_for only; last_run and last_result stay as they were")
    return found
