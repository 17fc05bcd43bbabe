"""Where polars keeps a string column's bytes, for compiled loops that read them in place.

Polars columns are Arrow string views; a numba loop given each row's (buffer, start,
length) and the buffers' addresses reads any row's bytes without a copy or a Python
object per row. Used by the dedup key (`forensics.mining.dedup`), the fold scan
(`parsers._compiled.folding`), the ingest fast lane (`parsers._compiled.fastlane`) and the metrics scan
(`parsers._compiled.metric_scan`). Columns are made here the same way: the lines of a batch
(`lines_column`) and fields cut out of them (`Text.cut_spans`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl
import pyarrow as pa
from numba import carray, njit, types
from numba.core import cgutils
from numba.extending import intrinsic

INLINE = 12
"""Arrow string views hold strings of up to 12 bytes inline, after their 4-byte length."""


def strings(col: pl.Series) -> tuple[list, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Where each string's bytes are, without copying them (nulls read as ``).

    Returns (keep-alive, buffer addresses, buffer sizes, buffer of each row, start, length).
    Polars hands out its strings as Arrow string views (no copy): a string of up to 12
    bytes sits inline in its 16-byte view, a longer one in a data buffer at an offset. The
    views buffer itself is buffer 0, so every row is (buffer, start, length) either way.
    The compiled loop reads the buffers by address (`bytes_at`); the first item keeps
    them alive until the caller is done.
    """
    arr = col.cast(pl.String).rechunk().to_arrow(compat_level=pl.CompatLevel.newest())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n = len(arr)
    if pa.types.is_string_view(arr.type):
        raw = arr.buffers()
        bufs = [raw[1], *raw[2:]]
        views = np.frombuffer(raw[1], dtype=np.int32).reshape(-1, 4)
        valid = _bitmap(raw[0], arr.null_count)
        buf, start, length = _view_rows(views, valid, arr.offset, n)
    else:
        arr = arr.cast(pa.large_string()).fill_null("")  # an older polars: offsets and one data buffer
        _validity, offsets, data = arr.buffers()
        bufs = [data]
        off = np.frombuffer(offsets, dtype=np.int64)[arr.offset : arr.offset + n + 1]
        buf, start, length = np.zeros(n, np.int64), off[:-1].copy(), np.diff(off)
    address = np.array([b.address if b is not None else 0 for b in bufs], dtype=np.int64)
    size = np.array([b.size if b is not None else 0 for b in bufs], dtype=np.int64)
    return [arr, bufs], address, size, buf, start, length


def packed_validity(valid: np.ndarray | None) -> pa.Buffer | None:
    """An Arrow validity buffer of the booleans `valid` (None, given or returned: no row is
    null). Packed by numpy: `pa.array(..., mask=)` converts a mask a byte at a time, ~5x slower."""
    return None if valid is None or valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))


def _bitmap(validity: pa.Buffer | None, null_count: int) -> np.ndarray:
    """An Arrow validity buffer as `_is_null` reads it: empty when no row is null. Always
    read-only (a buffer's own flag depends on who made it, polars or pyarrow), since numba
    compiles a specialisation per read-only/writable mix."""
    bits = np.frombuffer(validity if null_count else b"", np.uint8)
    bits.flags.writeable = False
    return bits


@njit(cache=True, inline="always")
def _is_null(valid, r):  # pragma: no cover - compiled
    """Whether row `r` is null by the Arrow validity bitmap `valid` (empty: no row is null)."""
    return len(valid) > 0 and not (valid[r >> 3] >> (r & 7)) & 1


@njit(cache=True, nogil=True)
def _view_rows(views, valid, offset, n):  # pragma: no cover - compiled
    """(buffer, start, length) of rows `offset..offset+n` from their 16-byte views (int32
    length, then 12 inline bytes, or prefix, buffer index, offset). A null's view is not
    defined: read as `` (`valid`: the validity bitmap, empty when none is null)."""
    buf = np.empty(n, np.int64)
    start = np.empty(n, np.int64)
    length = np.empty(n, np.int64)
    for i in range(n):
        r = offset + i
        size = views[r, 0]
        if _is_null(valid, r):
            size = 0
        length[i] = size
        if size <= INLINE:
            buf[i], start[i] = 0, r * 16 + 4
        else:
            buf[i], start[i] = views[r, 2] + 1, views[r, 3]
    return buf, start, length


