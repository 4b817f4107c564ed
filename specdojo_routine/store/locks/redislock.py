"""The routine lock shared by several hosts through Redis (SPEC §12).

``SPECDOJO_ROUTINE_LOCK_URL=redis://[:password@]host[:port][/db]`` (or ``rediss://``) makes the
routine lock also take portalocker's :class:`~portalocker.redis.RedisLock` on the channel
``specdojo_routine:<db>:routine-run:<project id>``. The lock is a Pub/Sub subscription held by
a live connection: when the holder dies, its connection closes and Redis drops the
subscription, so the next run gets the lock at once - as the kernel frees a flock. The file
lock and the upstream lock directory are still taken (same host, same directory).

A holder that is alive but does not answer (stopped with SIGSTOP, a long pause of the machine)
is not taken for dead: a contender that gets no answer to its probe waits
``HOLDER_SILENCE_S`` before portalocker reaps the silent connection (its default of one second
would let a second host rob a paused holder and run beside it). A holder that loses the lock
all the same (its connection killed, Redis restarted empty) is told through ``Held.lost``,
which the run asks before every action.

The holder's identity ``{"pid", "host", "acquired_at"}`` is written to the key
``<channel>:holder`` after the lock is taken and removed before it is released. Only the
subscription says whether the lock is held: a key left by a killed holder, with nobody on the
channel, means free.

Failures: an unusable URL or a missing ``redis`` package (``pip install -e '.[redis]'`` in
the clone) is a configuration error, and so is a Redis that cannot be reached or refuses the
URL's password: one line, exit 2, nothing is run or recorded. A scheduler should alert on it -
exit 75 means that another runner holds the lock, and a Redis outage is not that. No message ever
shows the URL as written: only its scheme, host, port and database, and only the parts that
parse cleanly (a password may sit anywhere in a mistyped URL), and any password the URL holds
is cut out of the text Redis itself gives.
"""

from __future__ import annotations

import contextlib
import re
import sys
import urllib.parse
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from specdojo_routine.core import errors

LOCK_URL_ENV = "SPECDOJO_ROUTINE_LOCK_URL"
CONNECT_TIMEOUT_S = 3.0
ACQUIRE_TIMEOUT_S = 0.5  # a probe of a contended channel; then the lock is busy
#: How long a contender waits for a silent holder's answer before portalocker kills the
#: holder's connection (``unavailable_timeout``): a paused or busy holder keeps the lock at
#: least this long without answering.
HOLDER_SILENCE_S = 60.0
_SCHEMES = ("redis", "rediss")
#: How a lock URL is written, as messages say it. Written so that the redaction every error
#: line passes through leaves it whole: it blots out ``[:password@]`` and ``:password@`` right
#: after ``://`` as a URL's password, whatever the word.
_FORM = ("use redis://host[:port][/db] (with a password, put :password@ right after redis://; "
         "rediss:// for TLS)")
_MISSING = ("the redis package is not installed "
            "(pip install -e '.[redis]' in the specdojo_routine clone)")
_DB = re.compile(r"/?\d*")


def lock_url(env: Mapping[str, str]) -> str | None:
    """The configured lock URL, or None when the lock is the file lock only."""
    url = env.get(LOCK_URL_ENV, "").strip()
    return url or None


