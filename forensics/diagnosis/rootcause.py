"""Rank hypotheses for an incident as root cause, symptom, impact or unrelated.

Why this order of evidence (shared docs, prior-art-and-root-cause.md §10): the loudest
lines of an outage are its symptoms (watchdog timeouts on every rank, probe failures,
restarts, 5xx). A root cause is a *fault or state change* that (1) starts before the
throughput drop and before the symptoms (precedence), (2) is new compared with the
healthy baseline (novelty), (3) is confined to one host or pod while its peers are fine
(peer outlier), (4) sits lower in the GPU-serving causal chain than what it explains
(node -> network -> memory/KV -> collectives -> engine -> pods -> requests), and (5)
recurs after restarts. State-based tells count as evidence too: a KV cache at 100% with
an empty queue and no preemptions is what an eviction policy that frees live blocks looks
like. When the top candidates are close, or only symptoms are present, the verdict is
`inconclusive` and says what evidence is missing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import polars as pl

from forensics import schema as s
from forensics.diagnosis import engine_config, signatures
from forensics.diagnosis.advice import (
    ASK_FOR,
    PROBE_KILL_LABEL,
    SOFTWARE_FAULT_LABEL,
    STARTUP_KILL_LABEL,
    SYMPTOM_OF,
)
from forensics.diagnosis.catalog import xid
from forensics.diagnosis.records import Evidence
from forensics.diagnosis.series import KV_FULL, UNTIMED_STEP, Incident, Series, tell_kv_full_no_queue
from forensics.diagnosis.signatures import Layer, Trait
from forensics.schema import Category, Kind, Role, Status

LOOKBACK = timedelta(minutes=30)
ONSET_SLACK_S = 90.0
"""A fault logged up to this long after the throughput bin where the drop starts still
precedes it: metrics are binned (30 s) and logged every 5-10 s."""
BASELINE_MIN = timedelta(minutes=5)
"""Logs this long before a template's first line make its absence from them evidence."""
SUPPORTED_MIN = 0.45
MARGIN_MIN = 0.08
KIND_WEIGHT = {"fault": 1.0, "change": 0.75, "symptom": 0.15, "impact": 0.0}
UNCATALOGUED_WEIGHT = 0.8
"""A fault read from a traceback's frames (`catalog.frames`) ranks below a catalogued fault of
the same timing and spread: a known fault's text is the stronger evidence."""


@dataclass(kw_only=True)
class Hypothesis:
    """A candidate cause, symptom or impact of one incident: one template's signals, scored.

    Mutable on purpose: the ranking's passes (`hypotheses`) adjust `score`, `role` and `why`
    in order; nothing outside this module changes them."""

    category: Category
    kind: Kind
    layer: int
    label: str
    template: str
    template_id: str
    first_seen: datetime | None
    hosts: list[str]
    count: int
    evidence: list[Evidence]
    score: float = 0.0
    role: Role = "unrelated"
    why: list[str] = field(default_factory=list)
    sources: frozenset[str] = frozenset()
    """What logged it (`schema.Source`): a node's own report or a process's."""


@dataclass(kw_only=True)
class Verdict:
    """The verdict on one incident: its top cause, and how sure; when inconclusive, what is missing."""

    status: Status
    confidence: float
    top: Hypothesis | None
    missing: str | None = None


def hypotheses(
    signals: pl.DataFrame,
    inc: Incident,
    series: Series,
    pods_total: int,
    nodes_total: int = 0,
    *,
    metrics: pl.DataFrame | None = None,
    events: pl.DataFrame | None = None,
    configs: list[engine_config.EngineConfig] | None = None,
) -> list[Hypothesis]:
    """Group the incident's signals into hypotheses and score them.

    `metrics` and `events` name the pods and the log lines behind a metric-derived
    hypothesis (KV cache saturation); without them it has neither. `configs` are the engines'
    starts (`engine_config.configs(events)`), read once per run by the caller when it ranks
    several incidents; read from `events` here otherwise.
    """
    lo = inc.start - LOOKBACK
    hi = (inc.end or signals[s.TS].max() or inc.start) + timedelta(minutes=2)
    win = signals.filter((pl.col(s.TS) >= lo) & (pl.col(s.TS) <= hi))
    out: list[Hypothesis] = []
    tell = tell_kv_full_no_queue(series, inc.start + timedelta(seconds=ONSET_SLACK_S)) if not series.empty else None
    if win.is_empty():
        _capacity(out, inc, series, metrics, events)
        _stale_kv(out, inc, tell, metrics, events)
        _engine_config(out, inc, events, configs)
        _assign_roles(out, inc)
        return out
    base = signals.filter(pl.col(s.TS) < lo).group_by("template_id").len()
    base_n = dict(base.iter_rows())
    base_span = (
        max((lo - signals[s.TS].min()).total_seconds(), 1.0)
        if signals[s.TS].min() and signals[s.TS].min() < lo
        else 0.0
    )
    win_span = max((hi - lo).total_seconds(), 1.0)
    logs_from = (events if events is not None and events.height else signals)[s.TS].min()
    first_symptom = win.filter(pl.col("kind") == "symptom")[s.TS].min()
    timeouts = _trap_timeouts(win)
    for (cat, kind, tid), part in win.sort(s.TS).group_by("category", "kind", "template_id", maintain_order=True):
        first = part.row(0, named=True)
        hosts: list[str] = []
        for h in part.select(pl.concat_list(pl.col("node"), pl.col(s.POD), pl.col(s.HOST)).alias("h"))["h"]:
            for x in h:
                if x and x not in hosts:
                    hosts.append(x)
        ev = [
            Evidence.quote(r[s.FILE], r[s.LINE], r["full"])
            for r in part.unique(s.POD, keep="first", maintain_order=True).head(3).iter_rows(named=True)
        ]
        h = Hypothesis(
            category=cat,
            kind=kind,
            layer=int(first["layer"]),
            label=first["label"],
            template=first["template"],
            template_id=tid,
            first_seen=first[s.TS],
            hosts=hosts,
            count=part.height,
            evidence=ev,
        )
        h.sources = frozenset(x for x in part[s.SOURCE].unique().to_list() if x)
        if cat == "gpu-fault" and (said := xid.meaning(first["full"] or "")) is not None:
            h.why.append(said)  # (what the code means, for an Xid outside the catalog's groups too)
            if (asked := _recovery_asked(first, win)) is not None:
                h.why.append(asked)
        if first.get(s.TS_QUALITY) == "relative" and first[s.SOURCE] == "kernel":
            h.why.append(BOOT_CLOCK_NOTE)
        echo = _trap_echo(h, timeouts)
        if echo is None:
            _on_many_gpus(h, part, events)
        _score(
            h,
            part,
            inc,
            first_symptom,
            base_n.get(tid, 0),
            logs_from,
            base_span,
            win_span,
            pods_total,
            nodes_total,
            tell,
        )
        if echo is not None:
            _as_symptom(h, echo)
        out.append(h)
    _peer_loss(out)
    _displaced(out)
    _probe_killed_a_serving_engine(out, metrics)
    _probe_killed_a_starting_engine(out, events)
    _capacity(out, inc, series, metrics, events)
    _stale_kv(out, inc, tell, metrics, events)
    _engine_config(out, inc, events, configs)
    _corroborate(out, signals)
    _assign_roles(out, inc)
    out.sort(key=lambda h: (h.role != "root_cause", -h.score, h.first_seen or inc.start, h.template_id))
    return out


