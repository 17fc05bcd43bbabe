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
LEVEL_LETTERS = {
    "D": "DEBUG",
    "V": "DEBUG",
    "I": "INFO",
    "W": "WARNING",
    "E": "ERROR",
    "F": "CRITICAL",
    "C": "CRITICAL",
}
"""glog/c10/klog letters; Ray's C++ logs also write C (critical) for fatal lines."""


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


SYSLOG_LEVEL_WORDS = {
    **LEVEL_WORDS,
    "EMERG": "CRITICAL",
    "ALERT": "CRITICAL",
    "CRIT": "CRITICAL",
    "ERR": "ERROR",
    "NOTICE": "INFO",
}
"""Syslog severity names too (kernel and daemon lines say `err`, `crit`, `notice`)."""


def level_from_word(expr: pl.Expr, words: dict[str, str] = LEVEL_WORDS) -> pl.Expr:
    """Map INFO/WARN/WARNING/ERROR/... (any case) to the `schema.Level` vocabulary."""
    return expr.str.to_uppercase().replace_strict(words, default=None, return_dtype=pl.String)


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
