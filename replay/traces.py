"""Request traces: one canonical record, readers for our trace.jsonl, Mooncake JSONL and Azure CSV.

A prefix is a chain of block ids (`hash_ids`): two requests that share the first k ids
share their first k * `trace_block_tokens` prompt tokens. Mooncake uses 512-token
blocks; our own `trace.jsonl` is Mooncake-compatible. Azure traces have no prefix
identity: every request gets private ids.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
from dataclasses import dataclass, field
from datetime import datetime
from operator import attrgetter
from pathlib import Path

import numpy as np

from .errors import TraceFormatError

MOONCAKE_BLOCK_TOKENS = 512


@dataclass(frozen=True)
class Request:
    """One captured request. `prefix_ids` namespaced so superposed copies never share."""

    rid: int
    arrival_s: float
    prompt_tokens: int
    output_tokens: int
    prefix_ids: tuple[int, ...]
    trace_block_tokens: int = MOONCAKE_BLOCK_TOKENS


@dataclass(frozen=True)
class Columns:
    """Requests as arrays, row k for the k-th request: what the compiled simulator and the
    chain hashes read. Built in one pass over the objects (a pass per field cost as much as
    a tenth of a replay); the prefix ids are CSR, request k's in `ids[ids_start[k]:ids_start[k + 1]]`."""

    arrival_s: np.ndarray
    rid: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    trace_block_tokens: np.ndarray
    ids_start: np.ndarray
    ids: np.ndarray

    def in_arrival_order(self) -> Columns:
        """Rows sorted by (arrival, rid), ties kept in list order: the order the scheduler admits in."""
        order = np.lexsort((self.rid, self.arrival_s))
        if (np.diff(order) > 0).all():
            return self
        lens = np.diff(self.ids_start)[order]
        start = np.zeros(len(order) + 1, np.int64)
        np.cumsum(lens, out=start[1:])
        take = np.repeat(self.ids_start[:-1][order] - start[:-1], lens) + np.arange(start[-1])
        return Columns(
            self.arrival_s[order],
            self.rid[order],
            self.prompt_tokens[order],
            self.output_tokens[order],
            self.trace_block_tokens[order],
            start,
            self.ids[take],
        )


_FIELDS = attrgetter("arrival_s", "rid", "prompt_tokens", "output_tokens", "trace_block_tokens")
_IDS = attrgetter("prefix_ids")


def columns(requests: list[Request]) -> Columns:
    """`requests` as `Columns`, in list order."""
    fields = list(zip(*map(_FIELDS, requests), strict=True)) or [()] * 5
    ints = [np.array(c, np.int64) for c in fields[1:]]
    lens = np.fromiter(map(len, map(_IDS, requests)), np.int64, len(requests))
    ids_start = np.zeros(len(requests) + 1, np.int64)
    np.cumsum(lens, out=ids_start[1:])
    ids = np.fromiter(itertools.chain.from_iterable(map(_IDS, requests)), np.int64, int(ids_start[-1]))
    return Columns(np.array(fields[0], np.float64), *ints, ids_start, ids)


@dataclass
class Trace:
    requests: list[Request]
    source: str
    rejected: dict[str, int] = field(default_factory=dict)
    """Rows set aside, by named reason (`zero prompt tokens`, `bad json`, ...)."""

    @property
    def duration_s(self) -> float:
        return (self.requests[-1].arrival_s - self.requests[0].arrival_s) if len(self.requests) > 1 else 0.0

    @property
    def rate(self) -> float:
        return len(self.requests) / self.duration_s if self.duration_s > 0 else float(len(self.requests))