TRAP_ECHO = re.compile(r"unspecified launch failure|CUDA_ERROR_LAUNCH_FAILED|cudaErrorLaunchFailure")
"""What CUDA reports once a kernel has executed `trap()`: every later call on that context fails so."""
TRAP_SLACK_S = 10.0
"""A device's `printf` (DeepEP's timeout message) reaches the log when the context synchronises,
which may be just after the host logged the CUDA error it caused."""


def _trap_timeouts(win: pl.DataFrame) -> list[tuple[datetime, set[str]]]:
    """Each DeepEP timeout signal of the window: its time and where it was logged."""
    rows = win.filter((pl.col("label") == signatures.DEEPEP_TIMEOUT) & pl.col(s.TS).is_not_null())
    return [(ts, {x for x in where if x}) for ts, *where in rows.select(s.TS, "node", s.POD, s.HOST).iter_rows()]


def _trap_echo(h: Hypothesis, timeouts: list[tuple[datetime, set[str]]]) -> str | None:
    """Why `h` echoes a DeepEP timeout, or None.

    DeepEP's kernels `trap()` when their timeout check fails (a peer rank stopped sending), so
    the CUDA calls after it fail with "unspecified launch failure" on every GPU that waited.
    Where the timeout was logged first on the same pod or node, that GPU fault is its echo, not
    a GPU's (nor, on several GPUs, a kernel bug's): a symptom."""
    if h.category != "gpu-fault" or h.kind != "fault" or h.first_seen is None or not TRAP_ECHO.search(h.template or ""):
        return None
    where = set(h.hosts)
    if not any(ts <= h.first_seen + timedelta(seconds=TRAP_SLACK_S) and where & at for ts, at in timeouts):
        return None
    return "DeepEP's kernels trap when their timeout check fails, and CUDA then reports this on that GPU: the timeout's echo"


PEER_LOSS = re.compile(
    r"Connection closed by remote peer|Connection reset by peer|Broken pipe|Call to recv from \S+ failed"
    r"|Socket recv failed while polling"  # (NCCL's proxy, when the peer process is gone)
)
PROCESS_DEATH = ("gpu-memory", "gpu-fault")


def _peer_loss(out: list[Hypothesis]) -> None:
    """A socket closed or reset by the peer is what the survivors of a dead process log.

    When a fault that kills a process (CUDA OOM, a GPU fault, an OOM kill) is in the same incident, the
    lost connection is more likely its consequence than a network failure of its own, in
    whichever order interleaved output printed them: it counts as a symptom, at half its
    score, and says why.
    """
    deaths = [
        h
        for h in out
        if h.kind == "fault" and (h.category in PROCESS_DEATH or Trait.OOM_KILL in signatures.traits_of(h.label))
    ]
    if not deaths:
        return
    for h in out:
        if h.category == "network" and h.kind == "fault" and PEER_LOSS.search(h.template or ""):
            _as_symptom(h, f"a peer that closes its sockets may have died: {deaths[0].label} is in these logs too")


def _displaced(out: list[Hypothesis]) -> None:
    """Pods that find no free GPU after a node failure were displaced by it.

    A lost node takes its GPUs with it, so its pods' replacements fail to schedule
    ("Insufficient nvidia.com/gpu"): with a node fault logged before the scheduling
    failure, the shortage is the node failure's consequence, a symptom, not a rival cause.
    """
    nodes = [h for h in out if h.kind == "fault" and h.category == "node" and h.first_seen is not None]
    for h in out:
        if h.category != "capacity" or h.kind != "fault" or h.first_seen is None:
            continue
        before = [n for n in nodes if n.first_seen <= h.first_seen]
        if before:
            _as_symptom(h, f"pods displaced by the {before[0].label} found no free GPUs elsewhere")


def _as_the_app_saw_it(label: str) -> bool:
    """Whether `label` is a fault as a process saw it, not what failed (`Trait.AS_THE_APP_SAW_IT`)."""
    return Trait.AS_THE_APP_SAW_IT in signatures.traits_of(label)


RECOVERY_WITHIN = timedelta(minutes=1)
"""How soon after an Xid the driver's Xid 154 on the same node reads as its recovery."""


def _recovery_asked(first: dict, win: pl.DataFrame) -> str | None:
    """The recovery the driver asked for right after the Xid in `first` (its Xid 154 on the same
    node within `RECOVERY_WITHIN`), with where it says so; None when it logged none."""
    if first[s.TS] is None or xid.is_recovery(first["full"] or ""):
        return None
    where = first["node"] or first[s.HOST]
    if not where:
        return None
    later = win.filter(
        (pl.col(s.TS) >= first[s.TS])
        & (pl.col(s.TS) <= first[s.TS] + RECOVERY_WITHIN)
        & (pl.coalesce("node", s.HOST) == where)
        & pl.col("full").str.contains(xid.RECOVERY)
    ).head(1)
    if later.is_empty():
        return None
    r = later.row(0, named=True)
    asked = xid.recovery(r["full"])
    return f"then the driver asked for {asked} (Xid 154, {r[s.FILE]}:{r[s.LINE]})" if asked else None


BOOT_CLOCK_NOTE = (
    "its time is dmesg's seconds since boot from a line of that boot that gave the wall time (the RTC at boot, an "
    "audit record): good to seconds near that line, a minute or two weeks from it"
)
"""Said of a kernel line placed by its boot's clock (`forensics.ingestion.timing._since_boot`), so that a lead of
seconds over the symptoms is read as the rough order it is."""


