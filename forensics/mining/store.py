"""Templates and events on disk. Persistence is plain JSON and Parquet: Drain3's own state is
jsonpickle, and loading jsonpickle from a user-supplied file can execute code, so it never is."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import polars as pl

from forensics import schema as s
from forensics.mining.masks import params_expr
from forensics.mining.table import COUNT, FIRST_SEEN, LAST_SEEN, PARAMS, TEMPLATE, TEMPLATE_ID, TEMPLATES_FILE_VERSION


def write_events(events: pl.DataFrame, template_ids: pl.Series | None, path: Path) -> None:
    """Write the events table with its `template_id` and `params` (the masked values) columns.

    The params are computed here, at write time, on the streaming engine: nothing in the
    analysis reads them, and at millions of rows a list column is worth not holding.
    """
    lf = events.lazy()
    if template_ids is not None and TEMPLATE_ID not in events.columns:
        lf = lf.with_columns(template_ids.alias(TEMPLATE_ID))
    lf.with_columns(params_expr(pl.col(s.MESSAGE)).alias(PARAMS)).sink_parquet(path, statistics=False)


def save_templates(
    templates: pl.DataFrame, path: Path, window: tuple[datetime | None, datetime | None] | None = None
) -> None:
    """Write the templates (id, text, source, count, rate) as plain JSON, usable as `--baseline`."""
    lo, hi = window or (templates[FIRST_SEEN].min(), templates[LAST_SEEN].max())
    span = (hi - lo).total_seconds() if lo is not None and hi is not None else None
    rows = []
    for r in templates.sort(TEMPLATE_ID).iter_rows(named=True):
        rows.append(
            {
                "id": r[TEMPLATE_ID],
                "template": r[TEMPLATE],
                "source": r[s.SOURCE],
                "count": r[COUNT],
                "rate_per_s": (r[COUNT] / span) if span else None,
            }
        )
    doc = {
        "version": TEMPLATES_FILE_VERSION,
        "window": {"start": lo.isoformat() if lo else None, "end": hi.isoformat() if hi else None, "seconds": span},
        "templates": rows,
    }
    path.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")


def load_templates(path: Path) -> tuple[pl.DataFrame, float | None]:
    """Read a templates JSON written by `save_templates`. Returns (templates, window seconds).

    Plain `json` only: nothing in the file can make code run.
    """
    from forensics.errors import ParseError

    try:
        doc = json.loads(Path(path).read_text())
        rows = doc["templates"]
        span = (doc.get("window") or {}).get("seconds")
        df = pl.DataFrame(
            {
                TEMPLATE_ID: [r["id"] for r in rows],
                TEMPLATE: [r["template"] for r in rows],
                s.SOURCE: [r.get("source") for r in rows],
                COUNT: [int(r["count"]) for r in rows],
            },
            schema={TEMPLATE_ID: pl.String, TEMPLATE: pl.String, s.SOURCE: pl.String, COUNT: pl.Int64},
        )
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ParseError(
            f"not a forensics templates file ({type(e).__name__}: {e})",
            path=str(path),
            hint="write one with `forensics templates LOGDIR --save known.json`",
        ) from e
    return df, span
