"""Column names, dtypes and vocabularies of the tables every stage exchanges.

The lowest layer of the pipeline: parsers write these tables, so the contract lives beside them
and imports nothing from `forensics` (`forensics.schema` re-exports it with the analysis'
vocabularies).

Every stage imports names from here; no module spells a bare column string. The
events table has one row per log *event* (a physical line, or a header line with
the continuation lines folded into it); the metrics table has one row per
(metric, sample). Both are sorted by (file, line) when ingest returns them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final, Literal

import polars as pl

__all__ = [
    "COLL_OP",
    "COLL_RAN_MS",
    "COLL_SEQ",
    "COLL_TIMEOUT_MS",
    "COMPONENT",
    "CONTAINER",
    "CUDA_DEV",
    "ENGINE",
    "EVENT_COLUMNS",
    "EVENT_DTYPES",
    "FILE",
    "HOST",
    "HTTP_METHOD",
    "HTTP_PATH",
    "HTTP_STATUS",
    "K8S_COUNT",
    "K8S_OBJECT",
    "K8S_REASON",
    "K8S_TYPE",
    "LEVEL",
    "LEVELS",
    "LINE",
    "Level",
    "MESSAGE",
    "METRIC",
    "METRIC_COLUMNS",
    "METRIC_DTYPES",
    "METRIC_NAMES",
    "MetricName",
    "NAMESPACE",
    "NCCL_CODE",
    "NCCL_CODE_NAME",
    "NCCL_RESULT_NAMES",
    "NODE_SOURCES",
    "PG",
    "PID",
    "POD",
    "PROCESS",
    "RANK",
    "RAW_LINES",
    "REPEATED_STRINGS",
    "REQUEST_ID",
    "SCHEMA_VERSION",
    "SNAPSHOT_SOURCES",
    "SOURCE",
    "SOURCES",
    "STREAM",
    "Source",
    "TS",
    "TS_QUALITIES",
    "TS_QUALITY",
    "TS_RANGE",
    "TsQuality",
    "VALUE",
    "conform",
    "empty_events",
    "empty_metrics",
]

SCHEMA_VERSION: Final = 1
"""Bumped when a column is renamed, removed or changes meaning."""

# --- events -----------------------------------------------------------------
TS: Final = "ts"
"""UTC timestamp, microseconds. Null when the line had no time and nothing to inherit from."""
TS_QUALITY: Final = "ts_quality"
"""How `ts` was obtained: one of `TsQuality`."""
TS_RANGE: Final = (datetime(1970, 1, 1, tzinfo=UTC), datetime(2200, 1, 1, tzinfo=UTC))
"""The times an event may have, `[start, end)`. A stamp outside is no time (a Go zero time
`0001-01-01T00:00:00Z`, a clock set to year 9999, a mangled line): the line inherits its
neighbour's, as an untimed line does. Python's datetime ends with year 9999, and a median or an
offset of a time near it overflowed: one such line failed a whole run. (A node whose clock
was reset says 1970, which is kept: that is evidence.)"""
SOURCE: Final = "source"
"""Producer of the line: one of `Source`."""
LEVEL: Final = "level"
"""Normalised severity: one of `Level`, null when the format has none."""
HOST: Final = "host"
"""Node or host name (syslog host, NCCL hostname, event source host)."""
POD: Final = "pod"
"""Kubernetes pod, from the file's path layout or name."""
NAMESPACE: Final = "namespace"
CONTAINER: Final = "container"
STREAM: Final = "stream"
"""stdout / stderr where the wrapper says (CRI, docker json-file)."""
PROCESS: Final = "process"
"""vLLM/Ray process prefix name (`APIServer`, `EngineCore_DP0`, `Worker_TP1`) or syslog ident; of
nested prefixes (a worker forked from the engine core), the innermost: the process that wrote it."""
PID: Final = "pid"
RANK: Final = "rank"
"""Global rank from `[rankN]:`, `[Rank N]` or the NCCL/vLLM worker prefix."""
COMPONENT: Final = "component"
"""Logger file (`loggers.py`, `ProcessGroupNCCL.cpp`, `transport/net_ib.cc`) or subsystem."""
MESSAGE: Final = "message"
"""The message with every header and wrapper removed; continuation lines joined by `\\n`."""
RAW_LINES: Final = "raw_lines"
"""Physical lines this event spans (1 + folded continuation lines)."""
FILE: Final = "file"
"""Path relative to the analysed directory, `/`-separated."""
LINE: Final = "line"
"""1-based physical line of the event's first line in `file`."""
REQUEST_ID: Final = "request_id"
HTTP_METHOD: Final = "http_method"
HTTP_PATH: Final = "http_path"
HTTP_STATUS: Final = "http_status"
COLL_OP: Final = "coll_op"
"""Collective OpType of a watchdog timeout (ALLREDUCE, BROADCAST, ...)."""
COLL_SEQ: Final = "coll_seq"
COLL_TIMEOUT_MS: Final = "coll_timeout_ms"
COLL_RAN_MS: Final = "coll_ran_ms"
PG: Final = "pg"
"""Process-group id from the c10d log prefix."""
CUDA_DEV: Final = "cuda_dev"
NCCL_CODE: Final = "nccl_code"
"""ncclResult_t of an error-propagation line `file:line -> code`."""
NCCL_CODE_NAME: Final = "nccl_code_name"
K8S_REASON: Final = "k8s_reason"
K8S_TYPE: Final = "k8s_type"
K8S_OBJECT: Final = "k8s_object"
"""`kind/name` of the event's involved object, e.g. `pod/vllm-0`."""
K8S_COUNT: Final = "k8s_count"

