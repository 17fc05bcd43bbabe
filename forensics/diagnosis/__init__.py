"""Diagnosis: the tables and templates -> incidents, their root cause, symptoms and impact.

`series` builds the throughput and state series and finds incidents in them; `signatures` is
the catalog of what a log message means; `skew` corrects the nodes' clocks against each other;
`collectives` reads who stopped in a hung collective; `rootcause` ranks hypotheses; `analysis`
runs them in order and makes the `Report`.
"""

from forensics.diagnosis.analysis import ANALYSIS_VERSION, IncidentReport, Report, analyze

__all__ = ["ANALYSIS_VERSION", "IncidentReport", "Report", "analyze"]
