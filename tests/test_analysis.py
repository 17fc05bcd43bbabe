"""Timeline and root cause: each sample scenario against its ground truth, and partial logs."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forensics import analyze
from forensics.diagnosis import advice, rootcause, signatures
from forensics.diagnosis.signatures import SIGNATURES
from forensics.report.postmortem import write_all
from tests.conftest import DATA
from tests.conftest import write as write_file

SAMPLES = Path(__file__).parent.parent / "samples"
FAULT_SCENARIOS = ["cache-corruption", "nccl-network", "gpu-oom", "node-failure", "kv-pressure", "pd-transfer"]


@pytest.fixture(scope="module")
def analyses() -> dict[str, dict]:
    return {name: analyze(SAMPLES / name).to_json() for name in [*FAULT_SCENARIOS, "healthy"]}


def _truth(name: str) -> dict:
    return json.loads((SAMPLES / name / "ground_truth.json").read_text())


@pytest.mark.parametrize("name", FAULT_SCENARIOS)
def test_root_cause_category_and_host_match_the_ground_truth(analyses, name):
    truth = _truth(name)["root_cause"]
    incidents = analyses[name]["incidents"]
    assert len(incidents) == 1, [i["start"] for i in incidents]
    rc = incidents[0]["root_cause"]
    assert rc["status"] == "supported" and rc["confidence"] >= 0.5
    assert rc["category"] == truth["category"]
    if truth["host"]:
        assert rc["hosts"][0] == truth["host"]


@pytest.mark.parametrize("name", FAULT_SCENARIOS)
def test_incident_window_covers_the_true_impact_start(analyses, name):
    from datetime import datetime, timedelta

    truth = _truth(name)["impact"]
    inc = analyses[name]["incidents"][0]
    start = datetime.fromisoformat(inc["start"])
    true_start = datetime.fromisoformat(truth["start"])
    assert abs(start - true_start) <= timedelta(minutes=2)


def test_healthy_day_has_no_incident(analyses):
    assert analyses["healthy"]["incidents"] == []


def test_nccl_watchdog_timeouts_and_pod_restarts_are_ranked_as_symptoms_in_cache_corruption(analyses):
    inc = analyses["cache-corruption"]["incidents"][0]
    roles = {h["template"]: h["role"] for h in inc["hypotheses"]}
    watchdog = [r for t, r in roles.items() if "Watchdog caught collective operation timeout" in t]
    restarts = [r for t, r in roles.items() if t.startswith(("BackOff:", "Killing:", "Unhealthy:"))]
    assert watchdog == ["symptom"] and restarts and set(restarts) == {"symptom"}
    assert inc["hypotheses"][0]["role"] == "root_cause" and inc["hypotheses"][0]["category"] == "kv-cache"


def test_cache_corruption_reports_the_tell_the_trigger_the_recurrence_and_the_fix(analyses):
    inc = analyses["cache-corruption"]["incidents"][0]
    assert inc["tell"]["kind"] == "kv-full-empty-queue" and inc["tell"]["start"] < inc["root_cause"]["first_seen"]
    assert inc["trigger"]["kind"] == "traffic surge" and inc["trigger"]["ratio"] > 1.25
    assert len(inc["impact"]["partial_recoveries"]) >= 2
    assert inc["resolution"]["kind"] == "rollout"
    assert any("evictfix" in d["text"] for d in inc["resolution"]["details"])
    # The last restart had brought throughput back (08:45:30) before the fix rolled out (08:51:30).
    assert inc["resolution"]["after_recovery"] is True and inc["resolution"]["recovered"] < inc["resolution"]["ts"]
    assert any("recurs" in w for w in inc["root_cause"]["why"])
    assert inc["impact"]["http_5xx"] > 0 and inc["min_tokens_per_s"] == 0.0
    assert inc["impact"]["http_requests"] > inc["impact"]["http_5xx"]


def test_a_saturation_names_the_same_peak_queue_in_its_reasons_as_in_its_impact(analyses):
    inc = analyses["kv-pressure"]["incidents"][0]
    peak = round(inc["impact"]["peak_waiting"])
    assert f"with {peak:,} requests waiting" in inc["root_cause"]["why"][0]


def test_evidence_points_at_the_real_file_and_line(analyses):
    ev = analyses["cache-corruption"]["incidents"][0]["root_cause"]["evidence"][0]
    line = (SAMPLES / "cache-corruption" / ev["file"]).read_text().splitlines()[ev["line"] - 1]
    assert "Cache corruption detected in block" in line and ev["text"].split("\n")[0] in line


def test_clock_offsets_recover_the_generated_node_skew(analyses):
    truth = _truth("cache-corruption")["clock_skew_s"]
    got = analyses["cache-corruption"]["clock_offsets"]
    assert set(got) == set(truth)
    for node, skew in truth.items():
        assert abs(got[node] - skew) < 1.2, (node, got[node], skew)


def test_analysis_json_has_the_contract_fields(analyses):
    d = analyses["cache-corruption"]
    assert {"files", "lines", "parsed", "unparsed", "skipped"} <= set(d["input"])
    inc = d["incidents"][0]
    assert {
        "start",
        "end",
        "baseline_tokens_per_s",
        "min_tokens_per_s",
        "root_cause",
        "hypotheses",
        "timeline",
        "clock_offsets",
    } <= set(inc)
    assert {"status", "confidence", "category", "template", "template_id", "hosts", "first_seen", "evidence"} <= set(
        inc["root_cause"]
    )
    h = inc["hypotheses"][0]
    assert {
        "rank",
        "role",
        "category",
        "template",
        "template_id",
        "score",
        "first_seen",
        "hosts",
        "count",
        "why",
    } <= set(h)
    assert {"ts", "host", "source", "template_id", "summary", "file", "line"} <= set(inc["timeline"][0])
    assert [x["ts"] for x in inc["timeline"]] == sorted(x["ts"] for x in inc["timeline"])


def test_the_same_logs_give_byte_identical_analysis(tmp_path):
    a = write_all(analyze(SAMPLES / "gpu-oom"), tmp_path / "a")["analysis"].read_bytes()
    b = write_all(analyze(SAMPLES / "gpu-oom"), tmp_path / "b")["analysis"].read_bytes()
    assert a == b


# --- partial logs ----------------------------------------------------------------------


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


def test_cli_analyze_prints_the_verdict_and_writes_analysis_json(tmp_path):
    import subprocess
    import sys

    p = subprocess.run(
        [sys.executable, "-m", "forensics", "analyze", str(SAMPLES / "cache-corruption"), "--out", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        env={"COLUMNS": "200", "PATH": ""},
    )
    assert p.returncode == 0, p.stderr
    assert "root cause supported" in p.stdout and "kv-cache" in p.stdout and "symptom: collective-timeout" in p.stdout
    assert (
        json.loads((tmp_path / "r" / "analysis.json").read_text())["incidents"][0]["root_cause"]["category"]
        == "kv-cache"
    )


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


_VLLM_TEXT = re.compile(
    r"^(?P<ts>\S+) (?P<pre>\((?P<proc>\w+) pid=(?P<pid>\d+)\) )?(?P<hdr>(?P<level>INFO|WARNING|ERROR) "
    r"\d\d-\d\d (?P<t>\d\d:\d\d:\d\d) \[(?P<file>[\w./]+)\.py:\d+\]) (?P<msg>.*)$"
)


def _as_vllm_json_logs(text: str) -> str:
    """kubectl-stamped vLLM text lines as vLLM's JSON formatter writes them: one record per log
    record (the lines of a message, which repeat its header, in one), behind the process
    prefix, the time local and to the second; any other line as it was."""
    out: list[str | list] = []
    for line in text.splitlines():
        m = _VLLM_TEXT.match(line)
        if m is None:
            out.append(line)
            continue
        last = out[-1] if out else None
        if isinstance(last, list) and last[0] == (m["pre"], m["hdr"]):
            last[2]["message"] += "\n" + m["msg"]
            continue
        record = {
            "asctime": f"{m['ts'][:10]} {m['t']},000",
            "levelname": m["level"],
            "name": "vllm." + m["file"].replace("/", "."),
            "process": int(m["pid"] or 1),
            "message": m["msg"],
            "vllm_process_name": m["proc"] or "MainProcess",
        }
        out.append([(m["pre"], m["hdr"]), f"{m['ts']} {m['pre'] or ''}", record])
    return "".join((e if isinstance(e, str) else e[1] + json.dumps(e[2])) + "\n" for e in out)


def test_a_deployment_logging_json_gets_the_root_cause_and_window_its_text_logs_give(tmp_path, analyses):
    # The same outage, its engines logging with `--logging-config.formatter json`: the metrics,
    # the corruption and the symptoms come from the records, and the verdict is the text logs'.
    import shutil

    shutil.copytree(SAMPLES / "cache-corruption", tmp_path / "logs")
    for f in (tmp_path / "logs" / "kubectl-logs").glob("*.log"):
        f.write_text(_as_vllm_json_logs(f.read_text()))
    assert '{"asctime"' in (tmp_path / "logs" / "kubectl-logs" / "llama-70b-7d9c5b8f6-t2q8j.previous-0.log").read_text()
    got = analyze(tmp_path / "logs").to_json()
    want = analyses["cache-corruption"]
    assert got["input"]["unparsed"] == want["input"]["unparsed"] == 0
    assert len(got["incidents"]) == 1
    inc, text = got["incidents"][0], want["incidents"][0]
    assert (inc["start"], inc["baseline_tokens_per_s"]) == (text["start"], text["baseline_tokens_per_s"])
    keys = ("status", "category", "template", "hosts", "first_seen")
    assert {k: inc["root_cause"][k] for k in keys} == {k: text["root_cause"][k] for k in keys}


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


@pytest.mark.parametrize(
    ("line", "exception", "category", "kind"),
    [
        ("transport/nvls.cc:212 NCCL WARN Cuda failure 101 'invalid device ordinal'", None, "gpu-fault", "fault"),
        ("include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'", None, "gpu-memory", "fault"),
        ("include/alloc.h:166 NCCL WARN Cuda failure 2 'out of memory'", None, "gpu-memory", "fault"),
        ("Traceback (most recent call last):", "ncclInternalError: Internal check failed.", "other", "fault"),
        (
            "Traceback (most recent call last):",
            "ncclSystemError: System call (e.g. socket, malloc) failed.",
            "network",
            "fault",
        ),
        ("Last State: Terminated (OOMKilled, exit code 137 SIGKILL) container vllm", None, "pod-lifecycle", "fault"),
        (
            "pod vllm-0 CrashLoopBackOff: ready 0/1, 5 restarts (kubectl get pods, age 13m)",
            None,
            "pod-lifecycle",
            "symptom",
        ),
        ("NodeNotReady: node gpu-node-3 is NotReady (kubectl get nodes)", None, "node", "fault"),
        (
            "[PG ID 0 PG GUID 0(default_pg) Rank 0] Received a dump signal due to a collective timeout from rank 5 and we will try our best to dump the debug info.",
            None,
            "collective-timeout",
            "symptom",
        ),
        ("failed (exitcode: -6) local_rank: 1 (pid: 7731) of binary: /usr/bin/python3", None, "engine", "symptom"),
        ("FailedScheduling: 0/2 nodes are available: 2 Insufficient amd.com/gpu.", None, "capacity", "fault"),
        ("Unhealthy: Liveness probe failed: HTTP probe failed with statuscode: 404", None, "pod-lifecycle", "fault"),
        ("Engine iteration timed out. This should never happen!", None, "engine", "symptom"),
        ("Failed to initialize NVML: Driver/library version mismatch", None, "gpu-fault", "fault"),
        (
            "torch.distributed.DistNetworkError: The client socket has timed out after 1800s while trying to connect to (10.4.0.7, 29500).",
            None,
            "network",
            "fault",
        ),
        (
            "ray.exceptions.RayActorError: The actor died because its node has died. Node Id: 5f1c0e",
            None,
            "node",
            "fault",
        ),
        (
            "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
            None,
            "engine",
            "symptom",
        ),
        (
            "Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 12.0 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 8.0%, Prefix cache hit rate: 0.0%, Corrupted: 3 reqs",
            None,
            "kv-cache",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "RuntimeError: NCCL error: remote process exited or there was a network error",
            "network",
            "fault",
        ),
        ("Traceback (most recent call last):", "RuntimeError: NCCL error: unhandled cuda error", "gpu-fault", "fault"),
        (
            "proxy.cc:1502 NCCL WARN [Proxy Service 6] Failed to execute operation Connect from rank 14, retcode 6",
            None,
            "network",
            "fault",
        ),
        ("bootstrap.cc:88 NCCL WARN Bootstrap : no socket interface found", None, "network", "fault"),
        ("proxy.cc:1217 NCCL WARN Socket recv failed while polling for opId=0x7f3a2c001230", None, "network", "fault"),
        ("Not all ranks joining collective 5 at entry 4", None, "collective-timeout", "symptom"),
        ("Collective sequence number: 4182 has errors", None, "collective-timeout", "symptom"),
        ("#0-0 (9a3c5e1f00d2b417) MISMATCH", None, "collective-timeout", "symptom"),
        ("DEAD", None, "collective-timeout", "symptom"),
        (
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
            "NVIDIA driver is installed and running.",
            None,
            "gpu-fault",
            "fault",
        ),
        ("GPU 00000000:2A:00.0: GPU requires reset", None, "gpu-fault", "fault"),
        (
            "Traceback (most recent call last):",
            "AssertionError: Invalid block found in popleft() which doesn't have a valid next_free_block",
            "kv-cache",
            "fault",
        ),
        (
            "ValueError: To serve at least one request with the model's max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (9.31 GiB).",
            None,
            "gpu-memory",
            "fault",
        ),
        (
            "Sequence group 7 is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space.",
            None,
            "capacity",
            "symptom",
        ),
        (
            "kernel: Memory cgroup out of memory: Killed process 88121 (python3) total-vm:91234567kB",
            None,
            "pod-lifecycle",
            "fault",
        ),
        ("kernel: Out of memory: Killed process 88121 (python3) total-vm:91234567kB", None, "node", "fault"),
        ('Failed: Failed to pull image "registry.local/vllm:v0.99": not found', None, "pod-lifecycle", "fault"),
        (
            'FailedMount: MountVolume.SetUp failed for volume "weights" : rpc error: code = Internal desc = mount failed',
            None,
            "pod-lifecycle",
            "fault",
        ),
        ("Unhealthy: Liveness probe failed: HTTP probe failed with statuscode: 503", None, "pod-lifecycle", "symptom"),
        ("kernel: mlx5_core 0000:3b:00.0 ib0: Link down", None, "network", "fault"),
        ("kernel: ixgbe 0000:01:00.0 eth0: NIC Link is Down", None, "network", "fault"),
        ("kernel: mlx5_core 0000:3b:00.0: Port module event: module 0, Cable unplugged", None, "network", "fault"),
        (
            "kernel: infiniband mlx5_0: mlx5_handle_error_cqe:332:(pid 0): WC error: 12, Message: transport retry counter exceeded",
            None,
            "network",
            "fault",
        ),
        ("systemd-networkd[812]: eth0: Lost carrier", None, "network", "fault"),
        (
            "3d3e22c3066f:168:168 [0] misc/shmutils.cc:72 NCCL WARN Error: failed to extend /dev/shm/nccl-UbzKZ9 to "
            "9637892 bytes",
            None,
            "pod-lifecycle",
            "fault",
        ),
        ("Traceback (most recent call last):", "OSError: [Errno 28] No space left on device", "node", "fault"),
        ("Evicted: The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi", None, "node", "fault"),
        ("kernel: watchdog: BUG: soft lockup - CPU#12 stuck for 22s! [python3:12345]", None, "node", "fault"),
        (
            "kernel: nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 24007, Fatal, Link 44 sourcetrack timeout",
            None,
            "gpu-fault",
            "fault",
        ),
        (
            "connect() failed (111: Connection refused) while connecting to upstream, client: 10.0.0.7, server: llm",
            None,
            "pod-lifecycle",
            "symptom",
        ),
        (
            "upstream timed out (110: Connection timed out) while reading response header from upstream",
            None,
            "engine",
            "symptom",
        ),
        (
            "kernel: mlx5_core 0000:5c:00.0: Port module event[error]: module 0, Cable error, High Temperature",
            None,
            "network",
            "fault",
        ),
        (
            "mlx5_core 0000:d2:00.0: poll_health:174: device's health compromised - reached miss count.",
            None,
            "network",
            "fault",
        ),
        ("NETDEV WATCHDOG: eth0 (mlx5_core): transmit queue 0 timed out", None, "network", "fault"),
        (
            "pcieport 0000:00:01.1: PCIe Bus Error: severity=Uncorrectable (Fatal), type=Transaction Layer, (Receiver ID)",
            None,
            "node",
            "fault",
        ),
        (
            "NVRM: GPU at PCI:0000:3b:00: GPU-5e7e Xid (PCI:0000:3b:00): 48, pid=1234, An uncorrectable double bit error (DBE) has been detected",
            None,
            "gpu-fault",
            "fault",
        ),
        ("nv-fabricmanager[2281]: NVSwitch fatal error detected on switch 2", None, "gpu-fault", "fault"),
        ("NodeHasDiskPressure: Node gpu-node-3 status is now: NodeHasDiskPressure", None, "node", "fault"),
        ("Preempted: Preempted by pod 6f1c0e1e-2d8b-4f7a on node gpu-node-1", None, "capacity", "fault"),
        ("Preempted: Preempted by a pod on node gpu-node-1", None, "capacity", "fault"),
        (
            "UnexpectedAdmissionError: Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected",
            None,
            "gpu-fault",
            "fault",
        ),
        (
            'FailedCreatePodSandBox: Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "4f1e": plugin type="calico" failed (add)',
            None,
            "node",
            "fault",
        ),
        ("Available KV cache memory: -0.53 GiB", None, "gpu-memory", "fault"),
        (
            "Traceback (most recent call last):",
            "AssertionError: Error in memory profiling. Initial free memory 10.2 GiB, current free memory 12.4 GiB. This happens when the GPU memory was not properly cleaned up before initializing the vLLM instance.",
            "gpu-memory",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't find it in the cached files and it looks like meta-llama/Llama-3.1-8B-Instruct is not the path to a directory containing a file named config.json.",
            "engine",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "huggingface_hub.errors.GatedRepoError: 401 Client Error. (Request ID: Root=1-6789)",
            "engine",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised: RuntimeError: Triton compilation failed",
            "engine",
            "fault",
        ),
        ("RuntimeError: NCCL communicator was aborted on rank 1.", None, "collective-timeout", "symptom"),
        ("Observed flight recorder dump signal from another rank via TCPStore.", None, "collective-timeout", "symptom"),
        (
            "Traceback (most recent call last):",
            "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.",
            "node",
            "fault",
        ),
        (
            "node_manager.cc:3069: 1 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: 5e7e, IP: 10.0.0.5) over the last time period.",
            None,
            "node",
            "fault",
        ),
        (
            "Raylet is terminated: ip=10.0.0.5, id=5e7e. Termination is unexpected. Possible reasons include: (1) SIGKILL by the user or system OOM killer",
            None,
            "node",
            "fault",
        ),
        ("Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.", None, "engine", "symptom"),
        ("TaskHung: INFO: task python3:1234 blocked for more than 120 seconds.", None, "node", "fault"),
        ("kernel: INFO: task python3:1234 blocked for more than 120 seconds.", None, "node", "fault"),
        (
            "KernelOops: kernel: BUG: unable to handle kernel NULL pointer dereference at 0000000000000008",
            None,
            "node",
            "fault",
        ),
        (
            "kernel: EXT4-fs error (device nvme0n1p1): ext4_journal_check_start:83: Detected aborted journal",
            None,
            "node",
            "fault",
        ),
        (
            "ReadonlyFilesystem: Node condition ReadonlyFilesystem is now: True, reason: FilesystemIsReadOnly",
            None,
            "node",
            "fault",
        ),
        ("Worker proc VllmWorker-0 died unexpectedly, shutting down executor.", None, "engine", "symptom"),
        ("TimeoutError: RPC call to execute_model timed out.", None, "engine", "symptom"),  # (V1 executor: a hang)
        ("RuntimeError: CUDA error: out of memory", None, "gpu-memory", "fault"),  # (a CUDA API call)
        (
            "A worker died or was killed while executing a task by an unexpected system error. To troubleshoot the problem, check the logs for the dead worker.",
            None,
            "engine",
            "symptom",
        ),
        (
            "XidCriticalError: Xid=79 on Device=GPU-5e7e3a2b, uuid=GPU-5e7e3a2b, the device will go unhealthy.",
            None,
            "gpu-fault",
            "fault",
        ),
        (
            "Unable to determine the device handle for GPU 0000:3b:00.0: GPU is lost.  Reboot the system to recover this GPU",
            None,
            "gpu-fault",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 802: system not yet initialized",
            "gpu-fault",
            "fault",
        ),
        (
            "[PG ID 0 PG GUID 0(default_pg) Rank 3] Terminating the process after attempting to dump debug info, due to collective timeout or exception.",
            None,
            "collective-timeout",
            "symptom",
        ),
        (  # LMCache's adapter, in a vLLM worker's log
            "Request chatcmpl-a45fe9554f56f11bThe number of retrieved tokens is less than the expected number of "
            "tokens! This should not happen!",
            None,
            "kv-cache",
            "fault",
        ),
        ("DeepEP timeout check failed: rank = 3, thread = 0, value = 1024)", None, "collective-timeout", "symptom"),
        ("RuntimeError: DeepEP error: CPU recv timeout", None, "collective-timeout", "symptom"),
        # Disaggregated prefill/decode (vLLM's NIXL and Mooncake connectors, their UCX transport).
        (
            "NIXL transfer failed for request cmpl-7f3a-0 with state ERR. Marking blocks as invalid.",
            None,
            "network",
            "fault",
        ),
        ("Handshake failed for request cmpl-7f3a-0, marking blocks as invalid", None, "network", "fault"),
        ("Mooncake transfer failed for request. remote_request_id=cmpl-7f3a-0, ret=-1. ", None, "network", "fault"),
        ("Transport retry count exceeded on mlx5_0:1/IB (synd 0x15 vend 0x81 hw_synd 0/0)", None, "network", "fault"),
        (  # Mooncake's transfer engine (glog), the completion's status in ibv_wc_status_str's words
            "Worker: Process failed for slice (opcode: 1, source_addr: 0x7f1, length: 65536, dest_addr: 0x7f2, "
            "local_nic: mlx5_3, peer_nic: 10.194.30.27:16737@mlx5_3, dest_rkey: 1, retry_cnt: 0): local protection error",
            None,
            "network",
            "fault",
        ),
        (
            "Potentially invalid KV blocks for unrecognized request cmpl-7f3a-0 were retrieved by a decode worker. "
            "They may have expired.",
            None,
            "kv-cache",
            "fault",
        ),
        (
            "Releasing expired KV blocks for request cmpl-7f3a-0 which were retrieved by 0 decode worker(s) within "
            "120 seconds.",
            None,
            "kv-cache",
            "symptom",
        ),
        (
            "Recovered from KV load failure: 3 request(s) rescheduled (12288 tokens affected).",
            None,
            "kv-cache",
            "symptom",
        ),
        (  # the connector's periodic stats line (every 10 s), counting failures since the last
            "KV Transfer metrics: Num successful transfers=80, Avg xfer time (ms)=173.794, P90 xfer time (ms)=235.706, "
            "Avg MB per transfer=313.0, Throughput (MB/s)=1800.983, Num failed transfers=3, Num KV expired reqs=0",
            None,
            "network",
            "fault",
        ),
        (
            "KV Transfer metrics: Num successful transfers=80, Avg xfer time (ms)=173.794, Num failed transfers=0, "
            "Num KV expired reqs=12",
            None,
            "kv-cache",
            "symptom",
        ),
        (
            "Traceback (most recent call last):",
            "RuntimeError: The NVIDIA driver on your system is too old (found version 12020). Please update your GPU driver",
            "engine",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "RuntimeError: NIXL compatibility hash mismatch. Local: 9c1e, Remote: 47ab. Prefill and decode instances "
            "have incompatible configurations.",
            "engine",
            "fault",
        ),
        # The image meeting a GPU it was not built for: the engine's start, not the GPU, failed.
        (
            "Traceback (most recent call last):",
            "torch.AcceleratorError: CUDA error: no kernel image is available for execution on the device",
            "engine",
            "fault",
        ),
        (
            "UserWarning: NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current "
            "PyTorch installation.",
            None,
            "engine",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 "
            "GPU has compute capability 7.5. You can use float16 instead by explicitly setting the`dtype` flag in "
            "CLI, for example: --dtype=half.",
            "engine",
            "fault",
        ),
        (  # vLLM V1's guard before profiling: another process (often a leftover EngineCore) holds the GPU
            "Traceback (most recent call last):",
            "ValueError: Free memory on device cuda:0 (12.18/23.56 GiB) on startup is less than desired GPU memory "
            "utilization (0.92, 21.67 GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
            "processes.",
            "gpu-memory",
            "fault",
        ),
        (  # V0's words for a KV cache too small for max_model_len
            "Traceback (most recent call last):",
            "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be "
            "stored in KV cache (93936). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
            "initializing the engine.",
            "gpu-memory",
            "fault",
        ),
        (  # AWS EFA under aws-ofi-nccl
            "ip-10-1-2-3:229905:230588 [0] ofi_process_cq:196 NCCL WARN NET/OFI Request 0x400aa7dd3b98 completed "
            "with error. RC: 107. Error: Inappropriate ioctl for device.",
            None,
            "network",
            "fault",
        ),
        ("gpu-b:2343:2381 [0] NCCL WARN NET/IB : mlx5_0:1 Got async event : port error", None, "network", "fault"),
        (
            "gpu-b:2343:2381 [0] NCCL WARN NET/IB : mlx5_0:1 Got async event : local catastrophic error",
            None,
            "network",
            "fault",
        ),
        (
            "mlx5_core 0000:0c:00.0: mlx5_fw_fatal_reporter_err_work:760:(pid 17): Driver is in error state. Unloading",
            None,
            "network",
            "fault",
        ),
        (
            "FailedScheduling: 0/3 nodes are available: 3 node(s) had untolerated taint {nvidia.com/gpu: present}. "
            "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
            None,
            "capacity",
            "fault",
        ),
        (
            "FailedScheduling: 0/6 nodes are available: 2 node(s) had taint {dedicated: gpu}, that the pod didn't "
            "tolerate, 4 node(s) didn't match node selector.",
            None,
            "capacity",
            "fault",
        ),
        (  # nodes tainted for their condition: the scheduler sees a node failure
            "FailedScheduling: 0/4 nodes are available: 4 node(s) had untolerated taint "
            "{node.kubernetes.io/not-ready: }. preemption: 0/4 nodes are available.",
            None,
            "node",
            "symptom",
        ),
        (
            "Traceback (most recent call last):",
            "ValueError: Model architectures ['Qwen3NextForCausalLM'] are not supported for now. Supported "
            "architectures: dict_keys(['AquilaModel', 'LlamaForCausalLM'])",
            "engine",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "ValueError: The checkpoint you are trying to load has model type `qwen3` but Transformers does not "
            "recognize this architecture. This could be because of an issue with the checkpoint, or because your "
            "version of Transformers is out of date.",
            "engine",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "ValueError: Total number of attention heads (40) must be divisible by tensor parallel size (3).",
            "engine",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer",
            "engine",
            "fault",
        ),
        (
            "The node with node id: 9426f44574cce4866be798cfed308f2d3e21ba69487d422872cdd6e3 and address: 10.130.0.113 "
            "and node name: 10.130.0.113 has been marked dead because the detector has missed too many heartbeats "
            "from it. This can happen when a (1) raylet crashes unexpectedly (OOM, preempted node, etc.)",
            None,
            "node",
            "fault",
        ),
        ("Terminated: Pod was terminated in response to imminent node shutdown.", None, "node", "fault"),
        ("NodeShutdown: Shutdown manager detected shutdown event", None, "node", "fault"),
        ("Evicted: The node had condition: [DiskPressure].", None, "node", "fault"),
        ("Traceback (most recent call last):", "OSError: [Errno 122] Disk quota exceeded", "node", "fault"),
        (
            'Unhealthy: Startup probe failed: Get "http://10.0.0.5:8000/health": dial tcp 10.0.0.5:8000: connect: '
            "connection refused",
            None,
            "pod-lifecycle",
            "symptom",
        ),
        # cuBLAS's handle created on a full GPU: memory, not the hardware the generic CUDA error says
        (
            "Traceback (most recent call last):",
            "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`",
            "gpu-memory",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
            "gpu-memory",
            "fault",
        ),
        # the server's port taken: uvicorn's bind, vLLM's own socket, torch's TCPStore (not a rendezvous failing)
        (
            "[Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use",
            None,
            "engine",
            "fault",
        ),
        ("Traceback (most recent call last):", "OSError: [Errno 98] Address already in use", "engine", "fault"),
        (
            "Traceback (most recent call last):",
            "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
            "port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use",
            "engine",
            "fault",
        ),
        # file descriptors exhausted under load (asyncio's accept loop logs it, then the exception)
        ("socket.accept() out of system resource", None, "engine", "fault"),
        ("Traceback (most recent call last):", "OSError: [Errno 24] Too many open files", "engine", "fault"),
        (
            "Traceback (most recent call last):",
            "PermissionError: [Errno 13] Permission denied: '/.cache'",
            "engine",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "OSError: [Errno 30] Read-only file system: '/root/.cache/huggingface/hub/models--Qwen--Qwen3-8B'",
            "engine",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "redis.exceptions.ConnectionError: Error 111 connecting to lmcache-redis:6379. Connection refused.",
            "kv-cache",
            "fault",
        ),
        ("Traceback (most recent call last):", "RuntimeError: CUDA driver error: out of memory", "gpu-memory", "fault"),
        (  # torch's older spelling of NCCL's result codes
            "Traceback (most recent call last):",
            "RuntimeError: NCCL Error 6: remote process exited or there was a network error",
            "network",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "RuntimeError: NCCL Error 1: unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
            "gpu-fault",
            "fault",
        ),
        (  # a Triton kernel tuned for a larger GPU than the node's
            "Traceback (most recent call last):",
            "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 167936, Hardware limit: "
            "101376. Reducing block sizes or `num_stages` may help.",
            "engine",
            "fault",
        ),
        (  # the container started without the NVIDIA runtime
            "Traceback (most recent call last):",
            "ImportError: libcuda.so.1: cannot open shared object file: No such file or directory",
            "gpu-fault",
            "fault",
        ),
        (
            "/sgl-workspace/nvshmem/src/host/init/init.cu:nvshmemi_check_state_and_init:1080: nvshmem initialization "
            "failed, exiting",
            None,
            "network",
            "fault",
        ),
        (
            "/opt/nvshmem/nvshmem/src/modules/transport/ibgda/ibgda.cpp:1889: NULL value cannot allocate "
            "mlx5dv_devx_uar",
            None,
            "network",
            "fault",
        ),
        ("SystemOOM: System OOM encountered, victim process: python3, pid: 88121", None, "node", "fault"),
        ("mce: [Hardware Error]: Machine check events logged", None, "node", "fault"),
        ("EDAC MC0: 1 UE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0", None, "node", "fault"),
        (
            "blk_update_request: I/O error, dev nvme0n1, sector 123456 op 0x0:(READ) flags 0x80700 phys_seg 1 prio "
            "class 0",
            None,
            "node",
            "fault",
        ),
        ("nfs: server 10.0.0.5 not responding, still trying", None, "node", "fault"),
        ("NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x24:0x72:1436)", None, "gpu-fault", "fault"),
        ("Failed to connect to GCS at address 10.0.0.1:6379 within 5 seconds.", None, "network", "fault"),
        (
            "Traceback (most recent call last):",
            "socket.gaierror: [Errno -3] Temporary failure in name resolution",
            "network",
            "fault",
        ),
        (
            "failed to connect to the KV store: dial tcp: lookup lmcache-server on 10.96.0.10:53: no such host",
            None,
            "network",
            "fault",
        ),
        (  # the Hub unreachable at start is the weights failing to load, whatever DNS said
            "Traceback (most recent call last):",
            "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='huggingface.co', port=443): Max retries "
            'exceeded with url: /api/models/Qwen/Qwen3-8B (Caused by NameResolutionError("<urllib3.connection.'
            "HTTPSConnection object at 0x7f>: Failed to resolve 'huggingface.co' ([Errno -3] Temporary failure in "
            'name resolution)"))',
            "engine",
            "fault",
        ),
        ("Fatal Python error: Segmentation fault", None, "engine", "symptom"),
        # SGLang: its scheduler's death, and the server's word for it; the exception below is the fault
        ("Scheduler hit an exception: Traceback (most recent call last):", None, "engine", "symptom"),
        ("Received sigquit from a child process. It usually means the child failed.", None, "engine", "symptom"),
        (
            "Scheduler hit an exception: Traceback (most recent call last):",
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            "gpu-fault",
            "fault",
        ),
        ("*** SIGSEGV received at time=1700000000 on cpu 3 ***", None, "engine", "symptom"),
        (  # the store's server end: the other ranks never connected
            "Traceback (most recent call last):",
            "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.",
            "network",
            "fault",
        ),
        # TensorRT-LLM: its KV block manager's checks, a CUDA allocation it checked, its executor failing the
        # requests in flight (the fault, where the error it says is one)
        (
            "tensorrt_llm::common::TllmException: [TensorRT-LLM][ERROR] Assertion failed: mNextBlocks.empty() "
            "(/src/tensorrt_llm/cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp:219)",
            None,
            "kv-cache",
            "fault",
        ),
        (
            "[TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMallocAsync(ptr, n, mCudaStream->get()): out of memory "
            "(/src/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmBuffers.h:125)",
            None,
            "gpu-memory",
            "fault",
        ),
        ("Encountered an error in forwardAsync function: std::bad_alloc", None, "engine", "symptom"),
        # the CUDACHECK macro (vLLM's custom all-reduce): a failed CUDA call, an OOM where it says so
        ("Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:307 'invalid argument'", None, "gpu-fault", "fault"),
        ("Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:97 'out of memory'", None, "gpu-memory", "fault"),
        # UCX's handler: a signal killed the process (NIXL's transfer under it, or anything in native code)
        ("Caught signal 7 (Bus error: nonexistent physical address)", None, "engine", "symptom"),
        (
            "Encountered an error in forwardAsync function: [TensorRT-LLM][ERROR] Assertion failed: block is free "
            "(/src/tensorrt_llm/cpp/tensorrt_llm/batch_manager/evictionPolicy.cpp:88)",
            None,
            "kv-cache",
            "fault",
        ),
    ],
)
def test_real_fault_strings_are_classified_by_layer_and_kind(line, exception, category, kind):
    head, tb = signatures.classify_text(line, exception)
    sig = tb if exception else head
    assert (sig.category, sig.kind) == (category, kind)


@pytest.mark.parametrize(
    "line",
    [
        "kernel: nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 33 egress non-posted PRIV error (First)",
        "nv-fabricmanager[1234]: detected NVSwitch non-fatal error 12028 on fid 0 on NVSwitch pci bus id 00000000:05:00.0",
        "mlx5_core 0000:5c:00.0: Port module event: module 0, Cable plugged",
        "pcieport 0000:00:03.1: AER: Corrected error received: 0000:00:03.1",
        "mlx5_cmd_out_err:838: ACCESS_REG(0x805) op_mod(0x1) failed, status bad operation(0x2)",
        # NCCL's IB async events that a healthy fabric sends too (the subnet manager's doing)
        "gpu-b:2343:2381 [0] NCCL WARN NET/IB : mlx5_0:1 Got async event : GID table change",
        "gpu-b:2343:2381 [0] NCCL WARN NET/IB : mlx5_0:1 Got async event : client reregistration",
        # aws-ofi-nccl finding no EFA: NCCL falls back to its socket transport and goes on
        "NCCL INFO NET/OFI No eligible providers were found",
        # host memory's corrected errors are wear; an NFS server answering again is the recovery
        "EDAC MC0: 1 CE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0",
        "nfs: server 10.0.0.5 OK",
    ],
)
def test_routine_hardware_notices_are_no_fault(line):
    # Non-fatal NVSwitch errors, a cable plugged in, a corrected PCIe error and a monitoring
    # tool's refused register read happen on healthy nodes: blaming them would mislead.
    assert signatures.classify_text(line, None) == (None, None)


@pytest.mark.parametrize(
    ("line", "label", "kind"),
    [
        (
            "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.",
            "fell off the bus",
            "fault",
        ),
        ("XidCriticalError: Xid=79 on Device=GPU-5e7e3a2b, the device will go unhealthy.", "fell off the bus", "fault"),
        ("DCGM_FI_DEV_XID_ERRORS: Xid=48 on GPU 1 (GPU-5fd3)", "ECC", "fault"),
        ("NVRM: Xid (PCI:0000:18:00): 94, pid=2311, Contained: SM (0x1). RST: No, D-RST: No", "ECC", "fault"),
        ("NVRM: Xid (PCI:0000:18:00): 74, pid=2311, NVLink: fatal error detected on link 3", "NVLink", "fault"),
        ("NVRM: Xid (PCI:0000:18:00): 119, pid=2311, Timeout waiting for RPC from GSP!", "GSP", "fault"),
        (
            "NVRM: Xid (PCI:0000:18:00): 31, pid=2311, name=python3, Ch 00000008, intr 10000000. MMU Fault: ENGINE "
            "GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f1a_2c000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
            "usually software",
            "fault",
        ),
        ("NVRM: Xid (PCI:0000:18:00): 45, pid=2311, Ch 00000010", "Xid 45", "symptom"),
        ("NVRM: Xid (PCI:0000:18:00): 154, pid=1, GPU recovery action changed", "GPU / CUDA fault", "fault"),
    ],
)
def test_an_xids_number_names_what_failed_and_what_to_do(line, label, kind):
    # Xid 45 is the driver cleaning up after a process that died (an OOM kill, a crash): never the cause.
    from forensics.diagnosis import signatures

    sig, _ = signatures.classify_text(line, None)
    assert (sig.category, sig.kind) == ("gpu-fault", kind) and label in sig.label
    if kind == "fault" and "Xid" in sig.label:
        assert "{host}" in advice.ACTIONS_BY_LABEL[sig.label]  # (its own action item, for the node at fault)


@pytest.mark.parametrize(
    ("line", "nccl"),
    [
        ("socketProgress: Connection closed by remote peer gpu-b7-ib0<40217>", True),
        ("socketProgressOpt: Call to recv from 172.16.0.3<33759> failed : Connection reset by peer", True),
        ("Net : Call to recv from 10.200.84.247<58355> failed : Broken pipe", True),
        ("Net : Connection closed by remote peer a100-st-p4d24xlarge-22<34552>", True),
        ("socketPollConnect: connect returned Connection refused, exceeded error retry count (35)", True),
        ("fatal: Write failed: Connection reset by peer [preauth]", False),
        ("ConnectionResetError: [Errno 104] Connection reset by peer", False),
        (
            "[E socket.cpp:957] [c10d] The client socket has failed to connect to 10.0.0.1:29500: No route to host",
            False,
        ),
    ],
)
def test_only_nccls_own_socket_errors_are_called_nccls(line, nccl):
    # NCCL's socket code names its function; the same words from sshd or a Python client are
    # a lost connection of some process, as that process saw it.
    sig, _ = signatures.classify_text(line, None)
    assert (sig.category, sig.kind) == ("network", "fault")
    assert sig.label == ("NCCL socket error" if nccl else signatures.SOCKET_LOST)
    assert signatures.Trait.AS_THE_APP_SAW_IT in sig.traits


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


def _scheduled_on(tmp_path: Path, nodes: dict[str, str]) -> None:
    """`kubectl get events -o json` with each pod's Scheduled event (pod -> node)."""
    items = [
        {
            "kind": "Event",
            "metadata": {"name": f"{pod}.1", "namespace": "serving"},
            "involvedObject": {"kind": "Pod", "name": pod, "namespace": "serving"},
            "reason": "Scheduled",
            "message": f"Successfully assigned serving/{pod} to {node}",
            "type": "Normal",
            "firstTimestamp": "2025-03-02T07:40:00Z",
            "lastTimestamp": "2025-03-02T07:40:00Z",
            "count": 1,
            "source": {"component": "default-scheduler"},
        }
        for pod, node in nodes.items()
    ]
    write_file(tmp_path / "events.json", json.dumps({"kind": "List", "items": items}))


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
    _scheduled_on(tmp_path, {"vllm-0": "gpu-1", "vllm-1": "gpu-2", "vllm-2": "gpu-3"})
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
    from tests.test_nvidia_smi import _gpu, _snapshot

    _scheduled_on(tmp_path, {"vllm-0": "gpu-1", "vllm-1": "gpu-2", "vllm-2": "gpu-3"})
    write_file(
        tmp_path / "nodes" / "gpu-2" / "nvidia-smi-q.txt",
        _snapshot(
            _gpu("00000000:C1:00.0", "GPU-9a1e", dram_ue=ecc, thermal="Active"), stamp="Sun Mar  2 08:30:00 2025"
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
    _scheduled_on(tmp_path, {"vllm-0": "gpu-1", "vllm-1": "gpu-2", "vllm-2": "gpu-3"})
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
        _scheduled_on(tmp_path, scheduled)
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
    _scheduled_on(tmp_path, {"vllm-0": "gpu-1", "vllm-1": "gpu-2", "vllm-2": "gpu-3"})
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


_CATALOG_WORDS = sorted({w for sig in SIGNATURES for w in re.findall(r"[A-Za-z][\w.]+", sig.pattern)})
"""The catalog's own words, so that generated lines come near (and into) its patterns."""


def test_what_the_ranking_asks_of_a_fault_is_a_trait_of_its_catalog_entry():
    # The ranking and the alerts ask traits, never spelt labels: rewording an entry's label
    # cannot stop a rule that names it.
    with_trait = {t: [sig.id for sig in SIGNATURES if t in sig.traits] for t in signatures.Trait}
    assert len(with_trait[signatures.Trait.AT_START]) >= 8
    assert all(with_trait.values()), [t for t, ids in with_trait.items() if not ids]
    for sig in SIGNATURES:
        assert signatures.traits_of(sig.label) >= sig.traits


def test_catalog_ids_are_stable_unique_and_name_their_category():
    # An id is what code, tests and users' tooling compare: once given, it stays.
    ids = [sig.id for sig in SIGNATURES]
    assert len(set(ids)) == len(ids)
    assert all(sig.id.startswith(sig.category + ".") for sig in SIGNATURES)
    golden = (Path(__file__).parent / "golden" / "catalog-ids.txt").read_text().split()
    assert [i for i in golden if i not in signatures.BY_ID] == [], "a catalog id was renamed or removed"


@pytest.mark.parametrize("sig", SIGNATURES, ids=lambda sig: sig.label[:40])
def test_every_signature_compiles_in_polars_regex_engine(sig):
    # polars' engine has no lookaround: a pattern it cannot compile fails the whole analysis.
    screen = signatures._SCREENS[SIGNATURES.index(sig)]
    assert pl.Series([sig.label, ""]).str.contains(screen).dtype == pl.Boolean  # (raises when it cannot compile)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(_CATALOG_WORDS),
            st.sampled_from([" ", ": ", "'", "(", ")", "[", "]", "=", "-", "/", ".", "\t", "é", "٣", "%"]),
            st.text(max_size=6),
            st.from_regex(r"\d{1,6}", fullmatch=True),
        ),
        max_size=14,
    ).map("".join)
)
def test_the_screen_never_changes_which_signature_a_line_gets(line):
    # polars screens each line against the whole catalog; Python's `re` still decides, in
    # catalog order, among what the screen lets through: the answer is the unscreened one.
    first = line.split("\n", 1)[0]
    maybe = np.flatnonzero(signatures._screen(pl.Series([first]))[0]).tolist()
    assert signatures.classify_text(first, None, maybe) == signatures.classify_text(first, None)