def node_reports(signals: pl.DataFrame) -> pl.DataFrame:
    """The node-level hardware and network faults whose time of happening the logs do not
    give, first per (node, label): undated lines and snapshots' findings.

    Plain `dmesg` counts seconds since boot, so a GPU's Xid 79 in it cannot be placed on the
    timeline; it still happened in this boot, and a GPU off the bus stays off until reset.
    An `nvidia-smi -q` taken after the outage shows the volatile ECC errors since the driver
    loaded: the fault is from before it was taken, not at that time."""
    return (
        signals.filter(
            (pl.col(s.TS).is_null() | pl.col(s.SOURCE).is_in(s.SNAPSHOT_SOURCES))
            & (pl.col("kind") == "fault")
            & (pl.col("layer") <= 1)
            & pl.col(s.SOURCE).is_in(s.NODE_SOURCES)
            & pl.coalesce("node", s.HOST).is_not_null()
        )
        .with_columns(pl.coalesce("node", s.HOST).alias("_at"))
        .unique(["_at", "label"], keep="first", maintain_order=True)
    )


def _when_said(r: dict) -> str:
    """How a node report's time reads: none, or when the snapshot was taken."""
    return "without a time" if r[s.TS] is None else f"in a snapshot taken {r[s.TS]:%H:%M:%S} (from then or before)"


def _corroborate(out: list[Hypothesis], signals: pl.DataFrame) -> None:
    """A fault on a node whose own log reports the same category's fault without its time
    (`node_reports`) is corroborated by it (its line joins the evidence), and named by it when
    the process only saw a CUDA call or a transfer fail: "GPU / CUDA fault" on gpu-2 with
    gpu-2's dmesg holding an Xid 79 is the GPU that fell off the bus."""
    reports = node_reports(signals)
    if reports.is_empty():
        return
    for r in reports.iter_rows(named=True):
        seen = [
            h
            for h in out
            if h.kind == "fault"
            and h.category == r["category"]
            and h.first_seen is not None
            and r["_at"] in h.hosts
            and h.template_id != r["template_id"]
            and r["label"] != signatures.SLOWDOWN
        ]
        if not seen:
            continue
        h = min(seen, key=lambda h: h.first_seen)
        h.evidence.append(Evidence.quote(r[s.FILE], r[s.LINE], r["full"]))
        h.why.append(f"{r['_at']}'s own log names what failed, {_when_said(r)}: {r['label']} ({r[s.FILE]}:{r[s.LINE]})")
        h.score = round(h.score + 0.05, 3)
        if _as_the_app_saw_it(h.label) and not _as_the_app_saw_it(r["label"]):
            h.label = r["label"]


def node_reports_pointer(signals: pl.DataFrame, hyps: list[Hypothesis]) -> str | None:
    """When no cause was found, what the nodes the incident touched report of their hardware
    without its time: where to look first (and to collect `dmesg -T` or `journalctl -k`).

    Where no node the incident touched is known (pod logs from `kubectl logs`, no events or
    pod listing to map them to nodes), every node's reports are named: a GPU off the bus in the
    one `dmesg` collected is where to look, whichever pods it served."""
    hosts = {x for h in hyps for x in h.hosts}
    reports = node_reports(signals)
    nodes = set(signals["node"].drop_nulls().to_list()) | set(reports["_at"].to_list())
    placed = hosts & nodes
    if placed:
        reports = reports.filter(pl.col("_at").is_in(sorted(placed)))
    if reports.is_empty():
        return None
    said = "; ".join(
        f"{r['label']} on {r['_at']} ({_when_said(r)}: {r[s.FILE]}:{r[s.LINE]})"
        for r in reports.head(3).iter_rows(named=True)
    )
    unplaced = "" if placed else " (which nodes the failing pods ran on, the logs do not say)"
    return (
        f"The nodes' own logs report faults without the time they happened: {said}{unplaced}. If they are from "
        "this incident they are its cause; collect `dmesg -T` or `journalctl -k` from those nodes to place them"
    )


PROBE_TIMEOUT = re.compile(
    r"Liveness probe failed: .*(?:context deadline exceeded|Client\.Timeout|i/o timeout|timed out)", re.IGNORECASE
)
BUSY_SAMPLES = 2
"""Metrics samples (the last before the first probe failure, within a minute of it) that must
show tokens being generated for the engine to count as serving when its probe timed out."""


def _probe_killed_a_serving_engine(out: list[Hypothesis], metrics: pl.DataFrame | None) -> None:
    """Liveness probes that time out while their engine is generating tokens: the cause, not a symptom.

    A probe failure is a symptom when the engine died or hung first (its metrics stop, or show
    requests running at 0 tokens/s). But under load the API server can answer `/health` later
    than a tight probe timeout while the engine keeps generating; the kubelet then kills a
    working pod, and the restart is the outage. So a liveness-timeout symptom is promoted to a
    fault when, on its pods, nothing else failed before it and the last `BUSY_SAMPLES`
    metrics samples within a minute before it all show generation throughput above zero.
    """
    if metrics is None or metrics.is_empty():
        return
    gen = metrics.filter((pl.col(s.METRIC) == "generation_tokens_per_s") & pl.col(s.TS).is_not_null())
    for h, pods in _first_probe_failures(out, PROBE_TIMEOUT):
        recent = (
            gen.filter(
                pl.col(s.POD).is_in(list(pods))
                & (pl.col(s.TS) <= h.first_seen)
                & (pl.col(s.TS) >= h.first_seen - timedelta(minutes=1))
            )
            .sort(s.TS, s.FILE, s.LINE)
            .tail(BUSY_SAMPLES)
        )
        if recent.height < BUSY_SAMPLES or not (recent[s.VALUE] > 0).all():
            continue
        _as_probe_fault(
            h, PROBE_KILL_LABEL, f"its engine was generating {recent[s.VALUE][-1]:,.0f} tokens/s when the probe failed"
        )


def _first_probe_failures(out: list[Hypothesis], pattern: re.Pattern) -> Iterator[tuple[Hypothesis, set[str]]]:
    """The probe-failure symptoms (`pattern` on their template) before which nothing on their
    pods failed or went wrong, with those pods and nodes: the candidates to be the cause."""
    for h in out:
        if not (h.category == "pod-lifecycle" and h.kind == "symptom" and h.first_seen is not None):
            continue
        if not pattern.search(h.template or ""):
            continue
        pods = set(h.hosts)
        if any(
            o is not h
            and o.kind in ("fault", "symptom")
            and o.first_seen is not None
            and o.first_seen < h.first_seen
            and pods & set(o.hosts)
            for o in out
        ):
            continue
        yield h, pods


