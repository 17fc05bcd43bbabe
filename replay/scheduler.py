"""Virtual-time continuous batching over a `BlockPool`, with exact corruption detection.

Each step admits waiting requests FCFS (prefix-cache hits first, never covering the last
prompt token; capacity checked before anything is touched), runs chunked prefill under a
token budget and one decode token per running request, allocates blocks as tables grow,
preempts the latest request by recompute when allocation fails, and advances time by a
step-time model `a + b * tokens`.

Corruption is detected exactly, not sampled: every block carries the tag of the content
its slots hold. A request's table entry i must hold its prompt block's chained hash (for
full prompt blocks, shareable) or its own private tag. When a block is written while
another live request still expects different content in it, that request is corrupted
(the block was taken from under it); when a prefix hit returns a block whose tag is not
the hash, the hitting request is corrupted (a stale hash). The first corruption is kept
with its step, time, request and block.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np

from .block_pool import NULL_WRITE, Block, BlockPool
from .content import chain_hashes, content_key, foreign_tag, private_tag
from .result import HOW, OVERWRITTEN, PAST_TABLE, STALE_HIT, Result, summarize
from .traces import Request, columns


@dataclass
class Config:
    block_size: int = 16
    num_blocks: int = 4096
    max_num_seqs: int = 256
    max_batched_tokens: int = 8192
    step_base_s: float = 0.004
    step_per_token_s: float = 2e-5
    check_every: int = 0
    """Run the full-pool invariant check every N steps (0: never; the incremental checks always run)."""
    stall_steps: int = 100_000
    """Stop after this many steps without a request finishing or being rejected: leaked blocks
    can leave requests preempting each other forever (a livelock the engine would show as a hang)."""
    numerics_every: int = 0
    """Every N steps, run attention over the KV two decoding requests actually read (0: never; needs torch)."""


@dataclass(eq=False)
class _Req:
    r: Request
    hashes: list[int]
    table: list[Block] = field(default_factory=list)
    computed: int = 0
    generated: int = 0
    admitted_s: float | None = None
    first_token_s: float | None = None
    corrupted: bool = False
    failed_at: tuple[int, int] | None = None
    """(pool version, blocks available) of the last failed admission attempt."""

    @property
    def total(self) -> int:
        return self.r.prompt_tokens + self.r.output_tokens

    def expected(self, i: int) -> int:
        return self.hashes[i] if i < len(self.hashes) else private_tag(self.r.rid, i)


def simulate_reference(requests: list[Request], policy, cfg: Config) -> Result:
    """The definition of the replay semantics, in plain Python: runs any policy object."""
    pool = BlockPool(cfg.num_blocks, policy)
    B = cfg.block_size
    owners: dict[int, dict[int, int]] = {}
    """block id -> {request id: table index} of live requests referencing it."""
    start, flat = chain_hashes(columns(requests), B)
    hashes = {r.rid: flat[start[k] : start[k + 1]].tolist() for k, r in enumerate(requests)}
    pending = [(r.arrival_s, r.rid, r) for r in requests]
    heapq.heapify(pending)
    waiting: list[_Req] = []
    running: list[_Req] = []
    done: list[_Req] = []
    state = {"first": None, "corrupted": set(), "rejected": 0}
    t, steps, peak, max_wait, preempt = 0.0, 0, 0.0, 0, 0

    def corrupt(q: _Req, block: Block, how: str) -> None:
        if not q.corrupted:
            q.corrupted = True
            state["corrupted"].add(q.r.rid)
            if state["first"] is None:
                state["first"] = {
                    "step": steps,
                    "time_s": round(t, 6),
                    "request": q.r.rid,
                    "block": block.block_id,
                    "how": how,
                }

    def write(q: _Req, idx: int) -> None:
        """Request q writes the KV of its table entry `idx` (a token range in that block)."""
        target = policy.slot_block(idx * B + B - 1, B, len(q.table)) if idx == len(q.table) - 1 else idx
        if idx >= len(q.table):
            target = idx  # the table is too short for these tokens (sizing bug): past the row
        if target >= len(q.table):
            # Past the row: the adjacent row's block (the next running request), or padding.
            others = [o for o in running if o is not q and o.table]
            block = others[0].table[0] if others else pool.null_block
            if block is pool.null_block:
                pool.flag(NULL_WRITE)
                return
            tag = foreign_tag(q.r.rid, idx)
            corrupt(q, q.table[min(idx, len(q.table) - 1)], HOW[PAST_TABLE])
        else:
            block = q.table[target]
            tag = q.expected(idx) if target == idx else foreign_tag(q.r.rid, idx)
            if block.tag == tag:
                return  # rewriting what the block holds changes nothing (every decode step)
        for rid, j in list(owners.get(block.block_id, {}).items()):
            other = by_id.get(rid)
            if other is not None and other.expected(j) != tag:
                corrupt(other, block, HOW[OVERWRITTEN])
        block.tag = tag

    by_id: dict[int, _Req] = {}

    def own(q: _Req, b: Block, idx: int) -> None:
        owners.setdefault(b.block_id, {})[q.r.rid] = idx

    def release(q: _Req) -> None:
        for i, b in enumerate(q.table):
            d = owners.get(b.block_id)
            if d is not None and d.get(q.r.rid) == i:
                del d[q.r.rid]
        pool.free_blocks(q.table)
        q.table = []

    def grow(q: _Req, n_tokens: int) -> bool:
        need = policy.blocks_needed(n_tokens, B) - len(q.table)
        if need <= 0:
            return True
        blocks = pool.get_new_blocks(need)
        if blocks is None:
            return False
        for b in blocks:
            own(q, b, len(q.table))
            q.table.append(b)
        return True

    def too_long(q: _Req) -> bool:
        """A request that cannot fit even in an empty pool is rejected, as vLLM rejects it."""
        return policy.blocks_needed(q.total, B) > pool.num_usable

    def admit(q: _Req) -> bool:
        available = policy.num_available(pool)
        if available < 1:
            return False  # every admission needs at least one new block (I6 keeps the last token uncached)
        if q.failed_at == (pool.version, available):
            return False  # nothing was freed or cached since it last failed: it fails again
        # Prefix hits: whole cached blocks, never covering the last prompt token (I6).
        max_hit = (q.r.prompt_tokens - 1) // B
        hits: list[Block] = []
        for i in range(min(max_hit, len(q.hashes))):
            b = pool.lookup(q.hashes[i])
            if b is None:
                break
            hits.append(b)
        evictable = sum(1 for b in hits if b.ref_cnt == 0)
        first = min(q.r.prompt_tokens, cfg.max_batched_tokens) - len(hits) * B
        need = max(0, policy.blocks_needed(len(hits) * B + max(first, 1), B) - len(hits))
        if need + evictable > available:  # I7: check before touching anything
            q.failed_at = (pool.version, available)
            return False
        pool.touch(hits)
        for i, b in enumerate(hits):
            own(q, b, i)
            q.table.append(b)
            if b.tag != q.hashes[i]:
                corrupt(q, b, HOW[STALE_HIT])
        q.computed = len(hits) * B
        return True

    progress, stalled = 0, False
    while pending or waiting or running:
        if steps - progress > cfg.stall_steps:
            stalled = True
            break
        if not running and not waiting and pending:
            t = max(t, pending[0][0])
        while pending and pending[0][0] <= t:
            r = heapq.heappop(pending)[2]
            q = _Req(r, hashes.pop(r.rid))
            by_id[r.rid] = q
            waiting.append(q)
        max_wait = max(max_wait, len(waiting))
        # Admit FCFS while there is room.
        while waiting and len(running) < cfg.max_num_seqs:
            q = waiting[0]
            if too_long(q):
                waiting.pop(0)
                state["rejected"] += 1
                progress = steps
                continue
            if not admit(q):
                if not running and not pending:
                    # Nothing will ever free a block for it: reject rather than spin.
                    waiting.pop(0)
                    state["rejected"] += 1
                    progress = steps
                    continue
                break
            waiting.pop(0)
            q.admitted_s = q.admitted_s if q.admitted_s is not None else t
            running.append(q)
        # Schedule tokens: decodes first (1 each), then prefill chunks under the budget.
        budget = cfg.max_batched_tokens
        plan: list[tuple[_Req, int]] = []
        for q in running:
            if q.computed >= q.r.prompt_tokens and budget > 0:
                plan.append((q, 1))
                budget -= 1
        for q in running:
            if q.computed < q.r.prompt_tokens and budget > 0:
                n = min(q.r.prompt_tokens - q.computed, budget)
                plan.append((q, n))
                budget -= n
        tokens = 0
        for q, n in plan:
            if q not in running:
                continue
            upto = q.computed + n
            while not grow(q, upto):
                victim = running[-1]
                running.remove(victim)
                release(victim)
                victim.computed, victim.generated = 0, 0
                waiting.insert(0, victim)
                preempt += 1
                if victim is q:
                    break
            if q not in running:
                continue
            first_idx = q.computed // B
            last_idx = (upto - 1) // B
            for idx in range(first_idx, last_idx + 1):
                write(q, idx)
            # Cache newly full prompt blocks.
            for i in range(q.computed // B, min(upto, q.r.prompt_tokens) // B):
                if i < len(q.table) and i < len(q.hashes) and q.table[i].block_hash is None:
                    pool.cache(q.table[i], q.hashes[i])
            was_prefill = q.computed < q.r.prompt_tokens
            q.computed = upto
            tokens += n
            if not was_prefill or q.computed >= q.r.prompt_tokens:
                if q.computed > q.r.prompt_tokens or not was_prefill:
                    q.generated += 1
                elif q.computed == q.r.prompt_tokens:
                    q.generated += 1  # the prefill's last step samples the first token
                if q.first_token_s is None:
                    q.first_token_s = t
        dt = cfg.step_base_s + cfg.step_per_token_s * tokens
        t += dt
        steps += 1
        peak = max(peak, pool.usage())
        for q in [q for q in running if q.generated >= q.r.output_tokens]:
            running.remove(q)
            q.finish_s = t
            release(q)
            done.append(q)
            progress = steps
        if cfg.numerics_every and steps % cfg.numerics_every == 0:
            sample = [q for q in running if q.computed >= q.r.prompt_tokens and q.table][:2]
            if sample:
                from .attention import replay_step_error

                held = [[content_key(b.tag) for b in q.table] for q in sample]
                want = [[content_key(q.expected(i)) for i in range(len(q.table))] for q in sample]
                lens = [min(q.computed, len(q.table) * B) for q in sample]
                err = replay_step_error(held, want, B, lens)
                state["attn"] = max(state.get("attn", 0.0), err)
        if cfg.check_every and steps % cfg.check_every == 0:
            refs: dict[int, int] = {}
            for q in running:
                for b in q.table:
                    refs[b.block_id] = refs.get(b.block_id, 0) + 1
            pool.check(refs)
    res = summarize(
        len(requests),
        min((r.arrival_s for r in requests), default=0.0),
        np.array([q.r.arrival_s for q in done], np.float64),
        np.array([math.nan if q.first_token_s is None else q.first_token_s for q in done], np.float64),
        np.array([q.finish_s for q in done], np.float64),
        np.array([q.r.output_tokens for q in done], np.int64),
        corrupted=len(state["corrupted"]),
        first_corruption=state["first"],
        violations=pool.num_violations,
        first_violation=pool.violations[0] if pool.violations else None,
        t=t,
        steps=steps,
        peak=peak,
        max_wait=max_wait,
        preemptions=preempt,
        block_ops=pool.ops,
        stalled=stalled,
    )
    res.attention_max_rel_error = state.get("attn") if cfg.numerics_every else None
    return res
