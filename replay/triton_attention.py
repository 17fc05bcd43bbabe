"""A Triton paged-decode attention kernel: one program per (sequence, KV head, split), online softmax.

Why a kernel of our own: the replay's numerics check should run the same memory access
pattern as vLLM's decode (gather KV pages through a block table, one query token per
sequence, grouped-query heads sharing a KV head), at the speed of the GPU, so a replay at
real shapes is not bound by PyTorch's gather copies. It is checked against
`replay.attention.paged_attention` (tests run it under `TRITON_INTERPRET=1` on the CPU)
and timed against the HBM floor by `bench/replay_gpu.py`.

Layout (vLLM's, flattened): q [S, H, D]; k_cache / v_cache [num_blocks, block_size, Hkv, D];
block_tables [S, max_blocks] int32/int64; context_lens [S]. H must be a multiple of Hkv.

Few sequences with long contexts would leave most multiprocessors idle (S x Hkv programs),
so the context is split into ranges (flash-decoding): each program keeps its own running
max, denominator and accumulator, and the partials are merged by log-sum-exp afterwards.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _paged_decode(
    q_ptr,
    k_ptr,
    v_ptr,
    bt_ptr,
    lens_ptr,
    out_ptr,
    part_m_ptr,
    part_l_ptr,
    part_acc_ptr,
    scale,
    split_len,
    stride_qs,
    stride_qh,
    stride_kb,
    stride_kt,
    stride_kh,
    stride_bts,
    stride_os,
    stride_oh,
    GROUP: tl.constexpr,
    GROUP_P: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    HEAD_DIM_P: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    PAGES: tl.constexpr,
    SPLITS: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
    s = tl.program_id(0)
    kvh = tl.program_id(1)
    sp = tl.program_id(2)
    n = tl.load(lens_ptr + s)
    lo = sp * split_len
    hi = tl.minimum(n, lo + split_len)
    g = tl.arange(0, GROUP_P)
    d = tl.arange(0, HEAD_DIM_P)
    gmask = g < GROUP
    dmask = d < HEAD_DIM
    heads = kvh * GROUP + g
    q = tl.load(
        q_ptr + s * stride_qs + heads[:, None] * stride_qh + d[None, :],
        mask=gmask[:, None] & dmask[None, :],
        other=0.0,
    )
    m = tl.full([GROUP_P], float("-inf"), tl.float32)
    den = tl.zeros([GROUP_P], tl.float32)
    acc = tl.zeros([GROUP_P, HEAD_DIM_P], tl.float32)
    TILE: tl.constexpr = PAGES * BLOCK_SIZE
    tok = tl.arange(0, TILE)
    for start in range(lo, hi, TILE):
        pos = start + tok
        live = pos < hi
        page = tl.load(bt_ptr + s * stride_bts + pos // BLOCK_SIZE, mask=live, other=0).to(tl.int64)
        kv_off = page[:, None] * stride_kb + (pos % BLOCK_SIZE)[:, None] * stride_kt + kvh * stride_kh + d[None, :]
        kv_mask = live[:, None] & dmask[None, :]
        k = tl.load(k_ptr + kv_off, mask=kv_mask, other=0.0)
        scores = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION) * scale  # [GROUP_P, TILE], fp32
        scores = tl.where(live[None, :], scores, float("-inf"))
        m_new = tl.maximum(m, tl.max(scores, axis=1))
        p = tl.exp(scores - m_new[:, None])
        alpha = tl.exp(m - m_new)
        v = tl.load(v_ptr + kv_off, mask=kv_mask, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=DOT_PRECISION)
        den = den * alpha + tl.sum(p, axis=1)
        m = m_new
    omask = gmask[:, None] & dmask[None, :]
    if SPLITS == 1:
        out = acc / den[:, None]
        tl.store(
            out_ptr + s * stride_os + heads[:, None] * stride_oh + d[None, :],
            out.to(out_ptr.dtype.element_ty),
            mask=omask,
        )
    else:
        # Partials laid out [S, H, SPLITS] and [S, H, SPLITS, HEAD_DIM_P], contiguous.
        row = (s * (tl.num_programs(1) * GROUP) + heads) * SPLITS + sp
        tl.store(part_m_ptr + row, m, mask=gmask)
        tl.store(part_l_ptr + row, den, mask=gmask)
        tl.store(part_acc_ptr + row[:, None] * HEAD_DIM_P + d[None, :], acc, mask=omask)


def paged_decode(
    q, k_cache, v_cache, block_tables, context_lens, scale: float | None = None, pages: int = 0, splits: int = 0
):
    """Decode attention through the block table; same contract as `attention.paged_attention`.

    `pages`: KV pages per loop iteration (0: a tile of about 64 tokens). `splits`: context
    ranges per sequence (0: enough programs for two per multiprocessor on CUDA, 1 on the
    CPU interpreter). Every sequence needs context_lens >= 1 (vLLM never decodes an empty one).
    """
    import torch

    s, h, d = q.shape
    _, bs, hkv, d2 = k_cache.shape
    if d2 != d or h % hkv:
        raise ValueError(f"shapes do not match: q {tuple(q.shape)}, k_cache {tuple(k_cache.shape)}")
    if k_cache.stride(-1) != 1 or q.stride(-1) != 1:
        raise ValueError("q and the caches need a contiguous last (head_dim) axis")
    group = h // hkv
    # tl.dot wants tiles of at least 16 rows: pad the query group, and take >= 16 tokens a tile.
    pages = triton.next_power_of_2(max(pages or 64 // bs, triton.cdiv(16, bs), 1))
    tile = pages * bs
    max_len = int(context_lens.max())
    if not splits:
        splits = 1
        if q.is_cuda:
            sms = torch.cuda.get_device_properties(q.device).multi_processor_count
            splits = max(1, min(triton.cdiv(2 * sms, s * hkv), triton.cdiv(max_len, 4 * tile)))
    split_len = triton.cdiv(triton.cdiv(max_len, splits), tile) * tile
    splits = triton.cdiv(max_len, split_len)
    dp = max(16, triton.next_power_of_2(d))
    out = torch.empty_like(q)
    if splits > 1:
        part_m = torch.empty(s, h, splits, device=q.device, dtype=torch.float32)
        part_l = torch.empty_like(part_m)
        part_acc = torch.empty(s, h, splits, dp, device=q.device, dtype=torch.float32)
    else:
        part_m = part_l = part_acc = out  # unused
    bt = block_tables.contiguous()
    _paged_decode[(s, hkv, splits)](
        q,
        k_cache,
        v_cache,
        bt,
        context_lens.contiguous(),
        out,
        part_m,
        part_l,
        part_acc,
        scale if scale is not None else d**-0.5,
        split_len,
        q.stride(0),
        q.stride(1),
        k_cache.stride(0),
        k_cache.stride(1),
        k_cache.stride(2),
        bt.stride(0),
        out.stride(0),
        out.stride(1),
        GROUP=group,
        GROUP_P=max(16, triton.next_power_of_2(group)),
        HEAD_DIM=d,
        HEAD_DIM_P=dp,
        BLOCK_SIZE=bs,
        PAGES=pages,
        SPLITS=splits,
        DOT_PRECISION="ieee" if q.dtype == torch.float32 else "tf32",
    )
    if splits > 1:
        # Log-sum-exp merge; a split past a sequence's end has m = -inf and weighs nothing.
        top = part_m.amax(dim=-1, keepdim=True)
        w = torch.exp(part_m - top)
        num = (part_acc[..., :d] * w[..., None]).sum(dim=2)
        out.copy_(num / (part_l * w).sum(dim=-1, keepdim=True))
    return out
