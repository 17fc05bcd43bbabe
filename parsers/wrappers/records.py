"""JSON records around a line: docker json-file, log shippers' and cloud loggers' records, Python
logging's JSON formatters, and a log store's JSON export of records."""

from __future__ import annotations

import json
import re

import polars as pl

from parsers import k8s
from parsers import schema as s
from parsers._common import APP_LEVEL_WORDS, time_parts
from parsers.frame import TIME_PARTS
from parsers.jsonutil import load_json
from parsers.wrappers.heads import EPOCH_MAX_S, STR, json_objects, parse_rfc3339

JSON_MESSAGE_KEYS = ("log", "message", "msg")


JSON_TIME_KEYS = ("time", "@timestamp", "timestamp", "date", "ts", "created", "asctime")
"""Where a record's time is, first found first: python-json-logger's `created` (seconds since
the epoch) before its `asctime` (the local time the formatter wrote, no zone: `LOCAL_TIME`)."""


JSON_LEVEL_KEYS = ("level", "severity", "lvl", "levelname", "log.level", "loglevel")


JSON_LOGGER_KEYS = ("logger", "logger_name", "name", "caller")


JSON_ERROR_KEYS = ("error", "err")


JSON_TRACE_KEYS = ("exc_info", "exception", "stacktrace", "stack_trace")


LOGGER_SOURCES = {"vllm": "vllm", "uvicorn": "uvicorn", "lmcache": "kv-store"}
"""Python loggers, by their top-level name, whose JSON records are their producer's events:
vLLM's JSON formatter (`--logging-config.formatter json`, or python-json-logger in a
`VLLM_LOGGING_CONFIG_PATH` dictConfig) writes one record per vLLM and uvicorn log record
(`name`, `levelname`, `message`, `asctime`, `process`, `vllm_process_name`), and LMCache logs
through Python's logging in the engine's process. Their messages are what the text lines'
messages are (metrics, request ids, access lines), so they are read as those producers'."""


LOCAL_TIME = (
    r"^(?:(?P<Y>\d{4})-)?(?P<mo>\d{2})-(?P<d>\d{2})[T ](?P<H>\d{2}):(?P<M>\d{2}):(?P<S>\d{2})"
    r"(?:[.,](?P<frac>\d{1,9}))?$"
)
"""A record's time written without a zone: Python logging's `asctime` (`2025-03-02 08:07:00,123`,
or vLLM's `%m-%d %H:%M:%S`, no year) or an ISO time without an offset. It is the local time of
the writer: read as time parts (`--tz`, the year inferred where none), not as UTC."""


JSON_RECORD_DTYPE = pl.Struct(
    {
        "m": STR,
        "iso": STR,
        "epoch": pl.Float64,
        "stream": STR,
        "host": STR,
        "pod": STR,
        "ns": STR,
        "cont": STR,
        "level": STR,
        "comp": STR,
        "proc": STR,
        "pid": STR,
        "src": STR,
        "reason": STR,
        "etype": STR,
        "object": STR,
        "count": pl.Int64,
    }
)


def _json_level(v: object) -> str | None:
    """A record's level word as `schema.Level`; pino/bunyan numbers (30 info .. 60 fatal) too."""
    if isinstance(v, str):
        return APP_LEVEL_WORDS.get(v.strip().upper())
    if isinstance(v, int) and not isinstance(v, bool) and 10 <= v <= 60:
        return (
            "CRITICAL" if v >= 60 else "ERROR" if v >= 50 else "WARNING" if v >= 40 else "INFO" if v >= 30 else "DEBUG"
        )
    return None