def test_a_flood_of_one_message_gives_each_of_its_events_its_signature_rows():
    import polars as pl

    crash = (
        "EngineCore encountered a fatal error.\nTraceback (most recent call last):\n"
        '  File "core.py", line 1, in run\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB'
    )
    shm = "No available shared memory broadcast block found in 60 seconds."
    messages = [crash, shm, "Added request chatcmpl-1.", crash, shm, crash]
    events = pl.DataFrame({"message": messages, "http_status": [None] * 6}, schema_overrides={"http_status": pl.Int32})
    got = signatures.classify(events)
    # The crash: its traceback's OOM (a fault) and the engine's death (a symptom), at each of its events.
    assert got["_ev"].to_list() == [0, 0, 1, 3, 3, 4, 5, 5]
    assert got.filter(pl.col("_ev") == 5)["category"].sort().to_list() == ["engine", "gpu-memory"]
    assert got.filter(pl.col("_ev") == 4)["text"].to_list() == [shm]


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
            evidence=[{"text": text}],
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


def test_a_rank_one_collective_behind_the_others_is_named_as_the_straggler(tmp_path):
    # Every rank timed out, but rank 2 is still in SeqNum 4107 while the others wait in 4108:
    # rank 2 never enqueued the collective they wait for.
    lines = [
        f"[rank{r}]:[E0611 10:20:{30 + r}.1{r}0000000 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
        f"operation timeout: WorkNCCL(SeqNum={4107 if r == 2 else 4108}, OpType=ALLGATHER, NumelIn=2048, NumelOut=8192, "
        f"Timeout(ms)=600000) ran for 60001{r} milliseconds before timing out.\n"
        for r in range(4)
    ]
    write_file(tmp_path / "ranks.log", "".join(lines))
    rc = analyze(tmp_path, year=2025).to_json()["incidents"][0]["root_cause"]
    assert rc["status"] == "inconclusive"
    assert rc["missing"].startswith(
        "Ranks 0, 1, 3 timed out waiting in ALLGATHER SeqNum=4108 while rank 2 never finished SeqNum=4107"
    )


