"""Prometheus exports: exposition text (`/metrics` scrapes, `/federate`, OpenMetrics,
`promtool tsdb dump`) and HTTP API query results (JSON), as metrics rows and events.

Why: with `--disable-log-stats`, or logs rotated away, the only throughput series of an
incident is in Prometheus. On-call engineers save it beside the logs as a scrape loop
(`while :; do date -u; curl -s pod:8000/metrics; sleep 15; done`), a federate or tsdb
dump (a timestamp on every sample) or a `query_range` export, and DCGM's exporter holds
the GPUs' last Xid. vLLM's own names are read (both spellings, log-formats.md 1.6):

    vllm:num_requests_running{engine="0",model_name="m"} 12.0
    vllm:generation_tokens_total{engine="0",model_name="m"} 1.234e+06 1773471600000
    {__name__="vllm:kv_cache_usage_perc", engine="0", pod="vllm-0"} 0.42 1773471600000
    DCGM_FI_DEV_XID_ERRORS{gpu="3",UUID="GPU-..",Hostname="gpu-node-3"} 79

Counters become the log's rates (tokens/s between consecutive samples of a series; a
value below the previous one is a restart, counted from zero), gauges are taken as they
are. A sample's time is its own timestamp, else the scrape's: the last bare time line
(`date`, `date -u`, ISO 8601, `date +%s`) above it; without either it has none.

Events: one per scrape (its lines folded in), plus one for each change a human should
see (`NOTABLE`): a GPU's Xid gauge turning non-zero (DCGM keeps the *last* Xid, so a change
is the event, not the value), its clock-event reasons turning to a thermal or power slowdown,
its uncorrectable ECC counters rising or row remapping failing,
`vllm:corrupted_requests` rising, the NIXL connector's failed transfers, failed
notifications and expired leases rising, and NCCL Inspector's bus bandwidth of a GPU
collapsing. A line that is none of
sample, comment, time or blank stays an `unknown` event of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import polars as pl

from parsers import schema as s
from parsers.jsonutil import load_json

SAMPLE = (
    r"^\s*(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)?\s*"
    r'(?:\{(?P<labels>(?:[^}"]|"(?:[^"\\]|\\.)*")*)\})?\s+'
    r"(?P<value>[-+]?(?:[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?|NaN|Nan|nan|Inf|inf))"
    r"(?:\s+(?P<ts>-?[0-9]+(?:\.[0-9]+)?))?\s*(?:#.*)?$"
)
"""A sample line: `name{labels} value [timestamp]` (OpenMetrics exemplars after `#`), or
promtool's `{__name__="name", ...} value timestamp`."""
_SAMPLE = re.compile(SAMPLE)

_MONTHS = "Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec"
TIME_LINE = (
    r"^(?:#\s*)?(?:"
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\s*(?:Z|UTC|GMT|[+-]\d{2}:?\d{2})?"
    rf"|(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun),? +(?:\d{{1,2}} +(?:{_MONTHS})|(?:{_MONTHS}) +\d{{1,2}}),? +"
    r"\d{2}:\d{2}:\d{2}(?: ?[AP]M)?(?: +[A-Z]{2,5}| +[+-]\d{4})? +\d{4}"
    r"|\d{10}(?:\.\d+)?"
    r")\s*$"
)
"""A scrape's time on a line of its own: ISO 8601, `date`/`date -u` (C, en_US and en_GB
orders), `date +%s`; also as a `# ` comment."""
_TIME_LINE = re.compile(TIME_LINE)

