"""Definition model of Jobs: frozen values built from validated ``job-*.yaml`` (pure; SPEC §7.1,
§11). Beside the routines' model (:mod:`.model`), in a module of its own: it is loaded where
Job Definitions are read or run, so a command over routines alone does not build its classes.

Objects here are only ever built by :mod:`specdojo_routine.store.definitions` after validation,
so their invariants hold; they carry the source ``path`` (relative to the project root, POSIX form)
for messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import attrs

InputType = Literal["string", "integer", "boolean", "list"]
InputValue = str | int | bool | tuple[str | int | bool, ...]


@attrs.frozen(kw_only=True)
class InputSpec:
    name: str
    type: InputType = "string"
    required: bool = False
    default: InputValue | None = None
    enum: tuple[str | int | bool, ...] | None = None
    minimum: int | None = None
    maximum: int | None = None
    from_checkpoint: str | None = None  # dotted path into the previous checkpoint
    resolve: Literal["git_head"] | None = None
    git_revision: bool = False
    description: str | None = None


@attrs.frozen(kw_only=True)
class Precondition:
    command: str
    skip_when: Literal["empty-output"] | int = "empty-output"


@attrs.frozen(kw_only=True)
class Analysis:
    agent: str
    description: str


@attrs.frozen(kw_only=True)
class ReviewSpec:
    """``task.review`` (SPEC §11.3): review before merge; agents optional (auto when None)."""

    executor: str | None = None
    reporter: str | None = None


@attrs.frozen(kw_only=True)
class CommandTask:
    command: str
    precondition: Precondition | None = None
    partial_exit_codes: tuple[int, ...] = ()
    noop_exit_code: int | None = None
    timeout: str | None = None  # as written ("90s", "10m")
    timeout_seconds: int | None = None
    analysis: Analysis | None = None
    review: ReviewSpec | None = None
    mode: Literal["command"] = "command"


@attrs.frozen(kw_only=True)
class AgentTask:
    """``edit`` / ``review``: delegated to an injected AgentExecutor."""

    mode: Literal["edit", "review"]
    description: str
    targets: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    executor: str | None = None
    reporter: str | None = None
    capabilities: tuple[str, ...] = ()
    proficiency: str | None = None
    owner: str | None = None
    timeout: str | None = None  # bounds the whole attempt (all stages; SPEC §11.4)
    timeout_seconds: int | None = None
    review: ReviewSpec | None = None


Task = CommandTask | AgentTask


@attrs.frozen(kw_only=True)
class CheckpointSpec:
    values: Mapping[str, str]
    advance_on: frozenset[str] = frozenset({"succeeded", "noop"})


@attrs.frozen(kw_only=True)
class JobDefinition:
    id: str
    path: str
    name: str
    description: str | None = None
    inputs: tuple[InputSpec, ...] = ()
    task: Task
    idempotency_key: str
    checkpoint: CheckpointSpec | None = None
    #: ``run.on_interrupted`` (SPEC §7.3): ``review`` (default: an interrupted attempt waits
    #: for ``job resolve``) or ``retry`` (closed as failed and attempted again, for commands
    #: that are safe to repeat)
    on_interrupted: Literal["review", "retry"] = "review"

    @property
    def slug(self) -> str:
        return self.id.removeprefix("job-")

    def input_spec(self, name: str) -> InputSpec | None:
        for spec in self.inputs:
            if spec.name == name:
                return spec
        return None
