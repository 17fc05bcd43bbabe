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

import bisect
import re
from collections.abc import Callable
from functools import cache

import polars as pl

from parsers.frame import TIME_PARTS

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
APP_LEVEL_WORDS = {**SYSLOG_LEVEL_WORDS, "DPANIC": "CRITICAL", "PANIC": "CRITICAL", "EMERGENCY": "CRITICAL"}
"""Applications' structured records (JSON or logfmt): zap (debug..dpanic, panic, fatal), logrus,
slog, Python logging and Cloud Logging severities."""


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


def ensure(df: pl.DataFrame, cols: dict[str, pl.DataType]) -> pl.DataFrame:
    """`df` with each of `cols` it lacks added as nulls (a parsed batch leaves out columns
    no line of it has)."""
    missing = [pl.lit(None, t).alias(c) for c, t in cols.items() if c not in df.columns]
    return df.with_columns(missing) if missing else df


def time_parts(group: Callable[[str], pl.Expr]) -> list[pl.Expr]:
    """The time parts (`TIME_PARTS`) of a match whose groups are named `Y`, `mo`, `d`, `H`, `M`,
    `S` and `frac` (`group(name)` gives one: a struct field of the extracted groups)."""
    return [
        *(to_i32(group(g)).alias(c) for g, c in zip(("Y", "mo", "d", "H", "M", "S"), TIME_PARTS[:6], strict=True)),
        frac_to_us(group("frac")).alias("_us"),
    ]


def no_time() -> list[pl.Expr]:
    """Null time parts, for formats that carry no timestamp."""
    return [pl.lit(None, pl.Int32).alias(c) for c in TIME_PARTS]


_REST = re.compile(r"\(\?P<(\w+)>\.\*\)\$$")
"""A pattern's last group when it takes the rest of the line: `(?P<msg>.*)$`."""
_ASSERTIONS = re.compile(r"\\[bBzAZ]|\$|\(\?[imsxU-]")


@cache
def _head_of(pattern: str) -> tuple[str, str, str | None]:
    """(head pattern, its capture-free form, the rest-of-line group's name or None)."""
    m = _REST.search(pattern)
    head = pattern[: m.start()] if m else pattern
    compiled = re.compile(head)
    if not head.startswith("^") or _ASSERTIONS.search(head) or compiled.groups != len(compiled.groupindex):
        raise ValueError(f"extract_head needs a pattern anchored at ^, with named groups and no assertions: {pattern}")
    return head, re.sub(r"\(\?P<\w+>", "(?:", head), m.group(1) if m else None


def extract_head(
    df: pl.DataFrame, pattern: str, out: str, *, text: str = "body", rest: str | None = None
) -> pl.DataFrame:
    """`df` with `out` = `text.str.extract_groups(pattern)`, field for field, and optionally `rest` =
    the text after the match (null where it does not match).

    Why: polars captures groups with a slow engine that walks the whole match, ~1-3 µs a row on
    a long log line, while finding where an anchored match ends (`str.replace`, a DFA) costs
    ~0.2 µs. So the end is found first and the groups are captured from the matched head
    alone, a few dozen characters. The groups are the same: the pattern is anchored with no
    assertion after `^`, so whether a path of the regex matches depends only on the characters
    it reads, and the path the whole text prefers is the one its matched head prefers. A
    pattern that ends in `(?P<name>.*)$` gets `name` = the rest of the text; `.` stops at a
    newline, so when a rest spans lines (rare: folding comes later) the whole pattern runs as
    it would have.
    """
    head, plain, rest_name = _head_of(pattern)
    t, r = pl.col(text), pl.col("_xh_rest")
    df = df.with_columns(t.str.replace(plain, "").alias("_xh_rest"))
    matched = t.str.len_bytes() > r.str.len_bytes()
    if rest_name is not None and df.select((matched & r.str.contains("\n", literal=True)).any()).item():
        df = df.with_columns(t.str.extract_groups(pattern).alias(out), pl.when(matched).then(r).alias("_xh_rest"))
        return df.rename({"_xh_rest": rest}) if rest else df.drop("_xh_rest")
    df = df.with_columns(
        pl.when(matched)
        .then(t.str.slice(0, t.str.len_chars() - r.str.len_chars()))
        .str.extract_groups(head)
        .alias(out),
        pl.when(matched).then(r).alias("_xh_rest"),
    )
    if rest_name is not None:
        df = df.with_columns(pl.col(out).struct.with_fields(r.alias(rest_name)))
    return df.rename({"_xh_rest": rest}) if rest else df.drop("_xh_rest")


# --- documents read whole (Kubernetes lists, ncclras JSON, flight-recorder dumps) ------------


def as_dict(v: object) -> dict:
    """A document's field as a dict: a hand-edited or truncated document holds any JSON (or
    pickled value) where its writer puts an object."""
    return v if isinstance(v, dict) else {}


def as_list(v: object) -> list:
    """A document's field as a list (see `as_dict`)."""
    return v if isinstance(v, list) else []


def line_starts(text: str) -> list[int]:
    """The offset each line of `text` starts at (`\\n` ends a line), for `line_of`."""
    starts = [0]
    find = text.find
    i = find("\n")
    while i != -1:
        starts.append(i + 1)
        i = find("\n", i + 1)
    return starts


def line_of(starts: list[int], pos: int) -> int:
    """The 1-based line holding offset `pos`, from `line_starts`."""
    return bisect.bisect_right(starts, pos)