COUNTER_RATES = {"vllm:prompt_tokens": "prompt_tokens_per_s", "vllm:generation_tokens": "generation_tokens_per_s"}
"""Counters read as a rate per second between a series' consecutive samples."""
COUNTER_DELTAS = {"vllm:num_preemptions": "preemptions", "vllm:corrupted_requests": "corrupted"}
"""Counters read as the count since the series' previous sample (the log prints these per interval)."""
GAUGES = {
    "vllm:num_requests_running": "running",
    "vllm:num_requests_waiting": "waiting",
    "vllm:num_requests_swapped": "swapped",
    "vllm:kv_cache_usage_perc": "gpu_kv_cache_usage",
    "vllm:gpu_cache_usage_perc": "gpu_kv_cache_usage",
    "vllm:cpu_cache_usage_perc": "cpu_kv_cache_usage",
    "vllm:gpu_prefix_cache_hit_rate": "prefix_cache_hit_rate",
    "vllm:cpu_prefix_cache_hit_rate": "cpu_prefix_cache_hit_rate",
    "vllm:avg_prompt_throughput_toks_per_s": "prompt_tokens_per_s",  # (V0, before the counters)
    "vllm:avg_generation_throughput_toks_per_s": "generation_tokens_per_s",
}
"""Gauges taken as they are (usages and hit rates are fractions already, as in the schema)."""
HIT_RATIOS = {
    ("vllm:prefix_cache_hits", "vllm:prefix_cache_queries"): "prefix_cache_hit_rate",
    ("vllm:gpu_prefix_cache_hits", "vllm:gpu_prefix_cache_queries"): "prefix_cache_hit_rate",
    ("vllm:external_prefix_cache_hits", "vllm:external_prefix_cache_queries"): "external_prefix_cache_hit_rate",
}
"""Counter pairs read as hits / queries between consecutive samples."""
XID = "DCGM_FI_DEV_XID_ERRORS"
CORRUPTED = "vllm:corrupted_requests"
INSPECTOR_BW = "nccl_bus_bandwidth_gbs"
FALL_TO = 0.1
"""`fall`: a value under this fraction of the series' peak so far (after a healthy one)."""
FALL_FROM = 1.0
"""`fall`: the peak a series must have reached first (GB/s): an idle one falls from nothing."""
CLOCK_EVENTS = ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")
"""DCGM's bitmask of why a GPU's clocks are below their maximum (NVML's
`nvmlClocksEventReason*`, `nvml.h`; the older name says throttle)."""
SLOWDOWN_BITS = {
    0x8: "HW Slowdown",
    0x20: "SW Thermal Slowdown",
    0x40: "HW Thermal Slowdown",
    0x80: "HW Power Brake Slowdown",
}
"""The reasons that hold a busy GPU below the clocks it was asked to run at: heat, power, the
board's own slowdown signal (`nvidia-smi -q -d PERFORMANCE` prints the same names). Idle,
application clocks, the software power cap and sync boost are how a healthy GPU runs."""
NOTABLE = {
    XID: ("change", "Xid={v}"),
    **{name: ("slowdown", "clocks held down by the hardware ({reasons})") for name in CLOCK_EVENTS},
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": (
        "change",
        "row remapping failed (uncorrectable ECC errors; reset or replace the GPU)",
    ),
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": ("rise", "uncorrectable ECC errors (double-bit) since the driver loaded"),
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": ("rise after", "rows remapped after uncorrectable ECC errors"),
    CORRUPTED: ("rise", "Corrupted: {n} reqs"),
    # vLLM's NixlConnector (disaggregated prefill/decode), per engine
    "vllm:nixl_num_failed_transfers": ("rise", "NIXL KV transfers failed: {n}"),
    "vllm:nixl_num_failed_notifications": ("rise", "decode could not notify the prefill of a read KV: {n}"),
    "vllm:nixl_num_kv_expired_reqs": ("rise", "prefill KV blocks released unread, lease expired: {n} requests"),
    # NCCL Inspector's textfile (prior-art §7.1): a GPU's bus bandwidth per collective and size
    INSPECTOR_BW: ("fall", "its collectives stalled or its network failed (NCCL Inspector)"),
    # kube-state-metrics: 1 while the state holds, in `kubectl describe`'s words
    "kube_pod_container_status_last_terminated_reason": (
        "change",
        "Last State: Terminated ({reason}) container {container}",
    ),
    "kube_pod_container_status_waiting_reason": ("change", "State: Waiting ({reason}) container {container}"),
    "kube_pod_status_reason": ("change", "{reason}: pod {pod} (kube-state-metrics)"),
    "kube_node_status_condition": ("change", "{cause}: {condition}={state} (kube-state-metrics node {node})"),
}
"""Series whose change is an event: `change`, a value turning non-zero or to another (DCGM's
gauges hold the last Xid or state, kube-state-metrics' are 1 while a state holds); `rise`, a
counter's increase (its first sample counts when non-zero: since the process or driver
started); `rise after`, only an increase between samples (a lifetime counter's first value is
history); `fall`, a value dropping under `FALL_TO` of the series' peak so far, once until it
recovers to half of it. `{v}` is the value, `{n}` the increase, other names the series' labels."""
CONTEXT = {"DCGM_FI_DEV_SM_CLOCK": ("SM clock", "MHz"), "DCGM_FI_DEV_GPU_TEMP": ("temperature", "C")}
"""Series read only to say, beside a GPU's slowdown, what it did to that GPU: its SM clock and
temperature then, and at the series' first sample (dcgm-exporter's default counters)."""
SM_CLOCK = "DCGM_FI_DEV_SM_CLOCK"
PEER_SLOW = (0.3, 0.8)
"""A GPU whose SM clock falls to this band of the other GPUs' clock at the same scrape (their
upper quartile: what most of them run at), after running with them, has its clocks held
down: slow, not dead. Under 0.3 it is idle (a GPU with
nothing to do drops to its idle clocks); the other GPUs of the export are its peers."""
PEER_BACK = 0.9
"""It runs with its peers again at this fraction of their clock (said once until then)."""
PEER_MIN = 3
"""GPUs at a scrape needed for their clock to mean something."""
KSM_PREFIX = "kube_"

