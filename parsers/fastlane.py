"""The common line shapes, recognised in one compiled pass instead of two dozen polars passes.

Most lines of a vLLM incident are the same few shapes: an optional `kubectl --timestamps`
stamp, an optional V1 process prefix, then a vLLM logger line or a uvicorn line::

    2025-03-02T07:00:00.123456789Z (APIServer pid=66) INFO 03-02 07:00:00 [logger.py:41] Received ...
    2025-03-02T07:00:00.123456789Z (APIServer pid=66) INFO:     10.0.3.7:51234 - "POST /v1/... HTTP/1.1" 200 OK

The general path (`wrappers.peel`, then each producer's probe in `lines.KINDS`) filters and
concatenates the whole frame at every layer it tries, ~4 µs a line. This pass reads each
line's bytes in place (`forensics.arrow_text`) and takes a line only when it is sure the
general path would read it exactly so: an RFC3339 stamp with a `Z` or `±hh:mm` zone (not
CRI, not journald's `+hhmm`), a process prefix of plain ASCII, then vLLM's positional layout
(`vllm.FAST`) or a uvicorn line, and nothing any other layer reacts to (`\\r`, ANSI colour
or its residue, Ray's `[repeated Nx across cluster]`, a second record glued on). Anything
else, however common, goes the general way. The stamp is read with `parse_rfc3339`'s rules
(impossible dates give no time; a leap second `:60` counts as the next minute), and the
taken lines are parsed by the same producer functions (`vllm.parse`, `uvicorn.parse`), so
the events are the general path's, which tests hold them to.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from numba import njit

from forensics.arrow_text import bytes_at, strings

SLOW, VLLM, UVICORN = 0, 1, 2
"""What a line is: for the general path, a vLLM logger line, a uvicorn line."""

_LEVELS = (b"DEBUG", b"INFO", b"WARNING", b"ERROR", b"CRITICAL")
"""vLLM's level words (`vllm.LEVEL_WORD`)."""
_UVICORN_LEVELS = (b"INFO", b"WARNING", b"ERROR", b"DEBUG", b"CRITICAL", b"TRACE")
"""uvicorn's (`uvicorn.DETECT`)."""


def _table(words: tuple[bytes, ...]) -> np.ndarray:
    out = np.zeros((len(words), 9), np.uint8)  # word bytes, then its length in the last column
    for i, w in enumerate(words):
        out[i, : len(w)] = np.frombuffer(w, np.uint8)
        out[i, 8] = len(w)
    return out


LEVELS = _table(_LEVELS)
UVICORN_LEVELS = _table(_UVICORN_LEVELS)


def classify(body: pl.Series) -> dict[str, np.ndarray]:
    """Per row: `lane` (SLOW, VLLM, UVICORN); for the taken rows the stamp (`us`, `has_ts`,
    `ts_ok`) and the byte offsets of the process name, the pid and the producer line, all
    in the ASCII head of the line, so they are character offsets too."""
    names = ("lane", "us", "has_ts", "ts_ok", "proc_at", "proc_end", "pid_at", "pid_end", "body_at")
    parts = []
    # Chunk by chunk: a batch's lines are one chunk per file, and joining them would copy the text.
    for chunk in body.get_chunks():
        alive, addr, size, buf, start, length = strings(chunk)
        parts.append(_classify(addr, size, buf, start, length, LEVELS, UVICORN_LEVELS, _CLASS, _ACROSS))
        del alive  # the bytes were read by address: keep them until here
    return {k: np.concatenate([p[i] for p in parts]) for i, k in enumerate(names)}


@njit(cache=True)
def _digits(d, at, n):  # pragma: no cover - compiled
    if at + n > len(d):
        return False
    for k in range(at, at + n):
        if not (48 <= d[k] <= 57):
            return False
    return True


@njit(cache=True)
def _num(d, at, n):  # pragma: no cover - compiled
    v = 0
    for k in range(at, at + n):
        v = v * 10 + (d[k] - 48)
    return v


@njit(cache=True)
def _word_at(d, at, words):  # pragma: no cover - compiled
    """Length of the word of `words` that `d[at:]` starts with (the first in order), else 0."""
    for w in range(words.shape[0]):
        n = words[w, 8]
        if at + n <= len(d):
            same = True
            for k in range(n):
                if d[at + k] != words[w, k]:
                    same = False
                    break
            if same:
                return n
    return 0


@njit(cache=True)
def _days_from_civil(y, m, d):  # pragma: no cover - compiled
    """Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm)."""
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


