"""Diagnosis: the tables and templates -> incidents, their root cause, symptoms and impact.

`series` builds the throughput and state series and finds incidents in them; `signatures` is
the catalog of what a log message means; `skew` corrects the nodes' clocks against each other;
`collectives` reads who stopped in a hung collective; `signals` gives events their meaning;
`rootcause` ranks hypotheses; `narrative` tells each incident; `quiet` lists what a run
without an incident still logged; `advice` says what to do; `analysis` runs them in order and
makes the `Report`, which `analysis_json` writes.
"""

from forensics.diagnosis.analysis import Report, analyze
from forensics.diagnosis.analysis_json import ANALYSIS_VERSION
from forensics.diagnosis.narrative import IncidentReport

__all__ = ["ANALYSIS_VERSION", "IncidentReport", "Report", "analyze"]