def _as_probe_fault(h: Hypothesis, label: str, why: str) -> None:
    """A probe failure read as the fault: scored as one, named `label`, with `why`."""
    h.score = round(h.score / KIND_WEIGHT["symptom"] * KIND_WEIGHT["fault"], 3)
    h.kind = "fault"
    h.label = label
    h.why.append(f"{why}, and nothing on the pod failed before it")


PROBE_FAILED = re.compile(r"(?:Startup|Liveness) probe failed|failed (?:startup|liveness) probe, will be restarted")
"""A kubelet probe that restarts the container when it fails (a readiness probe only takes the pod
out of rotation)."""
STARTING = re.compile(
    r"Starting to load model|Loading (?:model )?weights|checkpoint shards|Downloading|\.safetensors|Fetching \d+ files"
    r"|Memory profiling takes|Available KV cache memory|GPU KV cache size|Maximum concurrency for"
    r"|Capturing CUDA graph|Compiling a graph|torch\.compile takes|Dynamo bytecode transform"
    r"|Initializing a V1 LLM engine|Initializing an LLM engine|vLLM API server version|non-default args"
)
"""What an engine logs (and its progress bars print) while it starts: download, weights, profiling,
compilation, CUDA graphs."""
SERVED = r"Application startup complete|Uvicorn running on|Avg prompt throughput|Engine \d+: "
"""What an engine logs only once it serves: uvicorn's start, the metrics lines."""
SERVING = re.compile(rf"{SERVED}|Starting vLLM API server")
"""`SERVED`, or the API server announcing itself."""
START_QUIET_S = 300
"""The engine's last start-up line must come this close before the probe failed: a start-up
that went quiet longer than this hung (a collective, a download) rather than ran long."""


def _probe_killed_a_starting_engine(out: list[Hypothesis], events: pl.DataFrame | None) -> None:
    """Probe failures that restart a container whose engine was still starting: the cause, not a symptom.

    A large model takes many minutes to download, load, profile and capture CUDA graphs, and
    its server does not listen (`connection refused`) until then. A startup or liveness probe
    whose budget is shorter kills it mid-load, over and over: a crash loop with no error of its
    own. Promoted to a fault when, on its pods, nothing failed before it and the pod's own log
    last said a start-up step (`STARTING`, its progress bars) within `START_QUIET_S` before the
    probe failed, with no sign of serving (`SERVING`) since.
    """
    if events is None or events.is_empty():
        return
    for h, pods in _first_probe_failures(out, PROBE_FAILED):
        own = events.filter(
            pl.col(s.POD).is_in(list(pods))
            & (pl.col(s.SOURCE) != "k8s-event")
            & pl.col(s.TS).is_not_null()
            & (pl.col(s.TS) <= h.first_seen)
        ).sort(s.TS, s.FILE, s.LINE)
        if own.is_empty():
            continue
        messages = own[s.MESSAGE].to_list()
        last = len(messages) - 1
        if not STARTING.search(messages[last] or ""):
            continue
        if any(SERVING.search(m or "") for m in messages):
            continue  # (it served in this log: not a start-up that ran long)
        quiet = (h.first_seen - own[s.TS][last]).total_seconds()
        if quiet > START_QUIET_S:
            continue
        ran = (h.first_seen - own[s.TS][0]).total_seconds()
        row = own.row(last, named=True)
        at = " ".join(messages[last].split())[:120]
        _as_probe_fault(
            h,
            STARTUP_KILL_LABEL,
            f'its engine had been starting for {_dur(ran)} and was still at "{at}" ({row[s.FILE]}:{row[s.LINE]}) '
            "when the probe failed",
        )
        return


SOFTWARE_PRONE = re.compile(
    r"illegal memory access|device-side assert|CUDA error: (?!out of memory)|\bXid (?:\(PCI:[^)]*\):\s*)?(?:13|31|43)\b"
    r"|Xid=(?:13|31|43)\b"
)
"""GPU faults a kernel raises: a bug or a bad input can cause them as well as the hardware
(the Xids that only hardware raises, 79, ECC, NVLink, GSP, have their own signatures)."""


WORKER = r"^(?:Worker|VllmWorker|RayWorker)"
"""vLLM's worker processes (log-formats.md 1.2: `Worker_TP3`, `VllmWorker rank=3`,
`VllmWorkerProcess`, Ray's `RayWorkerWrapper`): one GPU each."""


def _on_many_gpus(h: Hypothesis, part: pl.DataFrame, events: pl.DataFrame | None = None) -> None:
    """A kernel's GPU fault (`SOFTWARE_PRONE`) on two or more GPUs within one incident is
    software: GPUs do not fail together, code and inputs do (a kernel bug every tensor-parallel
    worker runs, a "query of death" that a load balancer retries onto the next replica).
    GPUs are told apart by node (pod, where the node is not known) and, within one, by worker
    process; an engine core re-raising its worker's error is not a GPU of its own."""
    if h.category != "gpu-fault" or h.kind != "fault" or not SOFTWARE_PRONE.search(h.template or ""):
        return
    if Trait.SOFTWARE_PRONE not in signatures.traits_of(
        h.label
    ):  # (an ECC error or a lost GPU is hardware however many report it)
        return
    place = pl.coalesce("node", s.POD)
    places = part.select(place.drop_nulls().n_unique()).item()
    workers = 0
    if s.PROCESS in part.columns:
        worker = pl.col(s.PROCESS).cast(pl.String).str.contains(WORKER).fill_null(False)
        workers = part.filter(worker).select(pl.struct(place, s.PROCESS, s.PID).n_unique()).item()
    if places >= 2 or workers >= 2:
        h.label = SOFTWARE_FAULT_LABEL
        where = "nodes" if part["node"].drop_nulls().len() else "pods"
        h.why.append(
            f"the same fault on {places} {where}" if places >= 2 else f"the same fault on {workers} GPU workers"
        )
        shared = _shared_request_size(events, h.first_seen) if events is not None else None
        if shared is not None:
            size, pods = shared
            h.why.append(
                f"the batches that crashed on {', '.join(pods)} each held a request of {size:,} tokens (vLLM's input "
                "dump): the same request, retried from one replica to the next?"
            )


