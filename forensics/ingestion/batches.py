"""The lines of many files parsed together on threads, and each batch made final in file order."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from forensics import schema as s
from forensics.ingestion import limits
from forensics.ingestion.accounting import account, count_kinds
from forensics.ingestion.provenance import finish_columns
from forensics.ingestion.result import FileReport
from forensics.ingestion.sink import ParquetSink, concat_columns
from forensics.ingestion.state import BatchCarry, FileMeta
from forensics.ingestion.timing import YearResolver, resolve_time
from parsers import sglang, vllm
from parsers.arrow_text import count_lines, lines_column
from parsers.lines import parse_lines

WORKERS = max(1, min(4, os.cpu_count() or 1))
"""Batches parsed at once (threads). Each holds a batch's frames, so memory grows with it."""


BATCH_CHARS = 16 * 1024 * 1024
"""Lines of many small files are parsed together up to this many characters (a segment of a
large file is a batch of its own): big enough that a parse's fixed cost (~0.1 s) is small,
small enough that the batches in flight stay a fraction of a GB (8 MB cost more CPU)."""


BATCH_FILES = 4000


SPEED_PASSES_MIN_CHARS = 8 * 1024 * 1024
"""A run uses the compiled passes that exist only for speed, the fast lane (`parsers._compiled.fastlane`)
and the metrics scan (`parsers._compiled.metric_scan`), once it has batched this much text; before, the
general path and the metrics regexes, which define what those passes give, read every line
(the same tables: tests hold the passes to them). On a new install numba compiles the two on
first use, 25-45 s, most of a first run over a few MB of logs (the samples, most incidents'
logs), where the general path costs only ~35 ms more a MB. The compiled code is cached for
the runs after."""


TRUNC_MARK = " …[line truncated by forensics: {n} more bytes]"


