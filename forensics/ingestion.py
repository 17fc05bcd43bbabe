"""Ingest: a directory of incident logs -> the events and metrics tables.

Stages: discover files -> reference times of the files' heads (for lines without a
year) -> read (gzip, binary sniff, decode) -> route whole-file documents (Kubernetes
event lists; request traces are set aside for replay) -> batch the lines of many files
-> `parsers.lines.parse_lines` on a thread pool -> each batch, in file order, timed,
accounted and given its final columns (`_Tail`) -> the tables.

Accounting invariant, per file: lines read = parsed + folded + unparsed, where *parsed*
lines head an event of a recognised format, *folded* lines were joined into an event
(continuations, blank lines, table headers, CRI partial pieces) and *unparsed* lines
became events of source `unknown`. Nothing is dropped without being counted.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from forensics import _files
from forensics import schema as s
from forensics._malloc import release_free_memory
from forensics.errors import NoInputError
from parsers import csv_export, flight_dump, k8s, nvidia_smi, prometheus, ras_json, sglang, vllm
from parsers.arrow_text import categories_as_arrow, count_lines, lines_column
from parsers.frame import TIME_PARTS
from parsers.jsonutil import load_json
from parsers.lines import parse_lines
from parsers.paths import node_of
from parsers.wrappers import log_entries_document, syslog_time_parts

WORKERS = max(1, min(4, os.cpu_count() or 1))
"""Batches parsed at once (threads). Each holds a batch's frames, so memory grows with it."""
BATCH_CHARS = 16 * 1024 * 1024
"""Lines of many small files are parsed together up to this many characters (a segment of a
large file is a batch of its own): big enough that a parse's fixed cost (~0.1 s) is small,
small enough that the batches in flight stay a fraction of a GB (8 MB cost more CPU)."""
BATCH_FILES = 4000
SPEED_PASSES_MIN_CHARS = 8 * 1024 * 1024
"""A run uses the compiled passes that exist only for speed, the fast lane (`parsers.fastlane`)
and the metrics scan (`parsers.metric_scan`), once it has batched this much text; before, the
general path and the metrics regexes, which define what those passes give, read every line
(the same tables: tests hold the passes to them). On a new install numba compiles the two on
first use, 25-45 s, most of a first run over a few MB of logs (the samples, most incidents'
logs), where the general path costs only ~35 ms more a MB. The compiled code is cached for
the runs after."""
EVENTS_FILE, METRICS_FILE = "events.parquet", "metrics.parquet"
MAX_LINE_CHARS = 1024 * 1024
"""Longer lines are cut here (with a marker), as Loki does, so one 50 MB line cannot stall parsing."""
TRUNC_MARK = " …[line truncated by forensics: {n} more bytes]"
TRACE_KEYS = (
    {"hash_ids"},
    {"input_length", "output_length"},
    {"prompt_tokens", "arrival_time"},
    {"arrival_time", "prompt_len"},
)


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


@dataclass(frozen=True)
class _Meta:
    """Per-file hints from the path layout (CRI, cluster-info dump, file name)."""

    rel: str
    pod: str | None
    namespace: str | None
    container: str | None
    mtime: float
    node: str | None = None
    """The node of its node-level lines (dmesg, kubelet) when they name none (`parsers._common.node_of`)."""


Progress = Callable[[int, int, str], None]
"""Callback(bytes_done, bytes_total, current_file) for progress bars."""


def ingest(
    paths: list[Path] | Path,
    *,
    year: int | None = None,
    tz: str = "UTC",
    captured_at: datetime | None = None,
    progress: Progress | None = None,
    stream_to: Path | None = None,
) -> IngestResult:
    """Parse every line under `paths` into the events and metrics tables.

    Args:
        paths: directories and/or files.
        year: year for formats without one when no fully qualified timestamp exists in
            the same directory tree (kubectl/CRI prefixes, event documents).
        tz: zone of local-time formats (vLLM, c10, klog, NCCL, Python logging).
        captured_at: when `kubectl get events` / `describe` output was captured; resolves
            their relative ages (`5m`). Without it those rows have no time.
        stream_to: a directory to write the tables to as they are parsed (`events.parquet`,
            `metrics.parquet`) rather than hold them: memory stays that of a few batches,
            whatever the logs' size. `result.events` and `result.metrics` are then empty.

    Raises:
        NoInputError: when nothing at all could be ingested.

    >>> r = ingest(Path("samples/cache-corruption"))  # doctest: +SKIP
    >>> r.events.select("source").unique().height > 3  # doctest: +SKIP
    True
    """
    roots = [Path(p) for p in ([paths] if isinstance(paths, (str, Path)) else paths)]
    files, skipped = _files.discover(roots)
    result = ingest_files(files, year=year, tz=tz, captured_at=captured_at, progress=progress, stream_to=stream_to)
    if result.n_events == 0 and not result.files:
        raise no_input(roots, [*skipped, *result.skipped])
    result.skipped = sorted([*skipped, *result.skipped], key=lambda k: k.file)
    return result


def no_input(roots: list[Path], skipped: list[_files.Skipped]) -> NoInputError:
    """The error for a run in which every file was skipped, naming the first reasons."""
    where = ", ".join(map(str, roots))
    if not skipped:
        return NoInputError(
            f"no log lines could be read from {where}",
            hint="no files found there, subdirectories included: check the path",
        )
    return NoInputError(
        f"no log lines could be read from {where}",
        hint="check the path; every file was skipped: " + "; ".join(f"{k.file}: {k.reason}" for k in skipped[:5]),
    )


