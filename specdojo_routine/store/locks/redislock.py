"""The routine lock shared by several hosts through Redis (SPEC §12).

``SPECDOJO_ROUTINE_LOCK_URL=redis://[:password@]host[:port][/db]`` (or ``rediss://``) makes the
routine lock also take portalocker's :class:`~portalocker.redis.RedisLock` on the channel
``specdojo_routine:<db>:routine-run:<project id>``. The lock is a Pub/Sub subscription held by
a live connection: when the holder dies, its connection closes and Redis drops the
subscription, so the next run gets the lock at once - as the kernel frees a flock. The file
lock and the upstream lock directory are still taken (same host, same directory).

The holder's identity ``{"pid", "host", "acquired_at"}`` is written to the key
``<channel>:holder`` after the lock is taken and removed before it is released. Only the
subscription says whether the lock is held: a key left by a killed holder, with nobody on the
channel, means free.

Failures: an unusable URL or a missing ``redis`` package (``pip install
'specdojo_routine[redis]'``) is a configuration error, and so is a Redis that cannot be
reached: one line, exit 2, nothing is run or recorded. A scheduler should alert on it - exit 75
means that another runner holds the lock, and a Redis outage is not that. A lock lost while
the run goes on (Redis restarted) does not stop the run; it is reported on stderr at the end.
"""

from __future__ import annotations

import contextlib
import sys
import urllib.parse
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from specdojo_routine.core import errors

LOCK_URL_ENV = "SPECDOJO_ROUTINE_LOCK_URL"
CONNECT_TIMEOUT_S = 3.0
ACQUIRE_TIMEOUT_S = 0.5  # a probe of a contended channel; then the lock is busy
_SCHEMES = ("redis", "rediss")


def lock_url(env: Mapping[str, str]) -> str | None:
    """The configured lock URL, or None when the lock is the file lock only."""
    url = env.get(LOCK_URL_ENV, "").strip()
    return url or None


def shown(url: str) -> str:
    """The URL without credentials, for messages."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or "localhost"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path or '/0'}"


def channel(url: str, project: str) -> str:
    db = (urllib.parse.urlsplit(url).path or "/0").strip("/") or "0"
    return f"specdojo_routine:{db}:routine-run:{project}"


def _client(url: str) -> Any:
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise _config(url, f"it is not a valid URL ({exc})") from None
    if parts.scheme not in _SCHEMES or not parts.hostname:
        raise _config(url, "use redis://host:port/db (or rediss:// for TLS)")
    del port
    try:
        import redis
    except ImportError:
        raise _config(url, "the redis package is not installed (pip install "
                      "'specdojo_routine[redis]')") from None
    try:
        return redis.Redis.from_url(url, socket_connect_timeout=CONNECT_TIMEOUT_S,
                                    socket_timeout=CONNECT_TIMEOUT_S,
                                    health_check_interval=10, decode_responses=True)
    except ValueError as exc:
        raise _config(url, str(exc)) from None


def _config(url: str, why: str) -> errors.ConfigError:
    return errors.ConfigError(f"{LOCK_URL_ENV}={shown(url) if '://' in url else url!r}: {why}")


def _unreachable(url: str, exc: BaseException) -> errors.ConfigError:
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return errors.ConfigError(
        f"cannot reach the Redis lock server {shown(url)} ({LOCK_URL_ENV}): {reason}; nothing "
        "was run (start Redis or unset the variable to use the file lock alone)"
    )


def _connection_errors() -> tuple[type[BaseException], ...]:
    import redis

    return (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)


@contextlib.contextmanager
def hold(url: str, project: str, record: dict[str, Any]) -> Iterator[None]:
    """Hold the Redis routine lock for the ``with`` block; ``LockBusy`` when another holds it,
    ``ConfigError`` when Redis cannot be used."""
    from portalocker import AlreadyLocked
    from portalocker.redis import RedisLock

    client = _client(url)
    name = channel(url, project)
    lock = RedisLock(name, connection=client, timeout=ACQUIRE_TIMEOUT_S,
                     fail_when_locked=True, interrupt_on_lost=False)
    _quiet_portalocker()
    try:
        try:
            client.ping()  # a server that is down is not a busy lock
            lock.acquire()
        except AlreadyLocked:
            raise _busy(url, name, client) from None
        except _connection_errors() as exc:
            raise _unreachable(url, exc) from None
        try:
            mine = orjson.dumps(record).decode()
            with contextlib.suppress(*_connection_errors()):
                client.set(f"{name}:holder", mine)
            yield
        finally:
            with contextlib.suppress(*_connection_errors()):
                if client.get(f"{name}:holder") == mine:
                    client.delete(f"{name}:holder")
            lost = lock.lost
            with contextlib.suppress(Exception):
                lock.release()
            if lost:
                print(f"warning: the Redis routine lock {name} on {shown(url)} was lost during "
                      "the run (Redis restarted or the connection dropped)", file=sys.stderr)
    finally:
        with contextlib.suppress(Exception):
            client.close()


def _quiet_portalocker() -> None:
    """portalocker logs its retries; without a handler of the application's, Python's
    last-resort handler would print them (with tracebacks) on stderr."""
    import logging  # here: `list` asks this module for the URL, and logging costs 3 ms

    logger = logging.getLogger("portalocker")
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())


def _busy(url: str, name: str, client: Any) -> errors.ConfigError | errors.LockBusy:
    try:
        client.ping()
    except _connection_errors() as exc:  # it went away while we tried
        return _unreachable(url, exc)
    pid, host, since = _holder(client, name)
    return errors.LockBusy(
        f"Another routine run is in progress (lock: {shown(url)} {name}, holder pid "
        f"{pid or 'unknown'} on {host or 'unknown'} since {since or 'unknown'})"
    )


def status(url: str, project: str) -> tuple[bool, int | None, str | None, str | None]:
    """``(held, pid, host, acquired_at)`` of the Redis lock, without taking it; raises
    ``ConfigError`` when Redis cannot be used."""
    client = _client(url)
    name = channel(url, project)
    try:
        subscribers = dict(client.pubsub_numsub(name)).get(name, 0)
        if not subscribers:
            return False, None, None, None
        return (True, *_holder(client, name))
    except _connection_errors() as exc:
        raise _unreachable(url, exc) from None
    finally:
        with contextlib.suppress(Exception):
            client.close()


def _holder(client: Any, name: str) -> tuple[int | None, str | None, str | None]:
    failures: tuple[type[BaseException], ...] = (orjson.JSONDecodeError, *_connection_errors())
    try:
        raw = orjson.loads(client.get(f"{name}:holder") or "null")
    except failures:
        raw = None
    raw = raw if isinstance(raw, dict) else {}
    pid, host, at = raw.get("pid"), raw.get("host"), raw.get("acquired_at")
    return (pid if type(pid) is int else None, host if isinstance(host, str) else None,
            at if isinstance(at, str) else None)