def _beside_the_chorus(tmp_path: Path, ranks: int, op: str, name: str, report: str):
    """(`name`'s file report, the root cause) when every rank's watchdog fired in the same
    collective (SeqNum 4182: who stopped is not in those lines) and `report` lies beside them."""
    chorus = "".join(
        f"[rank{r}]:[E0523 09:41:17.20417{r % 10}093 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
        f"operation timeout: WorkNCCL(SeqNum=4182, OpType={op}, NumelIn=65536, NumelOut=65536, Timeout(ms)=600000) "
        "ran for 600031 milliseconds before timing out.\n"
        for r in range(ranks)
    )
    write_file(tmp_path / "ranks.log", chorus)
    write_file(tmp_path / name, report)
    analysis = analyze(tmp_path, year=2024)
    (f,) = [f for f in analysis.ingest.files if f.file == name]
    return f, analysis.to_json()["incidents"][0]["root_cause"]


FR_MISSING = (  # torchfrtrace, torch 2.5/2.6 (the tutorial's shape)
    "Not all ranks joining collective 4182 at entry 97\n"
    "group info: 0:default_pg\n"
    "collective: nccl:_allgather_base\n"
    "missing ranks: {5}\n"
    "input sizes: [[65536]]\n"
    "output sizes: [[524288]]\n"
    "expected ranks: 8\n"
    "collective state: scheduled\n"
    "collective stack trace:\n"
    "  all_gather_into_tensor at /usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py:3711\n"
    "  forward at /workspace/vllm/distributed/parallel_state.py:412\n"
)
FR_CULPRIT = (  # torchfrtrace, torch 2.7+: a rank that ran another collective
    "Collective sequence number: 4182 has errors\n"
    "internal record id: 97\n"
    "group info: 0:default_pg\n"
    "collective: nccl:_allgather_base\n"
    "input sizes: [[65536]]\n"
    "output sizes: [[524288]]\n"
    "world size: 8\n"
    "expected ranks: {0, 1, 2, 3, 4, 5, 6, 7}\n"
    "collective state: scheduled\n"
    "error msg: Culprit rank 6; Expected collective type: 'nccl:_allgather_base' does not match found collective "
    "type: 'nccl:all_reduce'\n"
    "collective stack trace: \n"
    " all_gather_into_tensor at /usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py:3711\n"
)


