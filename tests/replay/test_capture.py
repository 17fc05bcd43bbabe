"""Capturing a replay trace from vLLM request log lines (every logged generation of them)."""

from __future__ import annotations

import json
import subprocess
import sys

from replay.capture import capture, prefix_ids
from tests.conftest import write

SYS = list(range(1000, 1040))  # a 40-token system prompt shared by every chat request
SP = (
    "SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, repetition_penalty=1.0, temperature=0.7, "
    "top_p=1.0, top_k=-1, min_p=0.0, seed=None, stop=[], stop_token_ids=[], ignore_eos=False, max_tokens={mt}, "
    "min_tokens=0, logprobs=None, prompt_logprobs=None, skip_special_tokens=True, spaces_between_special_tokens=True)"
)


def _ids(xs: list[int]) -> str:
    return "[" + ", ".join(map(str, xs)) + "]"


def test_each_vllm_generation_of_the_received_line_gives_prompt_length_and_max_tokens():
    rows = [
        # 0.4.x
        (
            10.0,
            f"Received request cmpl-aa: prompt: 'hi', sampling_params: {SP.format(mt=64)}, "
            f"prompt_token_ids: {_ids(SYS + [1, 2])}, lora_request: None.",
        ),
        # 0.5-0.6
        (
            10.5,
            f"Received request chat-bb: prompt: 'x', params: {SP.format(mt=32)}, "
            f"prompt_token_ids: {_ids(SYS + [3])}, lora_request: None, prompt_adapter_request: None.",
        ),
        # ~0.8-0.9: prompt_embeds shape; the prompt text itself mentions the key and max_tokens
        (
            11.0,
            "Received request chatcmpl-cc-0: prompt: 'why does prompt_token_ids: [9] max_tokens=7 show up?', "
            f"params: {SP.format(mt=16)}, prompt_token_ids: {_ids(SYS + [4, 5, 6])}, prompt_embeds shape: None, "
            "lora_request: None.",
        ),
    ]
    tr = capture(rows)
    assert [(r.prompt_tokens, r.output_tokens) for r in tr.requests] == [(42, 64), (41, 32), (43, 16)]
    assert [r.arrival_s for r in tr.requests] == [0.0, 0.5, 1.0]
    assert tr.rejected == {}


def test_shared_prompt_prefixes_share_block_ids_exactly_as_far_as_the_tokens_agree():
    a, b = prefix_ids(SYS + [1] * 30), prefix_ids(SYS + [2] * 30)
    assert a[:2] == b[:2]  # the first 32 tokens are the shared system prompt
    assert a[2] != b[2]  # block 3 holds tokens 32-47: 8 shared, then they differ
    assert len(a) == 5  # 70 tokens: four full blocks and a partial one


def test_newest_vllm_debug_details_and_generated_response_give_exact_lengths():
    rows = [
        (5.0, f"Received request chatcmpl-dd-1a2b: params: {SP.format(mt=512)}, lora_request: None."),
        (
            5.0,
            f"Request chatcmpl-dd-1a2b details: prompt: 'q', prompt_token_ids: {_ids(SYS)}, prompt_embeds shape: None.",
        ),
        (
            5.3,
            "Generated response chatcmpl-dd-1a2b (streaming delta): output: 'a', output_token_ids: [5, 6], finish_reason: None",
        ),
        (
            5.6,
            "Generated response chatcmpl-dd-1a2b (streaming complete): output: 'b', output_token_ids: [7], finish_reason: stop",
        ),
    ]
    (r,) = capture(rows).requests
    assert (r.prompt_tokens, r.output_tokens) == (40, 3)  # the output actually produced, not max_tokens


def test_requests_without_ids_or_with_truncated_ids_are_set_aside_with_a_reason():
    rows = [
        (1.0, f"Received request cmpl-ee: params: {SP.format(mt=8)}, lora_request: None."),
        (2.0, f"Received request cmpl-ff: prompt: 'p', params: {SP.format(mt=8)}, prompt_token_ids: [1, 2, 3, 4"),
        (
            3.0,
            f"Received request cmpl-gg: prompt: 'p', params: {SP.format(mt=8)}, prompt_token_ids: [1, 2], lora_request: None.",
        ),
    ]
    tr = capture(rows)
    assert len(tr.requests) == 1
    assert sorted(tr.rejected.values()) == [1, 1]
    assert any("truncated" in k for k in tr.rejected) and any("no prompt token ids" in k for k in tr.rejected)