def shown(url: str) -> str:
    """The URL as messages show it: ``scheme://host:port/db``, each part only where it parsed
    cleanly, never the user, password or query. A part that does not parse is left out, and so
    is the host when the network location may have been cut short (a password holding ``/``,
    ``?`` or ``#`` ends it early, and what is left of it would read as a host)."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "(a URL that cannot be parsed)"
    scheme = parts.scheme if parts.scheme in _SCHEMES or parts.scheme.isalpha() else ""
    if "://" not in url or not scheme:
        return "(not a URL of the form redis://host)"
    name = f"[{parts.hostname}]" if ":" in (parts.hostname or "") else parts.hostname
    host = f"{name}{_port_text(parts)}" if _host_is_whole(url, parts) else "…"
    db = parts.path if _DB.fullmatch(parts.path) else "/…"
    return f"{scheme}://{host}{db if db.strip('/') else '/0'}"


def _port_text(parts: urllib.parse.SplitResult) -> str:
    try:
        port = parts.port
    except ValueError:
        return ":…"
    return f":{port}" if port else ""


def _after_netloc(url: str, parts: urllib.parse.SplitResult) -> str:
    return url.partition("://")[2][len(parts.netloc):]


def _host_is_whole(url: str, parts: urllib.parse.SplitResult) -> bool:
    return (bool(parts.hostname) and "@" not in _after_netloc(url, parts)
            and _port_text(parts) != ":…")


def _secrets(url: str) -> list[str]:
    """Every password the URL may hold, as written and percent-decoded, longest first: the
    user part (before the last ``@``, whatever the URL's shape) and what follows its first
    ``:``, and any ``password=`` of the query."""
    found: list[str] = []
    userinfo = re.sub(r"^[A-Za-z][A-Za-z0-9+.-]*:/*", "", url.rpartition("@")[0])
    if userinfo:
        found += [userinfo, userinfo.partition(":")[2]]
    for key, value in urllib.parse.parse_qsl(url.partition("?")[2], keep_blank_values=True):
        if key.lower() in ("password", "pass", "pwd"):
            found.append(value)
    found += [urllib.parse.unquote(s) for s in found]
    return sorted({s for s in found if s}, key=len, reverse=True)


def _scrub(text: str, url: str) -> str:
    """``text`` with every password of ``url`` replaced by ``***`` (a short one only where it
    stands alone, so that a one-letter password does not blot out every word)."""
    for secret in _secrets(url):
        pattern = re.escape(secret)
        if len(secret) < 4:
            pattern = rf"(?<![A-Za-z0-9]){pattern}(?![A-Za-z0-9])"
        text = re.sub(pattern, "***", text)
    return text


def channel(url: str, project: str) -> str:
    db = (urllib.parse.urlsplit(url).path or "/0").strip("/") or "0"
    return f"specdojo_routine:{db}:routine-run:{project}"


def _check(url: str) -> None:
    """Refuse a URL that is not ``redis[s]://host[:port][/db]``, saying which part is wrong."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:  # e.g. an unclosed "[": the only error urlsplit raises
        raise _config(url, "its host is not valid (an IPv6 address is written in brackets: "
                      "redis://[::1]:6379/0)") from None
    if "://" not in url or parts.scheme not in _SCHEMES:
        raise _config(url, _FORM)
    if "@" in _after_netloc(url, parts):
        raise _config(url, "its password or host is cut short: a password holding / ? # or @ "
                      f"is written percent-encoded (%2F %3F %23 %40); {_FORM}")
    try:
        port = parts.port
    except ValueError:  # its text may be part of a password: never shown
        port = 0
    if port == 0 and _has_port(parts.netloc):
        raise _config(url, f"its port is not a number from 1 to 65535; {_FORM}")
    if not parts.hostname:
        raise _config(url, f"it names no host; {_FORM}")
    if not _DB.fullmatch(parts.path):
        raise _config(url, f"its database is not a number; {_FORM}")


def _has_port(netloc: str) -> bool:
    hostport = netloc.rpartition("@")[2]
    return ":" in hostport.rpartition("]")[2]


def _client(url: str) -> Any:
    _check(url)
    try:
        import redis
    except ImportError:
        raise _config(url, _MISSING) from None
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=CONNECT_TIMEOUT_S,
                                      socket_timeout=CONNECT_TIMEOUT_S,
                                      health_check_interval=10, decode_responses=True)
    except ValueError as exc:
        raise _config(url, str(exc)) from None
    unknown = _unknown_parameters(url, client.connection_pool)
    if unknown:
        client.close()
        what = (f"parameter {unknown[0]}; remove it or correct its name" if len(unknown) == 1
                else f"parameters {', '.join(unknown)}; remove them or correct their names")
        raise _config(url, f"unknown query {what} (the query takes redis-py's connection "
                      "options, such as socket_timeout=5)")
    return client


def _unknown_parameters(url: str, pool: Any) -> list[str]:
    """The URL's query parameters that its connections would refuse, sorted: redis-py hands
    each parameter it does not know to the connection class, which raises ``TypeError`` only
    when it first connects. Their names only: a value may be a password."""
    import inspect  # here: only a Redis lock URL needs it

    asked = set(urllib.parse.parse_qs(urllib.parse.urlsplit(url).query))
    taken: set[str] = set()
    for cls in pool.connection_class.__mro__[:-1]:  # not object's
        init = cls.__dict__.get("__init__")
        if init is not None:
            named = list(inspect.signature(init).parameters.values())[1:]  # not self
            taken.update(p.name for p in named if p.kind in (p.POSITIONAL_OR_KEYWORD,
                                                             p.KEYWORD_ONLY))
    return sorted((asked & set(pool.connection_kwargs)) - taken)


def _config(url: str, why: str) -> errors.ConfigError:
    return errors.ConfigError(_scrub(f"{LOCK_URL_ENV}={shown(url)}: {why}", url))


