"""Outer layers peeled off every physical line before the producer format is matched.

A line is an onion (see shared docs, log-formats §0)::

    2024-08-30T15:30:57.763092820+08:00 (APIServer pid=66) INFO 08-30 ... [loggers.py:118] ...
    ^ kubectl --timestamps / CRI        ^ vLLM process prefix ^ producer (vllm)

`peel()` takes the working frame (`_row`, `_fid`, `_seg`, `line`, `body`) and strips, in
order: `\\r` artefacts, docker json-file, CRI and `kubectl logs --timestamps` prefixes
(their RFC3339 time becomes `_outer_ts`, the only fully qualified time most logs have),
journald/syslog prefixes, docker-compose and CI `|` prefixes, ANSI colour codes and
their ESC-less residue, vLLM/Ray process prefixes and torchrun `[rankN]:` prefixes.
CRI partial lines (`P`) are reassembled with the `F` line that completes them.
"""

from __future__ import annotations

import json
import re

import polars as pl

from parsers import k8s
from parsers import schema as s
from parsers._common import APP_LEVEL_WORDS, apply, extract_head, time_parts
from parsers.frame import TIME_PARTS
from parsers.jsonutil import load_json

RFC3339_PROBE = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2}) "
SYSLOG = (
    r"^(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +(?P<day>\d{1,2}) "
    r"(?P<H>\d{2}):(?P<M>\d{2}):(?P<S>\d{2})(?:\.(?P<frac>\d+))? (?P<host>[^\s:]+) "
    r"(?P<ident>[A-Za-z][\w.\-/]*)(?:\[(?P<pid>\d+)\])?: ?"
)
SYSLOG_PROBE = r"^(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} \d{2}:\d{2}:\d{2}(?:\.\d+)? [^\s:]+ [A-Za-z][\w.\-/]*(?:\[\d+\])?: ?"
SYSLOG_AFTER_ISO = r"^(?P<host>[\w.\-]+) (?P<ident>[A-Za-z][\w.\-/]*)(?:\[(?P<pid>\d+)\])?: ?"
"""`journalctl -o short-iso[-precise]` puts an ISO time before `host ident[pid]:`."""
JOURNAL_AFTER_RFC3339 = r"^[\w.\-]+ (?:[A-Za-z][\w.\-/]*\[\d+\]|kernel): "
"""What must follow an ISO time with a `+hh:mm` offset for the line to be journald's rather
than `kubectl --timestamps`': an ident with its pid, or the kernel. systemd 255 and later write
short-iso's offset with a colon (`2025-03-09T09:00:02+00:00 node-7 kubelet[2211]: ...`, as an
RFC3339 stamp); before, without (`+0000`), which kubectl never writes. A container's own line
after kubectl's stamp (`Engine core: ...`) is not taken for a journal entry."""
COMPOSE_PROBE = r"^[A-Za-z0-9][\w.\-]*\s+\| "
CI_PIPE_PROBE = r"^\s+\| "
MPI_PROBE = r"^\[\d+,\d+\]<(?:stdout|stderr)>: ?"
# Copy/paste artefacts from issue threads and terminals (log-formats §6.15).
BOX_PROBE = r"^│ ?"
"""k9s and other TUI panes: `│ INFO 07-28 ... │`."""
PROCESS_NAME = r"[A-Za-z][\w.:\-]*"
"""The name in a process prefix: vLLM's (`APIServer`, `EngineCore_DP0`, `Worker_TP1`), Ray's
actors' (`RayWorkerWrapper`), and Ray Serve's replicas' (`ServeReplica:default:VLLMDeployment`,
the application and deployment after colons; names may hold `-` and `.`)."""
_PRODUCER_START = rf"(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d{{2}}-\d{{2}} |\({PROCESS_NAME}(?: rank=\d+)? pid=|\[\d{{4}}-\d{{2}}-\d{{2}} |[IWEF]\d{{4}} |\[?rank\d+\]:)"
LINENO_PROBE = r"^\[\d{1,7}\] " + _PRODUCER_START
"""Pasted line numbers before a known producer: `[80746] INFO 07-28 ...`."""
QUOTE_PROBE = r"^>(?: |$)"
QUOTE = r"^(?:>(?: |$))+"
"""A Markdown quote (`> ` before every line of a log quoted in an issue's reply, nested `> > `);
not a REPL's `>>> `."""
INDENT_PROBE = r"^[ \t]{1,8}" + _PRODUCER_START
"""A log line indented in a paste (a Markdown list item's code block, an e-mail): blanks before
a producer's start, which no continuation line has (those are taken as continuations)."""
DESKTOP_PROBE = r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} " + _PRODUCER_START
"""Docker Desktop's log view: `2024-06-10 13:26:25 INFO 06-10 ...` (local time, no zone)."""
CI_TS_PROBE = r"^\[\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})\] "
"""CI runners: `[2025-06-26T16:27:15Z] INFO ...`."""
DMESG_PROBE = r"^\[ *\d{1,9}\.\d{6}\] "
"""`dmesg`: seconds since boot, no wall time (the kernel's NVRM/Xid, OOM-killer lines). Nine
digits at most (31 years up): ten are seconds since the epoch, UCX's stamp (`parsers.ucx`)."""
DMESG_UPTIME = r"^\[ *(\d{1,9}\.\d{6})\] "
"""The seconds since boot of a `dmesg` line, kept as `_uptime_s`: a line of the same boot that
says the wall time then (the RTC's at boot, an audit record's) places the others
(`forensics.ingestion.timing.WALL_CLOCK`)."""
JOURNAL_HOST_IDENT = r"[\w.\-]+ (?:[A-Za-z][\w.\-/]*\[\d+\]|kernel): "
"""What journalctl's short modes print after their time: `host ident[pid]: ` (the kernel's without a pid)."""
JOURNAL_FULL_PROBE = (
    r"^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,6})? (?:UTC|GMT) "
    + JOURNAL_HOST_IDENT
)
"""`journalctl -o short-full`: `Sat 2026-03-14 06:39:55 UTC host ident[pid]: msg` (a zone other
than UTC names no offset, and is left alone)."""
JOURNAL_UNIX_PROBE = r"^\d{10}\.\d{6} " + JOURNAL_HOST_IDENT
"""`journalctl -o short-unix`: epoch seconds before `host ident[pid]: msg`."""
JOURNAL_MONOTONIC_PROBE = DMESG_PROBE + JOURNAL_HOST_IDENT
"""`journalctl -o short-monotonic` (`journalctl -k` of a boot, as often collected): seconds since
boot, then `host ident[pid]: msg`; the seconds are kept as dmesg's are (`DMESG_UPTIME`)."""
DMESG_ISO_PROBE = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2},\d{6}[+-]\d{2}:\d{2} "
"""`dmesg --time-format=iso`: the node's wall time with a comma before the microseconds."""
DMESG_T_PROBE = r"^\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} \d{2}:\d{2}:\d{2} \d{4}\] "
"""`dmesg -T`: the node's wall time, year included."""
KUBECTL_PREFIX_PROBE = r"^\[pod/[^/\]\s]+/[^\]\s]+\] "
"""`kubectl logs -l app=x --prefix`: `[pod/<pod>/<container>] ` before everything else (even
`--timestamps`), so many pods' lines interleave in one file."""
_ANSI_OPT = r"(?:\x1b\[[0-9;]*m)*"
STERN_NAMES = (
    rf"^{_ANSI_OPT}(?P<pod>[a-z0-9][a-z0-9.\-]*){_ANSI_OPT} {_ANSI_OPT}(?P<cont>[a-z0-9][a-z0-9\-]*){_ANSI_OPT} "
)
STERN = (
    STERN_NAMES + r"(?:\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d{2}-\d{2} "
    rf"|\({PROCESS_NAME}(?: rank=\d+)? pid=|\[?rank\d+\]:|(?:INFO|WARNING|ERROR):  )"
)
"""`stern <query>` (optionally `--timestamps`): `<pod> <container> <line>`, the names coloured on a
TTY; only taken when a known producer or a timestamp follows, so a plain line is never mistaken."""
COLLECTOR_PROBE = r'^(?:\[pod/|\{")|' + STERN
LOKI_LABELS_PROBE = r'^\{[A-Za-z_]\w*="[^"]*"(?:, ?[A-Za-z_]\w*="[^"]*")*\} '
"""`logcli query` output after its time: `{container="vllm", pod="llama-0"} <line>`."""
JOURNAL_JSON_PROBE = '"__REALTIME_TIMESTAMP"'
"""`journalctl -o json` (and `-o json-seq` without its RS byte): one JSON object per entry."""
ANSI = r"\x1b\[[0-9;?]*[A-Za-z]"
ANSI_RESIDUE = r"(^|[^\w\]])\[[0-9]{1,2}(?:;[0-9]{1,2})*m"
PROC_PROBE = rf"^\s*\({PROCESS_NAME}(?: rank=\d+)? pid=\d+(?:, ip=[\d.]+)?\)"
NESTED_PROCESSES = 4
"""The most process prefixes read off one line: a worker forked from vLLM's engine core
inherits its prefix and adds its own (`(EngineCore_DP0 pid=1026745) (Worker_TP0 pid=1026751)
ERROR ...`; on Ray, `(EngineCore pid=676) (RayWorkerProc pid=918) (Worker_TP0 pid=918)`).
More are left in the message (no writer nests deeper; a line of nothing but prefixes is junk)."""
RAY_DAEMON = (
    r"^\s*\((?:(?P<name>raylet|gcs_server|autoscaler|monitor|log_monitor|dashboard|dashboard_agent|"
    r"runtime_env_agent)|pid=(?P<pid>\d+))(?:, ip=[\d.]+)?\) ?"
)
"""Ray's driver output names where a line came from: a daemon, `(raylet)` (its OOM killer's
`Workers (tasks / actors) killed due to memory pressure`), or a worker without an actor name,
`(pid=4711)`, the ip after a comma on another node. `PROC_PROBE` takes `(Name pid=N)`."""
RAY_DAEMON_PROBE = RAY_DAEMON.replace("(?P<name>", "(?:").replace("(?P<pid>", "(?:")
RAY_REPEAT = r"\s*\[repeated \d+x across cluster\]\s*$"
VLLM_LEVEL_HEAD = (
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d{2}-\d{2} \d{2}:\d{2}(?::\d{2})?(?:\.\d{3})? \[?[\w./\-]+\.py:\d+\] "
)
LOGGING_PREFIX = r"^(?P<prefix>\S.{0,38}?) " + VLLM_LEVEL_HEAD
LOGGING_PREFIX_PROBE = LOGGING_PREFIX.replace("(?P<prefix>", "(?:")
"""`VLLM_LOGGING_PREFIX` (log-formats 1.1): any text the operator set, before vLLM's level
(`(VLLM) INFO 03-14 ...`, `[prefill-0] INFO ...`); a space ends it (a glued record has none)."""
RANK = r"^\s?\[?rank(?P<rank>\d+)\]: ?"
RANK_PROBE = RANK.replace("(?P<rank>", "(?:")
MONTHS = {m: i + 1 for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split())}


