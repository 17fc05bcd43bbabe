"""Root cause from partial and real-shaped logs: which fault is the cause, which its symptoms, and what to collect when inconclusive (`forensics.diagnosis.rootcause`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from forensics import analyze
from forensics.diagnosis import advice, rootcause, signatures
from forensics.report.postmortem import write_all
from tests.conftest import DATA, nvidia_smi_gpu, nvidia_smi_snapshot
from tests.conftest import write as write_file
from tests.forensics.diagnosis.conftest import metrics_lines, scheduled_on


def test_nccl_watchdog_output_alone_is_inconclusive_and_says_what_is_missing(tmp_path):
    write_file(
        tmp_path / "rank-logs.txt",
        "[rank1]:[E0304 07:12:45.104338712 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=88213, OpType=ALLREDUCE, NumelIn=16384, NumelOut=16384, Timeout(ms)=600000) ran for 600042 milliseconds before timing out.\n"
        "[rank2]:[E0304 07:12:45.105927133 ProcessGroupNCCL.cpp:607] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=88213, OpType=ALLREDUCE, NumelIn=16384, NumelOut=16384, Timeout(ms)=600000) ran for 600038 milliseconds before timing out.\n"
        "[rank1]:[E0304 07:12:45.106001457 ProcessGroupNCCL.cpp:1709] [PG 3 Rank 1] Timeout at NCCL work: 88213, last enqueued NCCL work: 88213, last completed NCCL work: 88212.\n",
    )
    report = analyze(tmp_path, year=2024)
    d = report.to_json()
    assert len(d["incidents"]) == 1
    inc = d["incidents"][0]
    assert inc["root_cause"]["status"] == "inconclusive" and "only symptoms" in inc["root_cause"]["missing"].lower()
    md = write_all(report, tmp_path / "out")["postmortem"].read_text()
    assert "Only symptoms in the logs (collective-timeout)" in md and md.count("Not determined. Ranks 1, 2 of 3") == 1
    assert "the kubelet/kernel logs of the nodes.\n" in md
    assert inc["impact"]["measured"] is False and d["throughput"]["measured"] is False
    assert {h["role"] for h in inc["hypotheses"]} == {"symptom"}
    # With no cause to point at, each symptom still says why it cannot be one.
    assert all(h["why"].startswith("a collective that never completed") for h in inc["hypotheses"])


def test_one_pod_log_with_an_oom_traceback_names_gpu_memory_without_any_metrics(tmp_path):
    write_file(
        tmp_path / "vllm-0.log",
        "INFO 03-02 13:37:00 [api_server.py:1885] vLLM API server version 0.10.2\n"
        "ERROR 03-02 13:37:52 [core.py:720] EngineCore encountered a fatal error.\n"
        "ERROR 03-02 13:37:52 [core.py:720] Traceback (most recent call last):\n"
        'ERROR 03-02 13:37:52 [core.py:720]   File "/usr/lib/vllm/v1/engine/core.py", line 711, in run_engine_core\n'
        "ERROR 03-02 13:37:52 [core.py:720] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 1 has a total capacity of 79.25 GiB of which 1.12 GiB is free.\n"
        'INFO:     10.0.0.1:5000 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n',
    )
    d = analyze(tmp_path, year=2025).to_json()
    rc = d["incidents"][0]["root_cause"]
    assert rc["category"] == "gpu-memory" and rc["template"].startswith("torch.OutOfMemoryError: CUDA out of memory")
    roles = {h["category"]: h["role"] for h in d["incidents"][0]["hypotheses"]}
    assert roles["engine"] == "symptom"


def test_a_tensorrt_llm_kv_block_manager_check_is_the_root_cause_of_its_failed_steps_and_the_timeouts(tmp_path):
    # TensorRT-LLM's executor: its KV block manager's check fails (a C++ line with no time of its
    # own, its native backtrace under it), then each step fails the requests in flight with the
    # same words, and another rank's collectives time out ten minutes later.
    check = "Assertion failed: mNextBlocks.empty() (/src/tensorrt_llm/cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp:219)"
    steps = [
        f"[11/02/2025-14:0{m}:00] [TRT-LLM] [RANK 0] [I] iter = {m * 100}, host_step_time = 50.5ms" for m in range(1, 6)
    ]
    failed = [
        f"[11/02/2025-14:06:{10 + k}] [TRT-LLM] [RANK 0] [E] request {k}: Encountered an error in forwardAsync "
        f"function: [TensorRT-LLM][ERROR] {check}"
        for k in range(8)
    ]
    write_file(
        tmp_path / "trtllm-worker-0.log",
        "\n".join(
            [
                "[11/02/2025-14:00:00] [TRT-LLM] [I] Load engine takes: 41.2 sec",
                *steps,
                f"[TensorRT-LLM][ERROR] tensorrt_llm::common::TllmException: [TensorRT-LLM][ERROR] {check}",
                "1       0x7f3a740272b5 tensorrt_llm::common::throwRuntimeError(char const*, int, std::string const&) + 82",
                *failed,
            ]
        )
        + "\n",
    )
    write_file(
        tmp_path / "trtllm-worker-1.log",
        "".join(
            f"[rank1]:[E1102 14:16:{31 + k}.267261276 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective "
            f"operation timeout: WorkNCCL(SeqNum={5730 + k}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            "Timeout(ms)=600000) ran for 600009 milliseconds before timing out.\n"
            for k in range(6)
        ),
    )
    inc = analyze(tmp_path).to_json()["incidents"][0]
    rc = inc["root_cause"]
    assert (rc["status"], rc["category"], rc["label"]) == ("supported", "kv-cache", "KV block-pool invariant violated")
    assert rc["evidence"][0]["file"] == "trtllm-worker-0.log" and rc["evidence"][0]["line"] == 7
    assert {h["category"]: h["role"] for h in inc["hypotheses"]}["collective-timeout"] == "symptom"


def test_a_bare_assertion_error_is_read_by_the_assert_above_it_as_a_block_pool_fault(tmp_path):
    # vLLM's block pool guards its free list with plain asserts: the traceback ends in a bare
    # `AssertionError`, and only the statement above it says which invariant broke.
    p = "(EngineCore_DP0 pid=88) ERROR 03-02 13:37:52 [core.py:720] "
    write_file(
        tmp_path / "vllm-0.log",
        "(APIServer pid=1) INFO 03-02 13:30:00 [api_server.py:1885] vLLM API server version 0.10.2\n"
        f"{p}EngineCore encountered a fatal error.\n"
        f"{p}Traceback (most recent call last):\n"
        f'{p}  File "/usr/lib/vllm/v1/core/kv_cache_utils.py", line 281, in popleft_n\n'
        f"{p}    assert curr_block is not None\n"
        f"{p}           ^^^^^^^^^^^^^^^^^^^^^^\n"
        f"{p}AssertionError\n",
    )
    inc = analyze(tmp_path, year=2025).to_json()["incidents"][0]
    rc = inc["root_cause"]
    assert (rc["category"], rc["label"]) == ("kv-cache", "KV block-pool invariant violated")
    assert rc["template"] == "AssertionError: assert curr_block is not None"
    assert {h["category"]: h["role"] for h in inc["hypotheses"]}["engine"] == "symptom"


def test_an_error_burst_without_throughput_claims_no_recovery_only_where_errors_and_logs_stop(tmp_path):
    # No metrics or access lines: whether service came back is unknown. The report may only say
    # when the errors stop and whether the logs go on after them.
    fault = (
        "ERROR 03-02 13:37:52 [core.py:720] EngineCore encountered a fatal error.\n"
        "ERROR 03-02 13:37:52 [core.py:720] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB.\n"
    )
    write_file(
        tmp_path / "a" / "vllm-0.log",
        "INFO 03-02 13:37:00 [api_server.py:1885] vLLM API server version 0.10.2\n" + fault,
    )
    write_file(
        tmp_path / "b" / "vllm-0.log",
        "INFO 03-02 13:37:00 [api_server.py:1885] vLLM API server version 0.10.2\n"
        + fault
        + "INFO 03-02 13:52:10 [api_server.py:1885] vLLM API server version 0.10.2\n",
    )
    ended = analyze(tmp_path / "a", year=2025)
    assert ended.to_json()["incidents"][0]["impact"]["http_requests"] == 0
    res = ended.to_json()["incidents"][0]["resolution"]
    assert res["kind"] == "no recovery logged" and res["recovered"] is None
    assert res["errors_end"] == res["logs_end"] == "2025-03-02T13:37:52Z"
    md = write_all(ended, tmp_path / "out-a")["postmortem"].read_text()
    assert "| requests | no HTTP access lines in the window |" in md
    resolution = md.split("## Resolution")[1].split("##")[0]
    assert "No recovery is logged: the logs end with the incident's errors at 13:37:52 UTC." in resolution
    assert "ecovered" not in resolution.replace("No recovery", "")

    went_on = analyze(tmp_path / "b", year=2025)
    res = went_on.to_json()["incidents"][0]["resolution"]
    assert res["kind"] == "no recovery logged" and res["logs_end"] == "2025-03-02T13:52:10Z"
    md = write_all(went_on, tmp_path / "out-b")["postmortem"].read_text()
    assert "the incident's errors stop at 13:37:52 UTC; the logs go on to 13:52:10 UTC" in md


def test_a_fault_in_logs_that_start_with_it_is_not_called_new_against_a_baseline_they_lack(tmp_path):
    fault = (
        "ERROR 03-02 13:37:52 [core.py:720] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB.\n"
    )
    write_file(tmp_path / "excerpt" / "vllm-0.log", fault)
    write_file(
        tmp_path / "day" / "vllm-0.log",
        "INFO 03-02 09:00:00 [api_server.py:1885] vLLM API server version 0.10.2\n" + fault,
    )
    excerpt = analyze(tmp_path / "excerpt", year=2025)
    why = excerpt.to_json()["incidents"][0]["root_cause"]["why"]
    assert "no baseline to compare with: these logs start with the incident" in why
    assert not any(w.startswith("new:") for w in why)
    trigger = write_all(excerpt, tmp_path / "out")["postmortem"].read_text().split("## Trigger")[1].split("##")[0]
    assert "no throughput series" in trigger and "before the drop" not in trigger

    why = analyze(tmp_path / "day", year=2025).to_json()["incidents"][0]["root_cause"]["why"]
    assert "new: absent from the baseline before the incident" in why


def test_describe_pod_last_state_oomkilled_is_the_cause_of_the_crash_loop(tmp_path):
    """Only kubectl snapshots in the folder: the container's OOM kill is the cause; the
    CrashLoopBackOff it produced is a symptom."""
    from datetime import UTC, datetime

    captured = datetime(2025, 6, 12, 3, 26, 32, tzinfo=UTC)  # `1m40s ago` then dates the last restart
    d = analyze(DATA / "k8s-state", year=2025, captured_at=captured).to_json()
    inc = d["incidents"][0]
    rc = inc["root_cause"]
    assert rc["category"] == "pod-lifecycle" and "OOMKilled" in rc["template"]
    assert rc["evidence"][0]["line"] == 24
    roles = {h["template"].split(":")[0]: h["role"] for h in inc["hypotheses"]}
    assert roles["pod <POD> CrashLoopBackOff"] == "symptom" and roles["State"] == "symptom"
    assert roles["NodeNotReady"] != "root_cause"  # another node, not where the pod ran


def _sglang_replica(dies_at: datetime | None, until: datetime, after: list[tuple[str, int]] = ()) -> str:
    """An SGLang server's log: its scheduler's decode batches every 2 s (~1,500 tokens/s) and
    uvicorn's access lines, until a CUDA fault on TP1 at `dies_at` ends them, or `until`; then
    the requests `after` it (method, status), one every 5 s."""
    t, lines = datetime(2025, 3, 2, 8, 0), ["[2025-03-02 07:59:50] The server is fired up and ready to roll!"]
    while t < (dies_at or until):
        stamp = f"{t:%Y-%m-%d %H:%M:%S}"
        lines.append(
            f"[{stamp} TP0] Decode batch. #running-req: 32, #token: 41000, token usage: 0.31, "
            f"gen throughput (token/s): {1500 + t.second % 7 * 10:.2f}, #queue-req: 0"
        )
        lines.append(f'[{stamp}] INFO:     10.0.0.9:{40000 + t.second} - "POST /v1/chat/completions HTTP/1.1" 200 OK')
        t += timedelta(seconds=2)
    if dies_at is not None:
        lines += [
            f"[{dies_at:%Y-%m-%d %H:%M:%S} TP1] Scheduler hit an exception: Traceback (most recent call last):",
            '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1999, in event_loop',
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            f"[{dies_at:%Y-%m-%d %H:%M:%S}] Received sigquit from a child process. It usually means the child failed.",
        ]
    for method, status in after:
        t += timedelta(seconds=5)
        path = "/health" if method == "GET" else "/v1/chat/completions"
        lines.append(
            f'[{t:%Y-%m-%d %H:%M:%S}] INFO:     10.0.0.9:{41000 + t.second} - "{method} {path} HTTP/1.1" {status}'
        )
    return "\n".join(lines) + "\n"


def test_the_only_replicas_crash_is_an_outage_while_requests_keep_failing_after_its_last_metrics(tmp_path):
    # One replica: its batches stop with the fault, so its metrics end there; the 503s it kept
    # answering say the service was wanted and down, and the series runs on to the last of them.
    fault = datetime(2025, 3, 2, 8, 10)
    write_file(tmp_path / "sglang-llama-0.log", _sglang_replica(fault, fault, after=[("POST", 503)] * 60))
    (inc,) = analyze(tmp_path).to_json()["incidents"]
    assert abs(datetime.fromisoformat(inc["start"]) - fault.replace(tzinfo=UTC)) <= timedelta(seconds=30)
    assert inc["end"] is None and inc["min_tokens_per_s"] == 0
    assert (inc["root_cause"]["category"], inc["root_cause"]["hosts"][0]) == ("gpu-fault", "sglang-llama-0")


def test_an_engine_gone_quiet_with_only_probes_and_a_few_failures_after_is_no_outage(tmp_path):
    # Traffic ended: readiness probes (GETs) and a stray failure or two are no demand left unserved.
    end = datetime(2025, 3, 2, 8, 10)
    write_file(
        tmp_path / "sglang-llama-0.log", _sglang_replica(None, end, after=[("GET", 200)] * 60 + [("POST", 500)] * 3)
    )
    assert analyze(tmp_path).to_json()["incidents"] == []


def test_an_sglang_replicas_cuda_fault_is_the_root_cause_of_the_throughput_it_took_away(tmp_path):
    # Two SGLang replicas; one's scheduler dies of a CUDA fault and its batches stop: the drop is
    # measured from SGLang's batch lines, and the fault is the root cause, on that replica.
    fault, end = datetime(2025, 3, 2, 8, 10), datetime(2025, 3, 2, 8, 20)
    write_file(tmp_path / "sglang-llama-6d5f8-a1.log", _sglang_replica(fault, end))
    write_file(tmp_path / "sglang-llama-6d5f8-b2.log", _sglang_replica(None, end))
    rep = analyze(tmp_path).to_json()
    assert rep["throughput"]["unit"] == "generation tokens/s"
    (inc,) = rep["incidents"]
    assert abs(datetime.fromisoformat(inc["start"]) - fault.replace(tzinfo=UTC)) <= timedelta(seconds=30)
    assert inc["baseline_tokens_per_s"] == pytest.approx(3060, rel=0.05)
    rc = inc["root_cause"]
    assert (rc["status"], rc["category"]) == ("supported", "gpu-fault")
    assert rc["hosts"][0] == "sglang-llama-6d5f8-a1"
    assert "illegal memory access" in rc["template"]


def test_a_request_ray_serves_proxy_and_replica_both_logged_counts_once(tmp_path):
    # Serve's proxy and the replica behind it each write an access line under the request's id.
    t0, proxy, replica = datetime(2025, 3, 2, 8, 0), [], []
    for i in range(900):
        t, status, rid = t0 + timedelta(seconds=i), 200 if i < 600 else 500, f"{i:08x}-6c1d-4e2a-8b3f-a0d4e7c19f52"
        stamp = f"{t:%Y-%m-%d %H:%M:%S},{i % 1000:03d}"
        proxy.append(f"INFO {stamp} proxy 10.0.0.3 {rid} -- POST /v1/chat/completions {status} 812.5ms")
        replica.append(f"INFO {stamp} default_LLM k2m9q4tz {rid} -- POST /v1/chat/completions {status} 810.1ms")
    replica.insert(
        600,
        "ERROR 2025-03-02 08:10:00,000 default_LLM k2m9q4tz -- RuntimeError: CUDA error: an illegal memory access was encountered",
    )
    write_file(tmp_path / "proxy_10.0.0.3.log", "\n".join(proxy) + "\n")
    write_file(tmp_path / "replica_default_LLM_k2m9q4tz.log", "\n".join(replica) + "\n")
    (inc,) = analyze(tmp_path).to_json()["incidents"]
    impact = inc["impact"]
    assert (impact["unit"], impact["baseline_per_s"]) == ("completed requests/s", 1.0)
    assert (impact["http_requests"], impact["http_5xx"]) == (300, 300)
    assert inc["root_cause"]["category"] == "gpu-fault"


def test_a_cluster_info_dumps_pods_json_names_the_oom_kill_behind_a_replicas_silence(tmp_path):
    """`kubectl cluster-info dump`: the pods' logs and `pods.json`. One replica's engine stops
    reporting; its container's last state in pods.json says the kernel killed it for memory."""
    from datetime import UTC, datetime, timedelta

    t0 = datetime(2025, 6, 12, 3, 0, tzinfo=UTC)
    for pod in ("vllm-0", "vllm-1", "vllm-2"):
        end = 24 * 6 + 5 if pod == "vllm-1" else 40 * 6
        lines = [
            f"==== START logs for container vllm of pod serving/{pod} ====",
            *(
                f"{(t0 + timedelta(seconds=10 * i)):%Y-%m-%dT%H:%M:%S}.000000000Z INFO {(t0 + timedelta(seconds=10 * i)):%m-%d %H:%M:%S} "
                "[loggers.py:123] Engine 000: Avg prompt throughput: 900.0 tokens/s, Avg generation throughput: "
                f"{1500 + i % 7}.0 tokens/s, Running: 30 reqs, Waiting: 0 reqs, GPU KV cache usage: 40.0%, Prefix cache hit "
                "rate: 10.0%"
                for i in range(end)
            ),
            f"==== END logs for container vllm of pod serving/{pod} ====",
        ]
        write_file(tmp_path / "dump" / "serving" / pod / "logs.txt", "\n".join(lines) + "\n")
    pods = {
        "kind": "PodList",
        "items": [
            {
                "metadata": {"name": pod, "namespace": "serving"},
                "spec": {"nodeName": f"gpu-node-{i}"},
                "status": {
                    "containerStatuses": [
                        {
                            "name": "vllm",
                            "restartCount": 1 if pod == "vllm-1" else 0,
                            "state": {"running": {"startedAt": "2025-06-12T03:26:10Z"}},
                            "lastState": {
                                "terminated": {
                                    "exitCode": 137,
                                    "reason": "OOMKilled",
                                    "startedAt": "2025-06-12T02:00:00Z",
                                    "finishedAt": "2025-06-12T03:24:51Z",
                                }
                            }
                            if pod == "vllm-1"
                            else {},
                        }
                    ]
                },
            }
            for i, pod in enumerate(("vllm-0", "vllm-1", "vllm-2"))
        ],
    }
    write_file(tmp_path / "dump" / "serving" / "pods.json", json.dumps(pods, indent=2))
    inc = analyze(tmp_path).to_json()["incidents"][0]
    rc = inc["root_cause"]
    assert (rc["status"], rc["category"], rc["hosts"]) == ("supported", "pod-lifecycle", ["vllm-1", "gpu-node-1"])
    assert rc["template"].startswith("Last State: Terminated (OOMKilled")
    assert rc["evidence"][0]["file"] == "dump/serving/pods.json"


