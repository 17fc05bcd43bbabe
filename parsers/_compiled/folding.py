"""Which lines fold into which event: one compiled pass over a batch in file order.

`parsers.lines._fold` states the folding rules; this module decides them for every row
at once. Each rule looks back along the row's *stream* (the previous line of the same
process prefix, or of the same file for un-prefixed lines) and forward-fills state along
it; as polars window expressions (`shift().over()`, `forward_fill().over()`) those
passes cost ~1.4 µs a line, a sixth of ingest. One sequential scan that keeps each
stream's state in a table does the same in a few nanoseconds a line.

Semantics, per row i in `_row` order (nulls read as false, as the expressions did):

* stream: the prefix stream `_sid` when the row is prefixed, else its file segment;
* previous line: the last row of its prefix stream, or the physically previous row when
  that is in the same file segment (un-prefixed lines);
* `open before`: the last non-null `_open` of a non-silent row strictly before i, along the
  prefix stream for prefixed rows, along the whole file segment otherwise;
* event `_ev`: i's own `_row` unless it folds, else the last unfolded row along its stream
  (prefix stream, or the file segment including prefixed rows); a run folded before any
  event shares `-1 - first _row of its stream`.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from numba import njit

from parsers.arrow_text import bytes_at, strings

OTHER, CONT, BLANK, HEADER, EXC, VLLM, VLLM_CUSTOM, PRODUCER, FENCE = range(9)
KIND_CODES = {
    "other": OTHER,
    "cont": CONT,
    "blank": BLANK,
    "fence": FENCE,
    "k8s_header": HEADER,
    "exc": EXC,
    "vllm": VLLM,
    "vllm_custom": VLLM_CUSTOM,
}
"""The kinds the rules name; every other kind (a producer line) is `PRODUCER`."""


def kind_code(kind: pl.Expr) -> pl.Expr:
    """A line's `_kind` as its code for the scan (`_kcode`). The fast lane gives its lines
    their codes from the lane: mapping a whole batch's `_kind` strings cost ~2.4 ms per
    100,000 lines."""
    return kind.replace_strict(KIND_CODES, default=PRODUCER, return_dtype=pl.Int8)


NONE = np.iinfo(np.int64).min
"""No row yet (a stream without an unfolded row)."""

SEGMENT_KEY = pl.col("_fid").cast(pl.Int64) * (1 << 32) + pl.col("_seg").cast(pl.Int64)
"""A line's file and segment (`forensics.ingestion.batches.Segment`) as one integer. The compiled scans (this
fold, `fastlane._classify`'s CRI partial runs) carry nothing across a change of it: a segment
may be parsed in another batch, so no line folds into or continues another segment's."""


