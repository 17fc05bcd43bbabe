"""Turn a frame of physical lines into events: peel wrappers, classify, parse, fold.

Input: `_fid` (file id), `_seg` (segment of a large file), `line` (1-based), `body`.
Output: one row per event with the parsers' columns, time parts and accounting flags.

Common shapes first: `parsers._compiled.fastlane` takes the lines it is sure of (stamp, process
prefix, vLLM, uvicorn or NCCL INFO line, nothing unusual) and parses them in one compiled
pass, as the producers' parsers would; the general path below sees only the rest, and
those lines meet again in `_fold`, which merges both in file order.

Why partitions: every producer regex is run only on the lines classified as that
producer, by cheap anchored `DETECT` patterns tried in order of frequency on the lines
still unclaimed. Polars strings are views, so each filter is cheap, and a directory of
mostly vLLM lines never pays for the klog or Kubernetes regexes.

Folding (multi-line events): within a *stream* — same file segment, process prefix,
pid and rank — a line is folded into the previous event when it is

* blank, or a header row of an events table (no text of its own), or a paste's code fence
  (which also ends the block above it);
* a traceback/C++ stack body or an exception's later lines (`  File ...`, `Traceback ...`,
  `frame #3:`, `^^^^`, `For debugging consider passing CUDA_LAUNCH_BLOCKING=1`: `continuation`);
* a bare exception line (`ValueError: ...`) while a traceback is open;
* an unrecognised line after an event whose message opens a block (ends with `:`);
* a vLLM line repeating the previous line's header (NewLineFormatter's continuation),
  when the previous line ended in `\\r` (often lost: pastes, shippers) or this one looks
  like a continuation, an exception line or a blank line of the message.

`parsers._compiled.folding` decides these rules for a whole batch in one compiled scan.
"""

from __future__ import annotations

import functools
import operator

import numpy as np
import polars as pl
from numba import njit

from parsers import (
    applog,
    continuation,
    envoy,
    k8s,
    logfmt,
    nccl,
    nginx,
    progress,
    pylog,
    rayserve,
    sglang,
    torch,
    trtllm,
    ucx,
    uvicorn,
    vllm,
    wrappers,
)
from parsers import schema as s
from parsers._common import SYSLOG_LEVEL_WORDS, apply, ensure, level_from_word, no_time
from parsers._compiled import fastlane, folding
from parsers.arrow_text import Text, bytes_at
from parsers.frame import TIME_PARTS

FENCE = r"^\s*(?:(?:```|~~~)[\w+\-. ]*|</?details>|<summary>.*</summary>)\s*$"
"""A Markdown code fence (```` ```text ````) or a `<details>` fold around a log pasted into an
issue: no line of the log. It folds (counted, its text not kept) and ends the block above
it: prose after a pasted traceback is no part of it."""

KINDS: list[tuple[str, str]] = [
    ("vllm", vllm.DETECT),
    ("uvicorn", uvicorn.DETECT),
    ("envoy", envoy.DETECT),
    ("nginx", nginx.DETECT_ACCESS),
    ("nginx_error", nginx.DETECT_ERROR),
    ("nccl", nccl.DETECT),
    ("ucx", ucx.DETECT),
    ("blank", r"^\s*$"),
    ("fence", FENCE),
    ("torch", torch.DETECT),
    ("flight", torch.DETECT_FLIGHT),
    ("ras", nccl.DETECT_RAS),
    ("klog", k8s.DETECT_KLOG),
    ("vllm_custom", vllm.DETECT_CUSTOM),
    ("sglang", sglang.DETECT),
    ("trtllm", trtllm.DETECT),
    ("rayserve", rayserve.DETECT),
    ("applog", applog.DETECT),
    ("pylog", pylog.DETECT),
    ("pylog_basic", pylog.DETECT_BASIC),
    ("pywarn", pylog.DETECT_WARNING),
    ("logfmt", logfmt.DETECT),
    ("k8s_describe", k8s.DETECT_DESCRIBE),
    ("k8s_table", k8s.DETECT_TABLE),
    ("k8s_pods", k8s.DETECT_PODS),
    ("k8s_nodes", k8s.DETECT_NODES),
    ("stern_notice", k8s.DETECT_STERN_NOTICE),
    ("k8s_header", k8s.DETECT_TABLE_HEADER),
    ("dump", k8s.DETECT_DUMP),
    ("exc", pylog.DETECT_EXC),
    ("k8s_field", k8s.DETECT_DESCRIBE_FIELD),
    ("k8s_cstate", k8s.DETECT_CONTAINER_STATE),
    ("k8s_ncond", k8s.DETECT_NODE_CONDITION),
    ("progress", progress.DETECT),
    ("cont", continuation.LINE),
]
"""(kind, detect regex), tried in this order on the lines not yet claimed."""

