"""PyTorch c10 / ProcessGroupNCCL log lines and the watchdog fields inside them, and the
findings of the flight recorder's analyser (`torchfrtrace` / `fr_trace.py`).

    [rank3]:[E1012 22:31:22.267261276 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught ...
    [E ProcessGroupNCCL.cpp:475] [Rank 4] Watchdog caught ...                 # torch <= 2.3
    [I ProcessGroupNCCL.cpp:850] [Rank 5] NCCL watchdog thread started!
    Not all ranks joining collective 5 at entry 4                             # torchfrtrace
    missing ranks: {1}

A finding's detail lines (`group info:`, `collective:`, `missing ranks:`, `error msg: Culprit
rank 2; ...`, the stack) fold into it: its head opens a block (`parsers.lines._fold`).

MMDD is an unpadded integer (3 digits Jan-Sep, 4 Oct-Dec); the 9-digit fraction is
CLOCK_MONOTONIC nanoseconds, *not* the wall clock's sub-second, so it is not used as time.
The `[rankN]:` prefix has already been peeled into `_rank` by `parsers.wrappers`.
"""

from __future__ import annotations

import polars as pl

from parsers import schema as s
from parsers._common import extract_head, level_from_letter, no_time, to_i32, to_i64

DETECT = r"^\s?\[[FEWIV](?:\d{3,4} \d{2}:\d{2}:\d{2}\.\d+)? [\w.\-]+:\d+\] "
PATTERN = (
    r"^\s?\[(?P<sev>[FEWIV])(?:(?P<mmdd>\d{3,4}) (?P<H>\d{2}):(?P<M>\d{2}):(?P<S>\d{2})\.\d+)? "
    r"(?P<file>[\w.\-]+):(?P<lno>\d+)\] ?(?P<msg>.*)$"
)
WATCHDOG = (
    r"Watchdog caught collective operation timeout: WorkNCCL\((?:SeqNum=(?P<seq>\d+), )?OpType=(?P<op>\w+)"
    r"(?:, NumelIn=\d+, NumelOut=\d+)?(?:, TensorShape=\[[^\]]*\])?, "
    r"Timeout\(ms\)=(?P<timeout>\d+)\)(?: ran for (?P<ran>\d+) milliseconds)?"
)
DETECT_FLIGHT = (
    r"^\s*(?:Not all ranks joining collective\b|Collective sequence number: \d+ has errors|"
    r"Collective \d+ at entry \d+ errors|Input/output mismatch in the collective\b)"
)
"""A finding's first line, in each torchfrtrace generation (torch 2.4-2.9)."""
FLIGHT_COMPONENT = "flight_recorder"
"""The `component` of a finding's event (`forensics.diagnosis.collectives.flight_findings` reads them)."""
FLIGHT_SEQ = r"(?:collective,? (?:sequence number: )?|sequence number: |^Collective )(\d+)"
PG_PREFIX = (
    r"\[(?:PG (?:ID )?(?P<pg>\d+)(?: PG GUID (?P<guid>[^\s(\]]+))?(?: ?\((?P<desc>[^)]*)\))? )?Rank (?P<rank>\d+)\]"
)


def parse(df: pl.DataFrame) -> pl.DataFrame:
    """Parse c10 lines; adds rank (from the line), pg, and watchdog collective fields."""
    m = pl.col("_m").struct.field
    df = extract_head(df, PATTERN, "_m")
    mmdd = to_i32(m("mmdd"))
    df = df.with_columns(
        pl.when(m("msg").is_not_null()).then(pl.lit("torch")).alias(s.SOURCE),
        level_from_letter(m("sev")).alias(s.LEVEL),
        pl.lit(None, pl.Int32).alias("_Y"),
        (mmdd // 100).alias("_mo"),
        (mmdd % 100).alias("_d"),
        to_i32(m("H")).alias("_H"),
        to_i32(m("M")).alias("_M"),
        to_i32(m("S")).alias("_S"),
        pl.lit(None, pl.Int32).alias("_us"),
        m("file").alias(s.COMPONENT),
        m("msg").alias(s.MESSAGE),
    ).drop("_m")
    return df.with_columns(collective_fields(pl.col(s.MESSAGE)))


def collective_fields(msg: pl.Expr) -> list[pl.Expr]:
    """Watchdog and PG-prefix fields of a c10d message (any torch generation)."""
    w = msg.str.extract_groups(WATCHDOG)
    pg = msg.str.extract_groups(PG_PREFIX)
    return [
        w.struct.field("op").alias(s.COLL_OP),
        to_i64(w.struct.field("seq")).alias(s.COLL_SEQ),
        to_i64(w.struct.field("timeout")).alias(s.COLL_TIMEOUT_MS),
        to_i64(w.struct.field("ran")).alias(s.COLL_RAN_MS),
        pg.struct.field("pg").alias(s.PG),
        to_i32(pg.struct.field("rank")).alias("_line_rank"),
    ]


def parse_flight(df: pl.DataFrame) -> pl.DataFrame:
    """A flight-recorder finding's first line: no time (the analyser prints none), the
    collective's sequence number where the line gives it."""
    msg = pl.col("body").str.strip_chars()
    return df.with_columns(
        pl.lit("torch").alias(s.SOURCE),
        pl.lit("WARNING").alias(s.LEVEL),
        pl.lit(FLIGHT_COMPONENT).alias(s.COMPONENT),
        msg.alias(s.MESSAGE),
        to_i64(msg.str.extract(FLIGHT_SEQ, 1)).alias(s.COLL_SEQ),
        *no_time(),
    )
