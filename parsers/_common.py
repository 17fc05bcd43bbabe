"""Helpers shared by the parsers: regex extraction into columns, level maps, time parts.

Working-frame conventions (private to `parsers/`): `body` is the text still to be parsed;
time parts go to `_Y _mo _d _H _M _S _us` (Int32, null when absent) and are turned into
`ts` by `forensics.ingest` once the reference year is known.
"""

from __future__ import annotations

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


def extract(df: pl.DataFrame, pattern: str, col: str = "body", prefix: str = "g_") -> pl.DataFrame:
    """Add one column `prefix+name` per named group of `pattern` matched against `col`."""
    return (
        df.with_columns(pl.col(col).str.extract_groups(pattern).alias("_g"))
        .unnest("_g", separator="")
        .rename(lambda c: c, strict=False)
    )


def groups(pattern: str, col: str = "body") -> pl.Expr:
    """The struct of named groups of `pattern` over `col` (null fields where no match)."""
    return pl.col(col).str.extract_groups(pattern)


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
