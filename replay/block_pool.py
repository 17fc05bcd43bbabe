"""A vLLM V1-style KV block pool: ref counts, an LRU free queue, a prefix cache, a null block.

Semantics follow `vllm/v1/core/block_pool.py` and `kv_cache_utils.py` (shared docs,
kv-cache-and-replay.md §1.2): block 0 is the null block (never freed or cached);
`get_new_blocks` takes from the head of the free queue and drops the block's cached hash;
`touch` (prefix hit) removes a free block from the queue and increments its ref count;
`free` decrements and returns blocks reaching zero to the tail, so the least recently
used come back first. What a policy may change is delegated to it (`replay.policies`).

Ownership of the mutable state: only `BlockPool` changes `ref_cnt`, `block_hash`, the
free queue and the hash map; the scheduler asks it, and the policy decides how.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from .content import TAG_NONE

# Invariant violations, by code: the reference pool formats them here, the compiled
# simulator (`replay.fastsim`) records (code, a, b, c) and is formatted with the same texts.
POPPED_LIVE, NULL_FREED, DOUBLE_FREE, QUEUED_TWICE, HASHED_TWICE, FREED_TWICE = 1, 2, 3, 4, 5, 6
NULL_WRITE, QUEUED_LIVE, UNREFERENCED, REFS_MISMATCH, STALE_ENTRY, NULL_QUEUED = 7, 8, 9, 10, 11, 12
VIOLATIONS = {
    POPPED_LIVE: "I1: block {0} popped from the free queue with ref_cnt {1}",
    NULL_FREED: "I8: the null block was freed",
    DOUBLE_FREE: "I1: block {0} freed with ref_cnt {1} (double free)",
    QUEUED_TWICE: "I1: block {0} is already in the free queue",
    HASHED_TWICE: "I3: block {0} already has a hash",
    FREED_TWICE: "I1: block {0} freed twice (second queue entry)",
    NULL_WRITE: "I8: a write landed in the null block",
    QUEUED_LIVE: "I1: block {0} in the free queue with ref_cnt {1}",
    UNREFERENCED: "I1: block {0} neither free nor referenced",
    REFS_MISMATCH: "I2: block {0} ref_cnt {1} != {2} live references",
    STALE_ENTRY: "I3: hash entry points at block {0} holding another hash",
    NULL_QUEUED: "I8: the null block is in the free queue",
}
KEPT_VIOLATIONS = 20
"""Violation texts kept (all are counted): a broken pool can log millions."""


def check_pool_size(num_blocks: int) -> None:
    if num_blocks < 2:
        raise ValueError("a pool needs at least 2 blocks (one is the null block)")


@dataclass(eq=False)  # identity: blocks are compared by `is`, never by value
class Block:
    block_id: int
    ref_cnt: int = 0
    block_hash: int | None = None
    # The content this block's slots hold (what a read should see); written by the
    # scheduler on each write, checked on each read.
    tag: int = TAG_NONE


class BlockPool:
    def __init__(self, num_blocks: int, policy) -> None:
        check_pool_size(num_blocks)
        self.blocks = [Block(i) for i in range(num_blocks)]
        self.null_block = self.blocks[0]
        # Free queue in block-id order, head first; OrderedDict gives O(1) remove-from-middle.
        self.free: OrderedDict[int, None] = OrderedDict((i, None) for i in range(1, num_blocks))
        self.cached: dict[int, int] = {}
        """block hash -> block id of a full, cached block."""
        self.policy = policy
        self.violations: list[str] = []
        self.num_violations = 0
        self.ops = 0
        self.version = 0
        """Bumped when a block returns to the free queue or a hash is cached: until then, an
        admission that failed fails again (the scheduler skips re-checking it)."""

    @property
    def num_usable(self) -> int:
        return len(self.blocks) - 1

    def usage(self) -> float:
        """Fraction of usable blocks not in the free queue (vLLM's `get_usage`)."""
        return 1.0 - len(self.free) / self.num_usable

    # --- allocation ------------------------------------------------------------------
    def num_available(self) -> int:
        return self.policy.num_available(self)

    def get_new_blocks(self, n: int) -> list[Block] | None:
        """`n` blocks for a request, or None when the policy cannot find them (caller preempts/waits)."""
        self.ops += n
        return self.policy.get_new_blocks(self, n)

    def pop_free(self) -> Block:
        bid, _ = self.free.popitem(last=False)
        b = self.blocks[bid]
        if b.ref_cnt != 0:
            self.flag(POPPED_LIVE, bid, b.ref_cnt)
        self.evict_hash(b)
        b.ref_cnt = 1
        return b

    def evict_hash(self, b: Block) -> None:
        """Drop `b`'s cached hash before reuse (I3), unless the policy keeps stale hashes."""
        if b.block_hash is not None and self.policy.remove_hash_on_reuse:
            if self.cached.get(b.block_hash) == b.block_id:
                del self.cached[b.block_hash]
            b.block_hash = None

    def touch(self, blocks: list[Block]) -> None:
        """Prefix-cache hits: a free block leaves the queue; every block gains a reference."""
        for b in blocks:
            self.ops += 1
            if b.ref_cnt == 0:
                self.free.pop(b.block_id, None)
            b.ref_cnt += 1

    def free_blocks(self, blocks: list[Block]) -> None:
        """Release a request's blocks (tail first, as vLLM does); zero-ref blocks go to the queue tail."""
        self.policy.free(self, blocks)

    def release(self, b: Block) -> None:
        self.ops += 1
        if b is self.null_block:
            self.flag(NULL_FREED)
            return
        if b.ref_cnt <= 0:
            self.flag(DOUBLE_FREE, b.block_id, b.ref_cnt)
        b.ref_cnt -= 1
        if b.ref_cnt <= 0:
            if b.block_id in self.free:
                self.flag(QUEUED_TWICE, b.block_id)
            self.free[b.block_id] = None
            self.version += 1

    # --- prefix cache ----------------------------------------------------------------
    def lookup(self, h: int) -> Block | None:
        bid = self.cached.get(h)
        return None if bid is None else self.blocks[bid]

    def cache(self, b: Block, h: int) -> None:
        """Register a full block under its chained hash (no dedup, as in V1)."""
        if b.block_hash is not None and b.block_hash != h and self.policy.remove_hash_on_reuse:
            self.flag(HASHED_TWICE, b.block_id)
        b.block_hash = h
        self.cached.setdefault(h, b.block_id)
        self.version += 1

    def violation(self, what: str) -> None:
        """Count every violation; keep the first few texts (a broken pool can log millions)."""
        self.num_violations += 1
        if len(self.violations) < KEPT_VIOLATIONS:
            self.violations.append(what)

    def flag(self, code: int, *args: int) -> None:
        """A violation of a known kind (`VIOLATIONS`); user policies may pass their own text to `violation`."""
        self.violation(VIOLATIONS[code].format(*args))

    def check(self, live_refs: dict[int, int] | None = None) -> None:
        """Invariants I1-I3 and I8 over the whole pool (tests and sampled steps; O(blocks))."""
        for b in self.blocks[1:]:
            in_free = b.block_id in self.free
            if in_free and b.ref_cnt != 0:
                self.flag(QUEUED_LIVE, b.block_id, b.ref_cnt)
            if not in_free and b.ref_cnt <= 0:
                self.flag(UNREFERENCED, b.block_id)
            if live_refs is not None and b.ref_cnt != live_refs.get(b.block_id, 0) and b.ref_cnt > 0:
                self.flag(REFS_MISMATCH, b.block_id, b.ref_cnt, live_refs.get(b.block_id, 0))
        for h, bid in sorted(self.cached.items()):
            if self.blocks[bid].block_hash != h:
                self.flag(STALE_ENTRY, bid)
        if self.null_block.block_id in self.free:
            self.flag(NULL_QUEUED)
