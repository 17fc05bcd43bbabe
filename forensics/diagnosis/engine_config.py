"""What each replica's engine was started with, and a rollout that changed it.

A rollout that lowers `gpu_memory_utilization`, `max_num_seqs` or `max_model_len`, changes the
tensor-parallel size or the image, leaves every new pod with a smaller KV cache: it serves
fewer requests at once, the queue grows and the cache fills. The metrics read as "capacity"
(the load outgrew the fleet), but the cause is the change, and what tells it is the engines'
own start-up lines: the arguments (vLLM's `non-default args: {...}`, V0's `args: Namespace(...)`,
SGLang's `server_args=ServerArgs(...)`) and the KV size they got (`GPU KV cache size: N tokens`,
`Maximum concurrency for N tokens per request: X.XXx`, SGLang's `max_total_num_tokens=N`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from datetime import datetime

import polars as pl

from forensics import schema as s
from forensics.diagnosis.records import Evidence

NON_DEFAULT = re.compile(r"non-default args: (\{.*\})\s*$")
"""vLLM (>= 0.8): the arguments that differ from the defaults, as a Python dict literal."""
NAMESPACE = re.compile(r"\b(?:args: Namespace|server_args=ServerArgs)\((.*)\)\s*$")
"""vLLM V0's whole `argparse.Namespace`, SGLang's `ServerArgs` dataclass."""
_FIELD = re.compile(r"(\w+)=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\[[^\]]*\]|\{[^}]*\}|[^,()]+)")
KV_TOKENS = re.compile(
    r"GPU KV cache size: ([\d,]+) tokens|max_total_num_tokens=(\d+)|KV Cache is allocated\. #tokens: (\d+)"
)
CONCURRENCY = re.compile(r"Maximum concurrency for [\d,]+ tokens per request: ([\d.]+)x")
WATCHED = (
    "model",
    "model_path",
    "gpu_memory_utilization",
    "mem_fraction_static",
    "max_num_seqs",
    "max_running_requests",
    "max_model_len",
    "context_length",
    "max_num_batched_tokens",
    "chunked_prefill_size",
    "tensor_parallel_size",
    "tp_size",
    "pipeline_parallel_size",
    "pp_size",
    "kv_cache_dtype",
    "block_size",
    "page_size",
    "quantization",
    "enable_prefix_caching",
    "cpu_offload_gb",
    "swap_space",
    "speculative_config",
)
"""The arguments of a full dump (V0's Namespace, SGLang's ServerArgs) that decide what an engine
serves and how much KV it has; the rest (ports, log levels, paths) differ between pods harmlessly.
vLLM's `non-default args` are compared whole: they are what someone chose."""


@dataclass(frozen=True, kw_only=True)
class EngineConfig:
    """One replica's engine as it started: its arguments and the KV cache they left it."""

    replica: str
    started: datetime
    args: dict[str, str]
    kv_tokens: int | None
    concurrency: float | None
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True, kw_only=True)
class ConfigChange:
    """The arguments and KV size that differ between the replicas started before and after a rollout."""

    changed: dict[str, tuple[str | None, str | None]]
    """Argument -> (before, after); `None` where one side leaves it at its default."""
    kv_tokens: tuple[int, int] | None
    concurrency: tuple[float, float] | None
    first: datetime
    replicas: tuple[str, ...]
    evidence: tuple[Evidence, ...]

    def summary(self) -> str:
        parts = [f"{k} {_v(a)} → {_v(b)}" for k, (a, b) in sorted(self.changed.items())]
        if self.kv_tokens:
            parts.append(f"GPU KV cache size {self.kv_tokens[0]:,} → {self.kv_tokens[1]:,} tokens")
        if self.concurrency:
            parts.append(f"maximum concurrency {self.concurrency[0]:g}x → {self.concurrency[1]:g}x")
        return "; ".join(parts)

    @property
    def shrank(self) -> bool:
        """Whether the new engines got less KV cache (or fewer concurrent requests) than the old."""
        kv = self.kv_tokens is not None and self.kv_tokens[1] < self.kv_tokens[0]
        conc = self.concurrency is not None and self.concurrency[1] < self.concurrency[0]
        return kv or conc