PARSERS = {
    "vllm": vllm.parse,
    "vllm_custom": lambda d: vllm.parse(d, custom=True),
    "uvicorn": uvicorn.parse,
    "sglang": sglang.parse,
    "trtllm": trtllm.parse,
    "rayserve": rayserve.parse,
    "envoy": envoy.parse,
    "nginx": nginx.parse_access,
    "nginx_error": nginx.parse_error,
    "nccl": nccl.parse,
    "ucx": ucx.parse,
    "torch": torch.parse,
    "flight": torch.parse_flight,
    "ras": nccl.parse_ras,
    "klog": k8s.parse_klog,
    "applog": applog.parse,
    "pylog": pylog.parse,
    "pylog_basic": pylog.parse_basic,
    "pywarn": pylog.parse_warning,
    "logfmt": logfmt.parse,
    "k8s_describe": k8s.parse_describe,
    "k8s_table": k8s.parse_table,
    "k8s_header": k8s.parse_structure,
    "k8s_pods": k8s.parse_pods,
    "k8s_nodes": k8s.parse_nodes,
    "stern_notice": k8s.parse_stern_notice,
    "k8s_field": k8s.parse_describe_field,
    "k8s_cstate": k8s.parse_container_state,
    "k8s_ncond": k8s.parse_node_condition,
    "dump": k8s.parse_dump_marker,
    "exc": pylog.parse_exception,
    "progress": progress.parse,
}

WORKING_COLUMNS = (
    "body",
    "_text",
    "_hdr",
    "_cr",
    "_open",
    "_sid",
    "_prefixed",
    "_jiso",
    "_tag",
    "_exc",
    "_structure",
    "_pfold",
    "_cstate",
    "_kcode",
    "_jsrc",
)
"""Per-line working state dropped once events are formed: keeping `body` and `_text` would
hold a second and third copy of every line until the end of ingest."""
PREFIX_KEY = ["_fid", "_seg", "_wpod", "_wcont", s.PROCESS, "_pid", "_rank"]
"""Lines with a pod, process or rank prefix continue that prefix's stream; un-prefixed lines
(C-level writes such as NCCL or `terminate called ...`, which bypass Python's prefixing)
continue the physically previous event of the file."""


def parse_lines(lines: pl.DataFrame, fast_lane: bool = True) -> pl.DataFrame:
    """Parse a frame of physical lines (see module docstring) into an events frame.

    `fast_lane=False` leaves every line to the general path: the same events (tests hold the
    lane to it), without compiling the lane (`forensics.ingestion.batches.SPEED_PASSES_MIN_CHARS`).
    """
    body = Text(lines["body"])  # (read by both compiled passes)
    df = lines.with_row_index("_row").with_columns(pl.Series("_cr", _ends_in_cr(*body.where)))
    fast, df = fastlane.split(df, body) if fast_lane else (df.clear(), df)
    if df.is_empty():  # (the lane took every line: the general path's few dozen passes over no rows cost ~5 ms)
        slow, spaced = _of_no_rows(_general_path, tuple(df.schema.items()))[0], False
    else:
        slow, spaced = _general_path(df)
    if spaced:
        fast = fast.with_columns((pl.col("_row").cast(pl.UInt64) * GLUE_STRIDE).alias("_row"))
    events = k8s.described_objects(k8s.node_conditions(k8s.container_states(_fold(fast, slow))))
    return events.drop([c for c in WORKING_COLUMNS if c in events.columns])


