"""``run --id ID --input k=v`` (SPEC §13): one attempt's Job actions with some inputs given on
the command line over the routine's own.

Checked before anything is recorded, as ``job run --input`` checks its own: ``k=v`` split at
the first ``=``, each name once, every name declared by a Job one of the routine's Job actions
runs, every value valid for that input's type, and no value that is one of the environment's
secrets (inputs are recorded verbatim; secrets reach a command only through its environment).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from specdojo_routine.core import decide, jobplan
from specdojo_routine.core.jobplan import InputError, split_cli_inputs
from specdojo_routine.core.model import JobAction, Routine
from specdojo_routine.core.redact import redact
from specdojo_routine.store.definitions.load import Definitions


def parse(
    routine: Routine, defs: Definitions, pairs: Sequence[str], secrets: Sequence[str],
) -> dict[str, str]:
    """The overrides ``pairs`` give for ``routine`` (text values, as routine inputs are);
    :class:`InputError` (exit 2) for a bad pair, a duplicate, an unknown name, a bad value or
    a secret."""
    texts = split_cli_inputs(pairs)
    jobs = [defs.job(a.job) for a in routine.actions if isinstance(a, JobAction)]
    known = [job for job in jobs if job is not None]
    if texts and not known:
        raise InputError(f"--input: {routine.id} has no Job action to give inputs to")
    for key, text in texts.items():
        declaring = [job for job in known if job.input_spec(key) is not None]
        if not declaring:
            names = sorted({s.name for job in known for s in job.inputs})
            raise InputError(f"unknown input {key} for the Job actions of {routine.id} "
                             f"(declared: {', '.join(names) or 'none'})")
        for job in declaring:
            jobplan.parse_text_inputs(job, {key: text})  # a bad value: refused here
        if redact(text, secrets) != text:
            raise InputError(f"input {key} looks like a secret; secrets must reach a command "
                             "through its environment, not an input (inputs are recorded)")
    return texts


def apply(
    actions: Sequence[decide.PlannedAction], override: Mapping[str, str], defs: Definitions,
) -> list[decide.PlannedAction]:
    """``actions`` with each Job action's inputs overridden by the names its Job declares."""
    if not override:
        return list(actions)
    done = []
    for planned in actions:
        job = defs.job(planned.job) if planned.job is not None else None
        if job is not None:
            mine = {k: v for k, v in override.items() if job.input_spec(k) is not None}
            planned = attrs.evolve(planned, inputs={**(planned.inputs or {}), **mine})
        done.append(planned)
    return done