def _v(x: str | None) -> str:
    return "(default)" if x is None else x


def configs(events: pl.DataFrame) -> list[EngineConfig]:
    """Each replica's last engine start in these logs (`REPLICA`: its pod, else its file)."""
    rx = r"non-default args: \{|args: Namespace\(|server_args=ServerArgs\(|GPU KV cache size: |max_total_num_tokens=|KV Cache is allocated|Maximum concurrency for"
    lines = (
        events.filter(pl.col(s.MESSAGE).str.contains(rx) & pl.col(s.TS).is_not_null())
        .with_columns(pl.coalesce(s.POD, s.FILE).alias("_r"))
        .sort("_r", s.TS, s.LINE)
    )
    out = []
    for (replica,), part in lines.group_by("_r", maintain_order=True):
        args: dict[str, str] | None = None
        kv = conc = None
        started, ev = None, []
        for ts, file, line, msg in part.select(s.TS, s.FILE, s.LINE, s.MESSAGE).iter_rows():
            first = (msg or "").split("\n", 1)[0]
            parsed = _args(first)
            if parsed is not None:  # (a restart: its start counts, not the one before)
                args, kv, conc, started, ev = parsed, None, None, ts, [Evidence.quote(file, line, first)]
                continue
            if m := KV_TOKENS.search(first):
                kv = int(next(g for g in m.groups() if g).replace(",", ""))
                ev.append(Evidence.quote(file, line, first))
            elif m := CONCURRENCY.search(first):
                conc = float(m.group(1))
                ev.append(Evidence.quote(file, line, first))
        if args is not None and started is not None:
            out.append(
                EngineConfig(
                    replica=replica, started=started, args=args, kv_tokens=kv, concurrency=conc, evidence=tuple(ev)
                )
            )
    return sorted(out, key=lambda c: (c.started, c.replica))


def _args(line: str) -> dict[str, str] | None:
    """The arguments an engine start line prints, as text values; None for any other line."""
    if m := NON_DEFAULT.search(line):
        try:
            d = ast.literal_eval(m.group(1))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
        return {str(k): repr(v) for k, v in d.items()} if isinstance(d, dict) else None
    if m := NAMESPACE.search(line):
        fields = {k: v.strip() for k, v in _FIELD.findall(m.group(1))}
        return {k: fields[k] for k in WATCHED if k in fields}
    return None


def rollout_change(cs: list[EngineConfig], since: datetime, until: datetime) -> ConfigChange | None:
    """The change between the engines (`configs`) started before `since` (the old generation)
    and those started in [`since`, `until`] (the rollout's), when their arguments or KV sizes differ.

    Each side is read as its most common configuration, so one pod restarted with the old
    arguments does not hide the rollout, nor one odd pod make one."""
    old = [c for c in cs if c.started < since]
    new = [c for c in cs if since <= c.started <= until]
    if not old or not new:
        return None
    before, after = _usual(old), _usual(new)
    changed = {
        k: (before.args.get(k), after.args.get(k))
        for k in sorted(set(before.args) | set(after.args))
        if before.args.get(k) != after.args.get(k)
    }
    kv = (
        (before.kv_tokens, after.kv_tokens)
        if before.kv_tokens and after.kv_tokens and before.kv_tokens != after.kv_tokens
        else None
    )
    conc = (
        (before.concurrency, after.concurrency)
        if before.concurrency and after.concurrency and before.concurrency != after.concurrency
        else None
    )
    if not changed and kv is None and conc is None:
        return None
    return ConfigChange(
        changed=changed,
        kv_tokens=kv,
        concurrency=conc,
        first=new[0].started,
        replicas=tuple(c.replica for c in new),
        evidence=(*after.evidence[:2], *before.evidence[:1]),
    )


def _usual(group: list[EngineConfig]) -> EngineConfig:
    """The configuration most of `group` started with (ties: the earliest)."""
    key = lambda c: tuple(sorted(c.args.items()))  # noqa: E731
    counts: dict[tuple, int] = {}
    for c in group:
        counts[key(c)] = counts.get(key(c), 0) + 1
    best = max(counts.values())
    return next(c for c in group if counts[key(c)] == best)
