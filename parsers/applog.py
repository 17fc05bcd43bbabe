"""Go and Rust services' console lines: a time, a level word, a logger or target, the message.

    2025-03-02T10:00:01.123456Z ERROR dynamo_runtime::pipeline: request failed     # Rust tracing
    2025-03-02T10:00:03.123Z	ERROR	controller/pool.go:88	Reconciler error	{"pool": "vllm"}  # zap
    1.7409096e+09	ERROR	setup	unable to start manager                           # zap, epoch time
    [2025-03-02T10:00:06Z ERROR vllm_router::router] upstream returned 503            # env_logger
    2025/03/02 10:00:05 nvidia-device-plugin: Loading NVML                           # Go's log

The serving stack around vLLM is partly Go and Rust: routers and gateways, KV-aware schedulers,
operators and device plugins. Their default console formats are none of the producers this tool
knows, yet their level matters: an `ERROR` line of the router in front of the engines is
evidence. Rust tracing's line is an RFC3339 time, a space and the rest, which the
`kubectl logs --timestamps` peel takes as its stamp (the time is the same either way); what is
left, `ERROR spans: target: message` (tracing pads the level to five: ` WARN`), is read here,
with its stamp when colour codes kept the peel from it. The zap, env_logger and Go forms keep
their own time: RFC3339 with its zone, exact; Go's log writes local time (`--tz`). The source is `app`; the component is the target, logger or
caller's file; zap's trailing JSON fields stay in the message (the error is often there).
"""

from __future__ import annotations

import polars as pl

from parsers import schema as s
from parsers._common import APP_LEVEL_WORDS, extract_head, level_from_word, no_time, time_parts
from parsers.wrappers import parse_rfc3339

_STAMP = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})"
_LEVELS = r"TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL|PANIC|DPANIC"
_SPANS = r"[A-Za-z_][\w\-]*\{[^}]*\}(?::[A-Za-z_][\w\-]*(?:\{[^}]*\})?)*: "
"""The spans a tracing event is in, before its target: `request{id=7}:handle: `. The first must
have fields (`{...}`): a bare `name: ` would take a message's own `word: ` for a span."""
_TARGET = r"[A-Za-z_][\w\-]*(?:::[\w\-]+)*"
"""A tracing target: the module path, `crate::module`."""

LEVEL_FIRST = (
    rf"^(?:(?P<ts>{_STAMP}) )? ?(?P<level>TRACE|DEBUG|INFO|WARN|ERROR) {{1,2}}(?P<spans>{_SPANS})?"
    rf"(?P<target>{_TARGET}): (?P<msg>.*)$"
)
ZAP = (
    rf"^(?:(?P<ts>{_STAMP})|(?P<epoch>\d\.\d+e\+09|\d{{10}}\.\d+))\t(?P<level>(?i:{_LEVELS}))\t"
    r"(?:(?P<logger>[^\t]+)\t)??(?:(?P<caller>[^\t\s]+\.go:\d+)\t)?(?P<msg>[^\t]*)(?:\t(?P<fields>\{.*\}))?\s*$"
)
ENV_LOGGER = rf"^\[(?P<ts>{_STAMP}) +(?P<level>{_LEVELS}) +(?P<target>[^\]\s]+)\] ?(?P<msg>.*)$"
GO_LOG = (
    r"^(?P<Y>\d{4})/(?P<mo>\d{2})/(?P<d>\d{2}) (?P<H>\d{2}):(?P<M>\d{2}):(?P<S>\d{2})(?:\.(?P<frac>\d{1,6}))? "
    r"(?:(?P<file>[\w.\-]+\.go):\d+: )?(?P<msg>.*)$"
)
LEVEL_IN_TEXT = rf"(?:^|[\s\[(])({_LEVELS}|ERR|CRITICAL)(?:[\s\]):]|$)"
"""A Go log line's level, when its text says one (`[ERROR] ...`, `ERROR: ...`)."""

