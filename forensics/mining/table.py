"""The templates table's columns: one row per mined template, written as `templates.parquet`."""

from __future__ import annotations

from forensics import schema as s

TEMPLATE_ID: str = s.TEMPLATE_ID


TEMPLATE: str = s.TEMPLATE


PARAMS: str = "params"


COUNT: str = "count"


FIRST_SEEN: str = "first_seen"


LAST_SEEN: str = "last_seen"


TEMPLATES_FILE_VERSION = 1


TEMPLATES_COLUMNS: tuple[str, ...] = (
    TEMPLATE_ID,
    TEMPLATE,
    s.SOURCE,
    COUNT,
    FIRST_SEEN,
    LAST_SEEN,
    "hosts",
    "pods",
    s.LEVEL,
    "example",
    "example_file",
    "example_line",
)
"""The templates table (`summarise`, and a sharded run's reduce of its shards' tables), in order."""
