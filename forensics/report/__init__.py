"""The postmortem: what the analysis computed, rendered; it decides nothing of its own.

`postmortem.write_all` writes every output (Markdown or HTML from the Jinja templates, plots,
analysis.json, Parquet, alert rules); `render` fills the templates, `plots` draws, `alerts`
turns the causes found into Prometheus rules and their promtool tests.
"""

from forensics.report.postmortem import ALERT_FORMATS, write_all

__all__ = ["ALERT_FORMATS", "write_all"]