def categories_as_arrow(df: pl.DataFrame) -> dict[str, pa.DictionaryArray]:
    """Each Categorical column of `df` as `to_arrow()` gives it (indices into a dictionary of the
    values it holds, in order of first appearance), built from its codes and its categories:
    polars' own conversion cost ~0.6 ms per 100,000 rows and column, ten times this."""
    dtypes = {c: t for c, t in df.schema.items() if t == pl.Categorical}
    codes = df.select(pl.col(list(dtypes)).to_physical()).rechunk().to_arrow()
    every: dict[pl.DataType, pa.Array] = {}  # each category at its code (read after the codes)
    out = {}
    for name, dtype in dtypes.items():
        if dtype not in every:
            every[dtype] = dtype.categories.to_series().to_arrow()
        out[name] = _dictionary(codes[name].combine_chunks(), every[dtype])
    return out


def _dictionary(codes: pa.Array, every: pa.Array) -> pa.DictionaryArray:
    """The dictionary array of a column of category `codes` (nullable uint32), `every`
    category at its code."""
    n = len(codes)
    if codes.null_count == n:  # (a column no line of the batch has: most of them)
        return pa.DictionaryArray.from_arrays(pa.nulls(n, pa.uint32()), every.slice(0, 0))
    validity, data = codes.buffers()
    indices, seen = _first_seen(
        np.frombuffer(data, np.uint32), _bitmap(validity, codes.null_count), codes.offset, n, len(every)
    )
    keys = pa.Array.from_buffers(pa.uint32(), n, [validity, pa.py_buffer(indices)], codes.null_count, codes.offset)
    return pa.DictionaryArray.from_arrays(keys, every.take(pa.array(seen)), safe=False)


@njit(cache=True, nogil=True)
def _first_seen(codes, valid, at, n, n_categories):  # pragma: no cover - compiled
    """(each of rows `at..at+n`'s index into the categories they use, at the same positions;
    those categories' codes in order of first appearance). A null row (its bit clear in the
    validity bitmap `valid`; empty: none is null) gets 0, which its validity hides."""
    where = np.full(n_categories, -1, np.int64)
    seen = np.empty(min(n_categories, n), np.int64)
    indices = np.zeros(at + n, np.uint32)
    k = 0
    for r in range(at, at + n):
        if _is_null(valid, r):
            continue
        c = codes[r]
        if where[c] < 0:
            where[c] = k
            seen[k] = c
            k += 1
        indices[r] = where[c]
    return indices, seen[:k]


def scan_chunks(col: pl.Series, scan: Callable[..., tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    """`scan(rows, address, size, buf, start, length)` on each chunk of `col` in turn (`rows`:
    the chunk's slice of the column), its arrays joined. A chunk at a time because joining
    the chunks (a parse batch has one per file) would copy the text."""
    parts, at = [], 0
    for chunk in col.get_chunks():
        alive, *where = strings(chunk)
        parts.append(scan(slice(at, at + len(chunk)), *where))
        del alive  # the bytes were read by address: keep them until here
        at += len(chunk)
    return tuple(np.concatenate(arrays) for arrays in zip(*parts, strict=True))


@intrinsic
def _voidptr(typingctx, address):  # pragma: no cover - compiled
    """An int64 address as a `void*` (for `carray`)."""

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], cgutils.voidptr_t)

    return types.voidptr(types.int64), codegen


@njit(cache=True, inline="always")
def bytes_at(address, size):  # pragma: no cover - compiled
    """The `size` bytes at `address` as an array view: no copy, no reference count."""
    return carray(_voidptr(address), size, np.uint8)


@intrinsic
def _copy_bytes(typingctx, dst, src, n):  # pragma: no cover - compiled
    """`memcpy(dst, src, n)` on int64 addresses: LLVM's own (cacheable, unlike a call through
    ctypes). A loop over the bytes, or a slice assignment, copied fields ~4x slower."""

    def codegen(context, builder, signature, args):
        to, of = (builder.inttoptr(a, cgutils.voidptr_t) for a in args[:2])
        cgutils.raw_memcpy(builder, to, of, args[2], 1)
        return context.get_dummy_value()

    return types.none(types.int64, types.int64, types.int64), codegen


