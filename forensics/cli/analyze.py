"""`forensics analyze LOGDIR`: find incidents, rank root causes, write the postmortem and its artifacts."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from forensics.cli import _console, _options


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
    replay: Annotated[
        bool,
        typer.Option("--replay", help="Replay the captured trace under the correct policy and every fault variant."),
    ] = False,
    replay_blocks: Annotated[
        int | None,
        typer.Option(help="KV blocks for --replay (default: the logged GPU KV cache size / 16, else 2048)."),
    ] = None,
    replay_rate_scale: Annotated[
        float | None,
        typer.Option(
            help="Rate multiple for --replay (default: where the correct policy fills the pool as the logs' "
            "peak GPU KV cache usage shows; 1 without such lines)."
        ),
    ] = None,
    replay_max_requests: Annotated[int, typer.Option(help="Requests replayed per policy by --replay.")] = 20_000,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No summary, no progress bar.")] = False,
    engine: _options.Engine = "local",
    ray_address: _options.RayAddress = None,
    workers: _options.Workers = None,
    follow_outside: _options.FollowOutside = False,
) -> None:
    """Find the incident(s) in the logs, rank root cause vs symptoms, and write the postmortem."""
    import shlex
    import sys

    from forensics.diagnosis.analysis import analyze as run
    from forensics.errors import ForensicsError
    from forensics.ingestion.files import printable
    from forensics.report.postmortem import ALERT_FORMATS, write_all
    from forensics.shards import engines

    if out.exists() and not out.is_dir():
        raise ForensicsError(
            f"--out {printable(str(out))} is a file, not a directory",
            hint="pass a new or existing directory for the report (it is created when missing)",
        )

    engines.check(engine)
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
    with _console.stages(quiet) as (on_bytes, on_stage):
        result = run(
            paths,
            year=year,
            tz=tz,
            captured_at=captured_at,
            progress=on_bytes,
            stage=on_stage,
            engine=engine,
            workers=workers,
            ray_address=ray_address,
            dataset=out / "events" if engine != "local" else None,
            outside=follow_outside,
        )
        replayed = None
        if replay:
            from forensics.replay_bridge import replay_incident

            if on_stage:
                on_stage("replay")
            replayed = replay_incident(
                result.ingest,
                Path(paths[0]),
                blocks=replay_blocks,
                rate_scale=replay_rate_scale,
                max_requests=replay_max_requests,
            )
        if on_stage:
            on_stage("report")
    command = printable("forensics " + " ".join(shlex.quote(a) for a in sys.argv[1:]))
    written = write_all(
        result, out, fmt=fmt, template=template, alerts_format=alerts_format, command=command, replay=replayed
    )

    if not quiet:
        _console.print_verdict(result.to_json(), written)