@njit(cache=True)
def _stamp(d):  # pragma: no cover - compiled
    """(end, µs, valid) of a leading `YYYY-MM-DDTHH:MM:SS[.f+](Z|±hh:mm) `; end -1: not one."""
    for at in (0, 5, 8, 11, 14, 17):
        if not _digits(d, at, 2 if at else 4):
            return -1, 0, False
    if d[4] != 45 or d[7] != 45 or d[10] != 84 or d[13] != 58 or d[16] != 58:
        return -1, 0, False
    j = 19
    frac = 0
    if j < len(d) and d[j] == 46:  # `.digits`
        j += 1
        k = 0
        while j < len(d) and 48 <= d[j] <= 57:
            if k < 6:
                frac = frac * 10 + (d[j] - 48)
            k += 1
            j += 1
        if k == 0:
            return -1, 0, False
        for _ in range(6 - min(k, 6)):
            frac *= 10
    off_min = 0
    if j < len(d) and d[j] == 90:  # `Z`
        j += 1
    elif j < len(d) and (d[j] == 43 or d[j] == 45):  # `±hh:mm`; `±hhmm` is journald's (general path)
        if not (_digits(d, j + 1, 2) and j + 3 < len(d) and d[j + 3] == 58 and _digits(d, j + 4, 2)):
            return -1, 0, False
        off_min = (-1 if d[j] == 45 else 1) * (_num(d, j + 1, 2) * 60 + _num(d, j + 4, 2))
        j += 6
    else:
        return -1, 0, False
    if j >= len(d) or d[j] != 32:
        return -1, 0, False
    y, mo, day = _num(d, 0, 4), _num(d, 5, 2), _num(d, 8, 2)
    hh, mi, ss = _num(d, 11, 2), _num(d, 14, 2), _num(d, 17, 2)
    leap = (y % 4 == 0 and y % 100 != 0) or y % 400 == 0
    month_days = 31
    if mo == 2:
        month_days = 29 if leap else 28
    elif mo == 4 or mo == 6 or mo == 9 or mo == 11:
        month_days = 30
    if not (1 <= mo <= 12 and 1 <= day <= month_days and hh <= 23 and mi <= 59 and ss <= 60):
        return j, 0, False  # strptime finds no such date-time: the line has no time
    secs = _days_from_civil(y, mo, day) * 86400 + hh * 3600 + mi * 60 + ss - off_min * 60
    return j, secs * 1_000_000 + frac, True


@njit(cache=True)
def _is_word_byte(c):  # pragma: no cover - compiled
    return (48 <= c <= 57) or (65 <= c <= 90) or (97 <= c <= 122) or c == 95


@njit(cache=True)
def _vllm_fast(d, at, levels):  # pragma: no cover - compiled
    """`d[at:]` matches `vllm.FAST`: `LEVEL MM-DD HH:MM:SS [?file.py:N](space|end)`."""
    n = _word_at(d, at, levels)
    if n == 0:
        return False
    j = at + n
    if not (j < len(d) and d[j] == 32 and _digits(d, j + 1, 2) and j + 3 < len(d) and d[j + 3] == 45):
        return False
    if not (_digits(d, j + 4, 2) and j + 6 < len(d) and d[j + 6] == 32 and _digits(d, j + 7, 2)):
        return False
    if not (j + 9 < len(d) and d[j + 9] == 58 and _digits(d, j + 10, 2) and j + 12 < len(d) and d[j + 12] == 58):
        return False
    if not (_digits(d, j + 13, 2) and j + 15 < len(d) and d[j + 15] == 32):
        return False
    k = j + 16
    if k < len(d) and d[k] == 91:  # `[`
        k += 1
    f = k
    while k < len(d) and (_is_word_byte(d[k]) or d[k] == 46 or d[k] == 47 or d[k] == 45):
        k += 1
    if k < len(d) and d[k] >= 128:  # \w takes other scripts' letters: the general path decides
        return False
    if k - f < 4 or d[k - 3] != 46 or d[k - 2] != 112 or d[k - 1] != 121:  # `.py`
        return False
    if not (k < len(d) and d[k] == 58):
        return False
    k += 1
    m = k
    while k < len(d) and 48 <= d[k] <= 57:
        k += 1
    if k == m or not (k < len(d) and d[k] == 93):  # `]`
        return False
    return k + 1 == len(d) or d[k + 1] == 32


_CLASS = np.zeros(256, np.uint8)
_CLASS[[13, 27]] = 1  # CR, ESC
_CLASS[ord("[")] = 2  # ANSI residue `[0;36m`
_CLASS[ord("a")] = 3  # `across cluster]`
_CLASS[[w[0] for w in _LEVELS]] = 4  # a level word: maybe a glued record
"""Bytes `_hazard` looks at; every other byte (most of a line) costs one table lookup."""
_ACROSS = np.frombuffer(b"across cluster]", np.uint8).copy()