def _application_fields(obj: dict, msg: str) -> tuple[str, str | None, str | None]:
    """An application's own JSON record (zap, logrus, slog, structlog, python-json-logger): its
    message with the error it carries beside it (zap and logrus put the cause in `error`, not in
    `msg`: `Failed to dispatch request error="no pods available"`) and the traceback on the lines
    after, its level and its logger (or the caller's file). A shipper's record of a plain line
    has none of these and keeps its line as it was.

    (Loops, not generator expressions: this runs once a record, and they cost half its time.)"""
    for k in JSON_ERROR_KEYS:
        err = obj.get(k)
        if type(err) is str and err:
            if err not in msg:
                msg = f"{msg} error={json.dumps(err)}"
            break
    for k in JSON_TRACE_KEYS:
        trace = obj.get(k)
        if type(trace) is str and trace.strip():
            if trace not in msg:
                msg = f"{msg}\n{trace.rstrip()}"
            break
    level = None
    for k in JSON_LEVEL_KEYS:
        v = obj.get(k)
        if v is not None and (level := _json_level(v)) is not None:
            break
    comp = None
    for k in JSON_LOGGER_KEYS:
        v = obj.get(k)
        if type(v) is str and v:
            comp = v
            break
    if comp is not None and comp == obj.get("caller"):
        comp = comp.rsplit(":", 1)[0] if comp.rsplit(":", 1)[-1].isdigit() else comp
    return msg, level, comp


def _kube_name(kube: dict, flat: str, nested: str) -> str | None:
    """`kubernetes.pod_name` (Fluent Bit, Vector) or `kubernetes.pod.name` (Elastic ECS)."""
    v = kube.get(flat)
    if v is None and isinstance(kube.get(nested), dict):
        v = kube[nested].get("name")
    if v is None and isinstance(kube.get(nested), str):
        v = kube[nested]
    return v if isinstance(v, str) else None


def _json_access(obj: dict) -> tuple[str, dict] | None:
    """A gateway's JSON access record (Envoy Gateway's default, Istio's JSON encoding) as the
    line Envoy's text format writes, for `parsers.envoy`, and the object with its start time
    under a time key; None when `obj` is no such record."""
    code, method = obj.get("response_code"), obj.get("method")
    if not isinstance(method, str) or not isinstance(code, int) or isinstance(code, bool):
        return None
    path = next((obj[k] for k in ("x-envoy-origin-path", "path", "x-envoy-original-path") if obj.get(k)), "-")
    flags = obj.get("response_flags") or "-"
    details = obj.get("response_code_details") or "-"
    line = f'"{method} {path} {obj.get("protocol") or "HTTP/1.1"}" {code} {flags} {details}'
    extra = [
        f"{k}={obj[k]}"
        for k in ("upstream_host", "upstream_transport_failure_reason", "duration", "x-request-id", "request_id")
        if obj.get(k) not in (None, "", "-")
    ]
    return " ".join([line, *extra]), obj | {"time": obj.get("start_time") or obj.get("time")}


def log_entries_document(text: str) -> list[str] | None:
    """A JSON document that is a list of log records, as one compact record per line (for
    `json_record`), or None when it is no such document: `gcloud logging read --format=json`
    (a list of Cloud Logging entries), `aws logs filter-log-events` (`events`), an
    Elasticsearch/OpenSearch search response (`hits.hits[]._source`), or a plain list of
    shippers' records. Most of its objects must carry a line and a time."""
    if not re.match(r"\s*[\[{]", text):  # (no copy of a large text, as `lstrip` would make)
        return None
    try:
        doc = load_json(text)
    except ValueError:
        return None
    if isinstance(doc, dict):
        hits = doc.get("hits")
        if isinstance(doc.get("events"), list):
            doc = doc["events"]
        elif isinstance(hits, dict) and isinstance(hits.get("hits"), list):
            doc = [h.get("_source") if isinstance(h, dict) else None for h in hits["hits"]]
        else:
            return None
    if not isinstance(doc, list) or not doc:
        return None

    def is_record(e: object) -> bool:
        if not isinstance(e, dict):
            return False
        e = _cloud_entry(e)
        return any(isinstance(e.get(k), str) for k in JSON_MESSAGE_KEYS) and any(
            e.get(k) is not None for k in JSON_TIME_KEYS
        )

    if sum(map(is_record, doc)) * 2 < len(doc):
        return None
    return [json.dumps(e, ensure_ascii=False, separators=(",", ":")) for e in doc]


