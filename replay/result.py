"""What a replay reports: the `Result` both simulators return, and how a request's KV was corrupted.

The reference (`replay.scheduler`) and its compiled twin (`replay.fastsim`) both end in
`summarize`, so a result cannot differ between them by how it was counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

OVERWRITTEN, STALE_HIT, PAST_TABLE = 0, 1, 2
HOW = (
    "its block was overwritten by another request while still in use",
    "a prefix-cache hit returned a block holding other content (stale hash)",
    "its last slot was written past its block table",
)
"""How a request's KV was corrupted, by code (the compiled simulator records the code)."""


@dataclass
class Result:
    requests: int
    finished: int
    corrupted_requests: int
    first_corruption: dict | None
    invariant_violations: int
    first_violation: str | None
    peak_kv_usage: float
    max_waiting: int
    preemptions: int
    ttft_s: dict
    tpot_s: dict
    e2e_s: dict
    tokens_per_s: float
    sim_seconds: float
    steps: int
    block_ops: int
    attention_max_rel_error: float | None = None
    """Largest relative error of attention over held vs true KV on sampled steps (None: not sampled)."""
    stalled: bool = False
    """The run stopped on `Config.stall_steps`: requests were still running or waiting, none could finish."""
    engine: str = "reference"
    """`compiled` (replay.fastsim, the built-in policies) or `reference` (this module, any policy)."""


def _pct(xs: np.ndarray) -> dict:
    if not len(xs):
        return {"p50": None, "p90": None, "p99": None}
    xs = np.sort(xs)

    def p(q: float) -> float:
        return round(float(xs[min(len(xs) - 1, int(math.ceil(q * len(xs))) - 1)]), 6)

    return {"p50": p(0.5), "p90": p(0.9), "p99": p(0.99)}


def summarize(
    n_requests: int,
    start_s: float,
    arrival: np.ndarray,
    first_token: np.ndarray,
    finish: np.ndarray,
    output: np.ndarray,
    *,
    corrupted: int,
    first_corruption: dict | None,
    violations: int,
    first_violation: str | None,
    t: float,
    steps: int,
    peak: float,
    max_wait: int,
    preemptions: int,
    block_ops: int,
    stalled: bool,
) -> Result:
    """A `Result` from the finished requests (arrival, first token or NaN, finish, output tokens: one row
    each, in any order) and the run's counters; `start_s`: the first arrival, where tokens/s counts from."""
    sampled = ~np.isnan(first_token)
    ttft = (first_token - arrival)[sampled]
    e2e = finish - arrival
    tpot = ((finish - first_token) / np.maximum(1, output - 1))[sampled]
    out_tokens = int(output.sum())
    span = t - start_s
    return Result(
        requests=n_requests,
        finished=len(finish),
        corrupted_requests=corrupted,
        first_corruption=first_corruption,
        invariant_violations=violations,
        first_violation=first_violation,
        peak_kv_usage=round(peak, 4),
        max_waiting=max_wait,
        preemptions=preemptions,
        ttft_s=_pct(ttft),
        tpot_s=_pct(tpot),
        e2e_s=_pct(e2e),
        tokens_per_s=round(out_tokens / span, 1) if span > 0 else 0.0,
        sim_seconds=round(t, 3),
        steps=steps,
        block_ops=block_ops,
        stalled=stalled,
    )
