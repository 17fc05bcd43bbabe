"""The names every stage and every reader of `analysis.json` may spell: tables and vocabularies.

The events and metrics tables are declared in `parsers.schema`, the lowest layer, because the
parsers write them and import nothing above themselves; they are re-exported here so that users
and the analysis read one module. Added here: the words the diagnosis speaks (a signal's kind
and category, a hypothesis' role, a verdict's status, an incident's detector) and the columns
of the tables that exist only after ingest (templates, signals).
"""

from __future__ import annotations

from typing import Final, Literal

from parsers.schema import *  # noqa: F403
from parsers.schema import __all__ as _TABLES

# --- the analysis' vocabularies ---------------------------------------------
Category = Literal[
    "kv-cache",
    "network",
    "collective-timeout",
    "gpu-memory",
    "gpu-fault",
    "node",
    "pod-lifecycle",
    "engine",
    "capacity",
    "request-errors",
    "config-change",
    "other",
]
"""What failed, as the report groups causes. `other` is what no catalog entry names."""
CATEGORIES: Final = Category.__args__

Kind = Literal["fault", "change", "symptom", "impact"]
"""fault: can start an incident; change: can trigger one (a rollout, a surge); symptom: what
follows a fault and is never its cause when an earlier fault explains it; impact: what users saw."""
KINDS: Final = Kind.__args__

Role = Literal["root_cause", "symptom", "impact", "unrelated"]
"""A hypothesis' place in one incident, given by `forensics.diagnose.rootcause`."""
ROLES: Final = Role.__args__

Status = Literal["supported", "inconclusive"]
"""A verdict's standing: `inconclusive` when the evidence does not decide between causes."""
STATUSES: Final = Status.__args__

Detector = Literal[
    "throughput-drop", "replica-drop", "replica-slowdown", "saturation", "error-burst", "startup-failure"
]
"""How an incident was found: in the served throughput, in one replica's, in a saturated KV
cache, or, with no throughput to read, in a burst of errors, or in a start-up that failed
before the service ever served (`forensics.diagnosis.startup`)."""
DETECTORS: Final = Detector.__args__

# --- tables made after ingest -----------------------------------------------
TEMPLATE_ID: Final = "template_id"
"""A mined template's id: stable across runs for the same (source, template text)."""
TEMPLATE: Final = "template"
"""The template text, variables as `<*>` (or a named mask such as `<IP>`)."""

__all__ = [
    *_TABLES,
    "CATEGORIES",
    "Category",
    "DETECTORS",
    "Detector",
    "KINDS",
    "Kind",
    "ROLES",
    "Role",
    "STATUSES",
    "Status",
    "TEMPLATE",
    "TEMPLATE_ID",
]
