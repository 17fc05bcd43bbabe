"""State changes that can trigger an incident: rollouts, rescales, config updates."""

from __future__ import annotations

from forensics.diagnosis.catalog.entry import Layer, Signature

ENTRIES: tuple[Signature, ...] = (
    # --- changes
    Signature(
        id="config-change.rollout-config-change",
        source="Kubernetes deployment controller and kubelet events (ScalingReplicaSet, Pulling, SuccessfulRescale)",
        category="config-change",
        kind="change",
        layer=Layer.PODS,
        pattern=r"^ScalingReplicaSet:|^Pulling: Pulling image|^SuccessfulRescale|rolled out|configmap .* (?:updated|changed)",
        label="rollout / config change",
    ),
)