@pytest.mark.parametrize(
    ("report", "said"),
    [
        (
            FR_MISSING,
            "The flight recorder's analysis (fr_trace.txt:1) shows rank 5 never joined nccl:_allgather_base "
            "(sequence number 4182): the straggler",
        ),
        (
            FR_CULPRIT,
            "The flight recorder's analysis (fr_trace.txt:1) names rank 6 as the culprit of "
            "nccl:_allgather_base (sequence number 4182): Expected collective type: 'nccl:_allgather_base' does not "
            "match found collective type: 'nccl:all_reduce'",
        ),
    ],
)
def test_a_flight_recorder_finding_beside_the_timeouts_names_the_rank_that_stopped(tmp_path, report, said):
    # Every rank's watchdog fired in the same collective: the timeouts alone cannot say who
    # stopped; torchfrtrace over the ranks' dumps can, and was saved beside the logs.
    f, rc = _beside_the_chorus(tmp_path, 8, "_ALLGATHER_BASE", "fr_trace.txt", report)
    assert (f.parsed, f.unparsed, f.folded) == (1, 0, f.lines - 1)  # (one finding, its details folded in)
    assert rc["status"] == "inconclusive"
    assert rc["missing"].startswith(said)


@pytest.mark.parametrize(
    ("text", "missing"),
    [
        (  # torch 2.4's print(): the finding on one line
            "Not all ranks joining collective for group 0:default_pg collective nccl:all_reduce  Missing ranks are "
            "{1, 3}  [[3, 4]] [[3, 4]] 4 scheduled \nCollective stack traces: \n"
            "  all_reduce at /opt/torch/distributed/distributed_c10d.py:2288\n",
            [1, 3],
        ),
        (FR_MISSING, [5]),
        (  # torch 2.7+
            "Not all ranks joining collective, sequence number: 4181\ninternal record id: 96\n"
            "group info: 0:default_pg\ncollective: nccl:all_reduce\nmissing ranks: {2}\nworld size: 4\n"
            "expected ranks: {0, 1, 2, 3}\ncollective state: scheduled\ncollective stack trace: \n"
            " all_reduce at /opt/torch/distributed/distributed_c10d.py:2810\n" + FR_CULPRIT,
            [2],
        ),
    ],
)
def test_flight_recorder_findings_of_each_torch_generation_are_one_event_each(tmp_path, text, missing):
    from forensics import ingest
    from forensics.diagnosis import collectives

    write_file(tmp_path / "fr.txt", text)
    r = ingest(tmp_path)
    (f,) = r.files
    heads = r.events.filter(pl.col("component").cast(pl.String) == "flight_recorder")
    assert heads.height == f.parsed == text.count("Not all ranks") + text.count("has errors") and f.unparsed == 0
    assert set(heads["level"]) == {"WARNING"}
    assert collectives.flight_findings(r.events).missing == missing  # (the first finding: where it went out of step)


