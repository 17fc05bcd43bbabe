"""`forensics analyze LOGDIR`: find incidents, rank root causes, write analysis.json (and the report)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from forensics.cli import _console


def analyze(
    paths: Annotated[list[Path], typer.Argument(help="Log directories or files (gzip is read transparently).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory.")] = Path("forensics-report"),
    year: Annotated[
        int | None, typer.Option(help="Year for timestamps without one, when no dated log is beside them.")
    ] = None,
    tz: Annotated[str, typer.Option(help="Zone of local-time formats (vLLM, c10, klog, NCCL).")] = "UTC",
    captured_at: Annotated[
        datetime | None, typer.Option(help="When `kubectl get events`/`describe` output was captured.")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No summary, no progress bar.")] = False,
) -> None:
    """Find the incident(s) in the logs, rank root cause vs symptoms, and write the results."""
    from forensics.analysis import analyze as run
    from forensics.analysis import write

    if captured_at is not None and captured_at.tzinfo is None:
        from datetime import UTC

        captured_at = captured_at.replace(tzinfo=UTC)
    with _console.progress(quiet) as report:
        result = run(paths, year=year, tz=tz, captured_at=captured_at, progress=report)
    written = write(result, out)
    if not quiet:
        _console.print_verdict(result.to_json(), written)
