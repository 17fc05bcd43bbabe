"""uvicorn lines inside vLLM's API server: access lines and its own status lines.

    INFO:     127.0.0.1:50312 - "POST /v1/chat/completions HTTP/1.1" 200 OK
    INFO:     Application startup complete.

Neither carries a timestamp or pid; the time is inherited from the previous timed line.
"""

from __future__ import annotations

import polars as pl

from parsers import schema as s
from parsers._common import apply, level_from_word, no_time

DETECT = r"^(?:INFO|WARNING|ERROR|DEBUG|CRITICAL|TRACE): "
PATTERN = r"^(?P<level>INFO|WARNING|ERROR|DEBUG|CRITICAL|TRACE): +(?P<msg>.*)$"
ACCESS = r'^(?:(?P<client>\S+) )?- "(?P<method>[A-Z]+) (?P<path>\S+) HTTP/[\d.]+" (?P<status>\d{3})\b'
"""An access line's message (its level word and padding stripped). The client is optional: uvicorn
writes an empty `client_addr` (a unix socket, some proxies) as `INFO:      - "GET / HTTP/1.1" 200 OK`."""

ACCESS_PROBE = r'^(?:\S+ )?- "[A-Z]+ \S+ HTTP/[\d.]+" \d{3}'


def parse(df: pl.DataFrame) -> pl.DataFrame:
    """Parse uvicorn lines positionally; access lines get method, path and status."""
    body = pl.col("body")
    colon = body.str.find(":", literal=True)
    df = df.with_columns(
        pl.lit("uvicorn").alias(s.SOURCE),
        level_from_word(body.str.slice(0, colon)).alias(s.LEVEL),
        body.str.slice(colon + 1).str.strip_chars_start(" ").alias(s.MESSAGE),
        *no_time(),
    )
    return apply(df, pl.col(s.MESSAGE).str.contains(ACCESS_PROBE), access)


def access(d: pl.DataFrame) -> pl.DataFrame:
    msg = pl.col(s.MESSAGE)
    # Split at the quotes rather than slice at `str.find` offsets: find counts bytes and slice
    # characters, and a path or client name may hold non-ASCII text.
    quoted = msg.str.splitn(' "', 2).struct.field("field_1").str.splitn('" ', 2)
    request = quoted.struct.field("field_0").str.splitn(" ", 3)
    return d.with_columns(
        request.struct.field("field_0").alias(s.HTTP_METHOD),
        request.struct.field("field_1").alias(s.HTTP_PATH),
        quoted.struct.field("field_1").str.slice(0, 3).cast(pl.Int32, strict=False).alias(s.HTTP_STATUS),
        pl.lit("access").alias(s.COMPONENT),
    )