def test_untimed_nccl_excerpt_is_ranked_by_line_order_and_a_lost_peer_follows_the_oom(tmp_path):
    """An NCCL_DEBUG=WARN excerpt pasted into a ticket has no timestamps at all: the analysis
    still finds the incident, orders by position, shows no invented times, and reads the
    socket closed by the remote peer as what the dying process's peers log."""
    write_file(
        tmp_path / "nccl.txt",
        "gpu-b7:20911:21004 [2] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer gpu-b7-ib0<40217>\n"
        "gpu-b7:20911:21004 [2] NCCL INFO misc/socket.cc:749 -> 6\n"
        "gpu-b7:20911:21004 [2] NCCL INFO transport/p2p.cc:438 -> 3\n"
        "\n"
        "gpu-b7:20911:21004 [2] proxy.cc:1143 NCCL WARN Socket recv failed while polling for opId=0x55a51966cc80\n"
        "\n"
        "gpu-b7:20913:21088 [5] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'\n"
        "gpu-b7:20913:21088 [5] NCCL INFO transport/p2p.cc:204 -> 1\n",
    )
    report = analyze(tmp_path, year=2025)
    d = report.to_json()
    (inc,) = d["incidents"]
    assert inc["start"] is None and inc["timing"].startswith("untimed")
    assert inc["root_cause"]["category"] == "gpu-memory"
    network = [h["role"] for h in inc["hypotheses"] if h["category"] == "network"]
    assert network == ["symptom", "symptom"]  # (the socket closed, and NCCL's proxy failing to read from it)
    assert all(row["ts"] is None for row in inc["timeline"])
    out = tmp_path / "report"
    write_all(report, out)
    md = (out / "postmortem.md").read_text()
    assert (
        "no timestamps in these logs" in md and "1900" not in md and "1900" not in (out / "analysis.json").read_text()
    )


