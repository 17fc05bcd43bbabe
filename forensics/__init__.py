"""forensics: incident postmortems from the logs of GPU LLM-serving clusters (vLLM, NCCL, Kubernetes).

Public API, loaded lazily so that the CLI's `--help` does not pay for the polars-heavy
modules it does not use. Importing the library changes no process state: the CLI tunes the
allocators (`forensics._malloc`) before polars loads::

    from forensics import ingest
    result = ingest("logs/")          # events + metrics tables, per-file accounting
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

_LAZY = {
    "analyze": "forensics.diagnosis",
    "Report": "forensics.diagnosis",
    "FileReport": "forensics.ingestion",
    "IngestResult": "forensics.ingestion",
    "ingest": "forensics.ingestion",
    "ForensicsError": "forensics.errors",
    "schema": "forensics.schema",
}

__all__ = ["FileReport", "ForensicsError", "IngestResult", "Report", "__version__", "analyze", "ingest", "schema"]

if TYPE_CHECKING:
    from forensics import schema
    from forensics.diagnosis.analysis import Report, analyze
    from forensics.errors import ForensicsError
    from forensics.ingestion import FileReport, IngestResult, ingest


def __getattr__(name: str):
    if name in _LAZY:
        module = importlib.import_module(_LAZY[name])
        return module if name == "schema" else getattr(module, name)
    raise AttributeError(f"module 'forensics' has no attribute {name!r}")
