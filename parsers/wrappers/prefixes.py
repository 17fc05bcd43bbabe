"""The prefixes a collector or a process puts before a producer's line: CRI and `kubectl logs
--timestamps` stamps (with CRI partial lines reassembled), kubectl --prefix, stern and Loki labels,
docker-compose and CI pipes, ANSI colour, vLLM/Ray process prefixes, Python logging and torchrun ranks."""

from __future__ import annotations

import polars as pl

from parsers import schema as s
from parsers._common import apply, extract_head
from parsers.wrappers import records
from parsers.wrappers.heads import (
    ANSI,
    ANSI_RESIDUE,
    COLLECTOR_PROBE,
    KUBECTL_PREFIX_PROBE,
    LOGGING_PREFIX,
    LOGGING_PREFIX_PROBE,
    NESTED_PROCESSES,
    PROC_PROBE,
    RANK,
    RANK_PROBE,
    RAY_DAEMON,
    RAY_DAEMON_PROBE,
    RAY_REPEAT,
    RFC3339_PROBE,
    STERN,
    STERN_NAMES,
    STR,
    TS,
    any_of,
    parse_rfc3339,
)
from parsers.wrappers.host import (
    HOST_TIMES_PROBE,
    JOURNAL_AFTER_RFC3339,
    JOURNAL_JSON_PROBE,
    journald_json,
    peel_host_times,
)
from parsers.wrappers.pastes import PASTED, peel_pasted
from parsers.wrappers.records import RECORD_NAMES, docker_json, json_record

INNER = any_of(PASTED, PROC_PROBE, RAY_DAEMON_PROBE, RANK_PROBE, LOGGING_PREFIX_PROBE)
"""Any layer `_peel_inner` strips (ANSI colour is probed apart: it is not anchored)."""


WRAPPER_COLUMNS: dict[str, pl.DataType] = {
    "_outer_ts": TS,
    s.STREAM: STR,
    "_tag": STR,
    s.HOST: STR,
    s.PROCESS: STR,
    "_pid": STR,
    "_syslog": STR,
    "_rank": STR,
    "_jiso": pl.Boolean,
    "_journal": STR,
    "_wpod": STR,
    "_wns": STR,
    "_wcont": STR,
}
"""`_journal`: which host-log wrapper gave the line its time, host and ident when the body is
no known producer (`json`: journalctl -o json, `iso`: -o short-iso, `dmesg`). `_wpod`,
`_wns`, `_wcont`: Kubernetes metadata a log shipper attached (Fluent Bit, Vector, Loki labels)."""


def peel(df: pl.DataFrame) -> pl.DataFrame:
    """Strip the outer layers of every line (see module docstring); adds wrapper columns."""
    df = df.with_columns([pl.lit(None, t).alias(c) for c, t in WRAPPER_COLUMNS.items()])
    body = pl.col("body")
    # \r from vLLM's NewLineFormatter (`\r\n`) and `^M` in pastes end a line: dropped first.
    df = apply(df, body.str.contains(r"(?:\r|\^M)$"), lambda d: d.with_columns(body.str.replace(r"(?:\r|\^M)+$", "")))
    # Collector wrappers (kubectl --prefix, JSON records, stern) are rare: one probe over every
    # row decides whether any of their four passes runs at all.
    if df.select(body.str.contains(COLLECTOR_PROBE).any()).item():
        df = _peel_collectors(df)
    df = apply(df, body.str.contains(RFC3339_PROBE), _peel_rfc3339)
    # Host-log time modes that name their time alone (dmesg --time-format=iso, journalctl
    # short-full / short-unix / short-monotonic) are rare: one probe decides whether their passes run.
    if df.select(body.str.contains(HOST_TIMES_PROBE).any()).item():
        df = peel_host_times(df)
    df = _reassemble_partials(df)
    # tqdm's in-place redraws (`a\rb\rc`) show their last state: after the stamp and CRI head
    # are read (the runtime stamps the whole line; cutting before them lost its time and
    # stream, and a CRI line so cut no longer ended the partial run before it).
    df = apply(df, body.str.contains("\r", literal=True), lambda d: d.with_columns(body.str.replace(r"^.*\r", "")))
    # One capture-free pass decides which rows need any of the inner layers at all.
    return apply(
        df,
        body.str.contains(INNER) | body.str.contains(r"\x1b|\[[0-9;]+m|across cluster\]") | pl.col("_jiso"),
        _peel_inner,
    )


