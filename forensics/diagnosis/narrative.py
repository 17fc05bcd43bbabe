"""An incident told as the postmortem tells it: impact, trigger, detection, resolution, the tell,
and the condensed timeline, each built from the signals and series the analysis computed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
import polars as pl

from forensics import schema as s
from forensics.diagnosis import rootcause
from forensics.diagnosis import series as ser
from forensics.diagnosis._format import iso, round1
from forensics.diagnosis.records import (
    Detection,
    Impact,
    Resolution,
    Rollout,
    RolloutStep,
    RolloutTrigger,
    Tell,
    TimelineRow,
    TrafficSurge,
    Trigger,
)

TIMELINE_MAX = 40


@dataclass(frozen=True, kw_only=True)
class IncidentReport:
    """One incident, ranked and told: what `analysis_json` writes for it."""

    incident: ser.Incident
    hypotheses: list[rootcause.Hypothesis]
    verdict: rootcause.Verdict
    timeline: list[TimelineRow]
    impact: Impact
    trigger: Trigger | None
    detection: Detection
    resolution: Resolution
    tell: Tell | None


def incident_report(inc, hyps, v, events, signals, series, metrics) -> IncidentReport:
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
    impact = Impact(
        start=inc.start,
        end=inc.end,
        duration_s=(inc.end - inc.start).total_seconds() if inc.end else None,
        measured=inc.baseline is not None,
        baseline_per_s=round1(inc.baseline),
        min_per_s=round1(inc.minimum),
        drop_fraction=round1(1 - inc.minimum / inc.baseline) if inc.baseline and inc.minimum is not None else None,
        unit=series.unit if inc.baseline is not None else None,
        http_5xx=failed,
        http_requests=requests,
        http_from=http_from,
        peak_waiting=round1(inc.peak_waiting),
        partial_recoveries=tuple(inc.recoveries),
        affected=tuple(affected_pods),
        detector=inc.detector,
        series_ended=series.t[-1]
        if not series.empty and inc.baseline is None and inc.start is not None and inc.start > series.t[-1]
        else None,
    )
    trigger = _trigger(inc, series) or _rollout_before(inc, signals)
    rollout = trigger.rollout.ts if isinstance(trigger, RolloutTrigger) else None
    resolution, tell = _resolution(inc, signals, events[s.TS].max(), rollout), _tell(inc, series)
    return IncidentReport(
        incident=inc,
        hypotheses=hyps,
        verdict=v,
        timeline=_timeline(inc, hyps, signals, series, tell, trigger, resolution),
        impact=impact,
        trigger=trigger,
        detection=_detection(inc, hyps, signals),
        resolution=resolution,
        tell=tell,
    )


def _timeline(inc, hyps, signals, series, tell, trig, res) -> list[TimelineRow]:
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
    rows = sorted(rows, key=lambda x: (_when(x), x.role != "root_cause"))[:TIMELINE_MAX]
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
                tell.start,
                "cluster",
                None,
                "metrics",
                None,
                "tell",
                "KV cache at 100% while nothing waits and nothing is preempted",
            )
        )
    if isinstance(trig, RolloutTrigger):
        rows.append(_rollout_row(trig.rollout, "trigger"))
    elif trig:
        rows.append(
            _row(
                inc.start - timedelta(minutes=30),
                "cluster",
                None,
                "metrics",
                None,
                "trigger",
                f"traffic rising: prompt tokens/s x{trig.ratio} over the 30 min before the drop",
            )
        )
    if res.rollout is not None:
        rows.append(_rollout_row(res.rollout, "resolution"))
    return sorted(rows, key=lambda x: (_when(x), x.host, x.summary))


def _when(row: TimelineRow) -> str:
    """A row's sort key in time: its time as `analysis.json` writes it.

    NOTE: this is the ISO text, not the datetime, so that the order is the one the report has
    always had; a whole second sorts after its own fractions (`...:00Z` > `...:00.5Z`)."""
    return iso(row.ts) or ""


def _rollout_row(rollout: Rollout, role: str) -> TimelineRow:
    """A rollout (`_rollout`) as a timeline row: when, and its first two kinds of change."""
    summary = "rollout: " + "; ".join(d.text[:100] for d in rollout.steps[:2])
    return _row(rollout.ts, "cluster", None, "k8s-event", None, role, summary, rollout.file, rollout.line)


def _row(ts, host, pod, source, tid, role, summary, file=None, line=None) -> TimelineRow:
    return TimelineRow(
        ts=ts, host=host, pod=pod, source=source, template_id=tid, role=role, summary=summary, file=file, line=line
    )


TRIGGER_LOOKBACK = timedelta(minutes=30)
"""How long before the drop a traffic surge or a rollout counts as its trigger."""


def _trigger(inc, series) -> TrafficSurge | None:
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
        return TrafficSurge(
            from_prompt_tokens_per_s=round(a, 1), to_prompt_tokens_per_s=round(b, 1), ratio=round(b / a, 2)
        )
    return None


def _rollout_before(inc, signals) -> RolloutTrigger | None:
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
    return RolloutTrigger(rollout=_rollout(ch), before_drop_s=round((inc.start - ch[s.TS][0]).total_seconds(), 1))


ROLLOUT_SPAN = timedelta(minutes=5)
"""How long one rollout's steps are read as one (image pulls, the new replica set scaled up,
the old one down)."""


def _rollout(rows: pl.DataFrame) -> Rollout:
    """A rollout's change rows (in time order) as the report names it: its first row, and
    the first row of each kind of change that came with it (image pulls, rescales), four at most."""
    r = rows.row(0, named=True)
    steps = tuple(
        RolloutStep(text=x["text"][:300], file=x[s.FILE], line=x[s.LINE])
        for x in rows.unique("template_id", keep="first", maintain_order=True).head(4).iter_rows(named=True)
    )
    return Rollout(ts=r[s.TS], text=r["text"][:300], file=r[s.FILE], line=r[s.LINE], steps=steps)


def _detection(inc, hyps, signals) -> Detection:
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
    return Detection(first_signal=first_signal, first_user_visible=min(visible) if visible else None)


def _resolution(inc, signals, logs_end, rollout: datetime | None = None) -> Resolution:
    """How the incident ended, as far as the logs show it.

    Only a throughput series can show a recovery. An incident found as a burst of errors
    (no metrics or access lines) ends where its errors stop, which may be no more than where
    the logs stop: it gets the two times (`errors_end`, `logs_end`) and never `recovered`.
    `rollout`: the trigger's rollout, whose own steps in the `ROLLOUT_SPAN` after it (the old
    replica set scaled down as the new one comes up) are no fix.
    """
    measured = inc.baseline is not None
    errors_end = None if measured or not inc.timed else inc.end
    hi = (inc.end or signals[s.TS].max() or inc.start) + timedelta(minutes=10)
    after = pl.col(s.TS) >= inc.start if rollout is None else pl.col(s.TS) > max(inc.start, rollout + ROLLOUT_SPAN)
    ch = signals.filter((pl.col("category") == "config-change") & after & (pl.col(s.TS) <= hi)).sort(s.TS)
    if ch.height and inc.timed:  # (in untimed logs a change's place in the file says nothing of when)
        first = ch[s.TS][0]
        # The rollout and what came with it (new image pulls, rescales).
        fix = _rollout(ch.filter(pl.col(s.TS) <= first + ROLLOUT_SPAN))
        return Resolution(
            kind="rollout",
            ts=fix.ts,
            recovered=inc.end if measured else None,
            rollout=fix,
            after_recovery=bool(measured and inc.end and inc.end < first),
            errors_end=errors_end,
        )
    if not measured:
        return Resolution(
            kind="no recovery logged",
            ts=None,
            recovered=None,
            errors_end=errors_end,
            logs_end=max(logs_end, inc.end) if errors_end and logs_end else errors_end,
        )
    if inc.end:
        return Resolution(kind="recovered without a logged change", ts=inc.end, recovered=inc.end)
    return Resolution(kind="not recovered by the end of the logs", ts=None, recovered=None)


def _tell(inc, series) -> Tell | None:
    t = (
        ser.tell_kv_full_no_queue(series, inc.start + timedelta(seconds=rootcause.ONSET_SLACK_S))
        if not series.empty
        else None
    )
    return Tell(start=t[0], end=t[1]) if t else None
