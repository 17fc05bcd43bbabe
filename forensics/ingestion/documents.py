"""Whole-file documents among the logs: request traces set aside for replay, files that are no
log at all, and the rows of documents (event lists, exports) read by their own parsers."""

from __future__ import annotations

import polars as pl

from forensics import schema as s
from forensics.ingestion import files as _files
from forensics.ingestion.state import FileMeta
from parsers import prometheus
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