@functools.lru_cache(maxsize=16)
def _of_no_rows(parse, schema: tuple[tuple[str, pl.DataType], ...]):
    """What `parse` (`_general_path`, `_form_events`) makes of a frame of no rows: only its
    columns, which depend on the frame's alone, so it is computed once per schema."""
    return parse(pl.DataFrame(schema=dict(schema)))


def _general_path(df: pl.DataFrame) -> tuple[pl.DataFrame, bool]:
    """The lines the fast lane left, parsed: wrappers peeled, glued records split, each
    producer's probe and parser in turn (`KINDS`). Also whether glued lines were split (then
    `_row` is spaced by `GLUE_STRIDE`)."""
    df = wrappers.peel(df)
    df, spaced = _split_glued(df)
    if "_pfold" not in df.columns:
        df = df.with_columns(pl.lit(0, pl.UInt32).alias("_pfold"))
    parts: list[pl.DataFrame] = []
    pending = df
    if "_jsrc" in df.columns:
        # A log store's Kubernetes event (`wrappers.records.json_record`) is parsed already: its
        # `Reason: message` is no producer's line, though it can look like one
        # (`CreateContainerConfigError: ...` like a Python exception, which would open a block).
        event = pending.select(pl.col("_jsrc") == "k8s-event").to_series().fill_null(False)
        if event.any():
            parts.append(
                pending.filter(event).with_columns(
                    pl.lit("k8s-event").alias(s.SOURCE),
                    pl.col("body").alias(s.MESSAGE),
                    pl.lit("k8s_record").alias("_kind"),
                    *no_time(),
                )
            )
            pending = pending.filter(~event)
        producer = pending.select(pl.col("_jsrc").is_in(RECORD_PARSERS)).to_series().fill_null(False)
        if producer.any():
            parts.append(_producer_records(pending.filter(producer)))
            pending = pending.filter(~producer)
    for kind, detect in KINDS:
        if pending.is_empty():
            break
        hit = pending.select(pl.col("body").str.contains(detect)).to_series()
        if not hit.any():
            continue
        claimed = pending.filter(hit)
        pending = pending.filter(~hit)
        parser = PARSERS.get(kind)
        if parser is None:
            parts.append(claimed.with_columns(pl.lit(kind).alias("_kind")))
            continue
        parsed = parser(claimed)
        ok = parsed[s.SOURCE].is_not_null()
        parts.append(parsed.filter(ok).with_columns(pl.lit(kind).alias("_kind")))
        if not ok.all():  # (a parser may reorder its rows: `_common.apply`; `_row` says which were refused)
            refused = claimed.join(parsed.filter(~ok).select("_row"), on="_row", how="semi")
            pending = pl.concat([pending, refused], how="diagonal_relaxed")
    # A journald/syslog line whose body is no known producer is still a parsed syslog event
    # (kernel NVRM/Xid, containerd, systemd): the wrapper gave its time, host and ident.
    sys_hit = pending.select(
        (pl.col("_syslog").is_not_null() | pl.col("_journal").is_not_null())
        & ~pl.col("body").str.contains(continuation.LINE)
    ).to_series()
    if sys_hit.any():
        sysl = pending.filter(sys_hit)
        pending = pending.filter(~sys_hit)
        parts.append(
            sysl.with_columns(
                pl.when(pl.col(s.PROCESS) == "kernel")
                .then(pl.lit("kernel"))
                .otherwise(pl.lit("syslog"))
                .alias(s.SOURCE),
                level_from_word(
                    pl.col("body").str.extract(
                        r"(?i)\b(emerg|alert|crit|err|error|warn|warning|notice|info|debug)\b", 1
                    ),
                    SYSLOG_LEVEL_WORDS,
                ).alias(s.LEVEL),
                pl.col("body").alias(s.MESSAGE),
                pl.lit("syslog").alias("_kind"),
                *no_time(),
            )
        )
    parts.append(pending.with_columns(pl.lit("other").alias("_kind")))
    return _record_times(pl.concat(parts, how="diagonal_relaxed").sort("_row")), spaced