def test_cli_replays_a_log_directory_by_capturing_its_request_lines(tmp_path):
    lines = []
    for i in range(40):
        s = 10
        ids = SYS * 4 + list(range(i * 100, i * 100 + 60))
        lines.append(
            f"2025-03-02T08:00:{s:02d}.{i:06d}Z INFO 03-02 08:00:{s:02d} [logger.py:39] Received request "
            f"chatcmpl-{i:032x}: prompt: 'q{i}', params: {SP.format(mt=200)}, prompt_token_ids: {_ids(ids)}, "
            "prompt_embeds shape: None, lora_request: None."
        )
    write(tmp_path / "logs" / "vllm-0.log", "\n".join(lines) + "\n")
    out = tmp_path / "o"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "forensics",
            "replay",
            str(tmp_path / "logs"),
            "--compare",
            "lru-evict-live",
            "lru",
            "--blocks",
            "40",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env={"COLUMNS": "250", "PATH": ""},
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    assert "captured 40 requests" in p.stdout
    by = {r["policy"]: r for r in json.loads((out / "replay.json").read_text())["runs"]}
    assert by["lru"]["requests"] == 40 and by["lru"]["corrupted_requests"] == 0
    assert by["lru-evict-live"]["corrupted_requests"] > 0


def test_analyze_replay_captures_from_request_lines_when_no_trace_file_was_kept(tmp_path):
    ids = [SYS * 4 + list(range(i * 100, i * 100 + 60)) for i in range(30)]
    write(
        tmp_path / "logs" / "vllm-0.log",
        "".join(
            f"INFO 03-02 08:00:10 [logger.py:39] Received request chatcmpl-{i:032x}: prompt: 'q', "
            f"params: {SP.format(mt=150)}, prompt_token_ids: {_ids(x)}, lora_request: None.\n"
            for i, x in enumerate(ids)
        ),
    )
    out = tmp_path / "o"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "forensics",
            "analyze",
            str(tmp_path / "logs"),
            "--replay",
            "--replay-blocks",
            "40",
            "--out",
            str(out),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        env={"COLUMNS": "250", "PATH": ""},
        timeout=600,
    )
    assert p.returncode in (0, 1), p.stderr
    doc = json.loads((out / "replay.json").read_text())
    assert doc["requests"] == 30 and "request lines" in doc["trace"]
    assert {r["policy"] for r in doc["runs"]} >= {"lru", "lru-evict-live"}
    assert "no GPU KV cache usage" in doc["load"]["rate_from"] and doc["rate_scale"] == 1.0
    assert doc["blocks"] == 40 and "--replay-blocks" in doc["load"]["blocks_from"]


def test_analyze_replay_takes_the_pool_and_the_load_from_the_engines_logs(tmp_path):
    from forensics import ingest
    from forensics.replay_bridge import replay_incident

    ids = [SYS * 4 + list(range(i * 100, i * 100 + 60)) for i in range(12)]
    write(
        tmp_path / "logs" / "vllm-0.log",
        "INFO 03-02 07:59:00 [kv_cache_utils.py:864] GPU KV cache size: 4,096 tokens\n"
        + "".join(
            f"INFO 03-02 08:00:{10 + 4 * i:02d} [logger.py:39] Received request chatcmpl-{i:032x}: prompt: 'q', "
            f"params: {SP.format(mt=150)}, prompt_token_ids: {_ids(x)}, lora_request: None.\n"
            for i, x in enumerate(ids)
        )
        + "INFO 03-02 08:01:00 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
        "throughput: 80.0 tokens/s, Running: 9 reqs, Waiting: 3 reqs, GPU KV cache usage: 100.0%, "
        "Prefix cache hit rate: 50.0%\n",
    )
    doc = replay_incident(ingest(tmp_path / "logs"), tmp_path / "logs")
    assert doc["blocks"] == 4096 // 16 and "4,096 tokens" in doc["load"]["blocks_from"]
    lru = next(r for r in doc["runs"] if r["policy"] == "lru")
    # 12 requests 4 s apart never fill 256 blocks; compressed, the correct policy fills them
    assert doc["rate_scale"] > 1 and lru["peak_kv_usage"] == 1.0 and "100%" in doc["load"]["rate_from"]
