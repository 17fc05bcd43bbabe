"""Ray Serve's own lines: its controller's, its proxy's and each replica's, access lines among them.

Serve's text format is `%(levelname)s %(asctime)s`, then its context, then the message after
` -- ` (Ray 2.40 and later) or after the file and line (`file.py:N - `, before)::

    INFO 2024-11-21 09:14:27,318 default_A k2m9q4tz 5b0e7c21-3d4f-4a1b-9c2e-7f6a8d9e0b13 -- GET / 200 4.1ms
    INFO 2024-11-21 09:14:26,902 default_D p7d3x1rw 8e2f4a61-0c3b-47d9-a5e8-2b1c9d7f3e05 -- CALL method OK 1.3ms
    INFO 2024-12-12 07:41:03,556 controller 51834 -- Replica(id='r8t2wq5n', deployment='api', app='default') started ...
    WARNING 2023-03-11 16:22:40,715 controller 812 deployment_state.py:1498 - Replica D#Kq3VzN ... failed health check

The context's first word is the component (`controller`, `proxy`, `serve` for a handle's router,
or an application's deployment, `default_A`), the next the process (a pid, or the replica's id),
the next the request id. Serve's replicas write vLLM's own lines too, behind Ray's process prefix
(`(ServeReplica:default:VLLMDeployment pid=1234) INFO 03-02 ...`: `wrappers.PROCESS_NAME`).
The time is local, without zone (`--tz`).
"""

from __future__ import annotations

import polars as pl

from parsers import schema as s
from parsers._common import extract_head, level_from_word, time_parts, to_i32

DETECT = r"^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3} \S+ "
PATTERN = (
    r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<Y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2}) "
    r"(?P<H>\d{2}):(?P<M>\d{2}):(?P<S>\d{2}),(?P<frac>\d{3}) (?P<ctx>\S+(?: \S+)*?) "
    r"(?:-- |(?P<file>[\w./\-]+\.py):\d+ - )(?P<msg>.*)$"
)
ACCESS = r"^(?P<method>GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) (?P<path>\S+) (?P<status>\d{3}) [\d.]+ms$"
"""A replica's or the proxy's access line: `POST /v1/chat/completions 200 1532.4ms` (a handle's
`CALL method OK 1.3ms` is no HTTP request)."""


def parse(df: pl.DataFrame) -> pl.DataFrame:
    """Parse rows whose `body` is a Ray Serve line (source `ray`); other rows get null `source`."""
    df = extract_head(df, PATTERN, "_m")
    m = pl.col("_m").struct.field
    ctx = m("ctx").str.split(" ")
    second = ctx.list.get(1, null_on_oob=True)
    access = m("msg").str.extract_groups(ACCESS).struct.field
    return df.with_columns(
        pl.when(m("msg").is_not_null()).then(pl.lit("ray")).alias(s.SOURCE),
        level_from_word(m("level")).alias(s.LEVEL),
        *time_parts(m),
        ctx.list.get(0, null_on_oob=True).alias(s.COMPONENT),
        pl.when(second.str.contains(r"^\d+$")).then(second).otherwise(pl.col("_pid")).alias("_pid"),
        pl.when(~second.str.contains(r"^\d+$")).then(second).otherwise(pl.col(s.PROCESS)).alias(s.PROCESS),
        ctx.list.get(2, null_on_oob=True).alias(s.REQUEST_ID),
        access("method").alias(s.HTTP_METHOD),
        access("path").alias(s.HTTP_PATH),
        to_i32(access("status")).alias(s.HTTP_STATUS),
        m("msg").alias(s.MESSAGE),
    ).drop("_m")
