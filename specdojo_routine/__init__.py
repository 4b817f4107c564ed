"""specdojo_routine: run SpecDojo routines with an append-only, event-sourced audit trail."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