def _peel_collectors(df: pl.DataFrame) -> pl.DataFrame:
    body = pl.col("body")
    df = apply(
        df,
        body.str.contains(KUBECTL_PREFIX_PROBE),
        lambda d: d.with_columns(
            body.str.extract(r"^\[pod/([^/\]\s]+)/", 1).alias("_wpod"),
            body.str.extract(r"^\[pod/[^/\]\s]+/([^\]\s]+)\] ", 1).alias("_wcont"),
            body.str.replace(KUBECTL_PREFIX_PROBE, ""),
        ),
    )
    json_line = body.str.starts_with('{"')
    journal = body.str.contains(JOURNAL_JSON_PROBE, literal=True)
    df = apply(df, json_line & journal, journald_json)
    docker = body.str.contains(records.DOCKER_JSON)  # (anchored: a JSON line, never journald's)
    df = apply(df, docker, docker_json)
    df = apply(df, json_line & ~journal & ~docker, json_record)
    return apply(df, body.str.contains(STERN), _peel_stern)


def _peel_inner(df: pl.DataFrame) -> pl.DataFrame:
    body = pl.col("body")
    # The paste and host wrappers are rare: one probe picks the rows that need any of them
    # (a layer can only apply to a row after an earlier one in this group did, or first, so
    # a row the combined probe misses is left alone by all of them), and only those rows
    # take the eleven passes.
    df = apply(df, body.str.contains(PASTED) | pl.col("_jiso").fill_null(False), peel_pasted)
    return _peel_producer_prefixes(df)


def _peel_producer_prefixes(df: pl.DataFrame) -> pl.DataFrame:
    body = pl.col("body")
    df = apply(
        df,
        body.str.contains(r"\x1b|\[[0-9;]+m"),
        lambda d: d.with_columns(body.str.replace_all(ANSI, "").str.replace_all(ANSI_RESIDUE, "$1")),
    )
    df = apply(df, body.str.contains(PROC_PROBE), _peel_process)
    df = apply(df, body.str.contains(RAY_DAEMON_PROBE), _peel_ray_daemon)
    df = apply(
        df,
        body.str.contains("across cluster]", literal=True),
        lambda d: d.with_columns(body.str.replace(RAY_REPEAT, "")),
    )
    df = apply(df, body.str.contains(RANK_PROBE), _peel_rank)
    # vLLM prefixes whatever its engine and workers write, JSON log records too:
    # `(EngineCore_DP0 pid=114) {"asctime": ..., "name": "vllm.v1.engine.core", ...}`.
    inner_json = body.str.starts_with('{"') & (pl.col(s.PROCESS).is_not_null() | pl.col("_rank").is_not_null())
    df = apply(df, inner_json, json_record)
    # Last: what is left before a vLLM level is the operator's prefix (a process, rank or
    # host layer above would have been peeled), kept as the line's process when it has none.
    prefixed = body.str.contains(LOGGING_PREFIX_PROBE) & ~body.str.contains(r"^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) ")
    return apply(df, prefixed, _peel_logging_prefix)


def _peel_logging_prefix(d: pl.DataFrame) -> pl.DataFrame:
    body = pl.col("body")
    prefix = body.str.extract(LOGGING_PREFIX, 1)
    return d.with_columns(
        body.str.slice(prefix.str.len_chars() + 1),
        pl.coalesce(pl.col(s.PROCESS), prefix.str.strip_chars("[]():| ")).alias(s.PROCESS),
    )


def _peel_rfc3339(d: pl.DataFrame) -> pl.DataFrame:
    """`<RFC3339> rest` (kubectl --timestamps) or `<RFC3339> stdout|stderr P|F rest` (CRI)."""
    body = pl.col("body")
    sp = body.str.find(" ", literal=True)
    d = d.with_columns(body.str.slice(0, sp).alias("_ts"), body.str.slice(sp + 1).alias("_rest"))
    rest = pl.col("_rest")
    cri = rest.str.contains(r"^(?:stdout|stderr) [PF](?::\S*)?(?: |$)")
    after_stream = rest.str.slice(7)
    tag_sp = after_stream.str.find(" ", literal=True)
    return d.with_columns(
        parse_rfc3339(pl.col("_ts")).alias("_outer_ts"),
        (
            pl.col("_ts").str.contains(r"[+-]\d{4}$")
            | (pl.col("_ts").str.contains(r"[+-]\d{2}:\d{2}$") & rest.str.contains(JOURNAL_AFTER_RFC3339))
        ).alias("_jiso"),
        pl.when(cri).then(rest.str.slice(0, 6)).alias(s.STREAM),
        pl.when(cri).then(after_stream.str.slice(0, 1)).alias("_tag"),
        pl.when(cri)
        .then(pl.when(tag_sp.is_null()).then(pl.lit("")).otherwise(after_stream.str.slice(tag_sp + 1)))
        .otherwise(rest)
        .alias("body"),
    ).drop("_ts", "_rest")


