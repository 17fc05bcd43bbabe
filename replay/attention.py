"""Paged attention in PyTorch: gather K/V through a block table, compared with dense attention.

The numerics half of the replay: a corrupted block table gathers the wrong KV, and the
relative error against dense attention over the request's true KV shows it. CPU by
default; CUDA when present (`device="auto"`), where the Triton decode kernel of
`replay.triton_attention` is checked against this reference too.
"""

from __future__ import annotations

import torch


def pick_device(device: str = "auto") -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def paged_attention(q, k_cache, v_cache, block_tables, context_lens, scale: float | None = None):
    """Decode attention for a batch: q [S, H, D]; caches [num_blocks, block_size, Hkv, D]
    (H a multiple of Hkv: grouped-query heads share a KV head); block_tables [S, max_blocks];
    context_lens [S]. Returns [S, H, D]."""
    s, h, d = q.shape
    bs, hkv = k_cache.shape[1], k_cache.shape[2]
    block_tables = block_tables.long()
    scale = scale if scale is not None else d**-0.5
    max_len = int(context_lens.max())
    pos = torch.arange(max_len, device=q.device)
    blk = block_tables[:, (pos // bs).clamp(max=block_tables.shape[1] - 1)]  # [S, L]
    k = k_cache[blk, pos % bs]  # [S, L, H, D]
    v = v_cache[blk, pos % bs]
    if hkv != h:
        k, v = k.repeat_interleave(h // hkv, dim=2), v.repeat_interleave(h // hkv, dim=2)
    scores = torch.einsum("shd,slhd->shl", q, k) * scale
    mask = pos[None, :] < context_lens[:, None]
    scores = scores.masked_fill(~mask[:, None, :], float("-inf"))
    return torch.einsum("shl,slhd->shd", torch.softmax(scores, dim=-1), v)


def dense_attention(q, k, v, scale: float | None = None):
    """One sequence: q [H, D], k/v [L, H, D]."""
    d = q.shape[-1]
    scale = scale if scale is not None else d**-0.5
    w = torch.softmax(torch.einsum("hd,lhd->hl", q, k) * scale, dim=-1)
    return torch.einsum("hl,lhd->hd", w, v)


def naive_attention(q, k_cache, v_cache, table, n: int, scale: float | None = None):
    """A per-token Python loop over the block table (the slow baseline for the benchmark)."""
    bs = k_cache.shape[1]
    ks = [k_cache[int(table[p // bs]), p % bs] for p in range(n)]
    vs = [v_cache[int(table[p // bs]), p % bs] for p in range(n)]
    return dense_attention(q, torch.stack(ks), torch.stack(vs), scale)


def _random_case(s: int, h: int, hkv: int, d: int, bs: int, g: torch.Generator, dev: torch.device):
    """Random caches and block tables for `s` sequences, lengths with partial last blocks."""
    lens = torch.randint(1, 5 * bs, (s,), generator=g)
    nblk = int(((lens + bs - 1) // bs).sum()) + 1
    k_cache = torch.randn(nblk, bs, hkv, d, generator=g).to(dev)
    v_cache = torch.randn(nblk, bs, hkv, d, generator=g).to(dev)
    perm = torch.randperm(nblk - 1, generator=g) + 1  # block 0 is the null block
    tables, used = [], 0
    for n_tok in lens.tolist():
        n = (n_tok + bs - 1) // bs
        tables.append(perm[used : used + n].tolist())
        used += n
    width = max(len(x) for x in tables)
    bt = torch.tensor([x + [0] * (width - len(x)) for x in tables], dtype=torch.int32, device=dev)
    q = torch.randn(s, h, d, generator=g).to(dev)
    return q, k_cache, v_cache, bt, lens.to(dev)


SHAPES = ((3, 4, 4, 32, 16), (2, 8, 8, 64, 16), (4, 2, 2, 16, 8), (3, 8, 2, 64, 16), (2, 6, 2, 24, 32))
"""(sequences, query heads, KV heads, head dim, block size): MHA, GQA, odd head dims, other block sizes."""


def numerics_check(device: str = "auto", seed: int = 0, kernel: str = "auto") -> dict:
    """Paged vs dense attention on random shapes with partial last blocks: max relative error (fp32).

    kernel: `torch` (the gather reference), `triton` (also the Triton kernel: needs a GPU or
    `TRITON_INTERPRET=1`), or `auto` (Triton on CUDA when it imports).
    """
    dev = pick_device(device)
    triton_fn = None
    if kernel == "triton" or (kernel == "auto" and dev.type == "cuda"):
        try:
            from .triton_attention import paged_decode as triton_fn
        except ImportError:
            if kernel == "triton":
                raise
    g = torch.Generator(device="cpu").manual_seed(seed)
    worst, worst_triton = 0.0, 0.0
    for s, h, hkv, d, bs in SHAPES:
        q, k_cache, v_cache, bt, lens = _random_case(s, h, hkv, d, bs, g, dev)
        out = paged_attention(q, k_cache, v_cache, bt, lens)
        out_t = triton_fn(q, k_cache, v_cache, bt, lens) if triton_fn else None
        for i, n_tok in enumerate(lens.tolist()):
            pos = torch.arange(n_tok, device=dev)
            blk = bt[i, pos // bs].long()
            k, v = k_cache[blk, pos % bs], v_cache[blk, pos % bs]
            ref = dense_attention(q[i], k.repeat_interleave(h // hkv, 1), v.repeat_interleave(h // hkv, 1))
            worst = max(worst, float((out[i] - ref).norm() / ref.norm()))
            if out_t is not None:
                worst_triton = max(worst_triton, float((out_t[i] - ref).norm() / ref.norm()))
    res = {"device": str(dev), "max_rel_error": worst, "dtype": "float32", "kernel": "torch"}
    if triton_fn is not None:
        res.update(kernel="torch+triton", triton_max_rel_error=worst_triton)
    return res


def kv_from_keys(keys, dim: int = 16):
    """Deterministic K/V vectors for slots identified by integer content keys ([..., D] each).

    The replay does not store real activations: a slot's K/V is a function of what it
    holds, so a block holding another request's content yields other vectors.
    """
    freq = torch.arange(1, dim + 1, dtype=torch.float64)
    x = (keys.to(torch.float64) % 1_000_003)[..., None] * 1e-3
    k = torch.sin(x * freq).to(torch.float32)
    v = torch.cos(x * freq * 0.7).to(torch.float32)
    return k, v


def replay_step_error(
    held: list[list[int]], expected: list[list[int]], block_size: int, context_lens: list[int]
) -> float:
    """Max relative error of paged attention over the KV the blocks hold vs dense attention over the true KV.

    `held[s][i]` / `expected[s][i]`: content key of sequence s's table entry i as stored
    in the pool / as the request wrote it. One head, fp32.
    """
    worst = 0.0
    for h, e, n in zip(held, expected, context_lens, strict=True):
        used = -(-n // block_size)
        if list(h[:used]) == list(e[:used]):
            continue  # the same KV in, the same attention out: exactly zero error
        slots = torch.arange(n)
        hk = torch.tensor([h[i // block_size] for i in range(n)], dtype=torch.int64) * block_size + slots % block_size
        ek = torch.tensor([e[i // block_size] for i in range(n)], dtype=torch.int64) * block_size + slots % block_size
        k_h, v_h = kv_from_keys(hk)
        k_e, v_e = kv_from_keys(ek)
        q = torch.sin(torch.arange(k_h.shape[-1], dtype=torch.float32) + n)
        got = dense_attention(q[None], k_h[:, None], v_h[:, None])
        ref = dense_attention(q[None], k_e[:, None], v_e[:, None])
        worst = max(worst, float((got - ref).norm() / ref.norm().clamp_min(1e-12)))
    return worst
