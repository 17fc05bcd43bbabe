"""Dedup keys of messages, computed in one compiled pass over the Arrow buffers.

Mining feeds Drain one representative line per key and joins the template back to every
line of that key, so the key decides how much work Drain sees. The key of a message is
its source plus its first line, capped at `max_chars` characters, with every run of hex
digits that starts with a digit collapsed to `0` (`block 88123` and `block 7` share a key;
`cafe` does not move). Numbers, ids, hashes and addresses vary line to line while the
words around them do not, so real logs collapse to a few thousand keys.

The key is never built as a string: a polars `replace_all` of the digit runs cost about
1 µs a line, most of the miner's time. Here each row's key text is compacted into a
scratch buffer and hashed (two independent 64-bit lanes: two keys merge only if both
collide), reading the string bytes where Arrow keeps them (by address: no copy), on all cores; rows are then
grouped by that 128-bit value in an open-addressing table. Only ASCII digits collapse;
another script's digits stay literal, which can only make more keys, never merge two.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from numba import njit, prange

from parsers.arrow_text import bytes_at, strings

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_LANE2_SEED = np.uint64(0x243F6A8885A308D3)
_LANE2_MUL = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_SEPARATOR = np.uint64(0xFF)
"""Hashed after the source: a byte UTF-8 never holds, so `ab`+`c` differs from `a`+`bc`."""
_CLASS = np.zeros(256, np.uint8)
_CLASS[ord("0") : ord("9") + 1] = 1
_CLASS[ord("a") : ord("f") + 1] = 2
_CLASS[ord("A") : ord("F") + 1] = 2
"""Byte classes for the collapse: 1 digit, 2 other hex digit, 0 anything else."""
_OUT = np.arange(256, dtype=np.uint8)
_OUT[ord("0") : ord("9") + 1] = ord("0")
"""What a kept byte reads as in the key: digits read `0`."""


@dataclass(frozen=True)
class KeyGroups:
    """Rows grouped by dedup key; keys are numbered in order of first appearance.

    `row_key[i]` is row i's key; `first_row[k]` the first row with key k (its
    representative); `count[k]` how many rows have key k; `hash_hi`/`hash_lo` the key's
    128-bit hash, the same across runs, machines and row order, so sorting by it is a
    tie-break that never depends on which line came first.
    """

    row_key: np.ndarray
    first_row: np.ndarray
    count: np.ndarray
    hash_hi: np.ndarray
    hash_lo: np.ndarray
    others: np.ndarray
    """`others[k]`: up to `OTHERS` more rows of key k whose collapsed digits differ from the
    representative's and from each other's (-1 where there are fewer): the key merged
    `eth0` with `eth1`, and the template must not print the first one's literal."""


OTHERS = 3
"""How many digit variants of a key are kept beside its representative."""


def key_groups(sources: pl.Series, messages: pl.Series, max_chars: int) -> KeyGroups:
    """Group rows by (source, digit-collapsed first line of the message); nulls read as ``."""
    if len(sources) != len(messages):
        raise ValueError(f"{len(sources)} sources for {len(messages)} messages: pass one of each per row")
    s_alive, *s_loc = strings(sources)
    m_alive, *m_loc = strings(messages)
    hi, lo, digits = _hash_rows(*s_loc, *m_loc, max_chars)
    del s_alive, m_alive  # the buffers were read by address: keep them until here
    row_key, first_row, count, others = _group(hi, lo, digits, OTHERS)
    return KeyGroups(row_key, first_row, count, hi[first_row], lo[first_row], others)


@njit(cache=True)
def _absorb(a, b, word):  # pragma: no cover - compiled
    """Fold one 8-byte word into both lanes."""
    a = (a ^ word) * _FNV_PRIME
    a ^= a >> np.uint64(32)
    b = (b + word) * _LANE2_MUL
    b ^= b >> np.uint64(29)
    return a, b


@njit(cache=True)
def _finish(h):  # pragma: no cover - compiled
    """splitmix64's finaliser: spreads every input bit over the whole word."""
    h ^= h >> np.uint64(30)
    h *= _M1
    h ^= h >> np.uint64(27)
    h *= _M2
    h ^= h >> np.uint64(31)
    return h


