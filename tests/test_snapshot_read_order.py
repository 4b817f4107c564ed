"""A snapshot's change time says what it proves (store/ledger/proven.py, runcheck.py): it is
taken before the bytes are read, so a snapshot another process puts in place between the two
never lends the bytes read its later time."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specdojo_routine.store.config import resolve_project
from specdojo_routine.store.ledger import proven, runcheck
from tests.viewhelper import demo_after_run


def replaced_after_read(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[int]:
    """Make ``module``'s read of a private file put a copy of it in its place once read (as
    another process's write would); returns the list the read file's change time goes to."""
    real: Callable[[Path], bytes] = module.read_private
    seen: list[int] = []

    def read_then_replaced(path: Path) -> bytes:
        seen.append(os.lstat(path).st_ctime_ns)
        data = real(path)
        time.sleep(0.02)  # a later clock tick for the new file
        path.with_name("other").write_bytes(data)
        os.replace(path.with_name("other"), path)
        return data

    monkeypatch.setattr(module, "read_private", read_then_replaced)
    return seen


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_after_run(tmp_path_factory.mktemp("order") / "demo")


def test_the_routine_snapshot_keeps_the_time_of_the_file_read(
        ran: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = resolve_project(ran)
    seen = replaced_after_read(monkeypatch, proven)
    found = proven.Snapshot.read(paths.routine_snapshot)
    assert found is not None
    assert seen == [found.written_ns]


def test_the_run_check_snapshot_keeps_the_time_of_the_file_read(
        ran: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = runcheck.snapshot_path(resolve_project(ran), "job-heartbeat")
    assert path.exists()
    seen = replaced_after_read(monkeypatch, runcheck)
    _runs, data, written_ns = runcheck._load(path)
    assert data is not None and seen == [written_ns]
