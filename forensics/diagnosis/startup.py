"""A service that never started: an incident found from errors alone (no throughput series)
whose failing process logged its start-up and never served is a `startup-failure`, not a burst
of errors in a serving system. The first fault in that start-up sequence is its cause (the
ranking's precedence), and a warning earlier in the sequence that explains it is cited.

Read by position within the failing file, not by time: the excerpts pasted into tickets often
carry no timestamps, and "before" is "above" there."""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl

from forensics import schema as s
from forensics.diagnosis.records import Evidence
from forensics.diagnosis.rootcause import SERVED, STARTING, Hypothesis

STARTED = re.compile(
    rf"{STARTING.pattern}|Automatically detected platform|Starting vLLM API server|Waiting for init message"
    r"|init engine \(profile|Started server process|server_args=ServerArgs|Init torch distributed"
    r"|Load weight begin|Initializing distributed|world_size=\d+ rank=\d+|Loading model"
)
"""What a serving process logs while it comes up (vLLM, SGLang, TensorRT-LLM, torch.distributed)."""
NEVER_SERVED = re.compile(SERVED)
"""What it logs once it serves (`rootcause.SERVED`: not the API server's announcement, which V0
prints before its engine starts). Its absence above the failure is the tell."""
LOOPBACK = re.compile(
    r"Using the loopback address as fallback|Failed to get the IP address, using 0\.0\.0\.0 by default"
    r"|set by the environment variable VLLM_HOST_IP"
)
"""vLLM's `get_ip()` finding no routable interface: the ranks then advertise an address the
others cannot reach, and the distributed init that follows fails or hangs."""


@dataclass(frozen=True, kw_only=True)
class StartupFailure:
    """The start-up a failure interrupted: where it began, and a warning above it that explains it."""

    began: Evidence
    warning: Evidence | None


def never_served(events: pl.DataFrame, top: Hypothesis | None, hyps: list[Hypothesis]) -> StartupFailure | None:
    """The start-up that the incident's first fault (or, with no fault, its first symptom)
    interrupted, when its file shows a start-up above it and no sign of serving."""
    first = top or next((h for h in hyps if h.role in ("root_cause", "symptom") and h.evidence), None)
    if first is None or not first.evidence:
        return None
    at = first.evidence[0]
    above = events.filter((pl.col(s.FILE) == at.file) & (pl.col(s.LINE) < at.line)).sort(s.LINE)
    messages = above[s.MESSAGE].fill_null("").to_list()
    began = next((i for i, m in enumerate(messages) if STARTED.search(m)), None)
    if began is None or any(NEVER_SERVED.search(m) for m in messages):
        return None
    warned = next((i for i, m in enumerate(messages) if LOOPBACK.search(m)), None)
    quote = lambda i: Evidence.quote(at.file, int(above[s.LINE][i]), messages[i].split("\n", 1)[0])  # noqa: E731
    return StartupFailure(began=quote(began), warning=quote(warned) if warned is not None else None)


def explain(failure: StartupFailure, top: Hypothesis | None) -> str | None:
    """What the verdict's reasons say of a start-up warning that explains its network fault."""
    if failure.warning is None or top is None or top.category not in ("network", "collective-timeout"):
        return None
    w = failure.warning
    said = re.split(r"\.(?=[A-Z ])", w.text.split("Warning: ", 1)[-1])[0]  # (its first sentence, no source path)
    return (
        f"vLLM warned before it that it found no routable address for this host "
        f"({w.file}:{w.line}: {said[:120]}): the ranks advertised an address the others cannot reach"
    )


def missing(failure: StartupFailure) -> str:
    """What to collect when a start-up failed and the log does not say why."""
    return (
        f"The service never started: the process that began its start-up at {failure.began.file}:"
        f"{failure.began.line} failed before it served, and its first error is not in these logs. Collect the "
        "whole start-up of the engine and its worker processes (`kubectl logs --previous` of the container, every "
        "rank's log from its first line), where the first traceback names the cause"
    )
