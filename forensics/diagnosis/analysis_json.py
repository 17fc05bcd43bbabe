"""The `analysis.json` contract: the one place the analysis' records become a JSON document.

The report renders only this document; `ANALYSIS_VERSION` is bumped when a field is renamed,
removed or changes meaning."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from forensics.diagnosis import series as ser
from forensics.diagnosis._format import iso, round1
from forensics.diagnosis.narrative import IncidentReport
from forensics.diagnosis.records import (
    Detection,
    Evidence,
    Impact,
    Resolution,
    Rollout,
    Tell,
    TimelineRow,
    TrafficSurge,
    Trigger,
)

if TYPE_CHECKING:
    from forensics.diagnosis.analysis import Report


ANALYSIS_VERSION = 1


def incident_json(ir: IncidentReport, offsets: dict) -> dict:
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
            "first_seen": iso(top.first_seen),
            "evidence": [_evidence(e) for e in top.evidence],
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
        "start": iso(inc.start),
        "end": iso(inc.end),
        "timing": "exact"
        if inc.timed
        else "untimed: these logs carry no timestamps; the order of lines in each file stands in for time",
        "detector": inc.detector,
        "baseline_tokens_per_s": round1(inc.baseline) if ir.impact.unit == "generation tokens/s" else None,
        "min_tokens_per_s": round1(inc.minimum) if ir.impact.unit == "generation tokens/s" else None,
        "impact": _impact(ir.impact),
        "root_cause": rc,
        "trigger": _trigger(ir.trigger),
        "tell": _tell(ir.tell),
        "detection": _detection(ir.detection),
        "resolution": _resolution(ir.resolution),
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
                "first_seen": iso(h.first_seen),
                "hosts": h.hosts,
                "count": h.count,
                "why": "; ".join(h.why),
                "evidence": [_evidence(e) for e in h.evidence[:2]],
            }
            for i, h in enumerate(ir.hypotheses)
        ],
        "timeline": [_timeline_row(row) for row in ir.timeline],
        "clock_offsets": offsets,
    }


def changes_json(changes: pl.DataFrame | None, top: int = 15) -> list[dict]:
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


def series_json(sr: ser.Series) -> dict:
    """The binned series the plots draw: cluster total, per pod, KV usage, waiting (compact)."""
    if sr.empty:
        return {"unit": sr.unit, "measured": False, "bin_s": ser.BIN_S, "t": [], "total": [], "per_pod": {}}

    def arr(a):
        return None if a is None else [None if (x is None or np.isnan(x)) else round(float(x), 3) for x in a]

    return {
        "unit": sr.unit,
        "measured": True,
        "bin_s": ser.BIN_S,
        "t": [iso(x) for x in sr.t],
        "total": arr(sr.throughput),
        "per_pod": {k: arr(v) for k, v in sorted(sr.per_pod.items())},
        "kv_usage": arr(sr.kv_usage),
        "waiting": arr(sr.waiting),
    }


def report_json(report: Report) -> dict:
    """The whole document: inputs, the throughput series, every incident, and what was left out."""
    r = report.ingest
    return {
        "version": ANALYSIS_VERSION,
        "input": {
            "paths": report.inputs,
            "files": len(r.files),
            "lines": r.lines,
            "parsed": r.parsed + r.folded,
            "unparsed": r.unparsed,
            "folded": r.folded,
            "events": r.events.height,
            "templates": report.templates.height,
            "time_span": [iso(t) for t in r.time_span()],
            "skipped": [{"file": k.file, "reason": k.reason} for k in r.skipped],
            "traces": r.traces,
            "notes": [{"file": f.file, "note": n} for f in r.files for n in f.notes],
        },
        "throughput": series_json(report.series),
        "clock_offsets": report.clock_offsets,
        "incidents": [incident_json(i, report.clock_offsets) for i in report.incidents],
        "template_changes": changes_json(report.template_changes),
        "alerts": [],
        "unexplained_errors": report.unexplained_errors,
        "load_declines": report.load_declines,
        "quiet_faults": report.quiet_faults,
        "warnings": report.warnings + r.warnings,
    }


def _impact(m: Impact) -> dict:
    return {
        "start": iso(m.start),
        "end": iso(m.end),
        "duration_s": m.duration_s,
        "measured": m.measured,
        "baseline_per_s": m.baseline_per_s,
        "min_per_s": m.min_per_s,
        "drop_fraction": m.drop_fraction,
        "unit": m.unit,
        "http_5xx": m.http_5xx,
        "http_requests": m.http_requests,
        "http_from": m.http_from,
        "peak_waiting": m.peak_waiting,
        "partial_recoveries": [[iso(a), iso(b)] for a, b in m.partial_recoveries],
        "affected": list(m.affected),
        "detector": m.detector,
        "series_ended": iso(m.series_ended),
    }


def _rollout(r: Rollout) -> dict:
    return {
        "kind": "rollout",
        "ts": iso(r.ts),
        "text": r.text,
        "file": r.file,
        "line": r.line,
        "details": [{"text": d.text, "file": d.file, "line": d.line} for d in r.steps],
    }


def _trigger(t: Trigger | None) -> dict | None:
    if t is None:
        return None
    if isinstance(t, TrafficSurge):
        return {
            "kind": "traffic surge",
            "from_prompt_tokens_per_s": t.from_prompt_tokens_per_s,
            "to_prompt_tokens_per_s": t.to_prompt_tokens_per_s,
            "ratio": t.ratio,
        }
    return _rollout(t.rollout) | {"before_drop_s": t.before_drop_s}


def _tell(t: Tell | None) -> dict | None:
    return None if t is None else {"kind": "kv-full-empty-queue", "start": iso(t.start), "end": iso(t.end)}


def _detection(d: Detection) -> dict:
    return {"first_signal": iso(d.first_signal), "first_user_visible": iso(d.first_user_visible)}


def _resolution(r: Resolution) -> dict:
    """Each kind with the fields it has always had, in their order: readers key on them."""
    if r.rollout is not None:
        return _rollout(r.rollout) | {
            "recovered": iso(r.recovered),
            "after_recovery": r.after_recovery,
            "errors_end": iso(r.errors_end),
        }
    out = {"kind": r.kind, "ts": iso(r.ts), "recovered": iso(r.recovered)}
    if r.kind == "no recovery logged":
        out |= {"errors_end": iso(r.errors_end), "logs_end": iso(r.logs_end)}
    return out


def _timeline_row(row: TimelineRow) -> dict:
    return {
        "ts": iso(row.ts),
        "host": row.host,
        "pod": row.pod,
        "source": row.source,
        "template_id": row.template_id,
        "role": row.role,
        "summary": row.summary,
        "file": row.file,
        "line": row.line,
    }


def _evidence(e: Evidence) -> dict:
    return {"file": e.file, "line": e.line, "text": e.text}
