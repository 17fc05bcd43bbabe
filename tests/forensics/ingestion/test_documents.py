"""Whole-file documents: the reader registry and its one error contract (`forensics.ingestion.documents`)."""

from __future__ import annotations

import pytest

from forensics.ingestion import documents
from forensics.ingestion.documents import Document, DocumentError, DocumentReader, read_document
from forensics.ingestion.state import FileMeta, TimeHints

META = FileMeta(rel="gpu-a/metrics.prom", pod="vllm-0", namespace=None, container=None, mtime=0.0)
EXPOSITION = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="llama"} 12.0
vllm:num_requests_waiting{model_name="llama"} 3.0
vllm:gpu_cache_usage_perc{model_name="llama"} 0.42
"""


def test_a_prometheus_exposition_is_read_as_a_document_with_its_metrics():
    notes: list[str] = []
    doc = read_document(EXPOSITION, META, TimeHints(), notes)
    assert doc is not None and doc.kind == "prometheus-text" and notes == []
    assert doc.metrics is not None and doc.metrics.height >= 3


def test_a_plain_log_is_no_document():
    text = "INFO 03-02 10:00:01 engine.py:100] Avg prompt throughput: 1.0 tokens/s\n" * 5
    notes: list[str] = []
    assert read_document(text, META, TimeHints(), notes) is None and notes == []


def test_a_reader_that_cannot_read_what_it_sniffed_leaves_a_note_and_the_next_reader_is_tried(monkeypatch):
    def broken(text, kind, meta, hints):
        raise DocumentError("broken export; parsed line by line")

    def fine(text, kind, meta, hints):
        return Document(kind=f"fake-{kind}", rows=[], notes=[], meta=meta)

    monkeypatch.setattr(
        documents,
        "READERS",
        (
            DocumentReader(name="a", sniff=lambda t: "x", read=broken),
            DocumentReader(name="b", sniff=lambda t: "y", read=fine),
        ),
    )
    notes: list[str] = []
    doc = read_document("anything", META, TimeHints(), notes)
    assert doc is not None and doc.kind == "fake-y"
    assert notes == ["broken export; parsed line by line"]


def test_only_document_errors_are_swallowed(monkeypatch):
    # A reader's own bug is not an unreadable document: it must surface, not become a note.
    def buggy(text, kind, meta, hints):
        raise KeyError("our bug")

    monkeypatch.setattr(documents, "READERS", (DocumentReader(name="a", sniff=lambda t: "x", read=buggy),))
    with pytest.raises(KeyError):
        read_document("anything", META, TimeHints(), [])
