"""NCCL debug output (`NCCL_DEBUG=INFO|WARN|TRACE`), all layouts from 2.18 to 2.30.

    host:pid:tid [dev] NCCL INFO ...                                   # INFO: no time
    host:pid:tid [dev] transport/net_ib.cc:1295 NCCL WARN NET/IB : ... # WARN <= 2.25
    [2025-04-01 12:34:56] host:pid:tid [dev] misc/socket.cc:49 NCCL WARN ...  # >= 2.26
    host:pid:tid [dev] misc/socket.cc:49 (socketProgress) NCCL WARN ...        # >= 2.30.7
    host:pid:tid [dev] NCCL INFO transport/net.cc:1302 -> 6 [Proxy Thread]    # propagation

`host` is the short hostname (a pod name in Kubernetes), `[dev]` the CUDA device.
The `-> N` propagation lines carry an ncclResult_t, named with `schema.NCCL_RESULT_NAMES`.

Also the `ncclras` client's report (NCCL >= 2.24; src/ras/client_support.cc), saved beside
the logs: each block of its Errors and Warnings sections is one event, its indented lines
folded in (the processes and ranks it names):

    DEAD
      1 job process is considered dead (unreachable via the RAS network)
      Process 41377 on node gpu-node-3 managing GPU 5
    #0-0 (9a3c5e1f00d2b417) MISMATCH
      Communicator ranks have different AllReduce operation counts
      7 ranks have launched up to operation 4182
      Rank 5 has launched up to operation 4181 -- GPU 5 managed by process 41377 on node gpu-node-3
"""

from __future__ import annotations

import polars as pl

from parsers import schema as s
from parsers._common import apply, extract_head, level_from_word, no_time, time_parts, to_i32

DETECT = r" NCCL (?:INFO|WARN|TRACE|CALL) |^NCCL version "
PATTERN = (
    r"^(?:\[(?P<Y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})[ _](?P<H>\d{2}):(?P<M>\d{2}):(?P<S>\d{2})(?:\.(?P<frac>\d+))?\] ?)?"
    r"(?:\[\d+\] )?(?P<host>[^\s:\[\]]+):(?P<pid>\d+):(?P<tid>\d+) (?:\[(?P<dev>\d+)\] )?"
    r"(?:(?P<elapsed>\d+\.\d+) )?(?:(?P<file>[^\s:]+):(?P<lno>\d+) (?:\((?P<func>[^)]*)\) )?)?"
    r"NCCL (?P<level>INFO|WARN|TRACE|CALL) ?(?P<msg>.*)$"
)
VERSION = r"^NCCL version (?P<msg>\S+.*)$"
PROPAGATE = r"^(?P<file>[\w./\-]+):(?P<lno>\d+) -> (?P<code>\d+)"


DETECT_RAS = r"^(?:INCOMPLETE|DEAD|TIMEOUT|#\d+-\d+ \([0-9a-f]+\) (?:INCOMPLETE|ERROR|MISMATCH))\s*$"
"""The head of a block of an `ncclras` report's Errors / Warnings sections."""
RAS_COMPONENT = "ras"

FAST = r"^[^\s:\[\]]+:\d+:\d+ \[\d+\] NCCL INFO "
"""INFO lines without time or file (the bulk of NCCL_DEBUG=INFO output), parsed positionally."""


def parse(df: pl.DataFrame) -> pl.DataFrame:
    """Parse NCCL lines; propagation lines get `nccl_code` and its name."""
    fast = df.select(pl.col("body").str.contains(FAST)).to_series()
    if fast.all():
        out = _parse_fast(df)
    elif not fast.any():
        out = _parse_regex(df)
    else:
        out = pl.concat([_parse_fast(df.filter(fast)), _parse_regex(df.filter(~fast))], how="diagonal_relaxed")
    return apply(out, pl.col(s.MESSAGE).str.contains(" -> ", literal=True), _propagation)


def _parse_fast(df: pl.DataFrame) -> pl.DataFrame:
    body = pl.col("body")
    sp = body.str.find(" ", literal=True)
    ids = body.str.slice(0, sp).str.splitn(":", 3)
    close = body.str.find("] ", literal=True)
    return df.with_columns(
        pl.lit("nccl").alias(s.SOURCE),
        pl.lit("INFO").alias(s.LEVEL),
        *no_time(),
        ids.struct.field("field_0").alias(s.HOST),
        ids.struct.field("field_1").alias("_pid"),
        body.str.slice(sp + 2, close - sp - 2).cast(pl.Int32, strict=False).alias(s.CUDA_DEV),
        pl.lit(None, pl.String).alias(s.COMPONENT),
        body.str.slice(close + 12).alias(s.MESSAGE),
    )


def _parse_regex(df: pl.DataFrame) -> pl.DataFrame:
    m = pl.col("_m").struct.field
    df = extract_head(df, PATTERN, "_m")
    ver = pl.col("body").str.extract(VERSION, 1)
    ok = m("msg").is_not_null() | ver.is_not_null()
    return df.with_columns(
        pl.when(ok).then(pl.lit("nccl")).alias(s.SOURCE),
        pl.coalesce(level_from_word(m("level")), pl.when(ver.is_not_null()).then(pl.lit("INFO"))).alias(s.LEVEL),
        *time_parts(m),
        pl.coalesce(m("host"), pl.col(s.HOST)).alias(s.HOST),
        pl.coalesce(m("pid"), pl.col("_pid")).alias("_pid"),
        to_i32(m("dev")).alias(s.CUDA_DEV),
        m("file").alias(s.COMPONENT),
        pl.coalesce(m("msg"), pl.concat_str([pl.lit("NCCL version "), ver])).alias(s.MESSAGE),
    ).drop("_m")


def _propagation(d: pl.DataFrame) -> pl.DataFrame:
    p = pl.col(s.MESSAGE).str.extract_groups(PROPAGATE)
    code = p.struct.field("code").cast(pl.Int32, strict=False)
    return d.with_columns(
        code.alias(s.NCCL_CODE),
        code.replace_strict(s.NCCL_RESULT_NAMES, default=None, return_dtype=pl.String).alias(s.NCCL_CODE_NAME),
        pl.coalesce(pl.col(s.COMPONENT), p.struct.field("file")).alias(s.COMPONENT),
    )


def parse_ras(df: pl.DataFrame) -> pl.DataFrame:
    """The head of an `ncclras` report's block: no time (the report prints none); errors
    (dead, silent or failing processes) at ERROR, warnings (timeouts, mismatches) at WARNING."""
    head = pl.col("body").str.strip_chars()
    return df.with_columns(
        pl.lit("nccl").alias(s.SOURCE),
        pl.when(head.str.contains(r"(?:DEAD|INCOMPLETE|ERROR)$"))
        .then(pl.lit("ERROR"))
        .otherwise(pl.lit("WARNING"))
        .alias(s.LEVEL),
        pl.lit(RAS_COMPONENT).alias(s.COMPONENT),
        head.alias(s.MESSAGE),
        *no_time(),
    )
