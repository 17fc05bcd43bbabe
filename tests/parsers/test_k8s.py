"""Kubernetes as collected: kubectl get/describe listings, event lists, pod and node documents (`parsers.k8s`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from forensics import ingest
from forensics import schema as s
from forensics.ingestion import batches
from tests.conftest import DATA, assert_balanced, event_row, write

pytestmark = pytest.mark.usefixtures("as_a_large_run")  # (the threshold's own tests set theirs)


def test_describe_events_age_is_resolved_only_with_captured_at_and_said_without(tmp_path):
    write(
        tmp_path / "describe.txt",
        "Events:\n"
        "  Type     Reason     Age                From     Message\n"
        "  ----     ------     ----               ----     -------\n"
        '  Warning  Unhealthy  2m (x12 over 3m)   kubelet  Liveness probe failed: Get "http://10.244.1.7:8000/health": '
        "dial tcp 10.244.1.7:8000: connect: connection refused\n",
    )
    r = ingest(tmp_path)
    assert_balanced(r)
    assert r.unparsed == 0
    row = event_row(r.events, k8s_reason="Unhealthy")
    assert row[s.K8S_COUNT] == 12 and row[s.TS] is None and row[s.TS_QUALITY] == "none"
    # Left off the timeline: the run says so, and how to place it.
    (said,) = [w for w in r.warnings if w.startswith("describe.txt:")]
    assert "1 event timed only relative to when kubectl ran" in said and "--captured-at" in said
    cap = datetime(2025, 3, 2, 9, 0, tzinfo=UTC)
    r = ingest(tmp_path, captured_at=cap)
    row = event_row(r.events, k8s_reason="Unhealthy")
    assert row[s.TS] == datetime(2025, 3, 2, 8, 58, tzinfo=UTC) and row[s.TS_QUALITY] == "relative"
    assert not any("captured-at" in w for w in r.warnings)


def test_kubectl_get_events_table_rows_are_events(tmp_path):
    write(
        tmp_path / "get-events.txt",
        "LAST SEEN   TYPE      REASON             OBJECT        MESSAGE\n"
        "29m         Warning   FailedScheduling   pod/vllm-2    0/1 nodes are available: 1 Insufficient nvidia.com/gpu.\n"
        '5m2s        Normal    Pulled             pod/vllm-0    Container image "vllm/vllm-openai:v0.10.2" already present\n',
    )
    r = ingest(tmp_path)
    assert r.unparsed == 0
    row = event_row(r.events, k8s_reason="FailedScheduling")
    assert row[s.K8S_OBJECT] == "pod/vllm-2" and row[s.LEVEL] == "WARNING"
    assert row[s.POD] == "vllm-2"  # (the pod's event, as an event document's is)


def test_kubectl_events_rows_give_their_pod_count_and_last_time_as_get_events_rows_do(tmp_path):
    # `kubectl events -A` (kubectl >= 1.26): the object as `Kind/name`, and an event seen more than
    # once as `LAST SEEN (xN over FIRST)`; before, neither row shape was read and both were unknown.
    write(
        tmp_path / "kubectl-events.txt",
        "NAMESPACE   LAST SEEN           TYPE      REASON      OBJECT                         MESSAGE\n"
        "serving     14m                 Normal    Scheduled   Pod/llama-70b-5f7d9c-q2w4e     Successfully assigned serving/llama-70b-5f7d9c-q2w4e to h100-node-2\n"
        "serving     2m (x12 over 13m)   Warning   BackOff     Pod/llama-70b-5f7d9c-q2w4e     Back-off restarting failed container vllm in pod llama-70b-5f7d9c-q2w4e_serving(7c1d)\n"
        "serving     40s                 Warning   NodeNotReady   Node/h100-node-2            Node h100-node-2 status is now: NodeNotReady\n",
    )
    cap = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
    r = ingest(tmp_path, captured_at=cap)
    assert r.unparsed == 0
    ev = r.events.filter(pl.col(s.SOURCE) == "k8s-event").sort(s.LINE)
    assert ev.select(s.NAMESPACE, s.POD, s.K8S_OBJECT, s.K8S_REASON, s.K8S_COUNT, s.LEVEL, s.TS).rows() == [
        (
            "serving",
            "llama-70b-5f7d9c-q2w4e",
            "pod/llama-70b-5f7d9c-q2w4e",
            "Scheduled",
            None,
            "INFO",
            cap - timedelta(minutes=14),
        ),
        (
            "serving",
            "llama-70b-5f7d9c-q2w4e",
            "pod/llama-70b-5f7d9c-q2w4e",
            "BackOff",
            12,
            "WARNING",
            cap - timedelta(minutes=2),
        ),
        ("serving", None, "node/h100-node-2", "NodeNotReady", None, "WARNING", cap - timedelta(seconds=40)),
    ]
    assert set(ev[s.TS_QUALITY]) == {"relative"}
    assert ev[s.MESSAGE][1].startswith("BackOff: Back-off restarting failed container vllm")
    assert ev[s.HOST][2] == "h100-node-2"  # (a node's event is on that node, as in `-o json`)


def test_kubectl_get_pods_nodes_and_describe_pod_become_state_events():
    """Snapshots an on-call pastes into the incident folder: pod status rows, node status rows,
    and a describe whose container Last State says why the container died, with its time."""
    r = ingest([DATA / "k8s-state"])
    ev = r.events.filter(pl.col("source") == "k8s-state")
    pods = ev.filter(pl.col("k8s_object").str.starts_with("pod/"))
    assert pods.select("pod", "k8s_reason", "level", "host").rows() == [
        ("qwen2-72b-instruct-7f9c6d5b48-m4xzt", "CrashLoopBackOff", "WARNING", "gpu-a100-7"),
        ("embed-0", "Running", "INFO", "gpu-a100-7"),
    ]
    assert "4 restarts, last 1m40s ago" in pods["message"][0]
    node = ev.filter(pl.col("k8s_reason") == "NodeNotReady")
    assert node.select("host", "pod").rows() == [("gpu-a100-2", None)]
    died = ev.filter(pl.col("k8s_reason") == "OOMKilled").row(0, named=True)
    assert died["message"].startswith("Last State: Terminated (OOMKilled, exit code 137 SIGKILL) container vllm\n")
    assert died["ts"] == datetime(2025, 6, 12, 3, 24, 52, tzinfo=UTC) and died["ts_quality"] == "exact"
    assert (died["pod"], died["container"], died["host"]) == (
        "qwen2-72b-instruct-7f9c6d5b48-m4xzt",
        "vllm",
        "gpu-a100-7",
    )
    (f,) = r.files
    assert f.unparsed == 3  # the three `$ kubectl ...` shell prompts, honestly counted
    assert f.parsed + f.folded + f.unparsed == f.lines


def test_a_directory_holding_only_an_event_document_is_ingested(tmp_path):
    # Regression: with no line-oriented log beside it, accounting looked for the
    # wrapper's `stream` column that only line batches have, and crashed.
    write(tmp_path / "events.json", (DATA / "incident" / "events.json").read_text())
    r = ingest(tmp_path)
    assert r.events.height > 0
    assert r.unparsed == 0 and r.lines == r.parsed
    assert r.files[0].wrapper == "k8s-events-json"
    assert set(r.events["source"]) == {"k8s-event"}


@pytest.mark.parametrize("batch_files", [1, 4000])
def test_event_documents_take_their_place_in_file_order_between_batches(tmp_path, monkeypatch, batch_files):
    # Event documents are parsed whole, apart from the line batches, and put back among
    # them by file id; with a batch per file the places fall between and after batches.

    monkeypatch.setattr(batches, "BATCH_FILES", batch_files)
    events = (DATA / "incident" / "events.json").read_text()
    line = "2025-07-28T06:41:2{n}.000000Z INFO 07-28 06:41:2{n} [x.py:1] file {name} line {n}\n"
    for name in ("a", "c", "e"):
        write(tmp_path / f"{name}.log", "".join(line.format(n=n, name=name) for n in range(3)))
    write(tmp_path / "b-events.json", events)
    write(tmp_path / "d-events.json", events)
    write(tmp_path / "f-events.json", events)
    ev = ingest(tmp_path).events
    order = list(zip(ev[s.FILE], ev[s.LINE], strict=True))
    assert order == sorted(order)
    assert [f for f, _ in order if f.endswith(".log")] == ["a.log"] * 3 + ["c.log"] * 3 + ["e.log"] * 3
    assert {f for f, _ in order} == {"a.log", "b-events.json", "c.log", "d-events.json", "e.log", "f-events.json"}
    assert ev.n_chunks() == 1


POD_LIST = {  # a cluster-info dump's serving/pods.json (`kubectl get pods -o json` is a `List` alike)
    "kind": "PodList",
    "apiVersion": "v1",
    "items": [
        {
            "metadata": {"name": "vllm-0", "namespace": "serving"},
            "spec": {"nodeName": "gpu-node-1"},
            "status": {"containerStatuses": [{"name": "vllm", "state": {"running": {}}, "lastState": {}}]},
        },
        {
            "metadata": {"name": "vllm-1", "namespace": "serving"},
            "spec": {"nodeName": "gpu-node-2"},
            "status": {
                "containerStatuses": [
                    {
                        "name": "vllm",
                        "restartCount": 3,
                        "state": {
                            "waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s restarting failed"}
                        },
                        "lastState": {
                            "terminated": {
                                "exitCode": 137,
                                "reason": "OOMKilled",
                                "startedAt": "2025-06-12T03:21:05Z",
                                "finishedAt": "2025-06-12T03:24:52Z",
                            }
                        },
                    }
                ]
            },
        },
        {
            "metadata": {"name": "vllm-9", "namespace": "serving"},
            "spec": {"nodeName": "gpu-node-4"},
            "status": {"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory. "},
        },
    ],
}


NODE_LIST = {
    "kind": "NodeList",
    "apiVersion": "v1",
    "items": [
        {
            "metadata": {"name": "gpu-node-4"},
            "status": {
                "nodeInfo": {"kubeletVersion": "v1.30.2"},
                "conditions": [
                    {
                        "type": "MemoryPressure",
                        "status": "True",
                        "lastTransitionTime": "2025-06-12T03:20:00Z",
                        "reason": "KubeletHasInsufficientMemory",
                        "message": "kubelet has insufficient memory available",
                    },
                    {
                        "type": "Ready",
                        "status": "True",
                        "lastTransitionTime": "2025-06-01T00:00:00Z",
                        "reason": "KubeletReady",
                        "message": "kubelet is posting ready status",
                    },
                    {  # (node-problem-detector's: False is healthy)
                        "type": "ReadonlyFilesystem",
                        "status": "False",
                        "lastTransitionTime": "2025-06-01T00:00:00Z",
                        "reason": "FilesystemIsNotReadOnly",
                        "message": "Filesystem is not read-only",
                    },
                ],
            },
        }
    ],
}


def test_pod_and_node_documents_give_what_describe_gives(tmp_path):
    import yaml

    write(tmp_path / "dump" / "serving" / "pods.json", json.dumps(POD_LIST, indent=2))
    write(tmp_path / "dump" / "nodes.yaml", yaml.safe_dump(NODE_LIST))
    r = ingest(tmp_path)
    assert r.skipped == [] and r.unparsed == 0
    assert {f.file: f.wrapper for f in r.files} == {
        "dump/nodes.yaml": "k8s-state-yaml",
        "dump/serving/pods.json": "k8s-state-json",
    }
    ev = r.events.sort(s.FILE, s.LINE)
    assert ev.select(s.HOST, s.POD, s.K8S_REASON, s.TS).rows() == [
        ("gpu-node-4", None, "MemoryPressure", datetime(2025, 6, 12, 3, 20, tzinfo=UTC)),
        ("gpu-node-2", "vllm-1", "OOMKilled", datetime(2025, 6, 12, 3, 24, 52, tzinfo=UTC)),
        ("gpu-node-2", "vllm-1", "CrashLoopBackOff", datetime(2025, 6, 12, 3, 24, 52, tzinfo=UTC)),  # (since the kill)
        ("gpu-node-4", "vllm-9", "Evicted", None),  # (no condition to time it: untimed, not the row above's)
    ]
    assert ev.filter(pl.col(s.K8S_REASON) == "OOMKilled")[s.MESSAGE][0] == (
        "Last State: Terminated (OOMKilled, exit code 137 SIGKILL) container vllm"
    )
    assert set(ev[s.SOURCE]) == {"k8s-state"} and set(ev[s.LEVEL]) == {"WARNING"}


def test_describe_node_failing_conditions_are_timed_node_events(tmp_path):
    write(
        tmp_path / "describe-nodes.txt",
        "Name:               h100-node-12\n"
        "Roles:              <none>\n"
        "CreationTimestamp:  Tue, 04 Feb 2025 11:02:10 +0000\n"
        "Taints:             node.kubernetes.io/memory-pressure:NoSchedule\n"
        "Conditions:\n"
        "  Type             Status  LastHeartbeatTime                 LastTransitionTime                Reason                       Message\n"
        "  ----             ------  -----------------                 ------------------                ------                       -------\n"
        "  MemoryPressure   True    Fri, 14 Mar 2025 03:10:44 +0000   Fri, 14 Mar 2025 03:07:31 +0000   KubeletHasInsufficientMemory kubelet has insufficient memory available\n"
        "  DiskPressure     False   Fri, 14 Mar 2025 03:10:44 +0000   Tue, 04 Feb 2025 11:02:10 +0000   KubeletHasNoDiskPressure     kubelet has no disk pressure\n"
        "  Ready            True    Fri, 14 Mar 2025 03:10:44 +0000   Tue, 04 Feb 2025 11:02:40 +0000   KubeletReady                 kubelet is posting ready status\n"
        "  KernelDeadlock   True    Fri, 14 Mar 2025 03:10:44 +0000   Fri, 14 Mar 2025 03:08:12 +0000   DockerHung                   task docker:7 blocked for more than 120 seconds.\n"
        "Name:               h100-node-13\n"
        "Conditions:\n"
        "  Type             Status    LastHeartbeatTime                 LastTransitionTime                Reason              Message\n"
        "  ----             ------    -----------------                 ------------------                ------              -------\n"
        "  Ready            Unknown   Fri, 14 Mar 2025 03:09:02 +0000   Fri, 14 Mar 2025 03:09:58 +0000   NodeStatusUnknown   Kubelet stopped posting node status.\n",
    )
    r = ingest(tmp_path)
    assert r.unparsed == 0
    bad = r.events.filter(pl.col(s.K8S_TYPE) == "Warning").sort(s.LINE)
    assert bad.select(s.HOST, s.K8S_REASON, s.K8S_OBJECT, s.TS).rows() == [
        ("h100-node-12", "MemoryPressure", "node/h100-node-12", datetime(2025, 3, 14, 3, 7, 31, tzinfo=UTC)),
        # node-problem-detector's own condition: True is the problem, as for the pressures
        ("h100-node-12", "KernelDeadlock", "node/h100-node-12", datetime(2025, 3, 14, 3, 8, 12, tzinfo=UTC)),
        ("h100-node-13", "NodeNotReady", "node/h100-node-13", datetime(2025, 3, 14, 3, 9, 58, tzinfo=UTC)),
    ]
    from forensics.diagnosis.signatures import classify

    assert classify(bad)["category"].to_list() == ["node"] * 3
    assert bad[s.MESSAGE][2].startswith("NodeNotReady: Ready=Unknown since Fri, 14 Mar 2025 03:09:58 +0000")
    # Healthy conditions fold into their block instead of reading as events of their own.
    assert not r.events.filter(pl.col(s.MESSAGE).str.starts_with("DiskPressure")).height


def test_a_describe_event_with_a_relative_age_never_borrows_the_time_of_the_line_above(tmp_path):
    write(
        tmp_path / "describe-pod.txt",
        "Name:         llama-3-8b-5c7f9d6b4-k2v9x\n"
        "Start Time:   Wed, 07 May 2025 10:14:02 +0000\n"
        "Containers:\n"
        "  vllm:\n"
        "    State:          Terminated\n"
        "      Reason:       Error\n"
        "      Exit Code:    1\n"
        "      Finished:     Wed, 07 May 2025 10:31:40 +0000\n"
        "Events:\n"
        "  Type     Reason   Age                From     Message\n"
        "  ----     ------   ----               ----     -------\n"
        "  Warning  BackOff  3m (x7 over 15m)   kubelet  Back-off restarting failed container vllm in pod llama-3-8b-5c7f9d6b4-k2v9x\n",
    )
    backoff = pl.col(s.K8S_REASON) == "BackOff"
    row = ingest(tmp_path).events.filter(backoff).row(0, named=True)
    assert (row[s.TS], row[s.TS_QUALITY]) == (None, "none")
    captured = datetime(2025, 5, 7, 10, 40, tzinfo=UTC)
    row = ingest(tmp_path, captured_at=captured).events.filter(backoff).row(0, named=True)
    assert (row[s.TS], row[s.TS_QUALITY]) == (datetime(2025, 5, 7, 10, 37, tzinfo=UTC), "relative")


def test_kubectl_get_events_wide_gives_the_node_count_and_message_apart(tmp_path):
    write(
        tmp_path / "events-wide.txt",
        "LAST SEEN   TYPE      REASON      OBJECT                        SUBOBJECT                SOURCE                     MESSAGE                                        FIRST SEEN   COUNT   NAME\n"
        "2m          Warning   BackOff     pod/phi-3-6d8f7c5b9-w2e3r      spec.containers{vllm}    kubelet, h100-node-4       Back-off restarting failed container vllm      40m          17      phi-3-6d8f7c5b9-w2e3r.18a1b2c3d4e5f607\n"
        "9m          Normal    Scheduled   pod/phi-3-6d8f7c5b9-q9w8e                               default-scheduler          Successfully assigned llm/phi-3-6d8f7c5b9-q9w8e to h100-node-5   9m   1   phi-3-6d8f7c5b9-q9w8e.18a1b2c3d4e5f608\n",
    )
    r = ingest(tmp_path)
    assert r.unparsed == 0
    ev = r.events.filter(pl.col(s.SOURCE) == "k8s-event").sort(s.LINE)
    assert ev.select(s.K8S_REASON, s.HOST, s.POD, s.COMPONENT, s.K8S_COUNT, s.MESSAGE).rows() == [
        (
            "BackOff",
            "h100-node-4",
            "phi-3-6d8f7c5b9-w2e3r",
            "kubelet",
            17,
            "BackOff: Back-off restarting failed container vllm",
        ),
        (
            "Scheduled",
            None,
            "phi-3-6d8f7c5b9-q9w8e",
            "default-scheduler",
            1,
            "Scheduled: Successfully assigned llm/phi-3-6d8f7c5b9-q9w8e to h100-node-5",
        ),
    ]


EVENT_LISTINGS = {
    "events.json": json.dumps(
        {
            "kind": "List",
            "items": [
                {
                    "kind": "Event",
                    "type": t,
                    "reason": reason,
                    "message": message,
                    "lastTimestamp": "2025-06-01T10:00:00Z",
                    "involvedObject": {"kind": kind, "name": name, "namespace": "serving"},
                    "metadata": {"name": f"{name}.{reason}", "namespace": "serving"},
                }
                for t, reason, kind, name, message in [
                    ("Normal", "ScalingReplicaSet", "Deployment", "llama", "Scaled up replica set llama-7d9f to 1"),
                    ("Normal", "Killing", "Pod", "llama-0", "Container vllm failed startup probe, will be restarted"),
                ]
            ],
        }
    ),
    "events.txt": (
        "LAST SEEN   TYPE      REASON              OBJECT                  MESSAGE\n"
        "2m          Normal    ScalingReplicaSet   deployment/llama        Scaled up replica set llama-7d9f to 1\n"
        "1m          Normal    Killing             pod/llama-0             Container vllm failed startup probe, will be restarted\n"
    ),
    "kubectl-events.txt": (  # (`kubectl events`, kubectl >= 1.26: the object's kind as the API spells it)
        "LAST SEEN   TYPE      REASON              OBJECT                  MESSAGE\n"
        "2m          Normal    ScalingReplicaSet   Deployment/llama        Scaled up replica set llama-7d9f to 1\n"
        "1m          Normal    Killing             Pod/llama-0             Container vllm failed startup probe, will be restarted\n"
    ),
    "describe.txt": (
        "Name:         llama-0\n"
        "Namespace:    serving\n"
        "Events:\n"
        "  Type     Reason             Age   From                   Message\n"
        "  ----     ------             ----  ----                   -------\n"
        "  Normal   ScalingReplicaSet  2m    deployment-controller  Scaled up replica set llama-7d9f to 1\n"
        "  Normal   Killing            1m    kubelet                Container vllm failed startup probe, will be restarted\n"
    ),
}


@pytest.mark.parametrize("listing", sorted(EVENT_LISTINGS))
def test_an_event_reads_the_same_from_every_listing_so_the_catalog_knows_it(tmp_path, listing):
    # The catalog knows a rollout by `ScalingReplicaSet:` and a probe's kill by `Killing: Container
    # x failed`: a `kubectl get events` table or a `describe` section must say them as `-o json` does.
    from forensics.diagnosis import signatures

    write(tmp_path / listing, EVENT_LISTINGS[listing])
    ev = ingest(tmp_path).events.filter(pl.col(s.SOURCE) == "k8s-event").sort(s.LINE)
    assert ev[s.MESSAGE].to_list() == [
        "ScalingReplicaSet: Scaled up replica set llama-7d9f to 1",
        "Killing: Container vllm failed startup probe, will be restarted",
    ]
    kinds = signatures.classify(ev).select("category", "kind").rows()
    assert kinds == [("config-change", "change"), ("pod-lifecycle", "symptom")]


DESCRIBE_SHUT_DOWN = """Name:             llama-0
Namespace:        serving
Node:             gke-spot-pool-3/10.128.0.9
Status:           Failed
Reason:           Terminated
Message:          Pod was terminated in response to imminent node shutdown.
Containers:
  vllm:
    State:          Terminated
      Reason:       Error
      Exit Code:    143
      Started:      Tue, 03 Jun 2025 09:00:05 +0000
      Finished:     Tue, 03 Jun 2025 11:47:30 +0000
