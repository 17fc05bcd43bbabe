"""Replay speed: simulated requests/s and block operations/s, and paged-attention tokens/s vs a naive loop.

Usage: python bench/replay.py [--requests 1500] [--blocks 2048]
Last line: `replay sim_req_per_s=23000 block_ops_per_s=1400000 attn_tokens_per_s=3000 naive_ratio=60`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "cache-corruption" / "trace.jsonl"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=1500)
    ap.add_argument("--blocks", type=int, default=2048)
    args = ap.parse_args()
    from replay import policies, traces
    from replay.scheduler import Config, simulate

    tr = traces.load(SAMPLE)
    reqs = tr.requests[: args.requests]
    t = time.perf_counter()
    r = simulate(reqs, policies.Policy(), Config(num_blocks=args.blocks))
    dt = time.perf_counter() - t
    print(
        f"simulated {len(reqs)} requests ({r.steps} steps, {r.preemptions} preemptions) in {dt:.1f}s", file=sys.stderr
    )

    import torch

    from replay.attention import naive_attention, paged_attention

    torch.manual_seed(0)
    s, h, d, bs, L = 8, 8, 64, 16, 2048
    nblk = s * L // bs + 1
    kc, vc = torch.randn(nblk, bs, h, d), torch.randn(nblk, bs, h, d)
    bt = (torch.randperm(nblk - 1) + 1)[: s * L // bs].view(s, L // bs)
    q = torch.randn(s, h, d)
    lens = torch.full((s,), L)
    paged_attention(q, kc, vc, bt, lens)
    t = time.perf_counter()
    for _ in range(5):
        paged_attention(q, kc, vc, bt, lens)
    attn = 5 * s * L / (time.perf_counter() - t)
    t = time.perf_counter()
    naive_attention(q[0], kc, vc, bt[0], 512)
    naive = 512 / (time.perf_counter() - t)
    print(
        f"replay sim_req_per_s={len(reqs) / dt:.0f} block_ops_per_s={r.block_ops / dt:.0f} attn_tokens_per_s={attn:.0f} naive_ratio={attn / naive:.1f}"
    )


if __name__ == "__main__":
    main()
