"""SGLang's server lines, and the metrics in its scheduler's batch lines.

SGLang logs with `[%(asctime)s{prefix}] %(message)s` (`datefmt="%Y-%m-%d %H:%M:%S"`), the prefix
naming the scheduler's ranks (` TP0`, ` DP1 TP0`, ` PP0 TP1`; none in the main process)::

    [2025-03-01 06:21:44 TP0] Decode batch. #running-req: 8, #token: 48211, token usage: 0.12, gen throughput (token/s): 171.25, #queue-req: 0
    [2026-01-14 11:40:11 TP0] Prefill batch, #new-seq: 1, #new-token: 214, #cached-token: 0, token usage: 0.08, #running-req: 31, #queue-req: 0, cuda graph: True, input throughput (token/s): 611.04
    [2026-01-14 11:40:11] INFO:     127.0.0.1:38411 - "POST /v1/chat/completions HTTP/1.1" 200 OK
    [2025-03-02 08:07:03 TP1] Scheduler hit an exception: Traceback (most recent call last):
    [05:12:07 TP0] Decode batch. #running-req: 2, ...                   # 2024 releases: no date

The format has no level (an SGLang line has none: null, not a guess) and no zone (`--tz`); a line
without its date has no time of its own (it inherits one, as an untimed line does). uvicorn's
lines come through the same format and are uvicorn's events. A line of the main process with
no rank is SGLang's when it is a batch or uvicorn line; any other (`[2025-03-02 08:00:00] The
server is fired up`) is the generic Python-logging line it looks like (`parsers.pylog`).
"""

from __future__ import annotations

import polars as pl

from parsers import schema as s
from parsers import uvicorn
from parsers._common import apply, extract_head, time_parts
from parsers.frame import TIME_PARTS

RANKS = r"(?: (?:DP|TP|PP|EP|CP)\d+)"
BATCH = r"(?:Decode|Prefill) batch[.,] "
"""The scheduler's batch lines (`.` before 2026, `,` after), logged every few dozen steps while
it schedules; the metrics are in them."""
DETECT = rf"^\[(?:\d{{4}}-\d{{2}}-\d{{2}} )?\d{{2}}:\d{{2}}:\d{{2}}(?:{RANKS}+\] |\] (?:{BATCH}|{uvicorn.DETECT[1:]}))"
PATTERN = (
    r"^\[(?:(?P<Y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2}) )?(?P<H>\d{2}):(?P<M>\d{2}):(?P<S>\d{2})"
    rf"(?P<ranks>{RANKS}*)\] (?P<msg>.*)$"
)


def parse(df: pl.DataFrame) -> pl.DataFrame:
    """Parse rows whose `body` is an SGLang line: source `sglang` (uvicorn's lines `uvicorn`),
    the ranks as the process (`DP1 TP0`), the TP rank as the rank where it is the only one."""
    df = extract_head(df, PATTERN, "_m")
    m = pl.col("_m").struct.field
    ranks = m("ranks").str.strip_chars_start(" ")
    dated = m("mo").is_not_null()
    df = df.with_columns(
        pl.when(m("msg").is_not_null()).then(pl.lit("sglang")).alias(s.SOURCE),
        m("msg").alias(s.MESSAGE),
        pl.when(ranks != "").then(ranks).otherwise(pl.col(s.PROCESS)).alias(s.PROCESS),
        pl.coalesce(ranks.str.extract(r"^TP(\d+)$", 1), pl.col("_rank")).alias("_rank"),
        # (to the second: no fraction; a line without its date has no time of its own)
        *time_parts(lambda g: pl.when(dated).then(m(g)) if g != "frac" else pl.lit(None, pl.String)),
    ).drop("_m")
    return apply(df, pl.col(s.MESSAGE).str.contains(uvicorn.DETECT), _uvicorn)


def _uvicorn(d: pl.DataFrame) -> pl.DataFrame:
    """uvicorn's line through SGLang's format: uvicorn's event, at SGLang's time (uvicorn's own
    lines have none; its parser may reorder rows, so the time rides along under other names)."""
    kept = {c: f"_sglang{c}" for c in TIME_PARTS}
    parsed = uvicorn.parse(d.rename(kept).with_columns(pl.col(s.MESSAGE).alias("body")))
    return parsed.drop(TIME_PARTS).rename({v: k for k, v in kept.items()})


METRICS = {
    "generation_tokens_per_s": r"gen throughput \(token/s\): ([\d.]+)",
    "prompt_tokens_per_s": r"input throughput \(token/s\): ([\d.]+)",
    "running": r"#running-req: (\d+)",
    "waiting": r"#queue-req: (\d+)",
    "gpu_kv_cache_usage": r"(?:^|, )(?:full )?token usage: ([\d.]+)",
}
"""The metrics table's names for a batch line's numbers: `token usage` is the KV pool's used
fraction (0-1 already; with a sliding-window pool too, the full-attention pool's `full token
usage`), `#queue-req` the requests waiting. `#token` (tokens held) has no vLLM counterpart."""


def metrics(events: pl.DataFrame) -> pl.DataFrame:
    """Rows of the metrics table from SGLang's batch lines among `events`, keyed by pod and by
    the scheduler's ranks (the engine: `TP0`, `DP1 TP0`), in (file, line, metric) order."""
    # Narrow first: a filter copies every column it is given, and the events are wide.
    columns = (s.TS, s.TS_QUALITY, s.HOST, s.POD, s.FILE, s.LINE, s.PROCESS, s.MESSAGE)
    lines = events.select(*columns, s.SOURCE).filter(pl.col(s.SOURCE) == "sglang").drop(s.SOURCE)
    lines = lines.filter(pl.col(s.MESSAGE).str.contains(f"^{BATCH}"))
    if lines.is_empty():
        return s.empty_metrics()
    values = lines.select(
        s.TS,
        s.TS_QUALITY,
        s.HOST,
        s.POD,
        pl.col(s.PROCESS).cast(pl.String).alias(s.ENGINE),
        s.FILE,
        s.LINE,
        *(
            pl.col(s.MESSAGE).str.extract(rx, 1).cast(pl.Float64, strict=False).alias(name)
            for name, rx in METRICS.items()
        ),
    )
    long = values.unpivot(
        index=[s.TS, s.TS_QUALITY, s.HOST, s.POD, s.ENGINE, s.FILE, s.LINE],
        on=list(METRICS),
        variable_name=s.METRIC,
        value_name=s.VALUE,
    ).filter(pl.col(s.VALUE).is_not_null())
    return s.conform(long.sort(s.FILE, s.LINE, s.METRIC), s.METRIC_DTYPES)