RAS_HEAD = (  # `ncclras` (NCCL >= 2.24): the summary before the findings
    "Job summary\n===========\n\n"
    "  Nodes  Processes         GPUs  Processes     GPUs\n"
    "(total)   per node  per process    (total)  (total)\n"
    "      2          8            1         16       16\n\n"
    "Communicators... (0.00s)\n=============\n\n"
    "Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors\n"
    "    #  in group  per comm  per node  per comm  in group\n"
    "    0         1         2         8        16        16   RUNNING  INCOMPLETE,MISMATCH\n\n"
)
RAS_DEAD = (
    "Errors\n======\n\n"
    "DEAD\n"
    "  1 job process is considered dead (unreachable via the RAS network)\n"
    "  Process 41377 on node gpu-node-3 managing GPU 5\n\n"
    "#0-0 (9a3c5e1f00d2b417) INCOMPLETE\n"
    "  Missing communicator data from 1 rank\n"
    "  Rank 13 -- GPU 5 managed by process 41377 on node gpu-node-3\n\n"
)
RAS_MISMATCH = (
    "Warnings\n========\n\n"
    "#0-0 (9a3c5e1f00d2b417) MISMATCH\n"
    "  Communicator ranks have different AllReduce operation counts\n"
    "  15 ranks have launched up to operation 4182\n"
    "  Rank 12 has launched up to operation 4181 -- GPU 4 managed by process 41376 on node gpu-node-3\n\n"
)
RAS_ERROR = (
    "Errors\n======\n\n"
    "#0-0 (9a3c5e1f00d2b417) ERROR\n"
    "  Asynchronous errors on 2 ranks\n"
    "  2 ranks reported remote process exited or there was a network error\n"
    "  Rank 6 -- GPU 6 managed by process 51220 on node gpu-node-1\n"
    "  Rank 9 -- GPU 1 managed by process 41373 on node gpu-node-3\n\n"
)


@pytest.mark.parametrize(
    ("report", "said"),
    [
        (
            RAS_HEAD + RAS_DEAD + RAS_MISMATCH,
            "NCCL's RAS report (ncclras.txt:18) lists process 41377 on node "
            "gpu-node-3 (GPU 5) as dead (unreachable over RAS's own network)",
        ),
        (
            RAS_HEAD + RAS_MISMATCH,
            "NCCL's RAS report (ncclras.txt:18) lists rank 12 (process 41376 on node gpu-node-3, "
            "GPU 4) as out of step: rank 12 has launched up to operation 4181",
        ),
        (
            RAS_HEAD + RAS_ERROR + RAS_MISMATCH,
            "NCCL's RAS report (ncclras.txt:18) lists rank 6 (process 51220 on node "
            "gpu-node-1, GPU 6) as failing: rank 6 reported remote process exited or there was a network error",
        ),
    ],
)
def test_an_ncclras_report_beside_the_timeouts_names_the_process_the_others_waited_on(tmp_path, report, said):
    f, rc = _beside_the_chorus(tmp_path, 16, "ALLREDUCE", "ncclras.txt", report)
    assert f.lines == f.parsed + f.folded + f.unparsed and f.parsed == report.count("\n#") + ("DEAD" in report)
    assert rc["status"] == "inconclusive"
    assert rc["missing"].startswith(said)


