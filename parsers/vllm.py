"""vLLM's own logger lines, and the metrics and request ids inside their messages.

Formats (shared docs, log-formats §1)::

    INFO 08-15 03:15:51 metrics.py:396] Avg prompt throughput: ...        # <= 0.4: no `[`
    INFO 07-28 06:40:59 [loggers.py:118] Engine 000: Avg prompt ...      # >= 0.5
    DEBUG 09-02 08:46:23 [v1/metrics/loggers.py:271] ...                 # DEBUG: path fileinfo
    WARNING 11-03 23:14 [serving_chat.py:1145] ...                       # seconds missing
    2024-12-19 21:40:35 WARNING 56542 [model_runner_base.py:143] ...     # custom logging config

No year, no zone: time parts go to `_mo _d _H _M _S` and the year is inferred later.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from parsers import schema as s
from parsers._common import apply, extract_head, frac_to_us, level_from_word, to_i32
from parsers._compiled import metric_scan

LEVEL_WORD = r"DEBUG|INFO|WARNING|ERROR|CRITICAL"
DETECT = rf"^(?:\(VLLM\) )?(?:{LEVEL_WORD}) +\d{{2}}-\d{{2}} \d{{2}}:\d{{2}}"
PATTERN = (
    rf"^(?:\(VLLM\) )?(?P<level>{LEVEL_WORD}) +(?P<mo>\d{{2}})-(?P<d>\d{{2}}) "
    r"(?P<H>\d{2}):(?P<M>\d{2})(?::(?P<S>\d{2}))?(?:[.,](?P<ms>\d{3}))? +"
    r"\[?(?P<file>[\w./\-]+\.py):(?P<lno>\d+)\] ?(?P<msg>.*)$"
)
DETECT_CUSTOM = rf"^\d{{4}}-\d{{2}}-\d{{2}} \d{{2}}:\d{{2}}:\d{{2}}(?:[.,]\d+)? (?:{LEVEL_WORD}) \d+ \["
PATTERN_CUSTOM = (
    r"^(?P<Y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2}) (?P<H>\d{2}):(?P<M>\d{2}):(?P<S>\d{2})(?:[.,](?P<ms>\d+))? "
    rf"(?P<level>{LEVEL_WORD}) (?P<pid>\d+) \[(?P<file>[\w./\-]+\.py):(?P<lno>\d+)\] ?(?P<msg>.*)$"
)
GLUED = rf"\S(?:{LEVEL_WORD}) \d{{2}}-\d{{2}} \d{{2}}:\d{{2}}:\d{{2}} \[?[\w./\-]+\.py:\d+\]"
"""Two records glued on one physical line (lost newline between processes)."""
GLUED_SPLIT = rf"(?=(?:{LEVEL_WORD}) \d{{2}}-\d{{2}} \d{{2}}:\d{{2}}:\d{{2}} \[?[\w./\-]+\.py:\d+\])"

REQUEST_PROBE = r"^(?:Received|Added|Finished|Aborted) request \S"


FAST = rf"^(?:{LEVEL_WORD}) \d{{2}}-\d{{2}} \d{{2}}:\d{{2}}:\d{{2}} \[?[\w./\-]+\.py:\d+\](?: |$)"
"""The common layout, parsed positionally (no capture groups) after this probe."""


def parse(df: pl.DataFrame, custom: bool = False) -> pl.DataFrame:
    """Parse rows whose `body` is a vLLM logger line; rows that do not match get null `source`."""
    if custom:
        return _parse_regex(df, PATTERN_CUSTOM, custom=True)
    fast = df.select(pl.col("body").str.contains(FAST)).to_series()
    if fast.all():
        out = _parse_fast(df)
    elif not fast.any():
        out = _parse_regex(df, PATTERN)
    else:
        out = pl.concat([_parse_fast(df.filter(fast)), _parse_regex(df.filter(~fast), PATTERN)], how="diagonal_relaxed")
    return apply(out, pl.col(s.MESSAGE).str.contains(REQUEST_PROBE), request_id)


def request_id(d: pl.DataFrame) -> pl.DataFrame:
    """`Received request chatcmpl-...: params ...`, `Added request cmpl-....` -> the request id."""
    msg = pl.col(s.MESSAGE)
    start = msg.str.find(" ", literal=True) + 9
    rid = msg.str.slice(start).str.extract(r"^([^\s:,]+)", 1).str.strip_chars_end(".")
    return d.with_columns(rid.alias(s.REQUEST_ID))


def _parse_fast(df: pl.DataFrame) -> pl.DataFrame:
    body = pl.col("body")
    sp = body.str.find(" ", literal=True)
    hend = body.str.find("] ", literal=True)
    hend = pl.coalesce(hend, pl.when(body.str.ends_with("]")).then(body.str.len_chars() - 1))
    fileinfo = body.str.slice(sp + 16, hend - sp - 16).str.strip_chars_start("[")
    colon = fileinfo.str.find(r":\d+$")

    def num(off: int) -> pl.Expr:
        return body.str.slice(sp + off, 2).cast(pl.Int32, strict=False)

    return df.with_columns(
        pl.lit("vllm").alias(s.SOURCE),
        level_from_word(body.str.slice(0, sp)).alias(s.LEVEL),
        pl.lit(None, pl.Int32).alias("_Y"),
        num(1).alias("_mo"),
        num(4).alias("_d"),
        num(7).alias("_H"),
        num(10).alias("_M"),
        num(13).alias("_S"),
        pl.lit(None, pl.Int32).alias("_us"),
        fileinfo.str.slice(0, colon).alias(s.COMPONENT),
        body.str.slice(hend + 2).alias(s.MESSAGE),
        body.str.slice(0, hend).alias("_hdr"),
    )


def _parse_regex(df: pl.DataFrame, pattern: str, custom: bool = False) -> pl.DataFrame:
    m = pl.col("_m").struct.field
    df = extract_head(df, pattern, "_m")
    ok = m("msg").is_not_null()
    return df.with_columns(
        pl.when(ok).then(pl.lit("vllm")).alias(s.SOURCE),
        level_from_word(m("level")).alias(s.LEVEL),
        (to_i32(m("Y")) if custom else pl.lit(None, pl.Int32)).alias("_Y"),
        to_i32(m("mo")).alias("_mo"),
        to_i32(m("d")).alias("_d"),
        to_i32(m("H")).alias("_H"),
        to_i32(m("M")).alias("_M"),
        to_i32(m("S")).fill_null(0).alias("_S"),
        frac_to_us(m("ms")).alias("_us"),
        m("file").alias(s.COMPONENT),
        m("msg").alias(s.MESSAGE),
        (pl.coalesce(m("pid"), pl.col("_pid")) if custom else pl.col("_pid")).alias("_pid"),
        pl.concat_str(
            [m("level"), m("mo"), m("d"), m("H"), m("M"), m("S"), m("file"), m("lno")], separator=" ", ignore_nulls=True
        ).alias("_hdr"),
    ).drop("_m")


def split_glued(lines: list[str]) -> list[str]:
    """Split a physical line holding several glued vLLM records (rare; plain Python)."""
    import re

    rx = re.compile(GLUED_SPLIT)
    out: list[str] = []
    for line in lines:
        parts = [p for p in rx.split(line) if p]
        out.extend(parts if parts else [line])
    return out


# --- metrics --------------------------------------------------------------------
METRICS_PROBE = "Avg prompt throughput:"
_PAIRS: dict[str, tuple[str, float]] = {
    "prompt_tokens_per_s": (r"Avg prompt throughput: ([\d.]+) tokens/s", 1.0),
    "generation_tokens_per_s": (r"Avg generation throughput: ([\d.]+) tokens/s", 1.0),
    "running": (r"Running: (\d+) reqs", 1.0),
    "waiting": (r"(?:Waiting|Pending): (\d+) reqs", 1.0),
    "swapped": (r"Swapped: (\d+) reqs", 1.0),
    "deferred": (r"Deferred: (\d+) reqs", 1.0),
    "preemptions": (r"Preemptions: (\d+)", 1.0),
    "gpu_kv_cache_usage": (r"GPU KV cache usage: ([\d.]+)%", 0.01),
    "cpu_kv_cache_usage": (r"CPU KV cache usage: ([\d.]+)%", 0.01),
    "prefix_cache_hit_rate": (r"(?:^|[^l] )Prefix cache hit rate: ([\d.]+)%", 0.01),
    "external_prefix_cache_hit_rate": (r"External prefix cache hit rate: ([\d.]+)%", 0.01),
    "corrupted": (r"Corrupted: (\d+) reqs", 1.0),
}
PREFIX_V0 = r"Prefix cache hit rate: GPU: ([\d.]+)%, CPU: ([\d.]+)%"
ENGINE = r"^(?:Engine (\d+)|(\d+) Engines Aggregated):"


IN_ORDER = sorted([*_PAIRS, "cpu_prefix_cache_hit_rate"])
"""The metrics of the table, in the order a line's rows are in."""


