"""The sharded pipeline behind `--engine pool|ray`: parse and mine shards in parallel, merge on the driver.

Shape (shared docs, scale-out.md §2c–§3)::

    discover files ──> pass 1: reference times (file heads, parallel)
                   ──> pass 2: one task per shard (a run of whole files, ~SHARD_BYTES):
                         ingest_files -> mine with the shard's own Drain
                         -> rows to Parquet under <dataset>/hour=<H>/source=<S>/
                         -> return partials: accounting, metrics, shard templates, per-minute counts
                   ──> driver: second Drain pass over the distinct shard templates
                         (`mining.merge_shards`) -> shard template id -> global template id,
                         written as <dataset>/_templates.parquet; partials reduced (the
                         per-minute counts per template and host: _template_minutes.parquet)

Row data is never rewritten: rows keep their `shard_template_id`, and the small mapping
table joins them to global ids. The driver then reads the rows back (only the event
columns, in file order) for the timeline and root cause, which run exactly as in a
local run.

Why pass 1 exists: a line without a year (klog, c10d, NCCL) takes it from the nearest
dated log in the same directory tree, which may be parsed by another shard. Heads are
enough for that (`ingestion.reference_times`), so shards stay independent.

Invariants: shards are runs of consecutive files in path order, numbered in that order,
and every row carries (`shard`, `seq`): sorting by them gives the local pipeline's row
order exactly. A shard's output files are named by shard number, so a retried task
overwrites its own files and nothing else.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import polars as pl
import pyarrow as pa

from forensics import ingestion, mining
from forensics import schema as s
from forensics.errors import ForensicsError
from forensics.ingestion import FileReport, IngestResult
from forensics.ingestion import files as _files
from forensics.ingestion.limits import DEFAULT as DEFAULT_LIMITS
from forensics.ingestion.limits import Limits
from forensics.ingestion.limits import using as using_limits
from forensics.ingestion.state import NO_HINTS, TimeHints
from forensics.shards.engines import Executor

SHARD_BYTES = 64 * 1024 * 1024
"""Files are grouped into shards of about this many bytes (a larger file is a shard of its
own). Large enough that a task's fixed costs (start, Drain, Parquet footer) are noise,
small enough that 2 workers get several shards of a 1 GB incident."""
SHARD_TEMPLATE_ID = "shard_template_id"
SHARD, SEQ, HOUR = "shard", "seq", "hour"
MAPPING_FILE = "_templates.parquet"
MINUTES_FILE = "_template_minutes.parquet"
ROWS_GLOB = f"{HOUR}=*/{s.SOURCE}=*/*.parquet"
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
"""Rows without a time (an untimed excerpt) go here, the name Hive and Arrow use for null."""

Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class ShardSpec:
    """One task's input: which files, and what it needs to know about the others."""

    shard: int
    files: tuple[_files.InputFile, ...]
    file_refs: dict[str, datetime]
    dataset: str
    hints: TimeHints = NO_HINTS
    limits: Limits = DEFAULT_LIMITS


@dataclass
class ShardResult:
    """A shard's partials: small, and tables only as `pyarrow.Table` (see `engines`)."""

    shard: int
    files: list[FileReport]
    skipped: list[_files.Skipped]
    trace_paths: dict[str, str]
    warnings: list[str]
    metrics: pa.Table
    templates: pa.Table
    """The shard's templates table (`mining.summarise` columns) with shard template ids."""
    minute_counts: pa.Table
    """Lines per (minute, source, host, shard template)."""
    lines: int
    seconds: float


@dataclass
class Sharded:
    """What the driver assembled: the usual ingest and mining results, plus the run's shape."""

    ingest: IngestResult
    mined: mining.MiningResult | None
    minute_counts: pl.DataFrame | None
    """Lines per (minute, source, host, template_id), reduced from the shards (None: local run)."""
    shards: int
    task_seconds: float
    """Sum of the shard tasks' own wall times: lines / task_seconds is a per-core rate."""
    stages: dict[str, float] = field(default_factory=dict)


def plan(files: list[_files.InputFile], shard_bytes: int | None = None) -> list[list[_files.InputFile]]:
    """Consecutive files (path order) grouped up to `shard_bytes` (`SHARD_BYTES`); never splits a file."""
    shard_bytes = shard_bytes or SHARD_BYTES
    shards: list[list[_files.InputFile]] = []
    size = 0
    for f in files:
        if not shards or size + f.size > shard_bytes:
            shards.append([])
            size = 0
        shards[-1].append(f)
        size += f.size
    return shards


