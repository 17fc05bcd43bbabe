"""Clock alignment: per-node offsets from events that must be simultaneous.

Pods and kubelets stamp lines with their node's clock; Kubernetes events carry the API
server's. A few seconds of skew reorder a cascade, so before ordering across hosts the
offsets are estimated from pairs that describe the same instant:

* a kubelet journal line and the Kubernetes event it produced (probe failure ->
  `Unhealthy`, kill -> `Killing`) for the same pod: offset(node) = journal - event;
* the same collective (op, sequence number) timing out on ranks of different pods:
  each pod's offset from the group's median (watchdogs fire together).

Offsets are medians over pairs, so one odd pair does not move them.
"""

from __future__ import annotations

import re
from statistics import median

import polars as pl

from forensics import schema as s

MAX_PAIR_S = 120.0
_POD_IN_KUBELET = re.compile(r'pod="(?:[^"/]+/)?([^"]+)"')
_KUBELET_TO_REASON = (("Probe failed", "Unhealthy"), ("Killing container", "Killing"))


def pod_nodes(events: pl.DataFrame) -> dict[str, str]:
    """Pod -> node, from Kubernetes events (source host, `Successfully assigned ... to node`) and kubelet lines."""
    out: dict[str, str] = {}
    ev = events.filter(pl.col(s.SOURCE) == "k8s-event")
    for pod, host, msg in ev.select(s.POD, s.HOST, s.MESSAGE).iter_rows():
        m = re.search(r"Successfully assigned [^/\s]+/(\S+) to (\S+)", msg or "")
        if m:
            out[m.group(1)] = m.group(2)
        elif pod and host and pod not in out:
            out[pod] = host
    # Each pod a kubelet line names, with the node of the first such line (a journal is
    # millions of lines: one vectorised pass, not a regex call each in Python).
    kl = events.filter(pl.col(s.SOURCE) == "kubelet").select(
        pl.col(s.MESSAGE).str.extract(_POD_IN_KUBELET.pattern, 1).alias("_pod"), pl.col(s.HOST)
    )
    named = kl.filter(pl.col("_pod").is_not_null() & (pl.col(s.HOST).fill_null("") != ""))
    for pod, host in named.unique("_pod", keep="first", maintain_order=True).iter_rows():
        out.setdefault(pod, host)
    return out


def estimate(events: pl.DataFrame, pod_node: dict[str, str]) -> dict[str, float]:
    """Offset in seconds of each node's clock from the API server's (positive = node ahead)."""
    deltas: dict[str, list[float]] = {}
    ev = events.filter((pl.col(s.SOURCE) == "k8s-event") & pl.col(s.TS).is_not_null() & pl.col(s.POD).is_not_null())
    by_key: dict[tuple[str, str], list] = {}
    for pod, reason, ts in ev.select(s.POD, s.K8S_REASON, s.TS).iter_rows():
        by_key.setdefault((pod, reason), []).append(ts)
    # Only the kubelet lines that name a pairable action: a node's journal is mostly probes
    # that passed and sync loops, and a look at each in Python cost ~2.3 µs a line.
    pairable = pl.col(s.MESSAGE).str.contains("|".join(re.escape(needle) for needle, _ in _KUBELET_TO_REASON))
    kl = events.filter((pl.col(s.SOURCE) == "kubelet") & pl.col(s.TS).is_not_null() & pairable)
    for host, msg, ts in kl.select(s.HOST, s.MESSAGE, s.TS).iter_rows():
        m = _POD_IN_KUBELET.search(msg or "")
        if not m or not host:
            continue
        for needle, reason in _KUBELET_TO_REASON:
            if needle in msg:
                cands = by_key.get((m.group(1), reason), [])
                near = [(ts - c).total_seconds() for c in cands]
                near = [d for d in near if abs(d) < MAX_PAIR_S]
                if near:
                    deltas.setdefault(host, []).append(min(near, key=abs))
    offsets = {node: round(median(v), 3) for node, v in deltas.items()}
    # Watchdog timeouts of the same collective on several pods: each pod's first report against
    # the middle one of the collective's pods (the upper middle for an even count), in one pass
    # over all collectives (a flight-recorder dump or a long run names thousands, and a frame
    # per collective cost ~0.5 ms each).
    wd = events.filter(pl.col(s.COLL_SEQ).is_not_null() & pl.col(s.TS).is_not_null() & pl.col(s.POD).is_not_null())
    collective = (s.COLL_OP, s.COLL_SEQ)
    firsts = (
        wd.group_by(*collective, s.POD)
        .agg(pl.col(s.TS).min())
        .with_columns(
            pl.len().over(collective).alias("_pods"),
            pl.col(s.TS).sort().get(pl.len() // 2).over(collective).alias("_mid"),
        )
        .filter(pl.col("_pods") >= 2)
    )
    for pod, ts, mid in firsts.select(s.POD, s.TS, "_mid").iter_rows():
        node = pod_node.get(pod)
        if node and node not in offsets:
            deltas.setdefault(f"_wd:{node}", []).append((ts - mid).total_seconds())
    for key, v in deltas.items():
        if key.startswith("_wd:") and key[4:] not in offsets:
            offsets[key[4:]] = round(median(v), 3)
    return dict(sorted(offsets.items()))


def apply(events: pl.DataFrame, offsets: dict[str, float], pod_node: dict[str, str]) -> pl.DataFrame:
    """Events with `ts` corrected by their node's offset: a pod's by its node's, a node's own lines
    (kubelet, kernel, syslog, nvidia-smi: `schema.NODE_SOURCES`) by their host's."""
    if not offsets:
        return events
    node = pl.coalesce(
        pl.when(pl.col(s.SOURCE) != "k8s-event").then(
            pl.col(s.POD).replace_strict(pod_node, default=None, return_dtype=pl.String)
        ),
        pl.when(pl.col(s.SOURCE).is_in(s.NODE_SOURCES)).then(pl.col(s.HOST)),
    )
    off = node.replace_strict(offsets, default=0.0, return_dtype=pl.Float64).fill_null(0.0)
    return events.with_columns((pl.col(s.TS) - pl.duration(microseconds=(off * 1e6).cast(pl.Int64))).alias(s.TS))
