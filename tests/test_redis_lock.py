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

from tests.clirun import run_cli
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


def _answers(port: int, pid: int, password: str | None = None) -> bool:
    """Whether the redis-server ``pid`` answers on ``port`` (given ``password``, when it
    requires one): another test worker's server that took the port first (``pytest -n``) is
    not ours, whatever it answers."""
    auth = f"AUTH {password}\r\n".encode() if password else b""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2) as sock:
            sock.sendall(auth + b"INFO server\r\n")
            reply = b""
            while (found := re.search(rb"process_id:(\d+)\r\n", reply)) is None:
                chunk = sock.recv(4096)
                if not chunk:
                    return False
                reply += chunk
            return int(found[1]) == pid
    except OSError:
        return False


def _start_server(
    work: Path, password: str | None = None
) -> tuple[subprocess.Popen[bytes], int]:
    """A redis-server of this test process on a free loopback port (requiring ``password``
    when one is given). The port is free when chosen and may be taken before the server binds
    it: the server then exits, and the next free port is tried."""
    options = ["--requirepass", password] if password else []
    for _ in range(5):
        port = free_port()
        server = subprocess.Popen(
            [str(SERVER), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(work), *options],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while server.poll() is None and not _answers(port, server.pid, password):
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
    return run_cli(argv[3:], cwd=REPO, env=env)


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
    A as the holder; without the lock URL, B would have run; after A ends, B runs (A's action
    lasts long enough for B's three commands on a loaded machine)."""
    a, b = host(tmp_path / "host-a", sleep=8), host(tmp_path / "host-b")
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


# --------------------------------------------------------------------------- passwords, URLs

SECRET = "s3cretPW"


def _all_commands(root: Path, url: str) -> list[subprocess.CompletedProcess[str]]:
    done = []
    for args in (("list",), ("list", "--json"), ("run", "--due"), ("run", "--due", "--dry-run")):
        shown = cli(root, *args, url=url)
        assert isinstance(shown, subprocess.CompletedProcess)
        done.append(shown)
    return done


@pytest.mark.parametrize("shape", [
    "redis:/:{pw}@127.0.0.1/0", "redis//:{pw}@127.0.0.1/0", "redis:///:{pw}@127.0.0.1/0",
    "redis:{pw}@127.0.0.1", "redis://:{pw}/x@127.0.0.1/0", "redis://:{pw}@127.0.0.1:notaport/0",
    "redis://:{pw}@127.0.0.1:99999/0", "redis://:{pw}@[::1/0", "redis://u:{pw}@127.0.0.1/x",
    "redis://:{pw}@127.0.0.1:{port}/0", "redis://127.0.0.1:{port}/0?password={pw}",
    "redis://:{pw}%2Fx@127.0.0.1:{port}/0", "redis://:{pw}@127.0.0.1:{port}/0?x=1",
    "redis://127.0.0.1:{port}/0?password={pw}&x=1",
])
def test_a_password_never_reaches_the_output(shape: str, tmp_path: Path) -> None:
    """Whatever the URL's shape - mistyped, malformed, or a server that is down - `list`,
    `run` and the dry run say one `error:` line (exit 2) that holds no part of the password."""
    b = host(tmp_path / "host-b")
    url = shape.format(pw=SECRET, port=free_port())
    for done in _all_commands(b, url):
        assert SECRET[:6] not in done.stdout + done.stderr, done.args
        assert "PW" not in done.stderr.replace("SPECDOJO_ROUTINE", ""), done.stderr
        assert (2, 1) == (done.returncode, len(done.stderr.splitlines())), done.stderr
        assert "internal error" not in done.stderr


@pytest.mark.parametrize(("url", "why"), [
    ("redis://127.0.0.1:notaport/0", "its port is not a number from 1 to 65535"),
    ("redis://127.0.0.1:65536/0", "its port is not a number from 1 to 65535"),
    ("redis://127.0.0.1:0/0", "its port is not a number from 1 to 65535"),
    ("redis://[::1:6379/0", "its host is not valid (an IPv6 address is written in brackets"),
    ("redis://127.0.0.1:6379/zero", "its database is not a number"),
])
def test_a_malformed_lock_url_is_a_usage_error(url: str, why: str, tmp_path: Path) -> None:
    """A port that is not a number or out of range, an unclosed IPv6 bracket, a database that
    is not a number: exit 2 and one line saying which part is wrong - never an internal
    error."""
    b = host(tmp_path / "host-b")
    for done in _all_commands(b, url):
        assert (2, 1) == (done.returncode, len(done.stderr.splitlines())), done.stderr
        assert done.stderr.startswith("error: SPECDOJO_ROUTINE_LOCK_URL="), done.stderr
        assert why in done.stderr
    assert not (b / "routines" / "generated").exists()


@pytest.mark.parametrize(("query", "named"), [
    ("x=1", "unknown query parameter x; remove it or correct its name"),
    ("socket_timeout=2&pasword=s3cretPW&x=1",
     "unknown query parameters pasword, x; remove them or correct their names"),
])
def test_an_unknown_query_parameter_is_a_configuration_error(
    redis_url: str, tmp_path: Path, query: str, named: str
) -> None:
    """A query parameter that no Redis connection takes (redis-py would raise TypeError when
    it first connects): exit 2 and one line naming the variable and the parameter, and what
    to do - never an internal error, never a password or a parameter's value; nothing runs."""
    b = host(tmp_path / "host-b")
    url = redis_url.replace("redis://", f"redis://:{SECRET}@") + f"?{query}"
    for done in _all_commands(b, url):
        assert (2, 1) == (done.returncode, len(done.stderr.splitlines())), done.stderr
        assert done.stderr == (f"error: SPECDOJO_ROUTINE_LOCK_URL={redis_url}: {named} (the "
                               "query takes redis-py's connection options, such as "
                               "socket_timeout=5)\n")
        assert SECRET[:6] not in done.stdout + done.stderr
        assert "internal error" not in done.stderr
    assert not (b / "calls.log").exists()


@pytest.mark.parametrize(("tail", "said"), [
    ("/99", "DB index is out of range"),
    ("/0?client_name=a%20b", "Client names cannot contain spaces"),
])
def test_a_setting_the_server_refuses_is_a_configuration_error(
    redis_url: str, tmp_path: Path, tail: str, said: str
) -> None:
    """A database number the server does not have, or a client name it does not take: exit 2
    and one line that says the server refused the URL's settings and what to correct - never
    an internal error, never the password; nothing runs."""
    b = host(tmp_path / "host-b")
    url = redis_url.replace("redis://", f"redis://:{SECRET}@").removesuffix("/0") + tail
    for done in _all_commands(b, url):
        assert (2, 1) == (done.returncode, len(done.stderr.splitlines())), done.stderr
        assert "the Redis server refused this URL's settings" in done.stderr, done.stderr
        assert said in done.stderr and SECRET[:6] not in done.stdout + done.stderr
    assert not (b / "calls.log").exists()


@pytest.fixture(scope="module")
def guarded_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """The port of a redis-server that requires the password ``rightPW1``."""
    pytest.importorskip("redis", reason="the redis package is not installed ([redis] extra)")
    server, port = _start_server(tmp_path_factory.mktemp("redis-auth"), password="rightPW1")
    try:
        yield port
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.mark.parametrize(("userinfo", "said"), [
    (f":{SECRET}@", "refused the credentials"), (f"ops:{SECRET}@", "refused the credentials"),
    ("", "requires a password and none was given"),
])
def test_a_refused_password_says_to_fix_the_password(
    guarded_port: int, tmp_path: Path, userinfo: str, said: str
) -> None:
    """A server that refuses the URL's password (or wants one it lacks) is reachable: the one
    `error:` line (exit 2) says it refused the credentials and to fix the password in the
    variable - not to start Redis - and holds no part of the password; the right password
    works."""
    b = host(tmp_path / "host-b")
    url = f"redis://{userinfo}127.0.0.1:{guarded_port}/0"
    for done in _all_commands(b, url):
        assert (2, 1) == (done.returncode, len(done.stderr.splitlines())), done.stderr
        assert done.stderr.startswith(
            f"error: the Redis lock server redis://127.0.0.1:{guarded_port}/0 "
            f"(SPECDOJO_ROUTINE_LOCK_URL) {said} ("), done.stderr
        assert "; nothing was run (fix the password in SPECDOJO_ROUTINE_LOCK_URL: " \
               "it is written :password@ right after redis://" in done.stderr, done.stderr
        assert "start Redis" not in done.stderr
        assert SECRET[:6] not in done.stdout + done.stderr
    assert not (b / "calls.log").exists()
    right = run(b, f"redis://:rightPW1@127.0.0.1:{guarded_port}/0")
    assert (0, "") == (right.returncode, right.stderr)


def test_the_form_a_lock_url_is_told_to_take_is_shown_whole(project: Project) -> None:
    """The hint after a URL that is not redis:// says where a password goes in words an
    operator can copy: the redaction of every error line does not blot it out."""
    done = project.cli("list", timeout=60,
                       env=project.env(SPECDOJO_ROUTINE_LOCK_URL="http://127.0.0.1:6379/0"))
    assert (2, "error: SPECDOJO_ROUTINE_LOCK_URL=http://127.0.0.1:6379/0: use "
               "redis://host[:port][/db] (with a password, put :password@ right after "
               "redis://; rediss:// for TLS)\n") == (done.returncode, done.stderr)


def test_without_the_redis_package_run_and_list_say_the_same(
    redis_url: str, tmp_path: Path
) -> None:
    """With `import redis` failing (a stand-in package that raises ImportError), `list` and
    `run` both name the `[redis]` extra and exit 2 (configuration); nothing is run."""
    blocker = tmp_path / "no-redis"
    (blocker / "redis").mkdir(parents=True)
    (blocker / "redis" / "__init__.py").write_text(
        "raise ImportError('No module named redis (blocked by the test)')\n")
    b = host(tmp_path / "host-b")
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPECDOJO_PROJECT", "SPECDOJO_ROUTINE_LOCK_URL")}
    env.update(SPECDOJO_CLI=str(FAKE_CLI), FAKE_SPECDOJO_LOG=str(b / "calls.log"),
               SPECDOJO_ROUTINE_LOCK_URL=redis_url,
               PYTHONPATH=os.pathsep.join([str(blocker), env.get("PYTHONPATH", "")]))
    seen = []
    for args in (("list",), ("run", "--due")):
        done = subprocess.run([sys.executable, "-m", "specdojo_routine", *args, "--root", str(b)],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=60,
                              check=False)
        seen.append((done.returncode, done.stderr))
    expected = (f"error: SPECDOJO_ROUTINE_LOCK_URL={redis_url}: the redis package is not "
                "installed (pip install -e '.[redis]' in the specdojo_routine clone)\n")
    assert [(2, expected), (2, expected)] == seen
    assert not (b / "calls.log").exists()


# --------------------------------------------------------------------------- a paused holder


def _stopped(proc: subprocess.Popen[str]) -> bool:
    state = Path(f"/proc/{proc.pid}/stat").read_text().rpartition(")")[2].split()[0]
    return state == "T"


def test_a_silent_holder_keeps_the_lock_at_least_60_s() -> None:
    """SPEC §12: a paused or busy holder keeps the Redis lock for at least 60 s without
    answering (portalocker's ``unavailable_timeout`` is not left at 1 s). The test below pauses
    a holder for seconds; this holds the figure itself."""
    from specdojo_routine.store.locks import redislock

    assert redislock.HOLDER_SILENCE_S >= 60


def test_a_paused_holder_is_never_robbed(redis_url: str, tmp_path: Path) -> None:
    """Host A holds the lock and is stopped (SIGSTOP) for a few seconds - far longer than
    portalocker's default one-second patience - while host B tries: B is refused (75) and A's
    connection is left alone, so once A goes on, a third try is refused too, and A ends its
    run normally without having lost the lock."""
    a, b = host(tmp_path / "host-a", sleep=10), host(tmp_path / "host-b")
    holder = start_holder(a, redis_url, b)
    os.kill(holder.pid, signal.SIGSTOP)
    try:
        contender = cli(b, "run", "--due", url=redis_url, popen=True)
        assert isinstance(contender, subprocess.Popen)
        time.sleep(3.5)
        assert _stopped(holder)
    finally:
        os.kill(holder.pid, signal.SIGCONT)
    _, refused = contender.communicate(timeout=90)
    again = run(b, redis_url)
    out, err = holder.communicate(timeout=60)
    assert (75, 75) == (contender.returncode, again.returncode), refused + again.stderr
    assert "Another routine run is in progress" in refused
    assert not (b / "calls.log").exists()
    assert (0, "") == (holder.returncode, err), out


# --------------------------------------------------------------------------- a lost lock


class _Server:
    """A redis-server of the test's own on a fixed port, which can be restarted empty."""

    def __init__(self, work: Path) -> None:
        self.port, self.work, self.proc = free_port(), work, None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [str(SERVER), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.work)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
            self.proc = None


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[_Server]:
    pytest.importorskip("redis", reason="the redis package is not installed ([redis] extra)")
    server = _Server(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _kill_subscription(url: str, channel_name: str) -> None:
    """CLIENT KILL the connection that holds the lock (portalocker names it after the
    channel)."""
    import redis

    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        holders = [c for c in client.client_list()
                   if c.get("name", "").startswith(f"{channel_name}-lock-")]
        assert 1 == len(holders), holders
        client.client_kill_filter(_id=holders[0]["id"])
    finally:
        client.close()


@pytest.mark.parametrize("how", ["client-kill", "redis-restart"])
def test_a_holder_that_loses_the_lock_skips_the_rest(
    own_server: _Server, tmp_path: Path, how: str
) -> None:
    """The holder's lock is lost mid-run - its connection killed, or Redis restarted empty -
    while the first of two actions runs: the second is not started but recorded skipped with
    reason `routine lock lost`, the attempt ends (skipped), one `error:` line says so, and
    the run exits 75."""
    a = tmp_path / "host-a"
    Project(a).routine("rtn-pair", "interval: 1m\naction:\n"
                       "  - {kind: specdojo, args: [first, sleep-4]}\n"
                       "  - {kind: specdojo, args: [second]}\n")
    holder = cli(a, "run", "--due", url=own_server.url, popen=True)
    assert isinstance(holder, subprocess.Popen)
    deadline = time.monotonic() + 30
    while "first" not in ((a / "calls.log").read_text() if (a / "calls.log").exists() else ""):
        assert holder.poll() is None, holder.communicate()
        assert time.monotonic() < deadline, "the first action never started"
        time.sleep(0.05)
    if how == "client-kill":
        _kill_subscription(own_server.url, "specdojo_routine:0:routine-run:demo")
    else:
        own_server.stop()
        own_server.start()
    out, err = holder.communicate(timeout=60)
    events = [json.loads(line) for line in
              (a / "routines" / "generated" / "routine-runs.jsonl").read_text().splitlines()]
    actions = [(e["index"], e["type"], e["result"], e.get("reason")) for e in events
               if e["type"] == "action_ended"]
    [ended] = [e for e in events if e["type"] == "attempt_ended"]
    assert 75 == holder.returncode, out + err
    assert [(1, "action_ended", "success", None),
            (2, "action_ended", "skipped", "routine lock lost")] == actions
    assert ("skipped", "action 2 (specdojo): routine lock lost") == (
        ended["result"], ended["reason"])
    assert ["first sleep-4 --project demo"] == (a / "calls.log").read_text().splitlines()
    [line] = err.splitlines()
    assert line.startswith("error: the Redis routine lock specdojo_routine:0:routine-run:demo "
                           f"on {own_server.url} was lost while the run went on"), err
    assert "(routine lock lost)" in line
