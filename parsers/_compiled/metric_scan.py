"""Where the values of vLLM's metrics lines are, found in one compiled pass over the messages.

`vllm.metrics` defines each metric as a regex (`vllm._PAIRS`: a key, a number, a unit) and
took one capture-group `str.extract` per metric, ~0.5 µs a line each: twelve of them over
every metrics line were ~5 s of a 1 GB ingest, after the parallel part. This pass finds,
for each metric, the span of the number its regex would capture (the leftmost place where
the key is followed by the number and the unit) and reads the number there as casting
the span's text would (`_number`). A message with a non-ASCII byte (where `\\d` could take
another script's digit) is left to the regexes.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from numba import njit

from parsers.arrow_text import bytes_at, scan_chunks

DIGITS, NUMBER = 0, 1
"""Value shapes: `\\d+`, `[\\d.]+`."""
NO_UNIT_CHECK = b""

# (key, shape, unit after the value). A key may be listed twice (alternatives of one regex).
SPECS: dict[str, list[tuple[bytes, int, bytes]]] = {
    "prompt_tokens_per_s": [(b"Avg prompt throughput: ", NUMBER, b" tokens/s")],
    "generation_tokens_per_s": [(b"Avg generation throughput: ", NUMBER, b" tokens/s")],
    "running": [(b"Running: ", DIGITS, b" reqs")],
    "waiting": [(b"Waiting: ", DIGITS, b" reqs"), (b"Pending: ", DIGITS, b" reqs")],
    "swapped": [(b"Swapped: ", DIGITS, b" reqs")],
    "deferred": [(b"Deferred: ", DIGITS, b" reqs")],
    "preemptions": [(b"Preemptions: ", DIGITS, NO_UNIT_CHECK)],
    "gpu_kv_cache_usage": [(b"GPU KV cache usage: ", NUMBER, b"%")],
    "cpu_kv_cache_usage": [(b"CPU KV cache usage: ", NUMBER, b"%")],
    "prefix_cache_hit_rate": [(b"Prefix cache hit rate: ", NUMBER, b"%")],  # (?:^|[^l] ) before the key
    "external_prefix_cache_hit_rate": [(b"External prefix cache hit rate: ", NUMBER, b"%")],
    "corrupted": [(b"Corrupted: ", DIGITS, b" reqs")],
}
"""`vllm._PAIRS` as key, value shape and unit; tests hold each to its regex."""
V0_PREFIX = (b"Prefix cache hit rate: GPU: ", b"%, CPU: ", b"%")
"""`vllm.PREFIX_V0`: two numbers."""
NOT_AFTER_L = "prefix_cache_hit_rate"
"""Its regex wants the key at the start or after `X ` with X not `l` (not `...External prefix`)."""


def _pack(items: list[tuple[bytes, int, bytes]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    width = max(len(b) for k, _, u in items for b in (k, u)) + 1
    keys = np.zeros((len(items), width), np.uint8)
    units = np.zeros((len(items), width), np.uint8)
    meta = np.zeros((len(items), 3), np.int64)  # key length, shape, unit length
    for i, (k, shape, u) in enumerate(items):
        keys[i, : len(k)] = np.frombuffer(k, np.uint8)
        units[i, : len(u)] = np.frombuffer(u, np.uint8)
        meta[i] = (len(k), shape, len(u))
    return keys, units, meta


NAMES = list(SPECS)
PREFIX_INDEX = NAMES.index(NOT_AFTER_L)
_ITEMS = [(name, spec) for name in NAMES for spec in SPECS[name]]
KEYS, UNITS, META = _pack([spec for _, spec in _ITEMS])
OWNER = np.array([NAMES.index(name) for name, _ in _ITEMS], np.int64)
"""The metric each (key, shape, unit) row belongs to."""
BY_FIRST = np.zeros((256, len(_ITEMS) + 1), np.int64)
"""For each byte: how many key rows start with it, then those rows in order (a position is
tried against these alone: most of a message's capitals start no key)."""
for _r, _first in enumerate(KEYS[:, 0]):
    BY_FIRST[_first, 0] += 1
    BY_FIRST[_first, BY_FIRST[_first, 0]] = _r
V0 = tuple(np.frombuffer(b, np.uint8).copy() for b in V0_PREFIX)


def spans(messages: pl.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(start, end) per message and metric of `NAMES` plus the two V0 prefix numbers (-1: no
    match), per message whether the scan was sure (False: use the regexes), and the numbers
    themselves with their state (`NULL`, `VALUE`, or `UNSURE`: too long to read exactly by hand;
    `vllm.metrics` reads such a line with the regexes)."""
    return scan_chunks(
        messages,
        lambda _rows, *where: _scan(*where, KEYS, UNITS, META, OWNER, BY_FIRST, len(NAMES), PREFIX_INDEX, *V0, POW10),
    )


NULL, VALUE, UNSURE = 0, 1, 2
POW10 = np.array([10.0**k for k in range(23)])
"""Powers of ten a double holds exactly (up to 1e22)."""


@njit(cache=True, inline="always")
def _number(d, v, e, pow10):  # pragma: no cover - compiled
    """The span `d[v:e]` (digits and dots) as `cast(pl.Float64, strict=False)` reads it: (value,
    state). Up to 15 digits and 22 decimals, digits / 10**decimals is exact in doubles and
    IEEE division rounds it correctly, as the cast's parser does; longer ones are UNSURE."""
    dots = 0
    digits = 0
    decimals = 0
    mantissa = 0
    for j in range(v, e):
        c = d[j]
        if c == 46:
            dots += 1
            continue
        digits += 1
        if dots:
            decimals += 1
        if digits <= 18:
            mantissa = mantissa * 10 + (c - 48)
    if dots > 1 or digits == 0:
        return 0.0, NULL
    if digits > 15 or decimals > 22:
        return 0.0, UNSURE
    return mantissa / pow10[decimals], VALUE


@njit(cache=True, inline="always")
def _at(d, p, word, n):  # pragma: no cover - compiled
    if p + n > len(d):
        return False
    for z in range(n):
        if d[p + z] != word[z]:
            return False
    return True


@njit(cache=True, inline="always")
def _value(d, p, shape):  # pragma: no cover - compiled
    """End of the maximal `\\d+` / `[\\d.]+` run at p (p itself: none)."""
    k = p
    while k < len(d) and ((48 <= d[k] <= 57) or (shape == 1 and d[k] == 46)):
        k += 1
    return k


@njit(cache=True, nogil=True)
def _scan(
    addr, size, buf, start, length, keys, units, meta, owner, by_first, n_names, prefix, v0_key, v0_mid, v0_end, pow10
):  # pragma: no cover - compiled
    n = len(length)
    n_specs = len(owner)
    lo = np.full((n, n_names + 2), -1, np.int64)
    hi = np.full((n, n_names + 2), -1, np.int64)
    value = np.zeros((n, n_names + 2), np.float64)
    state = np.zeros((n, n_names + 2), np.int8)
    sure = np.ones(n, np.bool_)
    first = by_first[:, 0] > 0  # bytes a key starts with: other positions are skipped at once
    first[v0_key[0]] = True
    found = np.zeros(n_specs + 1, np.bool_)
    for i in range(n):
        data = bytes_at(addr[buf[i]], size[buf[i]])
        d = data[start[i] : start[i] + length[i]]
        found[:] = False
        left = n_specs + 1
        for p in range(len(d)):
            c = d[p]
            if c >= 128:
                sure[i] = False
                break
            if left == 0 or not first[c]:
                continue
            for q in range(1, by_first[c, 0] + 1):  # one pass: each spec keeps its leftmost valid match
                r = by_first[c, q]
                if found[r]:
                    continue
                m = owner[r]
                if m == prefix and not (p == 0 or (p >= 2 and d[p - 1] == 32 and d[p - 2] != 108)):
                    continue
                if not _at(d, p, keys[r], meta[r, 0]):
                    continue
                v = p + meta[r, 0]
                e = _value(d, v, meta[r, 1])
                if e > v and _at(d, e, units[r], meta[r, 2]):
                    found[r] = True
                    left -= 1
                    if lo[i, m] < 0:  # alternatives of one regex: the leftmost wins (p only grows)
                        lo[i, m], hi[i, m] = v, e
                        value[i, m], state[i, m] = _number(d, v, e, pow10)
            if not found[n_specs] and c == v0_key[0] and _at(d, p, v0_key, len(v0_key)):
                v = p + len(v0_key)
                e = _value(d, v, NUMBER)
                if e > v and _at(d, e, v0_mid, len(v0_mid)):
                    v2 = e + len(v0_mid)
                    e2 = _value(d, v2, NUMBER)
                    if e2 > v2 and _at(d, e2, v0_end, len(v0_end)):
                        found[n_specs] = True
                        left -= 1
                        lo[i, n_names], hi[i, n_names], lo[i, n_names + 1], hi[i, n_names + 1] = v, e, v2, e2
                        value[i, n_names], state[i, n_names] = _number(d, v, e, pow10)
                        value[i, n_names + 1], state[i, n_names + 1] = _number(d, v2, e2, pow10)
        if not sure[i]:
            lo[i, :] = -1
            hi[i, :] = -1
            state[i, :] = NULL
    return lo, hi, sure, value, state