CLOUDWATCH_STREAM = re.compile(r"containers[./]" + k8s.CONTAINER_LOG_NAME + "$")
"""Fluent Bit's CloudWatch output names a stream for its tag, the container log's path:
`kube.var.log.containers.<pod>_<namespace>_<container>-<container id>.log` (`k8s.CONTAINER_LOG_NAME`)."""


def _cloud_entry(obj: dict) -> dict:
    """A CloudWatch Logs event (`logStreamName` naming the container's log) or a Google Cloud
    Logging entry (GKE's logs as `gcloud logging read` or a Log Router sink
    writes them) as a shipper's record: the line from `textPayload` (or `jsonPayload`'s
    message, its other fields kept for the level and error), pod, namespace and container from
    `resource.labels`, the node from `labels` (`compute.googleapis.com/resource_name`). A
    Kubernetes event in `jsonPayload` (GKE's `events` log) is read as the event documents are
    (`k8s.event_row`: `Reason: message` on its involved pod, the node its kubelet reports from,
    its reason, type and count), and left under `EVENT_KEY`. Any other object is returned as it
    was."""
    stream = obj.get("logStreamName")
    if isinstance(stream, str) and "kubernetes" not in obj and (m := CLOUDWATCH_STREAM.search(stream)):
        return obj | {"kubernetes": {"pod_name": m["pod"], "namespace_name": m["ns"], "container_name": m["cont"]}}
    resource = obj.get("resource")
    if not isinstance(resource, dict) or not ("textPayload" in obj or isinstance(obj.get("jsonPayload"), dict)):
        return obj
    res = resource.get("labels") if isinstance(resource.get("labels"), dict) else {}
    labels = obj.get("labels") if isinstance(obj.get("labels"), dict) else {}
    kube = {
        "pod_name": res.get("pod_name"),
        "namespace_name": res.get("namespace_name"),
        "container_name": res.get("container_name"),
        "host": res.get("node_name") or labels.get("compute.googleapis.com/resource_name"),
    }
    payload = obj.get("jsonPayload") if isinstance(obj.get("jsonPayload"), dict) else {}
    text = obj.get("textPayload")
    event = None
    if not isinstance(text, str):
        text = next((payload[k] for k in JSON_MESSAGE_KEYS if isinstance(payload.get(k), str)), None)
        if isinstance(payload.get("involvedObject"), dict) and isinstance(payload.get("reason"), str):
            # (GKE sets the entry's severity from the event's type: it stands in for a type left out)
            typed = "type" in payload or obj.get("severity") not in ("WARNING", "ERROR")
            event = k8s.event_row(payload if typed else payload | {"type": "Warning"}, 0)
            text = event[s.MESSAGE]
            kube = {
                "pod_name": event[s.POD] or kube["pod_name"],
                "namespace_name": event[s.NAMESPACE] or kube["namespace_name"],
                "container_name": event[s.CONTAINER],
                "host": event[s.HOST] or kube["host"],
            }
        if text is None:
            text = json.dumps(payload, sort_keys=True)
    rest = {k: v for k, v in payload.items() if k not in JSON_MESSAGE_KEYS}
    return rest | {
        "message": text,
        "timestamp": obj.get("timestamp")
        or obj.get("receiveTimestamp")
        or (event[s.TS].isoformat() if event and event[s.TS] else None),
        "severity": obj.get("severity") if obj.get("severity") != "DEFAULT" else rest.get("severity"),
        "kubernetes": {k: v for k, v in kube.items() if isinstance(v, str) and v},
        EVENT_KEY: event,
    }


