"""uvicorn lines inside vLLM's API server: access lines and its own status lines.

    INFO:     127.0.0.1:41774 - "POST /v1/chat/completions HTTP/1.1" 200 OK
    INFO:     Application startup complete.

Neither carries a timestamp or pid; the time is inherited from the previous timed line.
"""

from __future__ import annotations

import polars as pl

from forensics import schema as s
from parsers._common import level_from_word, no_time

DETECT = r"^(?:INFO|WARNING|ERROR|DEBUG|CRITICAL|TRACE): "
PATTERN = r"^(?P<level>INFO|WARNING|ERROR|DEBUG|CRITICAL|TRACE): +(?P<msg>.*)$"
ACCESS = r'^(?P<client>\S*) - "(?P<method>[A-Z]+) (?P<path>\S+) HTTP/[\d.]+" (?P<status>\d{3})\b'


def parse(df: pl.DataFrame) -> pl.DataFrame:
    """Parse uvicorn lines; access lines get method, path and status."""
    m = pl.col("_m").struct.field
    df = df.with_columns(pl.col("body").str.extract_groups(PATTERN).alias("_m"))
    df = df.with_columns(
        pl.when(m("msg").is_not_null()).then(pl.lit("uvicorn")).alias(s.SOURCE),
        level_from_word(m("level")).alias(s.LEVEL),
        m("msg").alias(s.MESSAGE),
        *no_time(),
    ).drop("_m")
    a = pl.col(s.MESSAGE).str.extract_groups(ACCESS)
    return df.with_columns(
        a.struct.field("method").alias(s.HTTP_METHOD),
        a.struct.field("path").alias(s.HTTP_PATH),
        a.struct.field("status").cast(pl.Int32, strict=False).alias(s.HTTP_STATUS),
        pl.when(a.struct.field("method").is_not_null()).then(pl.lit("access")).alias(s.COMPONENT),
    )