POD_LABELS = ("pod", "pod_name", "kubernetes_pod_name", "exported_pod")
HOST_LABELS = ("Hostname", "node", "kubernetes_node", "nodename", "hostname")
HTTP = "http_requests"
"""The API server's responses (prometheus-fastapi-instrumentator, which vLLM's server uses:
`http_requests_total{handler="/v1/chat/completions",method="POST",status="5xx"}`), read as
counts since the previous sample: all of them, and those with a 5xx `status`."""
READ = {*COUNTER_RATES, *COUNTER_DELTAS, *GAUGES, *(n for pair in HIT_RATIOS for n in pair), *NOTABLE, *CONTEXT, HTTP}
"""The metric names this module reads (counters without `_total`): what `forensics analyze
--prometheus` pulls from a live server."""

SNIFF_LINES = 50


def sniff(text: str) -> str | None:
    """'json' for a Prometheus HTTP API result, 'text' for exposition text, else None."""
    head = text[:4096].lstrip("\ufeff \t\r\n")
    if head.startswith("{") and not head.startswith("{__name__="):  # (promtool's lines open with their labels)
        return "json" if '"resultType"' in head and '"data"' in head else None
    lines = head.splitlines()
    if len(text) > 4096 and len(lines) > 1:
        lines.pop()  # (cut short by the head)
    samples = typed = other = 0
    for line in lines[:SNIFF_LINES]:
        line = line.strip()
        if not line:
            continue
        if line.startswith(("# HELP ", "# TYPE ", "# UNIT ")):
            typed += 1
        elif _SAMPLE.match(line) and not line.startswith("#"):
            samples += 1
        elif not (line.startswith("#") or _TIME_LINE.match(line)):
            other += 1
    # (a log's lines are not samples; an export may hold a stray line, which stays unparsed)
    return "text" if samples >= 3 and (typed or samples >= 5) and other * 4 <= samples + typed else None


@dataclass
class Export:
    """What a Prometheus export holds: events (row dicts, as `k8s.parse_event_document`'s,
    plus the accounting's `_nfold`/`_extra`), metrics rows (schema's columns but `file`) and notes."""

    events: list[dict] = field(default_factory=list)
    metrics: pl.DataFrame = field(default_factory=lambda: s.empty_metrics().drop(s.FILE))
    notes: list[str] = field(default_factory=list)
    names_pods: bool = False
    """Its samples carry pod labels (a federate or DCGM dump): the file is then no one pod's."""


def parse_document(text: str, kind: str, tz: str = "UTC") -> Export:
    """An export's events and metrics; `tz` is the zone of times written without one."""
    if kind == "json":
        return _parse_json(text)
    return _parse_text(text, tz)


