"""`forensics ingest LOGDIR --out DIR`: parse logs into events/metrics Parquet and print a summary."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from forensics.cli import _console, _options


def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Log directories or files (gzip is read transparently).")],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Where to write events.parquet, metrics.parquet, ingest.json.")
    ] = Path("forensics-ingest"),
    year: Annotated[
        int | None, typer.Option(help="Year for timestamps without one, when no dated log is beside them.")
    ] = None,
    tz: Annotated[str, typer.Option(help="Zone of local-time formats (vLLM, c10, klog, NCCL).")] = "UTC",
    captured_at: Annotated[
        datetime | None,
        typer.Option(help="When `kubectl get events`/`describe` output was captured (resolves ages like 5m)."),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No summary, no progress bar.")] = False,
    engine: _options.Engine = "local",
    ray_address: _options.RayAddress = None,
    workers: _options.Workers = None,
    follow_outside: _options.FollowOutside = False,
    max_decompressed: _options.MaxDecompressed = "32G",
    max_ratio: _options.MaxRatio = 200,
    max_line: _options.MaxLine = "1M",
    max_depth: _options.MaxDepth = 64,
) -> None:
    """Parse every line of every log into the events and metrics tables."""
    from forensics.ingestion import TimeHints, write_tables
    from forensics.shards import engines
    from forensics.shards import pipeline as scaleout

    engines.check(engine)
    _options.out_dir("--out", out)
    _options.at_least("--workers", workers, 1)
    caps = _options.limits(max_decompressed, max_ratio, max_line, max_depth)

    if captured_at is not None and captured_at.tzinfo is None:
        from datetime import UTC

        captured_at = captured_at.replace(tzinfo=UTC)
    with _console.progress(quiet) as report:
        result = scaleout.prepare(
            paths,
            engine,
            mine=False,
            workers=workers,
            address=ray_address,
            dataset=out / "events" if engine != "local" else None,
            stream_to=out if engine == "local" else None,
            outside=follow_outside,
            limits=caps,
            hints=TimeHints(year=year, tz=tz, captured_at=captured_at),
            progress=report,
        ).ingest
    written = write_tables(result, out)
    if not quiet:
        _console.print_ingest_summary(result, written)
