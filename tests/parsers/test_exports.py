"""Log stores' exports: Cloud Logging, CloudWatch, Elasticsearch, Kibana/Grafana/Datadog/Splunk CSV, shippers' records."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import polars as pl
import pytest

from forensics import ingest
from forensics import schema as s
from tests.conftest import assert_balanced, write

pytestmark = pytest.mark.usefixtures("as_a_large_run")  # (the threshold's own tests set theirs)


GKE_ENTRIES = [
    {
        "insertId": "a1",
        "textPayload": "ERROR 03-09 09:00:01 [core.py:720] EngineCore encountered a fatal error.",
        "resource": {
            "type": "k8s_container",
            "labels": {"pod_name": "qwen-0", "namespace_name": "llm", "container_name": "vllm", "cluster_name": "c"},
        },
        "labels": {"compute.googleapis.com/resource_name": "gke-gpu-pool-3"},
        "timestamp": "2025-03-09T09:00:01.500000Z",
        "severity": "ERROR",
    },
    {  # a Kubernetes event, as GKE logs them
        "insertId": "a2",
        "jsonPayload": {
            "reason": "Unhealthy",
            "message": "Liveness probe failed: HTTP probe failed with statuscode: 500",
            "involvedObject": {"kind": "Pod", "name": "qwen-0", "namespace": "llm"},
        },
        "resource": {"type": "k8s_pod", "labels": {"pod_name": "qwen-0", "namespace_name": "llm"}},
        "timestamp": "2025-03-09T09:00:05Z",
        "severity": "WARNING",
    },
    {  # the scheduler's: the pod's node, for the pod-to-node map
        "insertId": "a3",
        "jsonPayload": {
            "kind": "Event",
            "type": "Normal",
            "reason": "Scheduled",
            "message": "Successfully assigned llm/qwen-1 to gke-gpu-pool-5",
            "involvedObject": {"kind": "Pod", "name": "qwen-1", "namespace": "llm"},
            "reportingComponent": "default-scheduler",
        },
        "resource": {"type": "k8s_pod", "labels": {"pod_name": "qwen-1", "namespace_name": "llm"}},
        "timestamp": "2025-03-09T09:00:06Z",
        "severity": "INFO",
    },
    {  # a reason that reads like a Python exception: still an event
        "insertId": "a5",
        "jsonPayload": {
            "kind": "Event",
            "type": "Warning",
            "reason": "CreateContainerConfigError",
            "message": 'Error: secret "hf-token" not found',
            "involvedObject": {"kind": "Pod", "name": "qwen-1", "namespace": "llm"},
            "source": {"component": "kubelet", "host": "gke-gpu-pool-5"},
        },
        "resource": {"type": "k8s_pod", "labels": {"pod_name": "qwen-1", "namespace_name": "llm"}},
        "timestamp": "2025-03-09T09:00:06.500000Z",
        "severity": "WARNING",
    },
    {  # a node's, from its kubelet, counted
        "insertId": "a4",
        "jsonPayload": {
            "kind": "Event",
            "type": "Warning",
            "reason": "NodeNotReady",
            "message": "Node gke-gpu-pool-3 status is now: NodeNotReady",
            "involvedObject": {"kind": "Node", "name": "gke-gpu-pool-3", "uid": "gke-gpu-pool-3"},
            "source": {"component": "kubelet", "host": "gke-gpu-pool-3"},
            "count": 3,
        },
        "resource": {"type": "k8s_node", "labels": {"node_name": "gke-gpu-pool-3"}},
        "timestamp": "2025-03-09T09:00:07Z",
        "severity": "WARNING",
    },
]


@pytest.mark.parametrize("layout", ["lines", "gcloud-json"])
def test_google_cloud_logging_entries_keep_their_pod_node_and_time(tmp_path, layout):
    # GKE's logs as a Log Router sink writes them (one entry a line) or as
    # `gcloud logging read --format=json` prints them (one indented list).
    text = (
        "".join(json.dumps(e) + "\n" for e in GKE_ENTRIES) if layout == "lines" else json.dumps(GKE_ENTRIES, indent=2)
    )
    write(tmp_path / "gke-logs.json", text)
    r = ingest(tmp_path)
    assert_balanced(r)
    assert (r.unparsed, r.skipped) == (0, [])
    ev = r.events.sort(s.LINE).select(s.LINE, s.TS, s.SOURCE, s.HOST, s.POD, s.NAMESPACE, s.LEVEL, s.MESSAGE)
    assert ev.rows() == [
        (
            1,
            datetime(2025, 3, 9, 9, 0, 1, 500000, tzinfo=UTC),
            "vllm",
            "gke-gpu-pool-3",
            "qwen-0",
            "llm",
            "ERROR",
            "EngineCore encountered a fatal error.",
        ),
        (
            2,
            datetime(2025, 3, 9, 9, 0, 5, tzinfo=UTC),
            "k8s-event",
            None,
            "qwen-0",
            "llm",
            "WARNING",  # (no type: the entry's severity says it)
            "Unhealthy: Liveness probe failed: HTTP probe failed with statuscode: 500",
        ),
        (
            3,
            datetime(2025, 3, 9, 9, 0, 6, tzinfo=UTC),
            "k8s-event",
            None,
            "qwen-1",
            "llm",
            "INFO",
            "Scheduled: Successfully assigned llm/qwen-1 to gke-gpu-pool-5",
        ),
        (
            4,
            datetime(2025, 3, 9, 9, 0, 6, 500000, tzinfo=UTC),
            "k8s-event",
            "gke-gpu-pool-5",
            "qwen-1",
            "llm",
            "WARNING",
            'CreateContainerConfigError: Error: secret "hf-token" not found',
        ),
        (
            5,
            datetime(2025, 3, 9, 9, 0, 7, tzinfo=UTC),
            "k8s-event",
            "gke-gpu-pool-3",
            None,
            None,
            "WARNING",
            "NodeNotReady: Node gke-gpu-pool-3 status is now: NodeNotReady",
        ),
    ]
    # Read as `kubectl get events -o json` is: its reason, type, object, count and reporter.
    k8s = r.events.sort(s.LINE).filter(pl.col(s.SOURCE) == "k8s-event")
    assert k8s.select(s.K8S_REASON, s.K8S_TYPE, s.K8S_OBJECT, s.K8S_COUNT, s.COMPONENT).rows() == [
        ("Unhealthy", "Warning", "pod/qwen-0", 1, None),
        ("Scheduled", "Normal", "pod/qwen-1", 1, "default-scheduler"),
        ("CreateContainerConfigError", "Warning", "pod/qwen-1", 1, "kubelet"),
        ("NodeNotReady", "Warning", "node/gke-gpu-pool-3", 3, "kubelet"),
    ]
    from forensics.diagnosis import skew

    assert skew.pod_nodes(r.events) == {"qwen-1": "gke-gpu-pool-5"}


def test_cloudwatch_and_elasticsearch_exports_are_read_one_record_a_line(tmp_path):
    stream = "kube.var.log.containers.qwen-1_llm_vllm-" + "0f" * 32 + ".log"
    write(
        tmp_path / "cloudwatch.json",
        json.dumps(
            {
                "events": [
                    {
                        "logStreamName": stream,
                        "timestamp": 1741510801500,
                        "message": "ERROR 03-09 09:00:01 [core.py:720] EngineCore encountered a fatal error.",
                        "eventId": "1",
                    }
                ],
                "searchedLogStreams": [],
            },
            indent=2,
        ),
    )
    write(
        tmp_path / "es-search.json",
        json.dumps(
            {
                "took": 3,
                "hits": {
                    "total": {"value": 1},
                    "hits": [
                        {
                            "_index": "logs",
                            "_source": {
                                "@timestamp": "2025-03-09T09:00:02Z",
                                "message": "ERROR 03-09 09:00:02 [core.py:720] EngineCore encountered a fatal error.",
                                "kubernetes": {"pod": {"name": "qwen-2"}, "namespace": "llm"},
                            },
                        }
                    ],
                },
            }
        ),
    )
    r = ingest(tmp_path)
    assert (r.unparsed, r.skipped) == (0, [])
    assert all("read one record a line" in f.notes[0] for f in r.files)
    ev = r.events.sort(s.FILE).select(s.FILE, s.TS, s.POD, s.NAMESPACE, s.CONTAINER, s.SOURCE)
    assert ev.rows() == [
        ("cloudwatch.json", datetime(2025, 3, 9, 9, 0, 1, 500000, tzinfo=UTC), "qwen-1", "llm", "vllm", "vllm"),
        ("es-search.json", datetime(2025, 3, 9, 9, 0, 2, tzinfo=UTC), "qwen-2", "llm", None, "vllm"),
    ]


def test_a_kibana_csv_export_is_read_oldest_first_with_its_pods_and_tracebacks(tmp_path):
    # Kibana's Discover "Generate CSV": its date format, ECS columns, `-` for a missing field,
    # the newest record first, and a traceback kept in one quoted cell (quotes doubled).
    write(
        tmp_path / "discover.csv",
        '"@timestamp","kubernetes.pod.name","kubernetes.namespace","kubernetes.container.name","host.name",message\n'
        '"Mar 2, 2025 @ 10:00:03.500","vllm-0",serving,vllm,"gpu-node-3","ERROR 03-02 10:00:03 [core.py:720] '
        "EngineCore encountered a fatal error.\nTraceback (most recent call last):\n"
        '  File ""/usr/lib/python3/vllm/core.py"", line 711, in run\n'
        'RuntimeError: Cache corruption detected in block 17"\n'
        '"Mar 2, 2025 @ 10:00:02.000","vllm-0",serving,vllm,"gpu-node-3","INFO 03-02 10:00:02 [loggers.py:118] '
        "Engine 000: Avg prompt throughput: 120.0 tokens/s, Avg generation throughput: 80.0 tokens/s, Running: 4 reqs, "
        'Waiting: 0 reqs, GPU KV cache usage: 45.0%, Prefix cache hit rate: 10.0%"\n'
        '"Mar 2, 2025 @ 10:00:01.000","vllm-1",serving,vllm,-,"INFO 03-02 10:00:01 [async_llm.py:270] Added request '
        'cmpl-abc123."\n',
    )
    r = ingest(tmp_path)
    (f,) = r.files
    assert (f.wrapper, f.lines, f.parsed, f.unparsed) == ("log-export-csv", 3, 3, 0)
    assert "a CSV export of 3 log records" in f.notes[0]
    assert f.notes[1] == "its records were listed newest first (as log stores show them): read oldest first"
    ev = r.events.select(s.LINE, s.TS, s.SOURCE, s.LEVEL, s.HOST, s.POD, s.NAMESPACE, s.CONTAINER, s.REQUEST_ID)
    assert ev.rows() == [
        (
            1,
            datetime(2025, 3, 2, 10, 0, 1, tzinfo=UTC),
            "vllm",
            "INFO",
            None,
            "vllm-1",
            "serving",
            "vllm",
            "cmpl-abc123",
        ),
        (
            2,
            datetime(2025, 3, 2, 10, 0, 2, tzinfo=UTC),
            "vllm",
            "INFO",
            "gpu-node-3",
            "vllm-0",
            "serving",
            "vllm",
            None,
        ),
        (
            3,
            datetime(2025, 3, 2, 10, 0, 3, 500000, tzinfo=UTC),
            "vllm",
            "ERROR",
            "gpu-node-3",
            "vllm-0",
            "serving",
            "vllm",
            None,
        ),
    ]
    fatal = r.events[s.MESSAGE][2]
    assert fatal.startswith("EngineCore encountered a fatal error.\nTraceback")
    assert fatal.endswith(
        'File "/usr/lib/python3/vllm/core.py", line 711, in run\nRuntimeError: Cache corruption detected in block 17'
    )
    kv = r.metrics.filter(pl.col("metric") == "gpu_kv_cache_usage").select(s.POD, "value").rows()
    assert kv == [("vllm-0", 0.45)]


def test_grafana_datadog_and_splunk_csv_exports_name_pods_nodes_and_exact_times(tmp_path):
    # Grafana Explore on Loki (the stream labels as JSON, `tsNs` before the zone-less `Time`),
    # Datadog's Log Explorer (`Status` as the level) and Splunk (`_raw`, the container log path
    # in `source`), one tab-separated.
    labels = '"{""container"":""vllm"",""namespace"":""llm"",""pod"":""qwen-1"",""node_name"":""node-21""}"'
    write(
        tmp_path / "explore.csv",
        "labels,Time,Line,tsNs,id\n"
        f'{labels},2025-03-09 11:00:02.000,"[rank3]:[E309 09:00:02.000000000 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog '
        "caught collective operation timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, "
        'Timeout(ms)=600000) ran for 600012 milliseconds before timing out.",1741510802123456789,a\n'
        f'{labels},2025-03-09 11:00:01.000,"node-21:412:498 [3] NCCL INFO comm 0x5581 rank 3 nranks 8 cudaDev 3 '
        'busId 3b000 - Init COMPLETE",1741510801000000000,b\n',
    )
    write(
        tmp_path / "datadog.csv",
        "Date,Host,Service,Status,Message\n"
        '2025-03-09T09:00:03.250Z,node-22,vllm,warn,"Sequence group 7 is preempted: not enough KV cache space"\n',
    )
    path = "/var/log/containers/qwen-2_llm_vllm-" + "ab" * 32 + ".log"
    write(
        tmp_path / "splunk.tsv",
        f"_time\t_raw\thost\tsource\n2025-03-09T09:00:04.000+00:00\tERROR 03-09 09:00:04 [core.py:720] EngineCore "
        f"encountered a fatal error.\tnode-22\t{path}\n",
    )
    r = ingest(tmp_path)
    assert r.skipped == [] and r.unparsed == 0
    assert {f.file: f.wrapper for f in r.files} == dict.fromkeys(
        ("datadog.csv", "explore.csv", "splunk.tsv"), "log-export-csv"
    )
    ev = r.events.sort(s.TS).select(s.TS, s.SOURCE, s.LEVEL, s.HOST, s.POD, s.NAMESPACE, s.CONTAINER)
    assert ev.rows() == [
        (datetime(2025, 3, 9, 9, 0, 1, tzinfo=UTC), "nccl", "INFO", "node-21", "qwen-1", "llm", "vllm"),
        (datetime(2025, 3, 9, 9, 0, 2, 123456, tzinfo=UTC), "torch", "ERROR", "node-21", "qwen-1", "llm", "vllm"),
        (datetime(2025, 3, 9, 9, 0, 3, 250000, tzinfo=UTC), "app", "WARNING", "node-22", "datadog", None, None),
        (datetime(2025, 3, 9, 9, 0, 4, tzinfo=UTC), "vllm", "ERROR", "node-22", "qwen-2", "llm", "vllm"),
    ]
    watchdog = r.events.filter(pl.col(s.SOURCE) == "torch").row(0, named=True)
    assert (watchdog[s.COLL_SEQ], watchdog[s.COLL_OP], watchdog[s.COLL_TIMEOUT_MS]) == (42, "ALLREDUCE", 600000)


def test_a_csv_exports_zoneless_times_are_in_the_zone_given_and_rows_without_a_message_are_kept(tmp_path):
    write(
        tmp_path / "insights.csv",
        "@timestamp,@message,@logStream\n"
        "2025-03-09 10:00:05.000,CUDA error: an illegal memory access was encountered,vllm-0\n"
        "2025-03-09 10:00:06.000,,vllm-0\n",
    )
    r = ingest(tmp_path, tz="Europe/Berlin")
    assert r.files[0].lines == 2 and r.unparsed + r.parsed == 2
    assert r.events[s.TS].to_list() == [
        datetime(2025, 3, 9, 9, 0, 5, tzinfo=UTC),
        datetime(2025, 3, 9, 9, 0, 6, tzinfo=UTC),
    ]
    # A row without a message keeps its cells as its line (its time read back off them): never dropped.
    assert r.events[s.MESSAGE].to_list()[1] == "vllm-0"


def _yearless_log_beside(tmp_path) -> list[datetime]:
    """The times of a yearless vLLM line written into `tmp_path` beside what is there, its file
    modified in 2027: what the directory's dated files make of its year."""
    import os

    log = tmp_path / "vllm-0.log"
    write(log, "ERROR 03-02 10:05:00 [core.py:720] EngineCore encountered a fatal error.\n")
    later = datetime(2027, 6, 1, tzinfo=UTC).timestamp()
    os.utime(log, (later, later))
    return ingest(tmp_path).events.filter(pl.col(s.FILE) == "vllm-0.log")[s.TS].to_list()


