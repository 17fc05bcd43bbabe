"""Log stores' CSV exports: what an on-call engineer downloads when the pods are gone.

Kibana's Discover (`@timestamp`, `message`, ECS `kubernetes.pod.name`, ...), Grafana's
Explore on Loki (`Time`, `Line`, `labels` as JSON, `tsNs`), Datadog's Log Explorer (`Date`,
`Host`, `Service`, `Status`, `Message`), Splunk (`_time`, `_raw`, `host`, `source`) and
CloudWatch Logs Insights (`@timestamp`, `@message`, `@logStream`) all write one record a
row, under a header naming the columns. Each row becomes one JSON record of the shape
`wrappers.records.json_record` reads (the message, an RFC3339 time, the level, and the pod,
namespace, container and node under `kubernetes`), so that the line inside is parsed by
its own producer's format, as a shipper's JSON record is.

Log stores list the newest record first; the records are put oldest first, so that a
traceback split over several records folds as it was written.
"""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from parsers.jsonutil import load_json
from parsers.wrappers import CLOUDWATCH_STREAM

csv.field_size_limit(64 * 1024 * 1024)  # (a record is a line; a 50 MB line is one too)

TIME_COLUMNS = ("tsns", "@timestamp", "timestamp", "_time", "time", "date", "datetime", "ts")
"""Column names (lower-cased) that hold a record's time, in order of preference: Grafana's `tsNs`
(nanoseconds since the epoch) before its `Time`, which is written in the dashboard's zone."""
MESSAGE_COLUMNS = ("message", "@message", "line", "log", "_raw", "msg", "textpayload", "content")
LEVEL_COLUMNS = ("level", "log.level", "severity", "status", "loglevel", "detected_level")
HOST_COLUMNS = ("kubernetes.node.name", "kubernetes.host", "host.name", "host", "hostname", "node", "node_name")
POD_COLUMNS = ("kubernetes.pod.name", "kubernetes.pod_name", "k8s.pod.name", "pod", "pod_name")
NAMESPACE_COLUMNS = (
    "kubernetes.namespace",
    "kubernetes.namespace_name",
    "kubernetes.namespace.name",
    "k8s.namespace.name",
    "namespace",
)
CONTAINER_COLUMNS = ("kubernetes.container.name", "kubernetes.container_name", "k8s.container.name", "container")
STREAM_COLUMNS = ("stream", "kubernetes.stream")
LOG_PATH_COLUMNS = ("source", "@logstream", "logstreamname", "log.file.path", "filename")
"""Columns naming the container log a record came from (`/var/log/containers/<pod>_<ns>_<c>-<id>.log`)."""
LABEL_KEYS = {
    "pod_name": ("pod", "pod_name", "k8s_pod_name"),
    "namespace_name": ("namespace", "k8s_namespace_name"),
    "container_name": ("container", "container_name", "k8s_container_name"),
    "host": ("node_name", "node", "host", "hostname", "k8s_node_name"),
}
"""Grafana's `labels` column (Loki's stream labels as JSON): where each of a record's
`kubernetes` fields is found."""

HEADER_CELL = re.compile(r"^[@\w][\w.@\-]{0,63}(?: [\w.@\-]{1,63})?$")
"""A column name: one word, or two (`Log Stream`); a cell of more words is text, not a header."""
KIBANA_TIME = re.compile(r"^[A-Z][a-z]{2} \d{1,2}, \d{4} @ \d{2}:\d{2}:\d{2}(?:\.\d+)?$")
EPOCH = re.compile(r"^(?P<int>\d{9,19})(?:\.(?P<frac>\d+))?$")
MISSING = ("", "-", "null", "None")
"""How the exports write a field the record lacks (Kibana: `-`)."""


def _dialect(first_line: str) -> str | None:
    """The delimiter of a log export's header line, or None when `first_line` is no such header:
    every cell a column name, one of them a time column and one a message column."""
    line = first_line.lstrip("\ufeff").rstrip("\r\n")
    for delim in (",", "\t", ";"):
        if delim not in line:
            continue
        try:
            cells = next(csv.reader([line], delimiter=delim))
        except (csv.Error, StopIteration):
            continue
        names = [c.strip().lower() for c in cells]
        if len(names) < 2 or not all(HEADER_CELL.match(c) for c in cells):
            continue
        if any(n in TIME_COLUMNS for n in names) and any(n in MESSAGE_COLUMNS for n in names):
            return delim
    return None


def sniff(head: str) -> bool:
    """True when `head` (a file's first bytes as text) begins with a log export's header."""
    return _dialect(head.split("\n", 1)[0]) is not None


