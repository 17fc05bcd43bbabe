"""Kubernetes: klog lines, event documents and tables, `describe` events, cluster-info dumps.

    I0313 16:02:43.934473    1450 kubelet.go:1778] skipping pod synchronization - [PLEG ...]
    E0413 10:53:52.844381    3263 kubelet.go:2055] "Skipping pod synchronization" err="PLEG ..."
      Warning  Unhealthy  2m (x12 over 3m)  kubelet  Liveness probe failed: ...      # describe
    29m   Warning   FailedScheduling   pod/x   0/1 nodes are available: ...          # get events
    ==== START logs for container vllm of pod default/vllm-0 ====                     # dump

Event documents (`kubectl get events -o json|yaml`) are whole-file JSON/YAML and are
parsed by `parse_event_document`; both recorder populations are handled (legacy
`firstTimestamp/lastTimestamp/count` and events.k8s.io `eventTime/series`).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import polars as pl

from forensics import schema as s
from parsers._common import frac_to_us, level_from_letter, no_time, to_i32, to_i64

DETECT_KLOG = r"^[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d{6} +\d+ "
KLOG = (
    r"^(?P<sev>[IWEF])(?P<mo>\d{2})(?P<d>\d{2}) (?P<H>\d{2}):(?P<M>\d{2}):(?P<S>\d{2})\.(?P<us>\d{6}) +"
    r"(?P<tid>\d+) (?P<file>[^\s:\]]+):(?P<lno>\d+)\] (?P<msg>.*)$"
)
DETECT_DESCRIBE = r"^\s{2,}(?:Normal|Warning)\s{2,}\w+\s{2,}"
DESCRIBE = (
    r"^\s{2,}(?P<type>Normal|Warning)\s+(?P<reason>\w+)\s+"
    r"(?P<age>\S+(?: \(x(?P<count>\d+) over (?P<first>\S+)\))?)\s+(?P<src>\S+(?:, \S+)?)\s{2,}(?P<msg>.+)$"
)
DETECT_TABLE = r"^(?:[a-z0-9][\w.\-]*\s+)?(?:\d+[smhd]\S*|<unknown>)\s+(?:Normal|Warning)\s+\w+\s+[a-z][\w.]*/"
TABLE = (
    r"^(?:(?P<ns>[a-z0-9][\w.\-]*)\s+)?(?P<age>\d+[smhd]\S*|<unknown>)\s+(?P<type>Normal|Warning)\s+"
    r"(?P<reason>\w+)\s+(?P<obj>[a-z][\w.]*/\S+)\s+(?P<msg>.*)$"
)
DETECT_TABLE_HEADER = r"^(?:NAMESPACE\s+)?LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE|^\s*Type\s+Reason\s+Age\s+From\s+Message|^\s*----\s+------|^Events:"
DETECT_DUMP = r"^==== (?:START|END) logs for container "
DUMP = r"^==== (?P<what>START|END) logs for container (?P<c>\S+) of pod (?P<ns>[^/\s]+)/(?P<pod>\S+) ===="

KUBELET_FILES = re.compile(r"^(?:kubelet|pleg|kuberuntime|pod_workers|prober|eviction|generic|manager)")

AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "y": 365 * 86400}


def parse_klog(df: pl.DataFrame) -> pl.DataFrame:
    """Parse klog/glog lines. Source: `kubelet` (syslog ident or kubelet files), `torch` (.cpp), else `klog`."""
    m = pl.col("_m").struct.field
    df = df.with_columns(pl.col("body").str.extract_groups(KLOG).alias("_m"))
    f = m("file")
    source = (
        pl.when(m("msg").is_null())
        .then(None)
        .when(
            (pl.col(s.PROCESS) == "kubelet")
            | f.str.contains(r"^(?:kubelet|pleg|kuberuntime|pod_workers|prober|eviction)")
        )
        .then(pl.lit("kubelet"))
        .when(f.str.contains(r"\.(?:cpp|cc|h)$"))
        .then(pl.lit("torch"))
        .otherwise(pl.lit("klog"))
    )
    return df.with_columns(
        source.alias(s.SOURCE),
        level_from_letter(m("sev")).alias(s.LEVEL),
        pl.lit(None, pl.Int32).alias("_Y"),
        to_i32(m("mo")).alias("_mo"),
        to_i32(m("d")).alias("_d"),
        to_i32(m("H")).alias("_H"),
        to_i32(m("M")).alias("_M"),
        to_i32(m("S")).alias("_S"),
        frac_to_us(m("us")).alias("_us"),
        pl.coalesce(pl.col("_pid"), m("tid")).alias("_pid"),
        f.alias(s.COMPONENT),
        m("msg").alias(s.MESSAGE),
    ).drop("_m")


def parse_describe(df: pl.DataFrame) -> pl.DataFrame:
    """`kubectl describe` Events rows; the relative age goes to `_age_s` (resolved by ingest)."""
    m = pl.col("_m").struct.field
    df = df.with_columns(pl.col("body").str.extract_groups(DESCRIBE).alias("_m"))
    return df.with_columns(
        pl.when(m("msg").is_not_null()).then(pl.lit("k8s-event")).alias(s.SOURCE),
        pl.when(m("type") == "Warning").then(pl.lit("WARNING")).otherwise(pl.lit("INFO")).alias(s.LEVEL),
        m("type").alias(s.K8S_TYPE),
        m("reason").alias(s.K8S_REASON),
        to_i64(m("count")).fill_null(pl.when(m("msg").is_not_null()).then(1)).alias(s.K8S_COUNT),
        m("src").str.split(", ").list.get(0, null_on_oob=True).alias(s.COMPONENT),
        pl.coalesce(m("src").str.split(", ").list.get(1, null_on_oob=True), pl.col(s.HOST)).alias(s.HOST),
        m("msg").str.strip_chars_end().alias(s.MESSAGE),
        age_seconds(m("age").str.replace(r" \(x.*$", "")).alias("_age_s"),
        *no_time(),
    ).drop("_m")


def parse_table(df: pl.DataFrame) -> pl.DataFrame:
    """`kubectl get events` table rows (LAST SEEN TYPE REASON OBJECT MESSAGE)."""
    m = pl.col("_m").struct.field
    df = df.with_columns(pl.col("body").str.extract_groups(TABLE).alias("_m"))
    return df.with_columns(
        pl.when(m("msg").is_not_null()).then(pl.lit("k8s-event")).alias(s.SOURCE),
        pl.when(m("type") == "Warning").then(pl.lit("WARNING")).otherwise(pl.lit("INFO")).alias(s.LEVEL),
        m("type").alias(s.K8S_TYPE),
        m("reason").alias(s.K8S_REASON),
        m("obj").alias(s.K8S_OBJECT),
        pl.coalesce(m("ns"), pl.col(s.NAMESPACE) if s.NAMESPACE in df.columns else None).alias(s.NAMESPACE),
        m("msg").str.strip_chars_end().alias(s.MESSAGE),
        age_seconds(m("age")).alias("_age_s"),
        *no_time(),
    ).drop("_m")


def parse_structure(df: pl.DataFrame) -> pl.DataFrame:
    """Header lines of event tables and `describe` sections: parsed, carry no event of their own."""
    return df.with_columns(
        pl.lit("k8s-event").alias(s.SOURCE),
        pl.lit(None, pl.String).alias(s.LEVEL),
        pl.col("body").str.strip_chars().alias(s.MESSAGE),
        pl.lit(True).alias("_structure"),
        *no_time(),
    )


def parse_dump_marker(df: pl.DataFrame) -> pl.DataFrame:
    """`cluster-info dump` START/END markers; `_dump_*` columns are forward-filled by ingest."""
    m = pl.col("_m").struct.field
    df = df.with_columns(pl.col("body").str.extract_groups(DUMP).alias("_m"))
    start = m("what") == "START"
    return df.with_columns(
        pl.when(m("what").is_not_null()).then(pl.lit("k8s-dump")).alias(s.SOURCE),
        pl.lit("INFO").alias(s.LEVEL),
        pl.col("body").str.strip_chars("= ").alias(s.MESSAGE),
        pl.when(start).then(m("pod")).otherwise(pl.lit("")).alias("_dump_pod"),
        pl.when(start).then(m("ns")).otherwise(pl.lit("")).alias("_dump_ns"),
        pl.when(start).then(m("c")).otherwise(pl.lit("")).alias("_dump_container"),
        *no_time(),
    ).drop("_m")


def age_seconds(expr: pl.Expr) -> pl.Expr:
    """`5m2s`, `2d3h`, `45s` -> seconds (Float64); null for `<unknown>` and junk."""
    parts = expr.str.extract_all(r"\d+[smhdy]")
    secs = parts.list.eval(
        pl.element().str.slice(0, pl.element().str.len_chars() - 1).cast(pl.Float64, strict=False)
        * pl.element().str.slice(-1).replace_strict(AGE_UNITS, default=None, return_dtype=pl.Float64)
    ).list.sum()
    return pl.when(parts.list.len() > 0).then(secs)


# --- whole-file event documents ---------------------------------------------------
def sniff_event_document(text: str) -> str | None:
    """'json' or 'yaml' when `text` is a Kubernetes Event / EventList document, else None."""
    head = text[:4096].lstrip()
    if head.startswith("{") and ('"kind": "Event' in head or '"kind":"Event' in head or '"involvedObject"' in head):
        return "json"
    if head.startswith("{") and '"items"' in head and '"kind": "List"' in text[-2048:] + head:
        return "json" if '"involvedObject"' in text[:200_000] else None
    if (
        re.search(r"^(?:apiVersion: v1\s*\n)?(?:items:|kind: (?:Event|EventList|List))", head, re.M)
        and "involvedObject" in text[:200_000]
    ):
        return "yaml"
    return None


def parse_event_document(text: str, kind: str) -> tuple[list[dict], str | None]:
    """Events of a JSON/YAML document as row dicts (with `line`), or ([], error message)."""
    try:
        if kind == "json":
            doc = json.loads(text)
        else:
            import yaml

            doc = yaml.safe_load(text)
    except Exception as e:  # noqa: BLE001 - any decoder error means "not a valid document"
        return (
            [],
            f"invalid {kind.upper()} event document ({type(e).__name__}: {str(e)[:120]}); parsed line by line instead",
        )
    items = doc.get("items") if isinstance(doc, dict) and "items" in doc else [doc] if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        return [], f"{kind.upper()} document holds no event list; parsed line by line instead"
    line_starts = _line_index(text)
    rows: list[dict] = []
    cursor = 0
    for item in items:
        if not isinstance(item, dict):
            continue
        name = (item.get("metadata") or {}).get("name") or ""
        pos = text.find(name, cursor) if name else -1
        if pos >= 0:
            cursor = pos + len(name)
        rows.append(_event_row(item, _line_of(line_starts, max(pos, 0)) if pos >= 0 else 1))
    return rows, None


def _line_index(text: str) -> list[int]:
    starts = [0]
    find = text.find
    i = find("\n")
    while i != -1:
        starts.append(i + 1)
        i = find("\n", i + 1)
    return starts


def _line_of(starts: list[int], pos: int) -> int:
    import bisect

    return bisect.bisect_right(starts, pos)


def _event_row(ev: dict, line: int) -> dict:
    obj = ev.get("involvedObject") or ev.get("regarding") or {}
    src = ev.get("source") or {}
    series = ev.get("series") or {}
    ts_str = (
        series.get("lastObservedTime")
        or ev.get("lastTimestamp")
        or ev.get("eventTime")
        or ev.get("firstTimestamp")
        or (ev.get("metadata") or {}).get("creationTimestamp")
    )
    count = ev.get("count") or series.get("count") or 1
    kind = (obj.get("kind") or "").lower()
    etype = ev.get("type") or "Normal"
    reason = ev.get("reason")
    message = (ev.get("message") or ev.get("note") or "").strip()
    return {
        s.TS: _parse_time(ts_str),
        s.SOURCE: "k8s-event",
        s.LEVEL: "WARNING" if etype == "Warning" else "INFO",
        s.HOST: src.get("host") or (obj.get("name") if kind == "node" else None),
        s.POD: obj.get("name") if kind == "pod" else None,
        s.NAMESPACE: obj.get("namespace") or (ev.get("metadata") or {}).get("namespace"),
        s.CONTAINER: _container_of(obj.get("fieldPath")),
        s.COMPONENT: src.get("component") or ev.get("reportingComponent") or ev.get("reportingController") or None,
        s.MESSAGE: f"{reason}: {message}" if reason else message,
        s.K8S_REASON: reason,
        s.K8S_TYPE: etype,
        s.K8S_OBJECT: f"{kind}/{obj.get('name')}" if kind else obj.get("name"),
        s.K8S_COUNT: int(count) if str(count).isdigit() else 1,
        s.LINE: line,
    }


def _container_of(field_path: str | None) -> str | None:
    if not field_path:
        return None
    m = re.search(r"containers\{([^}]+)\}", field_path)
    return m.group(1) if m else None


def _parse_time(v) -> datetime | None:
    if v is None:
        return None
    if isinstance(v, datetime):
        return v.astimezone(UTC) if v.tzinfo else v.replace(tzinfo=UTC)
    try:
        t = datetime.fromisoformat(str(v).replace("Z", "+00:00"))
    except ValueError:
        return None
    return t.astimezone(UTC) if t.tzinfo else t.replace(tzinfo=UTC)


def resolve_age(captured_at: datetime | None, age_s: float | None) -> datetime | None:
    """`captured_at - age`, the absolute time of a `kubectl` relative age."""
    if captured_at is None or age_s is None:
        return None
    return captured_at - timedelta(seconds=age_s)
