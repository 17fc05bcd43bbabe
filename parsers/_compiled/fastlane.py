"""The common line shapes, recognised and parsed in one compiled pass instead of two dozen polars passes.

Most lines of a vLLM incident are the same few shapes: an optional `kubectl --timestamps`
or CRI stamp, an optional V1 process prefix, then a vLLM logger line, a uvicorn line or an
NCCL INFO line::

    2025-03-02T07:00:00.123456789Z (APIServer pid=66) INFO 03-02 07:00:00 [logger.py:41] Received ...
    2025-03-02T07:00:00.123456789Z stdout F (APIServer pid=66) INFO:     10.0.3.7:51234 - "POST ..." 200 OK
    2025-03-02T07:00:00.123456789Z vllm-0:2343:2381 [0] NCCL INFO Channel 00/32 : 0[0] -> 1[1] via P2P/IPC

a KV store beside the engine (LMCache) logs every store, PyTorch's c10d watchdog floods the
workers' logs in an incident, and a node's kubelet journal (`journalctl -u kubelet`) is
syslog-wrapped klog lines::

    [2025-05-04 05:25:03,029] LMCache INFO: Storing KV cache for 321 out of 4096 tokens (cache_engine.py:190:lmcache)
    [rank1]:[E302 07:13:53.307279509 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation ...
    Mar 02 07:00:00 gpu-node-0 kubelet[1450]: I0302 07:00:00.973429    1450 kubelet.go:2455] "SyncLoop (probe)" ...

The general path (`wrappers.peel`, then each producer's probe in `lines.KINDS`, then its
parser) filters and concatenates the whole frame at every layer it tries, ~4 µs a line. This
pass reads each line's bytes in place (`parsers.arrow_text`) and takes a line only when it
is sure the general path would read it exactly so: an RFC3339 stamp with a `Z` or `±hh:mm`
zone (not journald's `+hhmm`), optionally a CRI `stdout F ` head outside a run of partial
`P` pieces, a process prefix of plain ASCII (or nested ones, `wrappers.NESTED_PROCESSES`,
the innermost kept), then vLLM's positional layout (`vllm.FAST`), a uvicorn line, `nccl.FAST`, `pylog.FAST_KV` (`_lmcache`) or a c10d line (`_c10d`; its
watchdog and PG-prefix fields by `_collectives`, the regexes reading the lines it is unsure
of); or, without a stamp, a syslog head of plain ASCII names and a klog line
(`_syslog_klog`); and nothing any other layer reacts to (`\\r`, ANSI colour or its residue,
Ray's `[repeated Nx across cluster]`, a second record glued on). Anything else, however
common, goes the general way, as does any line where a non-ASCII byte would leave a regex
class (`\\s`, `\\S`, `\\d`) in doubt. The stamp follows `parse_rfc3339`'s rules (impossible
dates give no time; a leap second `:60` counts as the next minute); the fields (level, time
parts, component, header, message, request id, HTTP method, path and status, NCCL host, pid
and device, syslog host, ident and time, LMCache's file, c10d's rank) are where
`vllm.parse`, `uvicorn.parse`, `nccl.parse`, `pylog.parse`, `torch.parse`, `wrappers.peel`
and `k8s.parse_klog` would cut them, and the fold flags (`_open`, `_msgcont`) what
`lines._fold` would compute. The columns are built from the compiled pass's offsets without
a polars pass per field (`parsers.arrow_text.Text`). Tests hold the events to the general
path's."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
from numba import njit

from parsers import continuation, torch, wrappers
from parsers import schema as s
from parsers._common import LEVEL_LETTERS, LEVEL_WORDS
from parsers._compiled import folding
from parsers.arrow_text import Text, bytes_at, packed_validity

SLOW, VLLM, UVICORN, NCCL, KLOG, KV, TORCH = 0, 1, 2, 3, 4, 5, 6
"""What a line is: for the general path, a vLLM logger line, a uvicorn line, an NCCL INFO line,
a klog line (kubelet's) in a syslog/journald line (`journalctl -u kubelet`), an LMCache line,
a PyTorch c10d line with its `[rankN]:` prefix."""

_LEVELS = (b"DEBUG", b"INFO", b"WARNING", b"ERROR", b"CRITICAL")
"""vLLM's level words (`vllm.LEVEL_WORD`)."""
_UVICORN_LEVELS = (b"INFO", b"WARNING", b"ERROR", b"DEBUG", b"CRITICAL", b"TRACE")
"""uvicorn's (`uvicorn.DETECT`)."""


def _table(words: tuple[bytes, ...], width: int = 8) -> np.ndarray:
    out = np.zeros((len(words), width + 1), np.uint8)  # word bytes, then its length in the last column
    for i, w in enumerate(words):
        out[i, : len(w)] = np.frombuffer(w, np.uint8)
        out[i, width] = len(w)
    return out


LEVELS = _table(_LEVELS)
UVICORN_LEVELS = _table(_UVICORN_LEVELS)


VERBS = _table((b"Received", b"Added", b"Finished", b"Aborted"))
"""The verbs of `vllm.REQUEST_PROBE`."""


def split(df: pl.DataFrame, text: Text | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the rows this lane takes, parsed as the general path parses them, with `_kind`; the rest).

    `df` is the working frame of `lines.parse_lines` (`_row`, `_fid`, `_seg`, `body`, ...), in
    file order. The taken rows get the wrapper columns `wrappers.peel` gives (stamp time, CRI
    stream and tag, process, pid, rank, syslog host and time) and the producer columns of the
    parser the general path would use (`vllm`, `uvicorn`, `nccl`, `k8s.parse_klog`, `pylog`,
    `torch`), each column present exactly when the general path would add it. Their fields are cut
    out of the lines in one compiled pass (`Text.cut_spans`): no pass of polars per field.
    `text`: the `body` column's `Text`, when the caller has made it.
    """
    if df.is_empty():
        return df.clear(), df
    text = Text(df["body"]) if text is None else text
    file = df.select(folding.SEGMENT_KEY.alias("f"))["f"]
    lane, us, has_ts, ts_ok, proc_at, proc_end, pid_at, pid_end, fields, stream, opens, cont = _classify(
        *text.where,
        file.to_numpy(writable=True),
        LEVELS,
        UVICORN_LEVELS,
        VERBS,
        _CLASS,
        _ACROSS,
        _TRACEBACK,
        _SUFFIXES,
        _HEADS,
        MONTHS,
        KUBELET_FILES,
        KV_LEVELS,
        wrappers.NESTED_PROCESSES,
    )
    taken = lane != SLOW
    if not taken.any():
        return df.clear(), df
    rows = np.flatnonzero(taken)
    at, end, number = _spans(rows, lane, fields, proc_at, proc_end, pid_at, pid_end, text.length)
    lane, stream, has_proc = lane[rows], stream[rows], pid_end[rows] > 0
    is_vllm, is_uvicorn, is_klog, is_kv = lane == VLLM, lane == UVICORN, lane == KLOG, lane == KV
    is_torch, is_nccl = lane == TORCH, lane == NCCL
    any_torch = is_torch.any()
    access = at[:, SPAN_NAMES.index(s.HTTP_METHOD)] >= 0
    any_vllm, any_access, any_klog, any_kv = is_vllm.any(), access.any(), is_klog.any(), is_kv.any()
    # Each column present exactly when the general path adds it (see `SPAN_NAMES`).
    present = [True] * 3 + [any_vllm, any_vllm and (fields[rows[is_vllm], RID_AT] != -1).any()]
    present += [any_vllm or any_access or any_klog or any_kv or any_torch, any_access, any_access]
    present += [is_nccl.any() or any_klog, any_torch]
    field = dict(zip(NUMBERS, number, strict=True))
    timed = (is_vllm | is_klog | is_kv | is_torch) & (field[MO] >= 0)  # (an old c10d line has no date)
    columns = [
        _values("_outer_ts", us[rows], ts_ok[rows], pa.timestamp("us", "UTC")),
        _values("_jiso", np.zeros(len(rows), np.bool_), has_ts[rows], pa.bool_()),
        _pick(s.STREAM, ("stdout", "stderr"), stream, stream >= 0),
        _pick("_tag", ("F",), np.zeros(len(rows), np.int8), stream >= 0),
        _pick(
            s.SOURCE, SOURCES, np.where(is_klog, 3 + field[SRC], np.where(is_kv, 6, np.where(is_torch, 4, lane - 1)))
        ),
        _pick("_kind", KINDS, lane - 1),
        _pick(s.LEVEL, LEVEL_NAMES, field[LEVEL] + is_uvicorn * len(_LEVELS)),
        pl.Series("_open", opens[rows]),
        pl.Series("_msgcont", cont[rows]),
        pl.Series("_prefixed", has_proc | is_torch),
        pl.Series("_kcode", np.where(is_vllm, folding.VLLM, folding.PRODUCER).astype(np.int8)),
        *(_values(c, field[k], timed, pa.int32()) for k, c in ((MO, "_mo"), (DAY, "_d"), (HOUR, "_H"))),
        *(_values(c, field[k], timed, pa.int32()) for k, c in ((MIN, "_M"), (SEC, "_S"))),
        *text.cut_spans(rows, {i: name for i, name in enumerate(SPAN_NAMES) if present[i]}, at, end, HELD),
    ]
    if is_nccl.any():
        columns.append(_values(s.CUDA_DEV, field[DEV], is_nccl & (field[DEV] >= 0), pa.int32()))
    if any_access:
        columns.append(_values(s.HTTP_STATUS, field[STATUS], access, pa.int32()))
        columns = [c.set(pl.Series(access), "access") if c.name == s.COMPONENT else c for c in columns]
    if any_klog or any_kv:
        columns.append(_values("_us", field[US], is_klog | is_kv, pa.int32()))
    if any_klog:
        columns.append(_syslog_column(text, rows, fields, is_klog))
    if any_kv:
        columns.append(_values("_Y", field[YEAR], is_kv, pa.int32()))
    if any_torch:
        message = next(c for c in columns if c.name == s.MESSAGE)
        columns.extend(_collective_columns(text, rows, is_torch, at[:, _MSG], end[:, _MSG], message))
    nulls = {c: t for c, t in wrappers.WRAPPER_COLUMNS.items() if c not in {col.name for col in columns}}
    nulls |= {c: pl.Int32 for c in ("_Y", "_us") if c not in {col.name for col in columns}}
    fast = (
        df.drop("body")
        .filter(pl.Series(taken))
        .with_columns(columns)
        .with_columns([pl.lit(None, t).alias(c) for c, t in nulls.items()] + [pl.lit(0, pl.UInt32).alias("_pfold")])
    )
    return fast, df.filter(pl.Series(~taken))


def _collective_columns(
    text: Text, rows: np.ndarray, is_torch: np.ndarray, msg_at: np.ndarray, msg_end: np.ndarray, message: pl.Series
) -> list[pl.Series]:
    """`torch.collective_fields` of the c10d rows' messages (the watchdog's op, seq, timeout and
    run time; the PG prefix's pg and rank), read by `_collectives`; the lines it is unsure of
    by the regexes themselves."""
    number, at, end, unsure = _collectives(*text.where, rows, is_torch, msg_at, msg_end)
    sure = is_torch & ~unsure
    columns = [
        _values(name, number[i], sure & (number[i] >= 0), pa.int32() if name == "_line_rank" else pa.int64())
        for i, name in enumerate(COLLECTIVE_NUMBERS)
    ]
    op, pg = text.cut_spans(rows, {0: s.COLL_OP, 1: s.PG}, at, end, frozenset())
    columns = [op, *columns[:3], pg, columns[3]]  # (`torch.collective_fields`' order)
    if unsure.any():
        by_regex = pl.DataFrame({"m": message.filter(pl.Series(unsure))}).select(torch.collective_fields(pl.col("m")))
        take = pl.Series(unsure)
        columns = [
            pl.select(pl.when(take).then(_spread(by_regex[c.name], unsure)).otherwise(c)).to_series().alias(c.name)
            for c in columns
        ]
    return columns


LEVEL_NAMES = tuple(LEVEL_WORDS[w.decode()] for w in _LEVELS + _UVICORN_LEVELS)
"""Level of each code of `_classify`'s LEVEL field: vLLM's words, then uvicorn's."""


def _values(name: str, values: np.ndarray, valid: np.ndarray | None, kind: pa.DataType) -> pl.Series:
    """A column of `values` as Arrow `kind`, null where not `valid` (None: nowhere)."""
    if kind == pa.bool_():
        data = pa.py_buffer(np.packbits(values, bitorder="little"))
    else:
        np_kind = np.int64 if pa.types.is_timestamp(kind) else kind.to_pandas_dtype()
        data = pa.py_buffer(np.ascontiguousarray(values, np_kind))
    return pl.Series(name, pa.Array.from_buffers(kind, len(values), [packed_validity(valid), data]))


def _pick(name: str, table: tuple[str, ...], code: np.ndarray, valid: np.ndarray | None = None) -> pl.Series:
    """`table[code]` for each row, null where not `valid`; of the column's dtype in the events
    table (categories gathered by code: casting the strings would hash every row)."""
    dtype = pl.Categorical if s.EVENT_DTYPES.get(name) == pl.Categorical else pl.String
    if valid is not None and not valid.any():  # (the CRI columns of kubectl or plain logs)
        return pl.repeat(None, len(code), dtype=dtype, eager=True).alias(name)
    at = _values("", code, valid, pa.uint32())
    return pl.Series(name, table, dtype=dtype).gather(at)


def _spread(values: pl.Series, rows: np.ndarray) -> pl.Series:
    """`values`, one for each True of `rows`, as a column of all the rows (null elsewhere)."""
    return values.gather(_values("", np.cumsum(rows) - 1, rows, pa.int64()))


def _syslog_column(text: Text, rows: np.ndarray, fields: np.ndarray, is_klog: np.ndarray) -> pl.Series:
    """`_syslog` as `wrappers.host.peel_syslog` writes it (`Mon|dd|HH|MM|SS|frac`) for the klog rows."""
    offsets, data = _syslog_texts(*text.where, rows[is_klog], fields)
    arr = pa.Array.from_buffers(pa.string(), int(is_klog.sum()), [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    return _spread(pl.Series("_syslog", arr), is_klog)


@njit(cache=True, nogil=True)
def _syslog_texts(addr, size, buf, start, length, rows, fields):  # pragma: no cover - compiled
    """The `_syslog` text of each of `rows` (offsets, bytes of an Arrow string array)."""
    offsets = np.zeros(len(rows) + 1, np.int32)
    for k in range(len(rows)):
        f = fields[rows[k]]
        offsets[k + 1] = offsets[k] + 16 + f[SY_FRAC_END] - f[SY_FRAC_AT]
    data = np.empty(offsets[-1], np.uint8)
    for k in range(len(rows)):
        r = rows[k]
        f = fields[r]
        d = bytes_at(addr[buf[r]], size[buf[r]])[start[r] : start[r] + length[r]]
        o = offsets[k]
        data[o : o + 3] = d[0:3]  # the month
        data[o + 3] = 124
        day = f[SY_DAY_AT]
        if f[SY_DAY_END] - day == 1:  # `str.zfill(2)`
            data[o + 4], data[o + 5] = 48, d[day]
        else:
            data[o + 4], data[o + 5] = d[day], d[day + 1]
        t = f[SY_TIME_AT]
        for z in range(3):  # HH|MM|SS|
            data[o + 6 + 3 * z] = 124
            data[o + 7 + 3 * z], data[o + 8 + 3 * z] = d[t + 3 * z], d[t + 3 * z + 1]
        data[o + 15] = 124
        data[o + 16 : offsets[k + 1]] = d[f[SY_FRAC_AT] : f[SY_FRAC_END]]
    return offsets, data


MONTHS = _table(tuple(m.encode() for m in wrappers.MONTHS))
KUBELET_FILES = _table((b"kubelet", b"pleg", b"kuberuntime", b"pod_workers", b"prober", b"eviction"), 15)
"""File names `k8s.parse_klog` counts as kubelet's (`^(?:kubelet|pleg|...)`)."""


def _letter_codes(letters: str) -> np.ndarray:
    """Each byte's `LEVEL_NAMES` code as a severity letter of `letters` (the general path's
    `LEVEL_LETTERS` level), -1 for the other bytes."""
    out = np.full(256, -1, np.int32)
    for c in letters:
        out[ord(c)] = LEVEL_NAMES.index(LEVEL_LETTERS[c])
    return out


_KLOG_LEVELS = _letter_codes("IWEF")  # `k8s.KLOG`'s severities


@njit(cache=True)
def _syslog_klog(d, f, months, kubelet_files):  # pragma: no cover - compiled
    """A klog line in a syslog head, as `wrappers.SYSLOG` then `k8s.KLOG` read it::

        Mar  2 07:00:00[.frac] host ident[pid]: I0302 07:00:00.973429    1450 kubelet.go:2455] message

    with plain ASCII names (host `[\\w.-]+`, ident and file `[\\w./-]`: what the regexes' wider
    classes also take): its fields into `f`; returns the spans of the ident (the process) and
    of the pid (syslog's, else klog's thread id), or -1s when the line is not one (or a
    non-ASCII byte leaves a class in doubt: the general path decides)."""
    no = (-1, -1, -1, -1)
    n = len(d)
    if n < 16:
        return no
    month = False
    for m in range(months.shape[0]):
        if d[0] == months[m, 0] and d[1] == months[m, 1] and d[2] == months[m, 2]:
            month = True
    if not month or d[3] != 32:
        return no
    j = 3
    while j < n and d[j] == 32:  # ` +` then `\d{1,2}`
        j += 1
    f[SY_DAY_AT] = j
    j = _digits_end(d, j)
    if not (1 <= j - f[SY_DAY_AT] <= 2 and j < n and d[j] == 32):
        return no
    f[SY_DAY_END] = j
    j += 1
    if not (_digits(d, j, 2) and j + 8 < n and d[j + 2] == 58 and _digits(d, j + 3, 2) and d[j + 5] == 58):
        return no
    if not _digits(d, j + 6, 2):
        return no
    f[SY_TIME_AT] = j
    j += 8
    f[SY_FRAC_AT] = f[SY_FRAC_END] = j
    if j < n and d[j] == 46:  # `(?:\.\d+)?`
        j += 1
        f[SY_FRAC_AT] = j
        j = _digits_end(d, j)
        f[SY_FRAC_END] = j
        if j == f[SY_FRAC_AT]:
            return no
    if not (j < n and d[j] == 32):
        return no
    j += 1
    f[BODY_AT] = j  # the host
    while j < n and (_is_word_byte(d[j]) or d[j] == 46 or d[j] == 45):
        j += 1
    if j == f[BODY_AT] or not (j < n and d[j] == 32):
        return no
    f[HOST_END] = j
    j += 1
    if not (j < n and ((65 <= d[j] <= 90) or (97 <= d[j] <= 122))):
        return no
    p0 = j
    while j < n and (_is_word_byte(d[j]) or d[j] == 46 or d[j] == 45 or d[j] == 47):
        j += 1
    p1 = j
    q0 = q1 = -1
    if j < n and d[j] == 91:  # `[pid]`
        j += 1
        q0 = j
        j = _digits_end(d, j)
        if j == q0 or not (j < n and d[j] == 93):
            return no
        q1 = j
        j += 1
    if not (j < n and d[j] == 58):
        return no
    j += 1 + (1 if j + 1 < n and d[j + 1] == 32 else 0)  # `: ?`
    # klog: `[IWEF]MMDD HH:MM:SS.uuuuuu +tid file:line] message`
    if j + 22 > n or _KLOG_LEVELS[d[j]] < 0 or not _digits(d, j + 1, 4) or d[j + 5] != 32:
        return no
    if not (_digits(d, j + 6, 2) and d[j + 8] == 58 and _digits(d, j + 9, 2) and d[j + 11] == 58):
        return no
    if not (_digits(d, j + 12, 2) and d[j + 14] == 46 and _digits(d, j + 15, 6) and d[j + 21] == 32):
        return no
    f[LEVEL] = _KLOG_LEVELS[d[j]]
    f[MO], f[DAY] = _num(d, j + 1, 2), _num(d, j + 3, 2)
    f[HOUR], f[MIN], f[SEC], f[US] = _num(d, j + 6, 2), _num(d, j + 9, 2), _num(d, j + 12, 2), _num(d, j + 15, 6)
    k = j + 21
    while k < n and d[k] == 32:
        k += 1
    t0 = k
    k = _digits_end(d, k)
    if k == t0 or not (k < n and d[k] == 32):
        return no
    t1 = k
    f[MSG_AT] = _file_line(d, k + 1, f, True)
    if f[MSG_AT] < 0:
        return no
    # `k8s.parse_klog`'s source: kubelet by ident or file, torch by a C++ or Python file, else klog.
    a, e = f[COMP_AT], f[COMP_END]
    src = 2
    if e - a >= 4 and d[e - 4] == 46 and d[e - 3] == 99 and d[e - 2] == 112 and d[e - 1] == 112:  # `.cpp`
        src = 1
    elif e - a >= 3 and d[e - 3] == 46 and d[e - 2] == 99 and d[e - 1] == 99:  # `.cc`
        src = 1
    elif e - a >= 2 and d[e - 2] == 46 and d[e - 1] == 104:  # `.h`
        src = 1
    elif e - a >= 3 and d[e - 3] == 46 and d[e - 2] == 112 and d[e - 1] == 121:  # `.py`
        src = 1
    for w in range(kubelet_files.shape[0]):
        if _starts(d, a, kubelet_files[w, : kubelet_files[w, 15]]):
            src = 0
    if p1 - p0 == 7 and _starts(d, p0, kubelet_files[0, :7]):  # the ident `kubelet`
        src = 0
    f[SRC] = src
    return (p0, p1, q0, q1) if q0 >= 0 else (p0, p1, t0, t1)


@njit(cache=True, inline="always")
def _file_line(d, k, f, slash):  # pragma: no cover - compiled
    """Where the message starts after the `file:line] ` at `d[k:]` of a klog or c10d line, the
    file (`[\\w.-]`, and `/` when `slash`) into `f[COMP_AT:COMP_END]`; -1 when there is none."""
    n = len(d)
    f[COMP_AT] = k
    while k < n and (_is_word_byte(d[k]) or d[k] == 46 or d[k] == 45 or (slash and d[k] == 47)):
        k += 1
    if k == f[COMP_AT] or not (k < n and d[k] == 58):
        return -1
    f[COMP_END] = k
    m = k + 1
    k = _digits_end(d, m)
    if k == m or not (k + 1 < n and d[k] == 93 and d[k + 1] == 32):
        return -1
    return k + 2


_TORCH_LEVELS = _letter_codes("FEWIV")  # `torch.PATTERN`'s
_RANK = np.frombuffer(b"[rank", np.uint8).copy()


@njit(cache=True)
def _c10d(d, at, f):  # pragma: no cover - compiled
    """A PyTorch c10d line with its rank prefix at `d[at:]`, as `wrappers.RANK` then
    `torch.PATTERN` read it::

        [rank1]:[E302 07:13:53.307279509 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught ...
        [rank4]: [E ProcessGroupNCCL.cpp:475] ...                                    (torch <= 2.3)

    ASCII digits and file name (`[\\w.-]`) only: its fields into `f` (time parts -1 without
    a date; the monotonic fraction is not a time). False when no match."""
    n = len(d)
    if not _starts(d, at, _RANK):
        return False
    j = at + 5
    f[RANK_AT] = j
    j = _digits_end(d, j)
    if j == f[RANK_AT] or not (j + 1 < n and d[j] == 93 and d[j + 1] == 58):  # `]:`
        return False
    f[RANK_END] = j
    j += 2
    if j < n and d[j] == 32:  # `: ?`
        j += 1
    if not (j + 1 < n and d[j] == 91 and _TORCH_LEVELS[d[j + 1]] >= 0):
        return False
    f[LEVEL] = _TORCH_LEVELS[d[j + 1]]
    j += 2
    if j < n and 48 <= d[j] <= 57:  # `MMDD HH:MM:SS.frac` (3 or 4 digits of MMDD)
        m = j
        j = _digits_end(d, j)
        if not (3 <= j - m <= 4 and j < n and d[j] == 32):
            return False
        mmdd = _num(d, m, j - m)
        j += 1
        if not (_digits(d, j, 2) and j + 8 < n and d[j + 2] == 58 and _digits(d, j + 3, 2) and d[j + 5] == 58):
            return False
        if not (_digits(d, j + 6, 2) and d[j + 8] == 46):
            return False
        f[MO], f[DAY] = mmdd // 100, mmdd % 100
        f[HOUR], f[MIN], f[SEC] = _num(d, j, 2), _num(d, j + 3, 2), _num(d, j + 6, 2)
        j += 9
        m = j
        j = _digits_end(d, j)
        if j == m:
            return False
    else:
        f[MO] = f[DAY] = f[HOUR] = f[MIN] = f[SEC] = -1
    if not (j < n and d[j] == 32):
        return False
    f[MSG_AT] = _file_line(d, j + 1, f, False)  # (`torch.DETECT` ends in `\] `)
    return f[MSG_AT] >= 0


def _bytes(text: bytes) -> np.ndarray:
    """A literal as the compiled scans compare it (a writable array of its bytes)."""
    return np.frombuffer(text, np.uint8).copy()


_WATCHDOG = _bytes(b"Watchdog caught collective operation timeout: WorkNCCL(")
_SEQ, _OP, _NUMEL_IN, _NUMEL_OUT = _bytes(b"SeqNum="), _bytes(b"OpType="), _bytes(b", NumelIn="), _bytes(b", NumelOut=")
_SHAPE, _TIMEOUT = _bytes(b", TensorShape=["), _bytes(b", Timeout(ms)=")
_RAN, _MILLIS = _bytes(b" ran for "), _bytes(b" milliseconds")
_BRACKET, _PG, _ID, _GUID = _bytes(b"["), _bytes(b"PG "), _bytes(b"ID "), _bytes(b" PG GUID ")
_RANK_WORD = _bytes(b"Rank ")
COLLECTIVE_NUMBERS = (s.COLL_SEQ, s.COLL_TIMEOUT_MS, s.COLL_RAN_MS, "_line_rank")
"""The numeric fields `_collectives` reads, in the order of its rows; then its spans: op, pg."""
_DIGITS_SURE = 18
"""A run of more digits might not fit the column's integer (the general path's cast gives null
then): such a line is left to the regexes."""


@njit(cache=True, inline="always")
def _find(d, at, word):  # pragma: no cover - compiled
    """Where `word` first occurs in `d[at:]`, or -1."""
    for k in range(at, len(d) - len(word) + 1):
        if d[k] == word[0] and _starts(d, k, word):
            return k
    return -1


@njit(cache=True, inline="always")
def _number_after(d, j, word, close):  # pragma: no cover - compiled
    """(value, where `close` is) when `d[j:]` is `word`, a run of ASCII digits short enough to be
    sure of its value, then the byte `close`; else (-1, -1)."""
    if not _starts(d, j, word):
        return -1, -1
    a = j + len(word)
    e = _digits_end(d, a)
    if e == a or e - a > _DIGITS_SURE or not (e < len(d) and d[e] == close):
        return -1, -1
    return _num(d, a, e - a), e


@njit(cache=True)
def _watchdog(d, number, span):  # pragma: no cover - compiled
    """`torch.WATCHDOG` in message `d`: its seq, timeout, ran into `number[0:3]` and its op into
    `span[0:2]`. False when unsure (the regex decides): the first occurrence of its literal head
    does not match (a later one might), or a digit run too long to be sure of its value.

    Sure without backtracking: every optional group starts with a literal the text after it
    cannot also start with, and each run (`\\d+`, `\\w+`, `[^\\]]*`) ends where the next
    literal must begin. A non-ASCII byte ends a run and so fails the next literal: unsure."""
    j = _find(d, 0, _WATCHDOG)
    if j < 0:
        return True  # no match anywhere: the fields are null
    n = len(d)
    j += len(_WATCHDOG)
    if _starts(d, j, _SEQ):
        v, e = _number_after(d, j, _SEQ, 44)  # `SeqNum=N,` then a space
        if v < 0 or not (e + 1 < n and d[e + 1] == 32):
            return False
        number[0], j = v, e + 2
    if not _starts(d, j, _OP):
        return False
    j += len(_OP)
    span[0] = j
    while j < n and _is_word_byte(d[j]):
        j += 1
    if j == span[0]:
        return False
    span[1] = j
    if _starts(d, j, _NUMEL_IN):
        k = _digits_end(d, j + len(_NUMEL_IN))
        if k > j + len(_NUMEL_IN) and _starts(d, k, _NUMEL_OUT):
            e = _digits_end(d, k + len(_NUMEL_OUT))
            if e > k + len(_NUMEL_OUT):
                j = e
    if _starts(d, j, _SHAPE):
        k = j + len(_SHAPE)
        while k < n and d[k] != 93:
            k += 1
        if k < n:
            j = k + 1
    v, e = _number_after(d, j, _TIMEOUT, 41)  # `, Timeout(ms)=N)`
    if v < 0:
        return False
    number[1], j = v, e + 1
    if _starts(d, j, _RAN):
        a = j + len(_RAN)
        k = _digits_end(d, a)
        if k > a and _starts(d, k, _MILLIS):
            if k - a > _DIGITS_SURE:
                return False
            number[2] = _num(d, a, k - a)
        elif k < n and d[k] >= 128:  # a digit outside ASCII would be the regex's `\d`
            return False
    return True


@njit(cache=True)
def _pg_prefix(d, number, span):  # pragma: no cover - compiled
    """`torch.PG_PREFIX` in message `d`, tried at its first `[` (`[Rank 3]`, `[PG ID 0 PG GUID
    0(default_pg) Rank 3]`): its rank into `number[3]`, its pg into `span[2:4]`. False when
    unsure (no match at the first `[`: a later one might match; a GUID with a non-ASCII byte,
    which the regex's `\\s` might stop at; a rank too long)."""
    j = _find(d, 0, _BRACKET)
    if j < 0:
        return True
    n = len(d)
    j += 1
    if _starts(d, j, _PG):
        j += len(_PG)
        if _starts(d, j, _ID):
            j += len(_ID)
        a = j
        j = _digits_end(d, a)
        if j == a:
            return False
        span[2], span[3] = a, j
        if _starts(d, j, _GUID):
            a = j + len(_GUID)
            k = a
            while k < n and not (d[k] == 32 or 9 <= d[k] <= 13 or d[k] == 40 or d[k] == 93):
                if d[k] >= 128:
                    return False
                k += 1
            if k == a:
                return False
            j = k
        if (j < n and d[j] == 40) or (j + 1 < n and d[j] == 32 and d[j + 1] == 40):
            k = j + (1 if d[j] == 40 else 2)
            while k < n and d[k] != 41:
                k += 1
            if k == n:
                return False
            j = k + 1
        if not (j < n and d[j] == 32):
            return False
        j += 1
    v, _ = _number_after(d, j, _RANK_WORD, 93)  # `Rank N]`
    if v < 0:
        return False
    number[3] = v if v < 2**31 else -1  # (the general path's cast to Int32 gives null)
    return True


@njit(cache=True, nogil=True)
def _collectives(addr, size, buf, start, length, rows, which, msg_at, msg_end):  # pragma: no cover - compiled
    """For each taken row `rows[k]` where `which[k]` (c10d lines): `torch.collective_fields` of
    its message `[msg_at[k], msg_end[k])`: (numbers, a `COLLECTIVE_NUMBERS` row each, -1 for
    null; op and pg spans as line offsets, at -1 for null, in `Text.cut_spans`' layout; unsure
    rows, for the regexes)."""
    m = len(rows)
    number = np.full((len(COLLECTIVE_NUMBERS), m), -1, np.int64)
    at = np.full((m, 2), -1, np.int32)
    end = np.zeros((m, 2), np.int32)
    unsure = np.zeros(m, np.bool_)
    num = np.empty(len(COLLECTIVE_NUMBERS), np.int64)
    span = np.empty(4, np.int32)
    for k in range(m):
        if not which[k]:
            continue
        r = rows[k]
        d = bytes_at(addr[buf[r]], size[buf[r]])[start[r] + msg_at[k] : start[r] + msg_end[k]]
        num[:] = -1
        span[:] = -1
        if not (_watchdog(d, num, span) and _pg_prefix(d, num, span)):
            unsure[k] = True
            continue
        number[:, k] = num
        for z in range(2):
            if span[2 * z] >= 0:
                at[k, z], end[k, z] = msg_at[k] + span[2 * z], msg_at[k] + span[2 * z + 1]
    return number, at, end, unsure


_KV_WORDS = (b"DEBUG", b"INFO", b"WARNING", b"WARN", b"ERROR", b"CRITICAL")
KV_LEVELS = _table(_KV_WORDS)
"""`pylog.FAST_KV`'s level words, WARNING before WARN."""
_KV_LEVEL_CODES = np.array([LEVEL_NAMES.index(LEVEL_WORDS[w.decode()]) for w in _KV_WORDS], np.int32)
_LMCACHE = np.frombuffer(b"LMCache ", np.uint8).copy()


@njit(cache=True)
def _lmcache(d, at, f, kv_levels):  # pragma: no cover - compiled
    """`pylog.FAST_KV` at `d[at:]` (`[YYYY-MM-DD HH:MM:SS,mmm] LMCache LEVEL: `), read as
    `pylog._parse_kv_fast` reads it: the time, the level, the message after the whitespace
    that follows `LEVEL:`, and LMCache's ` (file.py:N[:logger])` tail (`pylog.KV_TAIL`),
    whose file is the component; without one the message ends before its trailing
    whitespace. Message start -1 when a non-ASCII byte leaves the whitespace or the tail's
    `\\w` in doubt. False when no match."""
    n = len(d)
    j = at
    if j + 36 > n:
        return False
    if not (_digits(d, j + 1, 4) and d[j + 5] == 45 and _digits(d, j + 6, 2) and d[j + 8] == 45):
        return False
    if not (_digits(d, j + 9, 2) and d[j + 11] == 32 and _digits(d, j + 12, 2) and d[j + 14] == 58):
        return False
    if not (_digits(d, j + 15, 2) and d[j + 17] == 58 and _digits(d, j + 18, 2) and d[j + 20] == 44):
        return False
    if not (_digits(d, j + 21, 3) and d[j + 24] == 93 and d[j + 25] == 32 and _starts(d, j + 26, _LMCACHE)):
        return False
    k = j + 34
    w = 0
    for code in range(kv_levels.shape[0]):  # the first word followed by `: `
        z = kv_levels[code, 8]
        if w == 0 and _starts(d, k, kv_levels[code, :z]) and k + z + 1 < n and d[k + z] == 58:
            if d[k + z + 1] == 32:
                w = z
                f[LEVEL] = _KV_LEVEL_CODES[code]
    if w == 0:
        return False
    f[YEAR], f[MO], f[DAY] = _num(d, j + 1, 4), _num(d, j + 6, 2), _num(d, j + 9, 2)
    f[HOUR], f[MIN], f[SEC] = _num(d, j + 12, 2), _num(d, j + 15, 2), _num(d, j + 18, 2)
    f[US] = _num(d, j + 21, 3) * 1000
    m = k + w + 2
    for z in range(m, n):
        if d[z] >= 128:
            f[MSG_AT] = -1
            return True
    while m < n and _is_space(d[m]):  # `str.strip_chars_start()`
        m += 1
    e = n
    while e > m and _is_space(d[e - 1]):
        e -= 1
    f[MSG_AT], f[MSG_END] = m, e
    # The tail: ` (` + `[\w./-]+\.py` + `:\d+` + `(?::[\w.]+)?` + `)`, then only whitespace.
    if not (e - m >= 2 and d[e - 1] == 41):
        return True
    p = e - 2
    while p >= m and d[p] != 40:  # its `(`: none of the tail's classes has one
        p -= 1
    if not (p - 1 >= m and d[p - 1] == 32):
        return True
    q = p + 1
    while q < e and (_is_word_byte(d[q]) or d[q] == 46 or d[q] == 47 or d[q] == 45):
        q += 1
    if not (q - (p + 1) >= 4 and d[q - 3] == 46 and d[q - 2] == 112 and d[q - 1] == 121 and q < e and d[q] == 58):
        return True
    r = q + 1
    while r < e and 48 <= d[r] <= 57:
        r += 1
    if r == q + 1:
        return True
    if r < e and d[r] == 58:  # `:logger`
        r += 1
        g = r
        while r < e and (_is_word_byte(d[r]) or d[r] == 46):
            r += 1
        if r == g:
            return True
    if r != e - 1:  # the `)` that ends the text
        return True
    f[COMP_AT], f[COMP_END], f[MSG_END] = p + 1, q, p - 1
    return True


@njit(cache=True, inline="always")  # per byte: a call each cost ~15% of `_classify`
def _digits(d, at, n):  # pragma: no cover - compiled
    if at + n > len(d):
        return False
    for k in range(at, at + n):
        if not (48 <= d[k] <= 57):
            return False
    return True


@njit(cache=True, inline="always")  # per byte: a call each cost ~15% of `_classify`
def _digits_end(d, at):  # pragma: no cover - compiled
    """Where the run of ASCII digits at `d[at:]` ends."""
    while at < len(d) and 48 <= d[at] <= 57:
        at += 1
    return at


@njit(cache=True, inline="always")  # per byte: a call each cost ~15% of `_classify`
def _num(d, at, n):  # pragma: no cover - compiled
    v = 0
    for k in range(at, at + n):
        v = v * 10 + (d[k] - 48)
    return v


@njit(cache=True, inline="always")  # per byte: a call each cost ~15% of `_classify`
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
    """(end, µs, valid) of a leading `YYYY-MM-DDTHH:MM:SS[.f+](Z|±hh:mm) `; end -1: not one;
    end <= -2: one with journald's `±hhmm` zone, ending at `-end - 2` (the general path's)."""
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
    elif j < len(d) and (d[j] == 43 or d[j] == 45):  # `±hh:mm`
        if _digits(d, j + 1, 4) and j + 5 < len(d) and d[j + 5] == 32:
            return -(j + 5) - 2, 0, False  # `±hhmm` (journald's): a stamp, but for the general path
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


@njit(cache=True, inline="always")  # per byte: a call each cost ~15% of `_classify`
def _is_word_byte(c):  # pragma: no cover - compiled
    return (48 <= c <= 57) or (65 <= c <= 90) or (97 <= c <= 122) or c == 95


@njit(cache=True)
def _vllm_fast(d, at, levels):  # pragma: no cover - compiled
    """Where `d[at:]` matching `vllm.FAST` (`LEVEL MM-DD HH:MM:SS [?file.py:N](space|end)`) has its
    file name and its closing `]`: (file start, the `:` after it, `]`), or (-1, -1, -1)."""
    no = (-1, -1, -1)
    n = _word_at(d, at, levels)
    if n == 0:
        return no
    j = at + n
    if not (j < len(d) and d[j] == 32 and _digits(d, j + 1, 2) and j + 3 < len(d) and d[j + 3] == 45):
        return no
    if not (_digits(d, j + 4, 2) and j + 6 < len(d) and d[j + 6] == 32 and _digits(d, j + 7, 2)):
        return no
    if not (j + 9 < len(d) and d[j + 9] == 58 and _digits(d, j + 10, 2) and j + 12 < len(d) and d[j + 12] == 58):
        return no
    if not (_digits(d, j + 13, 2) and j + 15 < len(d) and d[j + 15] == 32):
        return no
    k = j + 16
    if k < len(d) and d[k] == 91:  # `[`
        k += 1
    f = k
    while k < len(d) and (_is_word_byte(d[k]) or d[k] == 46 or d[k] == 47 or d[k] == 45):
        k += 1
    if k < len(d) and d[k] >= 128:  # \w takes other scripts' letters: the general path decides
        return no
    if k - f < 4 or d[k - 3] != 46 or d[k - 2] != 112 or d[k - 1] != 121:  # `.py`
        return no
    if not (k < len(d) and d[k] == 58):
        return no
    colon = k
    k += 1
    m = k
    while k < len(d) and 48 <= d[k] <= 57:
        k += 1
    if k == m or not (k < len(d) and d[k] == 93):  # `]`
        return no
    if not (k + 1 == len(d) or d[k + 1] == 32):
        return no
    return f, colon, k


@njit(cache=True, inline="always")  # per byte: a call each cost ~15% of `_classify`
def _is_space(c):  # pragma: no cover - compiled
    """ASCII bytes in Unicode's White_Space (regex `\\s`); non-ASCII bytes are the caller's to refuse."""
    return c == 32 or 9 <= c <= 13


@njit(cache=True)
def _request_id(d, m, verbs):  # pragma: no cover - compiled
    """For a message at `d[m:]`: (start, end) of the id `vllm.request_id` takes; (-1, -1) when the
    message is no request line (`vllm.REQUEST_PROBE`), (-3, -3) when it is one without an id, (-2, -2)
    when a non-ASCII byte leaves it unsure."""
    w = _word_at(d, m, verbs)
    if w == 0:
        return -1, -1
    j = m + w
    for z, b in enumerate((32, 114, 101, 113, 117, 101, 115, 116, 32)):  # ` request `
        if j + z >= len(d) or d[j + z] != b:
            return -1, -1
    j += 9
    if j >= len(d):
        return -1, -1
    if d[j] >= 128:
        return -2, -2
    if _is_space(d[j]):  # REQUEST_PROBE wants \S here
        return -1, -1
    k = j
    while k < len(d) and not _is_space(d[k]) and d[k] != 58 and d[k] != 44:
        if d[k] >= 128:
            return -2, -2
        k += 1
    if k == j:
        return -3, -3
    e = k
    while e > j and d[e - 1] == 46:  # strip_chars_end(".")
        e -= 1
    return j, e


@njit(cache=True)
def _access(d, m, out):  # pragma: no cover - compiled
    """`uvicorn.ACCESS_PROBE` at `d[m:]`: method, path and status into `out`; False when it does not
    match; None-like -1 in out[0] with True when a non-ASCII byte leaves it unsure."""
    j = m
    while j < len(d) and not _is_space(d[j]):  # the client, \S*
        if d[j] >= 128:
            out[0] = -2
            return True
        j += 1
    if j + 3 < len(d) and d[j] == 32 and d[j + 1] == 45 and d[j + 2] == 32 and d[j + 3] == 34:
        j += 4
    elif j == m + 1 and d[m] == 45 and j + 1 < len(d) and d[j] == 32 and d[j + 1] == 34:  # no client: `- "`
        j += 2
    else:
        return False
    a = j
    while j < len(d) and 65 <= d[j] <= 90:
        j += 1
    if j == a or not (j < len(d) and d[j] == 32):
        return False
    out[0], out[1] = a, j
    j += 1
    p = j
    while j < len(d) and not _is_space(d[j]):
        if d[j] >= 128:
            out[0] = -2
            return True
        j += 1
    if j == p:
        return False
    out[2], out[3] = p, j
    for z, b in enumerate((32, 72, 84, 84, 80, 47)):  # ` HTTP/`
        if j + z >= len(d) or d[j + z] != b:
            return False
    j += 6
    v = j
    while j < len(d) and ((48 <= d[j] <= 57) or d[j] == 46 or d[j] >= 128):
        if d[j] >= 128:
            out[0] = -2
            return True
        j += 1
    if j == v or not (j + 1 < len(d) and d[j] == 34 and d[j + 1] == 32):
        return False
    j += 2
    for z in range(j, min(j + 3, len(d))):
        if d[z] >= 128:  # another script's digit would do for \d
            out[0] = -2
            return True
    if not _digits(d, j, 3):
        return False
    out[4] = _num(d, j, 3)
    return True


@njit(cache=True, inline="always")  # per byte: a call each cost ~15% of `_classify`
def _space_at(d, k, end):  # pragma: no cover - compiled
    """Length of the White_Space character (regex `\\s`, Rust's `char::is_whitespace`) that
    starts at `d[k]` (k < end), 0 when it is none: ASCII tab to CR and space, U+0085, U+00A0,
    U+1680, U+2000-200A, U+2028, U+2029, U+202F, U+205F, U+3000."""
    c = d[k]
    if c == 32 or 9 <= c <= 13:
        return 1
    if c < 128:
        return 0
    if c == 0xC2 and k + 1 < end and (d[k + 1] == 0x85 or d[k + 1] == 0xA0):
        return 2
    if k + 2 >= end:
        return 0
    b1, b2 = d[k + 1], d[k + 2]
    if c == 0xE1 and b1 == 0x9A and b2 == 0x80:
        return 3
    if c == 0xE2 and b1 == 0x80 and (0x80 <= b2 <= 0x8A or b2 == 0xA8 or b2 == 0xA9 or b2 == 0xAF):
        return 3
    if c == 0xE2 and b1 == 0x81 and b2 == 0x9F:
        return 3
    if c == 0xE3 and b1 == 0x80 and b2 == 0x80:
        return 3
    return 0


@njit(cache=True, inline="always")  # per byte: a call each cost ~15% of `_classify`
def _space_before(d, e, begin):  # pragma: no cover - compiled
    """Length of the White_Space character that ends at `d[e - 1]` (e > begin), 0 when none."""
    if _space_at(d, e - 1, e) == 1:
        return 1
    if e - 2 >= begin and _space_at(d, e - 2, e) == 2:
        return 2
    if e - 3 >= begin and _space_at(d, e - 3, e) == 3:
        return 3
    return 0


@njit(cache=True, inline="always")  # per byte: a call each cost ~15% of `_classify`
def _starts(d, at, word):  # pragma: no cover - compiled
    if at + len(word) > len(d):
        return False
    for z in range(len(word)):
        if d[at + z] != word[z]:
            return False
    return True


_TRACEBACK = np.frombuffer(b"Traceback (most recent call last)", np.uint8).copy()
"""`continuation.MESSAGE`'s traceback head; its first 22 bytes are the open-block test's."""
HEAD_CONT, HEAD_UNSURE, HEAD_FRAME, HEAD_PROCESS = 1, 2, 3, 4
_HEAD_WIDTH = 64
OWN_PATTERNS = {"frame #": HEAD_FRAME, "Process ": HEAD_PROCESS}
"""The heads of `continuation.PATTERNS` whose rest the lane tests itself; it leaves a
message with any other of them to the general path."""


def _head_table() -> np.ndarray:
    """`continuation`'s heads, a row each: the bytes, then the length (column `_HEAD_WIDTH`)
    and what a message with that head is (column `_HEAD_WIDTH + 1`): a continuation
    (`HEAD_CONT`), one whose rest the lane tests itself (a C++ frame's `#N:`, a process's
    `Name:`), or one it leaves to the general path (`HEAD_UNSURE`)."""
    heads = [(t, HEAD_CONT) for t in continuation.LITERALS]
    heads += [(h, OWN_PATTERNS.get(h, HEAD_UNSURE)) for h in continuation.PATTERNS]
    table = np.zeros((len(heads), _HEAD_WIDTH + 2), np.uint8)
    for row, (head, what) in enumerate(heads):
        b = head.encode()
        table[row, : len(b)], table[row, _HEAD_WIDTH], table[row, _HEAD_WIDTH + 1] = list(b), len(b), what
    return table


_HEADS = _head_table()
_SUFFIXES = np.zeros((5, 16), np.uint8)  # `pylog.DETECT_EXC`'s name endings; length in the last column
for _i, _w in enumerate((b"Error", b"Exception", b"Exit", b"Interrupt", b"Fault")):
    _SUFFIXES[_i, : len(_w)], _SUFFIXES[_i, 15] = np.frombuffer(_w, np.uint8), len(_w)


@njit(cache=True)
def _head(d, m, heads):  # pragma: no cover - compiled
    """What `continuation`'s heads say of the message at `d[m:]` (m < len(d)): 0 (no head of
    theirs), `HEAD_CONT` (a continuation) or `HEAD_UNSURE` (the general path must decide)."""
    n = len(d)
    for w in range(heads.shape[0]):
        if d[m] != heads[w, 0] or not _starts(d, m, heads[w, : heads[w, _HEAD_WIDTH]]):
            continue
        what = heads[w, _HEAD_WIDTH + 1]
        k = m + heads[w, _HEAD_WIDTH]
        if what == HEAD_FRAME:  # `frame #\d+:`
            j = k
            while j < n and 48 <= d[j] <= 57:
                j += 1
            if j > k and j < n and d[j] == 58:
                return HEAD_CONT
        elif what == HEAD_PROCESS:  # `Process [\w\-]+:$`
            j = k
            while j < n and (_is_word_byte(d[j]) or d[j] == 45):
                j += 1
            if j < n and d[j] >= 128:  # maybe a letter of another script, which \\w takes
                return HEAD_UNSURE
            if j > k and j == n - 1 and d[j] == 58:
                return HEAD_CONT
        else:
            return what
    return 0


@njit(cache=True)
def _block_flags(d, m, traceback, suffixes, heads):  # pragma: no cover - compiled
    """For a message at `d[m:]`: (opens a block, looks like a continuation, unsure) as
    `lines._fold` computes `_open` and `_msgcont`: ends in `:` before trailing White_Space,
    or starts a traceback; `continuation.MESSAGE` (`heads`: `_HEADS`) or `pylog.DETECT_EXC`.
    Unsure when a non-ASCII byte sits where `\\w` would decide a test, or a head needs the
    general path's regex."""
    n = len(d)
    e = n
    while e > m:
        w = _space_before(d, e, m)
        if w == 0:
            break
        e -= w
    opens = (e > m and d[e - 1] == 58) or _starts(d, m, traceback[:22])
    if m >= n:  # an empty message
        return opens, True, False
    if _space_at(d, m, n) or _starts(d, m, traceback):
        return opens, True, False
    h = _head(d, m, heads)
    if h:
        return opens, h == HEAD_CONT, h == HEAD_UNSURE
    c = d[m]
    if c == 94:  # `^+\s*$`
        k = m
        while k < n and d[k] == 94:
            k += 1
        while k < n:
            w = _space_at(d, k, n)
            if w == 0:
                return opens, False, False
            k += w
        return opens, True, False
    if not ((65 <= c <= 90) or (97 <= c <= 122) or c == 95):  # DETECT_EXC starts [A-Za-z_]
        return opens, False, False
    k = m
    while k < n and (_is_word_byte(d[k]) or d[k] == 46):
        k += 1
    if k < n and d[k] >= 128:  # maybe a letter of another script, which \w takes
        return opens, False, True
    if k < n and d[k] != 58:  # the name must end the message or be followed by `:`
        return opens, False, False
    # Dotted names, each [A-Za-z_]\w*, the last ending in a suffix after at least one character.
    seg = m
    for j in range(m, k + 1):
        if j == k or d[j] == 46:
            if j == seg or not ((65 <= d[seg] <= 90) or (97 <= d[seg] <= 122) or d[seg] == 95):
                return opens, False, False
            seg = j + 1
    last = k
    while last > m and d[last - 1] != 46:
        last -= 1
    for w in range(suffixes.shape[0]):
        s_len = suffixes[w, 15]
        if k - last > s_len and _starts(d, k - s_len, suffixes[w, :s_len]):
            return opens, True, False
    return opens, False, False


_NCCL_INFO = np.frombuffer(b"] NCCL INFO ", np.uint8).copy()


@njit(cache=True)
def _nccl_info(d, at, f):  # pragma: no cover - compiled
    """`nccl.FAST` at `d[at:]` (`host:pid:tid [dev] NCCL INFO `), the host a plain ASCII name
    starting with a letter (any other goes the general way): host end, NCCL pid, device and
    message start into `f`; message start -1 when the message is an error-propagation line
    (`nccl.PROPAGATE`, which the general path reads) or may be one. False when no match."""
    n = len(d)
    k = at
    if not (k < n and ((65 <= d[k] <= 90) or (97 <= d[k] <= 122))):
        return False
    while k < n and (_is_word_byte(d[k]) or d[k] == 46 or d[k] == 45):
        k += 1
    if not (k < n and d[k] == 58):
        return False
    f[HOST_END] = k
    k += 1
    f[NPID_AT] = k
    k = _digits_end(d, k)
    if k == f[NPID_AT] or not (k < n and d[k] == 58):
        return False
    f[NPID_END] = k
    k += 1
    t = k
    k = _digits_end(d, k)
    if k == t or not (k + 1 < n and d[k] == 32 and d[k + 1] == 91):
        return False
    k += 2
    v = k
    dev = 0
    while k < n and 48 <= d[k] <= 57:
        dev = min(dev * 10 + (d[k] - 48), 1 << 40)
        k += 1
    if k == v or not _starts(d, k, _NCCL_INFO):
        return False
    f[DEV] = dev if dev <= 2147483647 else -1  # `cast(pl.Int32, strict=False)`: null when it overflows
    m = k + len(_NCCL_INFO)
    f[MSG_AT] = m
    # `nccl.PROPAGATE` (`^[\\w./\\-]+:\\d+ -> \\d+`) on the message: a match goes the general way.
    j = m
    while j < n and (_is_word_byte(d[j]) or d[j] == 46 or d[j] == 47 or d[j] == 45):
        j += 1
    if j < n and d[j] >= 128:
        f[MSG_AT] = -1  # \\w takes other scripts' letters: unsure
    elif j > m and j < n and d[j] == 58:
        j += 1
        e = j
        j = _digits_end(d, j)
        if j < n and d[j] >= 128:
            f[MSG_AT] = -1  # another script's digit would do for \\d
        elif j > e and _starts(d, j, _ARROW) and j + 4 < n and (48 <= d[j + 4] <= 57 or d[j + 4] >= 128):
            f[MSG_AT] = -1
    return True


_ARROW = np.frombuffer(b" -> ", np.uint8).copy()


_CLASS = np.zeros(256, np.uint8)
_CLASS[[13, 27]] = 1  # CR, ESC
_CLASS[ord("[")] = 2  # ANSI residue `[0;36m`
_CLASS[ord("]")] = 3  # `across cluster]`
_CLASS[[w[0] for w in _LEVELS]] = 4  # a level word: maybe a glued record
"""Bytes `_hazard` looks at; every other byte (most of a line) costs one table lookup."""
_ACROSS = np.frombuffer(b"across cluster]", np.uint8).copy()


@njit(cache=True)
def _hazard(d, at, vllm_line, levels, cls, across):  # pragma: no cover - compiled
    """Anything in `d[at:]` another layer of the general path would react to: CR, ESC, ANSI
    residue `[0;36m`, Ray's `across cluster]`, and (vLLM lines) what could be a second glued
    record."""
    n = len(d)
    if n >= 2 and d[n - 2] == 94 and d[n - 1] == 77:  # `^M` at the end
        return True
    k = at - 1
    while True:
        k += 1
        # Most bytes are none of these: skipped in a loop of their own. (As a `continue` in one
        # loop over all bytes, the class test compiled to a jump table taken for every byte, and
        # the scan ran at half this speed.)
        while k < n and cls[d[k]] == 0:
            k += 1
        if k >= n:
            return False
        c = cls[d[k]]
        if c == 1:
            return True
        if c == 2:  # `[digits;...m`
            j = k + 1
            while j < n and ((48 <= d[j] <= 57) or d[j] == 59):
                j += 1
            if j > k + 1 and j < n and d[j] == 109:
                return True
        elif c == 3:  # the `]` of `across cluster]`, compared backwards (`]` is rarer than `a`)
            m = len(across)
            if k + 1 >= m:
                same = True
                for z in range(1, m):
                    if d[k - z] != across[m - 1 - z]:
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


# Columns of `_classify`'s field table (character offsets into the line; -1: none).
LEVEL, MO, DAY, HOUR, MIN, SEC, COMP_AT, COMP_END, HDR_END, MSG_AT, RID_AT, RID_END = range(12)
METH_AT, METH_END, PATH_AT, PATH_END, STATUS, BODY_AT = range(12, 18)
HOST_END, NPID_AT, NPID_END, DEV, US, SRC = range(18, 24)
SY_DAY_AT, SY_DAY_END, SY_TIME_AT, SY_FRAC_AT, SY_FRAC_END, YEAR, MSG_END, RANK_AT, RANK_END = range(24, 33)
N_FIELDS = 33


SPAN_NAMES = (
    s.PROCESS,
    "_pid",
    s.MESSAGE,
    "_hdr",
    s.REQUEST_ID,
    s.COMPONENT,
    s.HTTP_METHOD,
    s.HTTP_PATH,
    s.HOST,
    "_rank",
)
"""The string fields `_spans` finds, in the order of its rows. The general path adds process,
pid and message always (and `body`, the line less its wrappers, which nothing reads of a
line this lane takes: left out); `_hdr` with any vLLM line; the request id when `_request_id`
ran on some vLLM line; the component with any vLLM or access line; method and path with
any access line; the host with any NCCL line (a column no line has is left out later
anyway: see `lines.ALWAYS`)."""


_MSG = SPAN_NAMES.index(s.MESSAGE)
HELD = frozenset((s.MESSAGE, s.REQUEST_ID, s.HTTP_PATH, s.HOST))
"""Span columns the table keeps as strings (`Text.cut_spans` copies them); the others are
working columns or become categories, and stay views into the lines."""
NUMBERS = (LEVEL, MO, DAY, HOUR, MIN, SEC, STATUS, DEV, US, SRC, YEAR)
"""The numeric fields `_spans` hands on, in the order of its rows."""
SOURCES = ("vllm", "uvicorn", "nccl", "kubelet", "torch", "klog", "kv-store")
"""Source of each code: a lane's (`lane - 1`; an LMCache line's 6, a c10d line's 4), or for a
klog line `k8s.parse_klog`'s choice (`3 + SRC`)."""
KINDS = ("vllm", "uvicorn", "nccl", "klog", "pylog", "torch")
"""`lines.KINDS`' name of each lane (`lane - 1`)."""


@njit(cache=True, nogil=True)
def _spans(rows, lane, fields, proc_at, proc_end, pid_at, pid_end, length):  # pragma: no cover - compiled
    """(at, end) of each of `SPAN_NAMES` (a matrix column each, a row per taken row: how
    `Text.cut_spans` reads them) for the taken `rows`, at -1 for null; and their `NUMBERS`
    fields (a matrix row each)."""
    m = len(rows)
    at = np.full((m, len(SPAN_NAMES)), -1, np.int32)
    end = np.zeros((m, len(SPAN_NAMES)), np.int32)
    number = np.empty((len(NUMBERS), m), np.int32)
    for k in range(m):
        r = rows[k]
        f = fields[r]
        for j in range(len(NUMBERS)):
            number[j, k] = f[NUMBERS[j]]
        if pid_end[r] > 0:
            at[k, 0], end[k, 0] = proc_at[r], proc_end[r]
            at[k, 1], end[k, 1] = pid_at[r], pid_end[r]
        if lane[r] == NCCL:  # NCCL's own `host:pid:tid` (its pid replaces a prefix's, as `nccl.parse` does)
            at[k, 1], end[k, 1] = f[NPID_AT], f[NPID_END]
            at[k, 8], end[k, 8] = f[BODY_AT], f[HOST_END]
        if lane[r] == KLOG:  # the syslog host, and klog's file as the component
            at[k, 8], end[k, 8] = f[BODY_AT], f[HOST_END]
            at[k, 5], end[k, 5] = f[COMP_AT], f[COMP_END]
        if lane[r] == KV and f[COMP_AT] >= 0:  # the ` (file.py:N:logger)` tail's file
            at[k, 5], end[k, 5] = f[COMP_AT], f[COMP_END]
        if lane[r] == TORCH:  # the `[rankN]:` prefix's rank, and the c10 file as the component
            at[k, 5], end[k, 5] = f[COMP_AT], f[COMP_END]
            at[k, 9], end[k, 9] = f[RANK_AT], f[RANK_END]
        at[k, 2], end[k, 2] = f[MSG_AT], (f[MSG_END] if f[MSG_END] >= 0 else length[r])
        if lane[r] == VLLM:
            at[k, 3], end[k, 3] = f[BODY_AT], f[HDR_END]
            if f[RID_AT] >= 0:
                at[k, 4], end[k, 4] = f[RID_AT], f[RID_END]
            at[k, 5], end[k, 5] = f[COMP_AT], f[COMP_END]
        elif f[METH_AT] >= 0:
            at[k, 6], end[k, 6] = f[METH_AT], f[METH_END]
            at[k, 7], end[k, 7] = f[PATH_AT], f[PATH_END]
    return at, end, number


@njit(cache=True)
def _cri_tag(d, at):  # pragma: no cover - compiled
    """At `d[at:]` after a stamp: (stream 0 stdout / 1 stderr, tag byte, where the line starts) of a
    CRI `stdout F ` / `stderr P ` head (options `F:x` allowed), or (-1, 0, at); (2, P, at) when a
    non-ASCII byte leaves unsure whether it is one."""
    if at + 8 > len(d) or d[at + 6] != 32:
        return -1, 0, at
    word = -1
    if d[at] == 115 and d[at + 1] == 116 and d[at + 2] == 100:  # `std`
        if d[at + 3] == 111 and d[at + 4] == 117 and d[at + 5] == 116:  # `out`
            word = 0
        elif d[at + 3] == 101 and d[at + 4] == 114 and d[at + 5] == 114:  # `err`
            word = 1
    tag = d[at + 7]
    if word < 0 or not (tag == 70 or tag == 80):  # F, P
        return -1, 0, at
    j = at + 8
    if j < len(d) and d[j] == 58:  # `:options`, \\S*
        while j < len(d) and not _is_space(d[j]):
            if d[j] >= 128:  # maybe Unicode whitespace: unsure whether this is a CRI line at all
                return 2, 80, at
            j += 1
    if j == len(d) or d[j] == 32:
        return word, tag, j + 1
    return -1, 0, at


@njit(cache=True)
def _process_prefix(d, at):  # pragma: no cover - compiled
    """The prefix `(Name[ rank=N] pid=N[, ip=a.b.c.d])` at `d[at]`, with one space after it: the
    name's and the pid's spans and where the rest of the line begins (-1: no such prefix). The
    name as `wrappers.PROCESS_NAME` has it: a letter, then word bytes, `.`, `:` or `-`."""
    j = at + 1
    if not (j < len(d) and ((65 <= d[j] <= 90) or (97 <= d[j] <= 122))):
        return 0, 0, 0, 0, -1
    while j < len(d) and (_is_word_byte(d[j]) or d[j] == 46 or d[j] == 58 or d[j] == 45):
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
        return 0, 0, 0, 0, -1
    if not (d[j + 3] == 100 and d[j + 4] == 61):  # ` pid=`
        return 0, 0, 0, 0, -1
    j += 5
    q0 = j
    while j < len(d) and 48 <= d[j] <= 57:
        j += 1
    q1 = j
    if q1 == q0:
        return 0, 0, 0, 0, -1
    if j + 5 < len(d) and d[j] == 44:  # `, ip=1.2.3.4`
        if not (d[j + 1] == 32 and d[j + 2] == 105 and d[j + 3] == 112 and d[j + 4] == 61):
            return 0, 0, 0, 0, -1
        j += 5
        m = j
        while j < len(d) and ((48 <= d[j] <= 57) or d[j] == 46):
            j += 1
        if j == m:
            return 0, 0, 0, 0, -1
    if not (j < len(d) and d[j] == 41):  # `)`
        return 0, 0, 0, 0, -1
    return p0, p1, q0, q1, j + 1 + (1 if j + 1 < len(d) and d[j + 1] == 32 else 0)


@njit(cache=True, nogil=True)  # parse batches run on threads: let them run at once
def _classify(
    addr,
    size,
    buf,
    start,
    length,
    file,
    levels,
    uvicorn_levels,
    verbs,
    cls,
    across,
    traceback,
    suffixes,
    heads,
    months,
    kubelet_files,
    kv_levels,
    nested_max,
):  # pragma: no cover
    n = len(length)
    lane = np.zeros(n, np.int8)
    us = np.zeros(n, np.int64)
    has_ts = np.zeros(n, np.bool_)
    ts_ok = np.zeros(n, np.bool_)
    proc_at = np.zeros(n, np.int32)
    proc_end = np.zeros(n, np.int32)
    pid_at = np.zeros(n, np.int32)
    pid_end = np.zeros(n, np.int32)
    fields = np.full((n, N_FIELDS), -1, np.int32)  # (offsets into a line: a line is < 2 GiB)
    stream = np.full(n, -1, np.int8)
    opens = np.zeros(n, np.bool_)
    cont = np.zeros(n, np.bool_)
    acc = np.zeros(5, np.int64)
    # CRI partial lines: a `P` line and the lines of its stream up to an `F` are one event,
    # which the general path reassembles. It must see the whole run, so an `F` line whose
    # stream's previous CRI line was `P` (or might have been) is left to it.
    last_tag = np.zeros(2, np.uint8)
    last_file = -1
    for i in range(n):
        if file[i] != last_file:
            last_file = file[i]
            last_tag[:] = 0
        data = bytes_at(addr[buf[i]], size[buf[i]])
        d = data[start[i] : start[i] + length[i]]
        at = 0
        if len(d) >= 20 and 48 <= d[0] <= 57:
            end, t, ok = _stamp(d)
            if end == -1:
                for k in range(min(len(d), 48)):
                    if d[k] >= 128:  # a stamp in another script's digits (\\d): maybe a CRI line
                        last_tag[:] = 80
                continue
            word, tag, body_at = _cri_tag(d, (-end - 2 if end < -1 else end) + 1)
            if word == 2:
                last_tag[:] = 80
                continue
            if word >= 0:
                follows_partial = last_tag[word] == 80
                last_tag[word] = tag
                # Only a plain `F` head (no options, text after it) outside a partial run.
                if tag != 70 or follows_partial or body_at != (-end - 2 if end < -1 else end) + 10:
                    continue
                if body_at > len(d):
                    continue
            if end < -1:
                continue
            if word >= 0:
                stream[i] = word
            at = body_at
            has_ts[i] = True
            ts_ok[i] = ok
            us[i] = t
        f = fields[i]
        if at == 0 and len(d) and 65 <= d[0] <= 90:  # a month name: maybe `journalctl -u kubelet`
            p0, p1, q0, q1 = _syslog_klog(d, f, months, kubelet_files)
            if p0 >= 0:
                if _hazard(d, f[MSG_AT], False, levels, cls, across):
                    continue
                o, c, unsure = _block_flags(d, f[MSG_AT], traceback, suffixes, heads)
                if unsure:
                    continue
                opens[i], cont[i] = o, c
                lane[i] = KLOG
                proc_at[i], proc_end[i], pid_at[i], pid_end[i] = p0, p1, q0, q1
                continue
            f[:] = -1  # (what it wrote before it found no such line)
        p0 = p1 = q0 = q1 = 0
        nested = 0
        while (
            at < len(d) and d[at] == 40 and nested < nested_max
        ):  # (innermost last: `wrappers.prefixes._peel_process`)
            p0, p1, q0, q1, at = _process_prefix(d, at)
            if at < 0:
                break
            nested += 1
        if at < 0:
            continue
        f[BODY_AT] = at
        f_at, colon, close = _vllm_fast(d, at, levels)
        if close >= 0:
            kind = VLLM
            w = _word_at(d, at, levels)
            for code in range(levels.shape[0]):
                if levels[code, 8] == w and d[at] == levels[code, 0]:
                    f[LEVEL] = code
            j = at + w
            f[MO], f[DAY] = _num(d, j + 1, 2), _num(d, j + 4, 2)
            f[HOUR], f[MIN], f[SEC] = _num(d, j + 7, 2), _num(d, j + 10, 2), _num(d, j + 13, 2)
            f[COMP_AT], f[COMP_END], f[HDR_END] = f_at, colon, close
            f[MSG_AT] = min(close + 2, len(d))
            f[RID_AT], f[RID_END] = _request_id(d, f[MSG_AT], verbs)
            if f[RID_AT] == -2:
                continue
        elif _nccl_info(d, at, f):
            kind = NCCL
            f[LEVEL] = 1  # INFO
            if f[MSG_AT] < 0:
                continue
        elif at + 1 < len(d) and d[at] == 91 and d[at + 1] == 114 and _c10d(d, at, f):  # `[r`
            kind = TORCH
        elif at < len(d) and d[at] == 91 and _lmcache(d, at, f, kv_levels):
            kind = KV
            if f[MSG_AT] < 0:
                continue
        else:
            w = _word_at(d, at, uvicorn_levels)
            if not (w and at + w + 1 < len(d) and d[at + w] == 58 and d[at + w + 1] == 32):
                continue
            kind = UVICORN
            for code in range(uvicorn_levels.shape[0]):
                if uvicorn_levels[code, 8] == w and d[at] == uvicorn_levels[code, 0]:
                    f[LEVEL] = code
            m = at + w + 1
            while m < len(d) and d[m] == 32:  # strip_chars_start(" ")
                m += 1
            f[MSG_AT] = m
            acc[:] = -1
            if _access(d, m, acc):
                if acc[0] == -2:
                    continue
                f[METH_AT], f[METH_END], f[PATH_AT], f[PATH_END], f[STATUS] = acc[0], acc[1], acc[2], acc[3], acc[4]
        # The head up to the message was read byte by byte above (stamp, CRI head, prefix, the
        # producer's fields): only the message can hold what another layer reacts to.
        if _hazard(d, f[MSG_AT], kind == VLLM, levels, cls, across):
            continue
        # (the message ends before LMCache's ` (file.py:N)` tail)
        o, c, unsure = _block_flags(d[: f[MSG_END]] if f[MSG_END] >= 0 else d, f[MSG_AT], traceback, suffixes, heads)
        if unsure:
            continue
        opens[i], cont[i] = o, c
        lane[i] = kind
        proc_at[i], proc_end[i], pid_at[i], pid_end[i] = p0, p1, q0, q1
    return lane, us, has_ts, ts_ok, proc_at, proc_end, pid_at, pid_end, fields, stream, opens, cont
