"""What pasting a log into an issue, a chat or a terminal adds: quote marks, indents, TUI boxes,
line numbers, CI timestamps. Stripped so the log under them reads as logged."""

from __future__ import annotations

import polars as pl

from parsers import schema as s
from parsers._common import apply
from parsers.wrappers.heads import (
    CI_PIPE_PROBE,
    COMPOSE_PROBE,
    LOKI_LABELS_PROBE,
    MPI_PROBE,
    PRODUCER_START,
    any_of,
    parse_rfc3339,
)
from parsers.wrappers.host import (
    DMESG_PROBE,
    DMESG_T_PROBE,
    SYSLOG_AFTER_ISO,
    SYSLOG_PROBE,
    peel_journald_iso,
    peel_syslog,
    uptime,
)

# Copy/paste artefacts from issue threads and terminals (log-formats §6.15).
BOX_PROBE = r"^│ ?"
"""k9s and other TUI panes: `│ INFO 07-28 ... │`."""


LINENO_PROBE = r"^\[\d{1,7}\] " + PRODUCER_START
"""Pasted line numbers before a known producer: `[80746] INFO 07-28 ...`."""


QUOTE_PROBE = r"^>(?: |$)"


QUOTE = r"^(?:>(?: |$))+"
"""A Markdown quote (`> ` before every line of a log quoted in an issue's reply, nested `> > `);
not a REPL's `>>> `."""


INDENT_PROBE = r"^[ \t]{1,8}" + PRODUCER_START
"""A log line indented in a paste (a Markdown list item's code block, an e-mail): blanks before
a producer's start, which no continuation line has (those are taken as continuations)."""


DESKTOP_PROBE = r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} " + PRODUCER_START
"""Docker Desktop's log view: `2024-06-10 13:26:25 INFO 06-10 ...` (local time, no zone)."""


CI_TS_PROBE = r"^\[\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})\] "
"""CI runners: `[2025-06-26T16:27:15Z] INFO ...`."""


PASTED = any_of(
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
"""The paste and host wrappers `peel_pasted` strips, in its order."""


def peel_pasted(df: pl.DataFrame) -> pl.DataFrame:
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
    df = apply(df, body.str.contains(SYSLOG_PROBE), peel_syslog)
    # journalctl -o short-iso: the ISO time's offset `+0000`, or `+00:00` with an ident's pid after.
    df = apply(
        df,
        pl.col("_jiso") & pl.col("_syslog").is_null() & body.str.contains(SYSLOG_AFTER_ISO),
        peel_journald_iso,
    )
    df = apply(
        df,
        body.str.contains(DMESG_PROBE),
        lambda d: d.with_columns(
            body.str.replace(DMESG_PROBE, ""),
            uptime(body),
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