RECORD_PARSERS = {
    "vllm": lambda d: apply(d, pl.col(s.MESSAGE).str.contains(vllm.REQUEST_PROBE), vllm.request_id),
    "uvicorn": lambda d: apply(d, pl.col(s.MESSAGE).str.contains(uvicorn.ACCESS_PROBE), uvicorn.access),
    "kv-store": lambda d: d,
}
"""What a producer's JSON record (`wrappers.LOGGER_SOURCES`) still needs of its producer's
parser: its level, logger and time came with it, its message is the text line's message."""


def _producer_records(d: pl.DataFrame) -> pl.DataFrame:
    """Records of a Python logger whose producer is known (`_jsrc`: `wrappers.LOGGER_SOURCES`)
    as that producer's events. Their message is offered to no other producer's regexes: a vLLM
    logger's message is vLLM's, even where it reads like another format's line."""
    d = d.with_columns(
        pl.col("_jsrc").alias(s.SOURCE), pl.col("body").alias(s.MESSAGE), pl.lit("record").alias("_kind"), *no_time()
    )
    return pl.concat(
        [fn(d.filter(pl.col(s.SOURCE) == src)) for src, fn in RECORD_PARSERS.items()], how="diagonal_relaxed"
    )


def _record_times(df: pl.DataFrame) -> pl.DataFrame:
    """A JSON record's local time (`wrappers.RECORD_TIME_PARTS`) as the line's time parts,
    over the producer's: the record's time is the line's, as a wrapper's is (a record of an
    NCCL line has no time in the line at all)."""
    jparts = wrappers.RECORD_TIME_PARTS
    if jparts["_mo"] not in df.columns:
        return df
    df = ensure(df, {p: pl.Int32 for p in TIME_PARTS})
    given = pl.col(jparts["_mo"]).is_not_null()
    return df.with_columns(
        pl.when(given).then(pl.col(j)).otherwise(pl.col(p)).alias(p) for p, j in jparts.items()
    ).drop(jparts.values())


GLUE_STRIDE = 1024
"""`_row` spacing made when glued lines are split: record i of line r gets r * GLUE_STRIDE + i."""


def _split_glued(df: pl.DataFrame) -> tuple[pl.DataFrame, bool]:
    """Split physical lines holding several glued vLLM records; extra records get `_extra`.
    The flag says whether `_row` was spaced out by `GLUE_STRIDE` (rows parsed apart must be too)."""
    # Only a line starting with a vLLM record can carry a second one glued to it (the glued
    # pattern, unanchored, is searched on those alone: on every line it cost ~20 ms a batch).
    detected = df.select(pl.col("body").str.contains(vllm.DETECT)).to_series().to_numpy()
    if not detected.any():
        return df, False
    glued = df.filter(pl.Series(detected)).select(pl.col("body").str.contains(vllm.GLUED)).to_series().to_numpy()
    if not glued.any():
        return df, False
    detected[detected] = glued
    hit = pl.Series(detected)
    # `_row` identifies an event head in `_fold` and orders the batch: spacing every row by
    # GLUE_STRIDE leaves room for the split records in file order without renumbering (or
    # re-sorting) the whole batch; `_row` need not be contiguous.
    rest = df.filter(~hit).with_columns((pl.col("_row").cast(pl.UInt64) * GLUE_STRIDE).alias("_row"))
    rows = []
    for row in df.filter(hit).iter_rows(named=True):
        parts = vllm.split_glued([row["body"]])
        if len(parts) > GLUE_STRIDE:
            parts = parts[: GLUE_STRIDE - 1] + ["".join(parts[GLUE_STRIDE - 1 :])]
        base = row["_row"] * GLUE_STRIDE
        rows += [row | {"body": part, "_extra": i > 0, "_row": base + i} for i, part in enumerate(parts)]
        if "_pfold" in row:  # (a CRI line's pieces joined once: counted on its first record, not on each)
            for extra in rows[len(rows) - len(parts) + 1 :]:
                extra["_pfold"] = 0
    return pl.concat([rest, pl.DataFrame(rows, schema=rest.schema)], how="diagonal_relaxed"), True


