"""Ingest: a directory of incident logs -> the events and metrics tables.

Stages: discover files (`files`) -> reference times of the files' heads, for lines without a
year (`reference`) -> read (gzip, binary sniff, decode) -> route whole-file documents: event
lists, exports; request traces are set aside for replay (`documents`) -> batch the lines of
many files and run `parsers.lines.parse_lines` on a thread pool (`batches`) -> each batch, in
file order, timed (`timing`), accounted (`accounting`) and given its final columns
(`provenance`) -> the tables, in memory or streamed to Parquet (`sink`).

Accounting invariant, per file: lines read = parsed + folded + unparsed. Nothing is dropped
without being counted.
"""

from forensics.ingestion.reference import reference_times
from forensics.ingestion.result import EVENTS_FILE, METRICS_FILE, FileReport, IngestResult
from forensics.ingestion.run import ingest, ingest_files, no_input
from forensics.ingestion.sink import write_tables
from forensics.ingestion.state import TimeHints

__all__ = [
    "EVENTS_FILE",
    "METRICS_FILE",
    "FileReport",
    "IngestResult",
    "TimeHints",
    "ingest",
    "ingest_files",
    "no_input",
    "reference_times",
    "write_tables",
]
