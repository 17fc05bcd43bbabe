"""Clock alignment: node offsets from pairs of lines that describe one instant."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl

from forensics import schema as s
from forensics.diagnosis import skew

T0 = datetime(2025, 3, 2, 8, 0, tzinfo=UTC)


def _events(rows: list[dict]) -> pl.DataFrame:
    """An events table holding `rows` (the columns they name; the others null)."""
    columns = sorted({c for row in rows for c in row})
    frame = pl.DataFrame(
        [{c: row.get(c) for c in columns} for row in rows], schema={c: s.EVENT_DTYPES[c] for c in columns}
    )
    return s.conform(frame, s.EVENT_DTYPES)


def _timeout(pod: str, seq: int, after_s: float, op: str | None = "ALLREDUCE") -> dict:
    return {
        s.TS: T0 + timedelta(seconds=after_s),
        s.SOURCE: "torch",
        s.POD: pod,
        s.COLL_OP: op,
        s.COLL_SEQ: seq,
        s.MESSAGE: f"[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, ...)",
    }


def test_a_node_whose_watchdogs_fire_late_is_ahead_by_the_median_lag():
    rows = [_timeout(p, 20518, 0.0) for p in ("pod-a", "pod-b")] + [_timeout("pod-c", 20518, 5.0)]
    rows += [_timeout("pod-a", 20519, 60.0), _timeout("pod-b", 20519, 60.0), _timeout("pod-c", 20519, 66.0)]
    rows += [_timeout("pod-c", 20519, 90.0)]  # a later report of the same collective: its first counts
    rows += [_timeout("pod-c", 77, 30.0)]  # a collective on one pod alone pairs with nothing
    nodes = {"pod-a": "node-a", "pod-b": "node-b", "pod-c": "node-c"}
    assert skew.estimate(_events(rows), nodes) == {"node-a": 0.0, "node-b": 0.0, "node-c": 5.5}


def test_collectives_are_told_apart_by_op_and_seq_even_without_an_op():
    # Two pods: each one's lag from the upper middle of the two (the later), median over collectives.
    rows = [_timeout("pod-a", 7, 0.0, op=None), _timeout("pod-b", 7, 4.0, op=None)]
    rows += [_timeout("pod-a", 7, 100.0, op="BROADCAST"), _timeout("pod-b", 7, 102.0, op="BROADCAST")]
    nodes = {"pod-a": "node-a", "pod-b": "node-b"}
    assert skew.estimate(_events(rows), nodes) == {"node-a": -3.0, "node-b": 0.0}


def test_a_kubelet_probe_failure_pairs_with_its_unhealthy_event():
    rows = [
        {
            s.TS: T0 + timedelta(seconds=3.0),
            s.SOURCE: "kubelet",
            s.HOST: "node-a",
            s.MESSAGE: '"Probe failed" probeType="Liveness" pod="default/pod-a" podUID="u" containerName="vllm"',
        },
        {s.TS: T0 + timedelta(seconds=1.0), s.SOURCE: "k8s-event", s.POD: "pod-a", s.K8S_REASON: "Unhealthy"},
        {
            s.TS: T0 + timedelta(seconds=9.0),
            s.SOURCE: "kubelet",
            s.HOST: "node-a",
            s.MESSAGE: '"SyncLoop" pod="default/pod-a"',
        },
    ]
    assert skew.estimate(_events(rows), {"pod-a": "node-a"}) == {"node-a": 2.0}


def test_a_pod_is_on_the_node_its_events_name_else_the_first_kubelet_that_names_it():
    def kubelet(host: str | None, message: str) -> dict:
        return {s.TS: T0, s.SOURCE: "kubelet", s.HOST: host, s.MESSAGE: message}

    rows = [
        {s.SOURCE: "k8s-event", s.POD: "pod-a", s.MESSAGE: "Successfully assigned default/pod-a to node-1"},
        kubelet("node-9", '"SyncLoop (probe)" probe="readiness" status="ready" pod="default/pod-a"'),
        kubelet(None, '"SyncLoop (probe)" probe="readiness" status="ready" pod="default/pod-b"'),
        kubelet("node-2", '"SyncLoop (probe)" probe="readiness" status="ready" pod="pod-b"'),
        kubelet("node-3", '"Probe failed" probeType="Liveness" pod="default/pod-b"'),
        kubelet("node-4", '"Killing container with a grace period" pod="kube-system/pod-c" podUID="u"'),
        kubelet("node-5", "Started kubelet"),
    ]
    assert skew.pod_nodes(_events(rows)) == {"pod-a": "node-1", "pod-b": "node-2", "pod-c": "node-4"}


def test_a_nodes_own_lines_and_its_pods_move_with_its_clock_and_the_api_servers_do_not():
    # node-a runs 2 s ahead: its kubelet's and kernel's lines (an Xid placed from its dmesg is
    # stamped by the same clock) and its pod's move back 2 s; the API server's events and
    # another node's kernel lines stay.
    def row(source: str, host: str | None = None, pod: str | None = None) -> dict:
        return {s.TS: T0, s.SOURCE: source, s.HOST: host, s.POD: pod, s.MESSAGE: "m"}

    rows = [
        row("kubelet", host="node-a"),
        row("kernel", host="node-a"),
        row("syslog", host="node-a"),
        row("vllm", pod="pod-a"),
        row("k8s-event", host="node-a", pod="pod-a"),
        row("kernel", host="node-b"),
    ]
    moved = skew.apply(_events(rows), {"node-a": 2.0}, {"pod-a": "node-a"})
    back = T0 - timedelta(seconds=2)
    assert moved[s.TS].to_list() == [back, back, back, back, T0, T0]
