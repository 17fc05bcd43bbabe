"""The working frame's columns that `parsers/` hand to ingest, which turns them into the tables.

The parsers write a line's clock reading as parts, because a line without a year cannot be
made a time until ingest knows the file's reference year (`forensics.ingestion.timing`).
"""

from __future__ import annotations

from typing import Final

TIME_PARTS: Final = ("_Y", "_mo", "_d", "_H", "_M", "_S", "_us")
"""Year, month, day, hour, minute, second, microsecond: Int32, null where the line has none."""