def _peel_process(d: pl.DataFrame, depth: int = 1) -> pl.DataFrame:
    """`(APIServer pid=66) rest`, `(VllmWorker rank=0 pid=265)`, Ray `(Name pid=N, ip=10.0.0.2)`.
    Nested prefixes (`NESTED_PROCESSES`) name the process that wrote the line last: the line is
    the innermost's (`Worker_TP1`, one GPU), not its parent's, whose prefix every worker's
    lines share (two workers' tracebacks would fold into one, their GPUs count as one)."""
    d = _peel_one_process(d)
    if depth == NESTED_PROCESSES:
        return d
    return apply(d, pl.col("body").str.contains(PROC_PROBE), lambda inner: _peel_process(inner, depth + 1))


def _peel_one_process(d: pl.DataFrame) -> pl.DataFrame:
    body = pl.col("body")
    open_ = body.str.find("(", literal=True)
    pid_at = body.str.find(" pid=", literal=True)
    close = body.str.find(")", literal=True)
    after = close + 1 + (body.str.slice(close + 1, 1) == " ").cast(pl.UInt32)
    pid = body.str.slice(pid_at + 5, close - pid_at - 5)
    comma = pid.str.find(",", literal=True)  # Ray: `pid=N, ip=10.0.0.2`
    return d.with_columns(
        body.str.slice(open_ + 1, pid_at - open_ - 1).alias(s.PROCESS),
        pl.when(comma.is_null()).then(pid).otherwise(pid.str.slice(0, comma)).alias("_pid"),
        body.str.slice(after).alias("body"),
    )


def _peel_ray_daemon(d: pl.DataFrame) -> pl.DataFrame:
    """`(raylet) rest`, `(pid=4711, ip=10.0.0.2) rest` (`RAY_DAEMON`)."""
    d = extract_head(d, RAY_DAEMON, "_m", rest="_rest")
    m = pl.col("_m").struct.field
    return d.with_columns(
        pl.coalesce(m("name"), pl.col(s.PROCESS)).alias(s.PROCESS),
        pl.coalesce(m("pid"), pl.col("_pid")).alias("_pid"),
        pl.col("_rest").alias("body"),
    ).drop("_m", "_rest")


def _peel_rank(d: pl.DataFrame) -> pl.DataFrame:
    d = extract_head(d, RANK, "_m", rest="_rest")
    return d.with_columns(pl.col("_m").struct.field("rank").alias("_rank"), pl.col("_rest").alias("body")).drop(
        "_m", "_rest"
    )


assert RECORD_NAMES == (
    *("m", "iso", "epoch", "stream", "host", "pod", "ns", "cont"),
    *("level", "comp", "proc", "pid", "src", "reason", "etype", "object", "count"),
), "the tuples `json_record` builds are in this order"


def _peel_stern(d: pl.DataFrame) -> pl.DataFrame:
    body = pl.col("body")
    m = body.str.extract_groups(STERN).struct.field
    head = body.str.extract(STERN_NAMES, 0)
    return d.with_columns(
        m("pod").alias("_wpod"),
        m("cont").alias("_wcont"),
        body.str.slice(head.str.len_chars()),
    )


def _reassemble_partials(df: pl.DataFrame) -> pl.DataFrame:
    """Join CRI `P` (partial) lines with the following lines of the same stream up to an `F`.

    The runtime splits lines longer than 16 KiB into `P` pieces; the event is the
    concatenation, located at its first piece. Folded pieces are counted in `_pfold`.
    """
    if not df.select((pl.col("_tag") == "P").any()).item():
        return df.with_columns(pl.lit(0, pl.UInt32).alias("_pfold"))
    keys = ["_fid", "_seg", s.STREAM]
    df = df.with_columns(
        (pl.col("_tag").shift(1).over(keys, order_by="_row").fill_null("F") != "P")
        .cum_sum()
        .over(keys, order_by="_row")
        .alias("_pg")
    )
    rest = [c for c in df.columns if c not in (*keys, "_pg", "body")]
    out = df.group_by([*keys, "_pg"]).agg(
        pl.col("body").sort_by("_row").str.join(""),
        (pl.len() - 1).cast(pl.UInt32).alias("_pfold"),
        *[pl.col(c).sort_by("_row").first() for c in rest],
    )
    return out.drop("_pg").sort("_row").select([c for c in df.columns if c != "_pg"] + ["_pfold"])
