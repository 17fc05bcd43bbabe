"""logfmt records: Go services' `key=value` lines (logrus, slog, go-kit) beside the serving stack.

    time="2025-08-01T10:00:03Z" level=error msg="Failed to watch metrics" error="... Profiling module ..."
    time=2025-08-01T10:00:03.120Z level=ERROR msg="dispatch failed" pool=vllm err="no ready endpoints"
    ts=2025-08-01T10:00:04.001Z caller=main.go:112 level=warn msg="scrape failed"

dcgm-exporter and containerd write logrus' form, Go's slog its own, Prometheus-family tools
go-kit's. A record names its time (RFC3339, exact: UTC or its offset), level and message;
the error it carries goes beside the message (`msg error="..."`), as in an application's
JSON record (`wrappers.records.json_record`), and the caller's file or the logger is the component.
The source is `app`: an application's structured record, of no producer this tool knows (a
host daemon's, read from the node's journal or syslog, stays `syslog`).
"""

from __future__ import annotations

import polars as pl

from parsers import schema as s
from parsers._common import APP_LEVEL_WORDS, level_from_word, no_time
from parsers.wrappers import parse_rfc3339

_STAMP = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})"
_PAIR = r'[\w.\-]+=(?:"(?:[^"\\]|\\.)*"|\S*) '
DETECT = (
    rf'^(?:time|ts|t)="?{_STAMP}"? (?:{_PAIR})*?(?:level|lvl)="?\w+"?(?: |$)'
    rf'|^(?:level|lvl)="?\w+"? (?:{_PAIR})*?(?:time|ts|t)="?{_STAMP}"?(?: |$)'
)
_VALUE = r'("(?:[^"\\]|\\.)*"|\S+)'


def _field(*keys: str) -> pl.Expr:
    """The value of the first of `keys` the line has, its quotes and escapes undone."""
    raw = pl.coalesce(pl.col("body").str.extract(rf"(?:^|\s){k}={_VALUE}", 1) for k in keys)
    quoted = raw.str.starts_with('"')
    inner = raw.str.slice(1, raw.str.len_chars() - 2).str.replace_all(r'\\(["\\])', "$1")
    return pl.when(quoted).then(inner).otherwise(raw)


def parse(df: pl.DataFrame) -> pl.DataFrame:
    """Parse logfmt records: time, level, message (with its error), component."""
    when = parse_rfc3339(pl.col("body").str.extract(rf'^(?:\S+ )*?(?:time|ts|t)="?({_STAMP})"?(?: |$)', 1))
    msg, err = _field("msg", "message"), _field("error", "err")
    text = pl.coalesce(msg, pl.col("body"))
    caller = _field("caller", "logger", "component", "source")
    # A host daemon's record through the journal or syslog (containerd) stays the node's `syslog`.
    host_log = pl.lit(False)
    for c in ("_syslog", "_journal"):
        host_log = host_log | pl.col(c).is_not_null() if c in df.columns else host_log
    return df.with_columns(
        pl.when(host_log).then(pl.lit("syslog")).otherwise(pl.lit("app")).alias(s.SOURCE),
        level_from_word(_field("level", "lvl"), APP_LEVEL_WORDS).alias(s.LEVEL),
        pl.coalesce(pl.col("_outer_ts"), when).alias("_outer_ts"),
        caller.str.replace(r":\d+$", "").alias(s.COMPONENT),
        pl.when(err.is_not_null() & msg.is_not_null())
        .then(pl.concat_str([text, pl.lit(' error="'), err.str.replace_all('"', r"\"", literal=True), pl.lit('"')]))
        .otherwise(text)
        .alias(s.MESSAGE),
        *no_time(),
    )
