"""A host's own log wrappers: syslog, journald (short-iso, short-full, short-unix, short-monotonic,
-o json) and dmesg (seconds since boot, -T, --time-format=iso). Their time, host and ident."""

from __future__ import annotations

import polars as pl

from parsers import schema as s
from parsers._common import apply, extract_head
from parsers.wrappers.heads import any_of, json_objects, json_text, parse_rfc3339

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


JOURNAL_JSON_PROBE = '"__REALTIME_TIMESTAMP"'
"""`journalctl -o json` (and `-o json-seq` without its RS byte): one JSON object per entry."""


MONTHS = {m: i + 1 for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split())}


HOST_TIMES_PROBE = any_of(DMESG_ISO_PROBE, JOURNAL_FULL_PROBE, JOURNAL_UNIX_PROBE, JOURNAL_MONOTONIC_PROBE)
"""Any of the host-log time modes `peel_host_times` reads."""


def uptime(body: pl.Expr) -> pl.Expr:
    """A `dmesg`-stamped line's seconds since boot, as `_uptime_s` (`DMESG_UPTIME`)."""
    return body.str.extract(DMESG_UPTIME, 1).cast(pl.Float64).alias("_uptime_s")


def peel_host_times(df: pl.DataFrame) -> pl.DataFrame:
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
            uptime(body),
            body.str.replace(DMESG_UPTIME, ""),
            pl.lit(True).alias("_jiso"),
        ),
    )


def peel_syslog(d: pl.DataFrame) -> pl.DataFrame:
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


def peel_journald_iso(d: pl.DataFrame) -> pl.DataFrame:
    m = pl.col("_m").struct.field
    d = extract_head(d, SYSLOG_AFTER_ISO, "_m", rest="_rest")
    return d.with_columns(
        m("host").alias(s.HOST),
        m("ident").alias(s.PROCESS),
        m("pid").alias("_pid"),
        pl.col("_rest").alias("body"),
        pl.lit("iso").alias("_journal"),
    ).drop("_m", "_rest")


def journald_json(d: pl.DataFrame) -> pl.DataFrame:
    """`journalctl -o json`: `__REALTIME_TIMESTAMP` (µs since the epoch, UTC), `_HOSTNAME`,
    `SYSLOG_IDENTIFIER`, `_PID`, `MESSAGE`. A MESSAGE journald stored as bytes (a JSON array)
    is decoded; an entry that is not valid JSON stays as it was (an unparsed line)."""
    rows = []
    for obj in json_objects(d["body"]):
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
                "h": json_text(obj.get("_HOSTNAME")),
                "i": json_text(obj.get("SYSLOG_IDENTIFIER") or obj.get("_COMM")),
                "p": json_text(obj.get("_PID") or obj.get("SYSLOG_PID")),
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