def test_a_lost_peer_logged_just_before_the_kernels_oom_kill_of_that_peer_is_its_echo(tmp_path):
    # The survivor's NCCL proxy noticed the closed socket a second before the node's journal
    # line that says why: the host ran out of memory and the kernel killed the peer.
    write_file(
        tmp_path / "nodes" / "gpu-a" / "worker.log",
        "2025-03-02T10:00:04.000000000Z gpu-a:311:402 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection "
        "closed by remote peer gpu-b<51159>\n",
    )
    write_file(
        tmp_path / "nodes" / "gpu-b" / "kernel.journal",
        "Mar 02 10:00:05 gpu-b kernel: Out of memory: Killed process 4121 (python3) total-vm:912345678kB\n",
    )
    (inc,) = analyze(tmp_path).to_json()["incidents"]
    assert (inc["root_cause"]["label"], inc["root_cause"]["hosts"]) == (signatures.HOST_OOM, ["gpu-b"])
    (lost,) = [h for h in inc["hypotheses"] if h["category"] == "network"]
    assert lost["role"] == "symptom" and "a peer that closes its sockets may have died" in lost["why"]


def _replicas_crashing(tmp_path: Path, crashes: dict[str, int], error: str, batches: dict | None = None) -> dict:
    """Three vLLM replicas serving 1,800 tokens/s; each pod in `crashes` dies on `error` at
    its 10-second tick, after logging the batch it ran (`batches`: pod -> computed tokens of
    its running requests, as vLLM V1's input dump prints them). The root cause of the one incident."""
    t0 = datetime(2025, 3, 2, 8, 0, 0, tzinfo=UTC)
    for pod in ("vllm-0", "vllm-1", "vllm-2"):
        lines = []
        for i in range(80):
            t = t0 + timedelta(seconds=10 * i)
            stamp, local = t.strftime("%Y-%m-%dT%H:%M:%S.000000000Z"), t.strftime("%m-%d %H:%M:%S")
            dead = pod in crashes and i > crashes[pod]
            if pod in crashes and i == crashes[pod]:
                if batches and pod in batches:
                    ids = [f"'chatcmpl-{pod}-{k}'" for k in range(len(batches[pod]))]
                    lines.append(
                        f"{stamp} ERROR {local} [dump_input.py:79] Dumping scheduler output for model execution: "
                        "SchedulerOutput(scheduled_new_reqs=[], scheduled_cached_reqs=CachedRequestData(req_ids=["
                        f"{', '.join(ids)}],resumed_req_ids=set(),new_token_ids_lens=[],all_token_ids_lens={{}},"
                        f"new_block_ids=[None],num_computed_tokens={batches[pod]},num_output_tokens=[2]), "
                        f"total_num_scheduled_tokens={len(ids)}, finished_req_ids=[], preempted_req_ids=[])"
                    )
                lines += [
                    f"{stamp} ERROR {local} [core.py:700] EngineCore encountered a fatal error.",
                    f"{stamp} Traceback (most recent call last):",
                    f'{stamp}   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 690, in run',
                    f"{stamp} {error}",
                ]
                continue
            rate = 0.0 if dead else 1800.0
            lines.append(
                f"{stamp} INFO {local} [loggers.py:116] Engine 000: Avg prompt throughput: {rate * 1.3:.1f} tokens/s, "
                f"Avg generation throughput: {rate:.1f} tokens/s, Running: {0 if dead else 30} reqs, Waiting: "
                f"{30 if dead else 0} reqs, GPU KV cache usage: {0 if dead else 60}.0%, Prefix cache hit rate: 40.0%"
            )
        write_file(tmp_path / f"{pod}.log", "\n".join(lines) + "\n")
    (incident,) = analyze(tmp_path).to_json()["incidents"]
    return incident["root_cause"]


