"""`analyze()`: logs in, incidents with ranked root-cause hypotheses out (`analysis.json`).

Data flows one way: ingest -> mining -> clock alignment -> series and incidents ->
signals (what messages mean) -> hypotheses and verdict per incident -> timeline. The
report only renders what this module computed; `analysis.json` is its source of truth.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl

from forensics import mining
from forensics import schema as s
from forensics.diagnosis import collectives, rootcause, signatures, skew
from forensics.diagnosis import series as ser
from forensics.ingestion import IngestResult
from forensics.shards import pipeline as scaleout

ANALYSIS_VERSION = 1
TIMELINE_MAX = 40


@dataclass
class IncidentReport:
    incident: ser.Incident
    hypotheses: list[rootcause.Hypothesis]
    verdict: rootcause.Verdict
    timeline: list[dict]
    impact: dict
    trigger: dict | None
    detection: dict
    resolution: dict
    tell: dict | None


@dataclass
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

    def to_json(self) -> dict:
        r = self.ingest
        return {
            "version": ANALYSIS_VERSION,
            "input": {
                "paths": self.inputs,
                "files": len(r.files),
                "lines": r.lines,
                "parsed": r.parsed + r.folded,
                "unparsed": r.unparsed,
                "folded": r.folded,
                "events": r.events.height,
                "templates": self.templates.height,
                "time_span": [_iso(t) for t in r.time_span()],
                "skipped": [{"file": k.file, "reason": k.reason} for k in r.skipped],
                "traces": r.traces,
                "notes": [{"file": f.file, "note": n} for f in r.files for n in f.notes],
            },
            "throughput": _series_json(self.series),
            "clock_offsets": self.clock_offsets,
            "incidents": [_incident_json(i, self.clock_offsets) for i in self.incidents],
            "template_changes": _changes_json(self.template_changes),
            "alerts": [],
            "unexplained_errors": self.unexplained_errors,
            "load_declines": self.load_declines,
            "quiet_faults": self.quiet_faults,
            "warnings": self.warnings + r.warnings,
        }


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
) -> Report:
    """Find the incidents in a directory of logs and rank their root causes.

    `engine="local"` parses and mines in this process. `"pool"` and `"ray"` parse and
    mine shards of files in parallel (a local process pool, or Ray at `ray_address`),
    writing the rows under `dataset` (see `forensics.shards.pipeline`); the timeline and root
    cause are the same code either way.

    >>> report = analyze(Path("samples/cache-corruption"))  # doctest: +SKIP
    >>> report.incidents[0].verdict.top.category  # doctest: +SKIP
    'kv-cache'
    """
    step = stage or (lambda _name: None)
    roots = [Path(p) for p in ([paths] if isinstance(paths, (str, Path)) else paths)]
    step("ingest")
    prepared = scaleout.prepare(
        roots,
        engine,
        workers=workers,
        address=ray_address,
        dataset=dataset,
        year=year,
        tz=tz,
        captured_at=captured_at,
        progress=progress,
        stage=step,
    )
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
    series = ser.build(events, metrics)
    signals = _signals(events, mined.templates, pod_node)
    incidents = (
        ser.detect(series, _faulted(signals, pod_node, events)) if not series.empty else ser.error_bursts(signals)
    )
    if not incidents:
        signals, incidents = _untimed(signals)
    step("root cause")
    ranked = []
    for inc in incidents:
        pods_total, nodes_total = _active(events, inc, signals, pod_node)
        hyps = rootcause.hypotheses(signals, inc, series, pods_total, nodes_total, metrics=metrics, events=events)
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
                    "start": _iso(inc.start),
                    "from_per_s": _r(inc.baseline),
                    "to_per_s": _r(inc.minimum),
                    "unit": series.unit,
                }
            )
            continue
        if inc.recoveries:
            # Re-rank over the merged window.
            hyps = rootcause.hypotheses(
                signals, inc, series, *_active(events, inc, signals, pod_node), metrics=metrics, events=events
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
            if stall is not None and stall["start"] >= inc.start - rootcause.LOOKBACK:
                v.missing = rootcause.sentences(
                    f"the engine hung: {_stalled(stall)} with no error logged, so a collective or a GPU kernel never "
                    "returned (a hang, not a crash). "
                    "Collect a `py-spy dump --native` of the engine and its workers, the NCCL flight recorder "
                    "(`TORCH_NCCL_TRACE_BUFFER_SIZE`), and the logs past the watchdog's timeout",
                    v.missing,
                )
        reports.append(_incident_report(inc, hyps, v, events, signals, series, metrics))
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
        r,
        events,
        mined.templates,
        series,
        reports,
        offsets,
        pod_node,
        changes,
        mined.warnings + ([series.left_out] if series.left_out else []),
        [str(p) for p in roots],
        run_stats,
        [] if reports else _unexplained_errors(events, mined.templates, signals),
        declines,
        [] if reports else _quiet_faults(signals),
    )


def _stalled(stall: dict) -> str:
    """Where and how long an engine stalled (`series.first_stall`), as the verdict says it."""
    return (
        f"from {_iso(stall['start'])} on {stall['where']}, {stall['running']} request(s) running and 0 tokens/s "
        f"for {stall['samples']} metrics samples ({stall['file']}:{stall['line']})"
    )


UNEXPLAINED_SHOWN = 5


def _unexplained_errors(events: pl.DataFrame, templates: pl.DataFrame, signals: pl.DataFrame) -> list[dict]:
    """The error-level templates of a run with no incident that match no signature (`signals`
    has those that do), most frequent first (then earliest).

    Saying only "no incident found" over logs full of ERROR lines would send the reader
    away; a pasted excerpt of a traceback without its exception line is the usual case.
    """
    errs = (
        events.with_row_index("_ev")
        .filter(pl.col(s.LEVEL).is_in(["ERROR", "CRITICAL"]) & ~pl.col("_ev").is_in(signals["_ev"].implode()))
        .drop("_ev")
    )
    per = _most_frequent(
        errs,
        [mining.TEMPLATE_ID],
        pl.col(s.MESSAGE).sort_by("_ord").first().str.split("\n").list.first().alias("first_line"),
    ).join(
        templates.select(mining.TEMPLATE_ID, mining.TEMPLATE), on=mining.TEMPLATE_ID, how="left", maintain_order="left"
    )
    return [
        {
            "template": r[mining.TEMPLATE] or r["first_line"],
            "count": r["count"],
            "first_seen": _iso(r["first_seen"]),
            "file": r["file"],
            "line": r["line"],
        }
        for r in per.iter_rows(named=True)
    ]


def _quiet_faults(signals: pl.DataFrame) -> list[dict]:
    """The faults of a run with no incident, one row per signature and template, most frequent
    first (then earliest)."""
    per = _most_frequent(signals.filter(pl.col("kind") == "fault"), ["label", "template"])
    return [
        {
            "label": r["label"],
            "template": r["template"],
            "count": r["count"],
            "first_seen": _iso(r["first_seen"]),
            "file": r["file"],
            "line": r["line"],
        }
        for r in per.iter_rows(named=True)
    ]


def _most_frequent(rows: pl.DataFrame, by: list[str], *more: pl.Expr) -> pl.DataFrame:
    """The `UNEXPLAINED_SHOWN` most frequent groups of `rows` by `by` (then the earliest in row
    order), each with its count, first time and first `file:line`, and `more` aggregations
    (which may read the row order as `_ord`)."""
    return (
        rows.with_row_index("_ord")
        .group_by(by)
        .agg(
            pl.len().alias("count"),
            pl.col("_ord").min().alias("_first"),
            pl.col(s.TS).min().alias("first_seen"),
            pl.col(s.FILE).sort_by("_ord").first().alias("file"),
            pl.col(s.LINE).sort_by("_ord").first().alias("line"),
            *more,
        )
        .sort(["count", "_first"], descending=[True, False])
        .head(UNEXPLAINED_SHOWN)
    )


MERGE_GAP = timedelta(minutes=30)


def _untimed(signals: pl.DataFrame) -> tuple[pl.DataFrame, list]:
    """One incident over the faults and symptoms that have no time, ordered by position."""
    bare = pl.col(s.TS).is_null() & pl.col("kind").is_in(["fault", "symptom"])
    if signals.is_empty() or not signals.select(bare.any()).item():
        return signals, []
    stand_in = pl.lit(ser.UNTIMED_EPOCH) + pl.duration(
        seconds=pl.col("_ev").cast(pl.Int64) * int(ser.UNTIMED_STEP.total_seconds())
    )
    signals = signals.with_columns(
        pl.when(pl.col(s.TS).is_null()).then(stand_in).otherwise(pl.col(s.TS)).alias(s.TS)
    ).sort(s.TS, "_ev")
    incidents = ser.error_bursts(signals.filter(pl.col(s.TS) < ser.UNTIMED_EPOCH.replace(year=1901)), gap=timedelta.max)
    for inc in incidents:
        inc.timed = False
    return signals, incidents


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


STOPPED = (
    r"^Killing: Stopping container |^Shutting down$|^Waiting for application shutdown\.|Received SIGTERM"
    r"|^Gracefully stopping"
)
"""A pod being stopped on purpose (a rollout, a scale-down, a drain): the kubelet's `Killing`
event (not a probe's, which says why) and the server's own graceful shutdown."""
STOP_ECHO = timedelta(minutes=5)
"""How long after a deliberate stop a pod's faults are its shutdown's (a tensor-parallel peer
gone first: `remote process exited`), not a crash. Strictly after: what made the kubelet stop
it (an eviction, a preemption) is logged in the same second."""


def _faulted(signals: pl.DataFrame, pod_node: dict[str, str], events: pl.DataFrame) -> dict[str, list[datetime]]:
    """When each replica, or the node it runs on, logged a hard fault, by the name the series
    knows the replica by (`series.REPLICA`); leaving out the
    faults of a pod stopped on purpose just before them (`STOPPED`, `STOP_ECHO`)."""
    faults = signals.filter((pl.col("kind") == "fault") & pl.col(s.TS).is_not_null())
    if faults.is_empty():  # (the stops' scan reads every message)
        return {}
    stops = (
        events.filter(pl.col(s.MESSAGE).str.contains(STOPPED) & pl.col(s.TS).is_not_null())
        .group_by(ser.REPLICA.alias("_src"))
        .agg(pl.col(s.TS))
    )
    stopped = {src: ts for src, ts in stops.iter_rows() if src is not None}
    by = faults.group_by(ser.REPLICA.alias("_src")).agg(pl.col(s.TS))
    out: dict[str, list[datetime]] = {src: ts for src, ts in by.iter_rows() if src is not None}
    # A node's own reports (its kernel's Xid, its kubelet) name no pod: they are its pods' faults too.
    on_node = faults.filter(pl.col(s.POD).is_null()).select(pl.coalesce("node", s.HOST).alias("_n"), s.TS)
    at = {n: ts for n, ts in on_node.group_by("_n").agg(pl.col(s.TS)).iter_rows() if n is not None}
    for pod, node in pod_node.items():
        if node in at:
            out[pod] = out.get(pod, []) + at[node]
    return {
        src: sorted(f for f in ts if not any(timedelta(0) < f - x <= STOP_ECHO for x in stopped.get(src, ())))
        for src, ts in sorted(out.items())
    }


def _signals(events: pl.DataFrame, templates: pl.DataFrame, pod_node: dict[str, str]) -> pl.DataFrame:
    """Classified events with their time, place, template and full text."""
    sig = signatures.classify(events)
    ev = events.with_row_index("_ev").select(
        "_ev",
        s.TS,
        s.TS_QUALITY,
        s.SOURCE,
        s.HOST,
        s.POD,
        s.FILE,
        s.LINE,
        s.LEVEL,
        mining.TEMPLATE_ID,
        s.COLL_RAN_MS,
        s.PROCESS,
        s.PID,
        pl.col(s.MESSAGE).alias("full"),
    )
    names = templates.select(mining.TEMPLATE_ID, pl.col(mining.TEMPLATE).alias("_tmpl"))
    out = sig.join(ev, on="_ev", how="left").join(names, on=mining.TEMPLATE_ID, how="left")
    first_line = pl.col("full").str.split("\n").list.first()
    masked = mining.mask_expr(pl.col("text"))
    # A fault read from a traceback's exception line gets its own template.
    is_head = pl.col("text") == first_line
    out = out.with_columns(
        pl.when(is_head).then(pl.col("_tmpl")).otherwise(masked).alias("template"),
        pl.col(s.POD).replace_strict(pod_node, default=None, return_dtype=pl.String).alias("node"),
    )
    ids = [
        tid if head else mining.template_id(src, t)
        for tid, head, src, t in zip(
            out[mining.TEMPLATE_ID], out.select(is_head)["text"], out[s.SOURCE], out["template"], strict=True
        )
    ]
    out = out.with_columns(pl.Series("template_id", ids, dtype=pl.String))
    out = _drop_startup_noise(out, events)
    return out.with_columns(
        pl.coalesce("node", pl.when(pl.col(s.SOURCE).is_in(["kubelet", "k8s-event"])).then(pl.col(s.HOST))).alias(
            "node"
        )
    ).sort(s.TS, "_ev")


STARTUP = r"^(?:vLLM API server version|Initializing a V1 LLM engine|Starting vLLM API server|init engine \(profile)"
STARTUP_NOISE_S = 180


def _drop_startup_noise(signals: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """A shared-memory broadcast stall within minutes of its engine's start is compilation, not a hang."""
    starts = events.filter(pl.col(s.MESSAGE).str.contains(STARTUP) & pl.col(s.TS).is_not_null()).select(
        s.FILE, pl.col(s.TS).alias("_st")
    )
    stall = pl.col("label") == "shared-memory broadcast stall"
    if starts.is_empty() or not signals.select(stall.any()).item():
        return signals
    cand = signals.with_row_index("_sig").filter(stall).join(starts, on=s.FILE, how="inner")
    noisy = cand.filter(
        (pl.col(s.TS) >= pl.col("_st")) & ((pl.col(s.TS) - pl.col("_st")).dt.total_seconds() <= STARTUP_NOISE_S)
    )["_sig"].unique()
    return signals.with_row_index("_sig").filter(~pl.col("_sig").is_in(noisy.implode())).drop("_sig")


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


def _incident_report(inc, hyps, v, events, signals, series, metrics) -> IncidentReport:
    # (not recovered: to the end of what was collected, metrics included)
    end = inc.end or max(t for t in (events[s.TS].max(), metrics[s.TS].max(), inc.start) if t is not None)
    window = events.filter((pl.col(s.TS) >= inc.start) & (pl.col(s.TS) <= end))
    answered, http_from = ser.served(window)
    requests, failed = answered.height, answered.filter(pl.col(s.HTTP_STATUS) >= 500).height
    if not requests:  # (no access log: the API server's own counter, from a Prometheus export)
        counted = metrics.filter(
            pl.col(s.METRIC).is_in(["http_requests", "http_5xx"]) & (pl.col(s.TS) > inc.start) & (pl.col(s.TS) <= end)
        )
        sums = dict(counted.group_by(s.METRIC).agg(pl.col(s.VALUE).sum()).iter_rows())
        requests, failed = round(sums.get("http_requests", 0)), round(sums.get("http_5xx", 0))
        http_from = "prometheus" if requests else None
    affected_pods = sorted(
        {p for h in hyps if h.role in ("root_cause", "symptom") for p in h.hosts if p} | set(inc.pods)
    )
    impact = {
        "start": _iso(inc.start),
        "end": _iso(inc.end),
        "duration_s": (inc.end - inc.start).total_seconds() if inc.end else None,
        "measured": inc.baseline is not None,
        "baseline_per_s": _r(inc.baseline),
        "min_per_s": _r(inc.minimum),
        "drop_fraction": _r(1 - inc.minimum / inc.baseline) if inc.baseline and inc.minimum is not None else None,
        "unit": series.unit if inc.baseline is not None else None,
        "http_5xx": failed,
        "http_requests": requests,
        "http_from": http_from,
        "peak_waiting": _r(inc.peak_waiting),
        "partial_recoveries": [[_iso(a), _iso(b)] for a, b in inc.recoveries],
        "affected": affected_pods,
        "detector": inc.detector,
    }
    trigger = _trigger(inc, series) or _rollout_before(inc, signals)
    rollout = (
        datetime.fromisoformat(trigger["ts"].replace("Z", "+00:00"))
        if trigger and trigger["kind"] == "rollout"
        else None
    )
    resolution, tell = _resolution(inc, signals, events[s.TS].max(), rollout), _tell(inc, series)
    return IncidentReport(
        inc,
        hyps,
        v,
        _timeline(inc, hyps, signals, series, tell, trigger, resolution),
        impact,
        trigger,
        _detection(inc, hyps, signals),
        resolution,
        tell,
    )


def _timeline(inc, hyps, signals, series, tell, trig, res) -> list[dict]:
    """The condensed timeline: the tell, the trigger, the root cause on each host where it
    appeared, the first occurrence of each symptom and impact, the drop, the fix, recovery."""
    keep = {h.template_id: h for h in hyps if h.role in ("root_cause", "symptom", "impact")}
    lo, hi = inc.start - rootcause.LOOKBACK, (inc.end or signals[s.TS].max() or inc.start) + timedelta(minutes=5)
    sig = signals.filter(pl.col("template_id").is_in(list(keep)) & (pl.col(s.TS) >= lo) & (pl.col(s.TS) <= hi)).sort(
        s.TS
    )
    rc_id = next((h.template_id for h in hyps if h.role == "root_cause"), None)
    rc_rows = (
        sig.filter(pl.col("template_id").eq_missing(rc_id))
        .unique(["node", s.POD], keep="first", maintain_order=True)
        .head(6)
    )
    others = sig.filter(pl.col("template_id").ne_missing(rc_id)).unique(
        "template_id", keep="first", maintain_order=True
    )
    rows = []
    for r in pl.concat([rc_rows, others]).iter_rows(named=True):
        h = keep[r["template_id"]]
        rows.append(
            _row(
                r[s.TS],
                r["node"] or r[s.POD] or r[s.HOST] or "-",
                r[s.POD],
                r[s.SOURCE],
                r["template_id"],
                h.role,
                f"{h.label}: {r['text'][:160]}",
                r[s.FILE],
                r[s.LINE],
            )
        )
    rows = sorted(rows, key=lambda x: (x["ts"] or "", x["role"] != "root_cause"))[:TIMELINE_MAX]
    if inc.baseline is not None:
        what = (
            f"throughput falls from {inc.baseline:,.0f} to {inc.minimum:,.0f} {series.unit}"
            if inc.minimum is not None
            else f"queue builds up: {inc.peak_waiting or 0:,.0f} requests waiting at peak, KV cache full"
        )
        rows.append(_row(inc.start, "cluster", None, "metrics", None, "impact", what))
        for a, b in inc.recoveries:
            rows.append(_row(a, "cluster", None, "metrics", None, "recovery", "partial recovery after restarts"))
            rows.append(_row(b, "cluster", None, "metrics", None, "impact", "throughput falls again: the same fault"))
        if inc.end:
            rows.append(
                _row(inc.end, "cluster", None, "metrics", None, "recovery", "throughput back above 80% of baseline")
            )
    if tell:
        rows.append(
            _row(
                datetime.fromisoformat(tell["start"]),
                "cluster",
                None,
                "metrics",
                None,
                "tell",
                "KV cache at 100% while nothing waits and nothing is preempted",
            )
        )
    if trig and trig["kind"] == "rollout":
        rows.append(_rollout_row(trig, "trigger"))
    elif trig:
        rows.append(
            _row(
                inc.start - timedelta(minutes=30),
                "cluster",
                None,
                "metrics",
                None,
                "trigger",
                f"traffic rising: prompt tokens/s x{trig['ratio']} over the 30 min before the drop",
            )
        )
    if res["kind"] == "rollout":
        rows.append(_rollout_row(res, "resolution"))
    return sorted(rows, key=lambda x: (x["ts"] or "", x["host"], x["summary"]))


def _rollout_row(rollout: dict, role: str) -> dict:
    """A rollout (`_rollout`) as a timeline row: when, and its first two kinds of change."""
    summary = "rollout: " + "; ".join(d["text"][:100] for d in rollout["details"][:2])
    ts = datetime.fromisoformat(rollout["ts"])
    return _row(ts, "cluster", None, "k8s-event", None, role, summary, rollout["file"], rollout["line"])


def _row(ts, host, pod, source, tid, role, summary, file=None, line=None) -> dict:
    return {
        "ts": _iso(ts),
        "host": host,
        "pod": pod,
        "source": source,
        "template_id": tid,
        "role": role,
        "summary": summary,
        "file": file,
        "line": line,
    }


TRIGGER_LOOKBACK = timedelta(minutes=30)
"""How long before the drop a traffic surge or a rollout counts as its trigger."""


def _trigger(inc, series) -> dict | None:
    """A traffic surge into the incident (prompt throughput up 25%+ in the 30 min before)."""
    if series.empty or series.prompt is None:
        return None
    t = np.array([x.timestamp() for x in series.t])
    s0 = inc.start.timestamp()
    early = series.prompt[(t >= s0 - TRIGGER_LOOKBACK.total_seconds()) & (t < s0 - 900)]
    late = series.prompt[(t >= s0 - 600) & (t < s0)]
    if len(early) < 2 or len(late) < 2:
        return None
    a, b = float(np.nanmedian(early)), float(np.nanmedian(late))
    if a > 0 and b / a >= 1.25:
        return {
            "kind": "traffic surge",
            "from_prompt_tokens_per_s": round(a, 1),
            "to_prompt_tokens_per_s": round(b, 1),
            "ratio": round(b / a, 2),
        }
    return None


def _rollout_before(inc, signals) -> dict | None:
    """The last rollout in the 30 minutes before the drop (image pulls, rescales, config
    updates), where no traffic surge was found: a rolling update takes old replicas away
    while new ones start, so a new version that cannot serve shows first as lost capacity,
    before any error of its own. One at the drop's very time is its trigger too (`kubectl get
    events` ages are whole minutes: a rolling update and its new pod's failure often share
    one); a rollout after the drop began is the resolution's. None in untimed logs, whose order
    says nothing of minutes."""
    if not inc.timed:
        return None
    ch = signals.filter(
        (pl.col("category") == "config-change")
        & (pl.col(s.TS) >= inc.start - TRIGGER_LOOKBACK)
        & (pl.col(s.TS) <= inc.start)
    ).sort(s.TS, s.FILE, s.LINE)
    if ch.is_empty():
        return None
    # The rollout and what came with it: the change rows in the span before the last one.
    ch = ch.filter(pl.col(s.TS) >= ch[s.TS].max() - ROLLOUT_SPAN)
    return _rollout(ch) | {"before_drop_s": round((inc.start - ch[s.TS][0]).total_seconds(), 1)}


ROLLOUT_SPAN = timedelta(minutes=5)
"""How long one rollout's steps are read as one (image pulls, the new replica set scaled up,
the old one down)."""


def _rollout(rows: pl.DataFrame) -> dict:
    """A rollout's change rows (in time order) as the report names it: its first row, and
    the first row of each kind of change that came with it (image pulls, rescales), four at most."""
    r = rows.row(0, named=True)
    details = [
        {"text": x["text"][:300], "file": x[s.FILE], "line": x[s.LINE]}
        for x in rows.unique("template_id", keep="first", maintain_order=True).head(4).iter_rows(named=True)
    ]
    return {
        "kind": "rollout",
        "ts": _iso(r[s.TS]),
        "text": r["text"][:300],
        "file": r[s.FILE],
        "line": r[s.LINE],
        "details": details,
    }


def _detection(inc, hyps, signals) -> dict:
    # A saturation logs no fault: its first sign is the engines' metrics reaching a full KV cache;
    # a change found to be the cause (a rollout) is its own first sign.
    first_signal = min(
        (
            h.first_seen
            for h in hyps
            if h.first_seen and (h.kind in ("fault", "symptom") or h.category == "capacity" or h.role == "root_cause")
        ),
        default=None,
    )
    visible = [h.first_seen for h in hyps if h.first_seen and (h.kind == "impact" or h.category == "pod-lifecycle")]
    return {"first_signal": _iso(first_signal), "first_user_visible": _iso(min(visible) if visible else None)}


def _resolution(inc, signals, logs_end, rollout: datetime | None = None) -> dict:
    """How the incident ended, as far as the logs show it.

    Only a throughput series can show a recovery. An incident found as a burst of errors
    (no metrics or access lines) ends where its errors stop, which may be no more than where
    the logs stop: it gets the two times (`errors_end`, `logs_end`) and never `recovered`.
    `rollout`: the trigger's rollout, whose own steps in the `ROLLOUT_SPAN` after it (the old
    replica set scaled down as the new one comes up) are no fix.
    """
    measured = inc.baseline is not None
    errors_end = None if measured or not inc.timed else _iso(inc.end)
    hi = (inc.end or signals[s.TS].max() or inc.start) + timedelta(minutes=10)
    after = pl.col(s.TS) >= inc.start if rollout is None else pl.col(s.TS) > max(inc.start, rollout + ROLLOUT_SPAN)
    ch = signals.filter((pl.col("category") == "config-change") & after & (pl.col(s.TS) <= hi)).sort(s.TS)
    if ch.height and inc.timed:  # (in untimed logs a change's place in the file says nothing of when)
        first = ch[s.TS][0]
        # The rollout and what came with it (new image pulls, rescales).
        return _rollout(ch.filter(pl.col(s.TS) <= first + ROLLOUT_SPAN)) | {
            "recovered": _iso(inc.end) if measured else None,
            "after_recovery": bool(measured and inc.end and inc.end < first),
            "errors_end": errors_end,
        }
    if not measured:
        return {
            "kind": "no recovery logged",
            "ts": None,
            "recovered": None,
            "errors_end": errors_end,
            "logs_end": _iso(max(logs_end, inc.end)) if errors_end and logs_end else errors_end,
        }
    if inc.end:
        return {"kind": "recovered without a logged change", "ts": _iso(inc.end), "recovered": _iso(inc.end)}
    return {"kind": "not recovered by the end of the logs", "ts": None, "recovered": None}


def _tell(inc, series) -> dict | None:
    t = (
        ser.tell_kv_full_no_queue(series, inc.start + timedelta(seconds=rootcause.ONSET_SLACK_S))
        if not series.empty
        else None
    )
    return {"kind": "kv-full-empty-queue", "start": _iso(t[0]), "end": _iso(t[1])} if t else None


def _incident_json(ir: IncidentReport, offsets: dict) -> dict:
    inc, v = ir.incident, ir.verdict
    top = v.top
    rc = None
    if top is not None:
        rc = {
            "status": v.status,
            "confidence": v.confidence,
            "category": top.category,
            "label": top.label,
            "template": top.template,
            "template_id": top.template_id,
            "hosts": top.hosts,
            "first_seen": _iso(top.first_seen),
            "evidence": top.evidence,
            "why": top.why,
        }
        rc["missing"] = v.missing if v.status == "inconclusive" else None
    else:
        rc = {
            "status": "inconclusive",
            "confidence": 0.0,
            "category": "other",
            "label": "not determined",
            "template": None,
            "template_id": None,
            "hosts": [],
            "first_seen": None,
            "evidence": [],
            "why": [],
            "missing": v.missing,
        }
    return {
        "start": _iso(inc.start),
        "end": _iso(inc.end),
        "timing": "exact"
        if inc.timed
        else "untimed: these logs carry no timestamps; the order of lines in each file stands in for time",
        "detector": inc.detector,
        "baseline_tokens_per_s": _r(inc.baseline) if ir.impact["unit"] == "generation tokens/s" else None,
        "min_tokens_per_s": _r(inc.minimum) if ir.impact["unit"] == "generation tokens/s" else None,
        "impact": ir.impact,
        "root_cause": rc,
        "trigger": ir.trigger,
        "tell": ir.tell,
        "detection": ir.detection,
        "resolution": ir.resolution,
        "hypotheses": [
            {
                "rank": i + 1,
                "role": h.role,
                "category": h.category,
                "kind": h.kind,
                "label": h.label,
                "template": h.template,
                "template_id": h.template_id,
                "score": h.score,
                "first_seen": _iso(h.first_seen),
                "hosts": h.hosts,
                "count": h.count,
                "why": "; ".join(h.why),
                "evidence": h.evidence[:2],
            }
            for i, h in enumerate(ir.hypotheses)
        ],
        "timeline": ir.timeline,
        "clock_offsets": offsets,
    }


def _changes_json(changes: pl.DataFrame | None, top: int = 15) -> list[dict]:
    """The most significant NEW/CHANGED templates of the first incident against the time before it."""
    if changes is None:
        return []
    keep = changes.filter(
        pl.col("status").is_in(["NEW", "CHANGED"]) & (pl.col("count_current") > pl.col("count_baseline"))
    )
    return [
        {
            "template_id": r["template_id"],
            "template": r["template"],
            "source": r["source"],
            "status": r["status"],
            "count_current": r["count_current"],
            "count_baseline": r["count_baseline"],
            "score": round(r["score"], 2),
        }
        for r in keep.head(top).iter_rows(named=True)
    ]


def _series_json(sr: ser.Series) -> dict:
    """The binned series the plots draw: cluster total, per pod, KV usage, waiting (compact)."""
    if sr.empty:
        return {"unit": sr.unit, "measured": False, "bin_s": ser.BIN_S, "t": [], "total": [], "per_pod": {}}

    def arr(a):
        return None if a is None else [None if (x is None or np.isnan(x)) else round(float(x), 3) for x in a]

    return {
        "unit": sr.unit,
        "measured": True,
        "bin_s": ser.BIN_S,
        "t": [_iso(x) for x in sr.t],
        "total": arr(sr.throughput),
        "per_pod": {k: arr(v) for k, v in sorted(sr.per_pod.items())},
        "kv_usage": arr(sr.kv_usage),
        "waiting": arr(sr.waiting),
    }


def _iso(t: datetime | None) -> str | None:
    """ISO 8601 in UTC; None for no time and for the file-order stand-ins of untimed logs."""
    if t is None or t.year < 1901:
        return None
    return t.isoformat().replace("+00:00", "Z")


def _r(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and np.isnan(x)) else round(float(x), 1)
