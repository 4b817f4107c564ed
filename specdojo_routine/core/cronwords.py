"""A schedule in words, for ``status`` (pure): ``at 02:00 every day (Europe/Berlin)``.

Covers the shapes people write (fixed times, every N minutes or hours, weekday and
day-of-month lists and ranges, months); anything else is shown as the expression itself, which
``status`` prints beside the words anyway. Day-of-month and day-of-week together read as both
must hold, SpecDojo's AND rule (SPEC §4).
"""

from __future__ import annotations

import re

from specdojo_routine.core.model import Routine

_DAYS = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("", "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
           "Dec")
_NUMBER = re.compile(r"\d+")
_LIST = re.compile(r"[0-9A-Za-z]+(?:-[0-9A-Za-z]+)?(?:,[0-9A-Za-z]+(?:-[0-9A-Za-z]+)?)*")


def describe(routine: Routine) -> str:
    """The routine's schedule in words, with its time zone."""
    if routine.trigger is None:
        assert routine.interval is not None
        return f"every {routine.interval.text} (from the last run)"
    words = cron_words(routine.trigger.cron)
    return f"{words} ({routine.trigger.timezone})"


def cron_words(expr: str) -> str:
    """A 5-field cron expression in words; ``cron <expr>`` when it is not a common shape."""
    fields = expr.split()
    if len(fields) != 5:
        return f"cron {expr}"
    minute, hour, dom, month, dow = fields
    when = _time(minute, hour)
    days = _days(dom, dow)
    if when is None or days is None:
        return f"cron {expr}"
    if days == "every day" and when.startswith("every"):
        days = ""  # "every 15 minutes" says it already
    months = "" if month == "*" else _named(month, _MONTHS)
    if months is None:
        return f"cron {expr}"
    return " ".join(x for x in (when, days, f"in {months}" if months else "") if x)


def _time(minute: str, hour: str) -> str | None:
    if _NUMBER.fullmatch(minute):
        m = int(minute)
        if _NUMBER.fullmatch(hour):
            return f"at {int(hour):02d}:{m:02d}"
        if hour == "*":
            return f"every hour at :{m:02d}"
        if hour.startswith("*/") and _NUMBER.fullmatch(hour[2:]):
            return f"every {int(hour[2:])} hours at :{m:02d}"
        if re.fullmatch(r"\d+(?:,\d+)+", hour):
            return "at " + ", ".join(f"{int(h):02d}:{m:02d}" for h in hour.split(","))
        return None
    if minute == "*" and hour == "*":
        return "every minute"
    if minute.startswith("*/") and _NUMBER.fullmatch(minute[2:]) and hour == "*":
        return f"every {int(minute[2:])} minutes"
    return None


def _days(dom: str, dow: str) -> str | None:
    weekdays = None if dow == "*" else _named(dow, _DAYS)
    if dom == "*":
        if dow == "*":
            return "every day"
        return None if weekdays is None else f"on {weekdays}"
    if not _LIST.fullmatch(dom) or not dom.replace(",", "").replace("-", "").isdigit():
        return None
    monthday = f"on day {dom} of the month" if dom.isdigit() else f"on days {dom}"
    if dow == "*":
        return monthday
    return None if weekdays is None else f"{monthday} if it is a {weekdays} (both must hold)"


def _named(field: str, names: tuple[str, ...]) -> str | None:
    """A list of numbers or ranges as names (``1-5`` -> ``Mon-Fri``); names pass through."""
    if not _LIST.fullmatch(field):
        return None
    parts = []
    for item in field.split(","):
        ends = [_name(end, names) for end in item.split("-")]
        if None in ends:
            return None
        parts.append("-".join(str(e) for e in ends))
    return ", ".join(parts)


def _name(token: str, names: tuple[str, ...]) -> str | None:
    if token.isdigit():
        number = int(token)
        return names[number] if 0 <= number < len(names) and names[number] else None
    title = token[:3].title()
    return title if title in names else None