DUMPED_BATCH = "Dumping scheduler output for model execution"
"""vLLM V1's engine, on a crash (`logging_utils/dump_input.py`, log-formats.md 1.5), logs the
batch it was running: `SchedulerOutput(scheduled_new_reqs=[NewRequestData(req_id=..,
prompt_token_ids_len=2824,..)], scheduled_cached_reqs=CachedRequestData(req_ids=[..],..,
num_computed_tokens=[29622],..), ..)`."""
_REQUEST_SIZES = re.compile(r"prompt_token_ids_len=(\d+)|num_computed_tokens=\[([\d, ]*)\]")


def _shared_request_size(events: pl.DataFrame, since: datetime | None) -> tuple[int, list[str]] | None:
    """A request size (prompt tokens of a new request, computed tokens of a running one) that
    the crashing batches of two or more pods all held, from vLLM's input dumps at or after
    `since`: the mark of one request crashing every replica it reaches."""
    if s.POD not in events.columns:
        return None
    dumped = pl.col(s.MESSAGE).str.contains(DUMPED_BATCH, literal=True) | pl.col(s.MESSAGE).str.starts_with(
        "SchedulerOutput("  # (older versions log the object as a record of its own)
    )
    dumps = events.filter(dumped & pl.col(s.POD).is_not_null())
    if since is not None:
        dumps = dumps.filter(pl.col(s.TS).is_null() | (pl.col(s.TS) >= since - timedelta(minutes=1)))
    sizes: dict[str, set[int]] = {}
    for pod, msg in dumps.select(s.POD, s.MESSAGE).iter_rows():
        for new, computed in _REQUEST_SIZES.findall(msg[:1_000_000]):
            found = [new] if new else re.findall(r"\d+", computed)
            sizes.setdefault(pod, set()).update(int(x) for x in found if 0 < int(x) < 10_000_000)
    if len(sizes) < 2:
        return None
    counts: dict[int, list[str]] = {}
    for pod, held in sorted(sizes.items()):
        for size in held:
            counts.setdefault(size, []).append(pod)
    common = [(len(pods), size, pods) for size, pods in counts.items() if len(pods) >= 2]
    if not common:
        return None
    _n, size, pods = max(common, key=lambda c: (c[0], c[1]))
    return size, pods


def _peers(n: int) -> str:
    return "peer pod was" if n == 1 else f"{n} peer pods were"


def _as_symptom(h: Hypothesis, why: str) -> None:
    """A fault explained by another fault in the same incident: a symptom, at half its score."""
    h.score *= 0.5
    h.kind = "symptom"
    h.why.append(why)


def _score(h, part, inc, first_symptom, n_base, logs_from, base_span, win_span, pods_total, nodes_total, tell) -> None:
    """Score `h` and say why.

    Novelty is evidence only where the logs start well before the template's first line
    (`BASELINE_MIN`): in an excerpt that starts with the fault, every template is "absent
    from the baseline" only vacuously. It still scores as new there (as it would for every
    hypothesis of such an excerpt, so no ranking changes) but is not claimed as a reason.
    """
    why = h.why
    has_baseline = logs_from is not None and h.first_seen is not None and logs_from <= h.first_seen - BASELINE_MIN
    lead = (inc.start - h.first_seen).total_seconds() if h.first_seen else -1e9
    if not inc.timed:
        # Untimed logs: position stands in for time, and interleaved processes make it a
        # weaker witness than a clock, so lateness costs less.
        steps = max(0, round(-lead / UNTIMED_STEP.total_seconds()))
        prec = math.exp(-steps / 20.0)
        why.append(
            "the first signal in the logs" if steps == 0 else f"{steps} events after the first signal (line order)"
        )
    elif lead >= -ONSET_SLACK_S:
        prec = 1.0
        onset = "the throughput drop" if inc.detector == "throughput-drop" else "the incident's first signal"
        why.append(f"starts {_dur(lead)} before {onset}" if lead > 0 else f"starts with {onset}")
    else:
        prec = math.exp(-(-lead - ONSET_SLACK_S) / 300.0)
        began = "the drop began" if inc.detector == "throughput-drop" else "the incident began"
        why.append(f"starts {_dur(-lead)} after {began}")
    if first_symptom is not None and h.first_seen is not None and h.kind in ("fault", "change"):
        if h.first_seen <= first_symptom + timedelta(seconds=5):
            why.append("precedes the first symptom")
        else:
            prec *= 0.5
            why.append("comes after the first symptom")
    if n_base == 0:
        novelty = 1.0
        why.append(
            "new: absent from the baseline before the incident"
            if has_baseline
            else "no baseline to compare with: these logs start with the incident"
        )
    else:
        rate_b = n_base / base_span if base_span else 0.0
        enrich = (h.count / win_span) / rate_b if rate_b else 10.0
        novelty = max(0.0, min(1.0, math.log10(max(enrich, 1e-9)) / 2))
        why.append(f"seen {n_base}x before the incident (rate x{enrich:.1f} now)")
    pods = {p for p in part[s.POD].to_list() if p}
    nodes = {n for n in part["node"].to_list() if n}
    where = part.filter(pl.col("node").is_not_null() | pl.col(s.POD).is_not_null())
    first_at = (where["node"][0] or where[s.POD][0]) if where.height else None
    if pods_total >= 2 and pods and len(pods) < pods_total:
        peer = 1.0 if len(pods) == 1 else 0.7
        if len(pods) > 1:
            why.append(f"on {len(pods)} of {pods_total} pods, first on {first_at}")
        elif h.kind == "change":  # (a rollout's events name its new pod: no peer to be fine beside it)
            why.append(f"on {first_at} alone of {pods_total} pods")
        else:
            why.append(f"starts on {first_at} while its {_peers(pods_total - 1)} fine")
    elif nodes_total >= 2 and nodes and len(nodes) < nodes_total:
        peer = 1.0 if len(nodes) == 1 else 0.7
        why.append(f"confined to {', '.join(sorted(nodes))} of {nodes_total} nodes")
    else:
        peer = 0.4
    layer = (6 - h.layer) / 6
    files = part[s.FILE].n_unique()
    recur = min(1.0, (files - 1) / 2) if files > 1 else 0.0
    restarts = part.filter(pl.col(s.FILE).str.contains(r"previous|/[1-9]\d*\.log$"))[s.FILE].n_unique()
    if restarts >= 1 and files > 1:
        why.append(f"recurs across {files} container instances (after restarts)")
    bonus = 0.0
    if tell and h.category == "kv-cache":
        bonus = 0.2
        why.append(
            f"KV cache at 100% with an empty queue and no preemptions from {tell[0]:%H:%M:%S}: blocks were reused while live"
        )
    base_score = 0.35 * prec + 0.2 * novelty + 0.15 * peer + 0.15 * layer + 0.15 * recur
    h.score = round(KIND_WEIGHT.get(h.kind, 0.0) * base_score + (bonus if h.kind == "fault" else 0.0), 3)
    if Trait.UNCATALOGUED in signatures.traits_of(h.label):
        h.score = round(h.score * UNCATALOGUED_WEIGHT, 3)
        why.append("named by where its traceback was raised, not by a known fault's text")


