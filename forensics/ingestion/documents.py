"""Whole-file documents among the logs: request traces set aside for replay, files that are no
log at all, and the rows of documents (event lists, exports) read by their own parsers.

A document format is one entry of `READERS`: a sniff of the decoded text, and a read that
returns the document's rows or raises `DocumentError` saying why it could not; a document that
cannot be read is parsed line by line like any log, with the reason in the file's notes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import polars as pl

from forensics import schema as s
from forensics.ingestion import files as _files
from forensics.ingestion.state import FileMeta, TimeHints
from parsers import k8s
from parsers.documents import nvidia_smi, prometheus, ras_json
from parsers.jsonutil import load_json
from parsers.wrappers import log_entries_document

TRACE_KEYS = (
    {"hash_ids"},
    {"input_length", "output_length"},
    {"prompt_tokens", "arrival_time"},
    {"arrival_time", "prompt_len"},
)


def document_records(f: _files.InputFile, head: str, whole: bool) -> list[str] | None:
    """The records of a log store's JSON export (`log_entries_document`) whose `head` this is,
    else None. A head cut short is no JSON document: such a file is read whole, as the main pass
    reads it, unless its first line is a record of its own (JSON lines, whose head parses as it is)."""
    if not _files.starts_a_document(head[:4096].encode()):
        return None
    if not whole:
        first = head[: head.find("\n")]
        try:
            load_json(first)
            return None  # (a record a line)
        except ValueError:
            pass
        data, _notes, reason = _files.read_bytes(f)
        if not data or reason:
            return None
        head = _files.decode(data)[0]
    return log_entries_document(head)


def not_a_log(text: str, rel: str) -> str | None:
    """A reason to set the file aside when it is a data document rather than a log."""
    head = text.lstrip()[:4096]
    first = head.split("\n", 1)[0].strip()
    if first.startswith("{") and first.endswith("}") and not first.startswith('{"log":'):
        try:
            obj = load_json(first)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and any(k <= obj.keys() for k in TRACE_KEYS):
            return "request trace (JSON lines), not a log; replay it with `forensics replay`"
    low = first.lower()
    if "contexttokens" in low and "generatedtokens" in low:
        return "request trace (Azure CSV), not a log; replay it with `forensics replay`"
    if (
        head.startswith(("{", "["))
        and not head.startswith(('{"log":', "[rank", "[20", "[I ", "[E ", "[W ", "[F "))
        and '"__REALTIME_TIMESTAMP"' not in first
    ):
        try:
            load_json(text)
        except ValueError:
            return None
        return "JSON document, not a log (nor a Kubernetes event, Pod or Node list)"
    return None


def document_events(rows: list[dict], fid: int) -> pl.DataFrame:
    """A document's rows as a parsed batch: exact times (or none), one event a row. A
    Kubernetes event list's rows are one event each; a Prometheus export's say which lines
    they fold (`_nfold`) and which are events beside their line's own (`_extra`)."""
    docs = pl.DataFrame(rows, schema_overrides={s.TS: pl.Datetime("us", "UTC")}, infer_schema_length=None)
    have = docs.columns
    return (
        docs.with_columns(
            pl.lit(fid, pl.UInt32).alias("_fid"),
            pl.col(s.TS).alias("_outer_ts"),
            (pl.col("_nfold") if "_nfold" in have else pl.lit(0)).cast(pl.UInt32).alias("_nfold"),
            (1 + (pl.col("_nfold") if "_nfold" in have else pl.lit(0))).cast(pl.UInt32).alias(s.RAW_LINES),
            (pl.col("_extra") if "_extra" in have else pl.lit(False)).alias("_extra"),
            pl.lit(False).alias("_drop"),
            pl.lit(True).alias("_standalone"),
        )
        .drop(s.TS)
        .sort(s.LINE, maintain_order=True)
    )


def export_metrics(export: prometheus.Export, meta: FileMeta) -> pl.DataFrame:
    """A Prometheus export's metrics rows with the file's name, and its path's pod where no label gave one."""
    return s.conform(
        export.metrics.with_columns(
            pl.lit(meta.rel).alias(s.FILE), pl.col(s.POD).fill_null(pl.lit(meta.pod, pl.String))
        ),
        s.METRIC_DTYPES,
    )


