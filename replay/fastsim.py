"""The reference scheduler (`replay.scheduler`), compiled with numba for the built-in policies.

Why a second implementation: the reference spends ~50 µs of Python per scheduler step, and
an incident's traffic (14,720 req/s for minutes) is millions of steps. This module runs the
same algorithm over flat arrays, step for step and operation for operation: the same FCFS
admission with prefix hits and the `failed_at` shortcut, the same plan (decodes first, then
prefill chunks), the same preemption of the newest request, the same LRU free queue (a
FIFO array of block ids whose removals from the middle are lazy), the same owner order per
block (a linked list of `(request, table index)` in insertion order), the same tags
(`replay.content`) and the same violation codes (`replay.block_pool.VIOLATIONS`). Tests
hold the two to identical results for every built-in policy on every shipped trace; a user
policy (any other class, including a subclass of a built-in one) runs on the reference,
which remains the definition.

Layout: pool state in one row per block id; request state in one row per request (its
position in arrival order); block tables only for running requests, one row per batch slot.
Rows are 64 bytes, one cache line: the pool and the request set outgrow the CPU caches and
every step visits many of both in no predictable order. Scalars the inner closures change
live in the `st` (int) and `ft` (float) arrays because numba closures cannot rebind outer
variables. `_run` allocates everything and drives `_advance`, the scheduler loop, which
allocates nothing and so runs without reference counting.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.typed import List

from . import policies as pol
from .block_pool import (
    DOUBLE_FREE,
    FREED_TWICE,
    HASHED_TWICE,
    KEPT_VIOLATIONS,
    NULL_FREED,
    NULL_QUEUED,
    NULL_WRITE,
    POPPED_LIVE,
    QUEUED_LIVE,
    QUEUED_TWICE,
    REFS_MISMATCH,
    STALE_ENTRY,
    UNREFERENCED,
    VIOLATIONS,
    check_pool_size,
)
from .content import TAG_NONE, chain_hashes, content_key, foreign_tag_nb, private_tag_nb
from .result import HOW, summarize
from .traces import columns

LRU, EVICT_LIVE, FLOOR_BLOCKS, STALE_HASH, DOUBLE_FREE_POLICY, SLOT_OFF_BY_ONE = range(6)
CODES: dict[type, int] = {
    pol.Policy: LRU,
    pol.EvictLive: EVICT_LIVE,
    pol.FloorBlocks: FLOOR_BLOCKS,
    pol.StaleHash: STALE_HASH,
    pol.DoubleFree: DOUBLE_FREE_POLICY,
    pol.SlotOffByOne: SLOT_OFF_BY_ONE,
}
"""Exact classes only: a subclass may override any hook, so it runs on the reference."""

# st[] slots: the integer scalars shared with the closures.
N_FREE, VERSION, OPS, N_VIOL, CURSOR, STEPS, N_CORRUPT, FIRST_SET = 0, 1, 2, 3, 4, 5, 6, 7
FIRST_STEP, FIRST_RID, FIRST_BLOCK, FIRST_HOW, PREEMPT, MAX_WAIT, REJECTED, GHOST_HEAD = range(8, 16)
PEND, W_HEAD, W_COUNT, N_RUN, STAMP, SAMPLED, PROGRESS, STALLED = range(16, 24)
FREE_SLOTS, G_LEN, M_N, M_HELD, FQ_HEAD, FQ_TAIL = range(24, 30)  # free batch slots, buffer fills, free queue
# Columns of the block rows, the request rows and the owner nodes.
REF, HASH, TAG, QPOS, IN_FREE, OWN_HEAD, OWN_TAIL, MARK = range(8)
COMP, GEN, PROMPT, OUTPUT, SLOT, RID, HS, NH = range(8)  # tokens computed, generated; slot -1: not running
NQ, NIDX, NNEXT, NPREV = range(4)
# ft[] slots: clock, peak usage, time of the first corruption.
T, PEAK, FIRST_T = 0, 1, 2


def supports(policy) -> bool:
    return type(policy) in CODES


# Open-addressing maps from non-negative int64 keys to int64 values: `kv[i] = (key, value)`
# (key -1: empty), one cache line per probe; linear probing from a multiplicative home slot;
# deletion shifts the cluster back, so there are no tombstones and lookups stay short.
# Capacity: a power of two, load factor <= 1/2.
_SPREAD = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True)
def _home(k, mask):  # pragma: no cover - compiled
    return np.int64((np.uint64(k) * _SPREAD) >> np.uint64(24)) & mask


@njit(cache=True)
def _probe(kv, k):  # pragma: no cover - compiled
    """The slot holding k, or the empty slot where k belongs."""
    mask = len(kv) - 1
    i = _home(k, mask)
    while kv[i, 0] != -1 and kv[i, 0] != k:
        i = (i + 1) & mask
    return i


@njit(cache=True)
def _find(kv, k):  # pragma: no cover - compiled
    i = _probe(kv, k)
    return i if kv[i, 0] == k else -1


@njit(cache=True)
def _setdefault(kv, k, v):  # pragma: no cover - compiled
    """Insert k -> v unless k is present (dict.setdefault); the slot of k."""
    i = _probe(kv, k)
    if kv[i, 0] == -1:
        kv[i, 0] = k
        kv[i, 1] = v
    return i


@njit(cache=True)
def _delete(kv, i):  # pragma: no cover - compiled
    mask = len(kv) - 1
    j = i
    while True:
        j = (j + 1) & mask
        if kv[j, 0] == -1:
            break
        home = _home(kv[j, 0], mask)
        if (i < j and i < home <= j) or (i > j and (home > i or home <= j)):
            continue  # still reachable from its home slot
        kv[i, 0] = kv[j, 0]
        kv[i, 1] = kv[j, 1]
        i = j
    kv[i, 0] = -1


@intrinsic
def _prefetch(typingctx, arr, row):  # pragma: no cover - compiled
    """Ask the CPU to start loading row `row` of a C-contiguous array (`llvm.prefetch`).

    The pool's block rows and the prefix-cache slots are read in an order no hardware
    prefetcher can guess, but the simulator often knows a few operations ahead which rows
    it will need (the next blocks of a table, the next hashes of a prompt): asking early
    overlaps those cache misses instead of paying them one after another. A hint only:
    it never faults and never changes a result.
    """
    if not isinstance(arr, types.Array) or arr.layout != "C" or not isinstance(row, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        stride = cgutils.unpack_tuple(builder, ary.strides, signature.args[0].ndim)[0]
        offset = builder.mul(context.cast(builder, args[1], signature.args[1], types.intp), stride)
        ptr = builder.gep(builder.bitcast(ary.data, cgutils.voidptr_t), [offset])
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [cgutils.voidptr_t, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [ptr, i32(0), i32(3), i32(1)])  # read, keep in all levels, data
        return context.get_dummy_value()

    return types.void(arr, row), codegen


def _capacity(entries: int) -> int:
    return 1 << max(4, int(2 * entries).bit_length())


@njit(cache=True)
def _flag(st, viol, code, a, b, c):  # pragma: no cover - compiled
    """Count a violation; keep the first `KEPT_VIOLATIONS` as (code, a, b, c)."""
    k = st[N_VIOL]
    if k < KEPT_VIOLATIONS:
        viol[k, 0] = code
        viol[k, 1] = a
        viol[k, 2] = b
        viol[k, 3] = c
    st[N_VIOL] = k + 1


AHEAD = 8
"""How many rows ahead the loops over a table or a prompt's hashes ask for (`_prefetch`)."""
DONE, CHECK, ROOM = range(3)
"""Why `_advance` returned: the replay is over, a full check is due, a buffer needs room."""