def fold_and_event(df: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(`_fold`, `_ev`) for a working frame sorted by `_row`, with `_kcode` (`kind_code`), `_prefixed`,
    `_sid`, `_fid`, `_seg`, `_open`, `_cr`, `_hdr`, `_msgcont` (the line continues a
    same-header vLLM line by its look: traceback body or exception) and `_row`."""
    cols = df.select(
        pl.col("_kcode").alias("kind"),
        pl.col("_prefixed").fill_null(False).alias("pre"),
        pl.col("_sid").cast(pl.UInt64).alias("sid"),
        SEGMENT_KEY.alias("file"),
        pl.col("_open").cast(pl.Int8).fill_null(-1).alias("open"),
        pl.col("_cr").fill_null(False).alias("cr"),
        pl.col("_hdr").is_not_null().alias("hdr_ok"),
        pl.col("_msgcont").fill_null(False).alias("msgcont"),
        pl.col("_row").cast(pl.Int64).alias("row"),
    )
    alive, h_addr, h_size, h_buf, h_start, h_len = strings(df["_hdr"])
    # Writable copies: polars hands out read-only views when it can, and numba compiles (and
    # caches) a separate specialisation per read-only/writable mix.
    arrays = [cols[c].to_numpy(writable=True) for c in cols.columns]
    fold, ev = _scan(*arrays, h_addr, h_size, h_buf, h_start, h_len)
    del alive  # the header bytes were read by address: keep them until here
    return fold, ev


@njit(cache=True, inline="always")
def _dense(keys, used, ids, key, next_id):  # pragma: no cover - compiled
    """The dense id of `key` in an open-addressing table (a new one is `next_id`)."""
    mask = len(keys) - 1
    i = np.int64((key * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(20)) & mask
    while used[i]:
        if keys[i] == key:
            return ids[i]
        i = (i + 1) & mask
    used[i] = True
    keys[i] = key
    ids[i] = next_id
    return next_id


@njit(cache=True, inline="always")
def _same_bytes(addr, size, buf, start, length, i, j):  # pragma: no cover - compiled
    if length[i] != length[j]:
        return False
    a = bytes_at(addr[buf[i]], size[buf[i]])
    b = bytes_at(addr[buf[j]], size[buf[j]])
    for k in range(length[i]):
        if a[start[i] + k] != b[start[j] + k]:
            return False
    return True


@njit(cache=True, nogil=True)  # parse batches run on threads: let them run at once
def _scan(
    kind, pre, sid, file, open_, cr, hdr_ok, msgcont, row, h_addr, h_size, h_buf, h_start, h_len
):  # pragma: no cover - compiled
    n = len(kind)
    fold = np.zeros(n, np.bool_)
    ev = np.empty(n, np.int64)
    cap = 16
    while cap < 2 * n:
        cap *= 2
    # Prefix streams (by `_sid`) and file segments, each numbered densely on first sight.
    s_keys, s_used, s_ids = np.zeros(cap, np.uint64), np.zeros(cap, np.bool_), np.zeros(cap, np.int64)
    f_keys, f_used, f_ids = np.zeros(cap, np.uint64), np.zeros(cap, np.bool_), np.zeros(cap, np.int64)
    s_last = np.empty(n, np.int64)  # the stream's previous row (index), -1 before its first
    s_open = np.empty(n, np.int8)  # forward-filled `_open` of its non-silent rows, -1: none yet
    s_head = np.empty(n, np.int64)  # its last unfolded row's `_row`, NONE: none yet
    s_first = np.empty(n, np.int64)  # its first row's `_row`
    f_open = np.empty(n, np.int8)
    f_head = np.empty(n, np.int64)
    f_first = np.empty(n, np.int64)
    n_s = 0
    n_f = 0
    f = -1
    last_sid, last_s = np.uint64(0), -1  # (a run of lines of one stream looks it up once)
    for i in range(n):
        same_file = i > 0 and file[i] == file[i - 1]
        if not same_file:
            f = _dense(f_keys, f_used, f_ids, np.uint64(file[i]), n_f)
            if f == n_f:
                n_f += 1
                f_open[f] = -1
                f_head[f] = NONE
                f_first[f] = row[i]
        s = -1
        if pre[i]:
            if last_s != -1 and sid[i] == last_sid:
                s = last_s
            else:
                s = _dense(s_keys, s_used, s_ids, sid[i], n_s)
                last_sid, last_s = sid[i], s
            if s == n_s:
                n_s += 1
                s_last[s] = -1
                s_open[s] = -1
                s_head[s] = NONE
                s_first[s] = row[i]
            p = s_last[s]
            has_prev = p != -1
            open_before = s_open[s] == 1
        else:
            p = i - 1 if same_file else -1
            has_prev = same_file
            open_before = f_open[f] == 1
        k = kind[i]
        same_hdr = (
            (k == VLLM or k == VLLM_CUSTOM)
            and p != -1
            and hdr_ok[i]
            and hdr_ok[p]
            and _same_bytes(h_addr, h_size, h_buf, h_start, h_len, i, p)
        )
        folds = (
            k == BLANK
            or k == FENCE
            or k == HEADER
            or (k == CONT and has_prev)
            or ((k == EXC or k == OTHER) and open_before)
            or (same_hdr and (cr[p] or msgcont[i] or open_[p] == 1))
        )
        fold[i] = folds
        silent = k == OTHER or k == BLANK or k == HEADER
        if k == FENCE:  # a paste's code fence ends what was open above it, folded or not
            f_open[f] = 0
            if s != -1:
                s_open[s] = 0
        elif not silent and open_[i] != -1:
            f_open[f] = open_[i]
            if s != -1:
                s_open[s] = open_[i]
        if not folds:
            f_head[f] = row[i]
            if s != -1:
                s_head[s] = row[i]
        if s != -1:
            s_last[s] = i
            ev[i] = s_head[s] if s_head[s] != NONE else -1 - s_first[s]
        else:
            ev[i] = f_head[f] if f_head[f] != NONE else -1 - f_first[f]
    return fold, ev
