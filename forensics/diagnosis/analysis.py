"""`analyze()`: logs in, incidents with ranked root-cause hypotheses out (`analysis.json`).

Data flows one way: ingest -> mining -> clock alignment (`skew`) -> series and incidents
(`series`) -> signals, what messages mean (`signals`) -> hypotheses and verdict per incident
(`rootcause`) -> the incident's narrative (`narrative`). The report only renders what this
package computed; `analysis.json` (`analysis_json`) is its source of truth.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl

from forensics import mining
from forensics import schema as s
from forensics.diagnosis import analysis_json, collectives, engine_config, rootcause, skew, startup
from forensics.diagnosis import series as ser
from forensics.diagnosis._format import iso, round1
from forensics.diagnosis.narrative import IncidentReport, incident_report
from forensics.diagnosis.quiet import quiet_faults, unexplained_errors
from forensics.diagnosis.records import Stall
from forensics.diagnosis.signals import faulted, signals_table, stops, untimed
from forensics.ingestion import IngestResult, TimeHints, prometheus_pull
from forensics.ingestion.files import printable
from forensics.ingestion.limits import Limits
from forensics.shards import pipeline as scaleout


@dataclass(kw_only=True)
class Report:
    """Everything the analysis computed; `to_json()` is the `analysis.json` contract."""

    ingest: IngestResult
    events: pl.DataFrame
    """Events with `template_id`, timestamps corrected for clock offsets."""
    templates: pl.DataFrame
    series: ser.Series
    incidents: list[IncidentReport]
    clock_offsets: dict[str, float]
    pod_nodes: dict[str, str]
    template_changes: pl.DataFrame | None
    warnings: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    run_stats: dict = field(default_factory=dict)
    """How the run went (engine, shards, task seconds): for benchmarks, never in the outputs,
    which must not depend on timing."""
    unexplained_errors: list[dict] = field(default_factory=list)
    """When no incident is found: the most frequent error-level templates, which match no
    known fault or symptom (a truncated traceback, a new failure mode) but are worth a look."""
    load_declines: list[dict] = field(default_factory=list)
    """Throughput drops that were the load going away (`series.demand_fell`), not incidents:
    said, so that a fall on the plot is never left unexplained."""
    quiet_faults: list[dict] = field(default_factory=list)
    """When no incident is found: the hard faults of the catalog that were logged anyway (the
    throughput held and no replica went dark after them), most frequent first: "no incident"
    must not read as "nothing failed"."""
    pulled: prometheus_pull.Pulled | None = None
    """The documents pulled from a live Prometheus (`analyze(prometheus=...)`): written into
    the report's `prometheus/` so that the run can be repeated without the server."""

    def to_json(self) -> dict:
        """The `analysis.json` document (`forensics.diagnosis.analysis_json`)."""
        return analysis_json.report_json(self)