XID_79_BOOT_CLOCK = (
    "[    2.101000] nvidia: loading out-of-tree module taints kernel.\n"
    "[88211.730131] NVRM: Xid (PCI:0000:c1:00): 79, pid=4412, name=python3, GPU has fallen off the bus.\n"
)


@pytest.mark.parametrize(
    ("dmesg_of", "label"), [("gpu-2", "GPU fell off the bus (Xid 79)"), ("gpu-3", "GPU / CUDA fault")]
)
def test_a_nodes_undated_xid_names_the_gpu_fault_its_pod_saw(tmp_path, dmesg_of, label):
    # Plain `dmesg` counts seconds since boot: its Xid 79 has no place on the timeline, but the
    # node whose pod's CUDA calls failed holding one says which failure that was.
    scheduled_on(tmp_path, {"vllm-0": "gpu-1", "vllm-1": "gpu-2", "vllm-2": "gpu-3"})
    write_file(tmp_path / "nodes" / dmesg_of / "dmesg.txt", XID_79_BOOT_CLOCK)
    rc = _replicas_crashing(tmp_path, {"vllm-1": 40}, "RuntimeError: CUDA error: unspecified launch failure")
    assert (rc["status"], rc["category"], rc["label"]) == ("supported", "gpu-fault", label)
    assert rc["hosts"][0] == "gpu-2"
    dmesg = [e for e in rc["evidence"] if e["file"] == "nodes/gpu-2/dmesg.txt"]
    assert [e["line"] for e in dmesg] == ([2] if dmesg_of == "gpu-2" else [])


@pytest.mark.parametrize(("ecc", "label"), [(2, "GPU memory ECC error"), (0, "GPU / CUDA fault")])
def test_an_nvidia_smi_taken_after_the_outage_names_the_gpu_fault_it_shows(tmp_path, ecc, label):
    # The snapshot was taken 23 minutes after the crash: its volatile ECC errors are from
    # before it (since the driver loaded), so they say what the crash on that node was.

    scheduled_on(tmp_path, {"vllm-0": "gpu-1", "vllm-1": "gpu-2", "vllm-2": "gpu-3"})
    write_file(
        tmp_path / "nodes" / "gpu-2" / "nvidia-smi-q.txt",
        nvidia_smi_snapshot(
            nvidia_smi_gpu("00000000:C1:00.0", "GPU-9a1e", dram_ue=ecc, thermal="Active"),
            stamp="Sun Mar  2 08:30:00 2025",
        ),
    )
    rc = _replicas_crashing(tmp_path, {"vllm-1": 40}, "RuntimeError: CUDA error: unspecified launch failure")
    assert (rc["status"], rc["category"], rc["hosts"][0]) == ("supported", "gpu-fault", "gpu-2")
    assert rc["label"].startswith(label)  # (a GPU held down by heat explains no crash)
    said = [w for w in rc["why"] if "in a snapshot taken 08:30:00 (from then or before)" in w]
    assert len(said) == (1 if ecc else 0)


@pytest.mark.parametrize(("dmesg_of", "label"), [("gpu-2", "network link down"), ("gpu-3", "InfiniBand / RDMA")])
def test_the_kernels_link_down_seconds_before_nccls_ib_error_on_that_node_is_the_cause(tmp_path, dmesg_of, label):
    # Within the clocks' skew, the node's own report of what failed (its port went down) leads
    # the NCCL error that only saw a transfer fail, on the same node; not on another node.
    scheduled_on(tmp_path, {"vllm-0": "gpu-1", "vllm-1": "gpu-2", "vllm-2": "gpu-3"})
    write_file(
        tmp_path / "nodes" / dmesg_of / "dmesg-T.txt",
        "[Sun Mar  2 08:06:37 2025] mlx5_core 0000:1a:00.0 ibp26s0: Link down\n",
    )
    rc = _replicas_crashing(
        tmp_path,
        {"vllm-1": 40},
        "vllm-1:88:412 [1] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.0.1.12<40318> "
        "with status=12 opcode=0 len=0 vendor err 129 (Recv)",
    )
    assert (rc["status"], rc["category"], rc["hosts"][0]) == ("supported", "network", "gpu-2")
    assert rc["label"].startswith(label)


@pytest.mark.parametrize(
    ("scheduled", "pointed"),
    [
        ({"vllm-0": "gpu-1", "vllm-1": "gpu-2", "vllm-2": "gpu-3"}, "nodes/gpu-2/dmesg.txt:2)."),
        (None, "nodes/gpu-2/dmesg.txt:2) (which nodes the failing pods ran on, the logs do not say)."),
        ({"vllm-0": "gpu-1", "vllm-1": "gpu-3", "vllm-2": "gpu-4"}, None),
    ],
)
def test_an_undated_xid_on_the_node_of_a_dying_engine_is_where_an_inconclusive_verdict_points(
    tmp_path, scheduled, pointed
):
    # On the dying pod's node, or on a node of a pod the logs place nowhere (bare `kubectl
    # logs` and one node's `dmesg`); not on a node the failing pod was known not to be on.
    if scheduled:
        scheduled_on(tmp_path, scheduled)
    write_file(tmp_path / "nodes" / "gpu-2" / "dmesg.txt", XID_79_BOOT_CLOCK)
    rc = _replicas_crashing(
        tmp_path,
        {"vllm-1": 40},
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.",
    )
    assert rc["status"] == "inconclusive"
    said = "GPU fell off the bus (Xid 79) on gpu-2 (without a time: "
    assert (said + pointed in rc["missing"]) if pointed else (said not in rc["missing"])


@pytest.mark.parametrize("rtc", [True, False])
def test_an_xid_in_plain_dmesg_placed_by_its_boots_rtc_line_is_the_cause_of_the_engine_dying(tmp_path, rtc):
    # The boot's RTC line gives dmesg's seconds since boot a wall time: the Xid 79 ten seconds
    # before the engine died on that node is the cause, not a pointer of an inconclusive verdict.
    scheduled_on(tmp_path, {"vllm-0": "gpu-1", "vllm-1": "gpu-2", "vllm-2": "gpu-3"})
    boot = datetime(2025, 2, 20, 6, 0, tzinfo=UTC)
    up = (datetime(2025, 3, 2, 8, 6, 30, tzinfo=UTC) - boot).total_seconds()
    clock = f"[    1.912345] rtc_cmos 00:00: setting system clock to 2025-02-20T06:00:01 UTC ({int(boot.timestamp()) + 1})\n"
    write_file(
        tmp_path / "nodes" / "gpu-2" / "dmesg.txt",
        "[    0.000000] Linux version 6.8.0-1015-nvidia (buildd@lcy02-amd64-046) #16-Ubuntu SMP PREEMPT_DYNAMIC\n"
        + (clock if rtc else "")
        + f"[{up + 1.912345 - 1:.6f}] NVRM: Xid (PCI:0000:c1:00): 79, pid=4412, name=python3, GPU has fallen off the bus.\n",
    )
    rc = _replicas_crashing(
        tmp_path,
        {"vllm-1": 40},
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.",
    )
    if not rtc:
        assert rc["status"] == "inconclusive"
        assert "GPU fell off the bus (Xid 79) on gpu-2 (without a time" in rc["missing"]
        return
    assert (rc["status"], rc["label"], rc["hosts"]) == ("supported", "GPU fell off the bus (Xid 79)", ["gpu-2"])
    assert rc["first_seen"] == "2025-03-02T08:06:30Z"
    assert rootcause.BOOT_CLOCK_NOTE in rc["why"]