def _unreachable(url: str, exc: BaseException) -> errors.ConfigError:
    """Why Redis cannot be used: it refused the URL's credentials, or it cannot be reached."""
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if _refusal(exc):  # the server answered: starting it would not help
        given = ("refused the credentials" if _secrets(url)
                 else "requires a password and none was given")
        return errors.ConfigError(_scrub(
            f"the Redis lock server {shown(url)} ({LOCK_URL_ENV}) {given} "
            f"({reason.rstrip('.')}); nothing was run (fix the password in {LOCK_URL_ENV}: it "
            "is written :password@ right after redis://, percent-encoded where it holds / ? # "
            "or @)", url))
    return errors.ConfigError(_scrub(
        f"cannot reach the Redis lock server {shown(url)} ({LOCK_URL_ENV}): {reason}; nothing "
        "was run (start Redis or unset the variable to use the file lock alone)", url))


def _refusal(exc: BaseException) -> bool:
    """Whether ``exc`` is Redis refusing the credentials (wrong password or user, or none
    given to a server that wants one): a ``ConnectionError`` to redis-py, not an outage."""
    import redis

    return isinstance(exc, redis.exceptions.AuthenticationError)


def _answered_error() -> type[BaseException]:
    """Redis answering a command with an error: a setting of the URL it does not take."""
    import redis

    return redis.exceptions.ResponseError


def _rejected(url: str, exc: BaseException) -> errors.ConfigError:
    """The server took the connection and refused a setting of the URL (a database number
    it does not have, a client name it does not accept)."""
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return _config(url, f"the Redis server refused this URL's settings ({reason.rstrip('.')}); "
                        "correct the database number after the port or the query's options")


def _connection_errors() -> tuple[type[BaseException], ...]:
    import redis

    return (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)


class Held:
    """The Redis lock while it is held: :meth:`lost` says whether it still is."""

    def __init__(self, lock: Any, name: str, url: str) -> None:
        self._lock, self._name, self._url = lock, name, url
        self.reported = False  # a caller was told of the loss (no warning at the end then)

    def lost(self) -> str | None:
        """None while the lock is held; once it is lost, one line saying so. Asks nothing of
        Redis: portalocker's reader thread records the loss when the connection dies."""
        if not self._lock.lost:
            return None
        self.reported = True
        return (f"the Redis routine lock {self._name} on {shown(self._url)} was lost while the "
                "run went on (its connection was closed or Redis restarted)")


@contextlib.contextmanager
def hold(url: str, project: str, record: dict[str, Any]) -> Iterator[Held]:
    """Hold the Redis routine lock for the ``with`` block; ``LockBusy`` when another holds it,
    ``ConfigError`` when Redis cannot be used."""
    client = _client(url)  # first: it says which package is missing, and how to install it
    try:
        from portalocker import AlreadyLocked
        from portalocker.redis import RedisLock
    except ImportError:
        raise _config(url, _MISSING) from None
    name = channel(url, project)
    lock = RedisLock(name, connection=client, timeout=ACQUIRE_TIMEOUT_S,
                     fail_when_locked=True, interrupt_on_lost=False,
                     unavailable_timeout=HOLDER_SILENCE_S)
    _quiet_portalocker()
    try:
        try:
            client.ping()  # a server that is down is not a busy lock
            lock.acquire()
        except AlreadyLocked:
            raise _busy(url, name, client) from None
        except _connection_errors() as exc:
            raise _unreachable(url, exc) from None
        except _answered_error() as exc:
            raise _rejected(url, exc) from None
        held = Held(lock, name, url)
        try:
            mine = orjson.dumps(record).decode()
            with contextlib.suppress(*_connection_errors()):
                client.set(f"{name}:holder", mine)
            yield held
        finally:
            with contextlib.suppress(*_connection_errors()):
                if client.get(f"{name}:holder") == mine:
                    client.delete(f"{name}:holder")
            lost = held.lost() if not held.reported else None
            with contextlib.suppress(Exception):
                lock.release()
            if lost:  # a short hold (resolve, release) that nobody asked about
                print(f"warning: {lost}", file=sys.stderr)
    finally:
        with contextlib.suppress(Exception):
            client.close()


def _quiet_portalocker() -> None:
    """portalocker logs its retries; without a handler of the application's, Python's
    last-resort handler would print them (with tracebacks) on stderr."""
    import logging  # here: `list` asks this module for the URL, and needs no logging

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
        f"{pid or 'unknown'} on {host or 'unknown'} since {since or 'unknown'}): "
        f"{errors.ROUTINE_BUSY_HINT}"
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
    except _answered_error() as exc:
        raise _rejected(url, exc) from None
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
