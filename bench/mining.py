"""Mining speed: our miner over 10M realistic messages vs plain drain3 `add_log_message`.

Usage: python bench/mining.py [--lines 10000000] [--templates 2000] [--drain3-lines 200000] [--free-text N]

Messages are generated vectorised: ~2,000 templates (vLLM, NCCL, c10d, Kubernetes
shapes with varied wording) filled with request ids, IPs, hex pointers, numbers and
block ids. Last line:
    mining lines_per_s=1234567 drain3_lines_per_s=54321 ratio=22.7 peak_rss_mb=900
"""

from __future__ import annotations

import argparse
import io
import random
import resource
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from forensics import _malloc  # noqa: E402

_malloc.tune()  # as the CLI does, before polars loads

SHAPES = [
    (
        "vllm",
        "Received request chatcmpl-{hex32}: params: SamplingParams(n=1, temperature={f}, max_tokens={n}), lora_request: None.",
    ),
    (
        "vllm",
        "Engine 000: Avg prompt throughput: {f} tokens/s, Avg generation throughput: {f} tokens/s, Running: {n} reqs, Waiting: {n} reqs, GPU KV cache usage: {f}%, Prefix cache hit rate: {f}%",
    ),
    ("uvicorn", '{ip}:{n} - "POST /v1/chat/completions HTTP/1.1" 200 OK'),
    ("nccl", "transport/net.cc:{n} -> {n}"),
    ("nccl", "Channel {n}/{n} : {n}[{n}] -> {n}[{n}] via P2P/IPC"),
    (
        "torch",
        "[Rank {n}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={n}, OpType=ALLREDUCE, NumelIn={n}, NumelOut={n}, Timeout(ms)=600000) ran for {n} milliseconds before timing out.",
    ),
    ("kv-store", "Cache corruption detected in block {n}: stored hash 0x{hex8} does not match"),
    (
        "kubelet",
        '"Probe failed" probeType="Liveness" pod="serving/vllm-{n}" output="Get http://{ip}:8000/health: context deadline exceeded"',
    ),
]
WORDS = "alloc free evict block cache queue worker engine request sched stream rank peer socket retry commit flush load save sync".split()


def make_templates(n: int, rng: random.Random) -> list[tuple[str, str]]:
    """`n` distinct message shapes: the base shapes plus wording variants."""
    out = list(SHAPES)
    while len(out) < n:
        src, base = rng.choice(SHAPES)
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 5)))
        out.append((src, f"{words} {rng.randint(0, 10**6)}x: " + base))
    return out[:n]


def free_text(n_lines: int, seed: int = 13) -> pl.DataFrame:
    """`n_lines` of text no template fits, half of them logged requests with their prompts
    (`Received request ...: prompt: '...'`), half a program's bare output: words from a
    20,000-word vocabulary, common ones far more often (Zipf), 4-40 a line."""
    import numpy as np

    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = np.array(["".join(rng.choice(letters, rng.integers(2, 10))) for _ in range(20_000)])
    lengths = rng.integers(4, 41, n_lines)
    picks = np.minimum(rng.zipf(1.3, lengths.sum()) - 1, len(vocab) - 1)
    words = vocab[picks]
    cuts = np.cumsum(lengths)[:-1]
    texts = [" ".join(w) for w in np.split(words, cuts)]
    ids = rng.integers(0, 2**63, n_lines)
    messages = [
        f"Received request chatcmpl-{i:x}: prompt: {t!r}, params: SamplingParams(n=1, temperature=0.7), "
        "lora_request: None."
        if k % 2
        else t
        for k, (i, t) in enumerate(zip(ids, texts, strict=True))
    ]
    return pl.DataFrame({"source": ["vllm" if k % 2 else "app" for k in range(n_lines)], "message": messages})


def generate(n_lines: int, n_templates: int, seed: int = 11) -> pl.DataFrame:
    rng = random.Random(seed)
    templates = make_templates(n_templates, rng)
    import numpy as np

    nrng = np.random.default_rng(seed)
    counts = nrng.multinomial(n_lines, nrng.dirichlet(np.full(n_templates, 0.3)))
    frames = []
    for (src, tmpl), k in zip(templates, counts, strict=True):
        if k == 0:
            continue
        parts, exprs = tmpl.split("{"), []
        exprs.append(pl.lit(parts[0]))
        for p in parts[1:]:
            field, lit = p.split("}", 1)
            if field == "n":
                exprs.append(pl.Series(nrng.integers(0, 10**6, k)).cast(pl.String))
            elif field == "f":
                exprs.append(pl.Series(nrng.random(k) * 1000).round(1).cast(pl.String))
            elif field in ("hex32", "hex8"):
                width = 32 if field == "hex32" else 8
                exprs.append(
                    pl.Series(nrng.integers(0, 2**62, k)).map_elements(
                        lambda v, w=width: f"{v:0{w}x}"[:w], return_dtype=pl.String
                    )
                )
            elif field == "ip":
                exprs.append(
                    pl.Series(nrng.integers(0, 255, k))
                    .cast(pl.String)
                    .map_elements(lambda v: f"10.0.{v}.7", return_dtype=pl.String)
                )
            exprs.append(pl.lit(lit))
        frames.append(
            pl.DataFrame({"x": [0] * int(k)}).select(pl.lit(src).alias("source"), pl.concat_str(exprs).alias("message"))
        )
    return pl.concat(frames).sample(fraction=1.0, shuffle=True, seed=seed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=10_000_000)
    ap.add_argument("--templates", type=int, default=2000)
    ap.add_argument("--drain3-lines", type=int, default=200_000)
    ap.add_argument("--free-text", type=int, default=0, help="also mine N lines that no template fits (`free_text`)")
    args = ap.parse_args()
    t = time.perf_counter()
    df = generate(args.lines, args.templates)
    if args.free_text:  # (after the lines the drain3 baseline samples)
        df = pl.concat([df, free_text(args.free_text)])
    print(f"generated {df.height} messages in {time.perf_counter() - t:.1f}s", file=sys.stderr)

    from forensics import mining

    t = time.perf_counter()
    ids, names, warnings = mining.cluster(df["source"], df["message"])
    dt = time.perf_counter() - t
    ours = df.height / dt
    print(f"ours: {names.height} templates in {dt:.1f}s {warnings}", file=sys.stderr)

    from drain3 import TemplateMiner

    with redirect_stdout(io.StringIO()):
        miner = TemplateMiner()
    sample = df["message"].head(args.drain3_lines).to_list()
    t = time.perf_counter()
    for line in sample:
        miner.add_log_message(line)
    plain = len(sample) / (time.perf_counter() - t)
    print(f"drain3: {len(miner.drain.clusters)} clusters on {len(sample)} lines", file=sys.stderr)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"mining lines_per_s={ours:.0f} drain3_lines_per_s={plain:.0f} ratio={ours / plain:.1f} peak_rss_mb={peak:.0f}"
    )


if __name__ == "__main__":
    main()
