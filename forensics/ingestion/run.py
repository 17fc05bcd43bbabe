"""The ingest loop: discover the files, read them, route documents, and hand lines to batches.

`ingest_files` owns the order of the work; what each step does lives in the modules beside it
(`files`, `reference`, `documents`, `batches`, `timing`, `accounting`, `provenance`, `sink`).
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import numpy as np

from forensics import schema as s
from forensics._malloc import release_free_memory
from forensics.errors import NoInputError
from forensics.ingestion import batches
from forensics.ingestion import files as _files
from forensics.ingestion import limits as _limits
from forensics.ingestion.batches import BatchFinisher, Segment, parse_batch
from forensics.ingestion.documents import document_events, not_a_log, read_document
from forensics.ingestion.limits import Limits
from forensics.ingestion.provenance import file_meta
from forensics.ingestion.reference import reference_times
from forensics.ingestion.result import EVENTS_FILE, METRICS_FILE, IngestResult
from forensics.ingestion.sink import ParquetSink
from forensics.ingestion.state import NO_HINTS, FileMeta, Progress, TimeHints
from forensics.ingestion.timing import YearResolver
from parsers import k8s
from parsers.documents import csv_export, flight_dump, nvidia_smi, prometheus
from parsers.wrappers import log_entries_document


def ingest(
    paths: list[Path] | Path,
    *,
    year: int | None = None,
    tz: str = "UTC",
    captured_at: datetime | None = None,
    progress: Progress | None = None,
    stream_to: Path | None = None,
    outside: bool = False,
    limits: Limits | None = None,
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
        outside: follow symlinks that resolve outside `paths` (never, by default: README, Safety).
        limits: the caps on hostile input (`forensics.ingestion.limits`; None: the defaults).

    Raises:
        NoInputError: when nothing at all could be ingested.

    >>> r = ingest(Path("samples/cache-corruption"))  # doctest: +SKIP
    >>> r.events.select("source").unique().height > 3  # doctest: +SKIP
    True
    """
    roots = [Path(p) for p in ([paths] if isinstance(paths, (str, Path)) else paths)]
    with _limits.using(limits):
        files, skipped = _files.discover(roots, outside=outside)
    hints = TimeHints(year=year, tz=tz, captured_at=captured_at)
    result = ingest_files(files, hints=hints, progress=progress, stream_to=stream_to, limits=limits)
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
    hints: TimeHints = NO_HINTS,
    progress: Progress | None = None,
    file_refs: dict[str, datetime] | None = None,
    stream_to: Path | None = None,
    limits: Limits | None = None,
) -> IngestResult:
    """`ingest` over files already discovered: the unit of work of a sharded run (`forensics.shards.pipeline`).

    `file_refs` (relative path -> reference time, from `reference_times` over *every*
    file of the run) lets a shard infer missing years from dated logs that sit in
    another shard, exactly as a whole-directory ingest would; without it they are
    taken from these files' heads first. Never raises for bad input: an empty result
    with skipped files is a valid answer for one shard.
    """
    with _limits.using(limits):
        return _ingest_files(files, hints=hints, progress=progress, file_refs=file_refs, stream_to=stream_to)


