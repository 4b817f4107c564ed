"""Who an operator's control is recorded as (SPEC §13: every control is an event with who and
why): ``pause``, ``resume``, ``stop``, ``resolve``, ``release`` and ``job resolve`` ask here."""

from __future__ import annotations

import os
from collections.abc import Mapping

from specdojo_routine.core.errors import UsageError

__all__ = ["operator_name"]


def operator_name(by: str | None, env: Mapping[str, str] | None = None) -> str:
    """Who an operator's control is recorded as: ``--by``, else ``USER``, else the login name,
    else ``unknown``. A ``--by`` that is blank names nobody: a usage error, as a blank
    ``--note`` is. (``getpass``, with its terminal modules, is imported only for the login
    name: most commands never need it.)"""
    if by is not None:
        if not by.strip():
            raise UsageError("--by must name who you are (leave it out for $USER)")
        return by
    user = (os.environ if env is None else env).get("USER")
    if user:
        return user
    import getpass

    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "unknown"