def _parse_text(text: str, tz: str) -> Export:
    """Exposition text, classified line by line in polars (a scrape loop of an hour is ~250,000
    lines): sample, comment, time line, blank, or a stray line; scrapes split at time lines."""
    body = text.split("\n")
    if body and body[-1] == "":
        body.pop()
    df = pl.DataFrame({"body": body}, schema={"body": pl.String}).with_row_index(s.LINE, offset=1)
    line = pl.col("body").str.strip_chars_end("\r")
    df = df.with_columns(line.alias("body")).with_columns(
        pl.col("body").str.strip_chars().str.len_bytes().eq(0).alias("_blank"),
        pl.col("body").str.contains(TIME_LINE).alias("_time"),
    )
    df = df.with_columns(
        (pl.col("body").str.starts_with("#") & ~pl.col("_time")).alias("_comment"),
        pl.col("body").str.extract_groups(SAMPLE).alias("_m"),
    ).unnest("_m")
    sample = (pl.col("value").is_not_null() & ~pl.col("_time") & ~pl.col("body").str.starts_with("#")).alias("_sample")
    name = pl.coalesce(pl.col("name"), pl.col("labels").str.extract(r'(?:^|,)\s*__name__\s*=\s*"([^"]*)"', 1))
    df = df.with_columns(sample, name.alias("name"))
    df = df.with_columns(
        (pl.col("_sample") & pl.col("name").is_not_null()).alias("_sample"),
        pl.col("_time").cast(pl.Int32).cum_sum().alias("_scrape"),
    )
    df = df.with_columns(
        (~(pl.col("_sample") | pl.col("_time") | pl.col("_comment") | pl.col("_blank"))).alias("_junk")
    )
    # Lines above the first time line that hold no sample belong to the first scrape (a
    # header comment), not to a scrape of their own.
    if df.filter((pl.col("_scrape") == 0) & pl.col("_sample")).is_empty():
        df = df.with_columns(pl.col("_scrape").clip(lower_bound=1))
    zone = ZoneInfo(tz)
    times = {k: _time_of(b, zone) for k, b in df.filter(pl.col("_time")).select("_scrape", "body").iter_rows()}
    at = pl.col("_scrape").replace_strict(times, default=None, return_dtype=pl.Datetime("us", "UTC"))
    own = pl.col("ts").cast(pl.Float64, strict=False)
    own_us = pl.when(own.abs() >= 1e11).then(own * 1e3).otherwise(own * 1e6)  # ms, or OpenMetrics' s
    own_us = own_us.cast(pl.Int64, strict=False)  # (null when out of range)
    df = df.with_columns(pl.coalesce(own_us.cast(pl.Datetime("us", "UTC")), at).alias(s.TS))
    samples = df.filter(pl.col("_sample")).select(
        s.LINE, s.TS, "name", pl.col("labels").fill_null(""), _value(pl.col("value")).alias(s.VALUE)
    )
    out = Export()
    scrapes = df.group_by("_scrape").agg(
        pl.col(s.LINE).filter(~pl.col("_junk")).first().alias(s.LINE),
        pl.col(s.TS).filter(pl.col("_time")).first().alias("_at"),
        pl.col(s.TS).filter(pl.col("_sample")).min().alias("_first"),
        pl.col("_sample").sum().alias("_n"),
        pl.col("name").filter(pl.col("_sample")).n_unique().alias("_names"),
        (~pl.col("_junk")).sum().alias("_lines"),
    )
    for _k, first, at_, t0, n, names, lines in scrapes.sort("_scrape").iter_rows():
        if first is None:
            continue
        out.events.append(
            _event(first, at_ or t0, "INFO", f"Prometheus scrape: {n} samples of {names} metrics", nfold=lines - 1)
        )
    for n, (ln, body) in enumerate(df.filter(pl.col("_junk")).select(s.LINE, "body").iter_rows()):
        out.events.append(_event(ln, None, None, body, source="unknown"))
        if n == 0:
            out.notes.append(f"line {ln}: not a Prometheus sample, comment or time line; kept as an unparsed event")
    _read_samples(out, samples)
    if not samples.is_empty() and samples[s.TS].null_count() == samples.height:
        out.notes.append(
            "no sample has a time (no timestamps and no `date` line before a scrape): its metrics are kept "
            "but form no series; scrape in a loop with `date -u` before each `curl`"
        )
    return out


def _parse_json(text: str) -> Export:
    """An HTTP API `query` / `query_range` result (`vector` / `matrix`): one event for the
    document, its named series' points as samples (an unnamed series is an expression: noted)."""
    out = Export()
    n_lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    try:
        doc = load_json(text)
    except ValueError as e:
        out.events.append(_event(1, None, None, text.split("\n", 1)[0][:2000], source="unknown", nfold=n_lines - 1))
        out.notes.append(f"invalid Prometheus JSON ({e}); kept as one unparsed event")
        return out
    data = doc.get("data") if isinstance(doc, dict) else None
    result = data.get("result") if isinstance(data, dict) else None
    kind = data.get("resultType") if isinstance(data, dict) else None
    if doc.get("status") != "success" or not isinstance(result, list) or kind not in ("matrix", "vector"):
        why = doc.get("error") or f"status {doc.get('status')!r}, result type {kind!r}"
        out.events.append(
            _event(1, None, "WARNING", f"Prometheus query result without series: {why}", nfold=n_lines - 1)
        )
        return out
    rows: list[tuple] = []
    unnamed = 0
    for series in result:
        if not isinstance(series, dict) or not isinstance(series.get("metric"), dict):
            continue
        labels = {str(k): str(v) for k, v in series["metric"].items()}
        name = labels.pop("__name__", None)
        if name is None:
            unnamed += 1
            continue
        text_labels = ",".join(f'{k}="{escape_label(v)}"' for k, v in sorted(labels.items()))
        points = series.get("values") if kind == "matrix" else [series.get("value")]
        for p in points or ():
            if isinstance(p, list | tuple) and len(p) == 2:
                try:
                    t = datetime.fromtimestamp(float(p[0]), UTC)
                    rows.append((1, t, name, text_labels, _float(str(p[1]))))
                except (TypeError, ValueError, OverflowError):
                    continue
    samples = pl.DataFrame(
        rows,
        schema={
            s.LINE: pl.Int64,
            s.TS: pl.Datetime("us", "UTC"),
            "name": pl.String,
            "labels": pl.String,
            s.VALUE: pl.Float64,
        },
        orient="row",
    )
    first = samples[s.TS].min() if samples.height else None
    out.events.append(
        _event(
            1,
            first,
            "INFO",
            f"Prometheus query result: {samples.height} samples of {len(result) - unnamed} series",
            nfold=n_lines - 1,
        )
    )
    if unnamed:
        out.notes.append(
            f"{unnamed} series without a metric name (an expression such as rate()): left out; export the raw "
            "series (e.g. `vllm:generation_tokens_total`) and forensics computes the rate"
        )
    _read_samples(out, samples)
    return out