EVENT_KEY = "\x00k8s-event"
"""Where `_cloud_entry` leaves the Kubernetes event it read (`k8s.event_row`'s row): a key that
starts with NUL, which no log shipper writes."""


DOCKER_JSON = (
    r'^\{"log":"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u(?:[0-9a-cA-Ce-fE-F][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}))*"'
    r',"stream":"(?:stdout|stderr)","time":"[0-9A-Za-z:.+\-]*"\}$'
)
"""A Docker json-file record exactly as the daemon writes it (`{"log":"...\\n","stream":"stdout",
"time":"2025-03-02T07:59:50.123456789Z"}`, nothing else, no escaped surrogate): decoded by
polars (`docker_json`) rather than a `json.loads` and a dict a line in Python
(`json_record`), which read them at ~30k lines/s. Any other JSON line, or one of these that
differs in any way, takes `json_record`."""


def docker_json(d: pl.DataFrame) -> pl.DataFrame:
    """`DOCKER_JSON` records: `json_record`'s columns for them, the log line without its
    newline, its stream and time; no pod, level or logger (a plain line's record has none)."""
    rec = pl.col("body").str.json_decode(pl.Struct({"log": STR, "stream": STR, "time": STR})).struct.field
    given = {"m": rec("log").str.strip_suffix("\n"), "iso": rec("time"), "stream": rec("stream")}
    m = pl.struct(*(given.get(f.name, pl.lit(None, f.dtype)).alias(f.name) for f in JSON_RECORD_DTYPE.fields))
    return _record_columns(d.with_columns(m.alias("_m")))


def json_record(d: pl.DataFrame) -> pl.DataFrame:
    """`_json_record_each`'s columns for JSON lines; Python logging's records of the common
    shape (`PYTHON_RECORD`) are decoded by polars (`_python_records`), as the Docker records are."""
    shaped = d.select(pl.col("body").str.contains(PYTHON_RECORD)).to_series()
    if not shaped.any():
        return _json_record_each(d)
    try:
        fast = _python_records(d.filter(shaped))
    except pl.exceptions.ComputeError:  # (a line `PYTHON_RECORD` let through that polars cannot decode)
        return _json_record_each(d)
    read = fast.select(pl.col("_m").struct.field("m").is_not_null()).to_series()
    rest = pl.concat([d.filter(~shaped), fast.filter(~read).drop("_m")], how="diagonal_relaxed")
    parts = [_record_columns(fast.filter(read))] + ([_json_record_each(rest)] if rest.height else [])
    return pl.concat(parts, how="diagonal_relaxed") if len(parts) > 1 else parts[0]