def ingest_files(
    files: list[_files.InputFile],
    *,
    year: int | None = None,
    tz: str = "UTC",
    captured_at: datetime | None = None,
    progress: Progress | None = None,
    file_refs: dict[str, datetime] | None = None,
    stream_to: Path | None = None,
) -> IngestResult:
    """`ingest` over files already discovered: the unit of work of a sharded run (`forensics.scaleout`).

    `file_refs` (relative path -> reference time, from `reference_times` over *every*
    file of the run) lets a shard infer missing years from dated logs that sit in
    another shard, exactly as a whole-directory ingest would; without it they are
    taken from these files' heads first. Never raises for bad input: an empty result
    with skipped files is a valid answer for one shard.
    """
    skipped: list[_files.Skipped] = []
    total = sum(f.size for f in files) or 1
    done = 0
    metas: list[_Meta] = []
    notes: dict[int, list[str]] = {}
    lines_read: dict[int, int] = {}
    doc_files: dict[int, str] = {}
    trace_paths: dict[str, str] = {}
    batch: list[_Segment] = []
    batch_chars = run_chars = 0
    # Batches parse on a thread pool: polars releases the GIL, and a batch's many small
    # passes are mostly single-threaded, so two batches in flight use two cores. They are
    # finished here, in submission order (deterministic, and file order: each file's time
    # carries into its next batch), while the next ones parse; at most WORKERS + 1 wait,
    # which bounds memory.
    pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="forensics-parse")
    # Years come from reference times known before any batch is finished (the files' heads,
    # read first on the pool), so each batch is finished (timed, accounted, given its final
    # columns) as soon as it is parsed, and the batches never wait whole with their working
    # columns (~2.5 GB held per GB of logs).
    refs = pool.submit(reference_times, files, tz) if file_refs is None else file_refs
    clock = _Clock(refs, metas, year, tz, captured_at)
    sinks = None
    if stream_to is not None:
        sinks = (
            _ParquetSink(Path(stream_to) / EVENTS_FILE, s.empty_events()),
            _ParquetSink(Path(stream_to) / METRICS_FILE, s.empty_metrics()),
        )
    tail = _Tail(metas, clock, sinks)
    queue: list[tuple[Future, bool]] = []

    def enqueue(future: Future, speed_passes: bool) -> None:
        """Queue a parse (`speed_passes`: its batch took them, and its metrics lines will too);
        finish the parsed ones at the head, waiting while too many are queued."""
        queue.append((future, speed_passes))
        while queue and (queue[0][0].done() or len(queue) > WORKERS):
            finish()

    def finish() -> None:
        parsed, speed_passes = queue.pop(0)
        result = parsed.result()
        events, metrics = result if isinstance(result, tuple) else (result, None)
        tail.add(events, speed_passes, metrics)

    def flush() -> None:
        nonlocal batch, batch_chars
        if batch:
            speed_passes = run_chars >= SPEED_PASSES_MIN_CHARS
            enqueue(pool.submit(_parse_batch, batch, speed_passes), speed_passes)
        batch, batch_chars = [], 0

    def _batch_segments(fid: int, segments: Iterator[bytes | np.ndarray]) -> int:
        """Queue a file's segments (UTF-8 text) for parsing; returns its line count."""
        nonlocal batch_chars, run_chars
        first = 1
        for seg_no, seg in enumerate(segments):
            segment = _Segment(fid, seg_no, first, seg)
            batch.append(segment)
            first += segment.lines
            batch_chars += len(seg)
            run_chars += len(seg)
            if batch_chars >= BATCH_CHARS or len(batch) >= BATCH_FILES:
                flush()
        return first - 1

    def document(fid: int, kind: str, lines: int, file_notes: list[str], rows: list[dict], metrics=None) -> None:
        """Account a document read whole (its `lines` all parsed, `LINE_DOCUMENTS` aside) and
        queue its rows, in file order: after the lines batched so far. No line of a document
        is a metrics line; an export brings its own `metrics` rows (and always an event, its
        scrape's or query's, so they are queued with it)."""
        doc_files[fid], lines_read[fid], notes[fid] = kind, lines, file_notes
        if rows:
            flush()
            parsed: Future = Future()
            events = _document_events(rows, fid)
            parsed.set_result(events if metrics is None else (events, metrics))
            enqueue(parsed, False)

    try:
        for f in files:
            if progress:
                progress(done, total, f.rel)
            done += f.size
            head = _files.stream_head(f)
            if (
                head is not None
                and _not_a_log(head, f.rel) is None
                and not k8s.sniff_event_document(head)
                and prometheus.sniff(head) is None
                and nvidia_smi.sniff(head) is None
                and not csv_export.sniff(head)
            ):
                # A large log: read, decoded and batched a segment at a time (never whole).
                fid = len(metas)
                metas.append(_meta(f))
                notes[fid] = fnotes = []
                lines_read[fid] = _batch_segments(fid, _files.text_segments(f, fnotes))
                continue
            # (a small file is told after it is read: one open fewer, 10,000 tiny files 0.1-0.3 s)
            what = _files.known_binary(f) if f.size > _files.SNIFF_BYTES else None
            if what:
                skipped.append(_files.Skipped(f.rel, f"binary file ({f.size} bytes; {what}), not a text log"))
                continue
            data, fnotes, reason = _files.read_bytes(f)
            if reason:
                skipped.append(_files.Skipped(f.rel, reason))
                continue
            if not data:
                skipped.append(_files.Skipped(f.rel, "empty file" + (f" ({'; '.join(fnotes)})" if fnotes else "")))
                continue
            dump_kind = flight_dump.sniff(data)
            if dump_kind:
                try:
                    dump = flight_dump.read(data, dump_kind, f.rel)
                except ValueError as e:
                    skipped.append(_files.Skipped(f.rel, str(e)))
                    continue
                del data
                metas.append(replace(_meta(f), pod=None))  # (its name is a rank's, not a pod's)
                document(
                    len(metas) - 1,
                    f"flight-recorder-{dump_kind}",
                    dump.records,
                    fnotes + dump.notes,
                    flight_dump.rows(dump),
                )
                continue
            if _files.is_binary(data):
                what = _files.binary_format(data)
                size = f"{len(data)} bytes" + (f"; {what}" if what else "")
                skipped.append(_files.Skipped(f.rel, f"binary file ({size}), not a text log"))
                continue
            text, repairs = _files.decode(data)
            del data
            fnotes.extend(repairs)
            fid = len(metas)
            metas.append(_meta(f))
            export_kind = prometheus.sniff(text)
            try:
                export = prometheus.parse_document(text, export_kind, tz) if export_kind else None
            except Exception as e:  # noqa: BLE001 - a flaw in reading an export must not cost the run
                export = None
                fnotes.append(f"Prometheus export not read ({type(e).__name__}: {str(e)[:120]}); parsed line by line")
            n_lines = text.count("\n") + (0 if text.endswith("\n") else 1)
            if export is not None:
                if export.names_pods:  # (a federate or DCGM dump: its file name is no pod's)
                    metas[fid] = replace(metas[fid], pod=None)
                metrics = _export_metrics(export, metas[fid])
                document(fid, f"prometheus-{export_kind}", n_lines, fnotes + export.notes, export.events, metrics)
                continue
            if ras_json.sniff(text):
                try:
                    rows, ras_notes = ras_json.parse_document(text, tz)
                except ValueError as e:
                    fnotes.append(f"{e}; parsed line by line instead")
                else:
                    metas[fid] = replace(metas[fid], pod=None)  # (the report names hosts, not its file)
                    document(fid, "ncclras-json", n_lines, fnotes + ras_notes, rows)
                    continue
            smi_kind = nvidia_smi.sniff(text)
            if smi_kind is not None:
                try:
                    rows = nvidia_smi.parse_document(text, smi_kind, f.rel, tz)
                except Exception as e:  # noqa: BLE001 - a flaw in reading a snapshot must not cost the run
                    fnotes.append(
                        f"nvidia-smi snapshot not read ({type(e).__name__}: {str(e)[:120]}); parsed line by line"
                    )
                else:
                    metas[fid] = replace(metas[fid], pod=None)  # (a node's file: its GPUs, not a pod's)
                    document(fid, "nvidia-smi", n_lines, fnotes, rows)
                    continue
            kind, state = k8s.sniff_event_document(text), False
            if not kind:
                kind, state = k8s.sniff_state_document(text), True
            if kind:
                rows, err = (k8s.parse_state_document if state else k8s.parse_event_document)(text, kind)
                if err is None:
                    document(fid, f"k8s-{'state' if state else 'events'}-{kind}", n_lines, fnotes, rows)
                    continue
                fnotes.append(err)
            entries = log_entries_document(text)
            if entries is not None:
                fnotes.append(
                    f"a JSON document of {len(entries)} log records (a log store's export), read one record a line: "
                    "its line numbers count records"
                )
                text = "\n".join(entries) + "\n"
                doc_files[fid] = "log-export-json"
            elif (exported := csv_export.log_entries_csv(text, tz)) is not None:
                entries, csv_notes = exported
                fnotes.extend(csv_notes)
                text = "\n".join(entries) + "\n" if entries else ""
                doc_files[fid] = "log-export-csv"
            why = None if entries is not None else _not_a_log(text, f.rel)
            if why:
                metas[-1] = _meta(f)
                skipped.append(_files.Skipped(f.rel, why))
                if why.startswith("request trace"):
                    trace_paths[f.rel] = str(f.path)
                continue
            notes[fid] = fnotes
            lines_read[fid] = _batch_segments(fid, (seg.encode() for seg in _files.split_segments(text)))
            del text
        flush()
        while queue:
            finish()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        for sink in sinks or ():
            sink.close()
        release_free_memory()  # the batches' arrays, kept by the allocator for reuse until now
    if progress:
        progress(total, total, "")
    reports = tail.accounting(lines_read, notes, doc_files)
    events, metrics = tail.tables()
    skipped.sort(key=lambda k: k.file)
    result = IngestResult(events, metrics, reports, skipped, trace_paths, clock.warnings + clock.age_warnings())
    if sinks is not None:
        result.streamed_to = str(stream_to)
        result.written = {"events": sinks[0].rows, "metrics": sinks[1].rows}
    return result