def _read_samples(out: Export, samples: pl.DataFrame) -> None:
    """What an export's samples (line, ts, name, labels, value) add to it: the events of their
    notable changes (in file order among the others), its metrics rows, whether they name pods."""
    keyed = _keyed(samples)  # (labels read once for both)
    out.events.extend(_notable(keyed))
    out.events.sort(key=lambda r: (r[s.LINE], r["_extra"]))
    out.metrics, out.names_pods = _metrics(keyed), _names_pods(samples)


def escape_label(v: str) -> str:
    """A label value as the exposition format writes it between quotes."""
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _float(v: str) -> float:
    return float(v.replace("Inf", "inf").replace("Nan", "nan"))


def _value(e: pl.Expr) -> pl.Expr:
    v = e.str.replace(r"^\+", "").str.to_lowercase()
    return (
        pl.when(v == "inf")
        .then(float("inf"))
        .when(v == "-inf")
        .then(float("-inf"))
        .otherwise(v.cast(pl.Float64, strict=False))
    )


def _time_of(line: str, zone: ZoneInfo) -> datetime | None:
    """The time a scrape's time line names (UTC), or None when it does not parse."""
    text = line.strip().lstrip("#").strip()
    try:
        if re.fullmatch(r"\d{10}(?:\.\d+)?", text):
            return datetime.fromtimestamp(float(text), UTC)
        m = re.fullmatch(
            r"(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:[.,](\d+))?\s*(Z|UTC|GMT|[+-]\d{2}:?\d{2})?", text
        )
        if m:
            frac = (m[3] or "0")[:6].ljust(6, "0")
            t = datetime.fromisoformat(f"{m[1]}T{m[2]}.{frac}")
            off = m[4]
            if off in ("Z", "UTC", "GMT"):
                return t.replace(tzinfo=UTC)
            if off:
                off = off if ":" in off else f"{off[:3]}:{off[3:]}"
                return datetime.fromisoformat(f"{m[1]}T{m[2]}.{frac}{off}").astimezone(UTC)
            return t.replace(tzinfo=zone).astimezone(UTC)
        m = re.fullmatch(
            rf"\w{{3}},? +(?:(\d{{1,2}}) +({_MONTHS})|({_MONTHS}) +(\d{{1,2}})),? +(\d{{2}}:\d{{2}}:\d{{2}})"
            r"(?: ?([AP]M))?(?: +([A-Z]{2,5}|[+-]\d{4}))? +(\d{4})",
            text,
        )
        if m:
            day, mon = (m[1], m[2]) if m[1] else (m[4], m[3])
            hms, half, off, year = m[5], m[6], m[7], m[8]
            if half:  # (en_US: 12-hour clock)
                hms = datetime.strptime(f"{hms} {half}", "%I:%M:%S %p").strftime("%H:%M:%S")
            t = datetime.strptime(f"{year} {mon} {day} {hms}", "%Y %b %d %H:%M:%S")
            if off in ("UTC", "GMT", "Z"):
                return t.replace(tzinfo=UTC)
            if off and off[0] in "+-":
                return datetime.strptime(f"{year} {mon} {day} {hms} {off}", "%Y %b %d %H:%M:%S %z").astimezone(UTC)
            return t.replace(tzinfo=zone).astimezone(UTC)  # (no zone, or an abbreviation: --tz)
    except ValueError:
        return None
    return None


def _names_pods(samples: pl.DataFrame) -> bool:
    pod = "|".join(POD_LABELS)
    return bool(samples["labels"].str.contains(rf'(?:^|,)\s*(?:{pod})\s*="').any())


def _label(name: str) -> pl.Expr:
    return pl.col("labels").str.extract(rf'(?:^|,)\s*{name}\s*=\s*"((?:[^"\\]|\\.)*)"', 1)


def _base(name: pl.Expr) -> pl.Expr:
    """A counter's family name: the sample's without `_total` (prometheus_client's suffix)."""
    return name.str.replace(r"_total$", "")