def _format(path: Path) -> str | None:
    """`jsonl`, `azure`, or None for a file that is not a request trace (read from its first line)."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        head = fh.readline()
    if head.lstrip().startswith("{"):
        return "jsonl"
    return "azure" if "ContextTokens" in head else None


def is_trace(path: Path) -> bool:
    return _format(Path(path)) is not None


def load(path: Path) -> Trace:
    """Read a trace, choosing the reader by content (JSON lines vs Azure CSV header)."""
    path = Path(path)
    fmt = _format(path)
    if fmt == "jsonl":
        return _jsonl(path)
    if fmt == "azure":
        return _azure(path)
    raise TraceFormatError(
        "not a request trace (expected JSON lines or an Azure CSV with ContextTokens)",
        path=str(path),
        lineno=1,
        hint="pass a trace.jsonl (Mooncake format) or an AzureLLMInferenceTrace CSV",
    )


def _reject(rej: dict, why: str) -> None:
    rej[why] = rej.get(why, 0) + 1


def _jsonl(path: Path) -> Trace:
    reqs: list[Request] = []
    rej: dict[str, int] = {}
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except (ValueError, RecursionError):  # (a line of junk brackets nests past the stack)
                _reject(rej, "bad json")
                continue
            if not isinstance(r, dict):
                _reject(rej, "not a JSON object")
                continue
            ts = r.get("timestamp", r.get("arrival_time"))
            n_in = r.get("input_length", r.get("prompt_tokens"))
            n_out = r.get("output_length", r.get("output_tokens"))
            if ts is None or n_in is None or n_out is None:
                _reject(rej, "missing field")
                continue
            try:
                n_in, n_out = int(n_in), int(n_out)
                arrival = float(ts) / (1000.0 if "timestamp" in r else 1.0)
                ids = tuple(int(x) for x in r.get("hash_ids", ()))
            except (TypeError, ValueError, OverflowError):  # `"abc"`, a list, `Infinity` where a number goes
                _reject(rej, "not a number")
                continue
            if not math.isfinite(arrival):
                _reject(rej, "not a number")
                continue
            if n_in <= 0:
                _reject(rej, "zero prompt tokens")
                continue
            if n_out <= 0:
                _reject(rej, "zero output tokens")
                continue
            if ids and len(ids) * MOONCAKE_BLOCK_TOKENS < n_in:
                _reject(rej, "hash_ids shorter than the prompt")
                continue
            reqs.append(Request(len(reqs), arrival, n_in, n_out, ids))
    return _finish(reqs, "jsonl", rej)


def _azure(path: Path) -> Trace:
    reqs: list[Request] = []
    rej: dict[str, int] = {}
    t0 = None
    next_id = 10**9
    with open(path, newline="", encoding="utf-8", errors="replace") as fh:
        for row in csv.DictReader(fh):
            try:
                ts = datetime.fromisoformat(row["TIMESTAMP"].strip()[:26])
                n_in, n_out = int(row["ContextTokens"]), int(row["GeneratedTokens"])
            except (KeyError, ValueError, TypeError, AttributeError):  # (a short row's cells are None)
                _reject(rej, "unparsable row")
                continue
            if n_in <= 0 or n_out <= 0:
                _reject(rej, "zero tokens")
                continue
            t0 = t0 or ts
            n_ids = -(-n_in // MOONCAKE_BLOCK_TOKENS)
            reqs.append(
                Request(len(reqs), (ts - t0).total_seconds(), n_in, n_out, tuple(range(next_id, next_id + n_ids)))
            )
            next_id += n_ids
    return _finish(reqs, "azure", rej)


def _finish(reqs: list[Request], source: str, rej: dict) -> Trace:
    reqs.sort(key=lambda r: (r.arrival_s, r.rid))
    if reqs:
        t0 = reqs[0].arrival_s
        reqs = [
            Request(i, r.arrival_s - t0, r.prompt_tokens, r.output_tokens, r.prefix_ids, r.trace_block_tokens)
            for i, r in enumerate(reqs)
        ]
    return Trace(reqs, source, rej)


def scale(trace: Trace, factor: float) -> Trace:
    """Replay at `factor` times the captured rate.

    Factors up to 1 stretch time; above 1, time is compressed by the fractional part and
    the trace is superposed `ceil(factor)` times with separate id namespaces (copies never
    share prefixes with each other, as different users would not), which keeps the
    original burstiness instead of only squeezing it.
    """
    if factor <= 0:
        raise ValueError("rate scale must be positive")
    copies = max(1, int(-(-factor // 1)))
    compress = factor / copies
    out: list[Request] = []
    span = 1 << 40
    for c in range(copies):
        for r in trace.requests:
            out.append(
                Request(
                    0,
                    r.arrival_s / compress + c * 1e-6,
                    r.prompt_tokens,
                    r.output_tokens,
                    tuple(x + c * span for x in r.prefix_ids),
                    r.trace_block_tokens,
                )
            )
    out.sort(key=lambda r: (r.arrival_s, r.prefix_ids[:1]))
    return Trace(
        [
            Request(i, r.arrival_s, r.prompt_tokens, r.output_tokens, r.prefix_ids, r.trace_block_tokens)
            for i, r in enumerate(out)
        ],
        trace.source,
        dict(trace.rejected),
    )


def scaled_head(trace: Trace, factor: float, n: int | None) -> Trace:
    """The first `n` requests of `scale(trace, factor)`, without building all of it.

    At 256x a trace of thousands of requests becomes a million; a replay capped at `n`
    needs only the captured requests early enough to be among the first `n` after scaling.
    Exact: the window of captured time doubles until the `n`-th scaled request comes
    before anything the window left out.
    """
    copies = max(1, int(-(-factor // 1)))
    if n is None or n >= len(trace.requests) * copies:
        return scale(trace, factor)
    compress = factor / copies
    ordered = sorted(r.arrival_s for r in trace.requests)
    window = ordered[min(len(ordered) - 1, -(-n // copies))]
    while True:
        head = Trace([r for r in trace.requests if r.arrival_s <= window], trace.source, dict(trace.rejected))
        out = scale(head, factor)
        if len(head.requests) == len(trace.requests) or (
            len(out.requests) >= n and out.requests[n - 1].arrival_s <= window / compress
        ):
            out.requests = out.requests[:n]
            return out
        window = window * 2 if window > 0 else 1.0