@dataclass(frozen=True)
class Segment:
    """A piece of a file's text (valid UTF-8, ending at a newline but for a file's last) to parse."""

    fid: int
    seg: int
    first: int
    """Line number of its first line in the file."""
    text: bytes | np.ndarray
    """The bytes (a uint8 array when read a segment at a time: `_files.text_segments`)."""

    lines: int = field(init=False)
    """Lines in `text` (`arrow_text.count_lines`)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "lines", count_lines(self.text))


def parse_batch(batch: list[Segment], fast_lane: bool = True) -> pl.DataFrame:
    # The frame of physical lines is built whole from flat arrays: four small Series per
    # file, concatenated, cost ~0.3 ms a file (3 s for 10,000 tiny files) and left the body
    # column in one chunk per file, which every pass then walked chunk by chunk.
    counts = np.array([b.lines for b in batch], dtype=np.int64)
    starts = np.cumsum(counts) - counts
    firsts = np.array([b.first for b in batch], dtype=np.int64)
    df = pl.DataFrame(
        {
            "_fid": np.repeat(np.array([b.fid for b in batch], dtype=np.uint32), counts),
            "_seg": np.repeat(np.array([b.seg for b in batch], dtype=np.uint32), counts),
            s.LINE: np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(starts - firsts, counts),
            "body": lines_column([b.text for b in batch], int(counts.sum())),
            "_extra": np.zeros(int(counts.sum()), dtype=bool),
        }
    )
    body = pl.col("body")
    nbytes = body.str.len_bytes()
    # Bytes bound characters from above: the cheap byte length finds the candidates, and the
    # cut, the test and the count of what was cut agree with each other for multi-byte text.
    max_line = limits.current().line_chars
    if df.select((nbytes > max_line).any()).item():
        kept = body.str.slice(0, max_line)
        mark_head, mark_tail = TRUNC_MARK.split("{n}")
        df = df.with_columns(
            pl.when((nbytes > max_line) & (body.str.len_chars() > max_line))
            .then(
                pl.concat_str(
                    [kept, pl.lit(mark_head), (nbytes - kept.str.len_bytes()).cast(pl.String), pl.lit(mark_tail)]
                )
            )
            .otherwise(body)
            .alias("body")
        )
    return _slim(parse_lines(df, fast_lane))


PARSE_ONLY = ("_kind", "_row", "_orphan", "_seg")
"""Working columns of the parsers that no step after them reads."""


READ_WHEN_NULL = frozenset(("_fid", "_drop", "_extra", "_nfold", "_outer_ts", s.SOURCE, s.MESSAGE, s.LINE))
"""Columns the steps after parsing read as they are; any other may be absent (they add what
they need as nulls), so a batch drops those it has only nulls in."""


def _slim(ev: pl.DataFrame) -> pl.DataFrame:
    """A parsed batch without the columns nothing will read: the batches are all held until
    the last is parsed, and a string column costs 16 bytes a row even when null (~0.9 GB of
    all-null working columns at 1 GB of service logs)."""
    nulls = ev.null_count().row(0, named=True)
    ev = ev.drop(c for c in ev.columns if c in PARSE_ONLY or (c not in READ_WHEN_NULL and nulls[c] == ev.height))
    return ev.with_columns(
        pl.col(c).cast(pl.Categorical) for c in ev.columns if s.EVENT_DTYPES.get(c) == pl.Categorical
    )


class BatchFinisher:
    """Finishes parsed batches in file order: time, accounting partials, final columns, metrics.

    Invariant: batches arrive in (file id, segment, line) order, so only a batch's first
    file can continue the previous batch's last one, and concatenating the finished
    batches gives the events in file order without sorting.
    """

    def __init__(
        self, metas: list[FileMeta], clock: YearResolver, sinks: tuple[ParquetSink, ParquetSink] | None = None
    ) -> None:
        self.metas, self.clock, self.sinks = metas, clock, sinks
        self.carry = BatchCarry()
        self.parts: list[pl.DataFrame] = []
        self.metric_parts: list[pl.DataFrame] = []
        self.counts: list[tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]] = []

    def add(self, ev: pl.DataFrame, speed_passes: bool, metrics: pl.DataFrame | None = None) -> None:
        """Finish a parsed batch; `speed_passes`: read its metrics lines with the compiled scan
        (`SPEED_PASSES_MIN_CHARS`); `metrics`: a document's own (a Prometheus export's)."""
        if ev.height == 0:
            return
        ev, time_state = resolve_time(ev, self.clock, self.carry)
        self.counts.append(count_kinds(ev))
        ev, dump = finish_columns(ev, self.metas, self.carry)
        self.carry = BatchCarry(**time_state, dump=dump)
        if metrics is None:
            metrics = _engine_metrics(ev, speed_passes)
        if self.sinks is not None:
            self.sinks[0].write(ev)
            self.sinks[1].write(metrics)
        else:
            self.parts.append(ev)
            self.metric_parts.append(metrics)

    def tables(self) -> tuple[pl.DataFrame, pl.DataFrame]:
        """The events (one chunk per column) and metrics of every batch. Empties the parts."""
        metrics = [m for m in self.metric_parts if m.height]
        self.metric_parts.clear()
        metrics_table = pl.concat(metrics, rechunk=True) if metrics else s.empty_metrics()
        return concat_columns(self.parts), metrics_table

    def accounting(self, lines_read: dict[int, int], notes: dict, doc_files: dict) -> list[FileReport]:
        return account(self.counts, self.metas, lines_read, notes, doc_files)


def _engine_metrics(ev: pl.DataFrame, speed_passes: bool) -> pl.DataFrame:
    """A batch's rows of the metrics table: vLLM's metrics lines' (read by the compiled scan
    with `speed_passes`), then SGLang's batch lines'."""
    parts = [m for m in (vllm.metrics(ev, scan=speed_passes), sglang.metrics(ev)) if m.height]
    return pl.concat(parts) if len(parts) > 1 else parts[0] if parts else s.empty_metrics()