@pytest.mark.parametrize(
    ("batches", "shared"),
    [
        ({"vllm-0": [512, 29622, 88], "vllm-2": [29622, 1024]}, "each held a request of 29,622 tokens"),
        ({"vllm-0": [512, 88], "vllm-2": [1024, 4096]}, None),
    ],
)
def test_crashing_batches_that_share_a_request_size_point_at_one_request(tmp_path, batches, shared):
    # A request that crashes the replica it reaches is retried onto the next one: the crashing
    # batches of both replicas hold a request of the same length.
    rc = _replicas_crashing(
        tmp_path,
        {"vllm-0": 40, "vllm-2": 47},
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        batches,
    )
    assert rc["label"] == advice.SOFTWARE_FAULT_LABEL
    said = [w for w in rc["why"] if "each held a request" in w]
    assert (said[0] if said else None) == (
        None
        if shared is None
        else f"the batches that crashed on vllm-0, vllm-2 {shared} (vLLM's input dump): the "
        "same request, retried from one replica to the next?"
    )


@pytest.mark.parametrize(
    ("crashes", "error", "software"),
    [
        (
            {"vllm-0": 40, "vllm-1": 43, "vllm-2": 47},
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            True,
        ),
        ({"vllm-1": 43}, "RuntimeError: CUDA error: an illegal memory access was encountered", False),
        ({"vllm-0": 40, "vllm-2": 47}, "RuntimeError: CUDA error: device-side assert triggered", True),
        ({"vllm-0": 40, "vllm-2": 47}, "RuntimeError: CUDA error: unspecified launch failure", True),
        ({"vllm-0": 40, "vllm-2": 47}, "RuntimeError: CUDA error: uncorrectable ECC error encountered", False),
    ],
)
def test_the_same_kernel_fault_on_several_replicas_is_read_as_software_not_one_gpu(tmp_path, crashes, error, software):
    # GPUs do not fail together; code and inputs do (a request retried onto the next replica).
    rc = _replicas_crashing(tmp_path, crashes, error)
    assert rc["category"] == "gpu-fault" and rc["status"] == "supported"
    assert (rc["label"] == advice.SOFTWARE_FAULT_LABEL) == software
    assert (f"the same fault on {len(crashes)} pods" in rc["why"]) == software


@pytest.mark.parametrize(
    ("error", "label"),
    [
        ("RuntimeError: CUDA error: an illegal memory access was encountered", signatures.GPU_FAULT),
        (
            "RuntimeError: CUDA error: uncorrectable ECC error encountered",
            "GPU memory ECC error (Xid 48/63/64/92/94/95)",
        ),
    ],
)
def test_one_gpus_cuda_error_asks_for_the_nodes_xid_before_blaming_the_gpu(tmp_path, error, label):
    # A CUDA call that failed on one replica says nothing of what failed: the action reads the
    # node's Xid first (hardware: drain and RMA; none or a kernel's: software); an ECC error
    # names the hardware itself.
    rc = _replicas_crashing(tmp_path, {"vllm-1": 43}, error)
    assert (rc["status"], rc["label"]) == ("supported", label)
    md = write_all(analyze(tmp_path), tmp_path / "out")["postmortem"].read_text()
    (action,) = [row for row in md.splitlines() if row.endswith("| root cause |")]
    asks_for_xid = "Look up the Xid vllm-1's GPU logged then" in action and "`CUDA_LAUNCH_BLOCKING=1`" in action
    assert asks_for_xid == (label == signatures.GPU_FAULT), action
    assert "RMA the GPU" in action


@pytest.mark.parametrize(
    ("workers", "software", "parent"),
    [(4, True, ""), (1, False, ""), (4, True, "(EngineCore_DP0 pid=120) ")],
)
def test_the_same_kernel_fault_in_several_tensor_parallel_workers_is_software(tmp_path, workers, software, parent):
    # One pod, one node, TP=4: each worker process is a GPU. The engine core re-raises its
    # worker's error, which is not a second GPU. A worker forked from the engine core writes
    # its own prefix after its parent's (`parent`).
    t0 = datetime(2025, 3, 2, 8, 0, 0, tzinfo=UTC)
    lines = []
    for i in range(80):
        t = t0 + timedelta(seconds=10 * i)
        stamp, local = t.strftime("%Y-%m-%dT%H:%M:%S.000000000Z"), t.strftime("%m-%d %H:%M:%S")
        if i == 45:
            for r in range(workers):
                p = f"{stamp} {parent}(Worker_TP{r} pid={200 + r})"
                lines += [
                    f"{p} ERROR {local} [multiproc_executor.py:671] WorkerProc hit an exception.",
                    f"{p} Traceback (most recent call last):",
                    f"{p} RuntimeError: CUDA error: an illegal memory access was encountered",
                ]
            p = f"{stamp} (EngineCore_DP0 pid=120)"
            lines += [
                f"{p} ERROR {local} [core.py:700] EngineCore encountered a fatal error.",
                f"{p} Traceback (most recent call last):",
                f"{p} RuntimeError: CUDA error: an illegal memory access was encountered",
            ]
            continue
        rate = 1800.0 if i < 45 else 0.0
        lines.append(
            f"{stamp} (APIServer pid=1) INFO {local} [loggers.py:116] Engine 000: Avg prompt throughput: "
            f"{rate * 1.3:.1f} tokens/s, Avg generation throughput: {rate:.1f} tokens/s, Running: {30 if rate else 0} "
            f"reqs, Waiting: {0 if rate else 30} reqs, GPU KV cache usage: 60.0%"
        )
    write_file(tmp_path / "vllm-0.log", "\n".join(lines) + "\n")
    (incident,) = analyze(tmp_path).to_json()["incidents"]
    rc = incident["root_cause"]
    assert rc["category"] == "gpu-fault" and rc["status"] == "supported"
    assert (rc["label"] == advice.SOFTWARE_FAULT_LABEL) == software
    assert ("the same fault on 4 GPU workers" in rc["why"]) == software


@pytest.mark.parametrize("oom_logged", [True, False])
def test_the_drivers_clean_up_after_a_process_death_is_not_blamed_for_it(tmp_path, oom_logged):
    # The kernel kills the engine for memory; the driver then tears down its GPU channels
    # (Xid 45). The Xid is the death's echo, not its cause, whether or not the kill was collected.
    t0 = datetime(2025, 3, 2, 8, 0, 0, tzinfo=UTC)
    stats = []
    for i in range(80):
        t, rate = t0 + timedelta(seconds=10 * i), 1800.0 if i < 45 else 0.0
        stats.append(
            f"{t:%Y-%m-%dT%H:%M:%S}.000000000Z INFO {t:%m-%d %H:%M:%S} [loggers.py:116] Engine 000: Avg prompt "
            f"throughput: {rate * 1.3:.1f} tokens/s, Avg generation throughput: {rate:.1f} tokens/s, Running: "
            f"{30 if rate else 0} reqs, Waiting: {0 if rate else 30} reqs, GPU KV cache usage: 60.0%"
        )
    write_file(tmp_path / "vllm-0.log", "\n".join(stats) + "\n")
    t = t0 + timedelta(seconds=449)
    oom = (
        f"{t:%b %d %H:%M:%S} gpu-node-1 kernel: Memory cgroup out of memory: Killed process 4121 (python3) "
        "total-vm:98765432kB, anon-rss:62914560kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:123456kB "
        "oom_score_adj:-997\n"
    )
    xid = f"{t:%b %d %H:%M:%S} gpu-node-1 kernel: NVRM: Xid (PCI:0000:3b:00): 45, pid=4121, name=python3, Ch 00000010\n"
    write_file(tmp_path / "gpu-node-1-kern.log", (oom if oom_logged else "") + xid)
    (incident,) = analyze(tmp_path, year=2025).to_json()["incidents"]
    rc = incident["root_cause"]
    if oom_logged:
        assert "OOM" in rc["label"]
    else:
        assert rc["status"] == "inconclusive"


