"""What a run with no incident still owes the reader: the catalog's hard faults logged anyway, and
the most frequent error templates no entry names. "No incident" must not read as "nothing failed"."""

from __future__ import annotations

import polars as pl

from forensics import mining
from forensics import schema as s
from forensics.diagnosis._format import iso

UNEXPLAINED_SHOWN = 5


def unexplained_errors(events: pl.DataFrame, templates: pl.DataFrame, signals: pl.DataFrame) -> list[dict]:
    """The error-level templates of a run with no incident that match no signature (`signals`
    has those that do), most frequent first (then earliest).

    Saying only "no incident found" over logs full of ERROR lines would send the reader
    away; a pasted excerpt of a traceback without its exception line is the usual case.
    """
    errs = (
        events.with_row_index("_ev")
        .filter(pl.col(s.LEVEL).is_in(["ERROR", "CRITICAL"]) & ~pl.col("_ev").is_in(signals["_ev"].implode()))
        .drop("_ev")
    )
    per = _most_frequent(
        errs,
        [mining.TEMPLATE_ID],
        pl.col(s.MESSAGE).sort_by("_ord").first().str.split("\n").list.first().alias("first_line"),
    ).join(
        templates.select(mining.TEMPLATE_ID, mining.TEMPLATE), on=mining.TEMPLATE_ID, how="left", maintain_order="left"
    )
    return [
        {
            "template": r[mining.TEMPLATE] or r["first_line"],
            "count": r["count"],
            "first_seen": iso(r["first_seen"]),
            "file": r["file"],
            "line": r["line"],
        }
        for r in per.iter_rows(named=True)
    ]


def quiet_faults(signals: pl.DataFrame) -> list[dict]:
    """The faults of a run with no incident, one row per signature and template, most frequent
    first (then earliest)."""
    per = _most_frequent(signals.filter(pl.col("kind") == "fault"), ["label", "template"])
    return [
        {
            "label": r["label"],
            "template": r["template"],
            "count": r["count"],
            "first_seen": iso(r["first_seen"]),
            "file": r["file"],
            "line": r["line"],
        }
        for r in per.iter_rows(named=True)
    ]


def _most_frequent(rows: pl.DataFrame, by: list[str], *more: pl.Expr) -> pl.DataFrame:
    """The `UNEXPLAINED_SHOWN` most frequent groups of `rows` by `by` (then the earliest in row
    order), each with its count, first time and first `file:line`, and `more` aggregations
    (which may read the row order as `_ord`)."""
    return (
        rows.with_row_index("_ord")
        .group_by(by)
        .agg(
            pl.len().alias("count"),
            pl.col("_ord").min().alias("_first"),
            pl.col(s.TS).min().alias("first_seen"),
            pl.col(s.FILE).sort_by("_ord").first().alias("file"),
            pl.col(s.LINE).sort_by("_ord").first().alias("line"),
            *more,
        )
        .sort(["count", "_first"], descending=[True, False])
        .head(UNEXPLAINED_SHOWN)
    )