def _any_of(*probes: str) -> str:
    """One anchored regex matching where any of the `^`-anchored probes matches."""
    return "^(?:" + "|".join(f"(?:{p.removeprefix('^')})" for p in probes) + ")"


PASTED = _any_of(
    QUOTE_PROBE,
    INDENT_PROBE,
    BOX_PROBE,
    LINENO_PROBE,
    DESKTOP_PROBE,
    CI_TS_PROBE,
    SYSLOG_PROBE,
    MPI_PROBE,
    COMPOSE_PROBE,
    CI_PIPE_PROBE,
    DMESG_PROBE,
    DMESG_T_PROBE,
    LOKI_LABELS_PROBE,
)
"""The paste and host wrappers `_peel_pasted` strips, in its order."""
HOST_TIMES_PROBE = _any_of(DMESG_ISO_PROBE, JOURNAL_FULL_PROBE, JOURNAL_UNIX_PROBE, JOURNAL_MONOTONIC_PROBE)
"""Any of the host-log time modes `_peel_host_times` reads."""
INNER = _any_of(PASTED, PROC_PROBE, RAY_DAEMON_PROBE, RANK_PROBE, LOGGING_PREFIX_PROBE)
"""Any layer `_peel_inner` strips (ANSI colour is probed apart: it is not anchored)."""

STR, TS = pl.String, pl.Datetime("us", "UTC")
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


