"""What ingest returns: the tables and, per file, what became of every line (`FileReport`, `IngestResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import polars as pl

from forensics import schema as s
from forensics.ingestion import files as _files

EVENTS_FILE, METRICS_FILE = "events.parquet", "metrics.parquet"


@dataclass(frozen=True)
class FileReport:
    """What ingest did with one file. `lines == parsed + folded + unparsed` always."""

    file: str
    formats: tuple[str, ...]
    """Sources found in the file, most frequent first (`vllm`, `nccl`, `k8s-event`, ...)."""
    wrapper: str | None
    """Outer layer: `cri`, `kubectl`, `docker-json`, `journald`, `k8s-events-json`/`-yaml`, or None."""
    lines: int
    parsed: int
    folded: int
    unparsed: int
    events: int
    notes: tuple[str, ...] = ()


@dataclass
class IngestResult:
    """The output of `ingest()`: both tables, per-file accounting, skipped paths, warnings."""

    events: pl.DataFrame
    metrics: pl.DataFrame
    files: list[FileReport]
    skipped: list[_files.Skipped]
    trace_paths: dict[str, str] = field(default_factory=dict)
    """Request-trace files found (inputs for `forensics replay`): relative path -> where it can
    be opened (a file unpacked from an archive is elsewhere)."""
    warnings: list[str] = field(default_factory=list)
    dataset: str | None = None
    """Where a sharded run (`--engine pool|ray`) wrote the event rows: a Parquet dataset
    partitioned `hour=/source=`, with `_templates.parquet` mapping its shard template ids."""
    streamed_to: str | None = None
    """The directory the tables were streamed to (`ingest(stream_to=...)`) as
    `events.parquet` and `metrics.parquet`; `events` and `metrics` are then empty, and
    `n_events` / `n_metrics` count the rows written."""
    written: dict[str, int] = field(default_factory=dict)

    @property
    def traces(self) -> list[str]:
        """The request-trace files, relative paths in order."""
        return sorted(self.trace_paths)

    @property
    def lines(self) -> int:
        return sum(f.lines for f in self.files)

    @property
    def parsed(self) -> int:
        return sum(f.parsed for f in self.files)

    @property
    def folded(self) -> int:
        return sum(f.folded for f in self.files)

    @property
    def unparsed(self) -> int:
        return sum(f.unparsed for f in self.files)

    @property
    def n_events(self) -> int:
        return self.written["events"] if self.streamed_to else self.events.height

    @property
    def n_metrics(self) -> int:
        return self.written["metrics"] if self.streamed_to else self.metrics.height

    def column(self, name: str) -> pl.Series:
        """One column of the events, read back from the file when they were streamed."""
        if self.streamed_to:
            return pl.scan_parquet(Path(self.streamed_to) / EVENTS_FILE).select(name).collect()[name]
        return self.events[name]

    def time_span(self) -> tuple[datetime | None, datetime | None]:
        ts = self.column(s.TS).drop_nulls()
        return (ts.min(), ts.max()) if len(ts) else (None, None)

    def merged(self, other: IngestResult) -> IngestResult:
        """This result and `other` (another root ingested apart, e.g. documents pulled from
        Prometheus) as one: rows and accounting together, sorted by (file, line) again.
        Neither may have been streamed or sharded (their rows are not in memory then)."""
        if self.streamed_to or other.streamed_to:
            raise ValueError("cannot merge ingest results whose tables were streamed to disk")
        events = pl.concat([self.events, other.events], how="vertical_relaxed").sort(
            s.FILE, s.LINE, maintain_order=True
        )
        metrics = pl.concat([self.metrics, other.metrics], how="vertical_relaxed").sort(
            s.FILE, s.LINE, maintain_order=True
        )
        return IngestResult(
            events=events,
            metrics=metrics,
            files=sorted([*self.files, *other.files], key=lambda f: f.file),
            skipped=[*self.skipped, *other.skipped],
            trace_paths=self.trace_paths | other.trace_paths,
            warnings=[*self.warnings, *other.warnings],
            dataset=self.dataset,
        )

    def accounting(self) -> dict:
        """The JSON sidecar: totals, per-file accounting and every skipped path with its reason."""
        return {
            "schema_version": s.SCHEMA_VERSION,
            "files": len(self.files),
            "lines": self.lines,
            "parsed": self.parsed,
            "folded": self.folded,
            "unparsed": self.unparsed,
            "events": self.n_events,
            "metrics": self.n_metrics,
            "per_file": [f.__dict__ | {"formats": list(f.formats), "notes": list(f.notes)} for f in self.files],
            "skipped": [{"file": k.file, "reason": k.reason} for k in self.skipped],
            "traces": self.traces,
            "warnings": self.warnings,
            **({"dataset": self.dataset} if self.dataset else {}),
        }
