"""The bridge from ingested events to `replay.capture`: vLLM request lines become a trace.

Kept on the forensics side so `replay/` stays free of log formats: the events table
already holds each line's UTC time and its message with headers and wrappers peeled.
"""

from __future__ import annotations

import polars as pl

from forensics import schema as S


def captured_trace(events: pl.DataFrame, source: str = "vllm request logs"):
    """A `replay.traces.Trace` from the request lines among `events` (None when there are none)."""
    from replay.capture import capture

    rows = events.filter(
        pl.col(S.TS).is_not_null()
        & pl.col(S.MESSAGE).str.contains(r"(?:Received request|Request \S+ details:|Generated response) ")
    ).select(pl.col(S.TS).dt.epoch("us").cast(pl.Float64) / 1e6, S.MESSAGE)
    if rows.height == 0:
        return None
    tr = capture(rows.iter_rows(), source=source)
    return tr if tr.requests or tr.rejected else None


def load_or_capture(path):
    """A trace file as it is; a log file or directory: its trace file, else its captured request lines."""
    from pathlib import Path

    from forensics.errors import ForensicsError, ParseError
    from forensics.ingestion import ingest
    from replay import traces

    path = Path(path)
    if path.is_file():
        try:
            return traces.load(path)
        except ParseError:
            pass  # a log file: capture from its request lines below
    res = ingest([path])
    if res.traces:
        return traces.load(path / res.traces[0] if path.is_dir() else path)
    tr = captured_trace(res.events, source=f"vLLM request lines in {path}")
    if tr is None or not tr.requests:
        why = "; ".join(f"{n} {k}" for k, n in sorted(tr.rejected.items())) if tr else "no request lines"
        raise ForensicsError(
            f"no request trace in {path} ({why})",
            hint="pass a trace.jsonl / Azure CSV, or logs of vLLM run with request logging "
            "(--enable-log-requests; the newest versions log prompt token ids at DEBUG)",
        )
    return tr