def reference_task(args: tuple[tuple[_files.InputFile, ...], str]) -> dict[str, datetime]:
    files, tz = args
    return ingestion.reference_times(list(files), tz)


def run_shard(spec: ShardSpec) -> ShardResult:
    """Parse, mine and write one shard; return its partials. Runs on a worker."""
    t0 = time.perf_counter()
    r = ingestion.ingest_files(list(spec.files), hints=spec.hints, file_refs=spec.file_refs, limits=spec.limits)
    ev = r.events
    mined = mining.mine(ev, shard=True)
    ev = ev.with_columns(mined.template_ids.alias(SHARD_TEMPLATE_ID))
    if ev.height:
        _write_rows(
            ev.with_columns(
                pl.col(s.TS).dt.strftime("%Y-%m-%dT%H").fill_null(NULL_PARTITION).alias(HOUR),
                pl.lit(spec.shard, pl.UInt32).alias(SHARD),
                pl.int_range(pl.len(), dtype=pl.UInt32).alias(SEQ),
                mining.params_expr(pl.col(s.MESSAGE)).alias(mining.PARAMS),
            ),
            Path(spec.dataset),
            spec.shard,
        )
    minutes = (
        ev.group_by(pl.col(s.TS).dt.truncate("1m").alias("minute"), s.SOURCE, s.HOST, SHARD_TEMPLATE_ID)
        .len(mining.COUNT)
        .sort("minute", s.SOURCE, s.HOST, SHARD_TEMPLATE_ID, nulls_last=True)
    )
    return ShardResult(
        spec.shard,
        r.files,
        r.skipped,
        r.trace_paths,
        r.warnings + mined.warnings,
        r.metrics.to_arrow(),
        mined.templates.to_arrow(),
        minutes.to_arrow(),
        r.lines,
        time.perf_counter() - t0,
    )


def _write_rows(rows: pl.DataFrame, dataset: Path, shard: int) -> None:
    """Hive layout `hour=<H>/source=<S>/shard-<N>-0.parquet` (zstd), one file per partition.

    Written with polars (3x faster than converting to Arrow for `pyarrow.dataset`). The
    file name is the shard's, so a retried task overwrites exactly its own files.
    """
    for (hour, source), part in rows.partition_by([HOUR, s.SOURCE], as_dict=True, include_key=False).items():
        d = dataset / f"{HOUR}={hour}" / f"{s.SOURCE}={source}"
        d.mkdir(parents=True, exist_ok=True)
        part.write_parquet(d / f"shard-{shard:06d}-0.parquet", compression="zstd", statistics=False)


