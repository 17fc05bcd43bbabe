"""A service that never started is an outage of its own (`forensics.diagnosis.startup`)."""

from __future__ import annotations

from forensics import analyze
from forensics.report.postmortem import write_all
from tests.conftest import write as write_file

BOOT = """\
INFO 03-14 10:00:01 [__init__.py:244] Automatically detected platform cuda.
INFO 03-14 10:00:04 [api_server.py:1395] vLLM API server version 0.9.2
INFO 03-14 10:00:04 [cli_args.py:325] non-default args: {'model': '/models/llama-3.1-70b', 'tensor_parallel_size': 8, 'pipeline_parallel_size': 2}
INFO 03-14 10:00:15 [core.py:526] Waiting for init message from front-end.
INFO 03-14 10:00:15 [core.py:69] Initializing a V1 LLM engine (v0.9.2) with config: model='/models/llama-3.1-70b', speculative_config=None, tokenizer='/models/llama-3.1-70b', dtype=torch.bfloat16, max_seq_len=32768
"""
LOOPBACK = (
    "/usr/local/lib/python3.12/dist-packages/vllm/utils/__init__.py:752: UserWarning: Failed to get the IP "
    "address, using 0.0.0.0 by default.The value can be set by the environment variable VLLM_HOST_IP or HOST_IP.\n"
    "  warnings.warn(\n"
)
FAILED = """\
ERROR 03-14 10:00:46 [core.py:586] EngineCore failed to start.
ERROR 03-14 10:00:46 [core.py:586] Traceback (most recent call last):
ERROR 03-14 10:00:46 [core.py:586]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 577, in run_engine_core
ERROR 03-14 10:00:46 [core.py:586]     engine_core = EngineCoreProc(*args, **kwargs)
ERROR 03-14 10:00:46 [core.py:586]   File "/usr/local/lib/python3.12/dist-packages/vllm/distributed/parallel_state.py", line 1011, in init_distributed_environment
ERROR 03-14 10:00:46 [core.py:586]     torch.distributed.init_process_group(
ERROR 03-14 10:00:46 [core.py:586] RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error
Process EngineCore_0:
RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
"""


def test_ranks_that_cannot_connect_at_start_are_a_startup_failure_explained_by_the_loopback_warning(tmp_path):
    write_file(tmp_path / "vllm-0.log", BOOT + LOOPBACK + FAILED)
    report = analyze(tmp_path)
    (inc,) = report.to_json()["incidents"]
    rc = inc["root_cause"]
    assert inc["impact"]["detector"] == "startup-failure"
    assert (rc["status"], rc["category"]) == ("supported", "network")
    # (the Gloo error in the traceback that begins on line 8, not the client's "see root cause above")
    assert rc["evidence"][0]["line"] == 8 and "Gloo connectFullMesh failed" in rc["template"]
    assert any("no routable address" in w and "vllm-0.log:6" in w for w in rc["why"])
    md = write_all(report, tmp_path / "out")["postmortem"].read_text()
    assert "The service never started" in md


def test_the_same_failure_without_the_warning_is_still_a_network_startup_failure(tmp_path):
    write_file(tmp_path / "vllm-0.log", BOOT + FAILED)
    (inc,) = analyze(tmp_path).to_json()["incidents"]
    assert (inc["impact"]["detector"], inc["root_cause"]["category"]) == ("startup-failure", "network")
    assert not any("no routable address" in w for w in inc["root_cause"]["why"])


def test_a_start_up_that_died_with_only_the_clients_notice_says_what_to_collect(tmp_path):
    # The EngineCore's own traceback went to a log nobody collected: the API server's notice is
    # all there is. An outage at start, whose cause these logs do not hold.
    notice = (
        "ERROR 03-14 10:00:46 [core_client.py:441] Engine core initialization failed. See root cause above. "
        "Failed core proc(s): {'EngineCore_0': 1}\n"
    )
    write_file(tmp_path / "vllm-0.log", BOOT + notice)
    (inc,) = analyze(tmp_path).to_json()["incidents"]
    rc = inc["root_cause"]
    assert (inc["impact"]["detector"], rc["status"]) == ("startup-failure", "inconclusive")
    assert "The service never started" in rc["missing"]
    assert "vllm-0.log:1" in rc["missing"]


def test_an_engine_that_served_and_then_failed_is_not_a_startup_failure(tmp_path):
    served = (
        "INFO 03-14 10:01:30 [api_server.py:1457] Starting vLLM API server 0 on http://0.0.0.0:8000\n"
        "INFO:     Application startup complete.\n"
    )
    write_file(tmp_path / "vllm-0.log", BOOT + served + FAILED)
    (inc,) = analyze(tmp_path).to_json()["incidents"]
    assert inc["impact"]["detector"] == "error-burst"


def test_a_start_up_with_benign_warnings_that_serves_is_no_incident(tmp_path):
    benign = (
        "WARNING 03-14 10:00:20 [config.py:1363] Default sampling parameters have been overridden by the model's "
        "Hugging Face generation config recommended from the model creator.\n"
        "WARNING 03-14 10:00:22 [utils.py:2580] We must use the `spawn` multiprocessing start method. Overriding "
        "VLLM_WORKER_MULTIPROC_METHOD to 'spawn'.\n"
        "INFO 03-14 10:01:30 [api_server.py:1457] Starting vLLM API server 0 on http://0.0.0.0:8000\n"
        "INFO:     Application startup complete.\n"
    )
    write_file(tmp_path / "vllm-0.log", BOOT + LOOPBACK + benign)
    assert analyze(tmp_path).to_json()["incidents"] == []
