"""The bridge from ingested logs to `replay/`: what to replay, and in what conditions.

vLLM request lines become a trace (`replay.capture`), and the engines' own lines give the
pool (`GPU KV cache size`) and the pressure (`GPU KV cache usage`) that `replay_incident`
replays under. Kept on the forensics side so `replay/` stays free of log formats: the
events and metrics tables already hold each line's UTC time and its message with headers
and wrappers peeled.
"""

from __future__ import annotations

import polars as pl

from forensics import schema as S
from forensics._bundled import replay


def captured_trace(events: pl.DataFrame, source: str = "vllm request logs"):
    """A `replay.traces.Trace` from the request lines among `events` (None when there are none)."""
    capture = replay("capture").capture

    rows = events.filter(
        pl.col(S.TS).is_not_null()
        & pl.col(S.MESSAGE).str.contains(r"(?:Received request|Request \S+ details:|Generated response) ")
    ).select(pl.col(S.TS).dt.epoch("us").cast(pl.Float64) / 1e6, S.MESSAGE)
    if rows.height == 0:
        return None
    tr = capture(rows.iter_rows(), source=source)
    return tr if tr.requests or tr.rejected else None


KV_TOKENS = r"GPU KV cache size: ([\d,]+) tokens"


def logged_pool_tokens(events: pl.DataFrame) -> int | None:
    """The KV pool the incident's engines ran with, in tokens: the `GPU KV cache size` they
    logged most often (the largest on a tie); None when no engine logged one."""
    sizes = (
        events.select(pl.col(S.MESSAGE).str.extract(KV_TOKENS, 1).str.replace_all(",", "").cast(pl.Int64, strict=False))
        .drop_nulls()
        .group_by(S.MESSAGE)
        .len()
        .sort("len", S.MESSAGE, descending=True)
    )
    return int(sizes[S.MESSAGE][0]) if sizes.height else None


def logged_peak_kv_usage(metrics: pl.DataFrame) -> float | None:
    """The highest `GPU KV cache usage` (a fraction) any engine logged; None without such lines."""
    usage = metrics.filter(pl.col(S.METRIC) == "gpu_kv_cache_usage")[S.VALUE]
    return float(usage.max()) if usage.len() else None


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

    traces = replay("traces")

    path = Path(path)
    if path.is_file() and traces.is_trace(path):
        return path
    return replay_input(ingest([path]), path)


DEFAULT_BLOCKS = 2048
REPLAY_MAX_REQUESTS = 20_000


def replay_incident(
    result,
    root,
    *,
    blocks: int | None = None,
    rate_scale: float | None = None,
    max_requests: int | None = REPLAY_MAX_REQUESTS,
    extra: str | None = None,
) -> dict:
    """`analyze --replay`: the incident's trace under every built-in policy, in the incident's pool at its load.

    The pool is the engines' logged `GPU KV cache size` unless `blocks` is given; the
    load is the rate at which the correct policy fills that pool as much as the logged
    `GPU KV cache usage` peaked (`replay.run.incident_load`) unless `rate_scale` is given.
    The returned `load` says which was used and why, for the report.
    """
    all_policies, incident_load = replay("run").all_policies, replay("run").incident_load
    Config = replay("scheduler").Config

    trace = replay_input(result, root)
    if blocks is not None:
        blocks_from = f"{blocks:,} blocks (--replay-blocks)"
    elif tokens := logged_pool_tokens(result.events):
        blocks = tokens // Config.block_size
        blocks_from = f"{blocks:,} blocks: the engines' logged GPU KV cache size ({tokens:,} tokens)"
    else:
        blocks = DEFAULT_BLOCKS
        blocks_from = f"{blocks:,} blocks (no GPU KV cache size in the logs)"
    cfg = Config(num_blocks=blocks)
    if rate_scale is not None:
        rate_from = f"{rate_scale:g}x the captured rate (--replay-rate-scale)"
    elif (peak := logged_peak_kv_usage(result.metrics)) is not None:
        rate_scale, reached = incident_load(trace, cfg, peak)
        rate_from = (
            f"{rate_scale:g}x the captured rate: there the correct policy's KV usage reaches {reached:.0%} "
            f"(the logs' peak: {peak:.0%})"
        )
    else:
        rate_scale, rate_from = 1.0, "the captured rate (no GPU KV cache usage in the logs)"
    return all_policies(
        trace,
        rate_scale=rate_scale,
        cfg=cfg,
        extra=extra,
        max_requests=max_requests,
        load={"blocks_from": blocks_from, "rate_from": rate_from},
    )