def ingest_and_mine(
    paths: list[Path],
    executor: Executor,
    dataset: Path,
    *,
    hints: TimeHints = NO_HINTS,
    progress: Progress | None = None,
    shard_bytes: int | None = None,
    outside: bool = False,
    limits: Limits | None = None,
) -> Sharded:
    """The sharded equivalent of `ingest()` + `mining.mine()`; rows land in `dataset`."""
    limits = limits or DEFAULT_LIMITS
    stages: dict[str, float] = {}
    t = time.perf_counter()
    # Absolute paths: tasks may run in another working directory (a Ray worker, a remote node).
    with using_limits(limits):
        files, skipped = _files.discover([Path(p).absolute() for p in paths], outside=outside)
    dataset = Path(dataset).absolute()
    _fresh_dataset(dataset)
    chunks = [tuple(files[i :: executor.workers * 2]) for i in range(min(len(files), executor.workers * 2))]
    refs: dict[str, datetime] = {}
    for part in executor.map(reference_task, [(c, hints.tz) for c in chunks]):
        refs.update(part)
    stages["references"] = time.perf_counter() - t
    t = time.perf_counter()
    groups = plan(files, shard_bytes)
    specs = [
        ShardSpec(shard=i, files=tuple(g), file_refs=refs, dataset=str(dataset), hints=hints, limits=limits)
        for i, g in enumerate(groups)
    ]
    total, done = sum(f.size for f in files) or 1, 0
    results: list[ShardResult] = []
    for res, group in zip(executor.map(run_shard, specs), groups, strict=True):
        results.append(res)
        done += sum(f.size for f in group)
        if progress:
            progress(done, total, group[-1].rel)
    stages["shards"] = time.perf_counter() - t
    t = time.perf_counter()
    reports = [f for r in results for f in r.files]
    skipped = sorted([*skipped, *(k for r in results for k in r.skipped)], key=lambda k: k.file)
    if not reports:
        raise ingestion.no_input(paths, skipped)
    mapping, templates = _merge_templates([pl.from_arrow(r.templates) for r in results])
    mapping.write_parquet(dataset / MAPPING_FILE, statistics=False)
    to_global = dict(zip(mapping[SHARD_TEMPLATE_ID], mapping[mining.TEMPLATE_ID], strict=True))
    events = _read_rows(dataset)
    ids = events[SHARD_TEMPLATE_ID].replace_strict(to_global, return_dtype=pl.String)
    minute_counts = (
        pl.concat([pl.from_arrow(r.minute_counts) for r in results])
        .with_columns(pl.col(SHARD_TEMPLATE_ID).replace_strict(to_global, return_dtype=pl.String))
        .rename({SHARD_TEMPLATE_ID: mining.TEMPLATE_ID})
        .group_by("minute", s.SOURCE, s.HOST, mining.TEMPLATE_ID)
        .agg(pl.col(mining.COUNT).sum())
        .sort("minute", s.SOURCE, s.HOST, mining.TEMPLATE_ID, nulls_last=True)
    )
    minute_counts.write_parquet(dataset / MINUTES_FILE, statistics=False)
    metrics = [pl.from_arrow(r.metrics) for r in results]
    result = IngestResult(
        s.conform(events, s.EVENT_DTYPES),
        s.conform(pl.concat([m for m in metrics if m.height] or [s.empty_metrics()]), s.METRIC_DTYPES),
        reports,
        skipped,
        {k: v for r in results for k, v in r.trace_paths.items()},
        [w for r in results for w in r.warnings],
    )
    stages["merge"] = time.perf_counter() - t
    mined = mining.MiningResult(ids.rename(mining.TEMPLATE_ID), templates, [])
    return Sharded(result, mined, minute_counts, len(results), sum(r.seconds for r in results), stages)


def _fresh_dataset(dataset: Path) -> None:
    """Empty `dataset` for this run; refuse to empty a directory that is not one of ours."""
    if dataset.exists():
        ours = (MAPPING_FILE, MINUTES_FILE)
        foreign = [p.name for p in dataset.iterdir() if not (p.name.startswith(f"{HOUR}=") or p.name in ours)]
        if foreign:
            raise ForensicsError(
                f"{dataset} exists and holds files that are not a forensics events dataset ({', '.join(foreign[:3])})",
                hint="choose another --out, or remove that directory",
            )
        shutil.rmtree(dataset)
    dataset.mkdir(parents=True)


def _read_rows(dataset: Path) -> pl.DataFrame:
    """The event rows of all shards in the local pipeline's order (shard, seq)."""
    if not any(dataset.glob(ROWS_GLOB)):
        return s.empty_events().with_columns(pl.lit(None, pl.String).alias(SHARD_TEMPLATE_ID))
    cols = [c for c in s.EVENT_COLUMNS if c != s.SOURCE]
    return (
        pl.scan_parquet(
            str(dataset / ROWS_GLOB), hive_partitioning=True, hive_schema={HOUR: pl.String, s.SOURCE: pl.String}
        )
        .select(*cols, s.SOURCE, SHARD_TEMPLATE_ID, SHARD, SEQ)
        .sort(SHARD, SEQ)
        .drop(SHARD, SEQ)
        .collect()
    )


