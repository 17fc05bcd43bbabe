"""Python-logging family: LMCache (the KV store beside vLLM), torch elastic, Ray, generic, exceptions.

    [2025-05-04 05:25:03,029] LMCache ERROR: Cache corruption detected ... (storage.py:88:lmcache.x)
    [2024-03-18 17:38:50,208] torch.distributed.elastic.multiprocessing.api: [ERROR] failed
    [2023-12-07 06:56:42,105 E 409240 409362] logging.cc:97: ...
    2024-06-01 10:00:00,123 - some.module - WARNING - text
    torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ...        # exception line
    /usr/lib/python3.12/site-packages/torch/cuda/__init__.py:61: FutureWarning: ...  # warnings module

The generic form is a fallback that keeps time and level for any logger using
`%(asctime)s`; these timestamps have a year but no zone (`--tz`, default UTC).
"""

from __future__ import annotations

import polars as pl

from parsers import schema as s
from parsers._common import extract_head, frac_to_us, level_from_letter, level_from_word, no_time, time_parts, to_i32

DETECT = r"^\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}"
STAMP = (
    r"^\[?(?P<Y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})[ T](?P<H>\d{2}):(?P<M>\d{2}):(?P<S>\d{2})(?:[,.](?P<frac>\d{1,9}))?"
    r"(?P<ray> [DIWECF] \d+ \d+)?\]?[ ,:\-|\t]*(?P<rest>.*)$"
)
LMCACHE = (
    r"^(?P<app>LMCache|Mooncake\w*|KVStore|kv_store|kvstore)\s*:?\s*(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s*:\s*"
    r"(?P<msg>.*?)(?: \((?P<file>[\w./\-]+\.py):(?P<lno>\d+)(?::(?P<logger>[\w.]+))?\))?\s*$"
)
_LEVEL = r"DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL"
NAMED = (
    rf"^(?:(?P<n1>[\w.\-]+) - (?P<l1>{_LEVEL}) - "
    rf"|\[(?P<l2>{_LEVEL})\] (?:\[(?P<n2>[^\]\s]+)\] |(?P<n3>[\w.\-]+): )?"
    rf"|(?P<l3>{_LEVEL}) +(?:\[(?P<n4>[^\]\s]+)\] |(?P<n5>[\w.\-]+): )"
    rf"|(?P<l4>{_LEVEL}): +"
    rf"|(?P<l5>{_LEVEL}) +(?P<f5>[\w./\-]+\.py):\d+ -- "
    rf"|(?P<n6>[\w.\-]+): \[(?P<l6>{_LEVEL})\] )(?P<msg>.*)$"
)
"""The level and logger name of the common `%(asctime)s` formats, after the time: the logging
cookbook's `%(name)s - %(levelname)s - %(message)s`, `[%(levelname)s] [%(name)s] ...`,
`%(levelname)s %(name)s: ...`, and `%(levelname)s: ... (%(filename)s:%(lineno)d:%(name)s)`
(vLLM's production-stack router, LMCache's layout without its name), Ray's driver's
`%(levelname)s %(filename)s:%(lineno)s -- %(message)s` (after a tab), torch elastic's
`%(name)s: [%(levelname)s] %(message)s` (torchrun's agent: `...multiprocessing.api: [ERROR]
failed (exitcode: -6) ...`); the logger, or the file, is the component and the message is
what follows."""
LEVEL_IN_TEXT = r"(?:^|[\s\[|\-])(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)(?:[\s\]:|\-]|$)"
DETECT_BASIC = r"^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.\-]+:"
BASIC = r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL):(?P<logger>[\w.\-]+):(?P<msg>.*)$"
"""`logging.basicConfig()`'s default format, `%(levelname)s:%(name)s:%(message)s`: scripts and
tools around the engine (`ERROR:root:...`, `WARNING:vllm.engine:...`). No time: it inherits one."""
DETECT_EXC = r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Fault)(?::|$)"
EXC = r"^(?P<exc>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Fault))(?::\s?(?P<msg>.*))?$"

