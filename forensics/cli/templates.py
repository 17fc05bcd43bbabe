"""`forensics templates LOGDIR`: mine templates, print them, save them, diff against a baseline."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from forensics.cli import _console, _options


def templates(
    paths: Annotated[list[Path], typer.Argument(help="Log directories or files.")],
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Write templates.parquet (and events.parquet with template ids) here."),
    ] = None,
    save: Annotated[Path | None, typer.Option(help="Save the templates as JSON, to use later as --baseline.")] = None,
    baseline: Annotated[
        Path | None, typer.Option(help="A templates JSON from a healthy period: mark templates NEW/GONE/CHANGED.")
    ] = None,
    top: Annotated[int, typer.Option(help="Rows to print.")] = 40,
    year: Annotated[int | None, typer.Option(help="Year for timestamps without one.")] = None,
    tz: Annotated[str, typer.Option(help="Zone of local-time formats.")] = "UTC",
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
    engine: _options.Engine = "local",
    ray_address: _options.RayAddress = None,
    workers: _options.Workers = None,
) -> None:
    """Mine log templates (Drain3) and print the table, most frequent first."""
    from forensics import mining
    from forensics.errors import ForensicsError
    from forensics.ingestion import TimeHints
    from forensics.shards import engines
    from forensics.shards import pipeline as scaleout

    engines.check(engine)
    _options.out_dir("--out", out)
    _options.at_least("--workers", workers, 1)
    if save is not None and save.is_dir():
        raise ForensicsError(f"--save {save} is a directory", hint="pass a file name, e.g. --save known-templates.json")
    with _console.progress(quiet) as report:
        prepared = scaleout.prepare(
            paths,
            engine,
            workers=workers,
            address=ray_address,
            dataset=out / "events" if out is not None and engine != "local" else None,
            hints=TimeHints(year=year, tz=tz),
            progress=report,
        )
    result, mined = prepared.ingest, prepared.mined
    table = mined.templates
    changes = None
    if baseline is not None:
        base, base_s = mining.load_templates(baseline)
        lo, hi = result.time_span()
        cur_s = (hi - lo).total_seconds() if lo and hi else 0.0
        changes = mining.diff(table, cur_s or 1.0, base, base_s or 1.0)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        table.write_parquet(out / "templates.parquet")
        if result.dataset is None:
            mining.write_events(result.events, mined.template_ids, out / "events.parquet")
        if changes is not None:
            changes.write_parquet(out / "template_changes.parquet")
    if save is not None:
        try:
            mining.save_templates(table, save, result.time_span())
        except OSError as e:
            raise ForensicsError(f"cannot write --save {save}: {e.strerror or e}", hint="pass a writable file") from e
    if not quiet:
        _console.print_templates(table, changes, top)
        for w in mined.warnings:
            _console.console.print(f"[yellow]warning[/] {_console.safe(w)}")
