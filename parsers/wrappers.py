"""Outer layers peeled off every physical line before the producer format is matched.

A line is an onion (see shared docs, log-formats §0)::

    2024-08-30T15:30:57.763092820+08:00 (APIServer pid=66) INFO 08-30 ... [loggers.py:118] ...
    ^ kubectl --timestamps / CRI        ^ vLLM process prefix ^ producer (vllm)

`peel()` takes the working frame (`_fid`, `line`, `body`) and strips, in order: `\\r`
artefacts, docker json-file, CRI and `kubectl logs --timestamps` prefixes (their
RFC3339 time becomes `_outer_ts`, the only fully qualified time most logs have),
journald/syslog prefixes, docker-compose and CI `|` prefixes, ANSI colour codes and
their ESC-less residue, vLLM/Ray process prefixes and torchrun `[rankN]:` prefixes.
CRI partial lines (`P`) are reassembled with the `F` line that completes them.
"""

from __future__ import annotations

import json

import polars as pl

from forensics import schema as s

RFC3339 = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})"
CRI = rf"^(?P<ts>{RFC3339}) (?P<stream>stdout|stderr) (?P<tag>[^ ]+) ?(?P<rest>.*)$"
K8S_TS = rf"^(?P<ts>{RFC3339}) (?P<rest>.*)$"
SYSLOG = (
    r"^(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +(?P<day>\d{1,2}) "
    r"(?P<H>\d{2}):(?P<M>\d{2}):(?P<S>\d{2})(?:\.(?P<frac>\d+))? (?P<host>[^\s:]+) "
    r"(?P<ident>[A-Za-z][\w.\-/]*)(?:\[(?P<pid>\d+)\])?: ?(?P<rest>.*)$"
)
SYSLOG_AFTER_ISO = r"^(?P<host>[\w.\-]+) (?P<ident>[A-Za-z][\w.\-/]*)(?:\[(?P<pid>\d+)\])?: ?(?P<rest>.*)$"
"""`journalctl -o short-iso` puts an ISO time (offset without colon) before `host ident[pid]:`."""
COMPOSE = r"^(?P<svc>[A-Za-z0-9][\w.\-]*)\s+\| ?(?P<rest>.*)$"
CI_PIPE = r"^\s+\| ?(?P<rest>.*)$"
MPI_TAG = r"^\[\d+,\d+\]<(?:stdout|stderr)>: ?(?P<rest>.*)$"
ANSI = r"\x1b\[[0-9;?]*[A-Za-z]"
ANSI_RESIDUE = r"(^|[^\w\]])\[[0-9]{1,2}(?:;[0-9]{1,2})*m"
PROC = r"^\s*\((?P<proc>[A-Za-z]\w*(?: rank=\d+)?) pid=(?P<pid>\d+)(?:, ip=(?P<ip>[\d.]+))?\) ?(?P<rest>.*)$"
RAY_REPEAT = r"\s*\[repeated \d+x across cluster\]\s*$"
RANK = r"^\s?\[?rank(?P<rank>\d+)\]: ?(?P<rest>.*)$"
MONTHS = {m: i + 1 for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split())}


def _g(pattern: str) -> pl.Expr:
    return pl.col("body").str.extract_groups(pattern).alias("_m")


def parse_rfc3339(expr: pl.Expr) -> pl.Expr:
    """RFC3339 / RFC3339Nano with `Z`, `+hh:mm` or `+hhmm` to UTC microseconds."""
    norm = expr.str.replace(r"Z$", "+00:00").str.replace(r"([+-]\d{2})(\d{2})$", "$1:$2")
    return norm.str.to_datetime("%Y-%m-%dT%H:%M:%S%.f%:z", strict=False, time_unit="us").dt.convert_time_zone("UTC")


def _peel_where(df: pl.DataFrame, probe: str, pattern: str, fields: dict[str, pl.Expr]) -> pl.DataFrame:
    """Where `body` matches `probe` (a cheap anchored regex), apply `pattern` and set `fields`.

    `fields` maps output column -> expression over the struct column `_m`; `body` is
    replaced by the `rest` group. Rows not matching are left untouched.
    """
    hit = pl.col("body").str.contains(probe)
    if not df.select(hit.any()).item():
        return df
    df = df.with_columns(pl.when(hit).then(_g(pattern)).alias("_m"))
    ok = pl.col("_m").struct.field("rest").is_not_null()
    upd = {
        name: pl.when(ok).then(e).otherwise(pl.col(name) if name in df.columns else None) for name, e in fields.items()
    }
    upd["body"] = pl.when(ok).then(pl.col("_m").struct.field("rest")).otherwise(pl.col("body"))
    return df.with_columns(**upd).drop("_m")


