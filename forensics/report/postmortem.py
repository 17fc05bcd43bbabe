"""Write every artifact of an analysis run: analysis.json, Parquet, plots, postmortem, alert rules.

The order matters only in one way: `analysis.json` is complete (alerts included) before
anything renders from it, so the report shows exactly what the JSON says.
"""

from __future__ import annotations

import json
from pathlib import Path

from forensics import mining
from forensics.diagnosis.analysis import Report
from forensics.report import alerts, plots
from forensics.report import render as rpt

ALERT_FORMATS = ("prometheusrule", "prometheus")


def write_all(
    result: Report,
    out: Path,
    *,
    fmt: str = "md",
    template: Path | None = None,
    alerts_format: str = "prometheusrule",
    command: str | None = None,
    replay: dict | None = None,
) -> dict[str, Path]:
    """Write the outputs of `result` under `out`; returns name -> path of what was written."""
    out.mkdir(parents=True, exist_ok=True)
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
    if replay is not None:
        analysis["replay"] = replay
    paths: dict[str, Path] = {"analysis": out / "analysis.json"}
    paths["analysis"].write_text(json.dumps(analysis, indent=2, ensure_ascii=False) + "\n")
    if result.ingest.dataset is None:
        mining.write_events(result.events, None, out / "events.parquet")
        paths["events"] = out / "events.parquet"
    else:
        # A sharded run already wrote the rows (hour=/source= partitions + _templates.parquet).
        paths["events"] = Path(result.ingest.dataset)
    result.templates.write_parquet(out / "templates.parquet", statistics=False)
    paths["templates"] = out / "templates.parquet"
    for p in plots.throughput(analysis, out) + plots.kv_usage(analysis, out):
        paths[p.name] = p
    if rules:
        rules_name = "alerts.yaml"
        text = alerts.prometheus_rule(rules) if alerts_format == "prometheusrule" else alerts.plain_rules(rules)
        (out / rules_name).write_text(text)
        paths["alerts"] = out / rules_name
        # promtool reads plain rule files; the test fixture points at one next to it.
        (out / "alerts.rules.yaml").write_text(alerts.plain_rules(rules))
        (out / "alerts_test.yaml").write_text(alerts.promtool_test("alerts.rules.yaml", analysis))
        paths["alerts_rules"], paths["alerts_test"] = out / "alerts.rules.yaml", out / "alerts_test.yaml"
    md = rpt.render(
        analysis, fmt="md", template=template if fmt == "md" else None, command=command, replay=replay, plot_dir=out
    )
    paths["postmortem"] = out / "postmortem.md"
    paths["postmortem"].write_text(md)
    if fmt == "html":
        html = rpt.render(analysis, fmt="html", template=template, command=command, replay=replay, plot_dir=out)
        paths["html"] = out / "postmortem.html"
        paths["html"].write_text(html)
    return paths