def test_ranks_missing_from_a_timed_out_collective_are_named_as_the_logs_to_get(tmp_path):
    write_file(
        tmp_path / "ranks.log",
        "trainer-3:41277:41390 [0] NCCL INFO comm 0x7f3a2c004e10 rank 0 nranks 8 cudaDev 0 nvmlDev 0 busId 18000 commId 0x1c9e04d7b35a6f21 - Init COMPLETE\n"
        + "".join(
            f"[rank{r}]:[E0523 09:41:17.20417{r}093 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=4182, OpType=ALLGATHER, NumelIn=65536, NumelOut=524288, Timeout(ms)=600000) ran for 600031 milliseconds before timing out.\n"
            for r in (3, 0, 7, 1, 4, 2, 6)
        ),
    )
    rc = analyze(tmp_path, year=2024).to_json()["incidents"][0]["root_cause"]
    assert rc["status"] == "inconclusive"
    assert rc["missing"].startswith(
        "Ranks 0-4, 6, 7 of 8 timed out waiting in ALLGATHER SeqNum=4182; rank 5 never reported it"
    )


def test_symptoms_only_with_a_dead_worker_name_it_and_its_signal(tmp_path):
    # torchrun's elastic agent reports the child's death before the surviving ranks time out.
    write_file(
        tmp_path / "torchrun.log",
        "[2024-06-11 09:40:02,118] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -9) local_rank: 3 (pid: 51877) of binary: /opt/venv/bin/python3\n"
        "[rank0]:[E611 09:50:02.450127001 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4410, OpType=ALLREDUCE, NumelIn=8192, NumelOut=8192, Timeout(ms)=600000) ran for 600071 milliseconds before timing out.\n"
        "[rank1]:[E611 09:50:02.450931552 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4410, OpType=ALLREDUCE, NumelIn=8192, NumelOut=8192, Timeout(ms)=600000) ran for 600064 milliseconds before timing out.\n",
    )
    rc = analyze(tmp_path).to_json()["incidents"][0]["root_cause"]
    assert rc["status"] == "inconclusive"
    assert rc["missing"].startswith(
        "The first failure logged is worker local rank 3 (pid 51877) dying with exit code -9"
    )
    assert "OOM killer" in rc["missing"]


def test_first_process_death_reads_vllm_multiproc_and_shell_exit_codes():
    from datetime import datetime

    from forensics.diagnosis.records import Evidence
    from forensics.diagnosis.rootcause import Hypothesis, first_process_death

    def hyp(text, seen):
        return Hypothesis(
            category="engine",
            kind="symptom",
            layer=5,
            label="engine died",
            template=text,
            template_id="x",
            first_seen=seen,
            hosts=[],
            count=1,
            evidence=[Evidence.quote("engine.log", 1, text)],
        )

    later = hyp("Worker VllmWorkerProcess pid 2210 died, exit code: -11", datetime(2025, 1, 1, 10, 5))
    first = hyp("Worker VllmWorkerProcess pid 2209 died, exit code: 134", datetime(2025, 1, 1, 10, 0))
    said = first_process_death([later, first])
    assert said.startswith("The first failure logged is worker VllmWorkerProcess (pid 2209) dying with exit code 134")
    assert "128 + 6, SIGABRT" in said
    assert first_process_death([hyp("EngineCore encountered a fatal error.", None)]) is None


def test_a_native_crash_before_the_engine_died_is_named_with_its_signal_and_where(tmp_path):
    # Python's faulthandler in an EngineCore, under `kubectl logs --timestamps`; the API server
    # then reports the engine gone. Only symptoms: the crash is what to read first.
    stamp = "2025-03-02T08:10:00.000000000Z (EngineCore_DP0 pid=90) "
    crash = [
        "Fatal Python error: Segmentation fault",
        "",
        "Thread 0x00007f3a1bfff640 (most recent call first):",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 1502 in execute_model',
        "",
        "Current thread 0x00007f3a2c8ff740 (most recent call first):",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 237 in step',
        "",
        "Extension modules: numpy.core._multiarray_umath, torch._C, vllm._C (total: 3)",
    ]
    write_file(
        tmp_path / "vllm-0.log",
        "".join(stamp + line + "\n" for line in crash)
        + "2025-03-02T08:10:01.000000000Z (APIServer pid=1) ERROR 03-02 08:10:01 [core_client.py:566] Engine core "
        "proc EngineCore_DP0 died unexpectedly, shutting down client.\n",
    )
    report = analyze(tmp_path).to_json()
    crash_events = report["incidents"][0]["hypotheses"]
    assert {h["template"] for h in crash_events} >= {"Fatal Python error: Segmentation fault"}
    rc = report["incidents"][0]["root_cause"]
    assert rc["status"] == "inconclusive"
    assert rc["missing"].startswith(
        "The first failure logged is a process crashing in native code on vllm-0 (vllm-0.log:1): "
        "`Fatal Python error: Segmentation fault` (SIGSEGV"
    )


def test_a_pod_that_cannot_be_scheduled_for_lack_of_gpus_is_a_capacity_fault(tmp_path):
    write_file(
        tmp_path / "scheduler.log",
        'I0907 14:02:11.804512       1 schedule_one.go:1050] "Unable to schedule pod; no fit; waiting" pod="inference/llama-8b-6c7d9f8b5-x2k4p" err="0/6 nodes are available: 2 node(s) had untolerated taint {gpu: reserved}, 4 Insufficient nvidia.com/gpu. preemption: 0/6 nodes are available: 6 No preemption victims found for incoming pod."\n'
        'I0907 14:02:11.804637       1 schedule_one.go:1123] "Updating pod condition" pod="inference/llama-8b-6c7d9f8b5-x2k4p" conditionType=PodScheduled conditionStatus=False conditionReason="Unschedulable"\n',
    )
    d = analyze(tmp_path, year=2025).to_json()
    rc = d["incidents"][0]["root_cause"]
    assert rc["status"] == "supported" and rc["category"] == "capacity"
    assert "Insufficient nvidia.com/gpu" in rc["template"]
    md = (write_all(analyze(tmp_path, year=2025), tmp_path / "out")["postmortem"]).read_text()
    assert "Free or add GPUs for the pending pods" in md


def test_a_liveness_probe_answered_404_is_a_misconfigured_probe_not_a_sick_server(tmp_path):
    write_file(
        tmp_path / "describe.txt",
        "Events:\n"
        "  Type     Reason     Age                From     Message\n"
        "  ----     ------     ----               ----     -------\n"
        "  Normal   Started    14m                kubelet  Started container server\n"
        "  Warning  Unhealthy  12m (x3 over 13m)  kubelet  Liveness probe failed: HTTP probe failed with statuscode: 404\n"
        "  Normal   Killing    12m                kubelet  Container server failed liveness probe, will be restarted\n"
        "  Warning  BackOff    2m (x31 over 10m)  kubelet  Back-off restarting failed container server in pod qwen-7b-5d9f7c6b8-m2x8z\n",
    )
    report = analyze(tmp_path)
    rc = report.to_json()["incidents"][0]["root_cause"]
    assert rc["status"] == "supported" and rc["label"].startswith("health probe misconfigured")
    md = write_all(report, tmp_path / "out")["postmortem"].read_text()
    assert "Point the pod's liveness/readiness probes at a path the server serves" in md