def test_a_csv_exports_exact_times_give_the_year_of_the_yearless_logs_beside_it(tmp_path):
    # The export pulled from the log store is the directory's only fully qualified clock; a
    # vLLM log copied off a pod later (its modification time two years on) takes its year from it.
    write(
        tmp_path / "discover.csv",
        '"@timestamp",message\n"Mar 2, 2025 @ 10:00:01.000","INFO 03-02 10:00:01 [x.py:1] from the store"\n',
    )
    assert _yearless_log_beside(tmp_path) == [datetime(2025, 3, 2, 10, 5, tzinfo=UTC)]


@pytest.mark.parametrize("records", [1, 3000])
def test_a_json_exports_exact_times_give_the_year_of_the_yearless_logs_beside_it(tmp_path, records):
    # An Elasticsearch search response pretty-printed by `jq`: one record, its head the whole
    # file, or thousands, a head cut short that parses as no JSON (the file is read whole).
    hits = [
        {
            "_index": "logs",
            "_source": {
                "@timestamp": f"2025-03-02T10:00:{i % 60:02d}Z",
                "message": f"INFO 03-02 10:00:{i % 60:02d} [x.py:1] from the store {i}",
            },
        }
        for i in range(records)
    ]
    write(tmp_path / "es-search.json", json.dumps({"took": 3, "hits": {"hits": hits}}, indent=2))
    assert ((tmp_path / "es-search.json").stat().st_size > 256 * 1024) == (records > 1)
    assert _yearless_log_beside(tmp_path) == [datetime(2025, 3, 2, 10, 5, tzinfo=UTC)]


