"""The fault catalog: one entry per fault, change, symptom or impact the diagnosis knows.

Each entry (`entry.Signature`) carries a stable id, its pattern, category, kind, causal layer,
traits and, where it differs from its category's, its action item; `advice` has the
category's. Adding a fault is one entry in the file of its kind and one test line.

The files follow the match priority, and `SIGNATURES` concatenates them in this order, which
is the invariant: a message takes the first entry whose pattern matches, so a specific
fault (a CUDA OOM, an Xid by number, an image's CUDA too new) is listed before the generic
one whose words it also contains (`CUDA error`), and faults before the symptoms they cause.
"""

from __future__ import annotations

from forensics.diagnosis.catalog import changes, frames, gpu, kv_cache, network, node, process, ray, start, symptoms
from forensics.diagnosis.catalog.entry import Layer, Signature, Trait

SIGNATURES: tuple[Signature, ...] = (
    *kv_cache.ENTRIES,
    *ray.ENTRIES,
    *gpu.ENTRIES,
    *process.ENTRIES,
    *network.ENTRIES,
    *node.ENTRIES,
    *start.ENTRIES,
    *changes.ENTRIES,
    *symptoms.ENTRIES,
)
"""Checked in order; the first match wins. Fault patterns come first so that an engine
traceback ending in `torch.OutOfMemoryError` counts as the OOM, not as 'engine died'."""

BY_ID: dict[str, Signature] = {sig.id: sig for sig in SIGNATURES}
assert len(BY_ID) == len(SIGNATURES), "two catalog entries share an id"


def _traits_by_label() -> dict[str, frozenset[Trait]]:
    out: dict[str, frozenset[Trait]] = {}
    for sig in SIGNATURES:
        out[sig.label] = out.get(sig.label, frozenset()) | sig.traits
    return out


_TRAITS = _traits_by_label()


def traits_of(label: str) -> frozenset[Trait]:
    """The traits of the catalog entries a hypothesis or a report row is labelled by (none for a
    label the catalog does not give: a metric-derived cause, HTTP errors). Within one run a label
    is the catalog's own text, so rewording an entry changes nothing this answers."""
    if frames.is_uncatalogued(label):
        return frozenset({Trait.UNCATALOGUED})
    return _TRAITS.get(label, frozenset())


__all__ = ["BY_ID", "SIGNATURES", "Layer", "Signature", "Trait", "traits_of"]