DETECT_WARNING = r"^(?:(?:[A-Za-z]:)?[^\s:]+\.pyx?|<[^>\n]+>):\d+: [A-Z]\w*Warning: "
WARNING = r"^(?P<file>(?:[A-Za-z]:)?[^\s:]+\.pyx?|<[^>\n]+>):(?P<lno>\d+): (?P<cat>[A-Z]\w*Warning): (?P<msg>.*)$"
"""Python's `warnings` module writing to stderr (`warnings.formatwarning`): `path.py:61:
FutureWarning: The pynvml package is deprecated...`, the warning's source line indented under it
(a continuation). Library deprecations mostly, but also torch's `UserWarning`s about the
collectives (`barrier(): using the device under current context`), NCCL and CUDA setup. No
time: it inherits one."""

FAST_KV = r"^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}\] LMCache (?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL): "
"""LMCache's own layout, parsed positionally after this probe: `STAMP` + `LMCACHE` capture the whole
line with a lazy message group, ~13 µs a line, and a KV store beside a busy engine logs every store."""
KV_TAIL = r" \([\w./\-]+\.py:\d+(?::[\w.]+)?\)\s*$"
"""LMCache's ` (file.py:N:logger)` at the end of a message, as `LMCACHE` takes it."""
KV_TAIL_FILE = KV_TAIL.replace(r"\([\w./\-]+\.py", r"\(([\w./\-]+\.py)", 1)
"""`KV_TAIL` with its file captured."""


def parse(df: pl.DataFrame) -> pl.DataFrame:
    """Parse timestamped Python-logging lines; LMCache-style lines become source `kv-store`."""
    fast = df.select(pl.col("body").str.contains(FAST_KV)).to_series()
    if fast.all():
        return _parse_kv_fast(df)
    if not fast.any():
        return _parse_regex(df)
    return pl.concat([_parse_kv_fast(df.filter(fast)), _parse_regex(df.filter(~fast))], how="diagonal_relaxed")


def _parse_kv_fast(df: pl.DataFrame) -> pl.DataFrame:
    """`[2025-05-04 05:25:03,029] LMCache ERROR: message (file.py:88:logger)`: the same columns
    `_parse_regex` gives these lines. Its message group is lazy and followed by an optional
    tail and `\\s*$`, so the message starts after the whitespace that follows `LEVEL:` and ends
    before the tail when there is one, else before the trailing whitespace."""
    body = pl.col("body")
    after = body.str.slice(34)  # past `[date time,mmm] LMCache `
    colon = after.str.find(":", literal=True)  # the level word is ASCII: a byte offset is a char offset
    df = df.with_columns(
        after.str.slice(colon + 1).str.strip_chars_start().alias("_text"),
        after.str.slice(0, colon).alias("_lvl"),
    )
    text = pl.col("_text")
    df = df.with_columns(text.str.replace(KV_TAIL, "").alias("_msg"))  # a DFA finds the tail; no captures
    msg = pl.col("_msg")
    tail = text.str.len_bytes() > msg.str.len_bytes()
    # The tail ` (file.py:N:logger)`: the file ends at its first `:` (`[\w./\-]` has none).
    file = text.str.tail(text.str.len_chars() - msg.str.len_chars()).str.slice(2).str.splitn(":", 2)

    def num(off: int, n: int) -> pl.Expr:
        return to_i32(body.str.slice(off, n))

    return df.with_columns(
        pl.lit("kv-store").alias(s.SOURCE),
        level_from_word(pl.col("_lvl")).alias(s.LEVEL),
        num(1, 4).alias("_Y"),
        num(6, 2).alias("_mo"),
        num(9, 2).alias("_d"),
        num(12, 2).alias("_H"),
        num(15, 2).alias("_M"),
        num(18, 2).alias("_S"),
        frac_to_us(body.str.slice(21, 3)).alias("_us"),
        pl.when(tail).then(file.struct.field("field_0")).alias(s.COMPONENT),
        pl.when(tail).then(msg).otherwise(text.str.strip_chars_end()).alias(s.MESSAGE),
    ).drop("_text", "_lvl", "_msg")