def analyze(
    paths: list[Path] | Path,
    *,
    year: int | None = None,
    tz: str = "UTC",
    captured_at: datetime | None = None,
    progress=None,
    stage=None,
    engine: str = "local",
    workers: int | None = None,
    ray_address: str | None = None,
    dataset: Path | None = None,
    outside: bool = False,
    prometheus: prometheus_pull.Server | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limits: Limits | None = None,
) -> Report:
    """Find the incidents in a directory of logs and rank their root causes.

    `engine="local"` parses and mines in this process. `"pool"` and `"ray"` parse and
    mine shards of files in parallel (a local process pool, or Ray at `ray_address`),
    writing the rows under `dataset` (see `forensics.shards.pipeline`); the timeline and root
    cause are the same code either way.

    `limits` are the caps on hostile input (`forensics.ingestion.limits`; None: the defaults).
    `prometheus` adds the series of a live server (`forensics.ingestion.prometheus_pull`)
    between `since` and `until`, by default the logs' span widened by the pull's margins;
    without `paths` both are needed. The pulled documents are in `Report.pulled`.

    >>> report = analyze(Path("samples/cache-corruption"))  # doctest: +SKIP
    >>> report.incidents[0].verdict.top.category  # doctest: +SKIP
    'kv-cache'
    """
    step = stage or (lambda _name: None)
    roots = [Path(p) for p in ([paths] if isinstance(paths, (str, Path)) else paths)]
    hints = TimeHints(year=year, tz=tz, captured_at=captured_at)
    step("ingest")
    prepared = None
    if roots or prometheus is None:
        prepared = scaleout.prepare(
            roots,
            engine,
            workers=workers,
            address=ray_address,
            dataset=dataset,
            hints=hints,
            outside=outside,
            progress=progress,
            stage=step,
            limits=limits,
        )
    pulled = None
    if prometheus is not None:
        step("prometheus")
        pulled, prepared = _pull(prometheus, prepared, since, until, hints)
    r, mined = prepared.ingest, prepared.mined
    run_stats: dict = {"engine": engine}
    if engine != "local":
        run_stats |= {"shards": prepared.shards, "task_seconds": prepared.task_seconds}
        run_stats |= {f"{k}_s": v for k, v in prepared.stages.items()}
    step("timeline")
    events = r.events.with_columns(mined.template_ids.alias(mining.TEMPLATE_ID))
    pod_node = skew.pod_nodes(events)
    offsets = skew.estimate(events, pod_node)
    events = skew.apply(events, offsets, pod_node)
    metrics = skew.apply(r.metrics.with_columns(pl.lit("vllm").alias(s.SOURCE)), offsets, pod_node).drop(s.SOURCE)
    signals = signals_table(events, mined.templates, pod_node)
    stopped = stops(events)
    hard = faulted(signals, pod_node, stopped.on_purpose)
    series = ser.build(events, metrics, hard, stopped.any)
    incidents = (
        ser.detect(series, hard) + ser.past_the_series(series, signals)
        if not series.empty
        else ser.error_bursts(signals)
    )
    if not incidents:
        incidents = ser.request_failures(events)
    if not incidents:
        signals, incidents = untimed(signals)
    step("root cause")
    configs = engine_config.configs(events)
    ranked = []
    for inc in incidents:
        pods_total, nodes_total = _active(events, inc, signals, pod_node)
        hyps = rootcause.hypotheses(
            signals, inc, series, pods_total, nodes_total, metrics=metrics, events=events, configs=configs
        )
        ranked.append((inc, hyps, rootcause.verdict(hyps)))
    reports, declines = [], []
    for inc, hyps, v in _merge_recurrences(ranked):
        # (a replica gone dark or slowed while requests queued is capacity lost, logged cause or not)
        if (
            inc.detector not in ("throughput-drop", "replica-slowdown")
            and v.top is None
            and not hyps
            and not inc.queued
        ):
            continue
        if inc.detector == "throughput-drop" and not hyps and ser.demand_fell(series, inc):
            declines.append(
                {
                    "start": iso(inc.start),
                    "from_per_s": round1(inc.baseline),
                    "to_per_s": round1(inc.minimum),
                    "unit": series.unit,
                }
            )
            continue
        if inc.recoveries:
            # Re-rank over the merged window.
            hyps = rootcause.hypotheses(
                signals,
                inc,
                series,
                *_active(events, inc, signals, pod_node),
                metrics=metrics,
                events=events,
                configs=configs,
            )
            v = rootcause.verdict(hyps)
        if v.status == "inconclusive" and inc.detector == "replica-drop" and inc.queued:
            v.missing = rootcause.sentences(
                f"Replica {', '.join(inc.pods)} stopped serving while requests queued, and nothing it or its node "
                "logged says why. Collect `kubectl describe pod` for it (Last State: reason, exit code), "
                "`kubectl logs --previous`, and its node's kubelet log and `dmesg -T`",
                v.missing,
            )
        if v.status == "inconclusive" and inc.detector == "replica-slowdown":
            v.missing = rootcause.sentences(
                f"Replica {', '.join(inc.pods)} served at under half its usual throughput while requests queued, with no "
                "error of its own: a GPU held down by heat or power, or a slow link in its tensor-parallel group. "
                "Collect `nvidia-smi -q -d PERFORMANCE,CLOCK` on its node and DCGM's clock-event reasons "
                "(DCGM_FI_DEV_CLOCK_THROTTLE_REASONS) for that window",
                v.missing,
            )
        if v.status == "inconclusive":
            pointer = rootcause.node_reports_pointer(signals, hyps)
            if pointer is not None:
                v.missing = rootcause.sentences(pointer, v.missing)
        if v.status == "inconclusive" and any(h.category == "collective-timeout" for h in hyps):
            stragglers = collectives.silent_ranks(events, since=inc.start - rootcause.LOOKBACK)
            if stragglers is not None:
                v.missing = rootcause.sentences(stragglers.sentence(), v.missing)
            first = collectives.first_collective_hung(events, since=inc.start - rootcause.LOOKBACK)
            if first is not None:
                v.missing = rootcause.sentences(first, v.missing)
            # Each is put before the last: the flight recorder's word on who stopped leads, then
            # NCCL RAS's, then what the timeouts themselves say.
            ras = collectives.ras_findings(events)
            if ras is not None:
                v.missing = rootcause.sentences(ras.sentence(), v.missing)
            flight = collectives.flight_findings(events) or collectives.dump_findings(events)
            if flight is not None:
                v.missing = rootcause.sentences(flight.sentence(), v.missing)
            first_timeout = signals.filter(pl.col("category") == "collective-timeout")[s.TS].min()
            stall = ser.first_stall(metrics, before=first_timeout)
            if stall is not None:
                v.missing = rootcause.sentences(
                    f"the engine hung before the timeouts: {_stalled(stall)}, so a collective or a GPU kernel never "
                    "returned (a hang, not a crash)",
                    v.missing,
                )
        elif v.status == "inconclusive" and inc.timed:
            # No timeout logged: requests running at 0 tokens/s is still a hang, before any
            # watchdog fires (NCCL's after 10 minutes by default).
            stall = ser.first_stall(metrics, before=(inc.end or series.t[-1]) if not series.empty else None)
            if stall is not None and stall.start >= inc.start - rootcause.LOOKBACK:
                v.missing = rootcause.sentences(
                    f"the engine hung: {_stalled(stall)} with no error logged, so a collective or a GPU kernel never "
                    "returned (a hang, not a crash). "
                    "Collect a `py-spy dump --native` of the engine and its workers, the NCCL flight recorder "
                    "(`TORCH_NCCL_TRACE_BUFFER_SIZE`), and the logs past the watchdog's timeout",
                    v.missing,
                )
        if inc.detector == "error-burst":
            failure = startup.never_served(events, v.top, hyps)
            if failure is not None:
                inc.detector = "startup-failure"
                reason = startup.explain(failure, v.top)
                if reason is not None:
                    v.top.why.append(reason)
                if v.status == "inconclusive":
                    v.missing = rootcause.sentences(startup.missing(failure), v.missing)
        reports.append(incident_report(inc, hyps, v, events, signals, series, metrics))
    changes = None
    if incidents:
        first = incidents[0].start
        lo = events[s.TS].min()
        if lo is not None and (first - lo).total_seconds() > 300:
            base = mining.window_counts(events, events[mining.TEMPLATE_ID], lo, first - timedelta(minutes=1))
            cur = mining.window_counts(
                events, events[mining.TEMPLATE_ID], first, incidents[0].end or events[s.TS].max() + timedelta(seconds=1)
            )
            names = mined.templates.select(mining.TEMPLATE_ID, mining.TEMPLATE)
            changes = mining.diff(
                cur.join(names, on=mining.TEMPLATE_ID, how="left"),
                max(((incidents[0].end or events[s.TS].max()) - first).total_seconds(), 1.0),
                base.join(names, on=mining.TEMPLATE_ID, how="left"),
                max((first - lo).total_seconds(), 1.0),
            )
    return Report(
        ingest=r,
        events=events,
        templates=mined.templates,
        series=series,
        incidents=reports,
        clock_offsets=offsets,
        pod_nodes=pod_node,
        template_changes=changes,
        warnings=mined.warnings + ([series.left_out] if series.left_out else []),
        inputs=[printable(str(p)) for p in roots] + ([printable(pulled.describe())] if pulled is not None else []),
        run_stats=run_stats,
        unexplained_errors=[] if reports else unexplained_errors(events, mined.templates, signals),
        load_declines=declines,
        quiet_faults=[] if reports else quiet_faults(signals),
        pulled=pulled,
    )