class DocumentError(ValueError):
    """A file that sniffed as a document of its kind but could not be read as one: its message is
    the note the file's accounting keeps."""


@dataclass(frozen=True, kw_only=True)
class Document:
    """What a reader made of a whole file: event rows (and an export's metrics) and notes."""

    kind: str
    """The file's wrapper in the accounting: `prometheus-text`, `ncclras-json`, `k8s-events-json`..."""
    rows: list[dict]
    notes: list[str]
    meta: FileMeta
    """The file's meta, its pod cleared where the file's name is no pod's (a node's snapshot)."""
    metrics: pl.DataFrame | None = None


@dataclass(frozen=True, kw_only=True)
class DocumentReader:
    """One document format: `sniff(text)` gives its kind or None; `read` the document or raises
    `DocumentError`."""

    name: str
    sniff: Callable[[str], str | None]
    read: Callable[[str, str, FileMeta, TimeHints], Document]


def _prometheus(text: str, kind: str, meta: FileMeta, hints: TimeHints) -> Document:
    try:
        export = prometheus.parse_document(text, kind, hints.tz)
    except Exception as e:  # noqa: BLE001 - a flaw in reading an export must not cost the run
        raise DocumentError(
            f"Prometheus export not read ({type(e).__name__}: {str(e)[:120]}); parsed line by line"
        ) from e
    if export.names_pods:  # (a federate or DCGM dump: its file name is no pod's)
        meta = replace(meta, pod=None)
    return Document(
        kind=f"prometheus-{kind}",
        rows=export.events,
        notes=export.notes,
        meta=meta,
        metrics=export_metrics(export, meta),
    )


def _ras(text: str, kind: str, meta: FileMeta, hints: TimeHints) -> Document:
    try:
        rows, notes = ras_json.parse_document(text, hints.tz)
    except ValueError as e:
        raise DocumentError(f"{e}; parsed line by line instead") from e
    # (the report names hosts, not its file)
    return Document(kind="ncclras-json", rows=rows, notes=notes, meta=replace(meta, pod=None))


def _nvidia_smi(text: str, kind: str, meta: FileMeta, hints: TimeHints) -> Document:
    try:
        rows = nvidia_smi.parse_document(text, kind, meta.rel, hints.tz)
    except Exception as e:  # noqa: BLE001 - a flaw in reading a snapshot must not cost the run
        raise DocumentError(
            f"nvidia-smi snapshot not read ({type(e).__name__}: {str(e)[:120]}); parsed line by line"
        ) from e
    # (a node's file: its GPUs, not a pod's)
    return Document(kind="nvidia-smi", rows=rows, notes=[], meta=replace(meta, pod=None))


def _k8s_sniff(text: str) -> str | None:
    """`events-<kind>` or `state-<kind>`: an event list is tried first, as it always was."""
    if kind := k8s.sniff_event_document(text):
        return f"events-{kind}"
    if kind := k8s.sniff_state_document(text):
        return f"state-{kind}"
    return None


def _k8s(text: str, kind: str, meta: FileMeta, hints: TimeHints) -> Document:
    what, _, fmt = kind.partition("-")
    rows, err = (k8s.parse_state_document if what == "state" else k8s.parse_event_document)(text, fmt)
    if err is not None:
        raise DocumentError(err)
    return Document(kind=f"k8s-{kind}", rows=rows, notes=[], meta=meta)


READERS: tuple[DocumentReader, ...] = (
    DocumentReader(name="prometheus", sniff=prometheus.sniff, read=_prometheus),
    DocumentReader(name="ncclras", sniff=lambda text: "json" if ras_json.sniff(text) else None, read=_ras),
    DocumentReader(name="nvidia-smi", sniff=nvidia_smi.sniff, read=_nvidia_smi),
    DocumentReader(name="k8s", sniff=_k8s_sniff, read=_k8s),
)
"""Tried in this order on every decoded file; the first that sniffs and reads it takes it."""


def read_document(text: str, meta: FileMeta, hints: TimeHints, notes: list[str]) -> Document | None:
    """The first reader's document for `text`, else None; each reader that sniffed it but could
    not read it adds its reason to `notes` and the next is tried."""
    for reader in READERS:
        kind = reader.sniff(text)
        if not kind:
            continue
        try:
            return reader.read(text, kind, meta, hints)
        except DocumentError as e:
            notes.append(str(e))
    return None