def _json_record_each(d: pl.DataFrame) -> pl.DataFrame:
    """One JSON object per line with the log line inside: Docker's json-file driver
    (`{"log":"...\\n","stream":"stdout","time":"..."}`) and what log shippers write or
    export (Fluent Bit, Vector, Elasticsearch/OpenSearch: `log`/`message`, `time`/
    `@timestamp`/`date`, and a `kubernetes` object with pod, namespace, container, host;
    Google Cloud Logging's entries, see `_cloud_entry`; CloudWatch's `message`/`timestamp`).
    A line that is not such an object is left as it was (a producer may still match it).

    Each record is a tuple in `JSON_RECORD_DTYPE`'s order (a dict a row held ~1.5 KB for each
    line of a batch in flight)."""
    rows: list[tuple | None] = []
    for obj in json_objects(d["body"]):
        msg = None
        if obj is not None:
            obj = _cloud_entry(obj)
            for k in JSON_MESSAGE_KEYS:
                v = obj.get(k)
                if type(v) is str:
                    msg = v
                    break
            if msg is None and (access := _json_access(obj)) is not None:
                msg, obj = access
        if msg is None:
            rows.append(None)
            continue
        when = None
        for k in JSON_TIME_KEYS:
            if (when := obj.get(k)) is not None:
                break
        epoch = float(when) if isinstance(when, (int, float)) and not isinstance(when, bool) else None
        if epoch is not None and epoch > 1e11:  # milliseconds since the epoch
            epoch /= 1000.0
        if epoch is not None and not (0 < epoch < EPOCH_MAX_S):  # NaN, inf, or no plausible time
            epoch = None
        kube = obj.get("kubernetes")
        if type(kube) is dict and kube:
            host = kube.get("host") if isinstance(kube.get("host"), str) else _kube_name(kube, "node_name", "node")
            names = tuple(_kube_name(kube, f"{n}_name", n) for n in ("pod", "namespace", "container"))
        else:
            host, names = None, (None, None, None)
        event = obj.get(EVENT_KEY)
        if event is not None:  # (a Kubernetes event: its reporter and its type's level, as `-o json` gives them)
            level, comp, proc, pid = event[s.LEVEL], event[s.COMPONENT], None, None
            kinds = (
                "k8s-event",
                event.get(s.K8S_REASON),
                event.get(s.K8S_TYPE),
                event.get(s.K8S_OBJECT),
                event.get(s.K8S_COUNT),
            )
        else:
            msg, level, comp = _application_fields(obj, msg.removesuffix("\n"))
            src, comp, proc, pid = _python_logger(obj, comp)
            kinds = (src or ("app" if level is not None else None), None, None, None, None)
        stream = obj.get("stream")
        rows.append(
            (
                msg,
                when if type(when) is str else None,
                epoch,
                stream if type(stream) is str else None,
                host,
                *names,
                level,
                comp,
                proc,
                pid,
                *kinds,
            )
        )
    return _record_columns(d.with_columns(_record_series(rows)))


def _python_logger(obj: dict, comp: str | None) -> tuple[str | None, str | None, str | None, str | None]:
    """(source, component, process, pid) of a Python logger's record (`LOGGER_SOURCES`): the
    file it was logged from where the record says (`filename`), else the logger; the process
    by vLLM's name for it (`EngineCore_DP0`, as the text lines' prefix names it) or Python's,
    not `MainProcess` (the text lines of a main process have no prefix either). Another
    logger's record: no source, the component as it was."""
    src = LOGGER_SOURCES.get(comp.split(".", 1)[0]) if comp is not None else None
    if src is None:
        return None, comp, None, None
    filename = obj.get("filename")
    proc = obj.get("vllm_process_name")
    if type(proc) is not str or not proc:
        proc = obj.get("processName")
    pid = obj.get("process")
    return (
        src,
        filename if type(filename) is str and filename else comp,
        proc if type(proc) is str and proc and proc != "MainProcess" else None,
        str(pid) if type(pid) is int else None,
    )