EVENT_DTYPES: Final[dict[str, pl.DataType]] = {
    TS: pl.Datetime("us", "UTC"),
    TS_QUALITY: pl.Categorical(),
    SOURCE: pl.String(),
    LEVEL: pl.Categorical(),
    HOST: pl.String(),
    POD: pl.String(),
    NAMESPACE: pl.Categorical(),
    CONTAINER: pl.Categorical(),
    STREAM: pl.Categorical(),
    PROCESS: pl.Categorical(),
    PID: pl.Int64(),
    RANK: pl.Int32(),
    COMPONENT: pl.Categorical(),
    MESSAGE: pl.String(),
    RAW_LINES: pl.UInt32(),
    FILE: pl.String(),
    LINE: pl.Int64(),
    REQUEST_ID: pl.String(),
    HTTP_METHOD: pl.Categorical(),
    HTTP_PATH: pl.String(),
    HTTP_STATUS: pl.Int32(),
    COLL_OP: pl.Categorical(),
    COLL_SEQ: pl.Int64(),
    COLL_TIMEOUT_MS: pl.Int64(),
    COLL_RAN_MS: pl.Int64(),
    PG: pl.Categorical(),
    CUDA_DEV: pl.Int32(),
    NCCL_CODE: pl.Int32(),
    NCCL_CODE_NAME: pl.Categorical(),
    K8S_REASON: pl.Categorical(),
    K8S_TYPE: pl.Categorical(),
    K8S_OBJECT: pl.String(),
    K8S_COUNT: pl.Int64(),
}
"""Column order and dtype of the events table.

Columns with few distinct values (levels, process and logger names, k8s reasons, ...) are
`Categorical`: a string column costs 16 bytes a row even when null (a view), a categorical 4,
and at a GB of logs those columns were more memory than the messages. They compare with
string literals, sort lexically and read back from Parquet as they were written; cast to
`pl.String` before a `.str` operation."""

EVENT_COLUMNS: Final = tuple(EVENT_DTYPES)

# --- metrics ----------------------------------------------------------------
METRIC: Final = "metric"
"""One of `MetricName`."""
VALUE: Final = "value"
ENGINE: Final = "engine"
"""`000` for `Engine 000:`, `aggregated` for `N Engines Aggregated:`, else the process name."""

