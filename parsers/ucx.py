"""UCX log lines: the transport under NIXL (vLLM's prefill/decode KV transfer) and MPI.

    [1653901933.475958] [gpu02:5215 :0]            sock.c:325  UCX  ERROR   connect(fd=40, ...) failed: ...
    [1772618403.123456] [vllm-decode-0:41:1]   ib_mlx5_log.c:171  UCX  ERROR   Transport retry count exceeded on mlx5_0:1/IB
    mm_posix.c:195  UCX  ERROR open(file_name=/proc/211766/fd/28 flags=0x0) failed: Permission denied
    [cn0001:3639441:0:3639441] ib_mlx5_log.c:171  Transport retry count exceeded on mlx5_0:1/IB (synd 0x15 ...)
    [gpu-node-3:371163:0:371172] Caught signal 11 (Segmentation fault: address not mapped to object at address (nil))

UCX writes `[epoch.us] [host:pid:thread] file:line UCX LEVEL message` (the pid padded to a
width), the same without the stamp where a wrapper cut it, and `[host:pid:thread:tid]
file:line message` from its fatal-error handler (no level: an error), which also reports a
signal that killed the process, with no file and line (`Caught signal 11 (...)`, its backtrace
below it: `continuation`). The stamp is seconds
since the epoch, so the time is exact (UTC) where no outer stamp gave one; `host` is the
hostname, a pod's name in Kubernetes, as NCCL's. (Its ten digits also tell it from a
`dmesg` stamp, which counts seconds since boot: `wrappers.DMESG_PROBE`.)
"""

from __future__ import annotations

import polars as pl

from parsers import schema as s
from parsers._common import extract_head, level_from_word, no_time

_LEVELS = r"FATAL|ERROR|WARN|DIAG|INFO|DEBUG|TRACE|PRINT|REQ|DATA|ASYNC|FUNC|POLL"
DETECT = (
    r"^(?:\[\d{10}\.\d{6}\] +)?\[[^\s:\]]+: *\d+ *:\d+(?::\d+)?\] +[\w.\-]+:\d+ "
    rf"|^ *[\w.\-]+\.c:\d+ +UCX +(?:{_LEVELS}) "
    r"|^\[[^\s:\]]+:\d+:\d+:\d+\] Caught signal \d+ \("
)
PATTERN = (
    r"^(?:\[(?P<sec>\d{10})\.(?P<us>\d{6})\] +)?(?:\[(?P<host>[^\s:\]]+): *(?P<pid>\d+) *:\d+(?::\d+)?\] +)?"
    rf" *(?P<file>[\w.\-]+):(?P<lno>\d+) +(?:UCX +(?P<level>{_LEVELS}) +)?(?P<msg>.*)$"
)
SIGNAL = r"^\[(?P<host>[^\s:\]]+):(?P<pid>\d+):\d+:\d+\] (?P<caught>Caught signal \d+ \()(?P<rest>.*)$"
"""The fatal-error handler's word of the signal that killed the process (no file and line)."""
LEVEL_WORDS = {
    "FATAL": "CRITICAL",
    "ERROR": "ERROR",
    "WARN": "WARNING",
    "DIAG": "INFO",
    "INFO": "INFO",
    "PRINT": "INFO",
    **{w: "DEBUG" for w in ("DEBUG", "TRACE", "REQ", "DATA", "ASYNC", "FUNC", "POLL")},
}


def parse(df: pl.DataFrame) -> pl.DataFrame:
    """Parse UCX lines; a line of the fatal-error handler (no level word) is an error."""
    m, g = pl.col("_m").struct.field, pl.col("_g").struct.field
    df = extract_head(extract_head(df, PATTERN, "_m"), SIGNAL, "_g")
    stamp = (m("sec").cast(pl.Int64) * 1_000_000 + m("us").cast(pl.Int64)).cast(pl.Datetime("us", "UTC"))
    msg = pl.coalesce(m("msg"), pl.concat_str(g("caught"), g("rest")))
    return df.with_columns(
        pl.when(msg.is_not_null()).then(pl.lit("ucx")).alias(s.SOURCE),
        pl.coalesce(level_from_word(m("level"), LEVEL_WORDS), pl.lit("ERROR")).alias(s.LEVEL),
        pl.coalesce(pl.col("_outer_ts"), stamp).alias("_outer_ts"),
        pl.coalesce(m("host"), g("host"), pl.col(s.HOST)).alias(s.HOST),
        pl.coalesce(m("pid"), g("pid"), pl.col("_pid")).alias("_pid"),
        m("file").alias(s.COMPONENT),
        msg.str.strip_chars_end().alias(s.MESSAGE),
        *no_time(),
    ).drop("_m", "_g")