def parse_rfc3339(expr: pl.Expr) -> pl.Expr:
    """RFC3339 / RFC3339Nano with `Z`, `+hh:mm` or `+hhmm` to UTC microseconds, positionally.

    `2024-08-30T15:30:57.763092820+08:00` -> 2024-08-30 07:30:57.763092 UTC: the first
    19 characters have a fixed layout; the fraction runs from `.` to the zone.
    """
    i32 = pl.Int32
    n = expr.str.len_chars()
    zulu = expr.str.ends_with("Z")
    off_len = pl.when(zulu).then(1).when(expr.str.slice(-3, 1) == ":").then(6).otherwise(5)
    frac_len = (n - 20 - off_len).clip(0, 6)
    has_frac = expr.str.slice(19, 1) == "."
    us = pl.when(has_frac).then(
        expr.str.slice(20, frac_len).cast(pl.Int64, strict=False) * (10 ** (6 - frac_len)).cast(pl.Int64)
    )
    off = expr.str.slice(n - off_len, off_len)
    off_min = (
        pl.when(zulu)
        .then(0)
        .otherwise(
            pl.when(off.str.starts_with("-")).then(-1).otherwise(1)
            * (off.str.slice(1, 2).cast(i32, strict=False) * 60 + off.str.slice(-2).cast(i32, strict=False))
        )
    )
    base = expr.str.slice(0, 19).str.strptime(pl.Datetime("us"), "%Y-%m-%dT%H:%M:%S", strict=False)
    return (
        base + pl.duration(microseconds=us.fill_null(0)) - pl.duration(minutes=off_min.cast(pl.Int64))
    ).dt.replace_time_zone("UTC")


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
        df = _peel_host_times(df)
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


def _uptime(body: pl.Expr) -> pl.Expr:
    """A `dmesg`-stamped line's seconds since boot, as `_uptime_s` (`DMESG_UPTIME`)."""
    return body.str.extract(DMESG_UPTIME, 1).cast(pl.Float64).alias("_uptime_s")


def _peel_host_times(df: pl.DataFrame) -> pl.DataFrame:
    """`dmesg --time-format=iso`, `journalctl -o short-full` and `-o short-unix`: their time as the outer
    time; `-o short-monotonic`: its seconds since boot (placed as `dmesg`'s are)."""
    body = pl.col("body")
    df = apply(
        df,
        body.str.contains(DMESG_ISO_PROBE),
        lambda d: d.with_columns(
            parse_rfc3339(body.str.slice(0, 32).str.replace(",", ".", literal=True)).alias("_outer_ts"),
            body.str.slice(33),
            pl.lit("kernel").alias(s.PROCESS),
            pl.lit("dmesg").alias("_journal"),
        ),
    )
    # journalctl's other short modes: the host and ident after their time are read as short-iso's (`_jiso`).
    df = apply(
        df,
        body.str.contains(JOURNAL_FULL_PROBE),
        lambda d: d.with_columns(
            body.str.extract(r"^\w{3} (\S+ \S+) ", 1)
            .str.strptime(pl.Datetime("us"), "%Y-%m-%d %H:%M:%S%.f", strict=False)
            .dt.replace_time_zone("UTC")
            .alias("_outer_ts"),
            body.str.replace(r"^\w{3} \S+ \S+ \S+ ", ""),
            pl.lit(True).alias("_jiso"),
        ),
    )
    df = apply(
        df,
        body.str.contains(JOURNAL_UNIX_PROBE),
        lambda d: d.with_columns(
            (body.str.slice(0, 10).cast(pl.Int64) * 1_000_000 + body.str.slice(11, 6).cast(pl.Int64))
            .cast(pl.Datetime("us", "UTC"))
            .alias("_outer_ts"),
            body.str.slice(18),
            pl.lit(True).alias("_jiso"),
        ),
    )
    return apply(
        df,
        body.str.contains(JOURNAL_MONOTONIC_PROBE),
        lambda d: d.with_columns(
            _uptime(body),
            body.str.replace(DMESG_UPTIME, ""),
            pl.lit(True).alias("_jiso"),
        ),
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
    df = apply(df, json_line & journal, _journald_json)
    docker = body.str.contains(DOCKER_JSON)  # (anchored: a JSON line, never journald's)
    df = apply(df, docker, _docker_json)
    df = apply(df, json_line & ~journal & ~docker, _json_record)
    return apply(df, body.str.contains(STERN), _peel_stern)


def _peel_inner(df: pl.DataFrame) -> pl.DataFrame:
    body = pl.col("body")
    # The paste and host wrappers are rare: one probe picks the rows that need any of them
    # (a layer can only apply to a row after an earlier one in this group did, or first, so
    # a row the combined probe misses is left alone by all of them), and only those rows
    # take the eleven passes.
    df = apply(df, body.str.contains(PASTED) | pl.col("_jiso").fill_null(False), _peel_pasted)
    return _peel_producer_prefixes(df)


def _peel_pasted(df: pl.DataFrame) -> pl.DataFrame:
    body = pl.col("body")
    df = apply(df, body.str.contains(QUOTE_PROBE), lambda d: d.with_columns(body.str.replace(QUOTE, "")))
    df = apply(df, body.str.contains(INDENT_PROBE), lambda d: d.with_columns(body.str.strip_chars_start(" \t")))
    df = apply(
        df,
        body.str.contains(BOX_PROBE),
        lambda d: d.with_columns(body.str.replace(BOX_PROBE, "").str.replace(r"\s*│\s*$", "")),
    )
    df = apply(df, body.str.contains(LINENO_PROBE), lambda d: d.with_columns(body.str.replace(r"^\[\d+\] ", "")))
    df = apply(
        df,
        body.str.contains(DESKTOP_PROBE),
        lambda d: d.with_columns(
            body.str.slice(0, 19)
            .str.strptime(pl.Datetime("us"), "%Y-%m-%d %H:%M:%S", strict=False)
            .dt.replace_time_zone("UTC")
            .alias("_outer_ts"),
            body.str.slice(20),
        ),
    )
    df = apply(
        df,
        body.str.contains(CI_TS_PROBE),
        lambda d: d.with_columns(
            parse_rfc3339(body.str.slice(1, body.str.find("]", literal=True) - 1)).alias("_outer_ts"),
            body.str.slice(body.str.find("]", literal=True) + 2),
        ),
    )
    df = apply(df, body.str.contains(SYSLOG_PROBE), _peel_syslog)
    # journalctl -o short-iso: the ISO time's offset `+0000`, or `+00:00` with an ident's pid after.
    df = apply(
        df,
        pl.col("_jiso") & pl.col("_syslog").is_null() & body.str.contains(SYSLOG_AFTER_ISO),
        _peel_journald_iso,
    )
    df = apply(
        df,
        body.str.contains(DMESG_PROBE),
        lambda d: d.with_columns(
            body.str.replace(DMESG_PROBE, ""),
            _uptime(body),
            pl.lit("kernel").alias(s.PROCESS),
            pl.lit("dmesg").alias("_journal"),
        ),
    )
    df = apply(
        df,
        body.str.contains(DMESG_T_PROBE),
        lambda d: d.with_columns(
            body.str.slice(5, 20)
            .str.replace(r"  (\d) ", " 0$1 ")
            .str.strptime(pl.Datetime("us"), "%b %d %H:%M:%S %Y", strict=False)
            .dt.replace_time_zone("UTC")
            .alias("_outer_ts"),
            body.str.slice(body.str.find("] ", literal=True) + 2),
            pl.lit("kernel").alias(s.PROCESS),
            pl.lit("dmesg").alias("_journal"),
        ),
    )
    df = apply(df, body.str.contains(LOKI_LABELS_PROBE), _peel_loki_labels)
    df = apply(df, body.str.contains(MPI_PROBE), lambda d: d.with_columns(body.str.replace(MPI_PROBE, "")))
    df = apply(df, body.str.contains(COMPOSE_PROBE), lambda d: d.with_columns(body.str.replace(COMPOSE_PROBE, "")))
    return apply(df, body.str.contains(CI_PIPE_PROBE), lambda d: d.with_columns(body.str.replace(CI_PIPE_PROBE, "")))


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
    df = apply(df, inner_json, _json_record)
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


def _peel_syslog(d: pl.DataFrame) -> pl.DataFrame:
    m = pl.col("_m").struct.field
    d = extract_head(d, SYSLOG, "_m", rest="_rest")
    return d.with_columns(
        pl.concat_str(
            [m("mon"), m("day").str.zfill(2), m("H"), m("M"), m("S"), m("frac").fill_null("")], separator="|"
        ).alias("_syslog"),
        m("host").alias(s.HOST),
        m("ident").alias(s.PROCESS),
        m("pid").alias("_pid"),
        pl.col("_rest").alias("body"),
    ).drop("_m", "_rest")


def _peel_journald_iso(d: pl.DataFrame) -> pl.DataFrame:
    m = pl.col("_m").struct.field
    d = extract_head(d, SYSLOG_AFTER_ISO, "_m", rest="_rest")
    return d.with_columns(
        m("host").alias(s.HOST),
        m("ident").alias(s.PROCESS),
        m("pid").alias("_pid"),
        pl.col("_rest").alias("body"),
        pl.lit("iso").alias("_journal"),
    ).drop("_m", "_rest")


EPOCH_MAX_S = 4e9
"""Epoch seconds past this (year 2096) are not a log time: a field that only looks like one."""


def _text(v: object) -> str | None:
    """A JSON field as text: strings as they are, numbers written out, anything else None."""
    if isinstance(v, str):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v)
    return None


