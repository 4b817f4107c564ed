"""Time zones a routine may name (SPEC §3), pure: an IANA name zoneinfo knows, never the
machine's own zone or a leap-second clock, and what to write instead of one that is not.

Its own module, so that a cached routine's zone is checked (the definitions cache) without
loading the rules that build routines.
"""

from __future__ import annotations

import functools
import zoneinfo

from specdojo_routine.core.validation import close_matches

#: Names zoneinfo can find on some machines that do not name one clock: ``localtime`` and
#: ``posixrules`` are whatever zone the machine was set to.
_MACHINE_ZONES = frozenset({"localtime", "posixrules"})


def usable_zone(name: str) -> bool:
    """Whether ``name`` can be a routine's zone. A routine means the same instants on every
    machine, so a zone is an IANA name zoneinfo knows - not the machine's own zone, and not a
    ``right/`` zone, whose clock counts leap seconds and so runs tens of seconds off civil
    time (Kubernetes refuses ``Local`` for a CronJob's ``timeZone`` likewise)."""
    if name in _MACHINE_ZONES or name.startswith("right/"):
        return False
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return False
    return True


def zone_problem(name: str) -> str | None:
    """Why ``name`` cannot be a routine's zone, with what to write instead (None: it can)."""
    if usable_zone(name):
        return None
    if name in _MACHINE_ZONES:
        return "the machine's own zone, which differs from machine to machine; name the zone, " \
               "such as Asia/Tokyo"
    if name.startswith("right/"):
        return f'a leap-second clock, seconds off civil time; did you mean "{name[6:]}"?'
    close = close_matches(name, _zone_names())
    return f'did you mean "{close[0]}"?' if close else "use an IANA name such as Asia/Tokyo"


@functools.cache
def _zone_names() -> list[str]:
    return sorted(zoneinfo.available_timezones())