DETECT = "|".join(
    (
        rf"^(?:{_STAMP} )? ?(?:TRACE|DEBUG|INFO|WARN|ERROR) {{1,2}}(?:{_SPANS})?{_TARGET}: ",
        rf"^(?:{_STAMP}|\d\.\d+e\+09|\d{{10}}\.\d+)\t(?i:{_LEVELS})\t",
        rf"^\[{_STAMP} +(?:{_LEVELS}) +[^\]\s]+\]",
        r"^\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,6})? ",
    )
)


def parse(df: pl.DataFrame) -> pl.DataFrame:
    """Parse the lines `DETECT` claims, each by the form it has."""
    body = pl.col("body")
    form = (
        pl.when(body.str.contains(r"^\d{4}/\d{2}/\d{2} "))
        .then(pl.lit("go"))
        .when(body.str.starts_with("["))
        .then(pl.lit("env"))
        .when(body.str.contains(r"^[\d.e+\-:TZ]+\t"))
        .then(pl.lit("zap"))
        .otherwise(pl.lit("first"))
    )
    df = df.with_columns(form.alias("_form"))
    parts = [
        parser(df.filter(pl.col("_form") == name))
        for name, parser in (("first", _level_first), ("zap", _zap), ("env", _env_logger), ("go", _go_log))
    ]
    return pl.concat([p for p in parts if p.height] or [parts[0]], how="diagonal_relaxed").drop("_form")


def _app(df: pl.DataFrame, level: pl.Expr, component: pl.Expr, message: pl.Expr, when: pl.Expr | None) -> pl.DataFrame:
    """The app event's columns (`when`: its own exact time, after a wrapper's). A line its form's
    pattern does not match whole is refused (no source): another kind may claim it."""
    exact = [pl.coalesce(pl.col("_outer_ts"), when).alias("_outer_ts"), *no_time()] if when is not None else []
    return df.with_columns(
        pl.when(message.is_not_null()).then(pl.lit("app")).alias(s.SOURCE),
        level_from_word(level, APP_LEVEL_WORDS).alias(s.LEVEL),
        component.alias(s.COMPONENT),
        message.alias(s.MESSAGE),
        *exact,
    )


def _level_first(df: pl.DataFrame) -> pl.DataFrame:
    m = pl.col("_m").struct.field
    df = extract_head(df, LEVEL_FIRST, "_m")
    return _app(df, m("level"), m("target"), m("msg"), parse_rfc3339(m("ts"))).drop("_m")


def _zap(df: pl.DataFrame) -> pl.DataFrame:
    m = pl.col("_m").struct.field
    df = df.with_columns(pl.col("body").str.extract_groups(ZAP).alias("_m"))
    epoch = (m("epoch").cast(pl.Float64, strict=False) * 1e6).cast(pl.Int64)
    when = pl.coalesce(parse_rfc3339(m("ts")), pl.from_epoch(epoch, time_unit="us").dt.replace_time_zone("UTC"))
    msg = pl.when(m("fields").is_not_null()).then(pl.concat_str([m("msg"), m("fields")], separator=" "))
    component = pl.coalesce(m("logger"), m("caller").str.extract(r"([^/]+\.go):\d+$", 1))
    return _app(df, m("level"), component, msg.otherwise(m("msg")), when).drop("_m")


def _env_logger(df: pl.DataFrame) -> pl.DataFrame:
    m = pl.col("_m").struct.field
    df = df.with_columns(pl.col("body").str.extract_groups(ENV_LOGGER).alias("_m"))
    return _app(df, m("level"), m("target"), m("msg"), parse_rfc3339(m("ts"))).drop("_m")


def _go_log(df: pl.DataFrame) -> pl.DataFrame:
    m = pl.col("_m").struct.field
    df = extract_head(df, GO_LOG, "_m")
    level = m("msg").str.slice(0, 80).str.extract(LEVEL_IN_TEXT, 1)
    return _app(df, level, m("file"), m("msg"), None).with_columns(*time_parts(m)).drop("_m")