def _json_objects(bodies: pl.Series) -> list[dict | None]:
    """Each line decoded as a JSON object, or None (not JSON, or JSON but not an object)."""
    out: list[dict | None] = []
    for body in bodies:
        try:
            obj = load_json(body)
        except ValueError:
            obj = None
        out.append(obj if isinstance(obj, dict) else None)
    return out


def _journald_json(d: pl.DataFrame) -> pl.DataFrame:
    """`journalctl -o json`: `__REALTIME_TIMESTAMP` (µs since the epoch, UTC), `_HOSTNAME`,
    `SYSLOG_IDENTIFIER`, `_PID`, `MESSAGE`. A MESSAGE journald stored as bytes (a JSON array)
    is decoded; an entry that is not valid JSON stays as it was (an unparsed line)."""
    rows = []
    for obj in _json_objects(d["body"]):
        if obj is None or "MESSAGE" not in obj:
            rows.append(None)
            continue
        msg = obj["MESSAGE"]
        if isinstance(msg, list):
            msg = bytes(b for b in msg if isinstance(b, int) and 0 <= b < 256).decode("utf-8", "replace")
        ts = str(obj.get("__REALTIME_TIMESTAMP") or "")
        us = int(ts) if ts.isdigit() and len(ts) <= 17 else None  # µs since the epoch; longer is not a time
        rows.append(
            {
                "m": str(msg).rstrip("\n"),
                "us": us,
                "h": _text(obj.get("_HOSTNAME")),
                "i": _text(obj.get("SYSLOG_IDENTIFIER") or obj.get("_COMM")),
                "p": _text(obj.get("_PID") or obj.get("SYSLOG_PID")),
            }
        )
    dtype = pl.Struct({"m": pl.String, "us": pl.Int64, "h": pl.String, "i": pl.String, "p": pl.String})
    d = d.with_columns(pl.Series("_j", rows, dtype=dtype))
    j = pl.col("_j").struct.field
    ok = j("m").is_not_null()
    return d.with_columns(
        pl.when(ok).then(j("m")).otherwise(pl.col("body")).alias("body"),
        pl.when(ok).then(pl.from_epoch(j("us"), time_unit="us").dt.replace_time_zone("UTC")).alias("_outer_ts"),
        pl.when(ok).then(j("h")).alias(s.HOST),
        pl.when(ok).then(j("i")).alias(s.PROCESS),
        pl.when(ok).then(j("p")).alias("_pid"),
        pl.when(ok).then(pl.lit("json")).alias("_journal"),
    ).drop("_j")


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


JSON_MESSAGE_KEYS = ("log", "message", "msg")
JSON_TIME_KEYS = ("time", "@timestamp", "timestamp", "date", "ts", "created", "asctime")
"""Where a record's time is, first found first: python-json-logger's `created` (seconds since
the epoch) before its `asctime` (the local time the formatter wrote, no zone: `LOCAL_TIME`)."""
JSON_LEVEL_KEYS = ("level", "severity", "lvl", "levelname", "log.level", "loglevel")
JSON_LOGGER_KEYS = ("logger", "logger_name", "name", "caller")
JSON_ERROR_KEYS = ("error", "err")
JSON_TRACE_KEYS = ("exc_info", "exception", "stacktrace", "stack_trace")
LOGGER_SOURCES = {"vllm": "vllm", "uvicorn": "uvicorn", "lmcache": "kv-store"}
"""Python loggers, by their top-level name, whose JSON records are their producer's events:
vLLM's JSON formatter (`--logging-config.formatter json`, or python-json-logger in a
`VLLM_LOGGING_CONFIG_PATH` dictConfig) writes one record per vLLM and uvicorn log record
(`name`, `levelname`, `message`, `asctime`, `process`, `vllm_process_name`), and LMCache logs
through Python's logging in the engine's process. Their messages are what the text lines'
messages are (metrics, request ids, access lines), so they are read as those producers'."""
LOCAL_TIME = (
    r"^(?:(?P<Y>\d{4})-)?(?P<mo>\d{2})-(?P<d>\d{2})[T ](?P<H>\d{2}):(?P<M>\d{2}):(?P<S>\d{2})"
    r"(?:[.,](?P<frac>\d{1,9}))?$"
)
"""A record's time written without a zone: Python logging's `asctime` (`2025-03-02 08:07:00,123`,
or vLLM's `%m-%d %H:%M:%S`, no year) or an ISO time without an offset. It is the local time of
the writer: read as time parts (`--tz`, the year inferred where none), not as UTC."""
JSON_RECORD_DTYPE = pl.Struct(
    {
        "m": STR,
        "iso": STR,
        "epoch": pl.Float64,
        "stream": STR,
        "host": STR,
        "pod": STR,
        "ns": STR,
        "cont": STR,
        "level": STR,
        "comp": STR,
        "proc": STR,
        "pid": STR,
        "src": STR,
        "reason": STR,
        "etype": STR,
        "object": STR,
        "count": pl.Int64,
    }
)