class Text:
    """One string column's bytes, held for compiled loops and for cutting columns out of it.

    `strings` gives every row's (buffer, start, length); `cut_spans` makes new string columns of
    fields of the rows, all in one compiled pass: a `str.slice` pass per field cost ~6 ms
    per 100,000 lines (it walks each line's characters). Requires a polars that hands out
    string views (1.x).
    """

    def __init__(self, col: pl.Series) -> None:
        self._alive, self.address, self.size, self.buf, self.start, self.length = strings(col)
        self._data = self._alive[1][1:]  # the data buffers, in the views' numbering

    @property
    def where(self) -> tuple[np.ndarray, ...]:
        """(buffer addresses, buffer sizes, buffer of each row, start, length), for `bytes_at`."""
        return self.address, self.size, self.buf, self.start, self.length

    def cut_spans(
        self,
        rows: np.ndarray,
        names: dict[int, str],
        at: np.ndarray,
        end: np.ndarray,
        held: frozenset[str],
    ) -> list[pl.Series]:
        """For each `names` entry (a column of the `at` and `end` matrices -> a column name): bytes
        `[at[k, i], end[k, i])` of each row `rows[k]`, as a string column; null where
        `at[k, i] < 0`. All columns are cut in one pass over the rows (a row's spans side by
        side in the matrices: reading them a column apart made the pass 2x slower).

        Requires each cut to start and end on a character boundary (offsets read off ASCII
        bytes, or the line's end): the views are not checked again as UTF-8.

        The `held` columns, which outlive the parse in the table, get their
        bytes copied into a buffer of their own, and it and their views come from Arrow's
        memory pool: views into the lines' buffer would keep every line's whole text alive as
        long as any field of it is held, and numpy's arrays live in glibc's heap arenas,
        where held ones beside a batch's short-lived arrays kept the arenas from shrinking
        (a held GB of logs peaked ~0.7 GB higher for each). The other columns (working
        columns, or cast to categories before the table is held) point into the lines'
        buffer, from numpy arrays: a fresh Arrow buffer costs page faults every batch.
        """
        pick = np.array(list(names), dtype=np.int64)
        copy = np.array([name in held for name in names.values()], dtype=np.bool_)
        rows = rows.astype(np.int64)
        m = len(rows)
        at, end = np.ascontiguousarray(at, np.int32), np.ascontiguousarray(end, np.int32)
        own = pa.allocate_buffer(max(_cut_size(at, end, pick, copy), 1))
        # Every byte of the views is written by `_cut`: no buffer is zeroed first.
        view_buffers = [pa.allocate_buffer(16 * m) if copy[c] else np.empty(16 * m, np.uint8) for c in range(len(pick))]
        view_at = np.array([_address(v) for v in view_buffers], dtype=np.int64)
        valid = _cut(*self.where, rows, at, end, pick, copy, _address(own), view_at)
        out = []
        for c, name in enumerate(names.values()):
            data_buffers = [own] if copy[c] else self._data
            arr = pa.Array.from_buffers(
                pa.string_view(), m, [packed_validity(valid[c]), pa.py_buffer(view_buffers[c]), *data_buffers]
            )
            out.append(pl.Series(name, arr))
        return out


def _address(buffer: pa.Buffer | np.ndarray) -> int:
    return buffer.address if isinstance(buffer, pa.Buffer) else buffer.ctypes.data


@njit(cache=True, nogil=True)
def _cut_size(at, end, pick, copy):  # pragma: no cover - compiled
    """Bytes of the long (not inline) strings of the columns to copy."""
    need = 0
    for k in range(at.shape[0]):
        for c in range(len(pick)):
            n = end[k, pick[c]] - at[k, pick[c]]
            if copy[c] and at[k, pick[c]] >= 0 and n > INLINE:
                need += n
    return need