_JSON_STRING = (
    r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u(?:00[2-9a-fA-F][0-9a-fA-F]|0[1-9a-fA-F][0-9a-fA-F]{2}'
    r'|[1-9a-cA-Ce-fE-F][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}))*"'
)
"""A JSON string with no escaped control character but `\\t \\n \\r \\b \\f` and no escaped
surrogate: what polars and `json.loads` decode alike, and what Python's and polars' stripping of
whitespace agree on (Python's also strips U+001C-U+001F)."""


PYTHON_RECORD_STRINGS = (
    *("asctime", "timestamp", "levelname", "name", "message", "processName", "vllm_process_name", "filename"),
    *("funcName", "module", "pathname", "threadName", "taskName", "exc_info", "stack_info"),
)


PYTHON_RECORD_INTEGERS = ("process", "lineno", "thread", "levelno")


PYTHON_RECORD_FLOATS = ("created", "msecs", "relativeCreated")


_PYTHON_MEMBER = (
    rf'"(?:{"|".join(PYTHON_RECORD_STRINGS)})": ?(?:{_JSON_STRING}|null)'
    rf'|"(?:{"|".join(PYTHON_RECORD_INTEGERS)})": ?(?:-?(?:0|[1-9]\d{{0,17}})|null)'
    rf'|"(?:{"|".join(PYTHON_RECORD_FLOATS)})": ?(?:-?(?:0|[1-9]\d{{0,17}})(?:\.\d{{1,18}})?(?:[eE][+-]?\d{{1,2}})?|null)'
)
"""(Numbers as JSON writes them, no leading zero, no more digits than 64 bits hold, exponents
within a double's range.)"""


PYTHON_RECORD = rf"^\{{(?:{_PYTHON_MEMBER})(?:, ?(?:{_PYTHON_MEMBER}))*\}}$"
"""A Python logging record as python-json-logger (and vLLM's JSON formatter) writes it: only
LogRecord's own attributes and vLLM's `vllm_process_name`, each of its type, `", "` between
them. Decoded by polars (`_python_records`) rather than a `json.loads` and a dict a line
(`_json_record_each`, ~100k lines/s); any other record, or one of these that differs in any way,
takes `_json_record_each`. (A key given twice is the one case they would read apart; no
formatter writes one.)"""


def _python_records(d: pl.DataFrame) -> pl.DataFrame:
    """`_m` (`JSON_RECORD_DTYPE`) of `PYTHON_RECORD` lines, as `_json_record_each` reads them;
    null where the record has no message (`_json_record_each` says what such a line is)."""
    dtype = pl.Struct(
        {
            **{k: STR for k in PYTHON_RECORD_STRINGS},
            **{k: pl.Int64 for k in PYTHON_RECORD_INTEGERS},
            **{k: pl.Float64 for k in PYTHON_RECORD_FLOATS},
        }
    )
    d = d.with_columns(pl.col("body").str.json_decode(dtype).alias("_py"))
    r = pl.col("_py").struct.field  # (decoded once: each field's reference decoded the line again, 8x the time)
    stamp, created, asctime = r("timestamp"), r("created"), r("asctime")
    # The time keys in `JSON_TIME_KEYS`' order: `timestamp`, then `created` (epoch seconds), then `asctime`.
    iso = pl.when(stamp.is_not_null()).then(stamp).when(created.is_null()).then(asctime)
    epoch = pl.when(stamp.is_null()).then(created)
    epoch = pl.when(epoch > 1e11).then(epoch / 1000.0).otherwise(epoch)
    epoch = pl.when((epoch > 0) & (epoch < EPOCH_MAX_S)).then(epoch)
    msg = r("message").str.strip_suffix("\n")
    trace = r("exc_info")
    traced = trace.is_not_null() & (trace.str.strip_chars() != "") & ~msg.str.contains(trace, literal=True)
    msg = pl.when(traced).then(pl.concat_str([msg, pl.lit("\n"), trace.str.strip_chars_end()])).otherwise(msg)
    level = r("levelname").str.strip_chars().str.to_uppercase().replace_strict(APP_LEVEL_WORDS, default=None)
    name = pl.when(r("name") != "").then(r("name"))
    src = name.str.split(".").list.first().replace_strict(LOGGER_SOURCES, default=None, return_dtype=STR)
    filename = pl.when(r("filename") != "").then(r("filename"))
    proc = pl.coalesce(pl.when(r("vllm_process_name") != "").then(r("vllm_process_name")), r("processName"))
    given = {
        "m": msg,
        "iso": iso,
        "epoch": epoch,
        "level": level,
        "comp": pl.when(src.is_not_null()).then(pl.coalesce(filename, name)).otherwise(name),
        "proc": pl.when(src.is_not_null() & (proc != "") & (proc != "MainProcess")).then(proc),
        "pid": pl.when(src.is_not_null()).then(r("process").cast(STR)),
        "src": pl.coalesce(src, pl.when(level.is_not_null()).then(pl.lit("app"))),
    }
    m = pl.struct(*(given.get(f.name, pl.lit(None, f.dtype)).alias(f.name) for f in JSON_RECORD_DTYPE.fields))
    return d.with_columns(pl.when(r("message").is_not_null()).then(m).alias("_m")).drop("_py")


RECORD_NAMES = tuple(f.name for f in JSON_RECORD_DTYPE.fields)


def _record_series(rows: list[tuple | None]) -> pl.Series:
    """`_m` (`JSON_RECORD_DTYPE`) from `json_record`'s tuples, null where a line was no record."""
    schema = {f.name: f.dtype for f in JSON_RECORD_DTYPE.fields}
    empty = (None,) * len(RECORD_NAMES)
    frame = pl.DataFrame([r or empty for r in rows], schema=schema, orient="row")
    missing = pl.Series([r is None for r in rows], dtype=pl.Boolean)
    return frame.select(pl.when(~missing).then(pl.struct(pl.all())).alias("_m")).to_series()


def _record_columns(d: pl.DataFrame) -> pl.DataFrame:
    """The line and its wrapper's columns from `_m` (`JSON_RECORD_DTYPE`, null where no record
    was read). A line that is no record keeps what it had; a record keeps what the layers
    outside it gave where it says nothing itself (the time of `kubectl logs --timestamps`
    before a record without one, or with only a local time; the pod of `--prefix`)."""
    m = pl.col("_m").struct.field
    ok = m("m").is_not_null()
    when = pl.coalesce(
        parse_rfc3339(m("iso")),
        pl.from_epoch((m("epoch") * 1e6).cast(pl.Int64, strict=False), time_unit="us").dt.replace_time_zone("UTC"),
    )

    dtypes = {f.name: f.dtype for f in JSON_RECORD_DTYPE.fields}

    def record(column: str, field: str, over: bool = False) -> pl.Expr:
        """`field` where the line is a record (over what the line had when `over`), else what it had."""
        had = pl.col(column) if column in d.columns else pl.lit(None, dtypes[field])
        return pl.when(ok).then(pl.coalesce(m(field), had) if over else m(field)).otherwise(had).alias(column)

    return d.with_columns(
        record("body", "m"),
        record(s.STREAM, "stream"),
        pl.coalesce(pl.when(ok).then(when), pl.col("_outer_ts")).alias("_outer_ts"),
        record(s.HOST, "host"),
        record("_wpod", "pod", over=True),
        record("_wns", "ns", over=True),
        record("_wcont", "cont", over=True),
        # (a producer the line turns out to be sets its own; a line of no known producer keeps these)
        record(s.LEVEL, "level"),
        record(s.COMPONENT, "comp"),
        record(s.PROCESS, "proc", over=True),
        record("_pid", "pid", over=True),
        record("_jsrc", "src"),
        *_local_time_parts(m("iso"), ok & when.is_null()),
        # (a Kubernetes event's own fields; null on every other record)
        record(s.K8S_REASON, "reason"),
        record(s.K8S_TYPE, "etype"),
        record(s.K8S_OBJECT, "object"),
        record(s.K8S_COUNT, "count"),
    ).drop("_m")


RECORD_TIME_PARTS = {part: "_j" + part.removeprefix("_") for part in TIME_PARTS}
"""A record's local time (`LOCAL_TIME`) as time parts, beside the producer's: the record's
time is the line's, as a wrapper's is (`lines._record_times`)."""


def _local_time_parts(iso: pl.Expr, where: pl.Expr) -> list[pl.Expr]:
    """`RECORD_TIME_PARTS` of the records (`where`) whose time has no zone (`LOCAL_TIME`)."""
    local = iso.str.extract_groups(LOCAL_TIME).struct.field
    parts = time_parts(lambda g: pl.when(where).then(local(g)))
    return [e.alias(RECORD_TIME_PARTS[part]) for e, part in zip(parts, TIME_PARTS, strict=True)]
