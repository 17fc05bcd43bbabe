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


def replay_input(result, root):
    """What `forensics replay` / `analyze --replay` replay for logs ingested from `root`.

    The trace file found among them (as a path, so reports name it), else a `Trace`
    captured from their vLLM request lines; a `ForensicsError` saying what to provide when
    neither exists.
    """
    from pathlib import Path

    from forensics.errors import ForensicsError

    root = Path(root)
    if result.traces:
        return Path(result.trace_paths[result.traces[0]])
    tr = captured_trace(result.events, source=f"vLLM request lines in {root}")
    if tr is None or not tr.requests:
        why = "; ".join(f"{n} {k}" for k, n in sorted(tr.rejected.items())) if tr else "no request lines"
        raise ForensicsError(
            f"no request trace in {root} ({why})",
            hint="pass a trace.jsonl / Azure CSV, or logs of vLLM run with request logging "
            "(--enable-log-requests; the newest versions log prompt token ids at DEBUG)",
        )
    return tr


def load_or_capture(path):
    """A trace file as its path; a log file or directory: its trace file, else its captured request lines."""
    from pathlib import Path

    from forensics.ingestion import ingest
    from replay import traces

    path = Path(path)
    if path.is_file() and traces.is_trace(path):
        return path
    return replay_input(ingest([path]), path)
