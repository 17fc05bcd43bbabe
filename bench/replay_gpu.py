"""The Triton paged-decode kernel against the HBM floor, at real model shapes (needs a CUDA GPU).

Decode attention reads every KV byte of every sequence once and does little arithmetic per
byte, so its floor is the time to read the KV cache at memory bandwidth. The bandwidth is
measured in the same run (a large read-only reduction, the best of a copy and a sum), the
kernel is timed with `triton.testing.do_bench`, and each shape prints its achieved GB/s,
the fraction of the floor it reaches, and its speedup over the PyTorch gather reference.

Usage: python bench/replay_gpu.py [--dtype bf16|fp16|fp32]
Last line: `replay_gpu hbm_gbps=4300 kernel_gbps=3400 floor_ratio=0.79 torch_ratio=9.5 max_rel_error=0.002`
(medians over the shapes). Prints `replay_gpu skipped: ...` and exits 0 without a GPU.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# (name, sequences, query heads, KV heads, head dim, context tokens); block size 16 as vLLM's default.
SHAPES = [
    ("llama3-8b b64 ctx2k", 64, 32, 8, 128, 2048),
    ("llama3-8b b256 ctx1k", 256, 32, 8, 128, 1024),
    ("llama3-8b b8 ctx32k", 8, 32, 8, 128, 32768),
    ("llama3-70b tp8 b128 ctx4k", 128, 8, 1, 128, 4096),
    ("llama3-70b tp8 b1 ctx128k", 1, 8, 1, 128, 131072),
    ("mistral-7b b32 ctx8k", 32, 32, 8, 128, 8192),
    ("qwen2-72b tp4 b64 ctx4k", 64, 16, 2, 128, 4096),
    ("mha d64 b128 ctx2k", 128, 16, 16, 64, 2048),
]
BLOCK_SIZE = 16


def hbm_read_gbps(torch, do_bench) -> float:
    """Read bandwidth of this GPU, measured now: 4 GiB summed, and 2 GiB copied (read + write)."""
    x = torch.empty(1 << 31, dtype=torch.bfloat16, device="cuda").normal_()
    t_sum = do_bench(lambda: x.sum(dtype=torch.float32), warmup=5, rep=50)
    y = torch.empty(1 << 30, dtype=torch.bfloat16, device="cuda")
    t_copy = do_bench(lambda: y.copy_(x[: 1 << 30]), warmup=5, rep=50)
    return max(2 * (1 << 31) / (t_sum * 1e-3), 2 * 2 * (1 << 30) / (t_copy * 1e-3)) / 1e9


def bench_shape(torch, do_bench, shape, dtype, g):
    """Time one shape; returns (KV GB/s, kernel ms, torch reference ms, best pages, relative error)."""
    from replay.attention import paged_attention
    from replay.triton_attention import paged_decode

    _, s, h, hkv, d, ctx = shape
    per_seq = ctx // BLOCK_SIZE
    nblk = s * per_seq + 1
    k = torch.randn(nblk, BLOCK_SIZE, hkv, d, device="cuda", dtype=dtype, generator=g)
    v = torch.randn(nblk, BLOCK_SIZE, hkv, d, device="cuda", dtype=dtype, generator=g)
    # Fragmented like a pool after churn: a random permutation of the blocks, block 0 null.
    bt = (torch.randperm(nblk - 1, device="cuda", generator=g) + 1).view(s, per_seq).to(torch.int32)
    lens = torch.full((s,), ctx, device="cuda", dtype=torch.int32)
    lens[::3] = ctx - 5  # partial last blocks on a third of the sequences
    q = torch.randn(s, h, d, device="cuda", dtype=dtype, generator=g)
    best = None
    for pages in (1, 2, 4, 8):
        t = do_bench(lambda pages=pages: paged_decode(q, k, v, bt, lens, pages=pages), warmup=10, rep=100)
        if best is None or t < best[0]:
            best = (t, pages)
    t_ms, pages = best
    out = paged_decode(q, k, v, bt, lens, pages=pages).float()
    chunk = max(1, (1 << 28) // (ctx * h * d * 4))  # keep the reference's gather under ~1 GiB
    kf, vf = k.float(), v.float()
    ref = torch.cat(
        [
            paged_attention(q[i : i + chunk].float(), kf, vf, bt[i : i + chunk], lens[i : i + chunk])
            for i in range(0, s, chunk)
        ]
    )
    err = float((out - ref).norm() / ref.norm())
    n = min(chunk, s)
    t_ref = do_bench(lambda: paged_attention(q[:n], k, v, bt[:n], lens[:n]), warmup=3, rep=20) * s / n
    kv_bytes = int(lens.sum()) * hkv * d * 2 * k.element_size()
    return kv_bytes / (t_ms * 1e-3) / 1e9, t_ms, t_ref, pages, err


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    args = ap.parse_args()
    try:
        import torch
        import triton  # noqa: F401
        from triton.testing import do_bench
    except ImportError as e:
        print(f"replay_gpu skipped: {e}")
        return
    if not torch.cuda.is_available():
        print("replay_gpu skipped: no CUDA device")
        return
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}  triton {triton.__version__}")
    hbm = hbm_read_gbps(torch, do_bench)
    print(f"measured read bandwidth: {hbm:.0f} GB/s")
    g = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    for shape in SHAPES:
        gbps, t_ms, t_ref, pages, err = bench_shape(torch, do_bench, shape, dtype, g)
        rows.append((gbps, gbps / hbm, t_ref / t_ms, err))
        print(
            f"{shape[0]:28s} {t_ms * 1e3:9.1f} us  {gbps:7.0f} GB/s  floor {100 * gbps / hbm:5.1f}%"
            f"  vs torch x{t_ref / t_ms:6.1f}  pages={pages}  rel_err={err:.1e}"
        )
        torch.cuda.empty_cache()
    med = [statistics.median(c) for c in zip(*rows, strict=True)]
    print(
        f"replay_gpu hbm_gbps={hbm:.0f} kernel_gbps={med[0]:.0f} floor_ratio={med[1]:.2f} "
        f"torch_ratio={med[2]:.1f} max_rel_error={max(r[3] for r in rows):.1e}"
    )


if __name__ == "__main__":
    main()
