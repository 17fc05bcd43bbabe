"""TensorRT-LLM's lines: its Python logger's and its C++ runtime's (source `trtllm`).

    [11/02/2025-14:05:09] [TRT-LLM] [I] Load engine takes: 41.2 sec                 # Python logger
    [11/02/2025-14:06:30] [TRT-LLM] [RANK 1] [E] Error in event loop: ...            # one rank's (PyTorch flow)
    [11/02/2025-14:05:01] [TRT] [W] Unused input: position_ids                       # TensorRT's own
    [TensorRT-LLM][INFO] Allocated 18.25 GiB for max tokens in paged KV cache (59840).
    [TensorRT-LLM][ERROR][3] Assertion failed: ...                                   # C++, with the rank
    [TensorRT-LLM] TensorRT-LLM version: 0.17.0                                      # a print, no level

Triton's TensorRT-LLM backend, trtllm-serve and NVIDIA Dynamo's TRT-LLM workers log these beside
(or instead of) vLLM. Before, each was an `unknown` line without level or time, so an engine's
ERROR counted for nothing. The Python logger's time is `%m/%d/%Y-%H:%M:%S`, local (`--tz`) and
to the second; the C++ runtime's lines have no time of their own (they inherit one). The level
is a letter (`V D I W E F`) or the C++ logger's word; the rank, where a line names one, is the
rank. The component is the logger that wrote it: `TRT-LLM`, `TRT` (TensorRT) or `TensorRT-LLM`
(the C++ runtime).
"""

from __future__ import annotations

import polars as pl

from parsers import schema as s
from parsers._common import extract_head, level_from_letter, level_from_word, time_parts

_WORDS = r"TRACE|DEBUG|INFO|WARNING|ERROR"
DETECT = (
    r"^\[\d{2}/\d{2}/\d{4}-\d{2}:\d{2}:\d{2}\] \[(?:TRT-LLM|TRT)\](?: \[RANK \d+\])? \[[VDIWEF]\]"
    rf"|^\[TensorRT-LLM\](?:\[(?:{_WORDS})\]| )"
)
PATTERN = (
    r"^(?:\[(?P<mo>\d{2})/(?P<d>\d{2})/(?P<Y>\d{4})-(?P<H>\d{2}):(?P<M>\d{2}):(?P<S>\d{2})\] "
    r"\[(?P<tag>TRT-LLM|TRT)\](?: \[RANK (?P<rank>\d+)\])? \[(?P<letter>[VDIWEF])\]"
    rf"|\[(?P<cpp>TensorRT-LLM)\](?:\[(?P<word>{_WORDS})\](?:\[(?P<cpp_rank>\d+)\])?)?) ?(?P<msg>.*)$"
)


def parse(df: pl.DataFrame) -> pl.DataFrame:
    """Parse rows whose `body` is a TensorRT-LLM line; other rows get a null `source`."""
    df = extract_head(df, PATTERN, "_m")
    m = pl.col("_m").struct.field
    return df.with_columns(
        pl.when(m("msg").is_not_null()).then(pl.lit("trtllm")).alias(s.SOURCE),
        pl.coalesce(level_from_letter(m("letter")), level_from_word(m("word"))).alias(s.LEVEL),
        pl.coalesce(m("tag"), m("cpp")).alias(s.COMPONENT),
        pl.coalesce(m("rank"), m("cpp_rank"), pl.col("_rank")).alias("_rank"),
        m("msg").alias(s.MESSAGE),
        # (to the second; a C++ runtime's line has no time: all its parts null)
        *time_parts(lambda g: m(g) if g != "frac" else pl.lit(None, pl.String)),
    ).drop("_m")