REFERENCE_HEAD_BYTES = (256 * 1024, 4 * 1024 * 1024)
"""The reference-time pass reads this much of each file: the first size, then the second for
the files whose first head had no exact time (a dated line can come after a long undated
start). A year is chosen as the one closest to the reference, so a few thousand of a file's
dated lines serve as well as all of them; parsing 4 MB of every file cost ~1 s per GB."""


def reference_times(files: list[_files.InputFile], tz: str = "UTC") -> dict[str, datetime]:
    """Each file's reference time (median exact timestamp of its head), for year inference.

    The first pass of a sharded run: shards are parsed independently, yet a file whose
    lines have no year takes it from a dated log in the same directory tree, which may
    sit in another shard. Files with no exact timestamp are left out.
    """
    refs: dict[str, datetime] = {}
    for head_bytes in REFERENCE_HEAD_BYTES:
        files = _reference_pass(files, tz, head_bytes, refs)
    return refs


def _reference_pass(
    files: list[_files.InputFile], tz: str, head_bytes: int, refs: dict[str, datetime]
) -> list[_files.InputFile]:
    """Add to `refs` the reference times of `files` from their first `head_bytes`; returns the
    logs whose head had no exact time and was not the whole file."""
    batch: list[_Segment] = []
    batch_files: list[tuple[_files.InputFile, bool]] = []
    batch_chars = run_chars = 0
    undated: list[_files.InputFile] = []

    def parse() -> None:
        nonlocal batch_chars
        # Many heads per parse (a parse has a fixed cost, ~0.1 s, that dwarfs a small file),
        # at most a batch's worth (a directory of large logs has gigabytes of heads).
        ev = _parse_batch(batch, run_chars >= SPEED_PASSES_MIN_CHARS)
        per = _time_columns(ev).group_by("_fid").agg(_exact_time(tz).drop_nulls().median().alias("ref"))
        found = {fid: ref for fid, ref in per.iter_rows() if ref is not None}
        for fid, (f, whole) in enumerate(batch_files):
            if fid in found:
                refs[f.rel] = found[fid]
            elif not whole:
                undated.append(f)
        batch.clear()
        batch_files.clear()
        batch_chars = 0

    for f in files:
        data, whole = _files.head_of(f, head_bytes)
        if not data or _files.is_binary(data):
            continue
        text, _ = _files.decode(data)
        kind = k8s.sniff_event_document(text)
        if kind:
            doc, _notes, reason = _files.read_bytes(f)
            rows, err = k8s.parse_event_document(_files.decode(doc)[0], kind) if doc and not reason else ([], "")
            times = sorted(r[s.TS] for r in rows if r.get(s.TS) is not None) if err is None else []
            if times:
                refs[f.rel] = times[len(times) // 2]
            continue
        if (entries := _document_records(f, text, whole)) is not None:
            text = "\n".join(entries) + "\n"  # its records, as the whole file's are parsed
        elif (exported := csv_export.log_entries_csv(text, tz)) is not None:
            text = "\n".join(exported[0]) + "\n"
        elif _not_a_log(text, f.rel):
            continue
        batch.append(_Segment(len(batch), 0, 1, text.encode()))
        batch_files.append((f, whole))
        batch_chars += len(text)
        run_chars += len(text)
        if batch_chars >= BATCH_CHARS or len(batch) >= BATCH_FILES:
            parse()
    if batch:
        parse()
    return undated


def _document_records(f: _files.InputFile, head: str, whole: bool) -> list[str] | None:
    """The records of a log store's JSON export (`log_entries_document`) whose `head` this is,
    else None. A head cut short is no JSON document: such a file is read whole, as the main pass
    reads it, unless its first line is a record of its own (JSON lines, whose head parses as it is)."""
    if not _files.starts_a_document(head[:4096].encode()):
        return None
    if not whole:
        first = head[: head.find("\n")]
        try:
            load_json(first)
            return None  # (a record a line)
        except ValueError:
            pass
        data, _notes, reason = _files.read_bytes(f)
        if not data or reason:
            return None
        head = _files.decode(data)[0]
    return log_entries_document(head)


NODE_LEVEL_SOURCES = ("kernel", "kubelet", "nvidia-smi")
"""Sources whose lines are always a node's own (never a pod's): given the node their path names
when they name none."""
CONTAINER_LOG_NAME = re.compile("^" + k8s.CONTAINER_LOG_NAME)
"""`k8s.CONTAINER_LOG_NAME`, a node's container log copied off it under that name (rotations too)."""
PREVIOUS_SUFFIX = re.compile(r"[._-](?:previous|prev)(?:[._-]?\d+)?$")
"""`kubectl logs --previous` saved as `<pod>.previous.log`, `<pod>-previous-2.log`, ..."""


def _meta(f: _files.InputFile) -> _Meta:
    """Pod/namespace/container from the path: CRI `/var/log/pods/<ns>_<pod>_<uid>/<c>/N.log` and
    `/var/log/containers/<pod>_<ns>_<c>-<id>.log`, OpenShift's must-gather and `oc adm inspect`
    `namespaces/<ns>/pods/<pod>/<c>/<c>/logs/{current,previous}.log`, cluster-info dump
    `<ns>/<pod>/logs.txt`, else the file name (`vllm-0.log` -> `vllm-0`)."""
    parts = PurePosixPath(f.rel).parts
    node = node_of(f.rel)
    for i, p in enumerate(parts[:-2]):
        bits = p.split("_")
        if len(bits) == 3 and len(bits[2]) >= 32 and "-" in bits[2]:
            return _Meta(f.rel, bits[1], bits[0], parts[i + 1], f.mtime, node)
    if m := CONTAINER_LOG_NAME.match(parts[-1]):
        return _Meta(f.rel, m["pod"], m["ns"], m["cont"], f.mtime, node)
    for i in range(2, len(parts) - 2):
        if parts[i] == "pods" and parts[i - 2] == "namespaces":
            container = parts[i + 2] if i + 3 < len(parts) else None  # (not `<pod>.yaml` beside them)
            return _Meta(f.rel, parts[i + 1], parts[i - 1], container, f.mtime, node)
    if parts[-1] == "logs.txt" and len(parts) >= 3:
        return _Meta(f.rel, parts[-2], parts[-3], None, f.mtime, node)
    name = parts[-1]
    for suffix in (
        ".gz",
        ".xz",
        ".bz2",
        ".zst",
        ".lz4",
        ".csv",
        ".tsv",
        ".log",
        ".txt",
        ".out",
        ".err",
        ".prom",
        ".metrics",
    ):
        name = name.removesuffix(suffix)
    name = name.split(".log.")[0]
    name = PREVIOUS_SUFFIX.sub("", name)
    return _Meta(f.rel, name or None, None, None, f.mtime, node)


def _not_a_log(text: str, rel: str) -> str | None:
    """A reason to set the file aside when it is a data document rather than a log."""
    head = text.lstrip()[:4096]
    first = head.split("\n", 1)[0].strip()
    if first.startswith("{") and first.endswith("}") and not first.startswith('{"log":'):
        try:
            obj = load_json(first)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and any(k <= obj.keys() for k in TRACE_KEYS):
            return "request trace (JSON lines), not a log; replay it with `forensics replay`"
    low = first.lower()
    if "contexttokens" in low and "generatedtokens" in low:
        return "request trace (Azure CSV), not a log; replay it with `forensics replay`"
    if (
        head.startswith(("{", "["))
        and not head.startswith(('{"log":', "[rank", "[20", "[I ", "[E ", "[W ", "[F "))
        and '"__REALTIME_TIMESTAMP"' not in first
    ):
        try:
            load_json(text)
        except ValueError:
            return None
        return "JSON document, not a log (nor a Kubernetes event, Pod or Node list)"
    return None


@dataclass(frozen=True)
class _Segment:
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


def _parse_batch(batch: list[_Segment], fast_lane: bool = True) -> pl.DataFrame:
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
    if df.select((nbytes > MAX_LINE_CHARS).any()).item():
        kept = body.str.slice(0, MAX_LINE_CHARS)
        mark_head, mark_tail = TRUNC_MARK.split("{n}")
        df = df.with_columns(
            pl.when((nbytes > MAX_LINE_CHARS) & (body.str.len_chars() > MAX_LINE_CHARS))
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


def _document_events(rows: list[dict], fid: int) -> pl.DataFrame:
    """A document's rows as a parsed batch: exact times (or none), one event a row. A
    Kubernetes event list's rows are one event each; a Prometheus export's say which lines
    they fold (`_nfold`) and which are events beside their line's own (`_extra`)."""
    docs = pl.DataFrame(rows, schema_overrides={s.TS: pl.Datetime("us", "UTC")}, infer_schema_length=None)
    have = docs.columns
    return (
        docs.with_columns(
            pl.lit(fid, pl.UInt32).alias("_fid"),
            pl.col(s.TS).alias("_outer_ts"),
            (pl.col("_nfold") if "_nfold" in have else pl.lit(0)).cast(pl.UInt32).alias("_nfold"),
            (1 + (pl.col("_nfold") if "_nfold" in have else pl.lit(0))).cast(pl.UInt32).alias(s.RAW_LINES),
            (pl.col("_extra") if "_extra" in have else pl.lit(False)).alias("_extra"),
            pl.lit(False).alias("_drop"),
            pl.lit(True).alias("_standalone"),
        )
        .drop(s.TS)
        .sort(s.LINE, maintain_order=True)
    )


def _export_metrics(export: prometheus.Export, meta: _Meta) -> pl.DataFrame:
    """A Prometheus export's metrics rows with the file's name, and its path's pod where no label gave one."""
    return s.conform(
        export.metrics.with_columns(
            pl.lit(meta.rel).alias(s.FILE), pl.col(s.POD).fill_null(pl.lit(meta.pod, pl.String))
        ),
        s.METRIC_DTYPES,
    )


class _Clock:
    """Where a file's lines without a year take it from, decided once per file.

    A file's reference is the median exact time of its head (`reference_times`), else
    the median of its directory's references, else an ancestor directory's; failing
    all, `--year` (with Dec->Jan rollover within the file), else the year the file was
    last modified, with a warning: the latest year that does not put the file's first line
    after that (an incident of Dec 30 collected on Jan 2 is last year's).
    """

    def __init__(
        self,
        refs: dict[str, datetime] | Future,
        metas: list[_Meta],
        year: int | None,
        tz: str,
        captured_at: datetime | None,
    ) -> None:
        """`refs`: relative path -> reference time, or the future of the pass computing them
        (it runs beside the first batches' parse; nothing waits for it before a batch is done)."""
        self._refs, self.metas, self.year, self.tz, self.captured_at = refs, metas, year, tz, captured_at
        self.warnings: list[str] = []
        self.untimed_ages: dict[int, int] = {}
        """File id -> its rows timed only relative to the capture (an age, a snapshot's state) that
        stay untimed for want of `captured_at`: said in `age_warnings`, as the timeline leaves them out."""
        self._decided: dict[int, tuple[datetime | None, int | None]] = {}

    @functools.cached_property
    def refs(self) -> dict[str, datetime]:
        return self._refs.result() if isinstance(self._refs, Future) else self._refs

    @functools.cached_property
    def _by_dir(self) -> dict[str, datetime]:
        """Each directory's median reference over the files under it (at any depth)."""
        by_dir: dict[str, list[datetime]] = {}
        for rel, t in self.refs.items():
            d = str(PurePosixPath(rel).parent)
            while True:
                by_dir.setdefault(d, []).append(t)
                if d in ("", "."):
                    break
                d = str(PurePosixPath(d).parent)
        return {d: sorted(ts)[len(ts) // 2] for d, ts in by_dir.items()}

    def age_warnings(self) -> list[str]:
        """One warning per file whose relative ages could not be placed, in file order."""
        return [
            f"{self.metas[fid].rel}: {n:,} event{'s' if n > 1 else ''} timed only relative to when kubectl ran (an age "
            "like `3m`, or `get pods` / `get nodes` state at that moment) left untimed and off the timeline: pass "
            "--captured-at with when the command ran (the logs collected with it end near then)"
            for fid, n in sorted(self.untimed_ages.items())
        ]

    def of(self, fid: int, first: tuple[int, int] | None = None) -> tuple[datetime | None, int | None]:
        """(reference time, fallback year) of file `fid`: exactly one is set. `first`: the
        (month, day) of the file's first line without a year, which the modification time's
        year must not put after it."""
        if fid not in self._decided:
            rel = self.metas[fid].rel
            ref = self.refs.get(rel)
            d = str(PurePosixPath(rel).parent)
            while ref is None and d not in self._by_dir and d not in ("", "."):
                d = str(PurePosixPath(d).parent)
            ref = ref or self._by_dir.get(d)
            fallback = None
            if ref is None:
                fallback = self.year
                if fallback is None:
                    fallback = _year_before(datetime.fromtimestamp(self.metas[fid].mtime, UTC), first)
                    self.warnings.append(
                        f"{rel}: no year in its timestamps and no dated log beside it; assumed {fallback} from the "
                        "file's modification time (pass --year to set it)"
                    )
            self._decided[fid] = (ref, fallback)
        return self._decided[fid]


def _year_before(mtime: datetime, first: tuple[int, int] | None) -> int:
    """The year of a file's first line (`first`: its month and day) that puts it last before the
    file's modification time, a day of slack for zones and clocks."""
    if first is None:
        return mtime.year
    mo, d = first
    try:  # (an mtime in the year 9999 has no day after it)
        start = datetime(mtime.year, min(max(mo, 1), 12), 1, tzinfo=UTC) + timedelta(days=min(max(d, 1), 31) - 1)
        return mtime.year - 1 if start > mtime + timedelta(days=1) else mtime.year
    except (OverflowError, ValueError):
        return mtime.year


@dataclass(frozen=True)
class _Carry:
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


class _Tail:
    """Finishes parsed batches in file order: time, accounting partials, final columns, metrics.

    Invariant: batches arrive in (file id, segment, line) order, so only a batch's first
    file can continue the previous batch's last one, and concatenating the finished
    batches gives the events in file order without sorting.
    """

    def __init__(
        self, metas: list[_Meta], clock: _Clock, sinks: tuple[_ParquetSink, _ParquetSink] | None = None
    ) -> None:
        self.metas, self.clock, self.sinks = metas, clock, sinks
        self.carry = _Carry()
        self.parts: list[pl.DataFrame] = []
        self.metric_parts: list[pl.DataFrame] = []
        self.counts: list[tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]] = []

    def add(self, ev: pl.DataFrame, speed_passes: bool, metrics: pl.DataFrame | None = None) -> None:
        """Finish a parsed batch; `speed_passes`: read its metrics lines with the compiled scan
        (`SPEED_PASSES_MIN_CHARS`); `metrics`: a document's own (a Prometheus export's)."""
        if ev.height == 0:
            return
        ev, time_state = _resolve_time(ev, self.clock, self.carry)
        self.counts.append(_count(ev))
        ev, dump = _finish(ev, self.metas, self.carry)
        self.carry = _Carry(**time_state, dump=dump)
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
        return _concat_columns(self.parts), metrics_table

    def accounting(self, lines_read: dict[int, int], notes: dict, doc_files: dict) -> list[FileReport]:
        return _account(self.counts, self.metas, lines_read, notes, doc_files)


def _engine_metrics(ev: pl.DataFrame, speed_passes: bool) -> pl.DataFrame:
    """A batch's rows of the metrics table: vLLM's metrics lines' (read by the compiled scan
    with `speed_passes`), then SGLang's batch lines'."""
    parts = [m for m in (vllm.metrics(ev, scan=speed_passes), sglang.metrics(ev)) if m.height]
    return pl.concat(parts) if len(parts) > 1 else parts[0] if parts else s.empty_metrics()


class _ParquetSink:
    """Finished batches of one table appended to its Parquet file as row groups, in file order.

    Written on a thread of its own (pyarrow releases the GIL), so that encoding a batch
    (~0.1 s) overlaps reading and finishing the next; at most `PENDING` batches wait.
    """

    PENDING = 1

    def __init__(self, path: Path, empty: pl.DataFrame) -> None:
        self.path, self.empty, self.rows = path, empty, 0
        self._writer: pq.ParquetWriter | None = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="forensics-write")
        self._pending: list[Future] = []
        path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, df: pl.DataFrame) -> None:
        if df.height == 0:
            return
        self.rows += df.height
        self._pending.append(self._thread.submit(self._append, df))
        while len(self._pending) > self.PENDING or (self._pending and self._pending[0].done()):
            self._pending.pop(0).result()

    def _append(self, df: pl.DataFrame) -> None:
        table = _arrow(df)
        if self._writer is None:
            repeated = [c for c, t in df.schema.items() if t == pl.Categorical or c in s.REPEATED_STRINGS]
            # Snappy (pyarrow's default), not polars' zstd: zstd halves the file but costs ~20% more
            # time to write, and the writer is a quarter of the CPU of a streamed ingest. The
            # ascending integers (time, line) delta-encoded: 14% less file, and a little faster.
            deltas = {c: "DELTA_BINARY_PACKED" for c in (s.TS, s.LINE) if c in df.columns}
            self._writer = pq.ParquetWriter(
                self.path, table.schema, write_statistics=False, use_dictionary=repeated, column_encoding=deltas
            )
        self._writer.write_table(table)

    def close(self) -> None:
        """Wait for the pending batches (raising what writing one raised) and close the file."""
        try:
            for f in self._pending:
                f.result()
        finally:
            self._thread.shutdown(wait=True)
            if self._writer is not None:
                self._writer.close()
            else:  # no row at all: still a table, with the schema
                self.empty.write_parquet(self.path, statistics=False)


def _arrow(df: pl.DataFrame) -> pa.Table:
    """`df` as Arrow for the Parquet writer: text as string views, the columns polars holds, not
    copied (`to_arrow()` copies every string into a new buffer of offsets: a sixth of the
    writer's time); categories as dictionaries of plain strings (which the writer takes, and
    string views it does not), as `to_arrow()` gives them but built from the codes."""
    cats = categories_as_arrow(df)
    views = df.drop(cats).to_arrow(compat_level=pl.CompatLevel.newest())
    return pa.table([cats[c] if c in cats else views[c] for c in df.columns], names=df.columns)


def _concat_columns(parts: list[pl.DataFrame]) -> pl.DataFrame:
    """`parts` (same columns) as one frame of one chunk per column. Empties `parts`.

    Built a column at a time, each column's pieces let go once it is built, so the parts
    and the table are never both held whole. One chunk per column also matters later: the
    first expression polars runs over a table of many chunks rewrites every column of it.
    """
    if not parts:
        return s.empty_events()
    if len(parts) == 1:
        return parts.pop().rechunk()
    names = parts[0].columns
    pieces = {c: [p[c] for p in parts] for c in names}
    parts.clear()
    return pl.DataFrame([pl.concat(pieces.pop(c), rechunk=True) for c in names])


def _resolve_time(ev: pl.DataFrame, clock: _Clock, carry: _Carry) -> tuple[pl.DataFrame, dict]:
    """Give every event of a batch a UTC `ts` and a `ts_quality` (see `schema.TsQuality`).

    Order of preference: the wrapper's RFC3339 time (exact); a full local date-time
    from the line (exact, in `tz`); month/day/time from the line with the year closest
    to the file's reference (Dec->Jan rollover), or `--year`; a relative age with
    `captured_at`; the previous timed event of the same file (inherited, across batches
    through `carry`). Also returns the time part of the batch's own carry.

    Requires `ev` in file order (`_fid`, `_seg`, `line`), as batches are built.
    """
    tz = clock.tz
    if ev["_outer_ts"].null_count() == 0 and ev.select(_plausible(pl.col("_outer_ts")).null_count()).item() == 0:
        # Every line has its wrapper's exact time (kubectl --timestamps, CRI): nothing to
        # infer, inherit or convert, the common case of pod logs.
        times = _time_columns(ev).with_columns(pl.col("_outer_ts").alias(s.TS))
        exact = pl.select(pl.repeat(_quality("exact"), ev.height)).to_series().alias(s.TS_QUALITY)
        return ev.with_columns(times[s.TS], exact), _time_carry(carry, times)
    # Work on the time columns alone, each step on only the rows it concerns: adding even a
    # null column to the whole batch copies what it is added to.
    full = ev
    ev = _time_columns(ev)
    # Syslog/journald time where the line itself has none.
    ev = _set_rows(ev, pl.col("_mo").is_null() & pl.col("_syslog").is_not_null(), syslog_time_parts())
    ev = _set_rows(ev, pl.col("_outer_ts").is_null() & pl.col("_Y").is_not_null(), [_exact_time(tz).alias("_outer_ts")])
    # (a line whose full date does not exist, `2025-02-29`, is untimed: its year is no guess to redo)
    yearless = pl.col("_outer_ts").is_null() & pl.col("_mo").is_not_null() & pl.col("_Y").is_null()
    refs: dict[int, datetime] = {}
    fallback_year: dict[int, int] = {}
    # Each file's first line without a year, in this batch (its first such line in the file
    # when the file is decided here: batches come in file order).
    heads = ev.filter(yearless).group_by("_fid", maintain_order=True).agg(pl.col("_mo").first(), pl.col("_d").first())
    for fid, mo, d in sorted(heads.iter_rows()):
        ref, year = clock.of(fid, (mo, d) if d is not None else None)
        if ref is not None:
            refs[fid] = ref
        else:
            fallback_year[fid] = year
    cont = carry.rows
    if fallback_year:
        # With only a year to go by, the year rolls over when the month falls back (Dec -> Jan)
        # within a file; the count goes on from the batch before.
        prev = pl.col("_mo").shift(1).over("_fid")
        if carry.mo is not None:
            prev = pl.when(prev.is_null() & cont).then(pl.lit(carry.mo)).otherwise(prev)
        rolls = (pl.col("_mo") < prev - 6).fill_null(False).cast(pl.Int32).cum_sum().over("_fid")
        rolls = rolls + pl.when(cont).then(pl.lit(carry.rolls)).otherwise(0)
        ev = _set_rows(ev, yearless, [rolls.alias("_rolls")])
    rolls = pl.col("_rolls") if fallback_year else pl.lit(0, pl.Int32)
    ev = _set_rows(ev, yearless, [_infer_year(refs, fallback_year, tz, rolls).alias("_inf")])
    if clock.captured_at is not None:
        age = pl.duration(microseconds=(pl.col("_age_s") * 1e6).cast(pl.Int64))
        relative = pl.lit(clock.captured_at).cast(pl.Datetime("us", "UTC")) - age
        ev = _set_rows(ev, pl.col("_outer_ts").is_null() & pl.col("_age_s").is_not_null(), [relative.alias("_rel")])
    else:
        aged = ev.filter(pl.col("_outer_ts").is_null() & pl.col("_age_s").is_not_null())
        for fid, n in aged.group_by("_fid").len().iter_rows():
            clock.untimed_ages[fid] = clock.untimed_ages.get(fid, 0) + n
    for c, t in (("_inf", pl.Datetime("us", "UTC")), ("_rel", pl.Datetime("us", "UTC"))):
        if c not in ev.columns:
            ev = ev.with_columns(pl.lit(None, t).alias(c))
    if "_uptime_s" in full.columns:
        ev = _since_boot(ev, full[s.MESSAGE], carry)
    # (a time that cannot be, `schema.TS_RANGE`, is none: the line is untimed)
    exact, inferred, relative = (_plausible(pl.col(c)) for c in ("_outer_ts", "_inf", "_rel"))
    quality = (
        pl.when(exact.is_not_null())
        .then(_quality("exact"))
        .when(inferred.is_not_null())
        .then(_quality("inferred-year"))
        .when(relative.is_not_null())
        .then(_quality("relative"))
    )
    ev = ev.with_columns(pl.coalesce(exact, inferred, relative).alias(s.TS), quality.alias(s.TS_QUALITY))
    # A row with a relative age (`5m` in a describe Events table) is not a continuation of
    # the line above it: without --captured-at it stays untimed rather than borrow a time;
    # nor is a document's row (`_standalone`).
    # Nor is a `dmesg` line, whose time is its own seconds since boot or none (a line of
    # another boot above it would lend it a time from before the reboot).
    untimed_ok = pl.col("_age_s").is_null() & pl.col("_uptime_s").is_null() & ~pl.col("_standalone").fill_null(False)
    inherited = pl.when(untimed_ok).then(pl.col(s.TS).forward_fill().over("_fid"))
    if carry.ts is not None:
        inherited = pl.coalesce(inherited, pl.when(untimed_ok & cont).then(pl.lit(carry.ts)))
    ev = ev.with_columns(
        pl.when(pl.col(s.TS).is_null() & inherited.is_not_null())
        .then(_quality("inherited"))
        .otherwise(pl.col(s.TS_QUALITY))
        .fill_null(_quality("none"))
        .alias(s.TS_QUALITY),
        pl.coalesce(pl.col(s.TS), inherited).alias(s.TS),
    )
    return full.with_columns(ev["_outer_ts"], ev[s.TS], ev[s.TS_QUALITY]), _time_carry(carry, ev)


WALL_CLOCK = re.compile(
    r"setting system clock to \S+(?: \d{2}:\d{2}:\d{2})? UTC \((\d{9,11})\)|audit\((\d{9,11}\.\d{3}):\d+\)"
)
"""`dmesg` lines that say the wall time at their stamp: the RTC driver at boot (`rtc_cmos 00:00:
setting system clock to 2025-10-14T10:00:00 UTC (1760436000)`, older kernels with a space
before the time) and the kernel's audit records, printed there when no auditd reads them
(`audit: type=1400 audit(1760515000.123:3456): apparmor="DENIED" ...`, AppArmor's and
seccomp's on a Kubernetes node), stamped with the epoch in milliseconds."""
BOOT_RESET_S = 1.0
"""A `dmesg` stamp this much below the line before it starts a new boot (the kernel's stamps
from different CPUs may step back by microseconds, never by a second)."""


def _since_boot(ev: pl.DataFrame, message: pl.Series, carry: _Carry) -> pl.DataFrame:
    """`dmesg` lines (`_uptime_s`: seconds since boot) placed at the wall time of their boot's
    last line before them that says it (`WALL_CLOCK`; its first, for the lines before it), plus
    the seconds between, as `_rel`; each line's offset (wall time minus stamp) as `_boot_offset`,
    which the batch's carry hands on.

    Why not leave them untimed: a GPU's Xid 79 or an OOM kill minutes before the NCCL timeouts
    is the cause only if it can be put before them. The stamp counts the scheduler clock, which
    NTP does not steer: weeks from the line that placed it, it can be off the wall clock by a
    minute or two (seconds when an audit record is near), hence `relative`, not `exact`; the
    nearest line before also replaces an RTC kept in local time. Lines of a boot without such
    a line stay untimed. Requires `ev` in file order (a boot's lines together); a file's boot
    goes on from the batch before through `carry.boot`, read as a line at its last stamp."""
    at = ev.select(pl.arg_where(pl.col("_uptime_s").is_not_null())).to_series()
    said = message.gather(at).str.extract_groups(WALL_CLOCK.pattern).struct
    clock = pl.coalesce(said.field("1"), said.field("2")).cast(pl.Float64)
    lines = ev.select(pl.col("_fid").gather(at), pl.col("_uptime_s").gather(at)).with_columns(clock.alias("_clock"))
    seeded = carry.boot is not None and lines.height > 0 and lines["_fid"][0] == carry.fid
    if seeded:
        offset, stamp = carry.boot
        seed = pl.DataFrame(
            {"_fid": [carry.fid], "_uptime_s": [stamp], "_clock": [None if offset is None else offset + stamp]},
            schema=lines.schema,
        )
        lines = pl.concat([seed, lines])
    if lines["_clock"].null_count() == lines.height:
        return ev
    up = pl.col("_uptime_s")
    boot = (up < up.shift(1).over("_fid") - BOOT_RESET_S).fill_null(False).cast(pl.Int32).cum_sum().over("_fid")
    offsets = (
        lines.with_columns(boot.alias("_boot"))
        .select((pl.col("_clock") - up).forward_fill().backward_fill().over("_fid", "_boot"))
        .to_series()
        .slice(1 if seeded else 0)
    )
    placed = pl.select(
        pl.from_epoch(((offsets + ev["_uptime_s"].gather(at)) * 1e6).round().cast(pl.Int64), "us").dt.replace_time_zone(
            "UTC"
        )
    ).to_series()
    own = ev.select((pl.col("_outer_ts").is_null() & pl.col("_mo").is_null()).gather(at)).to_series()
    keep = placed.is_not_null() & own
    none = pl.repeat(None, ev.height, dtype=pl.Float64, eager=True)
    return ev.with_columns(
        ev["_rel"].scatter(at.filter(keep), placed.filter(keep)),
        none.scatter(at, offsets).alias("_boot_offset"),
    )


def _quality(name: str) -> pl.Expr:
    """A `ts_quality` value as the table's category: choosing among category literals is a pass
    over codes, where strings chosen and then cast to categories were hashed row by row (~2 ms
    per 100,000 rows)."""
    return pl.lit(name, dtype=pl.Categorical)


def _time_carry(carry: _Carry, ev: pl.DataFrame) -> dict:
    """The time fields of the carry the batch `ev` (its time columns) hands on."""
    last = int(ev["_fid"][-1])
    rows = ev.filter(pl.col("_fid") == last)
    same = last == carry.fid
    ts = rows[s.TS].drop_nulls()
    out = {"fid": last, "ts": ts[-1] if len(ts) else (carry.ts if same else None), "mo": None, "rolls": 0}
    yearless = rows.filter(pl.col("_outer_ts").is_null() & pl.col("_mo").is_not_null() & pl.col("_Y").is_null())
    if yearless.height:
        out["mo"] = int(yearless["_mo"][-1])
        out["rolls"] = int(yearless["_rolls"][-1]) if "_rolls" in yearless.columns else 0
    elif same:
        out["mo"], out["rolls"] = carry.mo, carry.rolls
    stamped = rows.filter(pl.col("_uptime_s").is_not_null())
    if stamped.height:
        offset = stamped["_boot_offset"][-1] if "_boot_offset" in stamped.columns else None
        out["boot"] = (offset, float(stamped["_uptime_s"][-1]))
    elif same:
        out["boot"] = carry.boot
    return out


TIME_COLUMNS: dict[str, pl.DataType] = {
    **{c: pl.Int32() for c in TIME_PARTS},
    "_syslog": pl.String(),
    "_age_s": pl.Float64(),
    "_uptime_s": pl.Float64(),
    "_outer_ts": pl.Datetime("us", "UTC"),
    "_standalone": pl.Boolean(),
}
"""What the parsers may leave about a line's time: local date-time parts, a syslog stamp, a
relative age, `dmesg`'s seconds since boot, the wrapper's exact time, and whether the row
stands alone (a document's: the row above is another object, whose time it must not borrow).
A batch has only the columns its formats produced."""


def _set_rows(df: pl.DataFrame, rows: pl.Expr, exprs: list[pl.Expr]) -> pl.DataFrame:
    """`df` with `exprs` evaluated on the rows where `rows` holds, in file order, and written
    there; other rows keep their values (null in a new column). Row order never changes."""
    at = df.select(pl.arg_where(rows.fill_null(False))).to_series()
    if at.len() == 0:
        return df
    sub = df[at].select(exprs)
    base = {
        c: df[c] if c in df.columns else pl.repeat(None, df.height, dtype=t, eager=True) for c, t in sub.schema.items()
    }
    return df.with_columns(base[c].clone().scatter(at, sub[c]).alias(c) for c in sub.columns)


def _time_columns(ev: pl.DataFrame) -> pl.DataFrame:
    """The file id and every `TIME_COLUMNS` column of `ev`, missing ones as nulls (selected
    first: adding even a null column to the whole table copies what it is added to)."""
    return ev.select(
        "_fid", *(pl.col(c) if c in ev.columns else pl.lit(None, t).alias(c) for c, t in TIME_COLUMNS.items())
    )


def _exact_time(tz: str) -> pl.Expr:
    """A line's exact UTC time: the wrapper's, else a full local date-time read in `tz`; none
    where that is no time an event may have (`schema.TS_RANGE`)."""
    return _plausible(pl.coalesce(pl.col("_outer_ts"), _local_to_utc(pl.col("_Y"), tz)))


def _plausible(ts: pl.Expr) -> pl.Expr:
    """`ts` where it lies in `schema.TS_RANGE`, else null."""
    start, end = (pl.lit(t).cast(pl.Datetime("us", "UTC")) for t in s.TS_RANGE)
    return pl.when((ts >= start) & (ts < end)).then(ts)


def _infer_year(refs: dict[int, datetime], fallback_year: dict[int, int], tz: str, rolls: pl.Expr) -> pl.Expr:
    """Time for month/day/time rows (only those, in file order): in the year closest to the
    file's reference, or in --year plus the file's rollovers so far (`rolls`)."""
    ref = pl.col("_fid").replace_strict(refs, default=None, return_dtype=pl.Datetime("us", "UTC"))
    ref_year = ref.dt.year().cast(pl.Int32)
    cands = [_local_to_utc(ref_year + k, tz) for k in (-1, 0, 1)]
    far = pl.duration(days=99999)
    dist = [(c - ref).abs().fill_null(far) for c in cands]
    closest = (
        pl.when(dist[1] <= pl.min_horizontal(dist[0], dist[2]))
        .then(cands[1])
        .when(dist[0] <= dist[2])
        .then(cands[0])
        .otherwise(cands[2])
    )
    fallback = pl.col("_fid").replace_strict(fallback_year, default=None, return_dtype=pl.Int32)
    return pl.when(ref.is_not_null()).then(closest).otherwise(_local_to_utc(fallback + rolls, tz))


def _local_to_utc(year: pl.Expr, tz: str) -> pl.Expr:
    """Naive local date-time from time parts and `year`, interpreted in `tz`, as UTC; null where
    that year has no such day (Feb 29 of 2025: of the candidate years, a leap one is chosen)."""
    month = pl.col("_mo").clip(1, 12)
    month_days = pl.date(year, month, 1).dt.month_end().dt.day().cast(pl.Int32)
    naive = pl.datetime(
        year,
        month,
        pl.min_horizontal(pl.col("_d").clip(1, 31), month_days),  # (polars raises on a day the month lacks)
        pl.col("_H").fill_null(0).clip(0, 23),
        pl.col("_M").fill_null(0).clip(0, 59),
        pl.col("_S").fill_null(0).clip(0, 59),
        pl.col("_us").fill_null(0),
        time_unit="us",
    )
    valid = year.is_not_null() & pl.col("_mo").is_between(1, 12) & pl.col("_d").is_between(1, month_days)
    out = naive.dt.replace_time_zone(tz, ambiguous="earliest", non_existent="null").dt.convert_time_zone("UTC")
    return pl.when(valid).then(out)


COUNTED = ("_fid", s.SOURCE, "_drop", "_extra", "_nfold", "_outer_ts", s.STREAM, "_syslog", "_journal")
"""The narrow columns the accounting reads (every filter copies what it is given)."""


def _count(ev: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """A batch's accounting partials, summed over batches by `_account`: per file, line
    counts and how many physical lines carry each wrapper's mark; per (file, source), events;
    per (file, journal kind), lines."""
    ev = ev.select(c for c in COUNTED if c in ev.columns)
    present = set(ev.columns)

    head = ~pl.col("_extra").fill_null(False)  # (a record glued onto a line's first is no line of its own)

    def marked(c: str) -> pl.Expr:
        return ((pl.col(c).is_not_null() & head).sum() if c in present else pl.lit(0)).cast(pl.Int64).alias(c)

    kept = ~pl.col("_drop").fill_null(False)
    heads = ev.filter(head)
    per_file = ev.group_by("_fid").agg(
        ((pl.col(s.SOURCE) != "unknown") & kept & head).sum().cast(pl.Int64).alias("parsed"),
        ((pl.col(s.SOURCE) == "unknown") & kept & head).sum().cast(pl.Int64).alias("unparsed"),
        # (every event's folded lines: the traceback under a glued record folds into that one)
        pl.col("_nfold").fill_null(0).sum().cast(pl.Int64).alias("folded"),
        head.sum().cast(pl.Int64).alias("rows"),
        *(marked(c) for c in ("_outer_ts", s.STREAM, "_syslog", "_journal")),
    )
    by_source = ev.filter(kept).group_by("_fid", s.SOURCE).len()
    journal = (
        heads.filter(pl.col("_journal").is_not_null()).group_by("_fid", "_journal").len()
        if "_journal" in present
        else pl.DataFrame(schema={"_fid": pl.UInt32, "_journal": pl.String, "len": pl.UInt32})
    )
    return per_file, by_source, journal


def _account(
    counts: list[tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]],
    metas: list[_Meta],
    lines_read: dict[int, int],
    notes: dict,
    doc_files: dict,
) -> list[FileReport]:
    stats: dict[int, dict] = {}
    fmt_of: dict[int, list[str]] = {}
    n_events: dict[int, int] = {}
    if counts:
        per_file = pl.concat([c[0] for c in counts]).group_by("_fid").sum()
        for r in per_file.iter_rows(named=True):
            rows = r["rows"] or 1
            stats[r["_fid"]] = r | {k: r[c] / rows for k, c in WRAPPER_MARKS.items()}
        by_source = (
            pl.concat([c[1] for c in counts])
            .group_by("_fid", s.SOURCE)
            .agg(pl.col("len").sum())
            .sort("_fid", "len", s.SOURCE, descending=[False, True, False])
        )
        for fid, src, n in by_source.iter_rows():
            fmt_of.setdefault(fid, []).append(src)
            n_events[fid] = n_events.get(fid, 0) + n
        journal = pl.concat([c[2] for c in counts]).group_by("_fid", "_journal").agg(pl.col("len").sum())
        # The most frequent kind; on a tie, the first in sorted order.
        for fid, kind, _n in journal.sort("_fid", "len", "_journal", descending=[False, True, False]).iter_rows():
            stats.setdefault(fid, {}).setdefault("journal_kind", kind)
    reports = []
    for fid, meta in enumerate(metas):
        if fid not in lines_read:
            continue
        n = lines_read[fid]
        st = stats.get(fid, {})
        if fid in doc_files and doc_files[fid] not in LINE_DOCUMENTS:
            parsed, folded, unparsed = n, 0, 0
            wrapper = doc_files[fid]
        else:
            parsed, folded, unparsed = int(st.get("parsed", 0)), int(st.get("folded", 0)), int(st.get("unparsed", 0))
            wrapper = doc_files.get(fid) or _wrapper(st)
        assert parsed + folded + unparsed == n, (
            f"ingest accounting bug in {meta.rel}: {parsed}+{folded}+{unparsed} != {n} lines read"
        )
        reports.append(
            FileReport(
                meta.rel,
                tuple(fmt_of.get(fid, [])),
                wrapper,
                n,
                parsed,
                folded,
                unparsed,
                int(n_events.get(fid, 0)),
                tuple(notes.get(fid, [])),
            )
        )
    return reports


LINE_DOCUMENTS = frozenset(("prometheus-text", "prometheus-json", "log-export-json", "log-export-csv"))
"""Documents whose events account for their lines one by one (a Kubernetes event list's
events are its items, so its lines are all counted parsed; a log store's export is parsed a
record a line)."""
WRAPPER_MARKS = {"outer": "_outer_ts", "stream": s.STREAM, "syslog": "_syslog", "journal": "_journal"}
"""Share of a file's lines with each wrapper's mark (`_wrapper` reads them), from its column."""
JOURNAL_WRAPPERS = {"json": "journald-json", "iso": "journald", "dmesg": "dmesg"}


def _wrapper(st: dict) -> str | None:
    if st.get("journal", 0) > 0.5:
        return JOURNAL_WRAPPERS.get(st.get("journal_kind"), "journald")
    if st.get("outer", 0) > 0.5:
        return "cri" if st.get("stream", 0) > 0.5 else "kubectl"
    if st.get("syslog", 0) > 0.5:
        return "journald"
    return None


FINISH_INPUTS = frozenset(
    (
        "_fid",
        "_drop",
        "_dump_pod",
        "_dump_ns",
        "_dump_container",
        "_wpod",
        "_wns",
        "_wcont",
        "_rank",
        "_line_rank",
        "_pid",
    )
)
"""The working columns `_finish` reads; the others (time parts, wrapper flags) are dropped before it."""


DUMP_HINTS = ("_dump_pod", "_dump_ns", "_dump_container")
"""Pod, namespace and container a `kubectl cluster-info dump` header names, for the lines after it."""
RANK_IN_NAME = re.compile(r"rank=(\d+)")


def _finish(ev: pl.DataFrame, metas: list[_Meta], carry: _Carry) -> tuple[pl.DataFrame, dict[str, str]]:
    """Attach file names and path hints, derive rank/pid, drop working columns and folded-away
    rows. Also returns the dump headers the batch's last file hands on (see `_Carry`)."""
    ev = ev.select(c for c in ev.columns if c in s.EVENT_COLUMNS or c in FINISH_INPUTS)
    # Per-file columns by gathering on the file id: a join or a filter here would copy the
    # whole batch (messages included).
    fid = ev["_fid"]
    per_file = {
        s.FILE: [m.rel for m in metas],
        "_hpod": [m.pod for m in metas],
        "_hns": [m.namespace for m in metas],
        "_hcont": [m.container for m in metas],
        "_hnode": [m.node for m in metas],
    }
    # A path hint no file of the batch has (a plain file's path names no namespace or
    # container) is left out rather than gathered as a column of nulls and coalesced.
    per_file = {c: v for c, v in per_file.items() if c == s.FILE or any(x is not None for x in v)}
    ev = ev.with_columns(pl.Series(c, v, dtype=pl.String).gather(fid) for c, v in per_file.items())
    # A working column no line had is absent (`_slim`): left out here rather than added as
    # nulls and worked on (forward-filling three absent dump columns cost ~1.3 s per GB).
    carried = {c: v for c, v in carry.dump.items() if c not in ev.columns}
    if carried:
        ev = ev.with_columns(pl.lit(None, pl.String).alias(c) for c in carried)
    have = set(ev.columns)

    def text(*columns: str) -> list[pl.Expr]:
        return [pl.col(c).cast(pl.String) for c in columns if c in have]

    dump_out: dict[str, str] = {}
    dump = [c for c in DUMP_HINTS if c in have]
    if dump:
        filled = {c: pl.col(c).cast(pl.String).forward_fill().over("_fid") for c in dump}
        filled = {
            c: pl.coalesce(e, pl.when(carry.rows).then(pl.lit(carry.dump[c]))) if c in carry.dump else e
            for c, e in filled.items()
        }
        ev = ev.with_columns(**filled)
        last = ev.filter(pl.col("_fid") == ev["_fid"][-1]).select(dump).tail(1).row(0, named=True)
        dump_out = {c: v for c, v in last.items() if v is not None}
        ev = ev.with_columns(pl.col(c).replace("", None) for c in dump)
    node_sources = ["kubelet", "klog", "k8s-event", "k8s-state", "syslog", "kernel", "nvidia-smi"]
    container_log = ~pl.col(s.SOURCE).is_in(node_sources)
    if s.HOST in have:  # (a Prometheus export's event that names its node is the node's: a GPU's Xid)
        container_log &= ~((pl.col(s.SOURCE) == "prometheus") & pl.col(s.HOST).is_not_null())

    def hint(column: str, container_only: bool = True) -> pl.Expr:
        if column not in have:
            return pl.lit(None, pl.String)
        return pl.when(container_log).then(pl.col(column)) if container_only else pl.col(column)

    ranks = [pl.col("_rank").cast(pl.Int32, strict=False)] if "_rank" in have else []
    ranks += [pl.col("_line_rank")] if "_line_rank" in have else []
    if s.PROCESS in have:  # `rank=N` in a Ray actor's process name: read once per distinct name
        named = {
            p: int(m[1]) for p in ev[s.PROCESS].unique().drop_nulls().cast(pl.String) if (m := RANK_IN_NAME.search(p))
        }
        named = {p: r for p, r in named.items() if r < 2**31}
        if named:
            ranks.append(pl.col(s.PROCESS).replace_strict(named, default=None, return_dtype=pl.Int32))
    if "_hnode" in have:  # a node's own lines that do not name it (`dmesg -T`, a kubelet.log)
        own = pl.col(s.SOURCE).is_in(NODE_LEVEL_SOURCES)
        host = pl.col(s.HOST) if s.HOST in have else pl.lit(None, pl.String)
        ev = ev.with_columns(pl.coalesce(host, pl.when(own).then(pl.col("_hnode"))).alias(s.HOST))
    ev = ev.with_columns(
        pl.coalesce(*text(s.POD, "_wpod", "_dump_pod"), hint("_hpod")).alias(s.POD),
        pl.coalesce(*text(s.NAMESPACE, "_wns", "_dump_ns"), hint("_hns", container_only=False)).alias(s.NAMESPACE),
        pl.coalesce(*text(s.CONTAINER, "_wcont", "_dump_container"), hint("_hcont")).alias(s.CONTAINER),
        (pl.coalesce(*ranks) if ranks else pl.lit(None, pl.Int32)).alias(s.RANK),
        (pl.col("_pid").cast(pl.Int64, strict=False) if "_pid" in have else pl.lit(None, pl.Int64)).alias(s.PID),
        pl.col(s.MESSAGE).fill_null("") if s.MESSAGE in have else pl.lit("").alias(s.MESSAGE),
    )
    # Batches are built in (file, segment, line) order: (file, line) order holds without
    # sorting on the string column. Rows that were only folded away (`_drop`) go.
    keep = ~ev["_drop"].fill_null(False)
    ev = s.conform(ev, s.EVENT_DTYPES)
    return (ev if keep.all() else ev.filter(keep)), dump_out


def write_tables(result: IngestResult, out: Path) -> dict[str, Path]:
    """Write events.parquet, metrics.parquet and ingest.json (the accounting sidecar) to `out`."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "events": out / EVENTS_FILE,
        "metrics": out / METRICS_FILE,
        "accounting": out / "ingest.json",
    }
    if result.streamed_to is not None:  # both written as they were parsed
        paths["events"], paths["metrics"] = (Path(result.streamed_to) / f for f in (EVENTS_FILE, METRICS_FILE))
    else:
        if result.dataset is not None:
            paths["events"] = Path(result.dataset)  # the rows are already there (see `forensics.scaleout`)
        else:
            result.events.write_parquet(paths["events"], statistics=False)
        result.metrics.write_parquet(paths["metrics"], statistics=False)
    paths["accounting"].write_text(json.dumps(result.accounting(), indent=2, default=str) + "\n")
    return paths


__all__ = ["FileReport", "IngestResult", "ingest", "ingest_files", "reference_times", "write_tables"]