def _merge_templates(parts: list[pl.DataFrame]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(mapping, templates): shard template id -> global id, and the global templates table
    reduced from the shards' summaries (counts summed, first/last seen, hosts and pods
    united, worst level, the example earliest in file order)."""
    st = pl.concat([p for p in parts if p.height] or parts[:1])
    merged = mining.merge_shards(st.select(s.SOURCE, mining.TEMPLATE, mining.COUNT))
    mapping = merged.with_columns(
        pl.Series(
            SHARD_TEMPLATE_ID,
            [mining.template_id(src, t) for src, t in zip(merged[s.SOURCE], merged["shard_template"], strict=True)],
            dtype=pl.String,
        )
    ).select(SHARD_TEMPLATE_ID, s.SOURCE, "shard_template", mining.TEMPLATE_ID, mining.TEMPLATE)
    rank = {lvl: i for i, lvl in enumerate(s.LEVELS)}
    joined = st.drop(mining.TEMPLATE_ID).join(
        mapping.select(
            s.SOURCE,
            pl.col("shard_template").alias(mining.TEMPLATE),
            pl.col(mining.TEMPLATE).alias("_global"),
            mining.TEMPLATE_ID,
        ),
        on=[s.SOURCE, mining.TEMPLATE],
        how="left",
    )
    sev = pl.col(s.LEVEL).replace_strict(rank, default=-1, return_dtype=pl.Int8)
    templates = (
        joined.group_by(mining.TEMPLATE_ID)
        .agg(
            pl.col("_global").first().alias(mining.TEMPLATE),
            pl.col(s.SOURCE).first(),
            pl.col(mining.COUNT).sum(),
            pl.col(mining.FIRST_SEEN).min(),
            pl.col(mining.LAST_SEEN).max(),
            pl.col("hosts").list.explode(keep_nulls=False, empty_as_null=False).drop_nulls().unique().sort(),
            pl.col("pods").list.explode(keep_nulls=False, empty_as_null=False).drop_nulls().unique().sort(),
            sev.max().alias("_sev"),
            pl.struct("example_file", "example_line", "example")
            .sort_by("example_file", "example_line")
            .first()
            .alias("_ex"),
        )
        .with_columns(
            pl.col("_sev")
            .replace_strict({i: lvl for lvl, i in rank.items()}, default=None, return_dtype=pl.String)
            .alias(s.LEVEL),
            pl.col("_ex").struct.field("example"),
            pl.col("_ex").struct.field("example_file"),
            pl.col("_ex").struct.field("example_line"),
        )
        .select(mining.TEMPLATES_COLUMNS)
        .sort(mining.COUNT, mining.TEMPLATE_ID, descending=[True, False])
    )
    return mapping, templates


def prepare(
    paths: list[Path],
    engine: str = "local",
    *,
    mine: bool = True,
    workers: int | None = None,
    address: str | None = None,
    dataset: Path | None = None,
    hints: TimeHints = NO_HINTS,
    progress: Progress | None = None,
    stage: Callable[[str], None] | None = None,
    shard_bytes: int | None = None,
    stream_to: Path | None = None,
    outside: bool = False,
    limits: Limits | None = None,
) -> Sharded:
    """Ingest and mine on any engine: what `analyze` and the `ingest`/`templates` commands share.

    `local` is the single-process pipeline (`mine=False` skips mining there; shards
    always mine, it is how their templates merge). `pool`, `ray` (and `serial`, for
    benchmarks) are `ingest_and_mine` on that executor, whose lifetime is handled here.
    `stream_to` (local engine, without mining) streams the tables to that directory
    instead of holding them (see `ingestion.ingest`). Without `dataset` the rows go to a
    temporary directory that is removed once they are read back; `ingest.dataset` then
    stays None. On a multi-node Ray cluster pass a `dataset` on storage every node mounts
    at the same path.
    """
    if engine == "local":
        r = ingestion.ingest(
            paths,
            year=hints.year,
            tz=hints.tz,
            captured_at=hints.captured_at,
            progress=progress,
            stream_to=stream_to,
            outside=outside,
            limits=limits,
        )
        if stage and mine:
            stage("templates")
        return Sharded(r, mining.mine(r.events) if mine else None, None, 0, 0.0)
    import tempfile

    from forensics.shards.engines import executor

    ex = executor(engine, workers=workers, address=address)
    tmp = None
    try:
        if dataset is None:
            tmp = tempfile.TemporaryDirectory(prefix="forensics-rows-")
            root = Path(tmp.name) / "events"
        else:
            root = Path(dataset)
        out = ingest_and_mine(
            paths, ex, root, hints=hints, progress=progress, shard_bytes=shard_bytes, outside=outside, limits=limits
        )
        out.ingest.dataset = None if tmp else str(root)
        return out
    finally:
        ex.close()
        if tmp is not None:
            tmp.cleanup()
