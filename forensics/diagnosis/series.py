"""Throughput and health series, and the incidents found in them.

Series come from vLLM metrics lines and SGLang's batch lines (generation tokens/s, running,
waiting, KV usage, preemptions) per pod/engine, binned and summed over the cluster. Where no metrics lines
exist they come from access lines (completed requests/s and 5xx/s).

An incident is a *critical failure* in Datadog's sense: a significant, sustained drop of
cluster throughput (change points by ruptures PELT, then a Welch t-test of each low
segment against the baseline level), or sustained saturation (the waiting queue grows
while KV cache is full), or, with no series at all, a burst of faults and symptoms.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl

from forensics import schema as s
from forensics.diagnosis.records import Stall
from forensics.schema import Detector

BIN_S = 30
"""Width of a time bin. vLLM V1 logs metrics every 10 s, V0 every 5 s: 30 s smooths both."""
DROP_FRACTION = 0.25
"""A segment at least this far below the baseline level is degraded (healthy diurnal swings
stay within ~15%)."""
RECOVERY_FRACTION = 0.8
ALPHA = 1e-3
KV_FULL = 0.97
"""GPU KV cache usage from which an engine counts as full (vLLM logs it rounded to 0.1 %)."""
MAX_GAP = timedelta(days=7)
"""Samples further apart than this belong to separate stretches of logs; the series covers
the stretch with the most samples (a node whose clock was reset stamps 1970-01-01, and a
grid of 30 s bins back to it would be tens of millions of bins)."""
MAX_SPAN = timedelta(days=31)
"""The series covers at most this much time, the latest of its stretch (89,280 bins)."""
MAX_CPD_BINS = 20_000
"""The change-point search (quadratic in the worst case) sees at most this many points: a
longer series is averaged over consecutive bins first (a week of 30 s bins is 20,160)."""


@dataclass
class Series:
    """Cluster-wide series on a regular grid, plus the per-pod throughput it sums."""

    t: list[datetime]
    throughput: np.ndarray
    """Generation tokens/s summed over pods (or completed requests/s, see `unit`)."""
    unit: str
    per_pod: dict[str, np.ndarray] = field(default_factory=dict)
    waiting: np.ndarray | None = None
    kv_usage: np.ndarray | None = None
    """Mean GPU KV cache usage over reporting pods (0-1)."""
    preemptions: np.ndarray | None = None
    errors: np.ndarray | None = None
    """HTTP 5xx per second."""
    prompt: np.ndarray | None = None
    left_out: str | None = None
    """What samples the series does not cover, and why (see `MAX_GAP`), for the warnings."""

    @property
    def empty(self) -> bool:
        return len(self.t) < 6


UNTIMED_EPOCH = datetime(1900, 1, 1, tzinfo=UTC)
UNTIMED_STEP = timedelta(seconds=100)
"""Logs with no timestamps (an NCCL excerpt pasted into a ticket) are ordered by position:
event i stands at UNTIMED_EPOCH + i * UNTIMED_STEP, a step longer than the ranking's onset
slack, so "before" means "earlier in the file". Such times are never shown."""


@dataclass(kw_only=True)
class Incident:
    """A span where the service was hurt, as a detector found it. Its fields may be widened by the
    analysis (merged recurrences), never by the report."""

    start: datetime
    end: datetime | None
    baseline: float | None
    minimum: float | None
    detector: Detector
    """`throughput-drop`, `replica-drop`, `replica-slowdown`, `saturation`, or `error-burst` (no
    throughput series)."""
    p_value: float | None = None
    peak_waiting: float | None = None
    recoveries: list[tuple[datetime, datetime]] = field(default_factory=list)
    """Partial recoveries inside a merged incident: (back up, down again)."""
    timed: bool = True
    """False when the logs carry no timestamps: times are then file-order stand-ins (see
    `UNTIMED_EPOCH`) and are never shown."""
    pods: tuple[str, ...] = ()
    """The replicas a per-pod detector saw fail (`replica-drop`, `replica-slowdown`)."""
    queued: bool = False
    """Whether requests queued while they failed (`_queued`): capacity lost, not demand gone."""


def build(
    events: pl.DataFrame,
    metrics: pl.DataFrame,
    faulted: dict[str, list[datetime]] | None = None,
    stopped: dict[str, list[datetime]] | None = None,
) -> Series:
    """Cluster series from metrics lines, falling back to access lines.

    `faulted` and `stopped`: when each replica (`REPLICA`) logged a hard fault
    (`signals.faulted`) or its container was stopped (`signals.stops`, `KILLED`), the evidence that its
    silence after one is an engine not serving rather than a log cut short (`_down`)."""
    m = metrics.filter(pl.col(s.TS).is_not_null())
    gen = m.filter(pl.col(s.METRIC) == "generation_tokens_per_s")
    if gen.height >= 6:
        return _from_metrics(m, events, Evidence(faulted or {}, stopped or {}))
    return _from_access(events)


@dataclass(frozen=True)
class Evidence:
    """What says a replica that reports nothing is not serving (`_down`), by `REPLICA` name."""

    faulted: dict[str, list[datetime]]
    stopped: dict[str, list[datetime]]


def _covered(df: pl.DataFrame, what: str) -> tuple[pl.DataFrame, str | None]:
    """`df`'s rows in the stretch of time the series covers (`MAX_GAP`, `MAX_SPAN`), and a
    sentence on the rows left out, if any."""
    ts = df[s.TS].sort()
    us = ts.dt.epoch("us").to_numpy()
    gap = int(MAX_GAP.total_seconds() * 1e6)
    stretch = np.concatenate([[0], np.cumsum(np.diff(us) > gap)])
    counts = np.bincount(stretch)
    best = len(counts) - 1 - int(np.argmax(counts[::-1]))  # the most samples; ties: the latest
    lo, hi = ts[int(np.searchsorted(stretch, best))], ts[int(np.searchsorted(stretch, best, side="right")) - 1]
    lo = max(lo, hi - MAX_SPAN)
    inside = (pl.col(s.TS) >= lo) & (pl.col(s.TS) <= hi)
    out = df.filter(~inside)
    if out.is_empty():
        return df, None
    first, last = out[s.TS].min(), out[s.TS].max()
    return df.filter(inside), (
        f"throughput series: {out.height:,} {what} from {first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M} UTC left out; "
        f"it covers {lo:%Y-%m-%d %H:%M} to {hi:%Y-%m-%d %H:%M} UTC (samples over {MAX_GAP.days} days apart are "
        f"separate stretches of logs, and a series covers at most {MAX_SPAN.days} days): check those files' clocks"
    )


def _grid(lo: datetime, hi: datetime) -> list[datetime]:
    n = int((hi - lo).total_seconds() // BIN_S) + 1
    return [lo + timedelta(seconds=BIN_S * i) for i in range(n)]


def _binned(df: pl.DataFrame, lo: datetime) -> pl.DataFrame:
    return df.with_columns(((pl.col(s.TS) - lo).dt.total_seconds() // BIN_S).cast(pl.Int64).alias("_bin"))


REPLICA = pl.coalesce(s.POD, s.FILE)
"""The name a replica goes by in `Series.per_pod` (before its `/engine`): its pod, else its file."""


def _from_metrics(m: pl.DataFrame, events: pl.DataFrame, evidence: Evidence) -> Series:
    key = pl.concat_str([REPLICA, pl.col(s.ENGINE).fill_null("")], separator="/")
    m, left_out = _covered(m.with_columns(key.alias("_src")), "metrics samples")
    lo = m[s.TS].min().replace(second=0, microsecond=0)
    answered = served(events)[0]
    hi = _failing_after(answered, m[s.TS].max())
    grid = _grid(lo, hi)
    n = len(grid)
    mb = _binned(m, lo)

    def per_src(metric: str, agg: str = "mean") -> dict[str, np.ndarray]:
        sub = mb.filter(pl.col(s.METRIC) == metric)
        # NOTE: sorted before aggregating and stacking: float sums depend on order, and the
        # same logs must give byte-identical reports.
        g = (
            sub.sort("_src", "_bin", s.FILE, s.LINE)
            .group_by("_src", "_bin", maintain_order=True)
            .agg(getattr(pl.col(s.VALUE), agg)())
        )
        out: dict[str, np.ndarray] = {}
        for src, part in g.group_by("_src", maintain_order=True):
            arr = np.full(n, np.nan)
            idx = part["_bin"].to_numpy()
            arr[idx[(idx >= 0) & (idx < n)]] = part[s.VALUE].to_numpy()[(idx >= 0) & (idx < n)]
            out[src[0]] = arr
        return dict(sorted(out.items()))

    gen = per_src("generation_tokens_per_s")
    running, waiting = per_src("running", "max"), per_src("waiting", "max")
    failed = _errors_by_replica(answered, lo, n)
    queue = np.nansum(np.vstack(list(waiting.values())), axis=0) if waiting else None
    per_pod = {
        src: _known(
            arr,
            running.get(src),
            waiting.get(src),
            down=_down(arr, grid, src.rsplit("/", 1)[0], evidence, failed, queue),
        )
        for src, arr in gen.items()
    }
    known = np.vstack(list(per_pod.values())) if per_pod else np.full((1, n), np.nan)
    total = np.where(np.isnan(known).all(axis=0), np.nan, np.nansum(known, axis=0))

    def summed(metric: str, agg: str = "mean") -> np.ndarray | None:
        d = per_src(metric, agg)
        if not d:
            return None
        return np.nansum(np.vstack(list(d.values())), axis=0)

    kv = per_src("gpu_kv_cache_usage")
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        kv_mean = np.nanmean(np.vstack(list(kv.values())), axis=0) if kv else None
    return Series(
        grid,
        total,
        "generation tokens/s",
        per_pod,
        waiting=summed("waiting"),
        kv_usage=kv_mean,
        preemptions=summed("preemptions", "sum"),
        errors=_errors(answered, lo, n),
        prompt=summed("prompt_tokens_per_s"),
        left_out=left_out,
    )


def _known(gen: np.ndarray, running: np.ndarray | None, waiting: np.ndarray | None, *, down: np.ndarray) -> np.ndarray:
    """A replica's generation throughput as far as it is known: NaN where it is not.

    Absent metrics are no data, not zero: an excerpt cut short, a log collected over another
    window, an engine that stops logging when idle (V0 logs only while it steps; V1 logs an
    idle engine at DEBUG) or a pod gone in a rollout all leave gaps, and a gap read as zero
    throughput is a false outage. A measured zero with nothing running and nothing waiting is
    an idle engine: no demand, not a fault, so it is no data for the drop either. Only `down`
    (the replica's own hard fault, until it serves again, or requests failing) makes a silent
    or idle bin a real zero. Before its first report a replica is not counted at all."""
    out = gen.copy()
    if running is not None:
        quiet = np.nan_to_num(waiting, nan=0.0) if waiting is not None else np.zeros(len(gen))
        idle = (gen == 0) & (running == 0) & (quiet == 0)
        out[idle] = np.nan
    out = np.where(np.isnan(out) & down, 0.0, out)
    started = ~np.isnan(gen)
    if started.any():
        out[: int(np.argmax(started))] = np.nan
    else:
        out[:] = np.nan
    return out


def _down(
    gen: np.ndarray,
    grid: list[datetime],
    replica: str,
    evidence: Evidence,
    failed: dict[str | None, np.ndarray],
    queue: np.ndarray | None,
) -> np.ndarray:
    """Bins in which `replica` is known not to serve, reported or not:

    - from each hard fault it logged until it reports serving again;
    - wherever requests failed (its own 5xx, or a gateway's, which any replica may have caused);
    - once its container was stopped or killed, from its last report on (a stopped pod serves
      nothing: capacity gone, whether a new pod takes its place or not);
    - while it is silent and the cluster's waiting queue rises (`_queued`'s test): work kept
      coming and was not served."""
    n = len(grid)
    down = np.zeros(n, bool)
    serving = np.nan_to_num(gen, nan=0.0) > 0
    at = lambda t: int((t - grid[0]).total_seconds() // BIN_S)  # noqa: E731
    for f in evidence.faulted.get(replica, ()):
        i = at(f)
        if not 0 <= i < n:
            continue
        back = np.flatnonzero(serving[i + 1 :])
        down[i : i + 1 + int(back[0]) if len(back) else n] = True
    for key in (replica, None):
        if key in failed:
            down |= failed[key]
    reported = np.flatnonzero(~np.isnan(gen))
    if not len(reported):
        return down
    last, lead = int(reported[-1]), int(FAULT_LEAD.total_seconds() // BIN_S)
    for x in evidence.stopped.get(replica, ()):
        if at(x) >= last - lead:  # (one long before its last report: it came back)
            down[max(last + 1, min(at(x), n)) if at(x) > last + lead else last + 1 :] = True
    if queue is not None:
        silent = np.isnan(gen)
        silent[: int(reported[0])] = False
        for a, b in _runs(silent, min_len=1):
            if a >= 3 and float(np.mean(queue[a:b])) > max(1.0, 2 * float(np.median(queue[max(0, a - 10) : a]))):
                down[a:b] = True
    return down


def _errors_by_replica(answered: pl.DataFrame, lo: datetime, n: int) -> dict[str | None, np.ndarray]:
    """Bins with a 5xx answer, by the replica that logged it (`None`: a gateway, any replica)."""
    gateway = pl.col(s.SOURCE).is_in(GATEWAY_SOURCES)
    e = _binned(answered.filter((pl.col(s.HTTP_STATUS) >= 500) & pl.col(s.TS).is_not_null()), lo).with_columns(
        pl.when(gateway).then(pl.lit(None, pl.String)).otherwise(REPLICA).alias("_r")
    )
    out: dict[str | None, np.ndarray] = {}
    for (r,), part in e.group_by("_r", maintain_order=True):
        arr = np.zeros(n, bool)
        idx = part["_bin"].to_numpy()
        arr[idx[(idx >= 0) & (idx < n)]] = True
        out[r] = arr
    return out


GATEWAY_SOURCES = ("envoy", "nginx")
"""Access lines of a gateway in front of the pods (`parsers.envoy`, `parsers.nginx`)."""
SERVING_PATHS = r"^/(?:v1|v2|openai)/|^/(?:generate|inference|invocations)\b"
"""The inference APIs' paths (OpenAI-compatible `/v1/...`, KServe's `/v2/...`, vLLM's `/generate`)."""


def served(events: pl.DataFrame) -> tuple[pl.DataFrame, str]:
    """The access lines that say what clients got, and where they come from.

    A gateway's lines when there are any: it answers what the pods cannot (a 503 when none
    is left), and the pods' own lines are the same requests again, so the two are never
    added up; of a gateway that also fronts other services, only its inference API paths.
    Else the servers' (uvicorn) lines. A request logged twice under its id (by Ray Serve's
    proxy and by the replica that served it) is counted once."""
    answered = events.filter(pl.col(s.HTTP_STATUS).is_not_null())
    if answered[s.REQUEST_ID].null_count() < answered.height:
        answered = answered.filter(pl.col(s.REQUEST_ID).is_null() | pl.col(s.REQUEST_ID).is_first_distinct())
    gateway = answered.filter(pl.col(s.SOURCE).is_in(GATEWAY_SOURCES))
    if not gateway.height:
        return answered, "access log"
    inference = gateway.filter(pl.col(s.HTTP_PATH).str.contains(SERVING_PATHS).fill_null(False))
    return (inference if inference.height else gateway), "gateway access log"


FAILING_MIN = 10
"""Failed requests after the last metrics sample from which the series goes on to the last of them..."""
FAILING_TAIL = timedelta(hours=6)
"""...within this long of it: the engines stopped reporting because they stopped serving."""


def _failing_after(answered: pl.DataFrame, last: datetime) -> datetime:
    """Where the series ends: at the last metrics sample, or later while requests kept
    failing after it (`FAILING_MIN` 5xx or more, most of what was answered then).

    A dead engine logs no metrics, and the series, which ends with its last sample, would
    end before the outage: the only replica's crash showed no drop at all. Requests that
    kept arriving and failing say the service was wanted and down (an idle engine's silence
    comes with no requests, or only probes: GETs are not counted)."""
    after = answered.filter(
        (pl.col(s.TS) > last) & (pl.col(s.TS) <= last + FAILING_TAIL) & (pl.col(s.HTTP_METHOD) != "GET")
    )
    failed = after.filter(pl.col(s.HTTP_STATUS) >= 500)
    if failed.height < FAILING_MIN or 2 * failed.height <= after.height:
        return last
    return failed[s.TS].max()


def _errors(answered: pl.DataFrame, lo: datetime, n: int) -> np.ndarray:
    """5xx responses a second per bin, from the access lines `served` picked."""
    e = _binned(answered.filter((pl.col(s.HTTP_STATUS) >= 500) & pl.col(s.TS).is_not_null()), lo)
    arr = np.zeros(n)
    for b, c in e.group_by("_bin").len().iter_rows():
        if 0 <= b < n:
            arr[b] = c / BIN_S
    return arr


def _from_access(events: pl.DataFrame) -> Series:
    answered = served(events)[0]
    acc = answered.filter(pl.col(s.TS).is_not_null() & (pl.col(s.HTTP_METHOD) != "GET"))
    if acc.height < 20:
        return Series([], np.array([]), "none")
    acc, left_out = _covered(acc, "access lines")
    lo = acc[s.TS].min().replace(second=0, microsecond=0)
    grid = _grid(lo, acc[s.TS].max())
    n = len(grid)
    b = _binned(acc, lo)
    ok = np.zeros(n)
    for i, c in b.filter(pl.col(s.HTTP_STATUS) < 500).group_by("_bin").len().iter_rows():
        if 0 <= i < n:
            ok[i] = c / BIN_S
    return Series(grid, ok, "completed requests/s", errors=_errors(answered, lo, n), left_out=left_out)


def detect(series: Series, faulted: dict[str, list[datetime]] | None = None) -> list[Incident]:
    """Incidents in `series`: throughput drops, then saturation windows not already covered.

    `faulted`: when each replica (its `per_pod` name before the engine) logged a hard fault;
    a replica that goes dark right after one is an incident however little of the cluster
    it carried (`_replica_drops`)."""
    if series.empty:
        return []
    found = _drops(series)
    for inc in _saturation(series) + _replica_drops(series, faulted or {}) + _replica_slowdowns(series):
        if not any(_overlaps(inc, f) for f in found):
            found.append(inc)
    return sorted(found, key=lambda i: i.start)


REPLICA_DIP = 0.10
"""A replica going dark counts when the cluster total dips at least this much: a rollout
(old pods stop while new ones take over) keeps the total and is not an incident..."""
FAULT_LEAD = timedelta(minutes=2)
"""...unless it logged a hard fault within this long before it went dark (or a bin after):
a crashed replica of twenty is an outage for the requests routed to it, a rollout logs no
fault."""


def _replica_drops(series: Series, faulted: dict[str, list[datetime]]) -> list[Incident]:
    """A pod whose throughput falls to near zero for 90 s+ while it had been serving.

    The peer-outlier view of the series: losing one replica of many moves the cluster
    total less than `DROP_FRACTION`, yet that replica's users are down.
    """
    out: list[Incident] = []
    for name, y in sorted(series.per_pod.items()):
        v = np.nan_to_num(y, nan=-1.0)
        serving = v > 0
        if serving.sum() < 6:
            continue
        first = int(np.argmax(serving))
        base = float(np.median(v[serving]))
        dark = (v >= 0) & (v < 0.1 * base)
        dark[:first] = False
        faults = faulted.get(name.rsplit("/", 1)[0], [])
        out += _replica_incidents(series, name, _runs(dark, min_len=3), "replica-drop", faults)
    return out


SLOW_FRACTION = 0.5
"""A replica is slowed when it serves under this fraction of its usual throughput..."""
SLOW_MIN_BINS = 6
"""...for this many bins (3 min) or more, while requests wait."""


def _replica_slowdowns(series: Series) -> list[Incident]:
    """A pod serving at under half its usual throughput for minutes while the queue grows.

    A GPU held down by heat or power, or a sick link in its TP group, slows one replica
    without an error: the cluster total dips less than `DROP_FRACTION`, yet the requests
    routed there wait. Less demand would also lower a pod's throughput, so the waiting queue
    must rise with it (without a queue series nothing is claimed)."""
    if series.waiting is None:
        return []
    out: list[Incident] = []
    for name, y in sorted(series.per_pod.items()):
        v = np.nan_to_num(y, nan=-1.0)
        serving = v > 0
        if serving.sum() < 2 * SLOW_MIN_BINS:
            continue
        usual = float(np.percentile(v[serving], 75))
        slow = (v >= 0.1 * usual) & (v < SLOW_FRACTION * usual)
        runs = _runs(slow, min_len=SLOW_MIN_BINS)
        out += [inc for inc in _replica_incidents(series, name, runs, "replica-slowdown") if inc.queued]
    return out


def _replica_incidents(
    series: Series, name: str, runs: list[tuple[int, int]], detector: str, faults: Sequence[datetime] = ()
) -> list[Incident]:
    """The runs of bins [a, b) in which replica `name` failed that cost the cluster total at
    least `REPLICA_DIP` against the ten bins before (or that began at one of its `faults`,
    `FAULT_LEAD`), as incidents of `detector`."""
    total = np.nan_to_num(series.throughput)
    out = []
    for a, b in runs:
        before = total[max(0, a - 10) : a]
        if len(before) < 3:
            continue
        t_base = float(np.median(before))
        if t_base <= 0:
            continue
        crashed = any(series.t[a] - FAULT_LEAD <= f <= series.t[a] + timedelta(seconds=BIN_S) for f in faults)
        if float(np.mean(total[a:b])) > (1 - REPLICA_DIP) * t_base and not crashed:
            continue
        end = series.t[b] if b < len(series.t) else None
        pod, low = name.rsplit("/", 1)[0], float(np.min(total[a:b]))
        out.append(
            Incident(
                start=series.t[a],
                end=end,
                baseline=t_base,
                minimum=low,
                detector=detector,
                pods=(pod,),
                queued=_queued(series, a, b),
            )
        )
    return out


def _queued(series: Series, a: int, b: int) -> bool:
    """Whether the cluster's waiting queue over bins [a, b) rose above twice its level in the
    ten bins before (and above one request): work kept coming that was not served."""
    if series.waiting is None or a < 3:
        return False
    waiting = np.nan_to_num(series.waiting)
    return float(np.mean(waiting[a:b])) > max(1.0, 2 * float(np.median(waiting[max(0, a - 10) : a])))


def _overlaps(a: Incident, b: Incident) -> bool:
    a_end = a.end or datetime.max.replace(tzinfo=a.start.tzinfo)
    b_end = b.end or datetime.max.replace(tzinfo=b.start.tzinfo)
    return a.start <= b_end and b.start <= a_end


def _drops(series: Series) -> list[Incident]:
    """Change points (PELT, l2 cost) on the throughput; low, significant segments become incidents."""
    from scipy.stats import ttest_ind

    y = series.throughput
    # Only measured values make a drop: the bins with no data (`_known`) are left out of the
    # search, and a segment's ends are mapped back to the grid (`at`).
    at = np.flatnonzero(~np.isnan(y))
    if len(at) < 6:
        return []
    x = y[at]
    scale = float(np.median(x[x > 0])) if (x > 0).any() else 1.0
    z = x / (scale or 1.0)
    # Penalty from the noise level: the MAD of first differences estimates sigma.
    sigma = float(np.median(np.abs(np.diff(z))) / 0.6745 / math.sqrt(2)) if len(z) > 2 else 0.1
    sigma = max(sigma, 0.02)
    bounds = [0, *_change_points(z, pen=3 * sigma**2 * math.log(len(z)) * 2)]
    segs = [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]
    incidents: list[Incident] = []
    i = 0
    while i < len(segs):
        a, b = segs[i]
        before = x[:a]
        if len(before) < 4:
            i += 1
            continue
        base = float(np.median(before[before > 0])) if (before > 0).any() else 0.0
        level = float(np.mean(x[a:b]))
        if base <= 0 or level > (1 - DROP_FRACTION) * base:
            i += 1
            continue
        p = _welch_p(x[a:b], before, ttest_ind) if b - a >= 2 else 0.0
        if not (p < ALPHA or level < 0.5 * base) or math.isnan(p) and level >= 0.5 * base:
            i += 1
            continue
        # Extend over following low segments until throughput recovers.
        j = i
        while j + 1 < len(segs) and float(np.mean(x[segs[j + 1][0] : segs[j + 1][1]])) < RECOVERY_FRACTION * base:
            j += 1
        end_idx = segs[j][1]
        if not _measured_fall(series, int(at[a]), int(at[end_idx - 1]) + 1):
            i = j + 1
            continue
        low = x[a:end_idx]
        end = series.t[int(at[end_idx])] if end_idx < len(x) else None
        incidents.append(
            Incident(
                start=series.t[int(at[a])],
                end=end,
                baseline=base,
                minimum=float(np.min(low)),
                detector="throughput-drop",
                p_value=p if not math.isnan(p) else None,
            )
        )
        i = j + 1
    return incidents


def _measured_fall(series: Series, a: int, b: int) -> bool:
    """Whether the fall over grid bins [a, b) is in what the replicas measured, not in who
    stopped reporting.

    The cluster total sums the replicas known in each bin, so one whose log was cut short
    (collected over another window, rotated away) or that left in a rollout lowers it without
    any loss. Over the replicas known in the fall (measured, or down on evidence: `_known`),
    the sum in the bins all of them are known (two at least) must still be `DROP_FRACTION`
    below its level in the bins before, where a replica not started yet counts as zero."""
    if not series.per_pod:
        return True  # (a series from access lines: every bin is measured)
    ys = [y for y in series.per_pod.values() if not np.isnan(y[a:b]).all()]
    if not ys:
        return False
    m = np.vstack(ys)
    for row in m:
        started = ~np.isnan(row)
        row[: int(np.argmax(started))] = 0.0
    known = ~np.isnan(m).any(axis=0)
    sums = np.where(known, np.nansum(m, axis=0), np.nan)
    before, during = sums[:a][known[:a]], sums[a:b][known[a:b]]
    before = before[before > 0]
    if not len(before) or len(during) < 2:
        return False  # (one sample before a silence is a tail winding down, not a sustained fall)
    return float(np.mean(during)) <= (1 - DROP_FRACTION) * float(np.median(before))


DEMAND_RAMP = timedelta(minutes=10)
"""A decline spread over at least this long is a ramp (load going away), not a loss."""
DEMAND_STEP = 0.4
"""...and no 30 s bin of it carries more than this share of the whole fall (nor half of any
one pod's own level)."""


def demand_fell(series: Series, inc: Incident) -> bool:
    """Whether a throughput drop is the load going away rather than capacity lost.

    Work that cannot be served queues (`Waiting`), errors or stalls; work that is not sent
    simply stops arriving: the engines' prompt throughput falls with the generation, no queue
    grows, and the fall is gradual, every pod sinking together rather than one going dark at
    once. (The engines measure both throughputs, so a dead engine's prompt falls too: the
    caller also requires that no fault, change, symptom or error was logged.)
    """
    if series.waiting is None or series.prompt is None or inc.baseline is None or inc.minimum is None:
        return False
    keep = ~np.isnan(series.throughput)  # (the bins with data: `_known`)
    t = np.array([x.timestamp() for x in series.t])[keep]
    end = (inc.end or series.t[-1]).timestamp()
    before = (t >= inc.start.timestamp() - 1800) & (t < inc.start.timestamp())
    low = (t >= inc.start.timestamp()) & (t <= end)
    if before.sum() < 4 or not low.any():
        return False
    gen, prompt = series.throughput[keep], np.nan_to_num(series.prompt[keep])
    g0, p0 = float(np.median(gen[before])), float(np.median(prompt[before]))
    if g0 <= 0 or p0 <= 0:
        return False
    if float(np.mean(prompt[low])) / p0 > float(np.mean(gen[low])) / g0 + 0.25:
        return False  # the work kept coming: it was not served
    # Gradual: from its level an hour before, the total sinks over >= DEMAND_RAMP, no bin a big step.
    idx = np.flatnonzero((t >= inc.start.timestamp() - 3600) & (t <= end))
    lowest = idx[int(np.argmin(gen[idx]))]
    top = idx[int(np.argmax(gen[idx[idx <= lowest]]))] if (idx <= lowest).any() else lowest
    fall = gen[top] - gen[lowest]
    if fall <= 0 or (t[lowest] - t[top]) < DEMAND_RAMP.total_seconds():
        return False
    waiting = np.nan_to_num(series.waiting[keep])
    usual = waiting[(t >= t[top] - 1800) & (t < t[top])].max(initial=0.0)
    if waiting[(t >= t[top]) & (t <= end)].max(initial=0.0) > usual:
        return False  # a queue grew as it fell: work was sent and not served
    steps = -np.diff(gen[top : lowest + 1])
    if steps.max(initial=0.0) > DEMAND_STEP * fall:
        return False
    for y in series.per_pod.values():
        v = np.nan_to_num(y[keep][top : lowest + 1])
        if len(v) > 1 and v.max() > 0 and (-np.diff(v)).max(initial=0.0) > 0.5 * v.max():
            return False  # a pod went dark at once: half its own level gone in one bin
    return True


def _change_points(z: np.ndarray, *, pen: float) -> list[int]:
    """Ends of the segments of `z` (the last is `len(z)`) minimising squared error plus `pen`
    per change: exact penalised search (PELT) with the l2 cost.

    `KernelCPD` with the linear kernel has exactly `Pelt(model="l2")`'s cost (a segment's
    sum of squared deviations), but its search runs compiled: a day of 30 s bins takes
    milliseconds instead of a minute. A series longer than `MAX_CPD_BINS` is averaged over
    runs of `k` bins first (the penalty scaled to match) and the ends mapped back.
    """
    import ruptures as rpt

    total = len(z)
    k = max(1, -(-total // MAX_CPD_BINS))
    if k > 1:
        whole = total // k * k
        z = np.concatenate([z[:whole].reshape(-1, k).mean(axis=1), [z[whole:].mean()] if whole < total else []])
        pen /= k  # a mean of k bins has 1/k of their variance
    ends = rpt.KernelCPD(kernel="linear", min_size=2).fit(z.reshape(-1, 1)).predict(pen=pen)
    return [min(int(e) * k, total) for e in ends]


def _saturation(series: Series) -> list[Incident]:
    """Sustained queueing with a full KV cache: capacity exhausted although nothing crashed."""
    if series.waiting is None or series.kv_usage is None:
        return []
    w = np.nan_to_num(series.waiting)
    kv = np.nan_to_num(series.kv_usage)
    base_w = float(np.median(w[: max(4, len(w) // 4)]))
    hot = (kv >= KV_FULL) & (w >= max(20.0, 5 * base_w + 10))
    runs = _runs(hot, min_len=4)
    out = []
    for a, b in runs:
        pre = series.throughput[:a]
        base = float(np.nanmedian(pre)) if len(pre) and not np.all(np.isnan(pre)) else None
        # Throughput does not collapse under saturation; the queue is the impact.
        out.append(
            Incident(
                start=series.t[a],
                end=series.t[b] if b < len(series.t) else None,
                baseline=base,
                minimum=None,
                detector="saturation",
                peak_waiting=float(w[a:b].max()),
            )
        )
    return out


def _runs(mask: np.ndarray, min_len: int) -> list[tuple[int, int]]:
    runs, start = [], None
    for i, v in enumerate(mask):
        if v and start is None:
            start = i
        elif not v and start is not None:
            if i - start >= min_len:
                runs.append((start, i))
            start = None
    if start is not None and len(mask) - start >= min_len:
        runs.append((start, len(mask)))
    return runs


def error_bursts(signals: pl.DataFrame, gap: timedelta = timedelta(minutes=10)) -> list[Incident]:
    """Incidents from faults and symptoms alone (no throughput series): clusters in time.

    A watchdog timeout belongs with what happened while it waited: it is placed at the
    start of its wait (`coll_ran_ms` before it) for clustering, so the hang a flight
    recorder dump or an engine fault records and the timeouts 10-30 min later are one
    incident, not two."""
    sig = signals.filter(pl.col("kind").is_in(["fault", "symptom"]) & pl.col(s.TS).is_not_null()).sort(s.TS)
    if sig.is_empty():
        return []
    waited = pl.col(s.COLL_RAN_MS) if s.COLL_RAN_MS in sig.columns else pl.lit(None, pl.Int64)
    since = sig.select(pl.col(s.TS) - pl.duration(milliseconds=waited.fill_null(0).clip(0, WAIT_MAX_MS)))
    out: list[Incident] = []
    start = prev = sig[s.TS][0]
    for t, waiting_since in zip(sig[s.TS][1:], since.to_series()[1:], strict=True):
        if waiting_since - prev > gap:
            out.append(Incident(start=start, end=prev, baseline=None, minimum=None, detector="error-burst"))
            start = t
        prev = t
    out.append(Incident(start=start, end=prev, baseline=None, minimum=None, detector="error-burst"))
    return out


def past_the_series(series: Series, signals: pl.DataFrame) -> list[Incident]:
    """Incidents from faults logged after the throughput series ends (`error_bursts` of them),
    where a cluster holds at least one hard fault.

    An engine that dies stops logging its metrics: an excerpt cut at the crash has no
    measured drop to show, and a gap is unknown, not zero. What the series cannot speak for,
    its faults still can: `EngineCore encountered a fatal error` with its traceback after
    the last metrics line is an outage. Warnings and symptoms alone there are not."""
    if series.empty:
        return []
    # (after the last bin's start: its samples may all precede; a snapshot's time is when someone looked)
    after = signals.filter((pl.col(s.TS) > series.t[-1]) & ~pl.col(s.SOURCE).is_in(s.SNAPSHOT_SOURCES))
    return [
        inc
        for inc in error_bursts(after)
        if not after.filter(
            (pl.col("kind") == "fault") & (pl.col(s.TS) >= inc.start) & (pl.col(s.TS) <= inc.end)
        ).is_empty()
    ]


def request_failures(events: pl.DataFrame, gap: timedelta = timedelta(minutes=10)) -> list[Incident]:
    """Bursts of failed requests that no throughput drop shows: `FAILING_MIN` or more 5xx
    answers (GETs, probes, left out), clustered like `error_bursts`, that were most of what
    was answered in their span. With no throughput lines, or access lines that never held a
    success (every request failed: nothing to fall from), the errors are the impact."""
    answered = served(events)[0].filter(pl.col(s.TS).is_not_null() & (pl.col(s.HTTP_METHOD) != "GET")).sort(s.TS)
    failed = answered.filter(pl.col(s.HTTP_STATUS) >= 500)
    if failed.height < FAILING_MIN:
        return []
    ts = failed[s.TS].to_list()
    spans, start = [], 0
    for i in range(1, len(ts) + 1):
        if i == len(ts) or ts[i] - ts[i - 1] > gap:
            spans.append((ts[start], ts[i - 1], i - start))
            start = i
    out = []
    for lo, hi, n in spans:
        total = answered.filter((pl.col(s.TS) >= lo) & (pl.col(s.TS) <= hi)).height
        if n >= FAILING_MIN and 2 * n > total:
            out.append(Incident(start=lo, end=hi, baseline=None, minimum=None, detector="error-burst"))
    return out


WAIT_MAX_MS = 6 * 3600 * 1000
"""The longest wait a watchdog timeout may stretch a cluster back over (collective timeouts
are minutes to an hour; a larger `ran for` is a garbled line)."""


def tell_kv_full_no_queue(series: Series, before: datetime) -> tuple[datetime, datetime] | None:
    """The window before `before` where KV usage is ~100% while nothing waits and nothing is
    preempted: a correct allocator would queue or preempt; one that frees live blocks does not."""
    if series.kv_usage is None or series.waiting is None:
        return None
    idx = [i for i, t in enumerate(series.t) if t <= before]
    if not idx:
        return None
    kv = series.kv_usage[: idx[-1] + 1]
    w = np.nan_to_num(series.waiting[: idx[-1] + 1])
    pre = np.nan_to_num(series.preemptions[: idx[-1] + 1]) if series.preemptions is not None else np.zeros(len(w))
    mask = (np.nan_to_num(kv) >= KV_FULL) & (w <= 1) & (pre == 0)
    runs = _runs(mask, min_len=2)
    if not runs:
        return None
    a, b = runs[-1]
    return series.t[a], series.t[min(b, len(series.t) - 1)]


STALL_SAMPLES = 2
"""Consecutive metrics samples with requests running and nothing generated that make a stall."""


def first_stall(metrics: pl.DataFrame, before: datetime | None = None) -> dict | None:
    """The first engine stall: requests running, zero prompt and generation throughput, for
    `STALL_SAMPLES` samples in a row (on or before `before`, when given).

    The signature of a hang, as opposed to a crash, that precedes NCCL watchdog timeouts
    (shared docs, log-formats.md §6.8): the engine is alive and scheduled work, but a
    collective or a kernel never returns. Returns the stall's start, where, and its evidence.
    """
    want = ("running", "generation_tokens_per_s", "prompt_tokens_per_s")
    m = metrics.filter(pl.col(s.METRIC).is_in(want) & pl.col(s.TS).is_not_null())
    if m.is_empty():
        return None
    wide = (
        m.with_columns(pl.coalesce(s.POD, s.HOST, s.FILE).alias("_where"))
        .pivot(on=s.METRIC, index=["_where", s.ENGINE, s.TS, s.FILE, s.LINE], values=s.VALUE, aggregate_function="max")
        .sort("_where", s.ENGINE, s.TS, s.LINE)
    )
    for c in want:
        if c not in wide.columns:
            return None
    stalled = (pl.col("running") >= 1) & (pl.col("generation_tokens_per_s") == 0) & (pl.col("prompt_tokens_per_s") == 0)
    run_id = (~stalled).cum_sum().over("_where", s.ENGINE)
    runs = (
        wide.with_columns(stalled.alias("_st"), run_id.alias("_run"))
        .filter(pl.col("_st"))
        .group_by("_where", s.ENGINE, "_run")
        .agg(pl.len().alias("n"), pl.all().sort_by(s.TS).first())
        .filter(pl.col("n") >= STALL_SAMPLES)
        .sort(s.TS, "_where")
    )
    if before is not None:
        runs = runs.filter(pl.col(s.TS) <= before)
    if runs.is_empty():
        return None
    r = runs.row(0, named=True)
    return Stall(
        start=r[s.TS],
        where=r["_where"],
        running=int(r["running"]),
        samples=int(r["n"]),
        file=r[s.FILE],
        line=r[s.LINE],
    )


def _welch_p(seg: np.ndarray, before: np.ndarray, ttest_ind) -> float:
    """Welch's t-test p-value, quietly: a flat series (a constant baseline, throughput at
    exactly 0) makes scipy warn about precision loss, which is noise on the console and
    changes nothing here (the level test decides those cases)."""
    import warnings

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(ttest_ind(seg, before, equal_var=False).pvalue)