def _keyed(samples: pl.DataFrame) -> pl.DataFrame:
    """The samples whose names this module reads (`READ`: vLLM's, DCGM's, kube-state-metrics'),
    with their series key (labels but the name), pod, host and engine, in (series, time, line) order."""
    df = samples.filter(_base(pl.col("name")).is_in(READ)).with_columns(
        _base(pl.col("name")).alias("_family"),
        pl.col("labels").str.replace_all(r'(?:^|,)\s*__name__\s*=\s*"[^"]*"', "").str.strip_chars(", ").alias("_key"),
    )
    engine = _label("engine")
    return df.with_columns(
        pl.coalesce(*(_label(p) for p in POD_LABELS)).alias(s.POD),
        pl.coalesce(*(_label(h) for h in HOST_LABELS)).alias(s.HOST),
        pl.when(engine.str.contains(r"^\d+$"))
        .then(engine.cast(pl.Int64, strict=False).cast(pl.String).str.zfill(3))
        .otherwise(engine)
        .alias(s.ENGINE),
    ).sort("_family", "_key", s.TS, s.LINE, nulls_last=True)


def _metrics(df: pl.DataFrame) -> pl.DataFrame:
    """Metrics rows in the schema's vocabulary (without `file`, which the caller knows) from
    the `_keyed` samples."""
    if df.is_empty():
        return s.empty_metrics().drop(s.FILE)
    quality = pl.when(pl.col(s.TS).is_null()).then(pl.lit("none")).otherwise(pl.lit("exact")).alias(s.TS_QUALITY)
    parts = [
        df.filter(pl.col("_family").is_in(GAUGES)).with_columns(
            pl.col("_family").replace_strict(GAUGES, return_dtype=pl.String).alias(s.METRIC)
        )
    ]
    step = _steps(df.filter(pl.col(s.TS).is_not_null()))
    rates = step.filter(pl.col("_family").is_in(COUNTER_RATES) & (pl.col("_dt") > 0))
    parts.append(
        rates.with_columns(
            pl.col("_family").replace_strict(COUNTER_RATES, return_dtype=pl.String).alias(s.METRIC),
            (pl.col("_dv") / pl.col("_dt")).alias(s.VALUE),
        )
    )
    parts.append(
        step.filter(pl.col("_family").is_in(COUNTER_DELTAS)).with_columns(
            pl.col("_family").replace_strict(COUNTER_DELTAS, return_dtype=pl.String).alias(s.METRIC),
            pl.col("_dv").alias(s.VALUE),
        )
    )
    http = step.filter(pl.col("_family") == HTTP)
    parts.append(http.with_columns(pl.lit("http_requests").alias(s.METRIC), pl.col("_dv").alias(s.VALUE)))
    parts.append(
        http.filter(_label("status").str.starts_with("5")).with_columns(
            pl.lit("http_5xx").alias(s.METRIC), pl.col("_dv").alias(s.VALUE)
        )
    )
    for (hits, queries), metric in HIT_RATIOS.items():
        h = step.filter(pl.col("_family") == hits)
        q = step.filter(pl.col("_family") == queries).select("_key", s.TS, pl.col("_dv").alias("_dq"))
        if h.is_empty() or q.is_empty():
            continue
        parts.append(
            h.join(q, on=["_key", s.TS], how="inner")
            .filter(pl.col("_dq") > 0)
            .with_columns(pl.lit(metric).alias(s.METRIC), (pl.col("_dv") / pl.col("_dq")).alias(s.VALUE))
        )
    columns = [c for c in s.METRIC_COLUMNS if c != s.FILE]
    rows = [p.with_columns(quality).select(columns) for p in parts if not p.is_empty()]
    if not rows:
        return s.empty_metrics().drop(s.FILE)
    return pl.concat(rows).sort(s.LINE, s.METRIC, s.POD, s.ENGINE, nulls_last=True)


def _steps(df: pl.DataFrame) -> pl.DataFrame:
    """Each timed sample with its series' previous: `_dv` (the increase; a drop is a counter
    reset, counted from zero) and `_dt` (seconds). A series' first sample has no step."""
    prev_v = pl.col(s.VALUE).shift(1).over("_family", "_key")
    prev_t = pl.col(s.TS).shift(1).over("_family", "_key")
    return df.with_columns(
        pl.when(pl.col(s.VALUE) >= prev_v).then(pl.col(s.VALUE) - prev_v).otherwise(pl.col(s.VALUE)).alias("_dv"),
        ((pl.col(s.TS) - prev_t).dt.total_microseconds() / 1e6).alias("_dt"),
    ).filter(prev_t.is_not_null())