def _ras_json(
    missing: dict[int, dict] | None = None, async_error: dict[int, int] | None = None, behind: int | None = None
):
    """`ncclras -f json` as NCCL 2.28.9 writes it (2-space indent; a missing rank's `status`
    without the comma before it), for 16 ranks on two nodes."""

    def where(r: int) -> str:
        return (
            f'"rank": {r},\n          "host": "gpu-node-{1 + r // 8}",\n          "pid": {41360 + r},\n'
            f'          "cuda_dev": {r % 8},\n          "nvml_dev": {r % 8}'
        )

    reported = [
        "        {\n          " + where(r) + ',\n          "status": {\n            "init_state": 0,\n'
        f'            "async_error": {(async_error or {}).get(r, 0)},\n            "finalize_called": false,\n'
        '            "destroy_flag": false,\n            "abort_flag": false\n          },\n'
        '          "collective_counts": {\n            "Broadcast": 0,\n            "AllGather": 0,\n'
        f'            "AllReduce": {4181 if r == behind else 4182}\n          }}\n        }}'
        for r in range(16)
        if r not in (missing or {})
    ]
    gone = [
        "        {\n          " + where(r) + '\n          "status": {\n'  # (no comma: NCCL 2.28.9)
        f'            "unresponsive": {json.dumps(st["unresponsive"])},\n'
        f'            "considered_dead": {json.dumps(st["considered_dead"])}\n          }}\n        }}'
        for r, st in (missing or {}).items()
    ]
    return (
        '{\n  "nccl_version": "2.28.9",\n  "cuda_runtime_version": 12090,\n  "cuda_driver_version": 13000,\n'
        '  "timestamp": "2024-05-23 09:51:40",\n  "communicators_count": 1,\n  "communicators": [\n    {\n'
        '      "hash": "0x9a3c5e1f00d2b417",\n      "secondary_hash": "0x51e0c2d4a9b7f613:0x0c6a1f9e3d2b8475",\n'
        f'      "size": 16,\n      "ranks_count": {len(reported)},\n      "missing_ranks_count": {len(gone)},\n'
        '      "ranks": [\n'
        + ",\n".join(reported)
        + '\n      ],\n      "missing_ranks": [\n'
        + ",\n".join(gone)
        + '\n      ]\n    }\n  ],\n  "ras": {\n    "collection_time_sec": 0.004,\n'
        '    "timeouts_count": 0\n  }\n}\n'
    )


@pytest.mark.parametrize(
    ("report", "said"),
    [
        (
            _ras_json(missing={13: {"unresponsive": True, "considered_dead": True}}),
            "NCCL's RAS report (ncclras.json:9) lists process 41373 on node gpu-node-2 (GPU 5) as dead",
        ),
        (
            _ras_json(missing={13: {"unresponsive": True, "considered_dead": False}}),
            "NCCL's RAS report (ncclras.json:9) lists rank 13 (process 41373 on node gpu-node-2, GPU 5) as missing "
            "from the communicator (it did not answer)",
        ),
        (
            _ras_json(async_error={6: 6}),
            "NCCL's RAS report (ncclras.json:9) lists rank 6 (process 41366 on node gpu-node-1, GPU 6) as failing: "
            "rank 6 reported remote process exited or there was a network error (ncclRemoteError)",
        ),
        (
            _ras_json(behind=12),
            "NCCL's RAS report (ncclras.json:9) lists rank 12 (process 41372 on node gpu-node-2, GPU 4) as out of "
            "step: rank 12 has launched up to operation 4181",
        ),
    ],
)
def test_an_ncclras_json_report_names_the_process_the_others_waited_on_as_the_text_one_does(tmp_path, report, said):
    f, rc = _beside_the_chorus(tmp_path, 16, "ALLREDUCE", "ncclras.json", report)
    assert (f.wrapper, f.lines, f.parsed, f.unparsed) == ("ncclras-json", report.count("\n"), f.lines, 0)
    assert any("commas NCCL's writer left out were put back" in n for n in f.notes) == ('"unresponsive"' in report)
    assert rc["status"] == "inconclusive"
    assert rc["missing"].startswith(said)


def test_a_healthy_ncclras_json_report_is_one_informational_event(tmp_path):
    from forensics import ingest
    from forensics.diagnosis import collectives

    write_file(tmp_path / "ras.json", _ras_json())
    r = ingest(tmp_path)
    assert r.events["level"].cast(pl.String).to_list() == ["INFO"]
    assert r.events["ts"][0].isoformat() == "2024-05-23T09:51:40+00:00"  # (the report's own time, in --tz)
    assert collectives.ras_findings(r.events) is None