def _json_level(v: object) -> str | None:
    """A record's level word as `schema.Level`; pino/bunyan numbers (30 info .. 60 fatal) too."""
    if isinstance(v, str):
        return APP_LEVEL_WORDS.get(v.strip().upper())
    if isinstance(v, int) and not isinstance(v, bool) and 10 <= v <= 60:
        return (
            "CRITICAL" if v >= 60 else "ERROR" if v >= 50 else "WARNING" if v >= 40 else "INFO" if v >= 30 else "DEBUG"
        )
    return None


def _application_fields(obj: dict, msg: str) -> tuple[str, str | None, str | None]:
    """An application's own JSON record (zap, logrus, slog, structlog, python-json-logger): its
    message with the error it carries beside it (zap and logrus put the cause in `error`, not in
    `msg`: `Failed to dispatch request error="no pods available"`) and the traceback on the lines
    after, its level and its logger (or the caller's file). A shipper's record of a plain line
    has none of these and keeps its line as it was.

    (Loops, not generator expressions: this runs once a record, and they cost half its time.)"""
    for k in JSON_ERROR_KEYS:
        err = obj.get(k)
        if type(err) is str and err:
            if err not in msg:
                msg = f"{msg} error={json.dumps(err)}"
            break
    for k in JSON_TRACE_KEYS:
        trace = obj.get(k)
        if type(trace) is str and trace.strip():
            if trace not in msg:
                msg = f"{msg}\n{trace.rstrip()}"
            break
    level = None
    for k in JSON_LEVEL_KEYS:
        v = obj.get(k)
        if v is not None and (level := _json_level(v)) is not None:
            break
    comp = None
    for k in JSON_LOGGER_KEYS:
        v = obj.get(k)
        if type(v) is str and v:
            comp = v
            break
    if comp is not None and comp == obj.get("caller"):
        comp = comp.rsplit(":", 1)[0] if comp.rsplit(":", 1)[-1].isdigit() else comp
    return msg, level, comp


def _kube_name(kube: dict, flat: str, nested: str) -> str | None:
    """`kubernetes.pod_name` (Fluent Bit, Vector) or `kubernetes.pod.name` (Elastic ECS)."""
    v = kube.get(flat)
    if v is None and isinstance(kube.get(nested), dict):
        v = kube[nested].get("name")
    if v is None and isinstance(kube.get(nested), str):
        v = kube[nested]
    return v if isinstance(v, str) else None


def _json_access(obj: dict) -> tuple[str, dict] | None:
    """A gateway's JSON access record (Envoy Gateway's default, Istio's JSON encoding) as the
    line Envoy's text format writes, for `parsers.envoy`, and the object with its start time
    under a time key; None when `obj` is no such record."""
    code, method = obj.get("response_code"), obj.get("method")
    if not isinstance(method, str) or not isinstance(code, int) or isinstance(code, bool):
        return None
    path = next((obj[k] for k in ("x-envoy-origin-path", "path", "x-envoy-original-path") if obj.get(k)), "-")
    flags = obj.get("response_flags") or "-"
    details = obj.get("response_code_details") or "-"
    line = f'"{method} {path} {obj.get("protocol") or "HTTP/1.1"}" {code} {flags} {details}'
    extra = [
        f"{k}={obj[k]}"
        for k in ("upstream_host", "upstream_transport_failure_reason", "duration", "x-request-id", "request_id")
        if obj.get(k) not in (None, "", "-")
    ]
    return " ".join([line, *extra]), obj | {"time": obj.get("start_time") or obj.get("time")}


def log_entries_document(text: str) -> list[str] | None:
    """A JSON document that is a list of log records, as one compact record per line (for
    `_json_record`), or None when it is no such document: `gcloud logging read --format=json`
    (a list of Cloud Logging entries), `aws logs filter-log-events` (`events`), an
    Elasticsearch/OpenSearch search response (`hits.hits[]._source`), or a plain list of
    shippers' records. Most of its objects must carry a line and a time."""
    if not re.match(r"\s*[\[{]", text):  # (no copy of a large text, as `lstrip` would make)
        return None
    try:
        doc = load_json(text)
    except ValueError:
        return None
    if isinstance(doc, dict):
        hits = doc.get("hits")
        if isinstance(doc.get("events"), list):
            doc = doc["events"]
        elif isinstance(hits, dict) and isinstance(hits.get("hits"), list):
            doc = [h.get("_source") if isinstance(h, dict) else None for h in hits["hits"]]
        else:
            return None
    if not isinstance(doc, list) or not doc:
        return None

    def is_record(e: object) -> bool:
        if not isinstance(e, dict):
            return False
        e = _cloud_entry(e)
        return any(isinstance(e.get(k), str) for k in JSON_MESSAGE_KEYS) and any(
            e.get(k) is not None for k in JSON_TIME_KEYS
        )

    if sum(map(is_record, doc)) * 2 < len(doc):
        return None
    return [json.dumps(e, ensure_ascii=False, separators=(",", ":")) for e in doc]


CLOUDWATCH_STREAM = re.compile(r"containers[./]" + k8s.CONTAINER_LOG_NAME + "$")
"""Fluent Bit's CloudWatch output names a stream for its tag, the container log's path:
`kube.var.log.containers.<pod>_<namespace>_<container>-<container id>.log` (`k8s.CONTAINER_LOG_NAME`)."""