@njit(cache=True)
def _absorb_bytes(a, b, scratch, words, k):  # pragma: no cover - compiled
    """Fold `scratch[:k]` into both lanes, 8 bytes at a time (zero-padded), then its length."""
    for z in range(k, (k + 7) // 8 * 8):
        scratch[z] = 0
    for w in range((k + 7) // 8):
        a, b = _absorb(a, b, words[w])
    return _absorb(a, b, np.uint64(k))


@njit(cache=True)
def _text_end(data, start, end, max_chars):  # pragma: no cover - compiled
    """Where the first `max_chars` characters of `data[start:end]` end (UTF-8 lead bytes counted)."""
    chars = 0
    for j in range(start, end):
        if data[j] & 0xC0 != 0x80:
            chars += 1
            if chars > max_chars:
                return j
    return end


@njit(cache=True)
def _copy(data, start, length, scratch):  # pragma: no cover - compiled
    """Copy `data[start:start+length]` into `scratch` (capped at its size); the byte count."""
    k = min(length, len(scratch) - 8)
    for j in range(k):
        scratch[j] = data[start + j]
    return k


@njit(cache=True)
def _collapse(data, start, length, max_chars, scratch):  # pragma: no cover - compiled
    """Write the key text of `data[start:start+length]` into `scratch`; its length in bytes.

    The first line only, at most `max_chars` characters, each digit-led hex run as `0`.
    Also returns a checksum of the runs' own bytes (what the key forgot), to tell the
    key's members apart where only their digits differ.
    """
    end = start + length
    if length > max_chars:  # more bytes than the cap allows characters: count them
        end = _text_end(data, start, end, max_chars)
    cls = _CLASS
    out = _OUT
    k = 0
    in_run = 0
    digits = np.uint64(0)
    for j in range(start, end):
        byte = data[j]
        if byte == 10:  # only the first line is mined
            break
        cl = cls[byte]
        skip = in_run & np.int64(cl != 0)  # the rest of a digit-led hex run collapses into its `0`
        in_run = np.int64(cl == 1) | skip
        # Branch-free compaction: digit runs are unpredictable, and a mispredicted branch
        # per byte cost more than the whole loop.
        scratch[k] = out[byte]
        k += 1 - skip
        # (a run's bytes and their places, summed without a branch: an add chain, not a
        # multiply chain, so the loop runs as fast as without it)
        digits += np.uint64(in_run * (byte + 1) * (j - start + 1))
    return k, digits


@njit(cache=True, parallel=True)
def _hash_rows(
    s_addr, s_size, s_buf, s_start, s_len, m_addr, m_size, m_buf, m_start, m_len, max_chars
):  # pragma: no cover
    n = len(m_len)
    hi = np.empty(n, np.uint64)
    lo = np.empty(n, np.uint64)
    dg = np.empty(n, np.uint64)
    chunks = 64
    for c in prange(chunks):
        words = np.zeros(max_chars // 2 + 4, np.uint64)  # >= 4 bytes a character, + padding
        scratch = words.view(np.uint8)
        for i in range(c * n // chunks, (c + 1) * n // chunks):
            src = bytes_at(s_addr[s_buf[i]], s_size[s_buf[i]])
            k = _copy(src, s_start[i], s_len[i], scratch)
            a, b = _absorb_bytes(_FNV_OFFSET, _LANE2_SEED, scratch, words, k)
            a, b = _absorb(a, b, _SEPARATOR)
            data = bytes_at(m_addr[m_buf[i]], m_size[m_buf[i]])
            k, digits = _collapse(data, m_start[i], m_len[i], max_chars, scratch)
            a, b = _absorb_bytes(a, b, scratch, words, k)
            hi[i] = _finish(a)
            lo[i] = _finish(b)
            dg[i] = digits
    return hi, lo, dg


@njit(cache=True)
def _group(hi, lo, dg, n_others):  # pragma: no cover - compiled
    n = len(hi)
    cap = 1024
    first = np.empty(max(n, 1), np.int64)
    count = np.zeros(max(n, 1), np.int64)
    others = np.full((1024, n_others), -1, np.int64)
    first_dg = np.empty(max(n, 1), np.uint64)  # (beside `first`: one lookup a row, not two)
    row_key = np.empty(n, np.int64)
    slots = np.full(cap, -1, np.int64)
    k = 0
    for i in range(n):
        if 2 * (k + 1) > cap:  # keep the table at most half full
            cap *= 2
            slots = np.full(cap, -1, np.int64)
            for key in range(k):
                s = np.int64(hi[first[key]] & np.uint64(cap - 1))
                while slots[s] != -1:
                    s = (s + 1) & (cap - 1)
                slots[s] = key
        s = np.int64(hi[i] & np.uint64(cap - 1))
        while True:
            key = slots[s]
            if key == -1:
                slots[s] = k
                first[k] = i
                first_dg[k] = dg[i]
                key = k
                k += 1
                if k > len(others):
                    grown = np.full((2 * len(others), n_others), -1, np.int64)
                    grown[: len(others)] = others
                    others = grown
                break
            r = first[key]
            if hi[r] == hi[i] and lo[r] == lo[i]:
                break
            s = (s + 1) & (cap - 1)
        row_key[i] = key
        count[key] += 1
        if dg[i] != first_dg[key] and others[key, n_others - 1] == -1:
            for o in range(n_others):
                r = others[key, o]
                if r == -1:
                    others[key, o] = i
                    break
                if dg[r] == dg[i]:
                    break
    return row_key, first[:k].copy(), count[:k].copy(), others[:k].copy()
