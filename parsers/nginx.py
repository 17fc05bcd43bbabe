"""nginx's lines: the ingress in front of the vLLM pods (ingress-nginx's controller, plain nginx).

    10.0.0.7 - - [07/Mar/2024:10:00:05 +0000] "POST /v1/chat/completions HTTP/1.1" 502 150 "-" "httpx" 812 0.004 [serving-vllm-8000] [] 10.1.2.3:8000 0 0.004 502 6f1c
    2024/03/07 10:00:05 [error] 31#31: *1234 connect() failed (111: Connection refused) while connecting to upstream, client: 10.0.0.7, ...

An access line (the combined format, and ingress-nginx's `upstreaminfo`, which adds the
upstream's address, time and status) has a full time with its offset: exact. It becomes an
access record as uvicorn's and Envoy's do (method, path, status), its message without the
time, so that one request kind mines to one template. An error-log line has a local time
without a zone (`--tz`), a level, the worker's pid and the connection's serial (`*1234`,
dropped). Why read them: the ingress answers what the pods cannot (a 502 or 503 when none
is listening), and its error log says why in its own words (`connect() failed`, `no live
upstreams`, `upstream timed out`).
"""

from __future__ import annotations

import polars as pl

from parsers import schema as s
from parsers._common import SYSLOG_LEVEL_WORDS, extract_head, level_from_word, no_time, to_i32
from parsers.envoy import COMPONENT
from parsers.wrappers import MONTHS, parse_rfc3339

DETECT_ACCESS = r'^\S+ - \S+ \[\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4}\] "'
ACCESS = (
    r"^(?P<client>\S+) - \S+ \[(?P<d>\d{2})/(?P<mon>[A-Z][a-z]{2})/(?P<Y>\d{4}):(?P<hms>\d{2}:\d{2}:\d{2}) "
    r'(?P<off>[+-]\d{4})\] "(?P<method>[A-Z]+) (?P<path>\S+)(?: HTTP/[\d.]+)?" (?P<status>\d{3})(?P<rest>.*)$'
)
DETECT_ERROR = r"^\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2} \[(?:emerg|alert|crit|error|warn|notice|info|debug)\] \d+#\d+: "
ERROR = (
    r"^(?P<Y>\d{4})/(?P<mo>\d{2})/(?P<d>\d{2}) (?P<H>\d{2}):(?P<M>\d{2}):(?P<S>\d{2}) \[(?P<level>[a-z]+)\] "
    r"(?P<pid>\d+)#\d+: (?:\*\d+ )?(?P<msg>.*)$"
)


def parse_access(df: pl.DataFrame) -> pl.DataFrame:
    """Access lines: exact time, method, path, status; the message is the line without its time."""
    df = extract_head(df, ACCESS, "_m")
    m = pl.col("_m").struct.field
    month = m("mon").replace_strict(MONTHS, default=None, return_dtype=pl.String).str.zfill(2)
    stamp = pl.concat_str(m("Y"), pl.lit("-"), month, pl.lit("-"), m("d"), pl.lit("T"), m("hms"), m("off"))
    request = pl.concat_str(m("method"), pl.lit(" "), m("path"))
    return df.with_columns(
        pl.when(m("status").is_not_null()).then(pl.lit("nginx")).alias(s.SOURCE),
        pl.lit("INFO").alias(s.LEVEL),
        pl.coalesce(pl.col("_outer_ts"), parse_rfc3339(stamp)).alias("_outer_ts"),
        m("method").alias(s.HTTP_METHOD),
        m("path").alias(s.HTTP_PATH),
        m("status").cast(pl.Int32, strict=False).alias(s.HTTP_STATUS),
        pl.lit(COMPONENT).alias(s.COMPONENT),
        pl.concat_str(m("client"), pl.lit(' - "'), request, pl.lit('" '), m("status"), m("rest")).alias(s.MESSAGE),
        *no_time(),
    ).drop("_m")


def parse_error(df: pl.DataFrame) -> pl.DataFrame:
    """Error-log lines: local time, level, pid, the message without the connection's serial."""
    df = extract_head(df, ERROR, "_m")
    m = pl.col("_m").struct.field
    return df.with_columns(
        pl.when(m("level").is_not_null()).then(pl.lit("nginx")).alias(s.SOURCE),
        level_from_word(m("level"), SYSLOG_LEVEL_WORDS).alias(s.LEVEL),
        m("pid").alias("_pid"),
        pl.lit("nginx").alias(s.COMPONENT),
        m("msg").alias(s.MESSAGE),
        *(to_i32(m(p)).alias(f"_{p}") for p in ("Y", "mo", "d", "H", "M", "S")),
        pl.lit(None, pl.Int32).alias("_us"),
    ).drop("_m")