@njit(cache=True, nogil=True)
def _cut(address, size, buf, start, length, rows, at, end, pick, copy, data, views):  # pragma: no cover - compiled
    """Each picked span of each row as an Arrow view at `views[c]` (the address of a column's
    views, 16 bytes a row: int32 length, then the string zero-padded if it is inline, else
    its first 4 bytes, int32 buffer and int32 offset). The long strings of the columns to
    `copy` go to the buffer at `data` (their buffer 0); the others stay in their source's
    buffers. Writes every byte of the views. Returns the validity."""
    n_cols, m = len(pick), len(rows)
    used = 0
    valid = np.ones((n_cols, m), np.bool_)
    zero = np.zeros(16, np.uint8)
    view = np.empty(4, np.int32)  # a view's four int32 words, assembled before being copied out
    word = view.ctypes.data
    for k in range(m):
        r = rows[k]
        line = address[buf[r]] + start[r]
        for c in range(n_cols):
            to = views[c] + 16 * k
            a = at[k, pick[c]]
            if a < 0:
                valid[c, k] = False
                _copy_bytes(to, zero.ctypes.data, 16)
                continue
            n = end[k, pick[c]] - a
            view[0] = n
            if n <= INLINE:
                view[1] = view[2] = view[3] = 0
                _copy_bytes(word + 4, line + a, n)
            else:
                _copy_bytes(word + 4, line + a, 4)
                if copy[c]:  # buffer 0: the new one
                    _copy_bytes(data + used, line + a, n)
                    view[2] = 0
                    view[3] = used
                    used += n
                else:  # a long string is never inline in its source: buffer `buf[r] - 1` of its data buffers
                    view[2] = buf[r] - 1
                    view[3] = start[r] + a
            _copy_bytes(to, word, 16)
    return valid


def count_lines(text: bytes | np.ndarray) -> int:
    """Lines in `text` (bytes, or a uint8 array) as `str.split("\\n")` gives them, less the
    empty piece after a last newline. (`bytes.count` takes ~5 ms for 16 MB; this ~0.5.)"""
    data = np.frombuffer(text, np.uint8)
    return _count_newlines(data) + (0 if len(data) and data[-1] == 10 else 1)


@njit(cache=True, nogil=True)
def _count_newlines(data):  # pragma: no cover - compiled
    n = 0
    for k in range(len(data)):
        n += data[k] == 10
    return n


def lines_column(segments: list[bytes | np.ndarray], lines: int | None = None) -> pl.Series:
    """The lines of `segments` (UTF-8 text, as bytes or uint8 arrays; a line ends at `\\n`, a
    segment's last one also at the segment's end) as one string column whose views point
    into one buffer of the bytes. `lines`: their count (`count_lines` of each segment,
    summed), when the caller has it.

    Splitting the text into Python strings and building a column of them cost ~24 ms per
    16 MB (a string object per line, then a copy of each); this costs ~4. Requires valid
    UTF-8 (the reader checked it) and fewer than 2 GiB of text (the views' offsets).
    """
    parts = [np.frombuffer(seg, np.uint8) for seg in segments]
    parts = [p if len(p) and p[-1] == 10 else np.append(p, np.uint8(10)) for p in parts]
    data = parts[0] if len(parts) == 1 else np.concatenate(parts)
    n = _count_newlines(data) if lines is None else lines
    views = _line_views(data, n)
    return pl.Series(pa.Array.from_buffers(pa.string_view(), n, [None, pa.py_buffer(views), pa.py_buffer(data)]))


NEWLINES = np.uint64(0x0A0A0A0A0A0A0A0A)
LOW_BITS, HIGH_BITS = np.uint64(0x0101010101010101), np.uint64(0x8080808080808080)


@njit(cache=True, nogil=True)
def _line_views(data, n):  # pragma: no cover - compiled
    """The views of the `n` lines of `data` (each ending at `\\n`), in buffer 0.

    Eight bytes at a time where none is a newline (most words of a log: `(w - 0x01..) & ~w &
    0x80..` is zero exactly when no byte of `w` is zero, here of `word ^ 0x0A..`), a byte at a
    time in the others: 16 MB in ~4 ms instead of ~7.
    """
    views = np.empty((n, 4), np.int32)
    raw = views.view(np.uint8).reshape(n, 16)
    m = len(data) // 8
    words = data[: m * 8].view(np.uint64)
    i = 0
    s = 0
    for w in range(m + 1):
        if w < m:
            v = words[w] ^ NEWLINES
            if ((v - LOW_BITS) & ~v & HIGH_BITS) == 0:
                continue
            first, last = w * 8, w * 8 + 8
        else:
            first, last = m * 8, len(data)
        for k in range(first, last):
            if data[k] != 10:
                continue
            length = k - s
            views[i, 0] = length
            views[i, 1] = views[i, 2] = views[i, 3] = 0  # (inline strings are zero-padded)
            for z in range(min(length, INLINE if length <= INLINE else 4)):
                raw[i, 4 + z] = data[s + z]
            if length > INLINE:
                views[i, 3] = s
            i += 1
            s = k + 1
    return views