class Limits(NamedTuple):
    """The replay's configuration, as `_advance` reads it (see `replay.scheduler.Config`)."""

    policy: int  # a code of CODES
    B: int  # tokens per block
    nb: int  # blocks in the pool, the null block 0 included
    max_seqs: int
    max_batched: int  # tokens per step
    base_s: float  # step time: base_s + per_token_s * tokens
    per_token_s: float
    check_every: int  # steps between full checks (0: never)
    numerics_every: int  # steps between attention samples (0: never)
    max_tlen: int  # the longest block table
    stall_steps: int  # steps without progress that end the replay


class Pool(NamedTuple):
    """The block pool: `blk` rows (REF..MARK), the prefix cache (hash -> block), the free queue,
    and the blocks double-free handed out again (`ghosts`, grown by `_run`)."""

    blk: np.ndarray
    cached: np.ndarray
    fq: np.ndarray
    ghosts: np.ndarray


class Requests(NamedTuple):
    """One row per request in arrival order (`rq`, COMP..NH), the waiting queue, and what each request saw."""

    rq: np.ndarray
    wq: np.ndarray
    first_tok: np.ndarray
    finish: np.ndarray
    corrupted: np.ndarray
    failed_ver: np.ndarray  # pool VERSION when admission last failed (-1: never)
    failed_avail: np.ndarray  # free blocks then


class Batch(NamedTuple):
    """The running requests: batch slots, their block tables and owner nodes, the step's plan.

    `run[:st[N_RUN]]` are the running requests in admission order (preemption takes the last);
    each one's `rq[q, SLOT]` is its row in `tables`, `tlen` and `tnode`, and -1 once it stops."""

    run: np.ndarray
    free_slots: np.ndarray
    tables: np.ndarray
    tlen: np.ndarray
    tnode: np.ndarray
    node: np.ndarray  # owner entries NQ..NPREV, one row per table slot
    scratch: np.ndarray
    plan_q: np.ndarray
    plan_n: np.ndarray


class Samples(NamedTuple):
    """Numerics samples: per sampled sequence its length and start into the held/wanted content keys."""

    m_len: np.ndarray
    m_start: np.ndarray
    m_held: np.ndarray
    m_want: np.ndarray


