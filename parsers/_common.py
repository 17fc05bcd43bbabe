"""Helpers shared by the parsers: subset application, level maps, time parts.

Working-frame conventions (private to `parsers/`): `_row` is the row's position in
its batch (order is restored by sorting on it); `body` is the text still to be
parsed; time parts go to `_Y _mo _d _H _M _S _us` (Int32, null when absent) and are
turned into `ts` by `forensics.ingestion` once the reference year is known.

NOTE on speed: a regex with capture groups costs about 1 µs per row in polars even on
short strings, while `contains`, `find`, `slice` and `splitn` cost 0.02-0.2 µs. Hot
formats are therefore parsed positionally after a strict capture-free `contains`
probe, and capture-group regexes only run on the rows a layer concerns (`apply`).
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

TIME_PARTS = ("_Y", "_mo", "_d", "_H", "_M", "_S", "_us")

LEVEL_WORDS = {
    "DEBUG": "DEBUG",
    "TRACE": "DEBUG",
    "CALL": "DEBUG",
    "INFO": "INFO",
    "WARN": "WARNING",
    "WARNING": "WARNING",
    "ERROR": "ERROR",
    "CRITICAL": "CRITICAL",
    "FATAL": "CRITICAL",
}
LEVEL_LETTERS = {"D": "DEBUG", "V": "DEBUG", "I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL"}


def apply(df: pl.DataFrame, mask: pl.Expr, fn: Callable[[pl.DataFrame], pl.DataFrame]) -> pl.DataFrame:
    """Run `fn` on the rows where `mask` holds and keep the others untouched.

    Row order is NOT preserved (re-sorting a batch after every layer cost more than the
    layer); whoever needs file order sorts on `_row`, which is unique per batch.
    `fn` may add columns; rows it did not see get nulls there.
    """
    hit = df.select(mask.fill_null(False)).to_series()
    n = int(hit.sum())
    if n == 0:
        return df
    if n == df.height:
        return fn(df)
    return pl.concat([df.filter(~hit), fn(df.filter(hit))], how="diagonal_relaxed")


def level_from_word(expr: pl.Expr) -> pl.Expr:
    """Map INFO/WARN/WARNING/ERROR/... (any case) to the `schema.Level` vocabulary."""
    return expr.str.to_uppercase().replace_strict(LEVEL_WORDS, default=None, return_dtype=pl.String)


def level_from_letter(expr: pl.Expr) -> pl.Expr:
    """Map glog/c10 severity letters (I W E F V) to the `schema.Level` vocabulary."""
    return expr.replace_strict(LEVEL_LETTERS, default=None, return_dtype=pl.String)


def to_i32(expr: pl.Expr) -> pl.Expr:
    return expr.cast(pl.Int32, strict=False)


def to_i64(expr: pl.Expr) -> pl.Expr:
    return expr.cast(pl.Int64, strict=False)


def frac_to_us(expr: pl.Expr) -> pl.Expr:
    """Turn a fraction-of-second digit string ('123', '763092820') into microseconds."""
    return expr.str.slice(0, 6).str.pad_end(6, "0").cast(pl.Int32, strict=False)


def no_time() -> list[pl.Expr]:
    """Null time parts, for formats that carry no timestamp."""
    return [pl.lit(None, pl.Int32).alias(c) for c in TIME_PARTS]


def datetime_utc(y: pl.Expr, mo: pl.Expr, d: pl.Expr, hh: pl.Expr, mi: pl.Expr, ss: pl.Expr, us: pl.Expr) -> pl.Expr:
    """A naive datetime from integer parts, null where a part is out of range (junk input)."""
    valid = (
        y.is_between(1970, 2200)
        & mo.is_between(1, 12)
        & d.is_between(1, 31)
        & hh.is_between(0, 23)
        & mi.is_between(0, 59)
        & ss.is_between(0, 60)
    )
    dt = pl.datetime(
        y.clip(1970, 2200),
        mo.clip(1, 12),
        d.clip(1, 28),
        hh.clip(0, 23),
        mi.clip(0, 59),
        ss.clip(0, 59),
        us.fill_null(0).clip(0, 999_999),
        time_unit="us",
    ) + pl.duration(days=d.clip(1, 31) - d.clip(1, 28))
    # Day overflow (Feb 30) rolls into the next month above: reject it.
    return pl.when(valid & (dt.dt.day() == d)).then(dt)


def epoch_us(y: pl.Expr, mo: pl.Expr, d: pl.Expr, hh: pl.Expr, mi: pl.Expr, ss: pl.Expr, us: pl.Expr) -> pl.Expr:
    """Microseconds since 1970-01-01 of a civil date-time, with integer arithmetic only.

    Howard Hinnant's days-from-civil algorithm: about 20x faster than building each
    datetime, which matters on the millions of RFC3339 prefixes of a pod log.
    Null where a part is out of range (junk that passed a probe).
    """
    i64 = pl.Int64
    y, mo, d = y.cast(i64), mo.cast(i64), d.cast(i64)
    yy = y - (mo <= 2).cast(i64)
    era = yy.floordiv(400)
    yoe = yy - era * 400
    mp = (mo + 9) % 12
    doy = (153 * mp + 2).floordiv(5) + d - 1
    doe = yoe * 365 + yoe.floordiv(4) - yoe.floordiv(100) + doy
    days = era * 146097 + doe - 719468
    secs = days * 86400 + hh.cast(i64) * 3600 + mi.cast(i64) * 60 + ss.cast(i64)
    valid = (
        mo.is_between(1, 12) & d.is_between(1, 31) & hh.is_between(0, 23) & mi.is_between(0, 59) & ss.is_between(0, 60)
    )
    return pl.when(valid).then(secs * 1_000_000 + us.cast(i64).fill_null(0))