def _capacity(
    out: list[Hypothesis], inc: Incident, series: Series, metrics: pl.DataFrame | None, events: pl.DataFrame | None
) -> None:
    """Add a metric-derived capacity hypothesis: KV full with a growing queue and preemptions."""
    if series.empty or series.waiting is None or series.kv_usage is None:
        return
    idx = [i for i, t in enumerate(series.t) if inc.start - LOOKBACK <= t <= (inc.end or series.t[-1])]
    if not idx:
        return
    import numpy as np

    kv = np.nan_to_num(series.kv_usage[idx])
    w = np.nan_to_num(series.waiting[idx])
    pre = np.nan_to_num(series.preemptions[idx]) if series.preemptions is not None else np.zeros(len(idx))
    hot = (kv >= KV_FULL) & (w >= 20)
    if not hot.any():
        return
    first = series.t[idx[int(np.argmax(hot))]]
    hosts, evidence = _saturated(metrics, events, first, inc.end or series.t[-1])
    score = 0.8 if inc.detector == "saturation" else 0.35
    why = [
        f"KV cache >= {KV_FULL:.0%} with {round(w.max()):,} requests waiting",
        f"{round(pre.sum()):,} preemptions" if pre.sum() else "no preemptions logged",
        "no fault logged: the load exceeded capacity"
        if inc.detector == "saturation"
        else "saturation during the incident",
    ]
    out.append(
        Hypothesis(
            category="capacity",
            kind="change",
            layer=2,
            label="KV cache capacity exhausted",
            template="GPU KV cache usage: 100%, Waiting: <NUM> reqs",
            template_id="metric:kv-saturation",
            first_seen=first,
            hosts=hosts,
            count=int(hot.sum()),
            evidence=evidence,
            score=score,
            role="unrelated",
            why=why,
        )
    )


STALE_KV_READ = re.compile(
    r"probability tensor contains either `inf`, `nan` or element < 0|\b(?:nan|inf)\b.{0,40}\b(?:logits|probs|probabilities)\b"
    r"|(?:logits|probs|probabilities)\b.{0,40}\b(?:nan|inf)\b|block_table|slot_mapping|num_computed_tokens"
    r"|(?i:garbage|garbled) output",
    re.IGNORECASE,
)
"""What an engine reading another request's KV blocks runs into: probabilities turned NaN/inf in
the sampler (`torch.multinomial`), block-table and slot-mapping asserts, garbage output."""
TELL_SCORE = 0.5
"""A stale-KV hypothesis from the tell alone (no fault text names the KV cache)..."""
TELL_WITH_READS = 0.65
"""...and with the engine faults a stale read produces after it."""


def _stale_kv(
    out: list[Hypothesis],
    inc: Incident,
    tell: tuple[datetime, datetime] | None,
    metrics: pl.DataFrame | None,
    events: pl.DataFrame | None,
) -> None:
    """Add the KV cache as a cause from its state alone: usage at 100% with nothing waiting and
    nothing preempted (`series.tell_kv_full_no_queue`) before the incident.

    A correct allocator that is full queues new work or preempts; one that frees blocks still
    in use (the motivating off-by-one eviction) shows a full cache and an empty queue, and then
    the engine reads another request's keys and values: NaN/inf probabilities in the sampler,
    block-table asserts, garbage output. With no KV fault logged, those faults are read as
    what they are, a stale read's consequences (symptoms), and the tell as their cause."""
    if tell is None or any(h.category == "kv-cache" and h.kind == "fault" for h in out):
        return
    reads = [
        h
        for h in out
        if h.kind in ("fault", "symptom")
        and h.first_seen is not None
        and h.first_seen >= tell[0]
        and STALE_KV_READ.search(" ".join([h.template, h.label, *(e.text for e in h.evidence)]))
    ]
    for h in reads:
        if h.kind == "fault":
            _as_symptom(h, "what reading a stale KV block produces, after the KV cache showed the tell")
    hosts, evidence = _saturated(metrics, events, tell[0], tell[1])
    why = [
        f"KV cache at 100% with an empty queue and no preemptions from {tell[0]:%H:%M:%S}: a correct allocator "
        "would queue or preempt; one that frees live blocks does not",
        "starts before the incident's first signal",
    ]
    if reads:
        why.append(f"followed by what a stale KV read produces: {', '.join(h.label for h in reads[:3])}")
    else:
        why.append("no fault logged names it: read from the metrics alone")
    out.append(
        Hypothesis(
            category="kv-cache",
            kind="fault",
            layer=int(Layer.MEMORY_KV),
            label="KV blocks reused while still in use (the KV-full-with-empty-queue tell)",
            template="GPU KV cache usage: 100%, Waiting: 0 reqs, no preemptions",
            template_id="metric:kv-full-no-queue",
            first_seen=tell[0],
            hosts=hosts,
            count=len(evidence),
            evidence=evidence,
            score=TELL_WITH_READS if reads else TELL_SCORE,
            role="unrelated",
            why=why,
        )
    )


CONFIG_SHRANK_SCORE = 0.9
"""A rollout whose engines got less KV cache than the ones they replaced, before the incident:
above a saturation's capacity hypothesis (0.8), which is what that change leaves..."""
CONFIG_CHANGED_SCORE = 0.6
"""...and one that changed their arguments without a smaller cache: a suspect, not a verdict alone."""


