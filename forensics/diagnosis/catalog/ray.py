"""Host memory as Ray reports it, and Ray's nodes lost. Before the GPU-memory group: Ray's
`OutOfMemoryError` is the node's RAM, not the GPU's."""

from __future__ import annotations

from forensics.diagnosis.catalog.entry import Layer, Signature, Trait
from forensics.diagnosis.catalog.labels import RAY_OOM

ENTRIES: tuple[Signature, ...] = (
    # --- host memory as Ray reports it (before the GPU-memory group: Ray's `OutOfMemoryError`
    # is the node's RAM, not the GPU's)
    Signature(
        id="node.host-memory-exhausted-ray",
        source="Ray python/ray/exceptions.py (OutOfMemoryError) and the raylet's memory monitor (src/ray/raylet/node_manager.cc)",
        category="node",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"ray\.exceptions\.OutOfMemoryError|killed due to the node running low on memory"
        r"|killed due to memory pressure \(OOM\)",
        label=RAY_OOM,
        traits=frozenset({Trait.OOM_KILL}),
    ),
    Signature(
        id="node.ray-raylet-node-died",
        source="Ray src/ray/raylet/main.cc and the worker's 'The raylet exited unexpectedly' (python/ray/_private/worker.py)",
        category="node",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"Raylet is terminated|The raylet exited unexpectedly",
        label="Ray's raylet on the node died (OOM killer, a crash or a signal)",
    ),
    # The head's view of a lost worker node: it says which (`address: 10.0.0.5`), not what
    # happened there, and it is logged on the head, so the action does not name the host.
    Signature(
        id="node.ray-worker-node-lost",
        source="Ray GCS src/ray/gcs/gcs_server/gcs_health_check_manager.cc ('marked dead because the detector has missed too many heartbeats')",
        category="node",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"has been marked dead because the detector has missed too many heartbeats",
        label="a Ray worker node was lost: the head stopped hearing its raylet (a crash, the OOM killer, preemption or "
        "the network)",
        action="Find why the raylet of the node the message names (its address) stopped: its kernel log (the OOM "
        "killer), its kubelet (an eviction, a preemption, a NotReady node) and the network to the head; an engine "
        "whose tensor- or pipeline-parallel workers span that node stops with it.",
    ),
)
