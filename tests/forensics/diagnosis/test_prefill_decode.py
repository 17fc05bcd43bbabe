"""Disaggregated serving: KV transfers, stale KV, leases, the NIXL connector's alerts, DeepEP (`catalog.kv_cache`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from forensics import analyze
from forensics.report.postmortem import write_all
from tests.conftest import write as write_file


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
