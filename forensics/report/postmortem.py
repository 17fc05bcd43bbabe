"""Write every artifact of an analysis run: analysis.json, Parquet, plots, postmortem, alert rules.

The order matters only in one way: `analysis.json` is complete (alerts included) before
anything renders from it, so the report shows exactly what the JSON says.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from datetime import datetime
from pathlib import Path

from forensics import mining
from forensics.diagnosis.analysis import Report
from forensics.errors import ForensicsError
from forensics.report import alerts, plots
from forensics.report import backtest as bt
from forensics.report import render as rpt

ALERT_FORMATS = ("prometheusrule", "prometheus")


ARTIFACTS = frozenset(
    {
        "analysis.json",
        "events.parquet",
        "templates.parquet",
        "throughput.png",
        "throughput.svg",
        "kv_usage.png",
        "alerts.yaml",
        "alerts.rules.yaml",
        "alerts_test.yaml",
        "postmortem.md",
        "postmortem.html",
        "replay.json",
        "alerts_loki.yaml",
        "prometheus",
    }
)
"""Every file a run may write into `--out`: what a later run removes when it does not write it
again (a run that finds no incident writes no alert rules; the last run's must not stay beside
its report)."""


def write_all(
    result: Report,
    out: Path,
    *,
    fmt: str = "md",
    template: Path | None = None,
    alerts_format: str = "prometheusrule",
    command: str | None = None,
    replay: dict | None = None,
    backtest: bool = False,
) -> dict[str, Path]:
    """Write the outputs of `result` under `out`; returns name -> path of what was written.

    All or nothing: every artifact is written to a temporary directory beside `out` and moved
    into place only when all of them are there, replacing the last run's (`ARTIFACTS`). A full
    disk, an error or Ctrl-C part way leaves the previous report as it was, and the error says so.

    `backtest` evaluates the alert rules on the incident's own series with a local Prometheus
    (`forensics.report.backtest`); `alerts_test.yaml` is then built from those series.
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.writing-", dir=out.parent))
    try:
        written = _write(result, tmp, fmt, template, alerts_format, command, replay, backtest)
        _publish(tmp, out)
    except OSError as e:
        raise ForensicsError(
            f"could not write the report to {out}: {e.strerror or e}",
            hint="free space or pick another --out; the previous report there, if any, is left as it was",
        ) from e
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {name: (out / p.relative_to(tmp) if p.is_relative_to(tmp) else p) for name, p in written.items()}


def _publish(tmp: Path, out: Path) -> None:
    """Move the new artifacts from `tmp` into `out`, removing the last run's that were not written again."""
    out.mkdir(parents=True, exist_ok=True)
    new = {p.name for p in tmp.iterdir()}
    for old in out.iterdir():
        if old.name in ARTIFACTS and old.name not in new:
            if old.is_dir() and not old.is_symlink():
                shutil.rmtree(old)
            elif old.is_file():
                old.unlink()
    for p in sorted(tmp.iterdir()):
        target = out / p.name
        if p.is_dir() and target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)  # (os.replace cannot put a directory over a non-empty one)
        os.replace(p, target)


