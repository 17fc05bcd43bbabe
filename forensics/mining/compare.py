"""Templates of the incident against a baseline: what is new, what grew, what went quiet."""

from __future__ import annotations

import math
from datetime import datetime

import polars as pl

from forensics import schema as s
from forensics.mining.table import COUNT, TEMPLATE, TEMPLATE_ID


def diff(
    current: pl.DataFrame, current_s: float, baseline: pl.DataFrame, baseline_s: float, alpha: float = 1e-3
) -> pl.DataFrame:
    """Mark each template NEW, GONE, CHANGED or SAME between a baseline and the current window.

    `current`/`baseline` have `template_id`, `template`, `source`, `count`; the `_s`
    arguments are the windows' lengths in seconds. Under "nothing changed", a template's
    occurrences fall in the two windows in proportion to their lengths, so the current
    count is Binomial(n = both counts, p = current_s / (current_s + baseline_s)); the
    two-sided binomial test gives `p_value`, and `score` = -log10(p). A template is
    CHANGED when p < `alpha`. This is log-rate analysis (LogCompare, Elastic) with an
    exact test instead of a threshold on the ratio.
    """
    from scipy.stats import binomtest

    cur = current.select(TEMPLATE_ID, TEMPLATE, s.SOURCE, pl.col(COUNT).alias("count_current"))
    base = baseline.select(
        TEMPLATE_ID, pl.col(TEMPLATE).alias("_bt"), pl.col(s.SOURCE).alias("_bs"), pl.col(COUNT).alias("count_baseline")
    )
    j = (
        cur.join(base, on=TEMPLATE_ID, how="full", coalesce=True)
        .with_columns(
            pl.coalesce(TEMPLATE, "_bt").alias(TEMPLATE),
            pl.coalesce(s.SOURCE, "_bs").alias(s.SOURCE),
            pl.col("count_current").fill_null(0),
            pl.col("count_baseline").fill_null(0),
        )
        .drop("_bt", "_bs")
    )
    p_cur = current_s / (current_s + baseline_s) if current_s + baseline_s > 0 else 0.5
    rows = []
    for r in j.iter_rows(named=True):
        c, b = r["count_current"], r["count_baseline"]
        p = binomtest(c, c + b, p_cur).pvalue if c + b > 0 else 1.0
        rate_c = c / current_s if current_s else None
        rate_b = b / baseline_s if baseline_s else None
        if b == 0 and c > 0:
            status = "NEW"
        elif c == 0 and b > 0:
            status = "GONE"
        elif p < alpha:
            status = "CHANGED"
        else:
            status = "SAME"
        ratio = (rate_c / rate_b) if rate_c is not None and rate_b else None
        rows.append(
            {
                **r,
                "rate_current": rate_c,
                "rate_baseline": rate_b,
                "rate_ratio": ratio,
                "p_value": p,
                "score": -math.log10(max(p, 1e-300)),
                "status": status,
            }
        )
    schema = {
        TEMPLATE_ID: pl.String,
        TEMPLATE: pl.String,
        s.SOURCE: pl.String,
        "count_current": pl.Int64,
        "count_baseline": pl.Int64,
        "rate_current": pl.Float64,
        "rate_baseline": pl.Float64,
        "rate_ratio": pl.Float64,
        "p_value": pl.Float64,
        "score": pl.Float64,
        "status": pl.String,
    }
    out = pl.DataFrame(rows, schema=schema)
    return out.sort("score", TEMPLATE_ID, descending=[True, False])


def window_counts(events: pl.DataFrame, ids: pl.Series, start: datetime, end: datetime) -> pl.DataFrame:
    """Template counts of events with `start <= ts < end` (for `diff`)."""
    ev = events.select(s.TS, s.SOURCE).with_columns(ids.alias(TEMPLATE_ID))
    return (
        ev.filter((pl.col(s.TS) >= start) & (pl.col(s.TS) < end))
        .group_by(TEMPLATE_ID)
        .agg(pl.len().alias(COUNT), pl.col(s.SOURCE).first())
    )
