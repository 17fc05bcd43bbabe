"""Template mining: event messages -> templates (`Cache corruption detected in block <NUM>`).

`drain` groups messages with one Drain3 tree per source, `masks` says what a variable looks
like, `dedup` keys messages so each distinct shape is mined once, `table` names the templates
table's columns, `store` writes and reads them, `compare` sets an incident against a baseline.
"""

from forensics.mining.compare import diff, window_counts
from forensics.mining.drain import MinerConfig, MiningResult, cluster, merge_shards, mine, summarise, template_id
from forensics.mining.masks import MASKS, MAX_CHARS, MAX_TOKENS, first_line, mask_expr, params_expr
from forensics.mining.store import load_templates, save_templates, write_events
from forensics.mining.table import (
    COUNT,
    FIRST_SEEN,
    LAST_SEEN,
    PARAMS,
    TEMPLATE,
    TEMPLATE_ID,
    TEMPLATES_COLUMNS,
    TEMPLATES_FILE_VERSION,
)

__all__ = [
    "COUNT",
    "FIRST_SEEN",
    "LAST_SEEN",
    "MASKS",
    "MAX_CHARS",
    "MAX_TOKENS",
    "PARAMS",
    "TEMPLATE",
    "TEMPLATES_COLUMNS",
    "TEMPLATES_FILE_VERSION",
    "TEMPLATE_ID",
    "MinerConfig",
    "MiningResult",
    "cluster",
    "diff",
    "first_line",
    "load_templates",
    "mask_expr",
    "merge_shards",
    "mine",
    "params_expr",
    "save_templates",
    "summarise",
    "template_id",
    "window_counts",
    "write_events",
]
