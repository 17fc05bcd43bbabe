"""The records an incident's narrative is made of: what happened, typed, before it is written.

`narrative` builds them from the signals and series; `analysis_json` is the only place they
become JSON (times as ISO 8601 UTC there, datetimes here). All are frozen and built by
keyword: a reader sees `http_5xx=12`, never a twelfth positional argument.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from forensics.schema import Detector

EVIDENCE_CHARS = 2000
"""How much of a quoted line the analysis keeps: a whole traceback's head, not a 50 MB line."""


@dataclass(frozen=True, kw_only=True)
class Evidence:
    """A log line that shows a finding, quoted where the report can point at it (`file:line`)."""

    file: str
    line: int
    """1-based, as editors and `sed -n` count."""
    text: str

    @classmethod
    def quote(cls, file: str, line: int, text: str | None) -> Evidence:
        return cls(file=file, line=line, text=(text or "")[:EVIDENCE_CHARS])


@dataclass(frozen=True, kw_only=True)
class Stall:
    """An engine that held requests while generating nothing, from its metrics (`series.first_stall`)."""

    start: datetime
    where: str
    running: int
    """Requests the engine held while it generated 0 tokens/s."""
    samples: int
    file: str
    line: int


@dataclass(frozen=True, kw_only=True)
class Impact:
    """What users lost: the throughput fall (when measured), the errors they got, who was hit."""

    start: datetime
    end: datetime | None
    """None: not recovered by the end of the logs."""
    duration_s: float | None
    measured: bool
    """Whether a throughput series shows the fall; without one the errors are the impact."""
    baseline_per_s: float | None
    min_per_s: float | None
    drop_fraction: float | None
    unit: str | None
    http_5xx: int
    http_requests: int
    http_from: str | None
    """Where the request counts come from: the access log's source, `prometheus`, or None."""
    peak_waiting: float | None
    partial_recoveries: tuple[tuple[datetime, datetime], ...]
    affected: tuple[str, ...]
    detector: Detector
    series_ended: datetime | None = None
    """When the throughput series had already ended before the incident began (an excerpt cut at
    its engine's crash, which stops the metrics): the start of its last bin; None otherwise."""


@dataclass(frozen=True, kw_only=True)
class TrafficSurge:
    """Prompt throughput up 25% or more in the 30 minutes before the drop."""

    from_prompt_tokens_per_s: float
    to_prompt_tokens_per_s: float
    ratio: float


@dataclass(frozen=True, kw_only=True)
class RolloutStep:
    """One kind of change a rollout made (an image pulled, a replica set scaled), as logged."""

    text: str
    file: str
    line: int


@dataclass(frozen=True, kw_only=True)
class Rollout:
    """A rollout as the report names it: its first change, and the first of each kind with it."""

    ts: datetime
    text: str
    file: str
    line: int
    steps: tuple[RolloutStep, ...]
    """Four at most, the first change first."""


@dataclass(frozen=True, kw_only=True)
class RolloutTrigger:
    """The last rollout in the 30 minutes before the drop, where no traffic surge was found."""

    rollout: Rollout
    before_drop_s: float


Trigger = TrafficSurge | RolloutTrigger


@dataclass(frozen=True, kw_only=True)
class Detection:
    """When the first signal of the incident was logged, and when users could first see it."""

    first_signal: datetime | None
    first_user_visible: datetime | None


ResolutionKind = Literal[
    "rollout", "no recovery logged", "recovered without a logged change", "not recovered by the end of the logs"
]


@dataclass(frozen=True, kw_only=True)
class Resolution:
    """How the incident ended, as far as the logs show it.

    Only a throughput series can show a recovery: an incident found as a burst of errors ends
    where its errors stop (`errors_end`), which may be no more than where the logs stop
    (`logs_end`), and is never `recovered`.
    """

    kind: ResolutionKind
    ts: datetime | None
    recovered: datetime | None
    rollout: Rollout | None = None
    """The change that fixed it, for kind `rollout`."""
    after_recovery: bool | None = None
    """For kind `rollout`: the throughput was back before the change (not its fix)."""
    errors_end: datetime | None = None
    logs_end: datetime | None = None


@dataclass(frozen=True, kw_only=True)
class Tell:
    """The KV cache at 100% while nothing waits and nothing is preempted: an eviction policy that
    frees live blocks looks like this before any error."""

    start: datetime
    end: datetime


TimelineRole = Literal["root_cause", "symptom", "impact", "recovery", "tell", "trigger", "resolution"]


@dataclass(frozen=True, kw_only=True)
class TimelineRow:
    """One row of the condensed timeline, with the evidence line where a log gave it."""

    ts: datetime | None
    host: str
    pod: str | None
    source: str
    template_id: str | None
    role: TimelineRole
    summary: str
    file: str | None = None
    line: int | None = None