def test_a_truncated_ncclras_json_report_is_read_line_by_line_with_a_note(tmp_path):
    from forensics import ingest

    text = _ras_json(behind=3)
    write_file(tmp_path / "ras.json", text[: len(text) // 2])
    (f,) = ingest(tmp_path).files
    assert f.lines == f.parsed + f.folded + f.unparsed
    assert any(n.startswith("ncclras JSON report not read") and "line by line" in n for n in f.notes)


@pytest.mark.parametrize(("seq", "completed", "first"), [(1, -1, True), (4182, 4181, False)])
def test_a_timeout_in_the_groups_first_collective_points_at_the_transport(tmp_path, seq, completed, first):
    write_file(
        tmp_path / "ranks.log",
        "".join(
            f"[rank{r}]:[E1001 16:06:04.53713184{r} ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught collective "
            f"operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=128, NumelOut=128, "
            "Timeout(ms)=600000) ran for 600009 milliseconds before timing out.\n"
            f"[rank{r}]:[E1001 16:06:04.53735690{r} ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank {r}] Exception "
            f"(either an error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL work: {seq}, last "
            f"completed NCCL work: {completed}.\n"
            for r in range(4)
        ),
    )
    rc = analyze(tmp_path, year=2024).to_json()["incidents"][0]["root_cause"]
    assert rc["status"] == "inconclusive"
    said = "No collective of the group ever completed (ranks.log:1: its first one timed out): the communicator never"
    assert rc["missing"].startswith(said) == first
    assert ("NCCL_P2P_DISABLE=1" in rc["missing"]) == first


def test_timeouts_of_different_process_groups_are_not_read_as_a_rank_falling_behind():
    import polars as pl

    from forensics import schema as s
    from forensics.diagnosis import collectives

    ev = pl.DataFrame(
        {
            s.TS: [None, None],
            s.SOURCE: ["torch", "torch"],
            s.RANK: [0, 1],
            s.COLL_SEQ: [1, 5730],
            s.COLL_OP: ["ALLREDUCE", "BROADCAST"],
            s.MESSAGE: ["x", "y"],
        },
        schema_overrides={s.TS: pl.Datetime("us", "UTC"), s.RANK: pl.Int32},
    )
    assert collectives.silent_ranks(ev) is None


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


# --- long and odd time ranges ------------------------------------------------------------


def _metrics_lines(start, minutes: int, drop_at: int | None, every_s: int = 10) -> str:
    """A V1 engine's metrics lines under `kubectl logs --timestamps`, one every `every_s` seconds;
    from minute `drop_at` on, generation falls to zero while requests stay running."""
    from datetime import timedelta

    out = []
    for i in range(minutes * 60 // every_s):
        t = start + timedelta(seconds=i * every_s)
        down = drop_at is not None and i * every_s >= drop_at * 60
        gen = 0.0 if down else 2400.0 + (i % 7) * 10
        out.append(
            f"{t:%Y-%m-%dT%H:%M:%S}.000000000Z (APIServer pid=7) INFO {t:%m-%d %H:%M:%S} [loggers.py:123] Engine 000: "
            f"Avg prompt throughput: 1800.0 tokens/s, Avg generation throughput: {gen:.1f} tokens/s, Running: 12 reqs, "
            f"Waiting: 0 reqs, GPU KV cache usage: 40.0%, Prefix cache hit rate: 20.0%\n"
        )
    return "".join(out)


def _one_replica_slows(tmp_path: Path, queued: bool, dark: bool = False, replicas: int = 3) -> None:
    """`replicas` replicas at ~1,000 tokens/s for 30 min; then llm-1 serves at 30% for 20 min (or,
    `dark`, logs nothing more), requests queueing (`queued`) or not (less traffic sent to it)."""
    start = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
    for pod in (f"llm-{k}" for k in range(replicas)):
        lines = []
        for i in range(300):
            t = start + timedelta(seconds=10 * i)
            slow = pod == "llm-1" and i >= 180
            if slow and dark:
                break
            gen = (1000.0 + (i % 5) * 8) * (0.3 if slow else 1.0)
            waiting = 40 if i >= 180 and queued and (slow or dark) else 0
            lines.append(
                f"{t:%Y-%m-%dT%H:%M:%S}.000000000Z INFO {t:%m-%d %H:%M:%S} [loggers.py:123] Engine 000: Avg prompt "
                f"throughput: {gen * 3:.1f} tokens/s, Avg generation throughput: {gen:.1f} tokens/s, Running: 25 reqs, "
                f"Waiting: {waiting} reqs, GPU KV cache usage: 51.0%, Prefix cache hit rate: 12.0%\n"
            )
        write_file(tmp_path / "pods" / f"{pod}.log", "".join(lines))
    _scheduled_on(tmp_path, {"llm-0": "gpu-1", "llm-1": "gpu-2", "llm-2": "gpu-3"})


def test_a_replica_slowed_while_its_requests_queue_is_an_incident_that_names_it(tmp_path):
    # A GPU held down by heat slows one replica without an error: the cluster loses a fifth of
    # its throughput, less than a drop, while that replica's users wait.
    _one_replica_slows(tmp_path, queued=True)
    (inc,) = analyze(tmp_path).to_json()["incidents"]
    assert (inc["impact"]["detector"], inc["impact"]["affected"]) == ("replica-slowdown", ["llm-1"])
    assert inc["start"].startswith("2026-11-24T12:30")
    assert inc["root_cause"]["status"] == "inconclusive"
    assert inc["root_cause"]["missing"].startswith("Replica llm-1 served at under half its usual throughput")


def test_a_slowed_replicas_node_snapshot_showing_hw_slowdown_is_its_cause(tmp_path):
    from tests.test_nvidia_smi import _gpu, _snapshot

    _one_replica_slows(tmp_path, queued=True)
    write_file(
        tmp_path / "nodes" / "gpu-2" / "nvidia-smi-q.txt",
        _snapshot(_gpu("00000000:C1:00.0", "GPU-9a1e", thermal="Active"), stamp="Tue Nov 24 12:35:00 2026"),
    )
    rc = analyze(tmp_path).to_json()["incidents"][0]["root_cause"]
    assert (rc["status"], rc["label"], rc["hosts"]) == (
        "supported",
        "GPU clocks held down by heat or power (HW slowdown)",
        ["gpu-2"],
    )


@pytest.mark.parametrize("queued", [True, False])
def test_a_replica_gone_dark_while_requests_queue_is_an_incident_even_with_no_cause_logged(tmp_path, queued):
    # Its log just stops (an OOM kill with no `describe` collected): with requests queueing on
    # its peers that is capacity lost; without, it may be a scale-down, and nothing is claimed.
    _one_replica_slows(tmp_path, queued=queued, dark=True, replicas=5)  # (a fifth of the total: no drop)
    incs = analyze(tmp_path).to_json()["incidents"]
    if not queued:
        assert incs == []
        return
    (inc,) = incs
    assert (inc["impact"]["detector"], inc["impact"]["affected"]) == ("replica-drop", ["llm-1"])
    assert inc["root_cause"]["status"] == "inconclusive"
    assert inc["root_cause"]["missing"].startswith("Replica llm-1 stopped serving while requests queued")


@pytest.mark.parametrize(("crashed", "stopped"), [(True, False), (False, False), (True, True)])
def test_one_replica_of_twelve_going_dark_after_a_fault_is_an_incident_and_without_one_is_not(
    tmp_path, crashed, stopped
):
    # Losing one replica of twelve moves the cluster total by ~8%, what a rollout does too;
    # a hard fault logged as it went dark tells a crash from a replica replaced, unless the
    # pod was being stopped on purpose just before it (a shutdown's own errors).
    start = datetime(2025, 5, 1, 9, 0, tzinfo=UTC)
    if stopped:
        kill = _k8s_event(start + timedelta(minutes=21, seconds=30), "Killing", "llm-7", "Stopping container vllm")
        write_file(tmp_path / "events.json", json.dumps({"kind": "List", "items": [kill]}))
    for k in range(12):
        lines = _metrics_lines(start, 22 if k == 7 else 40, drop_at=None).splitlines(keepends=True)
        if k == 7 and crashed:
            t = start + timedelta(minutes=21, seconds=58)
            head = f"{t:%Y-%m-%dT%H:%M:%S}.000000000Z (EngineCore_DP0 pid=90) ERROR {t:%m-%d %H:%M:%S} [core.py:708] "
            lines += [
                head + "EngineCore encountered a fatal error.\n",
                head + "Traceback (most recent call last):\n",
                head + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n",
            ]
        write_file(tmp_path / f"llm-{k}.log", "".join(lines))
    incidents = analyze(tmp_path).to_json()["incidents"]
    if stopped or not crashed:
        assert incidents == []
        return
    (inc,) = incidents
    rc = inc["root_cause"]
    assert (inc["impact"]["detector"], rc["status"], rc["category"], rc["hosts"]) == (
        "replica-drop",
        "supported",
        "gpu-memory",
        ["llm-7"],
    )
    assert any("while its 11 peer pods were fine" in w for w in rc["why"])


def test_one_replica_going_dark_after_its_nodes_xid_is_an_incident_named_by_the_node(tmp_path):
    # The node's kernel names no pod: the replica the scheduler put there is the one it took down.
    start = datetime(2025, 5, 1, 9, 0, tzinfo=UTC)
    for k in range(12):
        write_file(tmp_path / f"llm-{k}.log", _metrics_lines(start, 22 if k == 7 else 40, drop_at=None))
    assigned = _k8s_event(start, "Scheduled", "llm-7", "Successfully assigned serving/llm-7 to gpu-node-3")
    write_file(tmp_path / "events.json", json.dumps({"kind": "List", "items": [assigned]}))
    write_file(
        tmp_path / "nodes" / "gpu-node-3" / "kernel.journal",
        "May 01 09:21:50 gpu-node-3 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=4121, GPU has fallen off the bus.\n",
    )
    (inc,) = analyze(tmp_path).to_json()["incidents"]
    rc = inc["root_cause"]
    assert (inc["impact"]["detector"], rc["status"], rc["label"], rc["hosts"]) == (
        "replica-drop",
        "supported",
        "GPU fell off the bus (Xid 79)",
        ["gpu-node-3"],
    )


def test_a_fault_the_throughput_did_not_feel_is_said_beside_no_incident_not_as_unexplained(tmp_path):
    # One IB completion error on a replica that went on serving, and an error the catalog
    # does not know: no incident, but "no incident" must not read as "nothing failed".
    start = datetime(2025, 5, 1, 9, 0, tzinfo=UTC)
    for k in range(3):
        body = _metrics_lines(start, 40, drop_at=None)
        if k == 1:
            t = start + timedelta(minutes=12)
            body += (
                f"{t:%Y-%m-%dT%H:%M:%S}.000000000Z gpu-b:2343:2381 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : "
                "Got completion from peer 10.0.0.7<52415> with status=12 opcode=0 len=0 vendor err 129 (Send)\n"
                f"{t:%Y-%m-%dT%H:%M:%S}.500000000Z (APIServer pid=7) ERROR {t:%m-%d %H:%M:%S} [serving.py:88] "
                "tool parser returned nothing for request 7\n"
            )
        write_file(tmp_path / "logs" / f"llm-{k}.log", body)
    out = write_all(analyze(tmp_path / "logs"), tmp_path / "out")
    a = json.loads(out["analysis"].read_text())
    assert a["incidents"] == []
    (quiet,) = a["quiet_faults"]
    assert (quiet["label"], quiet["count"], quiet["file"]) == ("InfiniBand / RDMA transport error", 1, "llm-1.log")
    assert [e["template"] for e in a["unexplained_errors"]] == ["tool parser returned nothing for request <NUM>"]
    md = out["postmortem"].read_text()
    assert "no replica went dark, but faults were logged" in md and "| InfiniBand / RDMA transport error |" in md
    assert "no burst of faults" not in md


def test_a_replica_serving_less_because_less_is_sent_to_it_is_no_incident(tmp_path):
    _one_replica_slows(tmp_path, queued=False)
    assert analyze(tmp_path).to_json()["incidents"] == []


def test_a_drop_at_the_end_of_three_days_of_metrics_is_found(tmp_path):
    # A pod that served for days before failing: `kubectl logs` returns its whole life, which
    # is thousands of bins. (Python PELT took minutes per day of bins; the search must not.)
    from datetime import UTC, datetime

    start = datetime(2025, 3, 1, 0, 0, tzinfo=UTC)
    write_file(tmp_path / "vllm-0.log", _metrics_lines(start, 3 * 24 * 60, drop_at=3 * 24 * 60 - 20, every_s=30))
    incs = analyze(tmp_path).to_json()["incidents"]
    assert len(incs) == 1
    assert incs[0]["start"].startswith("2025-03-03T23:4")
    assert incs[0]["impact"]["measured"] is True


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
    write_file(tmp_path / "pods" / "vllm-5c8b-a.log", _metrics_lines(start, 60, drop_at=None))
    write_file(tmp_path / "pods" / "vllm-5c8b-b.log", _metrics_lines(start, 40, drop_at=None))
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
    old, new = _metrics_lines(start, 30, drop_at=None), _metrics_lines(roll + timedelta(minutes=1), 29, drop_at=None)
    for pod in ("vllm-5c8b-a", "vllm-5c8b-b"):
        write_file(tmp_path / "pods" / f"{pod}.log", old)
    for pod in ("vllm-7d9f-c", "vllm-7d9f-d"):
        write_file(
            tmp_path / "pods" / f"{pod}.log", new.replace("generation throughput: 24", "generation throughput: 11")
        )
    items = [
        _k8s_event(roll - timedelta(seconds=20), "ScalingReplicaSet", "vllm", "Scaled up replica set vllm-7d9f to 2"),
        _k8s_event(roll - timedelta(seconds=15), "Pulling", "vllm-7d9f-c", 'Pulling image "vllm/vllm-openai:v0.9.3"'),
        _k8s_event(roll, "ScalingReplicaSet", "vllm", "Scaled down replica set vllm-5c8b to 0 from 2"),
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


def _k8s_event(t, reason, pod, message, kind="Pod", count=1, first=None):
    stamp = f"{t:%Y-%m-%dT%H:%M:%SZ}"
    return {
        "kind": "Event",
        "type": "Warning" if reason in ("Unhealthy", "BackOff") else "Normal",
        "reason": reason,
        "message": message,
        "count": count,
        "firstTimestamp": f"{first:%Y-%m-%dT%H:%M:%SZ}" if first else stamp,
        "lastTimestamp": stamp,
        "involvedObject": {"kind": kind, "name": pod, "namespace": "serving"},
        "source": {"component": "kubelet", "host": "gpu-node-1"},
        "metadata": {"name": f"{pod}.{reason}.{stamp}", "namespace": "serving"},
    }


def test_a_liveness_probe_that_times_out_on_a_serving_engine_is_the_cause(tmp_path):
    # The engine was generating until the kubelet killed it: the probe timeout, not a crash.
    from datetime import UTC, datetime, timedelta

    start = datetime(2025, 3, 2, 8, 0, tzinfo=UTC)
    write_file(tmp_path / "pods" / "vllm-a.log", _metrics_lines(start, 40, drop_at=None))
    write_file(tmp_path / "pods" / "vllm-b.log", _metrics_lines(start, 20, drop_at=None))
    probe = 'Liveness probe failed: Get "http://10.0.0.7:8000/health": context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
    failed = start + timedelta(minutes=19, seconds=55)
    items = [
        _k8s_event(failed, "Unhealthy", "vllm-b", probe, count=3, first=failed - timedelta(seconds=20)),
        _k8s_event(
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
    write_file(tmp_path / "pods" / "vllm-b.log", _metrics_lines(start, 20, drop_at=18))
    rc = analyze(tmp_path).to_json()["incidents"][0]["root_cause"]
    assert not rc["label"].startswith("liveness probe timed out")


def _ramp_lines(start, minutes: int, level, waiting=lambda m: 0) -> str:
    """A V1 engine's metrics lines every 10 s; `level(minute)` is its generation throughput
    (prompt throughput follows it: the load itself); an idle engine logs none (DEBUG)."""
    from datetime import timedelta

    out = []
    for i in range(minutes * 6):
        t, m = start + timedelta(seconds=10 * i), i / 6
        gen = level(m) + (i % 5) * 8 if level(m) > 0 else 0.0
        if gen <= 0:
            continue
        out.append(
            f"{t:%Y-%m-%dT%H:%M:%S}.000000000Z (APIServer pid=7) INFO {t:%m-%d %H:%M:%S} [loggers.py:123] Engine 000: "
            f"Avg prompt throughput: {gen * 0.7:.1f} tokens/s, Avg generation throughput: {gen:.1f} tokens/s, "
            f"Running: {int(gen / 60)} reqs, Waiting: {waiting(m)} reqs, GPU KV cache usage: 30.0%, "
            "Prefix cache hit rate: 20.0%\n"
        )
    return "".join(out)


def test_throughput_that_falls_with_the_load_is_said_but_is_no_incident(tmp_path):
    # The end of the business day: prompt and generation sink together over an hour, nothing
    # waits, nothing fails. A fall like this on the plot is explained, not paged on.
    from datetime import UTC, datetime

    start = datetime(2025, 3, 2, 16, 0, tzinfo=UTC)
    evening = lambda m: 2400.0 if m < 60 else max(0.0, 2400.0 * (1 - (m - 60) / 60))  # noqa: E731
    for pod in ("vllm-a", "vllm-b"):
        write_file(tmp_path / "day" / f"{pod}.log", _ramp_lines(start, 180, evening))
    report = analyze(tmp_path / "day")
    d = report.to_json()
    assert d["incidents"] == []
    [decline] = d["load_declines"]
    assert decline["unit"] == "generation tokens/s" and decline["to_per_s"] < 0.1 * decline["from_per_s"]
    md = write_all(report, tmp_path / "out")["postmortem"].read_text()
    assert "with the load" in md and "Throughput stayed within its normal range" not in md

    # The same evening with a queue building up: work was sent and not served, an incident.
    queued = lambda m: 0 if m < 70 else 25  # noqa: E731
    for pod in ("vllm-a", "vllm-b"):
        write_file(tmp_path / "queue" / f"{pod}.log", _ramp_lines(start, 180, evening, queued))
    d = analyze(tmp_path / "queue").to_json()
    assert len(d["incidents"]) == 1 and d["load_declines"] == []

    # The same evening where the engines go dark at once while still busy: a loss, an incident.
    for pod in ("vllm-a", "vllm-b"):
        write_file(
            tmp_path / "dark" / f"{pod}.log", _ramp_lines(start, 80, evening) + _ramp_lines(start, 180, lambda m: 0)
        )
    write_file(tmp_path / "dark" / "vllm-c.log", _ramp_lines(start, 180, lambda m: 300.0))
    d = analyze(tmp_path / "dark").to_json()
    assert len(d["incidents"]) == 1 and d["load_declines"] == []

    # ...and where one of three goes dark mid-ramp: not the load either.
    for pod in ("vllm-a", "vllm-b"):
        write_file(tmp_path / "one" / f"{pod}.log", _ramp_lines(start, 180, evening))
    write_file(tmp_path / "one" / "vllm-c.log", _ramp_lines(start, 85, evening))
    assert analyze(tmp_path / "one").to_json()["load_declines"] == []


def test_a_stray_timestamp_decades_away_does_not_stretch_the_throughput_series(tmp_path):
    # A node whose clock was reset stamps a line 1970-01-01: the series keeps to the logs' own
    # weeks (a grid of 30 s bins back to 1970 would be 58 million bins) and says what it left out.
    from datetime import UTC, datetime

    start = datetime(2025, 3, 2, 8, 0, tzinfo=UTC)
    stray = _metrics_lines(datetime(1970, 1, 1, tzinfo=UTC), 1, None)
    write_file(tmp_path / "vllm-0.log", stray + _metrics_lines(start, 60, drop_at=40))
    report = analyze(tmp_path)
    assert report.series.t[0] >= datetime(2025, 1, 1, tzinfo=UTC)
    incs = report.to_json()["incidents"]
    assert len(incs) == 1 and incs[0]["start"].startswith("2025-03-02T08:4")
    assert any("1970-01-01" in w and "throughput series" in w for w in report.warnings)


def _prefill_decode(tmp_path: Path, decode: list[tuple[int, str]], prefill: list[tuple[int, str]]) -> dict:
    """A prefill and a decode pod (vLLM V1 under `kubectl logs --timestamps`) serving for 30 minutes;
    decode's generation falls from minute 15. `decode`/`prefill`: (second, line after the stamp)."""
    start = datetime(2026, 3, 4, 10, 0, tzinfo=UTC)

    def stamp(sec: int) -> str:
        return f"{start + timedelta(seconds=sec):%Y-%m-%dT%H:%M:%S}.000000000Z "

    def stats(sec: int, gen: float, waiting: int) -> str:
        t = start + timedelta(seconds=sec)
        return (
            f"{stamp(sec)}(APIServer pid=7) INFO {t:%m-%d %H:%M:%S} [loggers.py:123] Engine 000: Avg prompt throughput: "
            f"900.0 tokens/s, Avg generation throughput: {gen:.1f} tokens/s, Running: 12 reqs, Waiting: {waiting} reqs, "
            "GPU KV cache usage: 40.0%, Prefix cache hit rate: 0.0%"
        )

    for pod, extra, dropping in (("vllm-decode-0", decode, True), ("vllm-prefill-0", prefill, False)):
        rows = [
            (sec, stats(sec, 80.0 if dropping and sec >= 900 else 2400.0 + sec % 70, 0)) for sec in range(0, 1800, 10)
        ]
        rows += [(sec, stamp(sec) + line) for sec, line in extra]
        write_file(tmp_path / f"{pod}.log", "".join(line + "\n" for _, line in sorted(rows, key=lambda r: r[0])))
    return analyze(tmp_path).to_json()["incidents"][0]


def _v1(proc: str, level: str, where: str, sec: int, msg: str) -> str:
    t = datetime(2026, 3, 4, 10, 0, tzinfo=UTC) + timedelta(seconds=sec)
    return f"({proc} pid=41) {level} {t:%m-%d %H:%M:%S} [{where}] {msg}"


def test_a_kv_transfer_that_failed_under_decode_is_the_cause_not_the_leases_it_left_expiring(tmp_path):
    # UCX on decode's RDMA path fails, NIXL reads fail and are recomputed; two minutes later the
    # prefill instance gives up the blocks decode never read. The transport is the cause.
    decode = [
        (
            903,
            "[1772618703.000000] [vllm-decode-0:41:1]   ib_mlx5_log.c:171  UCX  ERROR   Transport retry count "
            "exceeded on mlx5_0:1/IB (synd 0x15 vend 0x81 hw_synd 0/0)",
        )
    ]
    for j in range(12):
        sec = 904 + 7 * j
        decode += [
            (
                sec,
                _v1(
                    "Worker_TP0",
                    "ERROR",
                    "nixl_connector.py:1422",
                    sec,
                    f"NIXL transfer failed for request cmpl-{j:04d}-0 with state ERR. Marking blocks as invalid.",
                ),
            ),
            (
                sec,
                _v1(
                    "EngineCore_DP0",
                    "WARNING",
                    "scheduler.py:1538",
                    sec,
                    "Recovered from KV load failure: 1 request(s) rescheduled (4096 tokens affected).",
                ),
            ),
        ]
    prefill = [
        (
            1025 + 5 * j,
            _v1(
                "EngineCore_DP0",
                "WARNING",
                "nixl_connector.py:1218",
                1025 + 5 * j,
                f"Releasing expired KV blocks for request cmpl-{j:04d}-0 which were retrieved by 0 decode "
                "worker(s) within 120 seconds.",
            ),
        )
        for j in range(12)
    ]
    inc = _prefill_decode(tmp_path, decode, prefill)
    rc = inc["root_cause"]
    assert (rc["status"], rc["category"], rc["hosts"]) == ("supported", "network", ["vllm-decode-0"])
    assert rc["evidence"][0]["file"] == "vllm-decode-0.log" and "Transport retry count" in rc["evidence"][0]["text"]
    symptoms = {h["category"] for h in inc["hypotheses"] if h["role"] == "symptom"}
    assert "kv-cache" in symptoms  # (the expired leases and the recomputed loads)


def test_decode_reading_blocks_the_prefill_had_released_is_named_as_stale_kv(tmp_path):
    prefill = []
    for j in range(12):
        sec = 1025 + 5 * j
        prefill += [
            (
                sec,
                _v1(
                    "EngineCore_DP0",
                    "WARNING",
                    "nixl_connector.py:1218",
                    sec,
                    f"Releasing expired KV blocks for request cmpl-{j:04d}-0 which were retrieved by 0 decode "
                    "worker(s) within 120 seconds.",
                ),
            ),
            (
                sec + 2,
                _v1(
                    "EngineCore_DP0",
                    "ERROR",
                    "nixl_connector.py:1248",
                    sec + 2,
                    f"Potentially invalid KV blocks for unrecognized request cmpl-{j:04d}-0 were retrieved by a "
                    "decode worker. They may have expired.",
                ),
            ),
        ]
    rc = _prefill_decode(tmp_path, [], prefill)["root_cause"]
    assert (rc["category"], rc["hosts"]) == ("kv-cache", ["vllm-prefill-0"]) and "stale KV" in rc["label"]


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


def test_expired_leases_alone_are_inconclusive_and_ask_for_the_decode_side(tmp_path):
    # Only the prefill's side was collected: its leases expired, which says decode never read,
    # not why.
    prefill = [
        (
            1025 + 5 * j,
            _v1(
                "EngineCore_DP0",
                "WARNING",
                "nixl_connector.py:1218",
                1025 + 5 * j,
                f"Releasing expired KV blocks for request cmpl-{j:04d}-0 which were retrieved by 0 decode worker(s) "
                "within 120 seconds.",
            ),
        )
        for j in range(12)
    ]
    rc = _prefill_decode(tmp_path, [], prefill)["root_cause"]
    assert rc["status"] == "inconclusive" and "decode instances" in rc["missing"]


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
        _metrics_lines(start, 40, drop_at=20) + "".join(stamp + line + "\n" for line in asyncio_error),
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


def test_a_prefill_decode_incident_gets_alerts_on_the_nixl_connectors_counters(tmp_path):
    import shutil
    import subprocess

    import yaml

    decode = [
        (
            904 + 7 * j,
            _v1(
                "Worker_TP0",
                "ERROR",
                "nixl_connector.py:1422",
                904 + 7 * j,
                f"NIXL transfer failed for request cmpl-{j:04d}-0 with state ERR. Marking blocks as invalid.",
            ),
        )
        for j in range(12)
    ]
    _prefill_decode(tmp_path / "logs", decode, [])
    out = write_all(analyze(tmp_path / "logs"), tmp_path / "out")
    rules = yaml.safe_load(out["alerts"].read_text())["spec"]["groups"][0]["rules"]
    exprs = {r["alert"]: r["expr"] for r in rules}
    assert "vllm:nixl_num_failed_transfers_total" in exprs["VLLMKVTransferFailures"]
    assert "vllm:nixl_num_kv_expired_reqs_total" in exprs["VLLMKVLeaseExpired"]
    promtool = shutil.which("promtool")
    if promtool:  # (CI installs it: the fixture's failing transfers fire the alert)
        d = tmp_path / "out"
        run = subprocess.run([promtool, "test", "rules", "alerts_test.yaml"], cwd=d, capture_output=True, text=True)
        assert run.returncode == 0 and "SUCCESS" in run.stdout, run.stdout + run.stderr


def test_cuda_launch_failures_after_deepeps_timeout_are_its_echo_not_gpu_faults(tmp_path):
    # Wide expert parallelism: a peer stops sending, DeepEP's timeout check fails and its kernels
    # trap, so every waiting GPU then reports "unspecified launch failure". No GPU is at fault.
    decode = []
    for rank in range(2):
        sec = 903 + rank
        decode += [
            (sec, f"DeepEP timeout check failed: rank = {rank}, thread = {t}, value = 1024)") for t in range(4)
        ] + [
            (
                sec + 1,
                _v1(f"Worker_TP{rank}", "ERROR", "multiproc_executor.py:596", sec + 1, "WorkerProc hit an exception."),
            ),
            (sec + 1, f"(Worker_TP{rank} pid=41) Traceback (most recent call last):"),
            (
                sec + 1,
                f'(Worker_TP{rank} pid=41)   File "/vllm/model_executor/layers/fused_moe/layer.py", line 9, in f',
            ),
            (sec + 1, f"(Worker_TP{rank} pid=41) torch.AcceleratorError: CUDA error: unspecified launch failure"),
        ]
    inc = _prefill_decode(tmp_path, decode, [])
    gpu = [h for h in inc["hypotheses"] if h["category"] == "gpu-fault"]
    assert gpu and all(h["role"] == "symptom" for h in gpu)
    assert all("timeout's echo" in h["why"] for h in gpu)
    assert inc["root_cause"]["category"] != "gpu-fault"


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
        _k8s_event(start + timedelta(seconds=570), "Unhealthy", "llama-405b-0", probe),
        _k8s_event(
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