def peel(df: pl.DataFrame) -> pl.DataFrame:
    """Strip the outer layers of every line (see module docstring); adds wrapper columns."""
    m = pl.col("_m").struct.field
    df = df.with_columns(
        pl.lit(None, pl.Datetime("us", "UTC")).alias("_outer_ts"),
        pl.lit(None, pl.String).alias(s.STREAM),
        pl.lit(None, pl.String).alias("_tag"),
        pl.lit(None, pl.String).alias(s.HOST),
        pl.lit(None, pl.String).alias(s.PROCESS),
        pl.lit(None, pl.String).alias("_pid"),
        pl.lit(None, pl.String).alias("_syslog"),
        pl.lit(None, pl.String).alias("_rank"),
    )
    # \r from vLLM's NewLineFormatter (`\r\n`), `^M` in pastes, tqdm's in-place redraws.
    if df.select(pl.col("body").str.contains(r"\r|\^M$").any()).item():
        df = df.with_columns(pl.col("body").str.replace(r"(?:\r|\^M)+$", "").str.replace(r"^.*\r", ""))
    df = _docker_json(df)
    df = _peel_where(
        df,
        r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\S* (?:stdout|stderr) [^ ]+",
        CRI,
        {"_outer_ts": parse_rfc3339(m("ts")), s.STREAM: m("stream"), "_tag": m("tag").str.slice(0, 1)},
    )
    df = _peel_where(df, r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}", K8S_TS, {"_outer_ts": parse_rfc3339(m("ts"))})
    df = _reassemble_partials(df)
    df = _peel_where(
        df,
        r"^[A-Z][a-z]{2} +\d{1,2} \d{2}:\d{2}:\d{2}(?:\.\d+)? [^\s:]+ [A-Za-z]",
        SYSLOG,
        {
            "_syslog": pl.concat_str(
                [m("mon"), m("day").str.zfill(2), m("H"), m("M"), m("S"), m("frac").fill_null("")], separator="|"
            ),
            s.HOST: m("host"),
            s.PROCESS: m("ident"),
            "_pid": m("pid"),
        },
    )
    df = _journald_iso(df)
    df = _peel_where(df, r"^\[\d+,\d+\]<", MPI_TAG, {})
    df = _peel_where(df, r"^[A-Za-z0-9][\w.\-]*\s+\| ", COMPOSE, {})
    df = _peel_where(df, r"^\s+\| ", CI_PIPE, {})
    if df.select(pl.col("body").str.contains(r"\x1b|\[[0-9;]+m").any()).item():
        df = df.with_columns(pl.col("body").str.replace_all(ANSI, "").str.replace_all(ANSI_RESIDUE, "$1"))
    df = _peel_where(df, r"^\s*\([A-Za-z]\w*(?: rank=\d+)? pid=\d+", PROC, {s.PROCESS: m("proc"), "_pid": m("pid")})
    if df.select(pl.col("body").str.contains("across cluster]", literal=True).any()).item():
        df = df.with_columns(pl.col("body").str.replace(RAY_REPEAT, ""))
    df = _peel_where(df, r"^\s?\[?rank\d+\]:", RANK, {"_rank": m("rank")})
    return df


def _journald_iso(df: pl.DataFrame) -> pl.DataFrame:
    """`journalctl -o short-iso`: the ISO prefix was taken as kubectl's; peel `host ident[pid]:`."""
    if df.is_empty() or df["_outer_ts"].null_count() == df.height:
        return df
    return _peel_where(
        df.with_columns(pl.col("body").alias("_b0")),
        r"^[\w.\-]+ [A-Za-z][\w.\-/]*(?:\[\d+\])?: ",
        SYSLOG_AFTER_ISO,
        {s.HOST: pl.col("_m").struct.field("host"), s.PROCESS: pl.col("_m").struct.field("ident")},
    ).drop("_b0")


def _docker_json(df: pl.DataFrame) -> pl.DataFrame:
    """Docker's json-file driver: `{"log":"...\\n","stream":"stdout","time":"..."}` per line."""
    hit = df.select(pl.col("body").str.starts_with('{"log":')).to_series()
    if not hit.any():
        return df
    dtype = pl.Struct({"log": pl.String, "stream": pl.String, "time": pl.String})
    rows = df.filter(hit)
    decoded = []
    for body in rows["body"]:
        try:
            obj = json.loads(body)
        except ValueError:
            obj = None
        decoded.append(obj if isinstance(obj, dict) else None)
    rows = rows.with_columns(pl.Series("_m", decoded, dtype=dtype))
    ok = pl.col("_m").struct.field("log").is_not_null()
    rows = rows.with_columns(
        body=pl.when(ok).then(pl.col("_m").struct.field("log").str.strip_suffix("\n")).otherwise(pl.col("body")),
        **{
            s.STREAM: pl.when(ok).then(pl.col("_m").struct.field("stream")).otherwise(pl.col(s.STREAM)),
            "_outer_ts": pl.when(ok)
            .then(parse_rfc3339(pl.col("_m").struct.field("time")))
            .otherwise(pl.col("_outer_ts")),
        },
    ).drop("_m")
    return pl.concat([df.filter(~hit), rows]).sort("_fid", "_seg", s.LINE)


def _reassemble_partials(df: pl.DataFrame) -> pl.DataFrame:
    """Join CRI `P` (partial) lines with the following lines of the same stream up to an `F`.

    The runtime splits lines longer than 16 KiB into `P` pieces; the event is the
    concatenation, located at its first piece. Folded pieces are counted in `_folded`.
    """
    if not df.select((pl.col("_tag") == "P").any()).item():
        return df.with_columns(pl.lit(0, pl.UInt32).alias("_pfold"))
    keys = ["_fid", "_seg", s.STREAM]
    df = df.with_columns(
        (pl.col("_tag").shift(1).over(keys, order_by=s.LINE).fill_null("F") != "P")
        .cum_sum()
        .over(keys, order_by=s.LINE)
        .alias("_pg")
    )
    agg_cols = [c for c in df.columns if c not in (*keys, "_pg", "body", s.LINE)]
    out = (
        df.group_by([*keys, "_pg"], maintain_order=True)
        .agg(
            pl.col(s.LINE).min(),
            pl.col("body").str.join(""),
            (pl.len() - 1).cast(pl.UInt32).alias("_pfold"),
            *[pl.col(c).first() for c in agg_cols],
        )
        .drop("_pg")
        .sort("_fid", "_seg", s.LINE)
    )
    return out.select([c for c in df.columns if c != "_pg"] + ["_pfold"])


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