Name:             llama-1
Namespace:        serving
Node:             gke-gpu-pool-1/10.128.0.4
Status:           Running
Containers:
  vllm:
    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
      Started:      Tue, 03 Jun 2025 09:00:05 +0000
      Finished:     Tue, 03 Jun 2025 10:12:00 +0000
"""


def test_a_described_pods_own_message_says_why_its_container_stopped(tmp_path):
    # The pod-level `Message:` (a node shutdown, an eviction) is why the container got its
    # SIGTERM: the container's state, timed and on its node, says it. Never another pod's.
    write(tmp_path / "describe.txt", DESCRIBE_SHUT_DOWN)
    ev = ingest(tmp_path).events.filter(pl.col(s.K8S_REASON).is_not_null()).sort(s.LINE)
    firsts = [m.split("\n")[0] for m in ev[s.MESSAGE]]
    assert list(zip(ev[s.HOST], ev[s.POD], firsts, strict=True)) == [
        (
            "gke-spot-pool-3",
            "llama-0",
            "State: Terminated (Error, exit code 143 SIGTERM) container vllm; the pod: Pod was terminated in "
            "response to imminent node shutdown.",
        ),
        ("gke-gpu-pool-1", "llama-1", "Last State: Terminated (OOMKilled, exit code 137 SIGKILL) container vllm"),
    ]


def test_a_describe_events_section_names_its_blocks_pod_and_node(tmp_path):
    # The Events rows of `kubectl describe pod` belong to the pod (on its `Node:`), those of
    # `describe node` to the node; an Events section pasted alone names nothing.
    write(
        tmp_path / "describe.txt",
        "Name:             llama-0\n"
        "Namespace:        serving\n"
        "Node:             gpu-node-3/10.0.0.3\n"
        "Events:\n"
        "  Type     Reason     Age   From     Message\n"
        "  ----     ------     ----  ----     -------\n"
        '  Warning  Unhealthy  2m    kubelet  Readiness probe failed: Get "http://10.4.2.17:8000/health": EOF\n'
        "Name:             llama-9\n"
        "Namespace:        serving\n"
        "Node:             <none>\n"
        "Events:\n"
        "  Type     Reason            Age   From               Message\n"
        "  ----     ------            ----  ----               -------\n"
        "  Warning  FailedScheduling  2m    default-scheduler  0/4 nodes are available: 4 Insufficient nvidia.com/gpu.\n"
        "Name:               gpu-node-4\n"
        "Roles:              <none>\n"
        "Events:\n"
        "  Type     Reason        Age   From     Message\n"
        "  ----     ------        ----  ----     -------\n"
        "  Warning  NodeNotReady  1m    kubelet  Node gpu-node-4 status is now: NodeNotReady\n",
    )
    write(
        tmp_path / "events-only.txt",
        "Events:\n"
        "  Type     Reason   Age   From     Message\n"
        "  ----     ------   ----  ----     -------\n"
        "  Warning  BackOff  1m    kubelet  Back-off restarting failed container vllm\n",
    )
    ev = ingest(tmp_path).events.filter(pl.col(s.SOURCE) == "k8s-event").sort(s.FILE, s.LINE)
    assert ev.select(s.FILE, s.K8S_REASON, s.POD, s.HOST, s.K8S_OBJECT).rows() == [
        ("describe.txt", "Unhealthy", "llama-0", "gpu-node-3", "pod/llama-0"),
        ("describe.txt", "FailedScheduling", "llama-9", None, "pod/llama-9"),  # (pending: `Node: <none>`)
        ("describe.txt", "NodeNotReady", None, "gpu-node-4", "node/gpu-node-4"),
        ("events-only.txt", "BackOff", None, None, None),
    ]