def _parse_regex(df: pl.DataFrame) -> pl.DataFrame:
    m = pl.col("_m").struct.field
    df = extract_head(df, STAMP, "_m")
    rest = m("rest")
    kv = rest.str.extract_groups(LMCACHE)
    k = kv.struct.field
    ray = m("ray").str.strip_chars()
    level_txt = rest.str.slice(0, 80).str.extract(LEVEL_IN_TEXT, 1)
    df = df.with_columns(rest.str.extract_groups(NAMED).alias("_named"))
    n = pl.col("_named").struct.field
    # `LEVEL: message (file.py:N:logger)`: the file from the tail, the message without it.
    tail_file = pl.when(n("l4").is_not_null()).then(n("msg").str.extract(KV_TAIL_FILE, 1))
    named_msg = pl.when(tail_file.is_not_null()).then(n("msg").str.replace(KV_TAIL, "")).otherwise(n("msg"))
    source = (
        pl.when(rest.is_null())
        .then(None)
        .when(k("msg").is_not_null())
        .then(pl.lit("kv-store"))
        .when(ray.is_not_null())
        .then(pl.lit("ray"))
        .when(rest.str.starts_with("torch."))
        .then(pl.lit("torch"))
        .otherwise(pl.lit("python"))
    )
    return df.with_columns(
        source.alias(s.SOURCE),
        pl.coalesce(
            level_from_word(k("level")),
            level_from_letter(ray.str.slice(0, 1)),
            level_from_word(pl.coalesce(n("l1"), n("l2"), n("l3"), n("l4"), n("l5"), n("l6"))),
            level_from_word(level_txt),
        ).alias(s.LEVEL),
        *time_parts(m),
        pl.coalesce(
            k("file"),
            n("n1"),
            n("n2"),
            n("n3"),
            n("n4"),
            n("n5"),
            n("n6"),
            tail_file,
            n("f5"),
            rest.str.extract(r"^([\w.]+):\s", 1),
        ).alias(s.COMPONENT),
        pl.coalesce(k("msg"), pl.when(ray.is_null()).then(named_msg), rest).alias(s.MESSAGE),
    ).drop("_m", "_named")


def parse_basic(df: pl.DataFrame) -> pl.DataFrame:
    """`BASIC` lines: level, the logger as component, the message."""
    m = pl.col("_m").struct.field
    df = extract_head(df, BASIC, "_m")
    return df.with_columns(
        pl.when(m("msg").is_not_null()).then(pl.lit("python")).alias(s.SOURCE),
        m("level").alias(s.LEVEL),
        m("logger").alias(s.COMPONENT),
        m("msg").alias(s.MESSAGE),
        *no_time(),
    ).drop("_m")


def parse_warning(df: pl.DataFrame) -> pl.DataFrame:
    """`WARNING` lines: level WARNING, the category as component, the line as the message (the
    file names the package that warned)."""
    m = pl.col("_m").struct.field
    df = extract_head(df, WARNING, "_m")
    return df.with_columns(
        pl.when(m("cat").is_not_null()).then(pl.lit("python")).alias(s.SOURCE),
        pl.when(m("cat").is_not_null()).then(pl.lit("WARNING")).alias(s.LEVEL),
        m("cat").alias(s.COMPONENT),
        pl.col("body").str.strip_chars_end().alias(s.MESSAGE),
        *no_time(),
    ).drop("_m")


def parse_exception(df: pl.DataFrame) -> pl.DataFrame:
    """A bare `pkg.SomeError: message` line (end of a traceback, or pasted alone)."""
    m = pl.col("_m").struct.field
    df = df.with_columns(pl.col("body").str.extract_groups(EXC).alias("_m"))
    return df.with_columns(
        pl.when(m("exc").is_not_null()).then(pl.lit("python")).alias(s.SOURCE),
        pl.lit("ERROR").alias(s.LEVEL),
        m("exc").alias(s.COMPONENT),
        pl.col("body").str.strip_chars_end().alias(s.MESSAGE),
        pl.lit(True).alias("_exc"),
        *no_time(),
    ).drop("_m")
