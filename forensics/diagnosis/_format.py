"""How times and numbers are written in `analysis.json`: ISO 8601 UTC, one decimal."""

from __future__ import annotations

from datetime import datetime

import numpy as np


def iso(t: datetime | None) -> str | None:
    """ISO 8601 in UTC; None for no time and for the file-order stand-ins of untimed logs."""
    if t is None or t.year < 1901:
        return None
    return t.isoformat().replace("+00:00", "Z")


def round1(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and np.isnan(x)) else round(float(x), 1)