def _notable(keyed: pl.DataFrame) -> list[dict]:
    """Events for the changes a human should see (`NOTABLE`) among the `_keyed` samples, one per sample line."""
    df = keyed.filter(pl.col("_family").is_in(NOTABLE))
    if df.is_empty():
        return _behind_peers(keyed)
    prev = pl.col(s.VALUE).shift(1).over("_family", "_key")
    peak = pl.col(s.VALUE).fill_nan(None).cum_max().shift(1).over("_family", "_key")
    labels = ("gpu", "UUID", "reason", "container", "condition", "status", "node", "collective", "message_size")
    df = df.with_columns(prev.alias("_prev"), peak.alias("_peak"), *(_label(n).alias(f"_{n}") for n in labels))
    out = _behind_peers(keyed)
    fallen: set[tuple[str, str]] = set()
    context = _context(keyed)
    for row in df.iter_rows(named=True):
        family, v, before = row["_family"], row[s.VALUE], row["_prev"]
        mode, says = NOTABLE[family]
        if mode == "fall":
            msg = _fall_message(family, says, row, fallen)
            if msg is not None:
                out.append(_event(row[s.LINE], row[s.TS], "WARNING", msg, host=row[s.HOST], pod=row[s.POD], extra=True))
            continue
        if mode == "slowdown":
            msg = _slowdown_message(family, says, row, context)
            if msg is not None and (before is None or _slowed(before) != _slowed(v)):
                out.append(_event(row[s.LINE], row[s.TS], "WARNING", msg, host=row[s.HOST], pod=row[s.POD], extra=True))
            continue
        if v is None or v != v or v <= 0 or v == float("inf"):
            continue
        if family.startswith(KSM_PREFIX):
            msg = _state_message(family, says, row)
            if msg is not None and (before is None or before <= 0):
                out.append(_event(row[s.LINE], row[s.TS], "WARNING", msg, host=row[s.HOST], pod=row[s.POD], extra=True))
            continue
        if mode == "change":
            if before is not None and v == before:
                continue
            n = v
        else:
            if before is None and mode == "rise after":
                continue
            n = v - before if before is not None and v >= before else v
            if n <= 0:
                continue
        if family.startswith("vllm:"):  # (an engine's counter: the pod's event)
            engine = f" on engine {row[s.ENGINE]}" if row[s.ENGINE] else ""
            since = "since the previous sample" if before is not None else "at the first sample"
            msg = f"{family}_total rose by {int(n)} {since}{engine} ({says.format(n=int(n))})"
        else:
            where = f"GPU {row['_gpu']}" if row["_gpu"] is not None else "a GPU"
            where += f" ({row['_UUID']})" if row["_UUID"] else ""
            what = says.format(v=int(v), n=int(n))
            if mode == "change" and family == XID:
                msg = f"{family}: {what} on {where}"
            elif mode == "change":
                msg = f"{family} is {int(v)} on {where}: {what}"
            else:
                msg = f"{family} rose by {int(n)} on {where}: {what}"
        out.append(_event(row[s.LINE], row[s.TS], "ERROR", msg, host=row[s.HOST], pod=row[s.POD], extra=True))
    return out


def _slowed(v: float | None) -> int:
    """The slowdown bits (`SLOWDOWN_BITS`) set in a clock-event mask."""
    if v is None or v != v or v < 0 or v == float("inf"):
        return 0
    return int(v) & sum(SLOWDOWN_BITS)


def _slowdown_message(family: str, says: str, row: dict, context: dict) -> str | None:
    """A GPU's clock-event mask turning to include a slowdown, in `nvidia-smi`'s words, with
    its SM clock and temperature then and at first when the export has them (`CONTEXT`); None
    when it holds none (the caller says each change once)."""
    bits = _slowed(row[s.VALUE])
    if not bits:
        return None
    reasons = ", ".join(name for bit, name in SLOWDOWN_BITS.items() if bits & bit)
    where = f"GPU {row['_gpu']}" if row["_gpu"] is not None else "a GPU"
    where += f" ({row['_UUID']})" if row["_UUID"] else ""
    msg = f"{family} is {int(row[s.VALUE])} on {where}: {says.format(reasons=reasons)}"
    said = []
    for name, (what, unit) in CONTEXT.items():
        series = context.get((name, row["_key"]))
        if series is None or row[s.TS] is None:
            continue
        then = [v for ts, v in series if ts is not None and ts <= row[s.TS]]
        first_ts, first = series[0]
        if then and first_ts is not None and first_ts < row[s.TS]:
            said.append(f"{what} {then[-1]:.0f} {unit} (first sample {first:.0f} {unit} at {first_ts:%H:%M:%S})")
    return msg + ("; " + ", ".join(said) if said else "")