@njit(cache=True, _nrt=False)
def _advance(  # noqa: C901 - one loop, kept whole so it reads against the reference line by line
    arrival, hashes, limits, st, ft, viol, pool, reqs, batch, samples
):  # pragma: no cover - compiled; covered through `simulate`
    """Run scheduler steps from the state in the arrays until the replay is over (`DONE`), a
    full check is due (`CHECK`) or a growable buffer (`ghosts`, the numerics samples) could
    overflow in the next step (`ROOM`); `_run` then acts and calls again.

    Compiled without numba's reference counting (`_nrt=False`): nothing here allocates, and
    the inlined closures would otherwise incref and decref the captured arrays (atomic
    operations) several times per block operation, a quarter of the run time.

    The state arrives grouped by what it describes (`Limits`, `Pool`, `Requests`, `Batch`,
    `Samples`) and is unpacked once here into the names the closures use; once compiled the
    tuples cost nothing (bench/replay.py before and after in bench/HISTORY.md).
    """
    policy, B, nb, max_seqs, max_batched, base_s, per_token_s, check_every, numerics_every, max_tlen, stall_steps = (
        limits
    )
    blk, cached, fq, ghosts = pool
    rq, wq, first_tok, finish, corrupted, failed_ver, failed_avail = reqs
    run, free_slots, tables, tlen, tnode, node, scratch, plan_q, plan_n = batch
    m_len, m_start, m_held, m_want = samples
    n = len(arrival)
    usable = nb - 1
    remove_on_reuse = policy != STALE_HASH
    wcap = n + 1
    hmask = len(cached) - 1

    def flag(code, a, b, c):
        _flag(st, viol, code, a, b, c)

    # The free queue: block ids in `fq[FQ_HEAD:FQ_TAIL]`, oldest first. An entry counts only
    # while its block is free and its QPOS still points at it, so a removal from the middle
    # (a prefix hit on a free block) just clears IN_FREE and the head skips the dead entry.
    # Blocks leave in the order of vLLM's doubly linked free queue (and the reference's), and
    # the ones next in line are known ahead, so their rows can be fetched early.
    def unlink(b):
        blk[b, IN_FREE] = False
        st[N_FREE] -= 1

    def push_tail(b):
        if st[FQ_TAIL] == len(fq):  # compact: at most nb - 1 entries are alive
            k = 0
            for i in range(st[FQ_HEAD], st[FQ_TAIL]):
                x = fq[i]
                if blk[x, IN_FREE] and blk[x, QPOS] == i:
                    fq[k] = x
                    blk[x, QPOS] = k
                    k += 1
            st[FQ_HEAD] = 0
            st[FQ_TAIL] = k
        fq[st[FQ_TAIL]] = b
        blk[b, QPOS] = st[FQ_TAIL]
        st[FQ_TAIL] += 1
        blk[b, IN_FREE] = True
        st[N_FREE] += 1

    def evict_hash(b):
        if blk[b, HASH] != -1 and remove_on_reuse:
            h = blk[b, HASH]
            i = _find(cached, h)
            if i != -1 and cached[i, 1] == b:
                _delete(cached, i)
            blk[b, HASH] = -1

    def pop_free():  # callers made sure a block is free (N_FREE > 0)
        i = st[FQ_HEAD]
        while not (blk[fq[i], IN_FREE] and blk[fq[i], QPOS] == i):
            i += 1
        b = fq[i]
        st[FQ_HEAD] = i + 1
        # Rows of the blocks next in line, and the prefix-cache slots they will clear.
        if i + AHEAD < st[FQ_TAIL]:
            _prefetch(blk, fq[i + AHEAD])
        if i + AHEAD // 2 < st[FQ_TAIL] and blk[fq[i + AHEAD // 2], HASH] != -1:
            _prefetch(cached, _home(blk[fq[i + AHEAD // 2], HASH], hmask))
        unlink(b)
        if blk[b, REF] != 0:
            flag(POPPED_LIVE, b, blk[b, REF], 0)
        evict_hash(b)
        blk[b, REF] = 1
        return b

    def release_block(b):
        st[OPS] += 1
        if b == 0:
            flag(NULL_FREED, 0, 0, 0)
            return
        if blk[b, REF] <= 0:
            flag(DOUBLE_FREE, b, blk[b, REF], 0)
        blk[b, REF] -= 1
        if blk[b, REF] <= 0:
            if blk[b, IN_FREE]:
                flag(QUEUED_TWICE, b, 0, 0)
            else:
                push_tail(b)
            st[VERSION] += 1

    def cache(b, h):
        if blk[b, HASH] != -1 and blk[b, HASH] != h and remove_on_reuse:
            flag(HASHED_TWICE, b, 0, 0)
        blk[b, HASH] = h
        _setdefault(cached, h, b)  # the first block cached under a hash keeps it
        st[VERSION] += 1

    # Block arithmetic runs several times per sequence per step: with the usual power-of-two
    # block size, a shift (floor division, negative numbers included) instead of an
    # integer division that takes ~30 cycles.
    shift = 0
    while (1 << shift) < B:
        shift += 1
    pow2 = (1 << shift) == B
    # Policies whose decode token, inside an open block, writes exactly where the block table
    # says (floor-blocks may have no block there yet; slot-off-by-one writes past the slot).
    plain_decode = pow2 and policy != FLOOR_BLOCKS and policy != SLOT_OFF_BY_ONE

    def fdiv(x):
        return x >> shift if pow2 else x // B

    def needed(tokens):
        if policy == FLOOR_BLOCKS:
            return max(1, fdiv(tokens))
        return -fdiv(-tokens)

    def available():
        if policy == EVICT_LIVE:
            return st[N_FREE] + usable
        return st[N_FREE]

    def get_new(k_need):
        """Fill scratch[:k_need]; False when the policy cannot (what it took stays taken, as in the reference)."""
        st[OPS] += k_need
        st[STAMP] += 1
        stamp = st[STAMP]
        if policy == EVICT_LIVE:
            k = 0
            for _ in range(min(k_need, st[N_FREE])):
                b = pop_free()
                blk[b, MARK] = stamp
                scratch[k] = b
                k += 1
            cursor = st[CURSOR]
            scanned = 0
            while k < k_need and scanned < usable:
                b = cursor
                cursor = cursor + 1 if cursor + 1 < nb else 1
                scanned += 1
                if blk[b, REF] == 1 and blk[b, MARK] != stamp:
                    evict_hash(b)
                    blk[b, MARK] = stamp
                    scratch[k] = b
                    k += 1
            st[CURSOR] = cursor
            return k == k_need
        if policy == DOUBLE_FREE_POLICY:
            live = 0
            for g in range(st[GHOST_HEAD], st[G_LEN]):
                if blk[ghosts[g], REF] >= 1:
                    live += 1
            if k_need - min(k_need, live) > st[N_FREE]:
                return False
            k = 0
            while st[GHOST_HEAD] < st[G_LEN] and k < k_need:
                b = ghosts[st[GHOST_HEAD]]
                st[GHOST_HEAD] += 1
                if blk[b, REF] >= 1 and blk[b, MARK] != stamp:
                    blk[b, REF] += 1
                    blk[b, MARK] = stamp
                    scratch[k] = b
                    k += 1
            if k_need - k > st[N_FREE]:
                return False
            while k < k_need:
                scratch[k] = pop_free()
                k += 1
            return True
        if k_need > st[N_FREE]:
            return False
        for k in range(k_need):
            scratch[k] = pop_free()
        return True

    def free_table(s):
        for i in range(tlen[s] - 1, -1, -1):
            release_block(tables[s, i])
        if policy == DOUBLE_FREE_POLICY and tlen[s] > 0 and tables[s, tlen[s] - 1] != 0:
            last = tables[s, tlen[s] - 1]
            ghosts[st[G_LEN]] = last
            st[G_LEN] += 1
            flag(FREED_TWICE, last, 0, 0)

    def expected(q, i):
        nh = rq[q, NH]
        if i < nh:
            return hashes[rq[q, HS] + i]
        return private_tag_nb(rq[q, RID], i)

    def corrupt(q, b, how):
        if not corrupted[q]:
            corrupted[q] = True
            st[N_CORRUPT] += 1
            if st[FIRST_SET] == 0:
                st[FIRST_SET] = 1
                st[FIRST_STEP] = st[STEPS]
                st[FIRST_RID] = rq[q, RID]
                st[FIRST_BLOCK] = b
                st[FIRST_HOW] = how
                ft[FIRST_T] = ft[T]

    def owner_of(q, b):
        """q's node in b's owner list, or -1. Lists are empty for blocks fresh from the free
        queue, so only shared or faulty blocks are walked."""
        x = blk[b, OWN_HEAD]
        while x != -1 and node[x, NQ] != q:
            x = node[x, NNEXT]
        return x

    def own(q, s, b, idx, x):
        """owners[b][q] = idx: a new entry goes last; an existing one (`x`, from `owner_of`,
        -1 when q is known not to own b) keeps its place."""
        if x == -1:
            x = s * max_tlen + idx  # the slot that creates an entry holds it until q's release
            node[x, NQ] = q
            node[x, NNEXT] = -1
            node[x, NPREV] = blk[b, OWN_TAIL]
            if blk[b, OWN_TAIL] == -1:
                blk[b, OWN_HEAD] = x
            else:
                node[blk[b, OWN_TAIL], NNEXT] = x
            blk[b, OWN_TAIL] = x
        node[x, NIDX] = idx
        tnode[s, idx] = x

    def disown(q, s, b, idx):
        """Drop owners[b][q] if it is this table index (the entry records q's last index of b)."""
        x = tnode[s, idx]
        if x == -1 or node[x, NIDX] != idx:
            return
        tnode[s, idx] = -1
        if node[x, NPREV] == -1:
            blk[b, OWN_HEAD] = node[x, NNEXT]
        else:
            node[node[x, NPREV], NNEXT] = node[x, NNEXT]
        if node[x, NNEXT] == -1:
            blk[b, OWN_TAIL] = node[x, NPREV]
        else:
            node[node[x, NNEXT], NPREV] = node[x, NPREV]

    def write(q, idx):
        s = rq[q, SLOT]
        tl = tlen[s]
        target = idx
        if idx == tl - 1:
            pos = idx * B + B - 1
            target = fdiv(pos)
            if policy == SLOT_OFF_BY_ONE and target == tl - 1 and (pos + 1) - fdiv(pos + 1) * B == 0:
                target += 1
        if idx >= tl:
            target = idx
        if target >= tl:
            block = 0
            for k in range(st[N_RUN]):
                o = run[k]
                if o != q and tlen[rq[o, SLOT]] > 0:
                    block = tables[rq[o, SLOT], 0]
                    break
            if block == 0:
                flag(NULL_WRITE, 0, 0, 0)
                return
            new = foreign_tag_nb(rq[q, RID], idx)
            corrupt(q, tables[s, min(idx, tl - 1)], 2)
        else:
            block = tables[s, target]
            new = expected(q, idx) if target == idx else foreign_tag_nb(rq[q, RID], idx)
            if blk[block, TAG] == new:
                return
        x = blk[block, OWN_HEAD]
        while x != -1:
            if expected(node[x, NQ], node[x, NIDX]) != new:
                corrupt(node[x, NQ], block, 0)
            x = node[x, NNEXT]
        blk[block, TAG] = new

    def sampled(q):
        """q generated a token this step; its first one (ever: not again after a preemption) sets TTFT."""
        rq[q, GEN] += 1
        if rq[q, GEN] == 1 and math.isnan(first_tok[q]):  # only a first token can be the first
            first_tok[q] = ft[T]

    def release_request(q):
        s = rq[q, SLOT]
        for i in range(tlen[s]):
            if i + AHEAD < tlen[s]:
                _prefetch(blk, tables[s, i + AHEAD])
            disown(q, s, tables[s, i], i)
        free_table(s)
        tlen[s] = 0
        rq[q, SLOT] = -1
        return s

    def grow(q, n_tokens):
        s = rq[q, SLOT]
        need = needed(n_tokens) - tlen[s]
        if need <= 0:
            return True
        if not get_new(need):
            return False
        for k in range(need):
            b = scratch[k]
            own(q, s, b, tlen[s], owner_of(q, b))
            tables[s, tlen[s]] = b
            tlen[s] += 1
        return True

    def admit(q, s):
        avail = available()
        if avail < 1:
            return False
        if failed_ver[q] == st[VERSION] and failed_avail[q] == avail:
            return False
        max_hit = fdiv(rq[q, PROMPT] - 1)
        nh = rq[q, NH]
        n_hits = 0
        evictable = 0
        lim = min(max_hit, nh)
        for i in range(min(AHEAD, lim)):
            _prefetch(cached, _home(hashes[rq[q, HS] + i], hmask))
        for i in range(lim):
            if i + AHEAD < lim:
                _prefetch(cached, _home(hashes[rq[q, HS] + i + AHEAD], hmask))
            j = _find(cached, hashes[rq[q, HS] + i])
            if j == -1:
                break
            b = cached[j, 1]
            scratch[n_hits] = b
            n_hits += 1
            if blk[b, REF] == 0:
                evictable += 1
        first = min(rq[q, PROMPT], max_batched) - n_hits * B
        need = max(0, needed(n_hits * B + max(first, 1)) - n_hits)
        if need + evictable > avail:
            failed_ver[q] = st[VERSION]
            failed_avail[q] = avail
            return False
        for i in range(n_hits):  # touch
            b = scratch[i]
            st[OPS] += 1
            if blk[b, REF] == 0 and blk[b, IN_FREE]:
                unlink(b)
            blk[b, REF] += 1
        rq[q, SLOT] = s
        # q owns nothing yet (its last release dropped every entry): only a block that
        # appears twice among its hits (a stale hash entry) is already q's.
        st[STAMP] += 1
        stamp = st[STAMP]
        for i in range(n_hits):
            b = scratch[i]
            own(q, s, b, i, owner_of(q, b) if blk[b, MARK] == stamp else -1)
            blk[b, MARK] = stamp
            tables[s, i] = b
            if blk[b, TAG] != hashes[rq[q, HS] + i]:
                corrupt(q, b, 1)
        tlen[s] = n_hits
        rq[q, COMP] = n_hits * B
        return True

    while st[PEND] < n or st[W_COUNT] > 0 or st[N_RUN] > 0:
        if st[G_LEN] + max_seqs >= len(ghosts) or st[M_N] + 3 > len(m_start) or st[M_HELD] + 2 * max_tlen > len(m_held):
            return ROOM
        if st[STEPS] - st[PROGRESS] > stall_steps:
            st[STALLED] = 1
            break
        pend = st[PEND]
        if st[N_RUN] == 0 and st[W_COUNT] == 0 and pend < n:
            ft[T] = max(ft[T], arrival[pend])
        while pend < n and arrival[pend] <= ft[T]:
            wq[(st[W_HEAD] + st[W_COUNT]) % wcap] = pend
            st[W_COUNT] += 1
            pend += 1
        st[PEND] = pend
        st[MAX_WAIT] = max(st[MAX_WAIT], st[W_COUNT])
        while st[W_COUNT] > 0 and st[N_RUN] < max_seqs:
            q = wq[st[W_HEAD]]
            if needed(rq[q, PROMPT] + rq[q, OUTPUT]) > usable:
                st[W_HEAD] = (st[W_HEAD] + 1) % wcap
                st[W_COUNT] -= 1
                st[REJECTED] += 1
                st[PROGRESS] = st[STEPS]
                continue
            if not admit(q, free_slots[st[FREE_SLOTS] - 1]):
                if st[N_RUN] == 0 and pend >= n:
                    st[W_HEAD] = (st[W_HEAD] + 1) % wcap
                    st[W_COUNT] -= 1
                    st[REJECTED] += 1
                    st[PROGRESS] = st[STEPS]
                    continue
                break
            st[FREE_SLOTS] -= 1
            st[W_HEAD] = (st[W_HEAD] + 1) % wcap
            st[W_COUNT] -= 1
            run[st[N_RUN]] = q
            st[N_RUN] += 1
        # Plan: decodes first (1 token each), then prefill chunks under the budget.
        budget = max_batched
        n_plan = 0
        for k in range(st[N_RUN]):
            q = run[k]
            if rq[q, COMP] >= rq[q, PROMPT] and budget > 0:
                if tlen[rq[q, SLOT]] > 0:  # the block this decode token goes to
                    _prefetch(blk, tables[rq[q, SLOT], tlen[rq[q, SLOT]] - 1])
                plan_q[n_plan] = q
                plan_n[n_plan] = 1
                n_plan += 1
                budget -= 1
        for k in range(st[N_RUN]):
            q = run[k]
            if rq[q, COMP] < rq[q, PROMPT] and budget > 0:
                m = min(rq[q, PROMPT] - rq[q, COMP], budget)
                plan_q[n_plan] = q
                plan_n[n_plan] = m
                n_plan += 1
                budget -= m
        tokens = 0
        for p in range(n_plan):
            q = plan_q[p]
            if rq[q, SLOT] < 0:  # preempted by an earlier entry of this plan
                continue
            comp = rq[q, COMP]
            if plan_n[p] == 1 and plain_decode and comp >= rq[q, PROMPT] and comp & (B - 1) != 0:
                # A decode token inside the block the previous token opened: nothing to allocate
                # or cache, and the write finds its own tag unless something else wrote the block
                # (then `write` handles it, as below). Most tokens of a replay take this path.
                s = rq[q, SLOT]
                idx = comp >> shift
                if idx < tlen[s]:
                    if blk[tables[s, idx], TAG] != expected(q, idx):
                        write(q, idx)
                    rq[q, COMP] = comp + 1
                    tokens += 1
                    sampled(q)
                    continue
            upto = comp + plan_n[p]
            while not grow(q, upto):
                st[N_RUN] -= 1
                victim = run[st[N_RUN]]
                free_slots[st[FREE_SLOTS]] = release_request(victim)
                st[FREE_SLOTS] += 1
                rq[victim, COMP] = 0
                rq[victim, GEN] = 0
                st[W_HEAD] = (st[W_HEAD] - 1) % wcap
                wq[st[W_HEAD]] = victim
                st[W_COUNT] += 1
                st[PREEMPT] += 1
                if victim == q:
                    break
            if rq[q, SLOT] < 0:  # preempted by an earlier entry of this plan
                continue
            for idx in range(fdiv(rq[q, COMP]), fdiv(upto - 1) + 1):
                write(q, idx)
            s = rq[q, SLOT]
            nh = rq[q, NH]
            last = fdiv(min(upto, rq[q, PROMPT]))
            for i in range(fdiv(rq[q, COMP]), last):
                if i + AHEAD < min(last, nh):
                    _prefetch(cached, _home(hashes[rq[q, HS] + i + AHEAD], hmask))
                if i < tlen[s] and i < nh and blk[tables[s, i], HASH] == -1:
                    cache(tables[s, i], hashes[rq[q, HS] + i])
            was_prefill = rq[q, COMP] < rq[q, PROMPT]
            rq[q, COMP] = upto
            tokens += plan_n[p]
            if not was_prefill or rq[q, COMP] >= rq[q, PROMPT]:
                sampled(q)  # a decode token, or the first token sampled by the prefill's last chunk
        ft[T] += base_s + per_token_s * tokens
        st[STEPS] += 1
        ft[PEAK] = max(ft[PEAK], 1.0 - st[N_FREE] / usable)
        k2 = 0
        n_done = 0
        for k in range(st[N_RUN]):
            q = run[k]
            if rq[q, GEN] >= rq[q, OUTPUT]:
                plan_q[n_done] = q
                n_done += 1
            else:
                run[k2] = q
                k2 += 1
        st[N_RUN] = k2
        for k in range(n_done):
            q = plan_q[k]
            finish[q] = ft[T]
            st[PROGRESS] = st[STEPS]
            free_slots[st[FREE_SLOTS]] = release_request(q)
            st[FREE_SLOTS] += 1
        if numerics_every > 0 and st[STEPS] % numerics_every == 0:
            taken = 0
            for k in range(st[N_RUN]):
                q = run[k]
                s = rq[q, SLOT]
                if taken == 2 or rq[q, COMP] < rq[q, PROMPT] or tlen[s] == 0:
                    continue
                taken += 1
                st[SAMPLED] = 1
                length = min(rq[q, COMP], tlen[s] * B)
                same = True
                for i in range(-(-length // B)):
                    if blk[tables[s, i], TAG] != expected(q, i):
                        same = False
                if not same:
                    m_len[st[M_N]] = length
                    m_start[st[M_N]] = st[M_HELD]
                    st[M_N] += 1
                    for i in range(tlen[s]):
                        m_held[st[M_HELD]] = blk[tables[s, i], TAG]
                        m_want[st[M_HELD]] = expected(q, i)
                        st[M_HELD] += 1
        if check_every > 0 and st[STEPS] % check_every == 0:
            return CHECK
    return DONE


@njit(cache=True)
def _check(st, viol, blk, cached, run, rq, tables, tlen, nb):  # pragma: no cover - compiled
    """The full-pool invariant check (`Config.check_every`), as the reference runs it."""
    refs = np.zeros(nb, np.int64)
    for k in range(st[N_RUN]):
        s = rq[run[k], SLOT]
        for i in range(tlen[s]):
            refs[tables[s, i]] += 1
    for b in range(1, nb):
        if blk[b, IN_FREE] and blk[b, REF] != 0:
            _flag(st, viol, QUEUED_LIVE, b, blk[b, REF], 0)
        if not blk[b, IN_FREE] and blk[b, REF] <= 0:
            _flag(st, viol, UNREFERENCED, b, 0, 0)
        if blk[b, REF] != refs[b] and blk[b, REF] > 0:
            _flag(st, viol, REFS_MISMATCH, b, blk[b, REF], refs[b])
    stale_h = List.empty_list(types.int64)
    stale_b = List.empty_list(types.int64)
    for i in range(len(cached)):
        h = cached[i, 0]
        if h != -1 and blk[cached[i, 1], HASH] != h:
            stale_h.append(h)
            stale_b.append(cached[i, 1])
    for k in np.argsort(np.asarray(stale_h, dtype=np.int64), kind="mergesort"):
        _flag(st, viol, STALE_ENTRY, stale_b[k], 0, 0)
    if blk[0, IN_FREE]:
        _flag(st, viol, NULL_QUEUED, 0, 0, 0)


@njit(cache=True)
def _grown(a, need):  # pragma: no cover - compiled
    """`a` itself when it holds `need` elements, else copied into a buffer of at least `need` (doubling):
    only the buffer that ran short is reallocated."""
    if len(a) >= need:
        return a
    out = np.zeros(max(need, 2 * len(a)), a.dtype)
    out[: len(a)] = a
    return out


@njit(cache=True)
def _run(
    arrival,
    rid,
    prompt,
    output,
    hstart,
    hashes,
    policy,
    B,
    nb,
    max_seqs,
    max_batched,
    base_s,
    per_token_s,
    check_every,
    numerics_every,
    max_tlen,
    ht_cap,
    stall_steps,
):  # pragma: no cover - compiled; covered through `simulate`
    """Allocate the state, then drive `_advance`: full checks and buffer growth happen here."""
    n = len(arrival)
    st = np.zeros(32, np.int64)
    ft = np.zeros(4, np.float64)
    viol = np.zeros((KEPT_VIOLATIONS, 4), np.int64)

    # --- pool -------------------------------------------------------------------------
    # One row per block (one cache line: blocks are reused in LRU order, i.e. scattered):
    # ref count, cached hash (-1: none), content tag, free-queue position and membership, owner
    # list, and the stamp of the last allocation or admission that took the block.
    blk = np.zeros((nb, 8), np.int64)
    blk[:, HASH] = -1
    blk[:, TAG] = TAG_NONE
    blk[:, OWN_HEAD] = -1
    blk[:, OWN_TAIL] = -1
    fq = np.zeros(2 * nb, np.int64)  # the free queue (see `_advance`), every block but the null one
    for b in range(1, nb):
        fq[b - 1] = b
        blk[b, QPOS] = b - 1
        blk[b, IN_FREE] = True
    st[FQ_TAIL] = nb - 1
    st[N_FREE] = nb - 1
    st[CURSOR] = 1
    cached = np.full((ht_cap, 2), -1, np.int64)  # the prefix cache: hash -> block
    ghosts = np.zeros(4 * max_seqs, np.int64)  # double-free's blocks handed out again, in order

    # --- requests, batch slots, owners -----------------------------------------------------
    # One row per request (one cache line: the plan visits every running request each step).
    rq = np.zeros((n, 8), np.int64)
    rq[:, PROMPT] = prompt
    rq[:, OUTPUT] = output
    rq[:, HS] = hstart[:-1]
    rq[:, NH] = hstart[1:] - hstart[:-1]
    rq[:, SLOT] = -1
    rq[:, RID] = rid
    first_tok = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    corrupted = np.zeros(n, np.bool_)
    failed_ver = np.full(n, -1, np.int64)
    failed_avail = np.full(n, -1, np.int64)
    tables = np.zeros((max_seqs, max_tlen), np.int64)
    tlen = np.zeros(max_seqs, np.int64)
    free_slots = np.arange(max_seqs)[::-1].copy()
    st[FREE_SLOTS] = max_seqs
    run = np.zeros(max_seqs, np.int64)
    wq = np.zeros(n + 1, np.int64)
    # Owner entries (request, table index, next, prev), one row per table slot: an entry lives
    # in the row of the slot that created it (later slots of the same block update its index),
    # so a request's entries are contiguous and nothing allocates them.
    node = np.zeros((max_seqs * max_tlen, 4), np.int64)
    # The owner node each table slot created (-1: none). It replaces a (block, request) map:
    # a request owns a block only through its table, whose row is in cache when it is read.
    tnode = np.full((max_seqs, max_tlen), -1, np.int64)
    scratch = np.zeros(max_tlen + 1, np.int64)
    plan_q = np.zeros(max_seqs, np.int64)
    plan_n = np.zeros(max_seqs, np.int64)
    # numerics: sequences whose held KV differs from what they wrote, on sampled steps
    m_len = np.zeros(16, np.int64)
    m_start = np.zeros(16, np.int64)
    m_held = np.zeros(4 * max_tlen, np.int64)
    m_want = np.zeros(4 * max_tlen, np.int64)

    limits = Limits(
        policy, B, nb, max_seqs, max_batched, base_s, per_token_s, check_every, numerics_every, max_tlen, stall_steps
    )
    reqs = Requests(rq, wq, first_tok, finish, corrupted, failed_ver, failed_avail)
    batch = Batch(run, free_slots, tables, tlen, tnode, node, scratch, plan_q, plan_n)
    while True:
        why = _advance(
            arrival,
            hashes,
            limits,
            st,
            ft,
            viol,
            Pool(blk, cached, fq, ghosts),
            reqs,
            batch,
            Samples(m_len, m_start, m_held, m_want),
        )
        if why == DONE:
            break
        if why == CHECK:
            _check(st, viol, blk, cached, run, rq, tables, tlen, nb)
        else:
            ghosts = _grown(ghosts, st[G_LEN] + max_seqs + 1)
            m_len = _grown(m_len, st[M_N] + 3)
            m_start = _grown(m_start, st[M_N] + 3)
            m_held = _grown(m_held, st[M_HELD] + 2 * max_tlen)
            m_want = _grown(m_want, st[M_HELD] + 2 * max_tlen)
    m_start[st[M_N]] = st[M_HELD]
    return (
        st,
        ft,
        viol,
        first_tok,
        finish,
        m_len[: st[M_N]].copy(),
        m_start[: st[M_N] + 1].copy(),
        m_held[: st[M_HELD]].copy(),
        m_want[: st[M_HELD]].copy(),
    )


def _table_capacity(hashes: np.ndarray, num_blocks: int, policy: int) -> int:
    """Slots for the prefix cache: at most one entry per block while reused blocks lose their hash,
    at most one per distinct prompt-block hash when they keep it (stale-hash); load factor <= 1/2."""
    return _capacity(len(hashes) if policy == STALE_HASH else num_blocks)


def simulate(requests, policy, cfg):
    """Run the compiled scheduler; the same `Result` the reference gives for this policy."""
    if not supports(policy):
        raise ValueError(f"{type(policy).__name__} is not a built-in policy: run it on replay.scheduler")
    check_pool_size(cfg.num_blocks)
    cols = columns(requests).in_arrival_order()
    hstart, hashes = chain_hashes(cols, cfg.block_size)
    arrival, rid, prompt, output = cols.arrival_s, cols.rid, cols.prompt_tokens, cols.output_tokens
    max_tlen = int(-(-(prompt + output).max(initial=1) // cfg.block_size)) + 1
    max_tlen = min(max_tlen, cfg.num_blocks + 1)
    st, ft, viol, first_tok, finish, m_len, m_start, m_held, m_want = _run(
        arrival,
        rid,
        prompt,
        output,
        hstart,
        hashes,
        CODES[type(policy)],
        cfg.block_size,
        cfg.num_blocks,
        cfg.max_num_seqs,
        cfg.max_batched_tokens,
        cfg.step_base_s,
        cfg.step_per_token_s,
        cfg.check_every,
        cfg.numerics_every,
        max_tlen,
        _table_capacity(hashes, cfg.num_blocks, CODES[type(policy)]),
        cfg.stall_steps,
    )
    ended = ~np.isnan(finish)
    first = None
    if st[FIRST_SET]:
        first = {
            "step": int(st[FIRST_STEP]),
            "time_s": round(float(ft[FIRST_T]), 6),
            "request": int(st[FIRST_RID]),
            "block": int(st[FIRST_BLOCK]),
            "how": HOW[st[FIRST_HOW]],
        }
    texts = [
        VIOLATIONS[int(c)].format(int(a), int(b), int(x))
        for c, a, b, x in viol[: min(int(st[N_VIOL]), KEPT_VIOLATIONS)]
    ]
    res = summarize(
        len(requests),
        float(arrival[0]) if len(arrival) else 0.0,
        arrival[ended],
        first_tok[ended],
        finish[ended],
        output[ended],
        corrupted=int(st[N_CORRUPT]),
        first_corruption=first,
        violations=int(st[N_VIOL]),
        first_violation=texts[0] if texts else None,
        t=float(ft[T]),
        steps=int(st[STEPS]),
        peak=float(ft[PEAK]),
        max_wait=int(st[MAX_WAIT]),
        preemptions=int(st[PREEMPT]),
        block_ops=int(st[OPS]),
        stalled=bool(st[STALLED]),
    )
    res.engine = "compiled"
    if cfg.numerics_every:
        res.attention_max_rel_error = _numerics(m_len, m_start, m_held, m_want, cfg.block_size) if st[SAMPLED] else None
    return res


def _numerics(m_len, m_start, m_held, m_want, block_size: int) -> float:
    """Attention error over the sampled sequences whose held KV differs (the others contribute exactly 0)."""
    if not len(m_len):
        return 0.0
    from .attention import replay_step_error

    held = [[content_key(x) for x in m_held[m_start[k] : m_start[k + 1]].tolist()] for k in range(len(m_len))]
    want = [[content_key(x) for x in m_want[m_start[k] : m_start[k + 1]].tolist()] for k in range(len(m_len))]
    return replay_step_error(held, want, block_size, [int(x) for x in m_len])