def test_an_xid_in_the_node_journal_is_the_cause_of_the_engines_cuda_error_and_the_timeouts(tmp_path):
    import json as _json
    import warnings
    from datetime import UTC, datetime, timedelta

    t0 = datetime(2025, 6, 11, 10, 0, tzinfo=UTC)
    lines = []
    for i in range(120):
        t = t0 + timedelta(seconds=10 * i)
        gen = 5200.0 if i < 60 else 0.0  # flat before, flat zero after: scipy's precision warning case
        stamp = t.strftime("%Y-%m-%dT%H:%M:%S.000000000Z")
        lines.append(
            f"{stamp} (APIServer pid=1) INFO {t:%m-%d %H:%M:%S} [loggers.py:123] Engine 000: Avg prompt throughput: "
            f"{gen * 2:.1f} tokens/s, Avg generation throughput: {gen:.1f} tokens/s, Running: {40 if i < 60 else 0} reqs, "
            f"Waiting: {0 if i < 60 else 12} reqs, GPU KV cache usage: 55.0%, Prefix cache hit rate: 20.0%"
        )
        if i == 61:
            lines.append(
                f"{stamp} (EngineCore_DP0 pid=88) ERROR {t:%m-%d %H:%M:%S} [core.py:720] EngineCore encountered a fatal error."
            )
            lines.append(
                f"{stamp} (EngineCore_DP0 pid=88) ERROR {t:%m-%d %H:%M:%S} [core.py:720] RuntimeError: CUDA error: unspecified launch failure"
            )
        if i == 90:
            lines.append(
                f"{stamp} [rank0]:[E611 {t:%H:%M:%S}.000000000 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective "
                "operation timeout: WorkNCCL(SeqNum=99, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600000 milliseconds before timing out."
            )
    write_file(tmp_path / "pods" / "llama-70b-6f7d8c9b5-q2w4e.log", "\n".join(lines) + "\n")
    xid = t0 + timedelta(seconds=598)
    entry = {
        "__REALTIME_TIMESTAMP": str(int(xid.timestamp() * 1_000_000)),
        "_HOSTNAME": "node-5",
        "SYSLOG_IDENTIFIER": "kernel",
        "MESSAGE": "NVRM: Xid (PCI:0000:9b:00): 79, pid=88, name=python3, GPU has fallen off the bus.",
    }
    write_file(tmp_path / "node-5" / "kernel.json", _json.dumps(entry) + "\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        d = analyze(tmp_path).to_json()
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]
    inc = d["incidents"][0]
    rc = inc["root_cause"]
    assert (rc["status"], rc["category"], rc["hosts"][0]) == ("supported", "gpu-fault", "node-5")
    assert rc["evidence"][0]["file"] == "node-5/kernel.json"
    cuda = [h for h in inc["hypotheses"] if h["template"].startswith("RuntimeError: CUDA error: unspecified")]
    assert [h["role"] for h in cuda] == ["symptom"]


def test_an_engine_that_hung_before_the_watchdog_fired_is_said_to_have_hung(tmp_path):
    write_file(
        tmp_path / "vllm-tp.log",
        "INFO 07-09 02:00:05 metrics.py:406] Avg prompt throughput: 310.0 tokens/s, Avg generation throughput: 95.2 tokens/s, Running: 4 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 12.0%, CPU KV cache usage: 0.0%.\n"
        "INFO 07-09 02:00:15 metrics.py:406] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 3 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 12.1%, CPU KV cache usage: 0.0%.\n"
        "INFO 07-09 02:04:40 metrics.py:406] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 3 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 12.1%, CPU KV cache usage: 0.0%.\n"
        "[rank1]:[E709 02:10:15.000311902 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7712, OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, Timeout(ms)=600000) ran for 600047 milliseconds before timing out.\n",
    )
    rc = analyze(tmp_path, year=2025).to_json()["incidents"][0]["root_cause"]
    assert rc["status"] == "inconclusive"
    assert rc["missing"].startswith(
        "The engine hung before the timeouts: from 2025-07-09T02:00:15Z on vllm-tp, 3 request(s) running and 0 tokens/s "
        "for 2 metrics samples (vllm-tp.log:2)"
    )


def test_an_engine_hung_with_no_error_logged_is_said_to_have_hung_and_what_to_collect(tmp_path):
    # Logs collected before the watchdog fired: requests running at 0 tokens/s, nothing else.
    lines = []
    for i in range(60):
        t = datetime(2025, 7, 9, 2, 0, tzinfo=UTC) + timedelta(seconds=10 * i)
        gen = 95.0 if i < 30 else 0.0
        lines.append(
            f"{t:%Y-%m-%dT%H:%M:%S}.000000000Z INFO {t:%m-%d %H:%M:%S} [loggers.py:123] Engine 000: Avg prompt "
            f"throughput: {gen * 3:.1f} tokens/s, Avg generation throughput: {gen:.1f} tokens/s, Running: 3 reqs, "
            "Waiting: 0 reqs, GPU KV cache usage: 12.0%, Prefix cache hit rate: 0.0%\n"
        )
    write_file(tmp_path / "vllm-tp.log", "".join(lines))
    rc = analyze(tmp_path).to_json()["incidents"][0]["root_cause"]
    assert rc["status"] == "inconclusive"
    assert rc["missing"].startswith(
        "The engine hung: from 2025-07-09T02:05:00Z on vllm-tp, 3 request(s) running and 0 tokens/s for 30 metrics "
        "samples (vllm-tp.log:31) with no error logged"
    )
    assert "py-spy dump" in rc["missing"]


def _envoy_access(t: datetime, i: int, up: bool) -> list[str]:
    flags = "200 - via_upstream" if up else "503 UH no_healthy_upstream"
    return [
        f'[{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond // 1000:03d}Z] "POST /v1/completions HTTP/1.1" {flags} - "-" '
        f'310 912 40 - "10.0.0.7" "python-requests/2.31" "req-{i}" "vllm.svc:8000" "10.0.1.5:8000"\n'
    ]


def _nginx_access(t: datetime, i: int, up: bool) -> list[str]:
    # ingress-nginx's `upstreaminfo` format; its error log goes to the same stream.
    stamp = f"{t:%d/%b/%Y:%H:%M:%S} +0000"
    if up:
        return [
            f'10.0.0.7 - - [{stamp}] "POST /v1/completions HTTP/1.1" 200 912 "-" "python-requests/2.31" 310 0.040 '
            f"[serving-vllm-8000] [] 10.0.1.5:8000 912 0.040 200 req-{i}\n"
        ]
    lost = (
        [
            f"{t:%Y/%m/%d %H:%M:%S} [error] 31#31: *{i} no live upstreams while connecting to upstream, "
            'client: 10.0.0.7, server: llm.example.com, request: "POST /v1/completions HTTP/1.1", '
            'upstream: "http://serving-vllm-8000/v1/completions", host: "llm.example.com"\n'
        ]
        if i % 40 == 0
        else []
    )
    return lost + [
        f'10.0.0.7 - - [{stamp}] "POST /v1/completions HTTP/1.1" 503 190 "-" "python-requests/2.31" 310 0.000 '
        f"[serving-vllm-8000] [] - - - - req-{i}\n"
    ]


OTHER_SERVICE = {  # a request of another service the same gateway fronts, at minute `m`
    "envoy": lambda m: (
        f'[2025-08-01T10:{m:02d}:30.000Z] "GET /api/profile HTTP/1.1" 200 - via_upstream - "-" 0 80 3 - "-" '
        f'"curl" "p-{m}" "web.svc" "10.0.2.9:80"\n'
    ),
    "nginx": lambda m: (
        f'10.0.2.9 - - [01/Aug/2025:10:{m:02d}:30 +0000] "GET /api/profile HTTP/1.1" 200 80 "-" "curl" 0 '
        f"0.003 [web-80] [] 10.0.2.9:80 80 0.003 200 p-{m}\n"
    ),
}


