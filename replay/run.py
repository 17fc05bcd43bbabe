"""Run replays: one policy, a comparison, or every built-in policy for `forensics analyze --replay`."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from . import policies as pol
from . import traces
from .scheduler import Config
from .simulate import simulate

CALIBRATION_REQUESTS = 8000
"""Requests per calibration run: enough for the batch to fill and settle at any scale."""
MAX_SCALE = 256.0


def incident_load(
    trace: Path | traces.Trace, cfg: Config, target_peak: float, *, max_scale: float = MAX_SCALE
) -> tuple[float, float]:
    """The load at which the correct policy fills the pool as much as the incident did.

    A captured trace is often a sample of the incident's traffic (one pod, a logging
    window), so at its own rate it may never fill the incident's pool, and an eviction
    fault never shows where blocks are never scarce. Doubling from 1x, the first rate
    scale at which the correct policy's peak KV usage reaches `target_peak` (the peak the
    incident's own `GPU KV cache usage` lines show) is where the faults are judged.
    Returns (scale, peak reached); stops at `max_scale`.
    """
    loaded = trace if isinstance(trace, traces.Trace) else traces.load(trace)
    scale = 1.0
    while True:
        reqs = traces.scaled_head(loaded, scale, CALIBRATION_REQUESTS).requests
        peak = simulate(reqs, pol.Policy(), cfg).peak_kv_usage
        if peak >= target_peak - 1e-9 or scale >= max_scale:
            return scale, peak
        scale *= 2


def run(
    trace_path: Path | traces.Trace,
    policy: str,
    *,
    rate_scale: float = 1.0,
    cfg: Config | None = None,
    device: str = "auto",
    max_requests: int | None = None,
) -> dict:
    """Replay `trace_path` (a trace file, or a `Trace` already captured) under `policy`; a JSON-ready dict."""
    cfg = cfg or Config(numerics_every=200)
    loaded = trace_path if isinstance(trace_path, traces.Trace) else traces.load(trace_path)
    tr = traces.scaled_head(loaded, rate_scale, max_requests)
    p = pol.load_policy(policy)
    res = simulate(tr.requests, p, cfg)
    numerics = None
    try:
        from .attention import numerics_check

        numerics = numerics_check(device=device)
    except ImportError:
        numerics = {"device": "unavailable", "note": "torch is not installed: attention numerics skipped"}
    return {
        "policy": p.name,
        "fault": p.fault,
        "description": p.description,
        "trace": loaded.source if isinstance(trace_path, traces.Trace) else str(trace_path),
        "rate_scale": rate_scale,
        "rejected": tr.rejected,
        "config": dataclasses.asdict(cfg),
        **dataclasses.asdict(res),
        "attention": numerics,
    }


def verdict(runs: list[dict]) -> str:
    """One paragraph: which fault classes reproduce corruption and whether the correct policy stays clean."""
    clean = [r for r in runs if not r["fault"]]
    bad = [r for r in runs if r["fault"] and r["corrupted_requests"] > 0]
    quiet = [r for r in runs if r["fault"] and r["corrupted_requests"] == 0]
    parts = []
    for r in clean:
        parts.append(
            f"the correct policy `{r['policy']}` corrupted {r['corrupted_requests']:,} of {r['requests']:,} requests"
            f" (peak KV {100 * r['peak_kv_usage']:.0f}%, {r['preemptions']:,} preemptions, up to {r['max_waiting']:,} waiting)"
        )
    for r in bad:
        fc = r["first_corruption"]
        parts.append(
            f"`{r['policy']}` corrupted {r['corrupted_requests']:,} (first: request {fc['request']}, block {fc['block']}, "
            f"t={fc['time_s']:.2f} s: {fc['how']})"
        )
    for r in runs:
        if r.get("stalled"):
            parts.append(
                f"`{r['policy']}` stalled with {r['requests'] - r['finished']:,} requests unable to finish"
                " (blocks leaked: they preempted each other without progress)"
            )
    if quiet:
        parts.append("no corruption from " + ", ".join(f"`{r['policy']}`" for r in quiet) + " at this load")
    tell = [r["policy"] for r in bad if r["preemptions"] == 0 and r["peak_kv_usage"] >= 0.99]
    if tell:
        parts.append(
            "the incident's signature (KV cache full, nothing preempted, corruption) is reproduced by "
            + ", ".join(f"`{p}`" for p in tell)
        )
    return "Replay: " + "; ".join(parts) + "."


def all_policies(
    trace_path: Path | traces.Trace,
    *,
    rate_scale: float,
    cfg: Config,
    extra: str | None = None,
    max_requests: int | None = None,
    load: dict | None = None,
) -> dict:
    """The correct policy and every fault variant (and a user policy) on the same trace.

    `load` says where the pool and the rate came from (`blocks_from`, `rate_from`), for the report.
    """
    names = list(pol.BUILTIN) + ([extra] if extra else [])
    runs = [run(trace_path, n, rate_scale=rate_scale, cfg=cfg, max_requests=max_requests) for n in names]
    return {
        "trace": runs[0]["trace"],
        "requests": runs[0]["requests"],
        "rate_scale": rate_scale,
        "blocks": cfg.num_blocks,
        "load": load or {},
        "runs": runs,
        "verdict": verdict(runs),
    }
