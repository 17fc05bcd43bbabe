"""What a block's slots hold, as one int64: prefix-block hashes and per-request tags.

Both simulators (the reference `replay.scheduler` and the compiled `replay.fastsim`) tag
block content with these values, so their results, numerics included, are identical:

* a full prompt block's chained hash, vLLM-style `hash(parent, block tokens)`: in [0, 2**62);
* a request's private block (partial prompt tail, generated tokens): `private_tag(rid, i)` < -1;
* KV a request wrote outside its own table: `foreign_tag(rid, i)` < -1, never equal to a private tag;
* `TAG_NONE` (-1): a block nothing was written to.
"""

from __future__ import annotations

import hashlib

import numpy as np
from numba import njit

TAG_NONE = -1
_INDEX_BITS = 24
"""Table indexes below 2**24 (16M blocks, far above any pool); request ids below 2**37."""


def _private_tag(rid: int, i: int) -> int:
    return -(2 + 2 * ((rid << _INDEX_BITS) | i))


def _foreign_tag(rid: int, i: int) -> int:
    return -(3 + 2 * ((rid << _INDEX_BITS) | i))


private_tag, foreign_tag = _private_tag, _foreign_tag
"""The plain-Python forms (the reference simulator); `private_tag_nb`/`foreign_tag_nb` are compiled."""
private_tag_nb = njit(cache=True)(_private_tag)
foreign_tag_nb = njit(cache=True)(_foreign_tag)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


@njit(cache=True)
def _mix(a: np.uint64, b: np.uint64) -> np.uint64:
    """Combine two 64-bit values (splitmix64 finaliser over a boost-style combine)."""
    x = a ^ (b + _GOLDEN + (a << np.uint64(6)) + (a >> np.uint64(2)))
    x ^= x >> np.uint64(30)
    x *= _M1
    x ^= x >> np.uint64(27)
    x *= _M2
    x ^= x >> np.uint64(31)
    return x


@njit(cache=True)
def _chains(ids, ids_start, prompt, per, rid, block_size):  # pragma: no cover - compiled
    n = len(prompt)
    start = np.zeros(n + 1, np.int64)
    for k in range(n):
        start[k + 1] = start[k] + prompt[k] // block_size
    out = np.empty(start[n], np.int64)
    for k in range(n):
        parent = np.uint64(0)
        n_ids = ids_start[k + 1] - ids_start[k]
        j, r = 0, 0  # i // per[k] and i % per[k], counted (a division per block costs more than the hash)
        for i in range(start[k + 1] - start[k]):
            if j < n_ids:
                h = _mix(_mix(_mix(parent, np.uint64(0)), np.uint64(ids[ids_start[k] + j])), np.uint64(r))
            else:  # past the trace's prefix ids: content only this request has
                h = _mix(_mix(_mix(parent, np.uint64(1)), np.uint64(rid[k])), np.uint64(i))
            parent = h
            out[start[k] + i] = np.int64(h >> np.uint64(2))
            r += 1
            if r == per[k]:
                j, r = j + 1, 0
    return start, out


def chain_hashes(cols, block_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Chained hashes of every request's full prompt blocks (`cols`: `replay.traces.Columns`), as CSR (`start`, `hashes`).

    Trace prefix ids cover `trace_block_tokens` tokens each (512 for Mooncake), so with
    16-token blocks one id names 32 consecutive blocks; two requests share a block's hash
    exactly when they share the whole prefix up to and including it.
    """
    per = np.maximum(1, cols.trace_block_tokens // block_size)
    return _chains(cols.ids, cols.ids_start, cols.prompt_tokens, per, cols.rid, block_size)


def content_key(tag: int) -> int:
    """A tag's content key: the seed `replay_step_error` turns into K/V values (both simulators use it)."""
    return int.from_bytes(hashlib.blake2b(repr(tag).encode(), digest_size=6).digest(), "little")
