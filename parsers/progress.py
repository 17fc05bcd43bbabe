"""Progress bars (tqdm) printed beside the loggers' lines: weights loading, CUDA graph capture, downloads.

    Loading safetensors checkpoint shards:  45% Completed | 49/109 [16:20<20:00, 20.0s/it]
    Capturing CUDA graph shapes: 100%|██████████| 67/67 [00:20<00:00,  3.28it/s]
    model-00001-of-00004.safetensors:  37%|███▋      | 1.84G/4.98G [00:12<00:21, 148MB/s]

tqdm writes them to stderr itself, not through logging: no level and no time of their own (the
wrapper's stamp, else the previous line's). They say what a starting engine was doing when it
went quiet: `forensics.diagnosis.rootcause` reads a pod killed by its probe while it was still loading its
model by them.
"""

from __future__ import annotations

import polars as pl

from parsers import schema as s
from parsers._common import no_time

DETECT = r"^[^|\r\n]{1,200}?: *\d{1,3}%(?: Completed \||\|)"
"""`desc: NN%` then vLLM's `Completed |` (its `bar_format`) or tqdm's own `|bar|`."""


def parse(df: pl.DataFrame) -> pl.DataFrame:
    """Source `progress`, level INFO, the bar's line as the message."""
    return df.with_columns(
        pl.lit("progress").alias(s.SOURCE),
        pl.lit("INFO").alias(s.LEVEL),
        pl.col("body").str.strip_chars_end().alias(s.MESSAGE),
        *no_time(),
    )