@njit(cache=True)
def _hazard(d, at, vllm_line, levels, cls, across):  # pragma: no cover - compiled
    """Anything another layer of the general path would react to: CR, ESC, ANSI residue
    `[0;36m`, Ray's `across cluster]`, and (vLLM lines) what could be a second glued record."""
    n = len(d)
    if n >= 2 and d[n - 2] == 94 and d[n - 1] == 77:  # `^M` at the end
        return True
    for k in range(n):
        c = cls[d[k]]
        if c == 0:
            continue
        if c == 1:
            return True
        if c == 2:  # `[digits;...m`
            j = k + 1
            while j < n and ((48 <= d[j] <= 57) or d[j] == 59):
                j += 1
            if j > k + 1 and j < n and d[j] == 109:
                return True
        elif c == 3:
            if k + len(across) <= n:
                same = True
                for z in range(len(across)):
                    if d[k + z] != across[z]:
                        same = False
                        break
                if same:
                    return True
        elif vllm_line and k > at:  # a level word and a digit after a non-space byte (`vllm.GLUED`)
            p = d[k - 1]
            if not (p == 32 or p == 9 or p == 10 or p == 11 or p == 12 or p == 13):
                w = _word_at(d, k, levels)
                if w and k + w + 1 < n and d[k + w] == 32 and 48 <= d[k + w + 1] <= 57:
                    return True
    return False


@njit(cache=True, nogil=True)  # parse batches run on threads: let them run at once
def _classify(addr, size, buf, start, length, levels, uvicorn_levels, cls, across):  # pragma: no cover - compiled
    n = len(length)
    lane = np.zeros(n, np.int8)
    us = np.zeros(n, np.int64)
    has_ts = np.zeros(n, np.bool_)
    ts_ok = np.zeros(n, np.bool_)
    proc_at = np.zeros(n, np.int64)
    proc_end = np.zeros(n, np.int64)
    pid_at = np.zeros(n, np.int64)
    pid_end = np.zeros(n, np.int64)
    body_at = np.zeros(n, np.int64)
    for i in range(n):
        data = bytes_at(addr[buf[i]], size[buf[i]])
        d = data[start[i] : start[i] + length[i]]
        at = 0
        if len(d) >= 20 and 48 <= d[0] <= 57:
            end, t, ok = _stamp(d)
            if end < 0:
                continue
            at = end + 1  # a CRI `stdout F ` here is no process prefix and no producer: general path
            has_ts[i] = True
            ts_ok[i] = ok
            us[i] = t
        p0 = p1 = q0 = q1 = 0
        if at < len(d) and d[at] == 40:  # `(Name[ rank=N] pid=N[, ip=a.b.c.d])`
            j = at + 1
            if not (j < len(d) and ((65 <= d[j] <= 90) or (97 <= d[j] <= 122))):
                continue
            while j < len(d) and _is_word_byte(d[j]):
                j += 1
            ok = True
            if j + 6 < len(d) and d[j] == 32 and d[j + 1] == 114:  # ` rank=N`
                if not (d[j + 2] == 97 and d[j + 3] == 110 and d[j + 4] == 107 and d[j + 5] == 61):
                    ok = False
                j += 6
                m = j
                while j < len(d) and 48 <= d[j] <= 57:
                    j += 1
                ok = ok and j > m
            p0, p1 = at + 1, j
            if not (ok and j + 5 < len(d) and d[j] == 32 and d[j + 1] == 112 and d[j + 2] == 105):
                continue
            if not (d[j + 3] == 100 and d[j + 4] == 61):  # ` pid=`
                continue
            j += 5
            q0 = j
            while j < len(d) and 48 <= d[j] <= 57:
                j += 1
            q1 = j
            if q1 == q0:
                continue
            if j + 5 < len(d) and d[j] == 44:  # `, ip=1.2.3.4`
                if not (d[j + 1] == 32 and d[j + 2] == 105 and d[j + 3] == 112 and d[j + 4] == 61):
                    continue
                j += 5
                m = j
                while j < len(d) and ((48 <= d[j] <= 57) or d[j] == 46):
                    j += 1
                if j == m:
                    continue
            if not (j < len(d) and d[j] == 41):  # `)`
                continue
            at = j + 1 + (1 if j + 1 < len(d) and d[j + 1] == 32 else 0)
        kind = SLOW
        if _vllm_fast(d, at, levels):
            kind = VLLM
        else:
            w = _word_at(d, at, uvicorn_levels)
            if w and at + w + 1 < len(d) and d[at + w] == 58 and d[at + w + 1] == 32:
                kind = UVICORN
        if kind == SLOW or _hazard(d, at, kind == VLLM, levels, cls, across):
            continue
        lane[i] = kind
        proc_at[i], proc_end[i], pid_at[i], pid_end[i] = p0, p1, q0, q1
        body_at[i] = at
    return lane, us, has_ts, ts_ok, proc_at, proc_end, pid_at, pid_end, body_at
