"""Allocation/eviction policies: the correct vLLM V1 behaviour and fault variants of real bug classes.

A policy is a small object with these members (subclass `Policy`; plug your own with
`--policy package.module:Class`):

* `blocks_needed(num_tokens, block_size)`: table length for that many tokens (cdiv);
* `num_available(pool)`: how many blocks an allocation may count on;
* `get_new_blocks(pool, n)`: hand out `n` blocks or return None;
* `free(pool, blocks)`: release a finished/preempted request's blocks;
* `remove_hash_on_reuse`: drop a block's prefix-cache hash when it is reused;
* `slot_block(position, block_size, table_len)`: which table entry a token's KV is written to.

Fault variants (kv-cache-and-replay.md §1.3, §1.4): the ref-count/eviction-threshold class
scales with load and is what the motivating incident was.
"""

from __future__ import annotations

import importlib

from .block_pool import FREED_TWICE, Block, BlockPool
from .errors import PolicyError


class Policy:
    """The correct V1 policy: LRU free queue, evict only ref_cnt == 0, cdiv sizing, hashes dropped on reuse."""

    name = "lru"
    fault = False
    description = "vLLM V1 behaviour: reuse only free blocks (ref_cnt 0) from the LRU head; queue or preempt otherwise"
    remove_hash_on_reuse = True

    def blocks_needed(self, num_tokens: int, block_size: int) -> int:
        return -(-num_tokens // block_size)

    def num_available(self, pool: BlockPool) -> int:
        return len(pool.free)

    def get_new_blocks(self, pool: BlockPool, n: int) -> list[Block] | None:
        if n > len(pool.free):
            return None
        return [pool.pop_free() for _ in range(n)]

    def free(self, pool: BlockPool, blocks: list[Block]) -> None:
        for b in reversed(blocks):
            pool.release(b)

    def slot_block(self, position: int, block_size: int, table_len: int) -> int:
        return position // block_size


class EvictLive(Policy):
    """Off-by-one in the eviction threshold: blocks with ref_cnt <= 1 count as evictable.

    When the free queue runs dry, live blocks held by exactly one request are handed out
    again. Nothing queues and nothing is preempted (the tell), and the previous owner
    reads KV that another request overwrote: the motivating outage.
    """

    name = "lru-evict-live"
    fault = True
    description = "eviction treats ref_cnt <= 1 as evictable: live blocks are reused (the incident's bug)"

    def num_available(self, pool: BlockPool) -> int:
        # Anything held by a single request counts as evictable: allocation practically never waits.
        return len(pool.free) + pool.num_usable

    def get_new_blocks(self, pool: BlockPool, n: int) -> list[Block] | None:
        out = [pool.pop_free() for _ in range(min(n, len(pool.free)))]
        cursor = pool.__dict__.get("steal_cursor", 1)
        scanned = 0
        while len(out) < n and scanned < pool.num_usable:
            b = pool.blocks[cursor]
            cursor = cursor + 1 if cursor + 1 < len(pool.blocks) else 1
            scanned += 1
            if b.ref_cnt == 1 and b not in out:
                pool.evict_hash(b)
                out.append(b)  # ref_cnt stays 1: the old owner still holds it
        pool.steal_cursor = cursor
        return out if len(out) == n else None


class FloorBlocks(Policy):
    """floor instead of ceil when sizing a block table: the last partial block is missing.

    The last tokens' slots index one entry past the table (vLLM PR #54296's class): their KV
    lands in whatever block sits there, the next request's.
    """

    name = "floor-blocks"
    fault = True
    description = "block table sized with floor(tokens / block_size): the tail's KV is written past the table"

    def blocks_needed(self, num_tokens: int, block_size: int) -> int:
        return max(1, num_tokens // block_size)


class StaleHash(Policy):
    """A reused block keeps its prefix-cache hash (vLLM PR #4761's class): later prefix hits read overwritten KV."""

    name = "stale-hash"
    fault = True
    description = "a reused block keeps its old hash entry: later prefix hits read someone else's KV"
    remove_hash_on_reuse = False


class DoubleFree(Policy):
    """The last block of a finished request is released twice: a second queue entry for it
    survives, and when it is reached the block is handed out although it is in use again
    (vLLM #42571's class). Two requests then share one block."""

    name = "double-free"
    fault = True
    description = "a finished request's last block is freed twice and later shared by two requests"

    def free(self, pool: BlockPool, blocks: list[Block]) -> None:
        super().free(pool, blocks)
        if blocks and blocks[-1] is not pool.null_block:
            ghosts = pool.__dict__.setdefault("ghosts", [])
            ghosts.append(blocks[-1].block_id)
            pool.flag(FREED_TWICE, blocks[-1].block_id)

    def get_new_blocks(self, pool: BlockPool, n: int) -> list[Block] | None:
        ghosts = pool.__dict__.get("ghosts", [])
        live_ghosts = sum(1 for g in ghosts if pool.blocks[g].ref_cnt >= 1)
        if n - min(n, live_ghosts) > len(pool.free):
            return None  # check before mutating anything (I7)
        out: list[Block] = []
        while ghosts and len(out) < n:
            b = pool.blocks[ghosts.pop(0)]
            if b.ref_cnt >= 1 and b not in out:  # the stale duplicate entry: the block is live again
                b.ref_cnt += 1
                out.append(b)
        rest = super().get_new_blocks(pool, n - len(out))
        return None if rest is None else out + rest


class SlotOffByOne(Policy):
    """`<=` for `<` on the table length: a token filling the table's last block exactly is
    written one entry past the row, into the adjacent request's block (PR #54296's class)."""

    name = "slot-off-by-one"
    fault = True
    description = "the token that fills a table's last block is written one entry past the row"

    def slot_block(self, position: int, block_size: int, table_len: int) -> int:
        i = position // block_size
        return i + 1 if i == table_len - 1 and (position + 1) % block_size == 0 else i


BUILTIN: dict[str, type[Policy]] = {
    p.name: p for p in (Policy, EvictLive, FloorBlocks, StaleHash, DoubleFree, SlotOffByOne)
}


def load_policy(spec: str) -> Policy:
    """A built-in policy by name, or a user's class as `package.module:Class`."""
    if spec in BUILTIN:
        return BUILTIN[spec]()
    if ":" in spec:
        mod, _, cls = spec.partition(":")
        try:
            obj = getattr(importlib.import_module(mod), cls)
        except (ImportError, AttributeError) as e:
            raise PolicyError(
                f"cannot load policy {spec!r}: {e}", hint="give package.module:Class importable from here"
            ) from e
        return obj()
    raise PolicyError(f"unknown policy {spec!r}", hint="built-in: " + ", ".join(BUILTIN) + "; or package.module:Class")
