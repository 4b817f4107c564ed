"""The routine lock shared through Redis (SPEC §12), against a real ``redis-server``.

The tests start their own ``redis-server`` on a free loopback port (Debian's ``redis-server``
package; ``.ci/run`` installs it) and skip, with the reason shown, only where it is missing.
Two copies of one project in two directories stand for two hosts: their file locks are
independent, so only the Redis lock can keep them apart.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Project

REPO = Path(__file__).resolve().parent.parent
FAKE_CLI = REPO / "tests" / "support" / "fake-specdojo"
SERVER = shutil.which("redis-server")

pytestmark = pytest.mark.skipif(
    SERVER is None, reason="redis-server is not on PATH (apt-get install redis-server)"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(port: int, pid: int) -> bool:
    """Whether the redis-server ``pid`` answers on ``port``: another test worker's server that
    took the port first (``pytest -n``) is not ours, whatever it answers."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2) as sock:
            sock.sendall(b"INFO server\r\n")
            reply = b""
            while (found := re.search(rb"process_id:(\d+)\r\n", reply)) is None:
                chunk = sock.recv(4096)
                if not chunk:
                    return False
                reply += chunk
            return int(found[1]) == pid
    except OSError:
        return False


def _start_server(work: Path) -> tuple[subprocess.Popen[bytes], int]:
    """A redis-server of this test process on a free loopback port. The port is free when
    chosen and may be taken before the server binds it: the server then exits, and the next
    free port is tried."""
    for _ in range(5):
        port = free_port()
        server = subprocess.Popen(
            [str(SERVER), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(work)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while server.poll() is None and not _answers(port, server.pid):
            if time.monotonic() > deadline:
                server.kill()
                server.wait(timeout=10)
                raise AssertionError("redis-server did not start")
            time.sleep(0.05)
        if server.poll() is None:
            return server, port
    raise AssertionError("redis-server could not bind a free port (5 tries)")


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip("redis", reason="the redis package is not installed ([redis] extra)")
    server, port = _start_server(tmp_path_factory.mktemp("redis"))
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(timeout=10)


def host(root: Path, sleep: int = 0) -> Path:
    """A copy of the project as a host sees it: one routine, one slow delegated call."""
    Project(root).routine(
        "rtn-sweep", f"interval: 1m\naction: {{kind: specdojo, args: [index, sleep-{sleep}]}}\n")
    return root


def cli(root: Path, *args: str, url: str | None, popen: bool = False) -> object:
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPECDOJO_PROJECT", "SPECDOJO_ROUTINE_LOCK_URL")}
    env.update(SPECDOJO_CLI=str(FAKE_CLI), FAKE_SPECDOJO_LOG=str(root / "calls.log"))
    if url is not None:
        env["SPECDOJO_ROUTINE_LOCK_URL"] = url
    argv = [sys.executable, "-m", "specdojo_routine", *args, "--root", str(root)]
    if popen:
        return subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
    return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=60,
                          check=False)


def run(root: Path, url: str | None) -> subprocess.CompletedProcess[str]:
    done = cli(root, "run", "--due", url=url)
    assert isinstance(done, subprocess.CompletedProcess)
    return done


def lock_of(root: Path, url: str | None) -> dict[str, object]:
    done = cli(root, "list", "--json", url=url)
    assert isinstance(done, subprocess.CompletedProcess)
    return dict(json.loads(done.stdout)["lock"])


def start_holder(root: Path, url: str, other: Path) -> subprocess.Popen[str]:
    """Host A's `run --due`, once the other host sees it holding the Redis lock."""
    holder = cli(root, "run", "--due", url=url, popen=True)
    assert isinstance(holder, subprocess.Popen)
    deadline = time.monotonic() + 30
    while lock_of(other, url).get("pid") != holder.pid:
        assert holder.poll() is None, holder.communicate()
        assert time.monotonic() < deadline, "host A never held the lock"
        time.sleep(0.1)
    return holder


def test_two_hosts_exclude_each_other_through_redis(redis_url: str, tmp_path: Path) -> None:
    """While host A runs, host B's run is refused (75, nothing recorded) and its `list` shows
    A as the holder; without the lock URL, B would have run; after A ends, B runs."""
    a, b = host(tmp_path / "host-a", sleep=3), host(tmp_path / "host-b")
    holder = start_holder(a, redis_url, b)
    lock = lock_of(b, redis_url)
    refused = run(b, redis_url)
    file_only = lock_of(b, None)
    _, err = holder.communicate(timeout=60)
    assert (True, holder.pid, socket.gethostname(), True) == (
        lock["held"], lock["pid"], lock["host"], isinstance(lock["acquired_at"], str))
    assert (75, False, False) == (refused.returncode, (b / "routines" / "generated").exists(),
                                  file_only["held"])
    assert refused.stderr.startswith(
        f"error: Another routine run is in progress (lock: {redis_url} "
        f"specdojo_routine:0:routine-run:demo, holder pid {holder.pid} on "
        f"{socket.gethostname()} since ")
    assert (0, 0) == (holder.returncode, run(b, redis_url).returncode), err


def test_a_killed_holders_redis_lock_is_free_for_the_next_run(
    redis_url: str, tmp_path: Path
) -> None:
    """SIGKILL host A mid-run: its connection dies with it, so host B's next run takes the
    lock at once; the identity A left behind does not make the lock look held."""
    a, b = host(tmp_path / "host-a", sleep=20), host(tmp_path / "host-b")
    holder = start_holder(a, redis_url, b)
    os.killpg(holder.pid, signal.SIGKILL)
    holder.wait(timeout=10)
    started = time.monotonic()
    after = run(b, redis_url)
    elapsed = time.monotonic() - started
    assert (0, False) == (after.returncode, lock_of(b, redis_url)["held"]), after.stderr
    assert elapsed < 10
    assert "index sleep-0" in (b / "calls.log").read_text()


def test_a_redis_that_is_down_is_one_line_and_nothing_runs(tmp_path: Path) -> None:
    """Exit 2 (configuration: nothing ran; 75 would read as "busy"), one `error:` line that
    names the server but never its password, no ledger, no delegated call."""
    b = host(tmp_path / "host-b")
    with socket.socket() as closed:  # bound, never listening: nobody answers on its port
        closed.bind(("127.0.0.1", 0))
        url = f"redis://:s3cret@127.0.0.1:{closed.getsockname()[1]}/0"
        done = run(b, url)
        shown = [cli(b, *args, url=url) for args in (("list",), ("run", "--due", "--dry-run"))]
    lines = done.stderr.splitlines()
    assert (2, 1, False, False) == (
        done.returncode, len(lines), (b / "routines" / "generated").exists(),
        (b / "calls.log").exists())
    assert lines[0].startswith(
        f"error: cannot reach the Redis lock server redis://127.0.0.1:{url.rsplit(':', 1)[1]} "
        "(SPECDOJO_ROUTINE_LOCK_URL): ")
    assert "s3cret" not in done.stderr + done.stdout
    # `list` and a dry run read the lock's status, the Redis holder included, without taking it
    assert [(2, 1), (2, 1)] == [(d.returncode, len(d.stderr.splitlines())) for d in shown
                                if isinstance(d, subprocess.CompletedProcess)]


@pytest.mark.parametrize("url", ["http://127.0.0.1:6379/0", "redis://", "not a url"])
def test_an_unusable_lock_url_is_a_configuration_error(url: str, tmp_path: Path) -> None:
    b = host(tmp_path / "host-b")
    done = run(b, url)
    assert (2, 1, True) == (done.returncode, len(done.stderr.splitlines()),
                            done.stderr.startswith("error: SPECDOJO_ROUTINE_LOCK_URL="))


def test_without_the_url_the_file_lock_alone_is_used(tmp_path: Path) -> None:
    """The variable unset (or empty): no Redis is needed at all."""
    b = host(tmp_path / "host-b")
    assert (0, 0) == (run(b, None).returncode, run(b, "").returncode)
