"""A mixed-format log corpus for benchmarks: realistic lines from every family, by size.

Deterministic for a seed. Written streaming, so generating 1 GB holds little memory.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

START = datetime(2025, 3, 2, 7, 0, tzinfo=UTC)


def _vllm_pod(rng: random.Random, pod: str, t: datetime) -> str:
    ts = t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{rng.randrange(10**9):09d}Z"
    short = t.strftime("%m-%d %H:%M:%S")
    r = rng.random()
    if r < 0.45:
        return f'{ts} (APIServer pid=66) INFO:     10.0.{rng.randrange(256)}.{rng.randrange(256)}:{rng.randrange(1024, 65535)} - "POST /v1/chat/completions HTTP/1.1" 200 OK'
    if r < 0.75:
        rid = f"{rng.getrandbits(128):032x}"
        verb = rng.choice(["Received request", "Added request", "Finished request"])
        tail = (
            ": params: SamplingParams(n=1, temperature=0.7, max_tokens=512), lora_request: None."
            if verb.startswith("R")
            else "."
        )
        return f"{ts} (APIServer pid=66) INFO {short} [logger.py:41] {verb} chatcmpl-{rid}{tail}"
    if r < 0.85:
        return (
            f"{ts} (APIServer pid=66) INFO {short} [loggers.py:123] Engine 000: Avg prompt throughput: {rng.uniform(1e3, 9e3):.1f} tokens/s, "
            f"Avg generation throughput: {rng.uniform(1e3, 9e3):.1f} tokens/s, Running: {rng.randrange(64)} reqs, Waiting: {rng.randrange(8)} reqs, "
            f"GPU KV cache usage: {rng.uniform(10, 99):.1f}%, Prefix cache hit rate: {rng.uniform(0, 80):.1f}%"
        )
    if r < 0.93:
        return f"{ts} {pod}:{rng.randrange(100, 999)}:{rng.randrange(1000, 9999)} [{rng.randrange(8)}] NCCL INFO Channel {rng.randrange(32):02d}/32 : 0[0] -> 1[1] via P2P/IPC"
    if r < 0.97:
        return f"{ts} (Worker_TP{rng.randrange(8)} pid={rng.randrange(100, 999)}) WARNING {short} [shm_broadcast.py:466] No available shared memory broadcast block found in 60 seconds."
    return (
        f"{ts} [rank{rng.randrange(8)}]:[E{t.month}{t.day:02d} {t:%H:%M:%S}.{rng.randrange(10**9):09d} ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught "
        f"collective operation timeout: WorkNCCL(SeqNum={rng.randrange(10**6)}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600009 milliseconds before timing out."
    )


def _kubelet(rng: random.Random, t: datetime) -> str:
    return (
        f"{t:%b %d %H:%M:%S} gpu-node-{rng.randrange(4)} kubelet[1450]: I{t:%m%d %H:%M:%S}.{rng.randrange(10**6):06d}    1450 "
        f'kubelet.go:2455] "SyncLoop (probe)" probe="readiness" status="ready" pod="default/vllm-{rng.randrange(8)}"'
    )


def _kv(rng: random.Random, t: datetime) -> str:
    return f"[{t:%Y-%m-%d %H:%M:%S},{rng.randrange(1000):03d}] LMCache INFO: Storing KV cache for {rng.randrange(4096)} out of 4096 tokens (cache_engine.py:190:lmcache.v1.cache_engine)"


def write_corpus(out: Path, total_mb: float, seed: int = 7, pods: int = 6) -> tuple[int, int]:
    """Write `total_mb` of logs under `out`; return (lines, bytes)."""
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    budget = int(total_mb * 1024 * 1024)
    files = [(out / f"vllm-{i}.log", "pod") for i in range(pods)] + [
        (out / "kubelet.journal", "kubelet"),
        (out / "lmcache.log", "kv"),
    ]
    share = {"pod": 0.9 / pods, "kubelet": 0.05, "kv": 0.05}
    lines = written = 0
    for path, kind in files:
        target = int(budget * share[kind])
        t = START
        n = 0
        with open(path, "w") as fh:
            buf: list[str] = []
            size = 0
            while size < target:
                t += timedelta(microseconds=rng.randrange(200, 20000))
                line = (
                    _vllm_pod(rng, path.stem, t)
                    if kind == "pod"
                    else _kubelet(rng, t)
                    if kind == "kubelet"
                    else _kv(rng, t)
                )
                buf.append(line)
                size += len(line) + 1
                n += 1
                if len(buf) >= 20000:
                    fh.write("\n".join(buf) + "\n")
                    buf.clear()
            if buf:
                fh.write("\n".join(buf) + "\n")
        lines += n
        written += size
    return lines, written