def _write(result, tmp: Path, fmt, template, alerts_format, command, replay, backtest) -> dict[str, Path]:
    analysis = result.to_json()
    rules = alerts.rules_for(analysis) if analysis["incidents"] else []
    analysis["alerts"] = [
        {
            "alert": r.alert,
            "severity": r.severity,
            "for": r.for_,
            "summary": r.summary,
            "expr": r.expr,
            "finding": r.finding,
        }
        for r in rules
    ]
    tested = _backtest(result, analysis, rules) if backtest and rules else None
    if replay is not None:
        analysis["replay"] = replay
    analysis = finite(analysis)
    paths: dict[str, Path] = {"analysis": tmp / "analysis.json"}
    paths["analysis"].write_text(json.dumps(analysis, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    if result.ingest.dataset is None:
        mining.write_events(result.events, None, tmp / "events.parquet")
        paths["events"] = tmp / "events.parquet"
    else:
        # A sharded run already wrote the rows (hour=/source= partitions + _templates.parquet).
        paths["events"] = Path(result.ingest.dataset)
    result.templates.write_parquet(tmp / "templates.parquet", statistics=False)
    paths["templates"] = tmp / "templates.parquet"
    for p in plots.throughput(analysis, tmp) + plots.kv_usage(analysis, tmp):
        paths[p.name] = p
    if rules:
        rules_name = "alerts.yaml"
        text = alerts.prometheus_rule(rules) if alerts_format == "prometheusrule" else alerts.plain_rules(rules)
        (tmp / rules_name).write_text(text)
        paths["alerts"] = tmp / rules_name
        # promtool reads plain rule files; the test fixture points at one next to it.
        (tmp / "alerts.rules.yaml").write_text(alerts.plain_rules(rules))
        if tested is not None:
            (tmp / "alerts_test.yaml").write_text(tested)
        else:
            (tmp / "alerts_test.yaml").write_text(alerts.promtool_test("alerts.rules.yaml", analysis))
        paths["alerts_rules"], paths["alerts_test"] = tmp / "alerts.rules.yaml", tmp / "alerts_test.yaml"
        loki = alerts.loki_rules(analysis)
        if loki is not None:
            (tmp / "alerts_loki.yaml").write_text(loki)
            paths["alerts_loki"] = tmp / "alerts_loki.yaml"
    if result.pulled is not None and result.pulled.documents:
        paths["prometheus"] = result.pulled.write(tmp)
    md = rpt.render(
        analysis, fmt="md", template=template if fmt == "md" else None, command=command, replay=replay, plot_dir=tmp
    )
    paths["postmortem"] = tmp / "postmortem.md"
    paths["postmortem"].write_text(md)
    if fmt == "html":
        html = rpt.render(analysis, fmt="html", template=template, command=command, replay=replay, plot_dir=tmp)
        paths["html"] = tmp / "postmortem.html"
        paths["html"].write_text(html)
    if replay is not None:
        paths["replay"] = tmp / "replay.json"
        paths["replay"].write_text(json.dumps(finite(replay), indent=2, allow_nan=False) + "\n")
    return paths


def _backtest(result, analysis: dict, rules: list) -> str | None:
    """Run the backtest and put its verdicts in `analysis["backtest"]`; returns the
    `alerts_test.yaml` built from the incident's series when it ran (and whether promtool
    passes it, in the analysis), else None (the reason is in the analysis)."""
    inc = analysis["incidents"][0]
    seen = (inc.get("detection") or {}).get("first_user_visible")
    outage = datetime.fromisoformat(inc["start"]) if inc.get("start") else None
    try:
        pulled = result.pulled.series() if result.pulled is not None else None
        verdicts, data, why = bt.backtest(
            rules, result.ingest.metrics, outage, datetime.fromisoformat(seen) if seen else None, pulled
        )
    except bt.BacktestError as e:
        verdicts, data, why = [], None, str(e)
    analysis["backtest"] = {
        "ran": data is not None,
        "why_not": why,
        "outage": inc.get("start"),
        "first_user_visible": seen,
        "interval_s": data.interval.total_seconds() if data is not None else None,
        "series": sorted(data.names) if data is not None else [],
        "rules": [v.as_dict() for v in verdicts],
    }
    if data is None:
        return None
    test = bt.promtool_test("alerts.rules.yaml", rules, data, verdicts)
    analysis["backtest"]["promtool"] = bt.check(alerts.plain_rules(rules), test)
    return test


def finite(doc):
    """`doc` with every NaN or infinite float as None: strict JSON readers (and `jq`) refuse
    `NaN`/`Infinity`, which Python writes by default, and a log can say `nan tokens/s`."""
    if isinstance(doc, float):
        return doc if math.isfinite(doc) else None
    if isinstance(doc, dict):
        return {k: finite(v) for k, v in doc.items()}
    if isinstance(doc, (list, tuple)):
        return [finite(v) for v in doc]
    return doc