def test_a_log_line_with_commas_is_not_taken_for_a_csv_export_header(tmp_path):
    # A header names columns, one or two words each, and an export's rows have its columns:
    # a log whose first line happens to look like a header, or a sentence, stays a log.
    write(tmp_path / "vllm-0.log", "time,message\nINFO 03-02 10:00:00 [x.py:1] time, message, and more\n")
    write(tmp_path / "notes.csv", "time,message,a few more words\nsomething happened\n")
    r = ingest(tmp_path, year=2025)
    by = {f.file: f for f in r.files}
    assert by["vllm-0.log"].wrapper is None and (by["vllm-0.log"].lines, by["vllm-0.log"].parsed) == (2, 1)
    assert by["notes.csv"].wrapper is None and by["notes.csv"].lines == 2 == by["notes.csv"].unparsed


def test_shipper_exports_keep_the_pod_and_node_the_shipper_attached(tmp_path):
    # Fluent Bit / Vector JSON lines, an Elasticsearch export (ECS fields) and `logcli query`
    # output: the incident's logs as pulled from the log store instead of from the pods.
    write(
        tmp_path / "fluent-bit.jsonl",
        '{"date":1741510800.25,"log":"INFO 03-09 09:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 900.0 tokens/s, '
        "Avg generation throughput: 610.5 tokens/s, Running: 9 reqs, Waiting: 0 reqs, GPU KV cache usage: 33.0%, "
        'Prefix cache hit rate: 5.0%\\n","stream":"stdout","kubernetes":{"pod_name":"qwen-14b-7d5c9b6f4-abcde",'
        '"namespace_name":"llm","container_name":"vllm","host":"node-21"}}\n'
        '{"@timestamp":"2025-03-09T09:00:01.500Z","message":"ERROR 03-09 09:00:01 [core.py:720] EngineCore encountered a fatal error.",'
        '"kubernetes":{"pod":{"name":"qwen-14b-7d5c9b6f4-abcde"},"namespace":"llm","node":{"name":"node-21"}}}\n',
    )
    write(
        tmp_path / "loki-export.log",
        '2025-03-09T09:00:02Z {container="vllm", namespace="llm", pod="qwen-14b-7d5c9b6f4-fghij", node_name="node-22"} '
        "ERROR 03-09 09:00:02 [core.py:720] EngineCore encountered a fatal error.\n",
    )
    r = ingest(tmp_path)
    assert r.unparsed == 0
    ev = r.events.sort(s.FILE, s.LINE).select(s.TS, s.SOURCE, s.HOST, s.POD, s.NAMESPACE, s.LEVEL)
    assert ev.rows() == [
        (
            datetime(2025, 3, 9, 9, 0, 0, 250000, tzinfo=UTC),
            "vllm",
            "node-21",
            "qwen-14b-7d5c9b6f4-abcde",
            "llm",
            "INFO",
        ),
        (
            datetime(2025, 3, 9, 9, 0, 1, 500000, tzinfo=UTC),
            "vllm",
            "node-21",
            "qwen-14b-7d5c9b6f4-abcde",
            "llm",
            "ERROR",
        ),
        (datetime(2025, 3, 9, 9, 0, 2, tzinfo=UTC), "vllm", "node-22", "qwen-14b-7d5c9b6f4-fghij", "llm", "ERROR"),
    ]
    m = r.metrics.filter(pl.col("metric") == "generation_tokens_per_s").row(0, named=True)
    assert (m["pod"], m["value"]) == ("qwen-14b-7d5c9b6f4-abcde", 610.5)