def _cloud_entry(obj: dict) -> dict:
    """A CloudWatch Logs event (`logStreamName` naming the container's log) or a Google Cloud
    Logging entry (GKE's logs as `gcloud logging read` or a Log Router sink
    writes them) as a shipper's record: the line from `textPayload` (or `jsonPayload`'s
    message, its other fields kept for the level and error), pod, namespace and container from
    `resource.labels`, the node from `labels` (`compute.googleapis.com/resource_name`). A
    Kubernetes event in `jsonPayload` (GKE's `events` log) is read as the event documents are
    (`k8s.event_row`: `Reason: message` on its involved pod, the node its kubelet reports from,
    its reason, type and count), and left under `EVENT_KEY`. Any other object is returned as it
    was."""
    stream = obj.get("logStreamName")
    if isinstance(stream, str) and "kubernetes" not in obj and (m := CLOUDWATCH_STREAM.search(stream)):
        return obj | {"kubernetes": {"pod_name": m["pod"], "namespace_name": m["ns"], "container_name": m["cont"]}}
    resource = obj.get("resource")
    if not isinstance(resource, dict) or not ("textPayload" in obj or isinstance(obj.get("jsonPayload"), dict)):
        return obj
    res = resource.get("labels") if isinstance(resource.get("labels"), dict) else {}
    labels = obj.get("labels") if isinstance(obj.get("labels"), dict) else {}
    kube = {
        "pod_name": res.get("pod_name"),
        "namespace_name": res.get("namespace_name"),
        "container_name": res.get("container_name"),
        "host": res.get("node_name") or labels.get("compute.googleapis.com/resource_name"),
    }
    payload = obj.get("jsonPayload") if isinstance(obj.get("jsonPayload"), dict) else {}
    text = obj.get("textPayload")
    event = None
    if not isinstance(text, str):
        text = next((payload[k] for k in JSON_MESSAGE_KEYS if isinstance(payload.get(k), str)), None)
        if isinstance(payload.get("involvedObject"), dict) and isinstance(payload.get("reason"), str):
            # (GKE sets the entry's severity from the event's type: it stands in for a type left out)
            typed = "type" in payload or obj.get("severity") not in ("WARNING", "ERROR")
            event = k8s.event_row(payload if typed else payload | {"type": "Warning"}, 0)
            text = event[s.MESSAGE]
            kube = {
                "pod_name": event[s.POD] or kube["pod_name"],
                "namespace_name": event[s.NAMESPACE] or kube["namespace_name"],
                "container_name": event[s.CONTAINER],
                "host": event[s.HOST] or kube["host"],
            }
        if text is None:
            text = json.dumps(payload, sort_keys=True)
    rest = {k: v for k, v in payload.items() if k not in JSON_MESSAGE_KEYS}
    return rest | {
        "message": text,
        "timestamp": obj.get("timestamp")
        or obj.get("receiveTimestamp")
        or (event[s.TS].isoformat() if event and event[s.TS] else None),
        "severity": obj.get("severity") if obj.get("severity") != "DEFAULT" else rest.get("severity"),
        "kubernetes": {k: v for k, v in kube.items() if isinstance(v, str) and v},
        EVENT_KEY: event,
    }


EVENT_KEY = "\x00k8s-event"
"""Where `_cloud_entry` leaves the Kubernetes event it read (`k8s.event_row`'s row): a key that
starts with NUL, which no log shipper writes."""


DOCKER_JSON = (
    r'^\{"log":"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u(?:[0-9a-cA-Ce-fE-F][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}))*"'
    r',"stream":"(?:stdout|stderr)","time":"[0-9A-Za-z:.+\-]*"\}$'
)
"""A Docker json-file record exactly as the daemon writes it (`{"log":"...\\n","stream":"stdout",
"time":"2025-03-02T07:59:50.123456789Z"}`, nothing else, no escaped surrogate): decoded by
polars (`_docker_json`) rather than a `json.loads` and a dict a line in Python
(`_json_record`), which read them at ~30k lines/s. Any other JSON line, or one of these that
differs in any way, takes `_json_record`."""


def _docker_json(d: pl.DataFrame) -> pl.DataFrame:
    """`DOCKER_JSON` records: `_json_record`'s columns for them, the log line without its
    newline, its stream and time; no pod, level or logger (a plain line's record has none)."""
    rec = pl.col("body").str.json_decode(pl.Struct({"log": STR, "stream": STR, "time": STR})).struct.field
    given = {"m": rec("log").str.strip_suffix("\n"), "iso": rec("time"), "stream": rec("stream")}
    m = pl.struct(*(given.get(f.name, pl.lit(None, f.dtype)).alias(f.name) for f in JSON_RECORD_DTYPE.fields))
    return _record_columns(d.with_columns(m.alias("_m")))


def _json_record(d: pl.DataFrame) -> pl.DataFrame:
    """`_json_record_each`'s columns for JSON lines; Python logging's records of the common
    shape (`PYTHON_RECORD`) are decoded by polars (`_python_records`), as the Docker records are."""
    shaped = d.select(pl.col("body").str.contains(PYTHON_RECORD)).to_series()
    if not shaped.any():
        return _json_record_each(d)
    try:
        fast = _python_records(d.filter(shaped))
    except pl.exceptions.ComputeError:  # (a line `PYTHON_RECORD` let through that polars cannot decode)
        return _json_record_each(d)
    read = fast.select(pl.col("_m").struct.field("m").is_not_null()).to_series()
    rest = pl.concat([d.filter(~shaped), fast.filter(~read).drop("_m")], how="diagonal_relaxed")
    parts = [_record_columns(fast.filter(read))] + ([_json_record_each(rest)] if rest.height else [])
    return pl.concat(parts, how="diagonal_relaxed") if len(parts) > 1 else parts[0]


def _json_record_each(d: pl.DataFrame) -> pl.DataFrame:
    """One JSON object per line with the log line inside: Docker's json-file driver
    (`{"log":"...\\n","stream":"stdout","time":"..."}`) and what log shippers write or
    export (Fluent Bit, Vector, Elasticsearch/OpenSearch: `log`/`message`, `time`/
    `@timestamp`/`date`, and a `kubernetes` object with pod, namespace, container, host;
    Google Cloud Logging's entries, see `_cloud_entry`; CloudWatch's `message`/`timestamp`).
    A line that is not such an object is left as it was (a producer may still match it).

    Each record is a tuple in `JSON_RECORD_DTYPE`'s order (a dict a row held ~1.5 KB for each
    line of a batch in flight)."""
    rows: list[tuple | None] = []
    for obj in _json_objects(d["body"]):
        msg = None
        if obj is not None:
            obj = _cloud_entry(obj)
            for k in JSON_MESSAGE_KEYS:
                v = obj.get(k)
                if type(v) is str:
                    msg = v
                    break
            if msg is None and (access := _json_access(obj)) is not None:
                msg, obj = access
        if msg is None:
            rows.append(None)
            continue
        when = None
        for k in JSON_TIME_KEYS:
            if (when := obj.get(k)) is not None:
                break
        epoch = float(when) if isinstance(when, (int, float)) and not isinstance(when, bool) else None
        if epoch is not None and epoch > 1e11:  # milliseconds since the epoch
            epoch /= 1000.0
        if epoch is not None and not (0 < epoch < EPOCH_MAX_S):  # NaN, inf, or no plausible time
            epoch = None
        kube = obj.get("kubernetes")
        if type(kube) is dict and kube:
            host = kube.get("host") if isinstance(kube.get("host"), str) else _kube_name(kube, "node_name", "node")
            names = tuple(_kube_name(kube, f"{n}_name", n) for n in ("pod", "namespace", "container"))
        else:
            host, names = None, (None, None, None)
        event = obj.get(EVENT_KEY)
        if event is not None:  # (a Kubernetes event: its reporter and its type's level, as `-o json` gives them)
            level, comp, proc, pid = event[s.LEVEL], event[s.COMPONENT], None, None
            kinds = (
                "k8s-event",
                event.get(s.K8S_REASON),
                event.get(s.K8S_TYPE),
                event.get(s.K8S_OBJECT),
                event.get(s.K8S_COUNT),
            )
        else:
            msg, level, comp = _application_fields(obj, msg.removesuffix("\n"))
            src, comp, proc, pid = _python_logger(obj, comp)
            kinds = (src or ("app" if level is not None else None), None, None, None, None)
        stream = obj.get("stream")
        rows.append(
            (
                msg,
                when if type(when) is str else None,
                epoch,
                stream if type(stream) is str else None,
                host,
                *names,
                level,
                comp,
                proc,
                pid,
                *kinds,
            )
        )
    return _record_columns(d.with_columns(_record_series(rows)))