@njit(cache=True, nogil=True)
def _ends_in_cr(address, size, buf, start, length):  # pragma: no cover - compiled
    """Whether each line ends in `\\r` or a pasted `^M` (a line ending vLLM's NewLineFormatter
    continues): two `str.ends_with` passes cost ~5 ms per 100,000 lines, this ~0.3."""
    out = np.zeros(len(length), np.bool_)
    for i in range(len(length)):
        n = length[i]
        if n == 0:
            continue
        d = bytes_at(address[buf[i]], size[buf[i]])
        e = start[i] + n
        out[i] = d[e - 1] == 13 or (n >= 2 and d[e - 2] == 94 and d[e - 1] == 77)
    return out


FOLD_INPUTS = ("_kcode", "_prefixed", "_sid", "_fid", "_seg", "_open", "_cr", "_hdr", "_msgcont", "_row")
"""What `folding.fold_and_event` reads of every line."""


def _fold(fast: pl.DataFrame, slow: pl.DataFrame) -> pl.DataFrame:
    """Fold continuation lines into their events; see the module docstring for the rules.

    `fast`: the fast lane's lines (`fastlane.split`, which gave them `_open`, `_msgcont` and
    `_prefixed`); `slow`: the others, parsed. Each sorted by `_row` (file order). The fold
    scan sees both in file order, through their narrow fold inputs alone; a fast line that
    neither folds nor is folded into (almost all of them) is then an event as it stands,
    and only the others go through the general forming of events. Un-prefixed lines look
    at the physically previous line of the file; prefixed lines at the previous line of
    their own prefix stream (`_sid`, a hash of the prefix key).
    """
    slow = ensure(
        slow, {s.MESSAGE: pl.String, s.SOURCE: pl.String, "_hdr": pl.String, **{c: pl.Int32 for c in TIME_PARTS}}
    )
    kind = pl.col("_kind")
    msg = pl.col(s.MESSAGE)
    prefixed = pl.col(s.PROCESS).is_not_null() | pl.col("_rank").is_not_null() | pl.col("_wpod").is_not_null()
    text = pl.when(kind.is_in(["other", "cont", "blank", "fence", "k8s_header"])).then(pl.col("body")).otherwise(msg)
    is_open = (
        kind.is_in(["cont", "exc", "flight", "ras"])  # (a flight-recorder finding, a RAS block: details follow)
        | text.str.strip_chars_end().str.ends_with(":")
        | msg.str.starts_with("Traceback (most recent")
    )
    slow = slow.with_columns(
        folding.kind_code(kind).alias("_kcode"),
        text.alias("_text"),
        is_open.alias("_open"),
        prefixed.alias("_prefixed"),
        (msg.str.contains(continuation.MESSAGE) | msg.str.contains(pylog.DETECT_EXC))
        .fill_null(False)
        .alias("_msgcont"),
    )
    # Only which lines share a `_sid` is read (within the batch): the key's columns hashed one by
    # one, each with a seed of its own, and combined cost ~40% of hashing them as a struct.
    sid = functools.reduce(operator.xor, [pl.col(c).hash(seed=7 + i) for i, c in enumerate(PREFIX_KEY)]).alias("_sid")
    if fast.is_empty():
        df = slow.with_columns(sid)
        fold, ev = folding.fold_and_event(df)
        events = _form_events(df.with_columns(pl.Series("_fold", fold), pl.Series("_ev", ev)))
        return events.drop(_null_columns(events))
    fast = ensure(fast, {"_hdr": pl.String})
    # One hash over both parts' keys: a prefixed traceback line (slow) continues the stream of
    # the fast line above it only if their `_sid`s are equal.
    keys = [fast.select(PREFIX_KEY)] + ([slow.select(PREFIX_KEY)] if slow.height else [])
    sids = pl.concat(keys, how="vertical_relaxed").select(sid)["_sid"]
    fast = fast.with_columns(sids.head(fast.height))
    slow = slow.with_columns(sids.tail(slow.height))
    narrow = pl.concat(
        [
            fast.select(*FOLD_INPUTS, pl.lit(True).alias("_is_fast")),
            slow.select(*FOLD_INPUTS, pl.lit(False).alias("_is_fast")),
        ],
        how="vertical_relaxed",
    ).sort("_row")
    fold, ev = folding.fold_and_event(narrow)
    is_fast = narrow["_is_fast"].to_numpy()
    grouped = np.isin(ev, np.unique(ev[fold])) if fold.any() else np.zeros(len(ev), np.bool_)
    fast_grouped = grouped[is_fast]  # (both in `_row` order: fast's rows are narrow's fast rows)
    single = (fast.filter(pl.Series(~fast_grouped)) if fast_grouped.any() else fast).with_columns(
        pl.lit(1, pl.UInt32).alias(s.RAW_LINES),  # (fast lines have no CRI pieces: `_pfold` is 0)
        pl.lit(0, pl.UInt32).alias("_nfold"),
        pl.lit(False).alias("_orphan"),
        pl.lit(False).alias("_drop"),
    )
    rest = pl.concat(
        [
            slow.with_columns(pl.Series("_fold", fold[~is_fast]), pl.Series("_ev", ev[~is_fast])),
            (fast.filter(pl.Series(fast_grouped)) if fast_grouped.any() else fast.clear()).with_columns(
                pl.col(s.MESSAGE).alias("_text"),
                pl.Series("_fold", fold[is_fast][fast_grouped]),
                pl.Series("_ev", ev[is_fast][fast_grouped]),
            ),
        ],
        how="diagonal_relaxed",
    ).sort("_row")
    events = _form_events(rest) if rest.height else _of_no_rows(_form_events, tuple(rest.schema.items()))
    # Merged in file order: the one pass over every column of the batch, so without the
    # columns no line of it has (a third of them, in a batch of pod logs) nor the working
    # columns `parse_lines` drops next (but what `k8s.container_states` reads).
    gone = (_null_columns(single, events) & _null_columns(events, single)) | (set(WORKING_COLUMNS) - {"_cstate"})
    gone |= {"_sid", "_prefixed", "_msgcont"}
    out = pl.concat(
        [single.drop(gone & set(single.columns)), events.drop(gone & set(events.columns))], how="diagonal_relaxed"
    )
    return out.sort("_row") if events.height else out