def _engine_config(
    out: list[Hypothesis], inc: Incident, events: pl.DataFrame | None, configs: list | None = None
) -> None:
    """Add a rollout that started engines with other arguments (`engine_config.rollout_change`)
    in the `LOOKBACK` before the incident, with the before and after values; the capacity it
    left (a full KV cache, a growing queue) becomes its symptom."""
    if events is None or events.is_empty() or not inc.timed:
        return
    if configs is None:
        configs = engine_config.configs(events)
    change = engine_config.rollout_change(configs, inc.start - LOOKBACK, inc.start + timedelta(seconds=ONSET_SLACK_S))
    if change is None:
        return
    who = ", ".join(change.replicas[:3]) + (f" and {len(change.replicas) - 3} more" if len(change.replicas) > 3 else "")
    why = [f"the engines started from {change.first:%H:%M:%S} ({who}) run another configuration than those before them"]
    if change.shrank:
        why.append(
            "each new engine holds fewer requests at once: the full KV cache and the queue that followed are what it leaves"
        )
        for h in out:
            if h.category == "capacity":
                _as_symptom(h, "the capacity the new engine configuration left")
    out.append(
        Hypothesis(
            category="config-change",
            kind="change",
            layer=int(Layer.PODS),
            label=f"engine configuration changed in a rollout: {change.summary()}",
            template="non-default args: {<*>}",
            template_id="metric:engine-config-change",
            first_seen=change.first,
            hosts=list(change.replicas),
            count=len(change.replicas),
            evidence=list(change.evidence),
            score=CONFIG_SHRANK_SCORE if change.shrank else CONFIG_CHANGED_SCORE,
            role="unrelated",
            why=why,
        )
    )


def _saturated(
    metrics: pl.DataFrame | None, events: pl.DataFrame | None, since: datetime, until: datetime
) -> tuple[list[str], list[dict]]:
    """The pods whose engines logged a full KV cache from `since` (the first saturated bin) to
    `until`, in the order they filled, and the first such metrics line of each (up to three)."""
    if metrics is None or metrics.is_empty():
        return [], []
    full = (
        metrics.filter(
            (pl.col(s.METRIC) == "gpu_kv_cache_usage")
            & (pl.col(s.VALUE) >= KV_FULL)
            & pl.col(s.TS).is_between(since - timedelta(seconds=ONSET_SLACK_S), until)
        )
        .with_columns(pl.coalesce(s.POD, s.HOST).alias("_who"))
        .sort(s.TS, s.FILE, s.LINE)
        .unique("_who", keep="first", maintain_order=True)
    )
    hosts = [w for w in full["_who"].to_list() if w]
    first = full.head(3)
    texts: dict[tuple[str, int], str] = {}
    if events is not None and first.height:
        lines = events.join(first.select(s.FILE, s.LINE), on=[s.FILE, s.LINE], how="semi")
        texts = {(f, n): m or "" for f, n, m in lines.select(s.FILE, s.LINE, s.MESSAGE).iter_rows()}
    evidence = [Evidence.quote(f, n, texts.get((f, n))) for f, n in first.select(s.FILE, s.LINE).iter_rows()]
    return hosts, evidence


def _assign_roles(hyps: list[Hypothesis], inc: Incident) -> None:
    causes = [h for h in hyps if h.kind in ("fault", "change")]
    # A change after the drop began is the fix or a restart, not the cause.
    for h in causes:
        if (
            h.category == "config-change"
            and h.first_seen
            and h.first_seen > inc.start + timedelta(seconds=ONSET_SLACK_S)
        ):
            h.score = round(h.score * 0.2, 3)
            h.why.append("rolled out after the incident began: a mitigation, not the cause")
    causes.sort(key=lambda h: -h.score)
    top = causes[0] if causes else None
    # A rollout's new pods failing to start: the failure is the cause, the rollout its trigger.
    if top is not None and top.kind == "change":
        brought = [h for h in causes if _brought(top, h) and h.score >= top.score - 0.15]
        if brought:
            top = min(brought, key=lambda h: h.first_seen)
    if top is not None:
        change = min((h for h in causes if _brought(h, top)), key=lambda h: h.first_seen, default=None)
        if change is not None:
            top.why.append(
                f"a new pod failing to start after the rollout at {change.first_seen:%H:%M:%S} (its trigger)"
            )
    # Among faults of the top's category, the earliest close contender leads: it is the
    # same failure seen first (PLEG before NodeNotReady, the store before the engine). Within
    # the clocks' skew, the report that says what failed on the same host leads the one that
    # only saw a CUDA call or a transfer fail (the kernel's link down, the NCCL error after it).
    if top is not None:
        for h in causes[1:]:
            if (
                h.category == top.category
                and h.first_seen is not None
                and top.first_seen is not None
                and h.score >= top.score - 0.15
                and (
                    h.first_seen < top.first_seen - timedelta(seconds=SKEW_S)
                    or (_names_what_failed(h, top) and h.first_seen <= top.first_seen + timedelta(seconds=SKEW_S))
                )
            ):
                top = h
    for h in hyps:
        if h is top:
            h.role = "root_cause"
        elif top is not None and h.kind == "fault" and h.category == top.category:
            h.role = "symptom"
            h.why.insert(0, f"the same {top.category} failure as reported by another component")
        elif h.kind == "symptom":
            h.role = "symptom"
            if top is not None:
                h.why.insert(0, f"follows the {top.label.lower()} ({top.category}) and is explained by it")
            else:
                h.why.insert(0, SYMPTOM_OF.get(h.category, "reports a failure elsewhere, not its cause"))
        elif h.kind == "impact":
            h.role = "impact"
        else:
            h.role = "unrelated"
    if top is not None:
        # The root cause leads the ranking even when a later echo of it scored a hair higher.
        top.score = max(top.score, max(h.score for h in causes))


SKEW_S = 5.0
"""Seconds two sources' clocks may disagree by: an earlier line by less is not "first"."""


def _names_what_failed(h: Hypothesis, top: Hypothesis) -> bool:
    """Whether `h`, the node's own report on a host of `top`, names the failure `top` only saw
    as a process did."""
    return (
        _as_the_app_saw_it(top.label)
        and not _as_the_app_saw_it(h.label)
        and bool(h.sources)
        and h.sources <= set(s.NODE_SOURCES)
        and bool(set(h.hosts) & set(top.hosts))
    )


def _brought(change: Hypothesis, fault: Hypothesis) -> bool:
    """Whether `fault` is what the rollout `change` brought: a new pod failing to start after it."""
    return (
        change.kind == "change"
        and Trait.AT_START in signatures.traits_of(fault.label)
        and change.first_seen is not None
        and fault.first_seen is not None
        and change.first_seen <= fault.first_seen
    )