def _python_logger(obj: dict, comp: str | None) -> tuple[str | None, str | None, str | None, str | None]:
    """(source, component, process, pid) of a Python logger's record (`LOGGER_SOURCES`): the
    file it was logged from where the record says (`filename`), else the logger; the process
    by vLLM's name for it (`EngineCore_DP0`, as the text lines' prefix names it) or Python's,
    not `MainProcess` (the text lines of a main process have no prefix either). Another
    logger's record: no source, the component as it was."""
    src = LOGGER_SOURCES.get(comp.split(".", 1)[0]) if comp is not None else None
    if src is None:
        return None, comp, None, None
    filename = obj.get("filename")
    proc = obj.get("vllm_process_name")
    if type(proc) is not str or not proc:
        proc = obj.get("processName")
    pid = obj.get("process")
    return (
        src,
        filename if type(filename) is str and filename else comp,
        proc if type(proc) is str and proc and proc != "MainProcess" else None,
        str(pid) if type(pid) is int else None,
    )


_JSON_STRING = (
    r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u(?:00[2-9a-fA-F][0-9a-fA-F]|0[1-9a-fA-F][0-9a-fA-F]{2}'
    r'|[1-9a-cA-Ce-fE-F][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}))*"'
)
"""A JSON string with no escaped control character but `\\t \\n \\r \\b \\f` and no escaped
surrogate: what polars and `json.loads` decode alike, and what Python's and polars' stripping of
whitespace agree on (Python's also strips U+001C-U+001F)."""
PYTHON_RECORD_STRINGS = (
    *("asctime", "timestamp", "levelname", "name", "message", "processName", "vllm_process_name", "filename"),
    *("funcName", "module", "pathname", "threadName", "taskName", "exc_info", "stack_info"),
)
PYTHON_RECORD_INTEGERS = ("process", "lineno", "thread", "levelno")
PYTHON_RECORD_FLOATS = ("created", "msecs", "relativeCreated")
_PYTHON_MEMBER = (
    rf'"(?:{"|".join(PYTHON_RECORD_STRINGS)})": ?(?:{_JSON_STRING}|null)'
    rf'|"(?:{"|".join(PYTHON_RECORD_INTEGERS)})": ?(?:-?(?:0|[1-9]\d{{0,17}})|null)'
    rf'|"(?:{"|".join(PYTHON_RECORD_FLOATS)})": ?(?:-?(?:0|[1-9]\d{{0,17}})(?:\.\d{{1,18}})?(?:[eE][+-]?\d{{1,2}})?|null)'
)
"""(Numbers as JSON writes them, no leading zero, no more digits than 64 bits hold, exponents
within a double's range.)"""
PYTHON_RECORD = rf"^\{{(?:{_PYTHON_MEMBER})(?:, ?(?:{_PYTHON_MEMBER}))*\}}$"
"""A Python logging record as python-json-logger (and vLLM's JSON formatter) writes it: only
LogRecord's own attributes and vLLM's `vllm_process_name`, each of its type, `", "` between
them. Decoded by polars (`_python_records`) rather than a `json.loads` and a dict a line
(`_json_record_each`, ~100k lines/s); any other record, or one of these that differs in any way,
takes `_json_record_each`. (A key given twice is the one case they would read apart; no
formatter writes one.)"""


def _python_records(d: pl.DataFrame) -> pl.DataFrame:
    """`_m` (`JSON_RECORD_DTYPE`) of `PYTHON_RECORD` lines, as `_json_record_each` reads them;
    null where the record has no message (`_json_record_each` says what such a line is)."""
    dtype = pl.Struct(
        {
            **{k: STR for k in PYTHON_RECORD_STRINGS},
            **{k: pl.Int64 for k in PYTHON_RECORD_INTEGERS},
            **{k: pl.Float64 for k in PYTHON_RECORD_FLOATS},
        }
    )
    d = d.with_columns(pl.col("body").str.json_decode(dtype).alias("_py"))
    r = pl.col("_py").struct.field  # (decoded once: each field's reference decoded the line again, 8x the time)
    stamp, created, asctime = r("timestamp"), r("created"), r("asctime")
    # The time keys in `JSON_TIME_KEYS`' order: `timestamp`, then `created` (epoch seconds), then `asctime`.
    iso = pl.when(stamp.is_not_null()).then(stamp).when(created.is_null()).then(asctime)
    epoch = pl.when(stamp.is_null()).then(created)
    epoch = pl.when(epoch > 1e11).then(epoch / 1000.0).otherwise(epoch)
    epoch = pl.when((epoch > 0) & (epoch < EPOCH_MAX_S)).then(epoch)
    msg = r("message").str.strip_suffix("\n")
    trace = r("exc_info")
    traced = trace.is_not_null() & (trace.str.strip_chars() != "") & ~msg.str.contains(trace, literal=True)
    msg = pl.when(traced).then(pl.concat_str([msg, pl.lit("\n"), trace.str.strip_chars_end()])).otherwise(msg)
    level = r("levelname").str.strip_chars().str.to_uppercase().replace_strict(APP_LEVEL_WORDS, default=None)
    name = pl.when(r("name") != "").then(r("name"))
    src = name.str.split(".").list.first().replace_strict(LOGGER_SOURCES, default=None, return_dtype=STR)
    filename = pl.when(r("filename") != "").then(r("filename"))
    proc = pl.coalesce(pl.when(r("vllm_process_name") != "").then(r("vllm_process_name")), r("processName"))
    given = {
        "m": msg,
        "iso": iso,
        "epoch": epoch,
        "level": level,
        "comp": pl.when(src.is_not_null()).then(pl.coalesce(filename, name)).otherwise(name),
        "proc": pl.when(src.is_not_null() & (proc != "") & (proc != "MainProcess")).then(proc),
        "pid": pl.when(src.is_not_null()).then(r("process").cast(STR)),
        "src": pl.coalesce(src, pl.when(level.is_not_null()).then(pl.lit("app"))),
    }
    m = pl.struct(*(given.get(f.name, pl.lit(None, f.dtype)).alias(f.name) for f in JSON_RECORD_DTYPE.fields))
    return d.with_columns(pl.when(r("message").is_not_null()).then(m).alias("_m")).drop("_py")


_RECORD_NAMES = tuple(f.name for f in JSON_RECORD_DTYPE.fields)
assert _RECORD_NAMES == (
    *("m", "iso", "epoch", "stream", "host", "pod", "ns", "cont"),
    *("level", "comp", "proc", "pid", "src", "reason", "etype", "object", "count"),
), "the tuples `_json_record` builds are in this order"


def _record_series(rows: list[tuple | None]) -> pl.Series:
    """`_m` (`JSON_RECORD_DTYPE`) from `_json_record`'s tuples, null where a line was no record."""
    schema = {f.name: f.dtype for f in JSON_RECORD_DTYPE.fields}
    empty = (None,) * len(_RECORD_NAMES)
    frame = pl.DataFrame([r or empty for r in rows], schema=schema, orient="row")
    missing = pl.Series([r is None for r in rows], dtype=pl.Boolean)
    return frame.select(pl.when(~missing).then(pl.struct(pl.all())).alias("_m")).to_series()


def _record_columns(d: pl.DataFrame) -> pl.DataFrame:
    """The line and its wrapper's columns from `_m` (`JSON_RECORD_DTYPE`, null where no record
    was read). A line that is no record keeps what it had; a record keeps what the layers
    outside it gave where it says nothing itself (the time of `kubectl logs --timestamps`
    before a record without one, or with only a local time; the pod of `--prefix`)."""
    m = pl.col("_m").struct.field
    ok = m("m").is_not_null()
    when = pl.coalesce(
        parse_rfc3339(m("iso")),
        pl.from_epoch((m("epoch") * 1e6).cast(pl.Int64, strict=False), time_unit="us").dt.replace_time_zone("UTC"),
    )

    dtypes = {f.name: f.dtype for f in JSON_RECORD_DTYPE.fields}

    def record(column: str, field: str, over: bool = False) -> pl.Expr:
        """`field` where the line is a record (over what the line had when `over`), else what it had."""
        had = pl.col(column) if column in d.columns else pl.lit(None, dtypes[field])
        return pl.when(ok).then(pl.coalesce(m(field), had) if over else m(field)).otherwise(had).alias(column)

    return d.with_columns(
        record("body", "m"),
        record(s.STREAM, "stream"),
        pl.coalesce(pl.when(ok).then(when), pl.col("_outer_ts")).alias("_outer_ts"),
        record(s.HOST, "host"),
        record("_wpod", "pod", over=True),
        record("_wns", "ns", over=True),
        record("_wcont", "cont", over=True),
        # (a producer the line turns out to be sets its own; a line of no known producer keeps these)
        record(s.LEVEL, "level"),
        record(s.COMPONENT, "comp"),
        record(s.PROCESS, "proc", over=True),
        record("_pid", "pid", over=True),
        record("_jsrc", "src"),
        *_local_time_parts(m("iso"), ok & when.is_null()),
        # (a Kubernetes event's own fields; null on every other record)
        record(s.K8S_REASON, "reason"),
        record(s.K8S_TYPE, "etype"),
        record(s.K8S_OBJECT, "object"),
        record(s.K8S_COUNT, "count"),
    ).drop("_m")


RECORD_TIME_PARTS = {part: "_j" + part.removeprefix("_") for part in TIME_PARTS}
"""A record's local time (`LOCAL_TIME`) as time parts, beside the producer's: the record's
time is the line's, as a wrapper's is (`lines._record_times`)."""


def _local_time_parts(iso: pl.Expr, where: pl.Expr) -> list[pl.Expr]:
    """`RECORD_TIME_PARTS` of the records (`where`) whose time has no zone (`LOCAL_TIME`)."""
    local = iso.str.extract_groups(LOCAL_TIME).struct.field
    parts = time_parts(lambda g: pl.when(where).then(local(g)))
    return [e.alias(RECORD_TIME_PARTS[part]) for e, part in zip(parts, TIME_PARTS, strict=True)]


def _peel_stern(d: pl.DataFrame) -> pl.DataFrame:
    body = pl.col("body")
    m = body.str.extract_groups(STERN).struct.field
    head = body.str.extract(STERN_NAMES, 0)
    return d.with_columns(
        m("pod").alias("_wpod"),
        m("cont").alias("_wcont"),
        body.str.slice(head.str.len_chars()),
    )


def _peel_loki_labels(d: pl.DataFrame) -> pl.DataFrame:
    """Grafana Loki's `logcli query` lines: labels in braces after the time, then the line."""
    body = pl.col("body")
    head = body.str.extract(r"^(\{[^}]*\}) ", 1)

    def label(*names: str) -> pl.Expr:
        return pl.coalesce([head.str.extract(rf'(?:^\{{|, ?){n}="([^"]*)"', 1) for n in names])

    return d.with_columns(
        label("pod", "pod_name").alias("_wpod"),
        label("namespace", "namespace_name").alias("_wns"),
        label("container", "container_name").alias("_wcont"),
        pl.coalesce(label("node_name", "node", "host", "hostname"), pl.col(s.HOST)).alias(s.HOST),
        body.str.slice(head.str.len_chars() + 1),
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


def syslog_time_parts() -> list[pl.Expr]:
    """Time parts from the `_syslog` column (`Mon|dd|HH|MM|SS|frac`, no year)."""
    parts = pl.col("_syslog").str.split("|")
    return [
        parts.list.get(0, null_on_oob=True).replace_strict(MONTHS, default=None, return_dtype=pl.Int32).alias("_mo"),
        parts.list.get(1, null_on_oob=True).cast(pl.Int32, strict=False).alias("_d"),
        parts.list.get(2, null_on_oob=True).cast(pl.Int32, strict=False).alias("_H"),
        parts.list.get(3, null_on_oob=True).cast(pl.Int32, strict=False).alias("_M"),
        parts.list.get(4, null_on_oob=True).cast(pl.Int32, strict=False).alias("_S"),
        parts.list.get(5, null_on_oob=True)
        .str.slice(0, 6)
        .str.pad_end(6, "0")
        .cast(pl.Int32, strict=False)
        .alias("_us"),
    ]