ALWAYS = frozenset(("_row", "_fid", "_seg", s.LINE, "_extra", "_kind", "_orphan", "_drop", "_nfold", "_outer_ts"))
"""Columns `parse_lines` returns even when all null (with source and message); any other
column of only nulls in a batch may be left out (what reads it adds it as nulls)."""


def _null_columns(df: pl.DataFrame, other: pl.DataFrame | None = None) -> set[str]:
    """The columns of `df` with no value (and those of `other` that `df` lacks), but those of
    `ALWAYS`, source and message."""
    nulls = df.null_count().row(0, named=True)
    keep = ALWAYS | {s.SOURCE, s.MESSAGE}
    missing = set(other.columns) - set(df.columns) if other is not None else set()
    return {c for c, n in nulls.items() if n == df.height and c not in keep} | (missing - keep)


def _form_events(df: pl.DataFrame) -> pl.DataFrame:
    """Events of `df` (sorted by `_row`, with its fold inputs and each row's `_fold` and `_ev`)."""
    kind = pl.col("_kind")
    fold, ev = df["_fold"].to_numpy(), df["_ev"].to_numpy()
    # Most batches of service logs fold nothing: then no row needs splitting off or re-sorting.
    in_multi = pl.col("_ev").is_in(pl.Series(np.unique(ev[fold])).implode()) if fold.any() else None
    singles = (df if in_multi is None else df.filter(~in_multi)).with_columns(
        pl.col("_text").alias(s.MESSAGE),
        (1 + pl.col("_pfold")).cast(pl.UInt32).alias(s.RAW_LINES),
        pl.col("_pfold").cast(pl.UInt32).alias("_nfold"),
        pl.lit(False).alias("_orphan"),
    )
    multi = df.clear() if in_multi is None else df.filter(in_multi)
    if multi.height:
        keep_text = ~kind.is_in(["blank", "fence", "k8s_header"])
        first_cols = [c for c in df.columns if c not in ("_ev", "_text", "_fold", "_pfold", s.MESSAGE)]
        # A record glued onto a line that folds is no line of its own: its line is counted
        # once, by the line's first record (`_split_glued`).
        glued_in = pl.col("_fold") & pl.col("_extra").fill_null(False)
        multi = multi.group_by("_ev").agg(
            pl.col("_text").sort_by("_row").filter(keep_text.sort_by(pl.col("_row"))).str.join("\n").alias(s.MESSAGE),
            (pl.len() - glued_in.sum() + pl.col("_pfold").sum()).cast(pl.UInt32).alias(s.RAW_LINES),
            ((pl.col("_fold") & ~glued_in).sum() + pl.col("_pfold").sum()).cast(pl.UInt32).alias("_nfold"),
            pl.col("_fold").sort_by("_row").first().alias("_orphan"),
            *[pl.col(c).sort_by("_row").first() for c in first_cols],
        )
    events = pl.concat([singles, multi], how="diagonal_relaxed").sort("_row") if multi.height else singles
    events = events.drop([c for c in ("_ev", "_text", "_fold", "_sid", "_prefixed", "_msgcont") if c in events.columns])
    # A group that starts with a folded line has no header of its own (stream starts with
    # blank lines or a traceback fragment): keep it as an event unless it is all blank.
    orphan = pl.col("_orphan")
    blank_only = orphan & (pl.col(s.MESSAGE).fill_null("").str.strip_chars() == "")
    traceback_head = pl.col(s.MESSAGE).str.contains(
        r"^(?:Traceback|\s+File |frame #|Exception raised from|terminate called)"
    )
    events = events.with_columns(
        # An orphan's first line was counted as folded; it heads the event instead.
        pl.when(orphan & ~blank_only).then(pl.col("_nfold") - 1).otherwise(pl.col("_nfold")).alias("_nfold"),
        blank_only.alias("_drop"),
    )
    # An application's own JSON record (a level beside its message) that no producer claimed is
    # read all the same: its time, level and logger came with it (`wrappers.records.json_record`); so
    # is a log store's Kubernetes event, with its reason, type, object and count.
    record = pl.col("_jsrc") if "_jsrc" in events.columns else pl.lit(None, pl.String)
    return events.with_columns(
        pl.when(pl.col(s.SOURCE).is_not_null() & ~(orphan & ~blank_only))
        .then(pl.col(s.SOURCE))
        .when(record.is_not_null() & ~orphan)
        .then(record)
        .when(traceback_head)
        .then(pl.lit("python"))
        .otherwise(pl.lit("unknown"))
        .alias(s.SOURCE)
    )