def verdict(hyps: list[Hypothesis]) -> Verdict:
    """`supported` when the top cause scores well and clearly beats other categories."""
    causes = sorted(
        (h for h in hyps if h.kind in ("fault", "change") and h.role != "symptom"),
        key=lambda h: (h.role != "root_cause", -h.score),
    )
    if not causes:
        symptoms = sorted({h.category for h in hyps if h.kind == "symptom"})
        asks = [ASK_FOR[c] for c in symptoms if c in ASK_FOR] or [ASK_FOR["collective-timeout"]]
        miss = (
            (
                f"only symptoms in the logs ({', '.join(symptoms)}); no fault or state change precedes them. "
                f"Collect {'; '.join(dict.fromkeys(asks))}; and the kubelet/kernel logs of the nodes"
            )
            if symptoms
            else "no fault, state change or symptom found in the logs around the drop"
        )
        death = first_process_death(hyps)
        return Verdict(
            status="inconclusive", confidence=0.0, top=None, missing=sentences(death, miss) if death else miss
        )
    top = causes[0]
    # A fault read only from where its traceback was raised is no rival to a catalogued one.
    known = Trait.UNCATALOGUED not in signatures.traits_of(top.label)
    rival = next(
        (
            h
            for h in causes[1:]
            if h.category != top.category
            and not _brought(h, top)
            and not (known and Trait.UNCATALOGUED in signatures.traits_of(h.label))
        ),
        None,
    )
    margin = top.score - (rival.score if rival else 0.0)
    conf = round(max(0.0, min(0.99, top.score * (0.6 + min(margin, 0.4)))), 2)
    if top.score >= SUPPORTED_MIN and margin >= MARGIN_MIN:
        return Verdict(status="supported", confidence=conf, top=top)
    why = (
        f"{top.label} ({top.category}, {top.score:.2f}) and {rival.label} ({rival.category}, {rival.score:.2f}) "
        "explain the drop about equally; logs of the first failing host would decide"
        if rival and margin < MARGIN_MIN
        else f"the best candidate ({top.label}, {top.score:.2f}) is weak: it does not clearly precede the drop"
    )
    return Verdict(status="inconclusive", confidence=conf, top=top, missing=why)


WORKER_DEATH = re.compile(
    r"Worker (?P<who>\S+) pid (?P<pid>\d+) died, exit code: (?P<code>-?\d+)"
    r"|failed \(exitcode: (?P<code2>-?\d+)\) local_rank: (?P<rank>\d+) \(pid: (?P<pid2>\d+)\)"
)
"""A worker process's death as its parent reports it: vLLM's multiproc executor
(`Worker VllmWorkerProcess pid 1159 died, exit code: -6`) and torch elastic
(`failed (exitcode: -9) local_rank: 0 (pid: 290)`). A negative code is the signal that killed it."""
NATIVE_CRASH = re.compile(
    r"^Fatal Python error: (?P<what>Segmentation fault|Aborted|Bus error)|^\*\*\* SIG(?P<sig>SEGV|ABRT|BUS) received"
    r"|^(?P<shell>Segmentation fault) \(core dumped\)"
)
"""A process's own report of a crash in native code: Python's faulthandler, absl's signal
handler, the shell. The thread stacks printed with it say which call crashed."""
CRASH_SIGNAL = {"Segmentation fault": 11, "SEGV": 11, "Aborted": 6, "ABRT": 6, "Bus error": 7, "BUS": 7}
SIGNAL_MEANING = {
    6: "SIGABRT: native code aborted, e.g. on a CUDA or NCCL error or a failed assertion, and said why on stderr",
    7: "SIGBUS: often a /dev/shm too small for the container, which NCCL and the shared-memory broadcast use",
    9: "SIGKILL: killed from outside, most often by the kernel OOM killer; check dmesg and the kubelet",
    11: "SIGSEGV: a crash in native code: a driver, NCCL or a custom kernel",
    15: "SIGTERM: asked to stop by a pod deletion, a preemption or an operator",
}


def first_process_death(hyps: list[Hypothesis]) -> str | None:
    """When only symptoms are logged, the earliest worker death or native crash among them, said
    as what to look at next.

    The watchdog timeouts and engine errors that follow a dead worker are its echo; the
    worker's own output (and how it was killed) is where the cause is.
    """
    found = []
    for h in hyps:
        for ev in h.evidence:
            text = ev.text
            m = WORKER_DEATH.search(text) or NATIVE_CRASH.search(text)
            if m:
                found.append((h.first_seen is None, h.first_seen or datetime.min, m, h, ev))
    if not found:
        return None
    _, _, m, h, ev = min(found, key=lambda x: (x[0], x[1]))
    if m.re is NATIVE_CRASH:
        sig = CRASH_SIGNAL[m["what"] or m["sig"] or m["shell"]]
        where = f" on {', '.join(h.hosts)}" if h.hosts else ""
        at = f" ({ev.file}:{ev.line})" if ev.file else ""
        return (
            f"The first failure logged is a process crashing in native code{where}{at}: `{m.group(0)}` "
            f"({SIGNAL_MEANING[sig]}); the errors after it follow from that. The thread stacks printed with it "
            "say which call crashed"
        )
    code, pid = int(m["code"] or m["code2"]), m["pid"] or m["pid2"]
    who = m["who"] or f"local rank {m['rank']}"
    how = f"exit code {code}"
    if code < 0 and -code in SIGNAL_MEANING:
        how += f" ({SIGNAL_MEANING[-code]})"
    elif code > 128 and code - 128 in SIGNAL_MEANING:
        how += f" (128 + {code - 128}, {SIGNAL_MEANING[code - 128]})"
    return (
        f"The first failure logged is worker {who} (pid {pid}) dying with {how}; the timeouts and engine "
        "errors after it follow from that. That process's own log lines just before it died say why"
    )


def sentences(*parts: str | None) -> str:
    """Sentences joined, each starting with a capital (a verdict's `missing` text grows by
    prepending what the logs do say); no final period, which the report's templates add."""
    return ". ".join(p[0].upper() + p[1:].rstrip(".") for p in parts if p)


def _dur(sec: float) -> str:
    sec = abs(sec)
    if sec < 90:
        return f"{sec:.0f} s"
    if sec < 5400:
        return f"{sec / 60:.1f} min"
    return f"{sec / 3600:.1f} h"