def _ingest_files(
    files: list[_files.InputFile],
    *,
    hints: TimeHints,
    progress: Progress | None,
    file_refs: dict[str, datetime] | None,
    stream_to: Path | None,
) -> IngestResult:
    skipped: list[_files.Skipped] = []
    total = sum(f.size for f in files) or 1
    done = 0
    metas: list[FileMeta] = []
    notes: dict[int, list[str]] = {}
    lines_read: dict[int, int] = {}
    doc_files: dict[int, str] = {}
    trace_paths: dict[str, str] = {}
    batch: list[Segment] = []
    batch_chars = run_chars = 0
    # Batches parse on a thread pool: polars releases the GIL, and a batch's many small
    # passes are mostly single-threaded, so two batches in flight use two cores. They are
    # finished here, in submission order (deterministic, and file order: each file's time
    # carries into its next batch), while the next ones parse; at most batches.WORKERS + 1 wait,
    # which bounds memory.
    pool = ThreadPoolExecutor(max_workers=batches.WORKERS, thread_name_prefix="forensics-parse")
    # Years come from reference times known before any batch is finished (the files' heads,
    # read first on the pool), so each batch is finished (timed, accounted, given its final
    # columns) as soon as it is parsed, and the batches never wait whole with their working
    # columns (~2.5 GB held per GB of logs).
    refs = pool.submit(reference_times, files, hints.tz) if file_refs is None else file_refs
    clock = YearResolver(refs, metas, hints)
    sinks = None
    if stream_to is not None:
        sinks = (
            ParquetSink(Path(stream_to) / EVENTS_FILE, s.empty_events()),
            ParquetSink(Path(stream_to) / METRICS_FILE, s.empty_metrics()),
        )
    tail = BatchFinisher(metas, clock, sinks)
    queue: list[tuple[Future, bool]] = []

    def enqueue(future: Future, speed_passes: bool) -> None:
        """Queue a parse (`speed_passes`: its batch took them, and its metrics lines will too);
        finish the parsed ones at the head, waiting while too many are queued."""
        queue.append((future, speed_passes))
        while queue and (queue[0][0].done() or len(queue) > batches.WORKERS):
            finish()

    def finish() -> None:
        parsed, speed_passes = queue.pop(0)
        result = parsed.result()
        events, metrics = result if isinstance(result, tuple) else (result, None)
        tail.add(events, speed_passes, metrics)

    def flush() -> None:
        nonlocal batch, batch_chars
        if batch:
            speed_passes = run_chars >= batches.SPEED_PASSES_MIN_CHARS
            enqueue(pool.submit(parse_batch, batch, speed_passes), speed_passes)
        batch, batch_chars = [], 0

    def _batch_segments(fid: int, segments: Iterator[bytes | np.ndarray]) -> int:
        """Queue a file's segments (UTF-8 text) for parsing; returns its line count."""
        nonlocal batch_chars, run_chars
        first = 1
        for seg_no, seg in enumerate(segments):
            segment = Segment(fid, seg_no, first, seg)
            batch.append(segment)
            first += segment.lines
            batch_chars += len(seg)
            run_chars += len(seg)
            if batch_chars >= batches.BATCH_CHARS or len(batch) >= batches.BATCH_FILES:
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
            events = document_events(rows, fid)
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
                and not_a_log(head, f.rel) is None
                and not k8s.sniff_event_document(head)
                and prometheus.sniff(head) is None
                and nvidia_smi.sniff(head) is None
                and not csv_export.sniff(head)
            ):
                # A large log: read, decoded and batched a segment at a time (never whole).
                fid = len(metas)
                metas.append(file_meta(f))
                notes[fid] = fnotes = []
                lines_read[fid] = _batch_segments(fid, _files.text_segments(f, fnotes))
                continue
            # (a small file is told after it is read: one open fewer, 10,000 tiny files 0.1-0.3 s)
            if f.size > _files.SNIFF_BYTES and (reason := _files.binary_before_reading(f)):
                skipped.append(_files.Skipped(f.rel, reason))
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
                metas.append(replace(file_meta(f), pod=None))  # (its name is a rank's, not a pod's)
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
            metas.append(file_meta(f))
            n_lines = text.count("\n") + (0 if text.endswith("\n") else 1)
            doc = read_document(text, metas[fid], hints, fnotes)
            if doc is not None:
                metas[fid] = doc.meta
                document(fid, doc.kind, n_lines, fnotes + doc.notes, doc.rows, doc.metrics)
                continue
            entries = log_entries_document(text)
            if entries is not None:
                fnotes.append(
                    f"a JSON document of {len(entries)} log records (a log store's export), read one record a line: "
                    "its line numbers count records"
                )
                text = "\n".join(entries) + "\n"
                doc_files[fid] = "log-export-json"
            elif (exported := csv_export.log_entries_csv(text, hints.tz)) is not None:
                entries, csv_notes = exported
                fnotes.extend(csv_notes)
                text = "\n".join(entries) + "\n" if entries else ""
                doc_files[fid] = "log-export-csv"
            why = None if entries is not None else not_a_log(text, f.rel)
            if why:
                metas[-1] = file_meta(f)
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
