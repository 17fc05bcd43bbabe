"""The accounting invariant, per file: lines read = parsed + folded + unparsed.

*parsed* lines head an event of a recognised format, *folded* lines were joined into an event
(continuations, blank lines, table headers, CRI partial pieces) and *unparsed* lines became
events of source `unknown`. Nothing is dropped without being counted."""

from __future__ import annotations

import polars as pl

from forensics import schema as s
from forensics.ingestion.result import FileReport
from forensics.ingestion.state import FileMeta

COUNTED = ("_fid", s.SOURCE, "_drop", "_extra", "_nfold", "_outer_ts", s.STREAM, "_syslog", "_journal")
"""The narrow columns the accounting reads (every filter copies what it is given)."""


def count_kinds(ev: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """A batch's accounting partials, summed over batches by `account`: per file, line
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


def account(
    counts: list[tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]],
    metas: list[FileMeta],
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
