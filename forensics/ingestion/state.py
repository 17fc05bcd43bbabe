"""The state ingest keeps between a file's batches and across its files.

`FileMeta` is what a file's path says (pod, namespace, container, node); `BatchCarry` is what one
batch of a file hands the next (the last time seen, the boot a dmesg stamp counts from, the
wrapper's marks), so a file cut into batches reads as one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

import polars as pl


@dataclass(frozen=True)
class FileMeta:
    """Per-file hints from the path layout (CRI, cluster-info dump, file name)."""

    rel: str
    pod: str | None
    namespace: str | None
    container: str | None
    mtime: float
    node: str | None = None
    """The node of its node-level lines (dmesg, kubelet) when they name none (`parsers.paths.node_of`)."""


Progress = Callable[[int, int, str], None]
"""Callback(bytes_done, bytes_total, current_file) for progress bars."""


@dataclass(frozen=True)
class BatchCarry:
    """What the file a batch ends in hands to the batch that continues it: its last time
    (inherited by the next batch's untimed lead lines), the month and rollover count of its
    fallback-year lines, its last `dmesg` line's boot offset (wall time minus seconds since
    boot, None where its boot said no wall time) and stamp, and its cluster-info dump headers
    (pod, namespace, container)."""

    fid: int = -1
    ts: datetime | None = None
    mo: int | None = None
    rolls: int = 0
    boot: tuple[float | None, float] | None = None
    dump: dict[str, str] = field(default_factory=dict)

    @property
    def rows(self) -> pl.Expr:
        """The rows of a batch that continue the carried file."""
        return pl.col("_fid") == self.fid


@dataclass(frozen=True, kw_only=True)
class TimeHints:
    """What the user says about time that the logs may not: one value, passed whole through
    ingest, its shards and the year resolver.

    `year`: for stamps without one when no dated log is beside them; `tz`: the zone of
    local-time formats (vLLM, c10, klog, NCCL); `captured_at`: when `kubectl get events` /
    `describe` output was captured, which resolves its relative ages (`5m`)."""

    year: int | None = None
    tz: str = "UTC"
    captured_at: datetime | None = None


NO_HINTS: TimeHints = TimeHints()
"""UTC, no year, no capture time: the defaults of every `hints` parameter."""
