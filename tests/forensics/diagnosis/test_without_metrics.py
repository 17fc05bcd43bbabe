"""Errors in logs with no throughput lines: failed requests and engine tracebacks are the
incident (`series.request_failures`, `signatures.classify`'s lone tracebacks)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from forensics import analyze
from tests.conftest import write as write_file

START = datetime(2026, 4, 9, 14, 0, tzinfo=UTC)


def _access(minutes: range, status: int, every_s: int = 15) -> list[str]:
    out = []
    for m in minutes:
        for k in range(60 // every_s):
            t = START + timedelta(minutes=m, seconds=k * every_s)
            reason = "OK" if status == 200 else "Internal Server Error"
            out.append(
                f"{t:%Y-%m-%dT%H:%M:%S}.000000000Z INFO:     10.0.3.{k}:5{m:04d} - "
                f'"POST /v1/chat/completions HTTP/1.1" {status} {reason}\n'
            )
    return out


def test_a_server_answering_only_500s_is_an_incident_measured_by_its_errors(tmp_path):
    # The pod's log was collected after it broke: every request it answered failed, and it
    # logged nothing else. Nothing to fall from, yet its users were down.
    write_file(tmp_path / "vllm-0.log", "".join(_access(range(0, 12), 500)))
    (inc,) = analyze(tmp_path).to_json()["incidents"]
    assert inc["impact"]["detector"] == "error-burst"
    assert (inc["impact"]["http_5xx"], inc["impact"]["http_requests"]) == (48, 48)
    assert inc["root_cause"]["status"] == "inconclusive"


def test_a_few_failed_requests_among_many_served_are_no_incident(tmp_path):
    lines = _access(range(0, 30), 200) + _access(range(12, 14), 500, every_s=30)
    write_file(tmp_path / "vllm-0.log", "".join(sorted(lines)))
    assert analyze(tmp_path).to_json()["incidents"] == []


def test_a_burst_of_500s_after_an_engine_fault_names_the_fault(tmp_path):
    t = START + timedelta(minutes=5, seconds=58)
    head = f"{t:%Y-%m-%dT%H:%M:%S}.000000000Z (EngineCore_DP0 pid=90) ERROR {t:%m-%d %H:%M:%S} [core.py:708] "
    fault = [
        head + "EngineCore encountered a fatal error.\n",
        head + "Traceback (most recent call last):\n",
        head + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity "
        "of 79.19 GiB of which 1.02 GiB is free.\n",
    ]
    write_file(tmp_path / "vllm-0.log", "".join(sorted(_access(range(6, 12), 500)) + fault))
    (inc,) = analyze(tmp_path).to_json()["incidents"]
    assert (inc["root_cause"]["status"], inc["root_cause"]["category"]) == ("supported", "gpu-memory")


ENGINE_TB = """\
(EngineCore_DP0 pid=412) ERROR 04-09 14:06:01 [core.py:720]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 1574, in execute_model
(EngineCore_DP0 pid=412) ERROR 04-09 14:06:01 [core.py:720]     sampler_output = self.sampler(
(EngineCore_DP0 pid=412) ERROR 04-09 14:06:01 [core.py:720]   File "/usr/local/lib/python3.12/dist-packages/torch/nn/modules/module.py", line 1751, in _wrapped_call_impl
(EngineCore_DP0 pid=412) ERROR 04-09 14:06:01 [core.py:720]     return self._call_impl(*args, **kwargs)
"""


def test_an_engine_traceback_cut_before_its_exception_is_an_engine_failure_it_cannot_name(tmp_path):
    write_file(tmp_path / "engine.log", ENGINE_TB)
    (inc,) = analyze(tmp_path).to_json()["incidents"]
    rc = inc["root_cause"]
    assert rc["status"] == "inconclusive"
    assert "traceback" in rc["missing"]
    (h,) = [h for h in inc["hypotheses"] if h["role"] == "symptom"]
    assert h["label"].startswith("an engine process logged a traceback cut before its exception")
    assert h["evidence"][0]["line"] == 1


def test_an_api_servers_traceback_for_a_refused_request_is_no_incident(tmp_path):
    # Request validation logged at ERROR with its traceback: the server refused one request.
    refused = """\
(APIServer pid=1) ERROR 04-09 14:06:01 [serving_chat.py:222] Error in preprocessing prompt inputs
(APIServer pid=1) ERROR 04-09 14:06:01 [serving_chat.py:222] Traceback (most recent call last):
(APIServer pid=1) ERROR 04-09 14:06:01 [serving_chat.py:222]   File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/serving_chat.py", line 205, in create_chat_completion
(APIServer pid=1) ERROR 04-09 14:06:01 [serving_chat.py:222]     ) = await self._preprocess_chat(
(APIServer pid=1) ERROR 04-09 14:06:01 [serving_chat.py:222] ValueError: This model's maximum context length is 32768 tokens. However, you requested 40112 tokens in the messages.
"""
    write_file(tmp_path / "api.log", refused)
    assert analyze(tmp_path).to_json()["incidents"] == []
