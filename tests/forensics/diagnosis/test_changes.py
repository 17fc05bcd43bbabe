"""Changes and starts: rollouts as trigger or resolution, probes, slow model loads (`forensics.diagnosis.signals`, `catalog.changes`, `catalog.start`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from forensics import analyze
from forensics.diagnosis import advice
from forensics.report.postmortem import write_all
from tests.conftest import write as write_file
from tests.forensics.diagnosis.conftest import k8s_event, metrics_lines

ENGINE_START_FAILURES = [
    (
        1,
        "(EngineCore_DP0 pid=9) ERROR {local} [core.py:708] ValueError: To serve at least one request with the "
        "models's max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache "
        "memory (9.50 GiB).",
        "gpu-memory",
    ),
    (  # after its image pull and back-offs: minutes after the capacity went
        8,
        "RuntimeError: The NVIDIA driver on your system is too old (found version 12020). Please update your GPU "
        "driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx",
        "engine",
    ),
    (  # the new image's wheels built without the node's GPU architecture
        6,
        "(EngineCore_DP0 pid=9) ERROR {local} [core.py:708] RuntimeError: CUDA error: no kernel image is available "
        "for execution on the device",
        "engine",
    ),
    (  # the old replica's engine not yet gone from the GPU the new one starts on
        2,
        "(EngineCore_DP0 pid=9) ERROR {local} [core.py:708] ValueError: Free memory on device cuda:0 (30.12/79.19 "
        "GiB) on startup is less than desired GPU memory utilization (0.9, 71.27 GiB). Decrease GPU memory "
        "utilization or reduce GPU memory used by other processes.",
        "gpu-memory",
    ),
]


@pytest.mark.parametrize(("after_min", "error", "category"), ENGINE_START_FAILURES)
def test_a_rollout_before_the_drop_is_its_trigger_and_one_after_it_the_resolution(tmp_path, after_min, error, category):
    # A rolling update scales an old replica down while the new version crash-loops at engine
    # start: the capacity goes first, the new pod's own error comes later. That error is the
    # cause and the rollout its trigger, not two rival explanations.
    from datetime import UTC, datetime, timedelta

    start = datetime(2025, 3, 2, 8, 0, tzinfo=UTC)
    write_file(tmp_path / "pods" / "vllm-5c8b-a.log", metrics_lines(start, 60, drop_at=None))
    write_file(tmp_path / "pods" / "vllm-5c8b-b.log", metrics_lines(start, 40, drop_at=None))
    crash = start + timedelta(minutes=40 + after_min)
    write_file(
        tmp_path / "pods" / "vllm-7d9f-c.log",
        f"{crash:%Y-%m-%dT%H:%M:%S}.000000000Z " + error.format(local=f"{crash:%m-%d %H:%M:%S}") + "\n",
    )

    def event(t, reason, name, message, kind="Deployment"):
        stamp = f"{t:%Y-%m-%dT%H:%M:%SZ}"
        return {
            "kind": "Event",
            "type": "Normal",
            "reason": reason,
            "message": message,
            "count": 1,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "involvedObject": {"kind": kind, "name": name, "namespace": "serving"},
            "metadata": {"name": f"{name}.{reason}", "namespace": "serving"},
        }

    roll, fix = start + timedelta(minutes=39, seconds=50), start + timedelta(minutes=55)
    items = [
        event(roll, "ScalingReplicaSet", "vllm", "Scaled down replica set vllm-5c8b to 1 from 2"),
        event(roll + timedelta(seconds=5), "Pulling", "vllm-7d9f-c", 'Pulling image "vllm/vllm-openai:v0.9.3"', "Pod"),
        event(fix, "ScalingReplicaSet", "vllm", "Scaled up replica set vllm-5c8b to 2 from 1"),
    ]
    write_file(tmp_path / "events.json", json.dumps({"kind": "List", "items": items}))
    report = analyze(tmp_path)
    inc = report.to_json()["incidents"][0]
    rc = inc["root_cause"]
    assert (rc["status"], rc["category"]) == ("supported", category)
    assert "a new pod failing to start after the rollout at 08:39:50 (its trigger)" in rc["why"]
    trig = inc["trigger"]
    assert (trig["kind"], trig["ts"], trig["file"]) == ("rollout", "2025-03-02T08:39:50Z", "events.json")
    assert [d["text"] for d in trig["details"]] == [
        "ScalingReplicaSet: Scaled down replica set vllm-5c8b to 1 from 2",
        'Pulling: Pulling image "vllm/vllm-openai:v0.9.3"',
    ]
    assert (inc["resolution"]["kind"], inc["resolution"]["ts"]) == ("rollout", "2025-03-02T08:55:00Z")
    assert [r["ts"] for r in inc["timeline"] if r["role"] == "trigger"] == ["2025-03-02T08:39:50Z"]
    md = write_all(report, tmp_path / "out")["postmortem"].read_text()
    trigger = md.split("## Trigger")[1].split("##")[0]
    assert trigger.startswith("\nA rollout began 08:39:50 UTC") and "Pulling image" in trigger
    assert "No traffic surge or rollout" not in md and "Gate rollouts on new replicas serving" in md


def test_a_rollout_whose_new_version_serves_less_without_an_error_is_the_cause_and_its_first_signal(tmp_path):
    # The whole replica set replaced at once by a version that serves at half the rate: no
    # error anywhere, the rollout itself is what the logs have.
    start = datetime(2025, 3, 2, 8, 0, tzinfo=UTC)
    roll = start + timedelta(minutes=30)
    old, new = metrics_lines(start, 30, drop_at=None), metrics_lines(roll + timedelta(minutes=1), 29, drop_at=None)
    for pod in ("vllm-5c8b-a", "vllm-5c8b-b"):
        write_file(tmp_path / "pods" / f"{pod}.log", old)
    for pod in ("vllm-7d9f-c", "vllm-7d9f-d"):
        write_file(
            tmp_path / "pods" / f"{pod}.log", new.replace("generation throughput: 24", "generation throughput: 11")
        )
    items = [
        k8s_event(roll - timedelta(seconds=20), "ScalingReplicaSet", "vllm", "Scaled up replica set vllm-7d9f to 2"),
        k8s_event(roll - timedelta(seconds=15), "Pulling", "vllm-7d9f-c", 'Pulling image "vllm/vllm-openai:v0.9.3"'),
        k8s_event(roll, "ScalingReplicaSet", "vllm", "Scaled down replica set vllm-5c8b to 0 from 2"),
    ]
    write_file(tmp_path / "events.json", json.dumps({"kind": "List", "items": items}))
    report = analyze(tmp_path)
    (inc,) = report.to_json()["incidents"]
    assert (inc["root_cause"]["status"], inc["root_cause"]["category"]) == ("supported", "config-change")
    assert inc["detection"]["first_signal"] == inc["root_cause"]["first_seen"] == "2025-03-02T08:29:40Z"
    assert not any("peer pods were fine" in w for w in inc["root_cause"]["why"])
    md = write_all(report, tmp_path / "out")["postmortem"].read_text()
    summary = md.split("## Summary")[1].split("##")[0]
    assert "(rollout / config change), and no fault logged explains the drop better" in summary
    assert "config-change failure" not in summary


def test_a_liveness_probe_that_times_out_on_a_serving_engine_is_the_cause(tmp_path):
    # The engine was generating until the kubelet killed it: the probe timeout, not a crash.
    from datetime import UTC, datetime, timedelta

    start = datetime(2025, 3, 2, 8, 0, tzinfo=UTC)
    write_file(tmp_path / "pods" / "vllm-a.log", metrics_lines(start, 40, drop_at=None))
    write_file(tmp_path / "pods" / "vllm-b.log", metrics_lines(start, 20, drop_at=None))
    probe = 'Liveness probe failed: Get "http://10.0.0.7:8000/health": context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
    failed = start + timedelta(minutes=19, seconds=55)
    items = [
        k8s_event(failed, "Unhealthy", "vllm-b", probe, count=3, first=failed - timedelta(seconds=20)),
        k8s_event(
            failed + timedelta(seconds=2),
            "Killing",
            "vllm-b",
            "Container vllm failed liveness probe, will be restarted",
        ),
    ]
    write_file(tmp_path / "events.json", json.dumps({"kind": "List", "items": items}))
    rc = analyze(tmp_path).to_json()["incidents"][0]["root_cause"]
    assert (rc["status"], rc["category"], rc["hosts"]) == ("supported", "pod-lifecycle", ["gpu-node-1", "vllm-b"])
    assert rc["label"].startswith("liveness probe timed out on an engine that was serving")
    assert any(w.startswith("its engine was generating 2,4") for w in rc["why"])

    # The same probe failures after the engine stalled (requests running at 0 tokens/s): a symptom.
    write_file(tmp_path / "pods" / "vllm-b.log", metrics_lines(start, 20, drop_at=18))
    rc = analyze(tmp_path).to_json()["incidents"][0]["root_cause"]
    assert not rc["label"].startswith("liveness probe timed out")


def _slow_start(tmp_path, *, served: bool = False, quiet_min: float = 0.0) -> None:
    """A 405B model loading for ten minutes, its startup probe giving up after nine and a half."""
    start = datetime(2025, 6, 1, 10, 0, tzinfo=UTC)
    at = [(0, "(APIServer pid=1) INFO 06-01 10:00:00 [api_server.py:1043] vLLM API server version 0.9.1")]
    if served:
        at.append((20, "(APIServer pid=1) INFO:     Application startup complete."))
    at += [
        (40, "(VllmWorker rank=0 pid=120) INFO 06-01 10:00:40 [gpu_model_runner.py:1595] Starting to load model x...")
    ]
    shards = int((570 - 60 - quiet_min * 60) // 20)
    at += [
        (
            40 + 20 * i,
            f"(VllmWorker rank=0 pid=120) Loading safetensors checkpoint shards:  {i}% Completed | {i}/109 [00:00<30:00, 20.0s/it]",
        )
        for i in range(1, shards)
    ]
    write_file(
        tmp_path / "llama-405b-0.log",
        "".join(f"{start + timedelta(seconds=sec):%Y-%m-%dT%H:%M:%S}.000000000Z {line}\n" for sec, line in at),
    )
    probe = (
        'Startup probe failed: Get "http://10.4.2.17:8000/health": dial tcp 10.4.2.17:8000: connect: connection refused'
    )
    items = [
        k8s_event(start + timedelta(seconds=570), "Unhealthy", "llama-405b-0", probe),
        k8s_event(
            start + timedelta(seconds=600),
            "Killing",
            "llama-405b-0",
            "Container vllm failed startup probe, will be restarted",
        ),
    ]
    write_file(tmp_path / "events.json", json.dumps({"kind": "List", "items": items}))


def test_a_probe_that_kills_an_engine_still_loading_its_model_is_the_cause(tmp_path):
    # A crash loop with no error of its own: the engine was loading shards when the kubelet killed it.
    _slow_start(tmp_path)
    report = analyze(tmp_path)
    (inc,) = report.to_json()["incidents"]
    rc = inc["root_cause"]
    assert (rc["status"], rc["category"], rc["label"]) == ("supported", "pod-lifecycle", advice.STARTUP_KILL_LABEL)
    assert any("had been starting for 9.5 min" in w and "checkpoint shards" in w for w in rc["why"])
    md = write_all(report, tmp_path / "out")["postmortem"].read_text()
    assert "startupProbe on `/health` whose `failureThreshold` x `periodSeconds` exceeds" in md


@pytest.mark.parametrize(
    ("served", "quiet_min"),
    [
        (True, 0.0),  # it served before: not a start-up that ran long
        (False, 6.0),  # the start-up went quiet six minutes before the probe: a hang, not a long load
    ],
)
def test_a_probe_failure_is_no_slow_start_when_the_engine_served_or_went_quiet(tmp_path, served, quiet_min):
    _slow_start(tmp_path, served=served, quiet_min=quiet_min)
    (inc,) = analyze(tmp_path).to_json()["incidents"]
    assert inc["root_cause"]["status"] == "inconclusive"
    assert inc["root_cause"]["label"] != advice.STARTUP_KILL_LABEL


def test_an_nfs_server_gone_silent_under_a_stalled_model_load_is_the_cause_not_the_probe(tmp_path):
    # The load stalled six minutes before the probe gave up: the node's kernel says why.
    _slow_start(tmp_path, quiet_min=6.0)
    write_file(
        tmp_path / "nodes" / "gpu-node-1" / "kernel.journal",
        "Jun 01 10:03:05 gpu-node-1 kernel: nfs: server 10.0.9.4 not responding, still trying\n"
        "Jun 01 10:05:10 gpu-node-1 kernel: INFO: task python3:4121 blocked for more than 122 seconds.\n",
    )
    (inc,) = analyze(tmp_path).to_json()["incidents"]
    rc = inc["root_cause"]
    assert (rc["status"], rc["category"], rc["hosts"]) == ("supported", "node", ["gpu-node-1"])
    assert rc["label"].startswith("the NFS server of a volume stopped responding")
    roles = {h["label"]: h["role"] for h in inc["hypotheses"]}
    assert roles["node kernel or filesystem failure (oops, hung task, read-only filesystem)"] == "symptom"


def test_a_rollout_in_the_same_minute_as_its_new_pods_failure_is_the_trigger_not_the_fix(tmp_path):
    # `kubectl get events` ages are whole minutes: the rolling update, its new pod that no node
    # fits, and the old replica set scaled down as the update goes on share one or two of them.
    write_file(
        tmp_path / "events.txt",
        "LAST SEEN   TYPE      REASON              OBJECT                   MESSAGE\n"
        "12m         Normal    ScalingReplicaSet   deployment/llama         Scaled up replica set llama-6f7d8 to 1\n"
        "12m         Warning   FailedScheduling    pod/llama-6f7d8-x2k9q    0/4 nodes are available: 4 node(s) didn't "
        "match Pod's node affinity/selector. preemption: 0/4 nodes are available: 4 Preemption is not helpful.\n"
        "11m         Normal    ScalingReplicaSet   deployment/llama         Scaled down replica set llama-5c4b2 to 1 "
        "from 2\n",
    )
    report = analyze(tmp_path, captured_at=datetime(2025, 6, 3, 12, 0, tzinfo=UTC))
    (inc,) = report.to_json()["incidents"]
    rc = inc["root_cause"]
    assert (rc["status"], rc["category"]) == ("supported", "capacity")
    assert rc["label"] == "pods cannot be scheduled: no node matches their node selector, affinity or tolerations"
    assert "a new pod failing to start after the rollout at 11:48:00 (its trigger)" in rc["why"]
    assert (inc["trigger"]["kind"], inc["trigger"]["ts"]) == ("rollout", "2025-06-03T11:48:00Z")
    assert inc["resolution"]["kind"] == "no recovery logged"  # (the scale-down a minute later is the update's own)


def test_an_untimed_describe_with_an_image_pull_after_the_fault_names_no_resolution(tmp_path):
    # A describe Events section without --captured-at has no times: its `Pulling: Pulling image`
    # row, after the probe failures in the file, is no rollout that ended anything.
    write_file(
        tmp_path / "describe.txt",
        "Events:\n"
        "  Type     Reason     Age                From     Message\n"
        "  ----     ------     ----               ----     -------\n"
        "  Warning  Unhealthy  25m (x3 over 25m)  kubelet  Liveness probe failed: HTTP probe failed with statuscode: 404\n"
        "  Normal   Killing    25m                kubelet  Container vllm failed liveness probe, will be restarted\n"
        '  Normal   Pulling    25m (x2 over 28m)  kubelet  Pulling image "ghcr.io/llm-d/llm-d-inference-sim:v0.1.1"\n',
    )
    (inc,) = analyze(tmp_path).to_json()["incidents"]
    assert inc["root_cause"]["label"].startswith("health probe misconfigured")
    assert inc["resolution"]["kind"] == "no recovery logged" and inc["resolution"]["ts"] is None


def _engine_start(t, args: str, kv_tokens: int, concurrency: float) -> str:
    stamp = lambda dt: f"{dt:%Y-%m-%dT%H:%M:%S}.000000000Z"  # noqa: E731
    return (
        f"{stamp(t)} (APIServer pid=1) INFO {t:%m-%d %H:%M:%S} [api_server.py:1885] vLLM API server version 0.10.2\n"
        f"{stamp(t)} (APIServer pid=1) INFO {t:%m-%d %H:%M:%S} [utils.py:328] non-default args: {args}\n"
        f"{stamp(t + timedelta(seconds=50))} (EngineCore_DP0 pid=9) INFO {t + timedelta(seconds=50):%m-%d %H:%M:%S} "
        f"[kv_cache_utils.py:1087] GPU KV cache size: {kv_tokens:,} tokens\n"
        f"{stamp(t + timedelta(seconds=50))} (EngineCore_DP0 pid=9) INFO {t + timedelta(seconds=50):%m-%d %H:%M:%S} "
        f"[kv_cache_utils.py:1091] Maximum concurrency for 32,768 tokens per request: {concurrency:.2f}x\n"
    )


def _serving(t0, minutes: int, gen: float, kv, waiting) -> str:
    out = []
    for i in range(minutes * 6):
        t = t0 + timedelta(seconds=10 * i)
        out.append(
            f"{t:%Y-%m-%dT%H:%M:%S}.000000000Z (APIServer pid=1) INFO {t:%m-%d %H:%M:%S} [loggers.py:123] Engine 000: "
            f"Avg prompt throughput: {gen * 0.8:.1f} tokens/s, Avg generation throughput: {gen + i % 5:.1f} tokens/s, "
            f"Running: 48 reqs, Waiting: {waiting(i)} reqs, GPU KV cache usage: {kv(i):.1f}%, Prefix cache hit rate: 22.0%\n"
        )
    return "".join(out)


def _config_rollout(tmp_path, new_args: str, new_kv: int, new_conc: float) -> None:
    """Two replicas with 0.92 of the GPU and 412,816 KV tokens, replaced at 08:30 by two started
    with `new_args`; from 08:32 the new ones fill their cache and requests queue."""
    start, roll = datetime(2025, 3, 2, 8, 0, tzinfo=UTC), datetime(2025, 3, 2, 8, 30, tzinfo=UTC)
    old_args = "{'model': '/models/llama-3.1-70b', 'tensor_parallel_size': 4, 'gpu_memory_utilization': 0.92}"
    for pod in ("vllm-5c8b-a", "vllm-5c8b-b"):
        body = _engine_start(start, old_args, 412_816, 12.6) + _serving(
            start + timedelta(minutes=2), 28, 2400.0, lambda i: 50.0 + i % 7, lambda i: 0
        )
        write_file(tmp_path / "pods" / f"{pod}.log", body)
    shrank = new_kv < 412_816
    for pod in ("vllm-7d9f-c", "vllm-7d9f-d"):
        body = _engine_start(roll - timedelta(minutes=1), new_args, new_kv, new_conc) + _serving(
            roll,
            30,
            2400.0,
            (lambda i: 100.0 if i >= 12 else 70.0) if shrank else (lambda i: 50.0 + i % 7),
            (lambda i: min(10 * (i - 11), 180) if i >= 12 else 0) if shrank else (lambda i: 0),
        )
        write_file(tmp_path / "pods" / f"{pod}.log", body)
    items = [
        k8s_event(
            roll - timedelta(minutes=1, seconds=20),
            "ScalingReplicaSet",
            "vllm",
            "Scaled up replica set vllm-7d9f to 2",
            kind="Deployment",
        ),
        k8s_event(
            roll, "ScalingReplicaSet", "vllm", "Scaled down replica set vllm-5c8b to 0 from 2", kind="Deployment"
        ),
    ]
    write_file(tmp_path / "events.json", json.dumps({"kind": "List", "items": items}))


def test_a_rollout_that_left_the_engines_less_kv_cache_is_the_cause_with_before_and_after(tmp_path):
    # The capacity looks exhausted (KV full, a growing queue), but the load did not change:
    # the new engines were started with 0.6 of the GPU, and got a third of the KV cache.
    new_args = "{'model': '/models/llama-3.1-70b', 'tensor_parallel_size': 4, 'gpu_memory_utilization': 0.6}"
    _config_rollout(tmp_path, new_args, 131_072, 4.0)
    report = analyze(tmp_path)
    inc = report.to_json()["incidents"][0]
    rc = inc["root_cause"]
    assert (rc["status"], rc["category"]) == ("supported", "config-change")
    assert "gpu_memory_utilization 0.92 → 0.6" in rc["label"]
    assert "GPU KV cache size 412,816 → 131,072 tokens" in rc["label"]
    assert sorted(rc["hosts"]) == ["vllm-7d9f-c", "vllm-7d9f-d"]
    capacity = [h for h in inc["hypotheses"] if h["category"] == "capacity"]
    assert all(h["role"] == "symptom" for h in capacity)
    md = write_all(report, tmp_path / "out")["postmortem"].read_text()
    assert r"gpu\_memory\_utilization 0.92 → 0.6" in md


def test_a_rollout_with_the_same_engine_arguments_is_no_config_change():
    import polars as pl

    from forensics.diagnosis import engine_config

    start = datetime(2025, 3, 2, 8, 0, tzinfo=UTC)
    args = "{'model': '/models/llama-3.1-70b', 'tensor_parallel_size': 4}"
    rows = []
    for pod, t in (("a", start), ("b", start + timedelta(minutes=30))):
        for n, line in enumerate(_engine_start(t, args, 412_816, 12.6).splitlines()):
            stamp, msg = line.split(" ", 1)
            rows.append(
                {
                    "ts": datetime.fromisoformat(stamp[:19]).replace(tzinfo=UTC),
                    "pod": pod,
                    "file": f"{pod}.log",
                    "line": n + 1,
                    "message": msg.split("] ", 1)[1],
                }
            )
    events = pl.DataFrame(
        rows,
        schema={
            "ts": pl.Datetime("us", "UTC"),
            "pod": pl.String,
            "file": pl.String,
            "line": pl.Int64,
            "message": pl.String,
        },
    )
    assert len(engine_config.configs(events)) == 2
    assert (
        engine_config.rollout_change(
            engine_config.configs(events), start + timedelta(minutes=20), start + timedelta(minutes=40)
        )
        is None
    )
