"""The reference times of the files' heads: what a year-less stamp's year is read against.

A first pass parses each file's head (and a document's exact times) before the lines are read
whole, so that every batch of a file knows its year when it is timed."""

from __future__ import annotations

from datetime import datetime

from forensics import schema as s
from forensics.ingestion import batches
from forensics.ingestion import files as _files
from forensics.ingestion.batches import Segment, parse_batch
from forensics.ingestion.documents import document_records, not_a_log
from forensics.ingestion.timing import exact_time, time_columns
from parsers import k8s
from parsers.documents import csv_export

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
    batch: list[Segment] = []
    batch_files: list[tuple[_files.InputFile, bool]] = []
    batch_chars = run_chars = 0
    undated: list[_files.InputFile] = []

    def parse() -> None:
        nonlocal batch_chars
        # Many heads per parse (a parse has a fixed cost, ~0.1 s, that dwarfs a small file),
        # at most a batch's worth (a directory of large logs has gigabytes of heads).
        ev = parse_batch(batch, run_chars >= batches.SPEED_PASSES_MIN_CHARS)
        per = time_columns(ev).group_by("_fid").agg(exact_time(tz).drop_nulls().median().alias("ref"))
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
        if (entries := document_records(f, text, whole)) is not None:
            text = "\n".join(entries) + "\n"  # its records, as the whole file's are parsed
        elif (exported := csv_export.log_entries_csv(text, tz)) is not None:
            text = "\n".join(exported[0]) + "\n"
        elif not_a_log(text, f.rel):
            continue
        batch.append(Segment(len(batch), 0, 1, text.encode()))
        batch_files.append((f, whole))
        batch_chars += len(text)
        run_chars += len(text)
        if batch_chars >= batches.BATCH_CHARS or len(batch) >= batches.BATCH_FILES:
            parse()
    if batch:
        parse()
    return undated