def _pull(
    server: prometheus_pull.Server,
    logs: scaleout.Sharded | None,
    since: datetime | None,
    until: datetime | None,
    hints: TimeHints,
) -> tuple[prometheus_pull.Pulled, scaleout.Sharded]:
    """Pull the server's series over the window and ingest them beside the logs' rows.

    The window is `since`..`until`, each defaulting to the logs' span (events and metrics)
    widened by `BEFORE`/`AFTER`. The pulled documents are ingested as a root of their own,
    mined, and merged in (file, line) order with the logs' rows and template ids.
    """
    import tempfile

    seen = []
    if logs is not None:
        metric_ts = logs.ingest.metrics[s.TS]
        seen = [t for t in (*logs.ingest.time_span(), metric_ts.min(), metric_ts.max()) if t is not None]
    start = since or (min(seen) - prometheus_pull.BEFORE if seen else None)
    end = until or (max(seen) + prometheus_pull.AFTER if seen else None)
    if start is None or end is None:
        from forensics.errors import ForensicsError

        raise ForensicsError(
            "no window to pull from Prometheus: the logs have no timestamps (or none were given)",
            hint="pass --since and --until (ISO 8601, e.g. 2025-03-02T07:00:00Z)",
        )
    pulled = prometheus_pull.pull(server, start, end)
    if not pulled.documents:
        if logs is None:
            from forensics.errors import NoInputError

            raise NoInputError(" ".join(pulled.notes), hint="check --prometheus, --since and --until")
        logs.ingest.warnings.extend(pulled.notes)
        return pulled, logs
    with tempfile.TemporaryDirectory(prefix="forensics-prometheus-") as d:
        pulled.write(Path(d))
        extra = scaleout.prepare([Path(d)], "local", hints=hints)
    extra.ingest.warnings.extend(pulled.notes)
    if logs is None:
        return pulled, extra
    if logs.mined is None or logs.ingest.dataset is not None:
        raise NotImplementedError  # (the CLI allows --prometheus with --engine local only)
    key = "_template_id"
    both = replace(logs.ingest, events=logs.ingest.events.with_columns(logs.mined.template_ids.alias(key))).merged(
        replace(extra.ingest, events=extra.ingest.events.with_columns(extra.mined.template_ids.alias(key)))
    )
    ids = both.events[key].alias(mining.TEMPLATE_ID)
    both.events = both.events.drop(key)
    cols = [mining.TEMPLATE_ID, mining.TEMPLATE, s.SOURCE]
    names = pl.concat([logs.mined.templates.select(cols), extra.mined.templates.select(cols)]).unique(
        mining.TEMPLATE_ID, keep="first", maintain_order=True
    )
    templates = mining.summarise(both.events.with_columns(ids), names)
    mined = mining.MiningResult(ids, templates, logs.mined.warnings + extra.mined.warnings)
    return pulled, replace(logs, ingest=both, mined=mined)