def _iso(value: str, zone: ZoneInfo) -> str | None:
    """A record's time as RFC3339 UTC (`...Z`): ISO 8601 with `T` or a space, with a zone or
    without (then in `zone`, `--tz`: the stores export UTC, Kibana the browser's zone),
    Kibana's `Mar 2, 2025 @ 10:00:01.123`, or seconds, milliseconds or nanoseconds since the
    epoch (Grafana's `tsNs`), kept to the microsecond."""
    v = value.strip()
    if m := EPOCH.match(v):
        n = int(m["int"])
        if n > 10**17:
            sec, ns = divmod(n, 10**9)
            us = ns // 1000
        elif n > 10**11:
            sec, ms = divmod(n, 1000)
            us = ms * 1000
        else:
            sec, us = n, int((m["frac"] or "")[:6].ljust(6, "0"))
        if not 0 < sec < 4_000_000_000:
            return None
        when = datetime.fromtimestamp(sec, UTC).replace(microsecond=us)
    else:
        try:
            if KIBANA_TIME.match(v):
                when = datetime.strptime(v, "%b %d, %Y @ %H:%M:%S" + (".%f" if "." in v else ""))
            else:
                when = datetime.fromisoformat(v.removesuffix(" UTC").removesuffix(" +0000 UTC"))
        except ValueError:
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=zone)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _pick(row: dict[str, str], columns: tuple[str, ...]) -> str | None:
    return next((row[c] for c in columns if row.get(c) not in (None, *MISSING)), None)


def _record(row: dict[str, str], zone: ZoneInfo) -> tuple[dict, str | None]:
    """One row as a shipper's JSON record, and its time. A row without a message keeps its
    cells as its line (an unknown event, never dropped)."""
    msg = _pick(row, MESSAGE_COLUMNS)
    if msg is None:
        msg = " ".join(v for v in row.values() if v not in MISSING)
    when = _pick(row, TIME_COLUMNS)
    iso = _iso(when, zone) if when is not None else None
    kube = {
        "pod_name": _pick(row, POD_COLUMNS),
        "namespace_name": _pick(row, NAMESPACE_COLUMNS),
        "container_name": _pick(row, CONTAINER_COLUMNS),
        "host": _pick(row, HOST_COLUMNS),
    }
    labels = row.get("labels")
    if labels and labels.lstrip().startswith("{"):
        try:
            found = load_json(labels)
        except ValueError:
            found = None
        if isinstance(found, dict):
            for field, keys in LABEL_KEYS.items():
                kube[field] = kube[field] or next((found[k] for k in keys if isinstance(found.get(k), str)), None)
    path = _pick(row, LOG_PATH_COLUMNS)
    if path is not None and kube["pod_name"] is None and (m := CLOUDWATCH_STREAM.search(path)):
        kube |= {"pod_name": m["pod"], "namespace_name": m["ns"], "container_name": m["cont"]}
    record: dict = {"message": msg.removesuffix("\n")}
    if iso is not None:
        record["time"] = iso
    if (level := _pick(row, LEVEL_COLUMNS)) is not None:
        record["level"] = level
    if (stream := _pick(row, STREAM_COLUMNS)) in ("stdout", "stderr"):
        record["stream"] = stream
    if kube := {k: v for k, v in kube.items() if v is not None}:
        record["kubernetes"] = kube
    return record, iso


def log_entries_csv(text: str, tz: str = "UTC") -> tuple[list[str], list[str]] | None:
    """A log export's rows as compact JSON records, one a line, oldest first, with notes on
    what was read; None when `text` is no log export (`sniff`)."""
    delim = _dialect(text[: text.find("\n") + 1 or len(text)])
    if delim is None:
        return None
    zone = ZoneInfo(tz)
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff")), delimiter=delim)
    header = [c.strip().lower() for c in next(reader)]
    rows: list[list[str]] = []
    notes: list[str] = []
    try:
        rows.extend(cells for cells in reader if any(cells))
    except csv.Error as e:  # (a NUL byte, a field past the size limit)
        notes.append(f"the CSV export could not be read past record {len(rows)} ({e})")
    if sum(len(cells) != len(header) for cells in rows) * 2 > len(rows):
        return None  # (an export's rows have its header's columns: this is a log whose first line has commas)
    records = [_record(dict(zip(header, cells, strict=False)), zone) for cells in rows]
    notes.insert(
        0,
        f"a CSV export of {len(records)} log records (a log store's, columns {', '.join(c for c in header if c)}), "
        "read one record a line: its line numbers count records",
    )
    times = [t for _, t in records if t is not None]
    descending = sum(a > b for a, b in zip(times, times[1:], strict=False))
    if descending and descending * 2 > len(times) - 1:
        records.reverse()
        notes.append("its records were listed newest first (as log stores show them): read oldest first")
    return [json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r, _ in records], notes
