"""What one catalog entry is: a fault, change, symptom or impact, how to find it, what it means.

* kind `fault`: a hard fault that can start an incident (corrupt KV read, IB completion
  error, CUDA OOM, PLEG/NotReady);
* kind `change`: a state change that can trigger one (image/config rollout, traffic surge);
* kind `symptom`: what follows a fault (watchdog timeouts, engine death, probe failures,
  restarts). Symptoms are never the root cause when an earlier fault explains them;
* kind `impact`: user-visible damage (HTTP 5xx).

`layer` orders the GPU-serving causal chain: node/hardware (0) -> network (1) ->
memory and KV cache (2) -> collectives (3) -> engine (4) -> pods (5) -> requests (6).
A symptom at a higher layer is explained by a fault at a lower or equal layer before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, StrEnum

from forensics.schema import Category, Kind


class Layer(IntEnum):
    """The GPU-serving causal chain, lowest first: a fault explains what happens above it."""

    NODE = 0
    NETWORK = 1
    MEMORY_KV = 2
    COLLECTIVES = 3
    ENGINE = 4
    PODS = 5
    REQUESTS = 6


class Trait(StrEnum):
    """What the ranking and the alerts must know of a fault beyond its category and layer."""

    OOM_KILL = "oom-kill"
    """Kills a process from outside for memory: its peers' lost sockets are its echo."""
    AS_THE_APP_SAW_IT = "as-the-app-saw-it"
    """A fault as a process saw it (a CUDA call or a transfer failed), not what failed: the
    node's own report of the same failure names it."""
    SOFTWARE_PRONE = "software-prone"
    """A GPU fault a kernel can raise as well as the hardware: on several GPUs at once, software."""
    AT_START = "at-start"
    """Hit by a pod before it serves (image, volume, weights, GPU memory at engine start): what a
    rollout's new version fails on, so the rollout before it is its trigger, not a rival."""
    KV_TRANSFER = "kv-transfer"
    """Disaggregated prefill/decode: where one is seen, the alerts watch NIXL's counters."""
    FD_LIMIT = "fd-limit"
    """A process out of its open-file limit: where one is seen, the alerts watch open files."""
    NO_ACTION = "no-action"
    """A notice its vendor says needs no action (an Xid in NVIDIA's IGNORE bucket): matched so that
    no generic entry takes it for a fault, then left out of the signals like a line no entry
    matches, so that it neither starts an incident nor explains one."""
    UNCATALOGUED = "uncatalogued"
    """Read from a traceback's frames, not the catalog (`catalog.frames`): ranked below any
    catalogued cause, whose known text is the stronger evidence."""


@dataclass(frozen=True, kw_only=True)
class Signature:
    """One fault, change, symptom or impact the catalog knows: how to find it and what it means."""

    id: str
    """Stable: `<category>.<words of the label>`. What code and tests compare; the label may be reworded."""
    category: Category
    kind: Kind
    layer: Layer
    pattern: str
    """Regex searched in the message's first line or, for `in_traceback`, in its last exception line."""
    label: str
    """How the report names it."""
    in_traceback: bool = False
    action: str | None = None
    """The postmortem's action item when this is the root cause, where it differs from its
    category's (`forensics.diagnosis.advice.ACTIONS`)."""
    traits: frozenset[Trait] = frozenset()
    source: str = ""
    """Where its text comes from: the file of the project that logs it, or the vendor document
    that lists it. Every catalogued entry names one (`tests/.../test_catalog.py`); an
    uncatalogued fault read from frames says so."""