def _stalled(stall: Stall) -> str:
    """Where and how long an engine stalled (`series.first_stall`), as the verdict says it."""
    return (
        f"from {iso(stall.start)} on {stall.where}, {stall.running} request(s) running and 0 tokens/s "
        f"for {stall.samples} metrics samples ({stall.file}:{stall.line})"
    )


MERGE_GAP = timedelta(minutes=30)


def _merge_recurrences(ranked: list) -> list:
    """Merge consecutive incidents whose root cause is the same template within `MERGE_GAP`.

    Restarts bring throughput back for a few minutes and the same fault takes it down
    again: one incident with partial recoveries, not several.
    """
    out: list = []
    for inc, hyps, v in ranked:
        if out:
            pinc, phyps, pv = out[-1]
            same = pv.top is not None and v.top is not None and pv.top.template_id == v.top.template_id
            if same and pinc.end is not None and inc.start - pinc.end <= MERGE_GAP:
                pinc.recoveries.append((pinc.end, inc.start))
                pinc.end = inc.end
                pinc.minimum = (
                    min(x for x in (pinc.minimum, inc.minimum) if x is not None)
                    if (pinc.minimum is not None or inc.minimum is not None)
                    else None
                )
                continue
        out.append((inc, hyps, v))
    return out


def _active(
    events: pl.DataFrame, inc: ser.Incident, signals: pl.DataFrame, pod_node: dict[str, str]
) -> tuple[int, int]:
    """Pods serving (vLLM, SGLang or uvicorn lines) and nodes seen around the incident: the peer group."""
    lo = inc.start - rootcause.LOOKBACK
    hi = inc.end or events[s.TS].max()
    pods = set(
        events.lazy()
        .select(s.TS, s.SOURCE, s.POD)
        .filter((pl.col(s.TS) >= lo) & (pl.col(s.TS) <= hi) & pl.col(s.SOURCE).is_in(["vllm", "sglang", "uvicorn"]))
        .select(pl.col(s.POD).drop_nulls().unique())
        .collect()[s.POD]
        .to_list()
    )
    pods.discard("")
    nodes = {pod_node[p] for p in pods if p in pod_node} | {n for n in signals["node"].to_list() if n}
    return len(pods), len(nodes)