@pytest.mark.parametrize(("gateway_kind", "access"), [("envoy", _envoy_access), ("nginx", _nginx_access)])
def test_the_gateways_503s_count_as_the_impact_when_the_pods_are_gone(tmp_path, gateway_kind, access):
    # The pods stop answering at 10:15 (no more access lines of their own); only the gateway
    # sees the clients' requests fail. Its lines are counted, never added to the pods' own.
    start = datetime(2025, 8, 1, 10, 0, tzinfo=UTC)
    gateway, server = [], []
    for i in range(0, 1800 * 4):
        t = start + timedelta(seconds=i / 4)
        up = t < start + timedelta(minutes=15)
        gateway += access(t, i, up)
        if up:
            server.append(
                f"{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond:06d}000Z (APIServer pid=7) INFO:     10.0.1.9:51234 - "
                '"POST /v1/completions HTTP/1.1" 200 OK\n'
            )
    # (the same gateway fronts another service, whose requests are not the model's)
    gateway += [OTHER_SERVICE[gateway_kind](m) for m in range(30)]
    write_file(tmp_path / "ingress-gateway.log", "".join(sorted(gateway)))
    write_file(tmp_path / "vllm-0.log", "".join(server))
    inc = analyze(tmp_path).to_json()["incidents"][0]
    imp = inc["impact"]
    assert inc["start"].startswith("2025-08-01T10:15")
    assert (imp["http_from"], imp["http_requests"], imp["http_5xx"]) == ("gateway access log", 3600, 3600)
    assert imp["baseline_per_s"] == pytest.approx(4.0, rel=0.05)  # (the gateway's requests, not twice them)
    labels = {h["label"] for h in inc["hypotheses"] if h["role"] == "symptom"}
    assert any("no healthy backend" in label for label in labels)


def test_an_api_server_out_of_file_descriptors_is_the_cause_and_gets_an_open_files_alert(tmp_path):
    import shutil
    import subprocess

    import yaml

    start = datetime(2025, 3, 2, 8, 0, tzinfo=UTC)
    failed = start + timedelta(minutes=19, seconds=56)
    stamp = f"{failed:%Y-%m-%dT%H:%M:%S}.000000000Z "
    asyncio_error = [
        "socket.accept() out of system resource",
        "socket: <asyncio.TransportSocket fd=9, family=2, type=1, proto=6, laddr=('0.0.0.0', 8000)>",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.12/asyncio/selector_events.py", line 178, in _accept_connection',
        "OSError: [Errno 24] Too many open files",
    ]
    write_file(
        tmp_path / "logs" / "vllm-0.log",
        metrics_lines(start, 40, drop_at=20) + "".join(stamp + line + "\n" for line in asyncio_error),
    )
    out = write_all(analyze(tmp_path / "logs"), tmp_path / "out")
    (inc,) = json.loads(out["analysis"].read_text())["incidents"]
    assert (inc["root_cause"]["status"], inc["root_cause"]["label"]) == ("supported", signatures.FD_EXHAUSTED)
    assert inc["root_cause"]["evidence"][0]["text"].startswith("socket.accept() out of system resource")
    rules = yaml.safe_load(out["alerts"].read_text())["spec"]["groups"][0]["rules"]
    exprs = {r["alert"]: r["expr"] for r in rules}
    assert exprs["ProcessOpenFilesNearLimit"] == "max by (namespace, pod) (process_open_fds / process_max_fds) > 0.8"
    promtool = shutil.which("promtool")
    if promtool:  # (CI installs it: the fixture's open files at the limit fire the alert)
        d = tmp_path / "out"
        run = subprocess.run([promtool, "test", "rules", "alerts_test.yaml"], cwd=d, capture_output=True, text=True)
        assert run.returncode == 0 and "SUCCESS" in run.stdout, run.stdout + run.stderr


def _kv_tell_then_drop(tmp_path, *, fault: str | None) -> None:
    """Two V1 engines: 20 min healthy (KV 40-60 %, a few waiting), then KV at 100 % with nothing
    waiting for 6 min (the tell), then generation falls to 0 with requests running; `fault`, when
    given, is the EngineCore's exception a minute into the fall."""
    start = datetime(2026, 3, 3, 2, 0, tzinfo=UTC)
    for pod in ("llm-0", "llm-1"):
        lines = []
        for i in range(40 * 6):
            t = start + timedelta(seconds=10 * i)
            minute = i / 6
            kv, waiting, gen = (45.0 + (i % 15), 2 + i % 3, 2300.0 + (i % 9) * 15)
            if minute >= 20:
                kv, waiting = 100.0, 0
            if minute >= 26:
                gen = 0.0
            lines.append(
                f"{t:%Y-%m-%dT%H:%M:%S}.000000000Z (APIServer pid=7) INFO {t:%m-%d %H:%M:%S} [loggers.py:123] Engine "
                f"000: Avg prompt throughput: {gen * 0.6:.1f} tokens/s, Avg generation throughput: {gen:.1f} tokens/s, "
                f"Running: 40 reqs, Waiting: {waiting} reqs, GPU KV cache usage: {kv:.1f}%, Prefix cache hit rate: 31.0%\n"
            )
        if fault and pod == "llm-0":
            t = start + timedelta(minutes=27)
            head = f"{t:%Y-%m-%dT%H:%M:%S}.000000000Z (EngineCore_DP0 pid=90) ERROR {t:%m-%d %H:%M:%S} [core.py:720] "
            lines[27 * 6 : 27 * 6] = [
                head + "EngineCore encountered a fatal error.\n",
                head + "Traceback (most recent call last):\n",
                head
                + '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/sample/sampler.py", line 112, in sample\n',
                head + "    random_sampled = self.topk_topp_sampler(\n",
                head + fault + "\n",
            ]
        write_file(tmp_path / "pods" / f"{pod}.log", "".join(lines))


def test_nan_probabilities_after_the_kv_full_empty_queue_tell_point_at_the_kv_cache(tmp_path):
    _kv_tell_then_drop(tmp_path, fault="RuntimeError: probability tensor contains either `inf`, `nan` or element < 0")
    inc = analyze(tmp_path).to_json()["incidents"][0]
    rc = inc["root_cause"]
    assert (rc["status"], rc["category"]) == ("supported", "kv-cache")
    assert rc["first_seen"] == "2026-03-03T02:20:00Z"
    assert any("probability tensor" in w or "stale KV read" in w for w in rc["why"])
    nan = next(h for h in inc["hypotheses"] if "probability tensor" in h["template"])
    assert nan["role"] == "symptom"


def test_the_tell_alone_before_a_drop_names_the_kv_cache_from_the_metrics(tmp_path):
    _kv_tell_then_drop(tmp_path, fault=None)
    rc = analyze(tmp_path).to_json()["incidents"][0]["root_cause"]
    assert (rc["status"], rc["category"]) == ("supported", "kv-cache")
    assert any("read from the metrics alone" in w for w in rc["why"])


def test_sglangs_kv_pool_leak_is_a_kv_cache_fault(tmp_path):
    leak = (
        "[2026-03-03 02:27:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2011, in run_scheduler_process\n'
        "    scheduler.event_loop_overlap()\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1402, in check_memory\n'
        "    raise ValueError(msg)\n"
        "ValueError: token_to_kv_pool_allocator memory leak detected! available_size=1837, protected_size=0, "
        "self.max_total_num_tokens=412816\n"
    )
    write_file(tmp_path / "sglang.log", leak)
    rc = analyze(tmp_path).to_json()["incidents"][0]["root_cause"]
    assert (rc["status"], rc["category"]) == ("supported", "kv-cache")
    assert rc["label"].startswith("SGLang's KV pool lost track of slots")


def test_a_warning_that_names_a_remote_peer_is_evidence_about_the_link_not_against_that_peer(tmp_path):
    # gpu-a's NCCL says its IB completion from gpu-c's address failed; gpu-c logged nothing.
    # The verdict is about gpu-a's side of the link, where the error was seen: gpu-c's name
    # or address in the message does not make it a host of the cause.
    write_file(
        tmp_path / "nodes" / "gpu-a" / "worker.log",
        "2025-03-02T10:00:04.000000000Z gpu-a:311:402 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got "
        "completion from peer 10.0.3.5<44412> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid "
        "fe80::1 remoteGids fe80::3 hca mlx5_1\n",
    )
    write_file(
        tmp_path / "nodes" / "gpu-c" / "worker.log",
        "2025-03-02T09:59:00.000000000Z gpu-c:17:17 [0] NCCL INFO Bootstrap : Using ib0:10.0.3.5<0>\n",
    )
    (inc,) = analyze(tmp_path).to_json()["incidents"]
    rc = inc["root_cause"]
    assert rc["category"] == "network" and "gpu-a" in rc["hosts"]
    assert not any(h in ("gpu-c", "10.0.3.5") for h in rc["hosts"])