METRIC_DTYPES: Final[dict[str, pl.DataType]] = {
    TS: pl.Datetime("us", "UTC"),
    TS_QUALITY: pl.String(),
    HOST: pl.String(),
    POD: pl.String(),
    ENGINE: pl.String(),
    METRIC: pl.String(),
    VALUE: pl.Float64(),
    FILE: pl.String(),
    LINE: pl.Int64(),
}
METRIC_COLUMNS: Final = tuple(METRIC_DTYPES)
REPEATED_STRINGS: Final = frozenset((SOURCE, FILE, HOST, POD, ENGINE, METRIC, TS_QUALITY))
"""String columns whose values repeat (a few per file): dictionary-encoded when written to
Parquet, like the Categorical ones. Messages, request ids and paths are mostly distinct, and
trying a dictionary on them cost a fifth of the writing time for nothing."""

# --- vocabularies -----------------------------------------------------------
Source = Literal[
    "vllm",
    "sglang",
    "trtllm",
    "uvicorn",
    "envoy",
    "nginx",
    "nccl",
    "ucx",
    "torch",
    "python",
    "progress",
    "app",
    "ray",
    "kv-store",
    "kubelet",
    "klog",
    "k8s-event",
    "k8s-state",
    "k8s-dump",
    "syslog",
    "kernel",
    "prometheus",
    "nvidia-smi",
    "unknown",
]
SOURCES: Final = Source.__args__
NODE_SOURCES: Final = ("kernel", "kubelet", "nvidia-smi", "syslog")
"""The sources whose lines a node writes of itself, stamped by its own clock: where it reports on
its hardware, and what moves with its clock's offset (`forensics.diagnosis.skew`)."""
SNAPSHOT_SOURCES: Final = ("nvidia-smi",)
"""Node sources whose time is when someone looked (an `nvidia-smi -q` taken after the outage):
what they show happened then or before, not at that time."""

Level = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
LEVELS: Final = Level.__args__

TsQuality = Literal["exact", "inferred-year", "relative", "inherited", "none"]
"""exact: the line carried a full date (year) and offset or `--tz` applied;
inferred-year: month/day/time from the line, the year from a reference timestamp;
relative: an offset resolved against a reference: a `kubectl` age (`5m`) against
  `--captured-at`, a `dmesg` stamp (seconds since boot) against a line of its boot that
  says the wall time (the RTC's at boot, an audit record's);
inherited: copied from the previous timestamped line of the same file;
none: no time could be given."""
TS_QUALITIES: Final = TsQuality.__args__

MetricName = Literal[
    "prompt_tokens_per_s",
    "generation_tokens_per_s",
    "running",
    "waiting",
    "swapped",
    "deferred",
    "preemptions",
    "gpu_kv_cache_usage",
    "cpu_kv_cache_usage",
    "prefix_cache_hit_rate",
    "cpu_prefix_cache_hit_rate",
    "external_prefix_cache_hit_rate",
    "corrupted",
    "http_requests",
    "http_5xx",
]
"""Usages and hit rates are fractions in [0, 1] (the log prints percent), like Prometheus.
`http_requests` / `http_5xx` count the API server's responses (all, and 5xx) since the
series' previous sample (Prometheus `http_requests_total`, when no access log is there)."""
METRIC_NAMES: Final = MetricName.__args__

NCCL_RESULT_NAMES: Final[dict[int, str]] = {
    0: "ncclSuccess",
    1: "ncclUnhandledCudaError",
    2: "ncclSystemError",
    3: "ncclInternalError",
    4: "ncclInvalidArgument",
    5: "ncclInvalidUsage",
    6: "ncclRemoteError",
    7: "ncclInProgress",
    8: "ncclTimeout",
}
"""ncclResult_t values (NVIDIA/nccl src/nccl.h.in)."""


def empty_events() -> pl.DataFrame:
    """An events table with no rows and the full schema."""
    return pl.DataFrame(schema=EVENT_DTYPES)


def empty_metrics() -> pl.DataFrame:
    """A metrics table with no rows and the full schema."""
    return pl.DataFrame(schema=METRIC_DTYPES)


def conform(df: pl.DataFrame, dtypes: dict[str, pl.DataType]) -> pl.DataFrame:
    """Select `dtypes`' columns in order, adding missing ones as nulls and casting the rest."""
    exprs = []
    for name, dtype in dtypes.items():
        if name in df.columns:
            exprs.append(pl.col(name).cast(dtype, strict=False))
        else:
            exprs.append(pl.lit(None, dtype=dtype).alias(name))
    return df.select(exprs)