def _behind_peers(keyed: pl.DataFrame) -> list[dict]:
    """Events for GPUs whose SM clock fell behind their peers' (`PEER_SLOW`) where the export
    has no clock-event reasons for them (those say it themselves, with the reason)."""
    clocks = keyed.filter((pl.col("_family") == SM_CLOCK) & pl.col(s.TS).is_not_null() & pl.col(s.VALUE).is_finite())
    if clocks.is_empty():
        return []
    told = set(keyed.filter(pl.col("_family").is_in(CLOCK_EVENTS))["_key"].to_list())
    clocks = clocks.filter(~pl.col("_key").is_in(pl.Series(sorted(told), dtype=pl.String).implode()))
    peers = (
        keyed.filter(pl.col("_family") == SM_CLOCK)
        .group_by(s.TS)
        # (the upper quartile: what most GPUs run at, whichever few are slow or idle)
        .agg(pl.col(s.VALUE).quantile(0.75, "nearest").alias("_peers"), pl.len().alias("_n"))
    )
    rows = clocks.join(peers, on=s.TS, how="left").filter(pl.col("_n") >= PEER_MIN).sort("_key", s.TS, s.LINE)
    out = []
    for (key,), series in rows.group_by("_key", maintain_order=True):
        ran_with, slow = False, False
        for row in series.iter_rows(named=True):
            ratio = row[s.VALUE] / row["_peers"] if row["_peers"] else 1.0
            if ratio >= PEER_BACK:
                ran_with, slow = True, False
                continue
            if slow or not ran_with or not PEER_SLOW[0] <= ratio < PEER_SLOW[1]:
                continue
            slow = True
            gpu = _labels_of(key)
            where = f"GPU {gpu.get('gpu', '?')}" + (f" ({gpu['UUID']})" if gpu.get("UUID") else "")
            msg = (
                f"{SM_CLOCK} is {row[s.VALUE]:.0f} MHz on {where}: {ratio:.0%} of the other GPUs' {row['_peers']:.0f} "
                "MHz at that scrape, after running with them: its clocks are held down (no clock-event reasons in "
                "this export say why)"
            )
            out.append(_event(row[s.LINE], row[s.TS], "WARNING", msg, host=row[s.HOST], pod=row[s.POD], extra=True))
    return out


def _labels_of(key: str) -> dict[str, str]:
    return dict(re.findall(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"', key))


def _context(keyed: pl.DataFrame) -> dict[tuple[str, str], list[tuple[datetime | None, float]]]:
    """The `CONTEXT` series by (family, series key), samples in time order."""
    df = keyed.filter(pl.col("_family").is_in(CONTEXT) & pl.col(s.VALUE).is_finite())
    out: dict[tuple[str, str], list] = {}
    for family, key, ts, v in df.select("_family", "_key", s.TS, s.VALUE).iter_rows():
        out.setdefault((family, key), []).append((ts, v))
    return out


def _fall_message(family: str, says: str, row: dict, fallen: set[tuple[str, str]]) -> str | None:
    """A series' first sample under `FALL_TO` of its peak so far (a peak of `FALL_FROM` at least),
    said with where; None for any other sample. `fallen` holds the series that fell and have not
    recovered to half their peak yet (so a collapse is one event, not one a scrape)."""
    v, top, key = row[s.VALUE], row["_peak"], (family, row["_key"])
    if v is None or v != v or top is None or top < FALL_FROM:
        return None
    if key in fallen:
        if v >= top / 2:
            fallen.discard(key)
        return None
    if v >= FALL_TO * top:
        return None
    fallen.add(key)
    where = f"GPU {row['_gpu']}" if row["_gpu"] is not None else "a GPU"
    where += f" of {row[s.HOST]}" if row[s.HOST] else ""
    what = ", ".join(x for x in (row["_collective"], row["_message_size"]) if x)
    return f"{family} fell to {v:g} from {top:g} on {where}" + (f" ({what})" if what else "") + f": {says}"


def _state_message(family: str, says: str, row: dict) -> str | None:
    """A kube-state-metrics state series in `kubectl describe`'s words, or None for a healthy
    one (a node condition is failing when Ready is not true, or another is true)."""
    condition, state = row["_condition"], (row["_status"] or "").lower()
    if family == "kube_node_status_condition":
        failing = state != "true" if condition == "Ready" else state == "true"
        if condition is None or not failing:
            return None
    fields = {
        "reason": row["_reason"],
        "container": row["_container"],
        "pod": row[s.POD],
        "node": row["_node"] or row[s.HOST],
        "condition": condition,
        "state": state.title(),
        "cause": "NodeNotReady" if condition == "Ready" else condition,
    }
    return says.format(**fields)


def _event(
    line: int,
    ts: datetime | None,
    level: str | None,
    message: str,
    *,
    source: str = "prometheus",
    nfold: int = 0,
    host: str | None = None,
    pod: str | None = None,
    extra: bool = False,
) -> dict:
    """An event row; `extra`: an event beside its line's own (the line is folded into its scrape)."""
    return {
        s.LINE: line,
        s.TS: ts,
        s.SOURCE: source,
        s.LEVEL: level,
        s.MESSAGE: message,
        s.HOST: host,
        s.POD: pod,
        "_nfold": nfold,
        "_extra": extra,
    }
