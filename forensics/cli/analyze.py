"""`forensics analyze LOGDIR`: find incidents, rank root causes, write the postmortem and its artifacts."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from forensics.cli import _console, _options


def analyze(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Log directories or files (gzip is read transparently); none with --prometheus."),
    ] = None,
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
    max_decompressed: _options.MaxDecompressed = "32G",
    max_ratio: _options.MaxRatio = 200,
    max_line: _options.MaxLine = "1M",
    max_depth: _options.MaxDepth = 64,
    prometheus: Annotated[
        str | None,
        typer.Option(
            help="Also pull the series forensics reads (vllm:*, DCGM_FI_*, kube_*, nccl_*) from this Prometheus, "
            "e.g. http://prometheus:9090; kept in OUT/prometheus/.",
            rich_help_panel="Prometheus",
        ),
    ] = None,
    since: Annotated[
        datetime | None,
        typer.Option(
            help="Start of the pull (UTC unless a zone is given); default: the logs' first line - 1h.",
            rich_help_panel="Prometheus",
        ),
    ] = None,
    until: Annotated[
        datetime | None,
        typer.Option(help="End of the pull; default: the logs' last line + 30 min.", rich_help_panel="Prometheus"),
    ] = None,
    prometheus_token_file: Annotated[
        Path | None,
        typer.Option(
            help="A file holding a bearer token for --prometheus (or set FORENSICS_PROMETHEUS_TOKEN).",
            rich_help_panel="Prometheus",
        ),
    ] = None,
    prometheus_ca: Annotated[
        Path | None, typer.Option(help="CA bundle (PEM) for an https --prometheus.", rich_help_panel="Prometheus")
    ] = None,
    prometheus_insecure: Annotated[
        bool,
        typer.Option(
            "--prometheus-insecure", help="Do not verify the server's TLS certificate.", rich_help_panel="Prometheus"
        ),
    ] = False,
    backtest: Annotated[
        bool,
        typer.Option(
            help="Evaluate the written alert rules on the incident's own series with a local Prometheus "
            "(Debian package `prometheus`): which would have fired, and how early.",
        ),
    ] = True,
) -> None:
    """Find the incident(s) in the logs, rank root cause vs symptoms, and write the postmortem."""
    import shlex
    import sys

    from forensics.diagnosis.analysis import analyze as run
    from forensics.errors import ForensicsError
    from forensics.ingestion.files import printable
    from forensics.report.postmortem import ALERT_FORMATS, write_all
    from forensics.shards import engines

    _options.out_dir("--out", out)
    _options.at_least("--workers", workers, 1)
    _options.at_least("--replay-blocks", replay_blocks, 1)
    _options.positive("--replay-rate-scale", replay_rate_scale)
    _options.at_least("--replay-max-requests", replay_max_requests, 1)

    engines.check(engine)
    caps = _options.limits(max_decompressed, max_ratio, max_line, max_depth)
    if fmt not in ("md", "html"):
        raise ForensicsError(f"unknown --format {fmt!r}", hint="use md or html")
    if alerts_format not in ALERT_FORMATS:
        raise ForensicsError(f"unknown --alerts-format {alerts_format!r}", hint="use " + " or ".join(ALERT_FORMATS))
    if template is not None and not template.is_file():
        raise ForensicsError(
            f"template {template} does not exist", hint="pass a Jinja file, e.g. a copy of templates/postmortem.md.j2"
        )
    captured_at, since, until = (_utc(t) for t in (captured_at, since, until))
    paths = list(paths or [])
    server = _server(prometheus, prometheus_token_file, prometheus_ca, prometheus_insecure, engine)
    if not paths and server is None:
        raise ForensicsError(
            "no logs given",
            hint="pass a log directory (forensics analyze logs/), or --prometheus URL --since T --until T",
        )
    if not paths and (since is None or until is None):
        raise ForensicsError(
            "--prometheus without logs needs the window", hint="pass --since and --until, e.g. 2025-03-02T07:00:00Z"
        )
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
            limits=caps,
            prometheus=server,
            since=since,
            until=until,
        )
        replayed = None
        if replay and paths:
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
            result,
            out,
            fmt=fmt,
            template=template,
            alerts_format=alerts_format,
            command=command,
            replay=replayed,
            backtest=backtest,
        )

    if not quiet:
        _console.print_verdict(result.to_json(), written)


def _utc(t: datetime | None) -> datetime | None:
    """A time given without a zone is UTC (the logs' times are, once parsed)."""
    from datetime import UTC

    return t.replace(tzinfo=UTC) if t is not None and t.tzinfo is None else t


def _server(url: str | None, token_file: Path | None, ca: Path | None, insecure: bool, engine: str):
    """The `--prometheus` options as a `prometheus_pull.Server`, or None without a URL."""
    import os

    from forensics.errors import ForensicsError
    from forensics.ingestion.prometheus_pull import Server

    if url is None:
        if token_file or ca or insecure:
            raise ForensicsError(
                "--prometheus-token-file, --prometheus-ca and --prometheus-insecure need --prometheus URL"
            )
        return None
    if engine != "local":
        raise ForensicsError("--prometheus works with --engine local only", hint="drop --engine, or pull apart")
    token = os.environ.get("FORENSICS_PROMETHEUS_TOKEN") or None
    if token_file is not None:
        try:
            token = token_file.read_text().strip()
        except OSError as e:
            raise ForensicsError(
                f"cannot read --prometheus-token-file {token_file}: {e.strerror}", hint="pass a readable file"
            ) from e
    return Server(url=url, token=token, ca=ca, insecure=insecure)
