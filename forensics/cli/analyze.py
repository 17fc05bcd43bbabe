"""`forensics analyze LOGDIR`: find incidents, rank root causes, write the postmortem and its artifacts."""

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
    fmt: Annotated[
        str, typer.Option("--format", help="Report format: md, or html (a self-contained page as well).")
    ] = "md",
    template: Annotated[Path | None, typer.Option(help="Your own Jinja template for the postmortem.")] = None,
    alerts_format: Annotated[
        str, typer.Option(help="prometheusrule (CRD) or prometheus (plain rules file).")
    ] = "prometheusrule",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No summary, no progress bar.")] = False,
) -> None:
    """Find the incident(s) in the logs, rank root cause vs symptoms, and write the postmortem."""
    import shlex
    import sys

    from forensics.analysis import analyze as run
    from forensics.errors import ForensicsError
    from forensics.postmortem import ALERT_FORMATS, write_all

    if fmt not in ("md", "html"):
        raise ForensicsError(f"unknown --format {fmt!r}", hint="use md or html")
    if alerts_format not in ALERT_FORMATS:
        raise ForensicsError(f"unknown --alerts-format {alerts_format!r}", hint="use " + " or ".join(ALERT_FORMATS))
    if template is not None and not template.is_file():
        raise ForensicsError(
            f"template {template} does not exist", hint="pass a Jinja file, e.g. a copy of templates/postmortem.md.j2"
        )
    if captured_at is not None and captured_at.tzinfo is None:
        from datetime import UTC

        captured_at = captured_at.replace(tzinfo=UTC)
    with _console.progress(quiet) as report:
        result = run(paths, year=year, tz=tz, captured_at=captured_at, progress=report)
    command = "forensics " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    written = write_all(result, out, fmt=fmt, template=template, alerts_format=alerts_format, command=command)
    if not quiet:
        _console.print_verdict(result.to_json(), written)