def _scaled(raw: np.ndarray) -> np.ndarray:
    """The metric values (a row per line, `IN_ORDER` columns, NaN where none) from the raw
    numbers (columns: `_PAIRS`' metrics, then V0's `Prefix cache hit rate: GPU: x%, CPU: y%`;
    NaN where none: no number read is NaN): `%` to a fraction, V0's GPU rate filling the
    prefix hit rate V1 lines give plainly."""
    cols = {name: raw[:, k] * scale for k, (name, (_, scale)) in enumerate(_PAIRS.items())}
    v0 = len(_PAIRS)
    prefix = cols["prefix_cache_hit_rate"]
    cols["prefix_cache_hit_rate"] = np.where(np.isnan(prefix), raw[:, v0] * 0.01, prefix)
    cols["cpu_prefix_cache_hit_rate"] = raw[:, v0 + 1] * 0.01
    return np.column_stack([cols[name] for name in IN_ORDER]) if len(raw) else np.empty((0, len(IN_ORDER)))


def metrics(events: pl.DataFrame, scan: bool = True) -> pl.DataFrame:
    """Rows of the metrics table from vLLM metrics lines among `events` (any vLLM version).

    The V1 line is parsed as `Key: value` pairs rather than one rigid regex per version,
    because each release adds or drops optional parts (Deferred, Preemptions, Corrupted).
    Idle engines log this line at DEBUG only, so a gap in the series is not a dead engine.
    `scan=False` reads every line with the regexes, without compiling the scan
    (`forensics.ingestion.batches.SPEED_PASSES_MIN_CHARS`).
    """
    # Narrow first: a filter copies every column it is given, and the events are wide.
    src = events.select(s.TS, s.TS_QUALITY, s.HOST, s.POD, s.FILE, s.LINE, s.PROCESS, s.SOURCE, s.MESSAGE).filter(
        (pl.col(s.SOURCE) == "vllm")
        & (
            pl.col(s.MESSAGE).str.contains(METRICS_PROBE, literal=True)
            | pl.col(s.MESSAGE).str.starts_with("Prefix cache hit rate: GPU")
        )
    )
    if src.is_empty():
        return s.empty_metrics()
    msg = pl.col(s.MESSAGE)
    eng = msg.str.extract_groups(ENGINE)
    base = src.select(
        s.TS,
        s.TS_QUALITY,
        s.HOST,
        s.POD,
        s.FILE,
        s.LINE,
        pl.when(eng.struct.field("1").is_not_null())
        .then(eng.struct.field("1"))
        .when(eng.struct.field("2").is_not_null())
        .then(pl.lit("aggregated"))
        .otherwise(pl.col(s.PROCESS))
        .alias(s.ENGINE),
        s.MESSAGE,
    )
    # Where the compiled scan is sure (ASCII messages: all real ones), the numbers are the ones it
    # read at the spans it found; the regexes remain the definition and read the other lines
    # (and those with a number too long to read exactly by hand: at the same spans).
    matrix = np.empty((base.height, len(IN_ORDER)))
    sure = np.zeros(base.height, np.bool_)
    if scan:
        _, _, sure, value, state = metric_scan.spans(base[s.MESSAGE])
        sure &= ~(state == metric_scan.UNSURE).any(axis=1)
        matrix[sure] = _scaled(np.where(state[sure] == metric_scan.VALUE, value[sure], np.nan))
    if not sure.all():
        extract = [msg.str.extract(rx, 1).cast(pl.Float64, strict=False) for rx, _ in _PAIRS.values()]
        extract += [msg.str.extract(PREFIX_V0, g).cast(pl.Float64, strict=False) for g in (1, 2)]
        raw = base.filter(pl.Series(~sure)).select(e.alias(str(k)) for k, e in enumerate(extract)).to_numpy()
        matrix[~sure] = _scaled(raw.astype(np.float64))  # (a null reads as NaN)
    # Rows in (file, line, metric) order (the scanned lines before the others where a glued
    # line's records share a line number), sorted on ranks rather than on the strings: the
    # line's other columns are gathered once, for the values present (a line has a few of the
    # metrics; repeating its strings for every absent one cost more memory than the whole
    # table). The values are read row by row, the metrics in name order, from the matrix:
    # unpivoting them and sorting that cost more than the rest of the scan.
    at = np.concatenate([np.flatnonzero(sure), np.flatnonzero(~sure)])
    keys = base.select(_ranked(base, s.FILE), s.LINE)
    at = at[np.lexsort((keys[s.LINE].to_numpy()[at], keys[s.FILE].to_numpy()[at]))]
    matrix = matrix[at].ravel()
    present = ~np.isnan(matrix)
    values = matrix[present]
    row, metric = np.divmod(np.flatnonzero(present), len(IN_ORDER))
    long = base.select(s.TS, s.TS_QUALITY, s.HOST, s.POD, s.ENGINE, s.FILE, s.LINE)[at[row]]
    return s.conform(
        long.with_columns(pl.Series(s.METRIC, IN_ORDER).gather(metric), pl.Series(s.VALUE, values)), s.METRIC_DTYPES
    )


def _ranked(df: pl.DataFrame, column: str) -> pl.Expr:
    """`column`'s place in the sorted order of its few distinct values (a cheap sort key)."""
    rank = {v: i for i, v in enumerate(sorted(df[column].unique().drop_nulls()))}
    return pl.col(column).replace_strict(rank, default=None, return_dtype=pl.UInt32)
