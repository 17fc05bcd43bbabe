"""An engine's own exception that no catalog entry names, read by where it was raised (`catalog.frames`)."""

from __future__ import annotations

import pytest

from forensics import analyze
from forensics.diagnosis import advice
from forensics.diagnosis.catalog import frames
from forensics.diagnosis.signatures import Trait, traits_of
from tests.conftest import write

METRICS = (
    "INFO 03-02 07:59:{s:02d} [loggers.py:118] Engine 000: Avg prompt throughput: 1200.0 tokens/s, Avg generation "
    "throughput: 800.0 tokens/s, Running: 12 reqs, Waiting: 0 reqs, GPU KV cache usage: 40.1%, Prefix cache hit rate: "
    "12.0%"
)


def _engine_core_traceback(frames_: list[tuple[str, int, str, str]], exception: str, at: str = "08:00:03") -> str:
    head = f"ERROR 03-02 {at} [core.py:634] "
    lines = [head + "EngineCore encountered a fatal error.", head + "Traceback (most recent call last):"]
    for path, line, func, code in frames_:
        lines += [head + f'  File "/usr/local/lib/python3.12/dist-packages/{path}", line {line}, in {func}']
        lines += [head + f"    {code}"]
    lines += [head + exception]
    lines += [
        f"ERROR 03-02 {at} [async_llm.py:420] AsyncLLM output_handler failed.",
        f"ERROR 03-02 {at} [async_llm.py:420] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an "
        "issue. See stack trace (above) for the root cause.",
    ]
    return "\n".join(lines)


def _served_then(tb: str) -> str:
    ok = [METRICS.format(s=s) for s in range(0, 60, 10)]
    errors = [
        f'INFO:     10.0.0.7:5{k:04d} - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error'
        for k in range(6)
    ]
    return "\n".join([*ok, tb, *errors]) + "\n"


CORE = ("vllm/v1/engine/core.py", 625, "run_engine_core", "engine_core.run_busy_loop()")
SCHED = ("vllm/v1/core/sched/scheduler.py", 870, "update_from_output", "self.connector.update_state_after_alloc(r, b)")


@pytest.mark.parametrize(
    ("inner", "exception", "category", "label"),
    [
        (
            ("vllm/v1/kv_offload/cpu.py", 212, "complete_store", "del self._pending[block_hash]"),
            "KeyError: 'b7c91e0a44d1'",
            "kv-cache",
            "KeyError raised in vLLM's KV offload",
        ),
        (
            ("vllm/v1/structured_output/backend_xgrammar.py", 97, "compile_grammar", "ctx = self.compiler.compile(s)"),
            "RuntimeError: [08:00:03] grammar_parser.cc:84: EBNF parse error at line 3: expect rule name",
            "engine",
            "RuntimeError raised in structured output (grammar compilation)",
        ),
        (
            ("vllm/v1/core/block_pool.py", 301, "free_blocks", "block.ref_cnt -= 1"),
            "AttributeError: 'NoneType' object has no attribute 'ref_cnt'",
            "kv-cache",
            "AttributeError raised in vLLM's KV cache manager",
        ),
    ],
)
def test_an_engine_exception_no_entry_names_is_the_cause_by_the_layer_that_raised_it(
    tmp_path, inner, exception, category, label
):
    tb = _engine_core_traceback([CORE, SCHED, inner], exception)
    write(tmp_path / "vllm-0.log", _served_then(tb))
    (inc,) = analyze(tmp_path).to_json()["incidents"]
    rc = inc["root_cause"]
    assert (rc["status"], rc["category"]) == ("supported", category)
    assert rc["label"].startswith(label)
    # the evidence is the traceback's first line, and its text says where it was raised
    (ev, *_) = rc["evidence"]
    assert (ev["file"], ev["line"]) == ("vllm-0.log", 7)
    assert f'{inner[0]}", line {inner[1]}' in ev["text"]
    # the engine's death and the 500s after it are its symptoms and impact
    assert any(h["category"] == "engine" and h["role"] == "symptom" for h in inc["hypotheses"])
    assert "turn that feature off" in advice.action_for(rc["category"], rc["label"])


def test_a_catalogued_fault_outranks_an_uncatalogued_exception_beside_it(tmp_path):
    # A CUDA OOM in one engine and an unknown ValueError in the scheduler of another at the same
    # second: the known fault's text is the stronger evidence.
    oom = _engine_core_traceback(
        [CORE, ("vllm/v1/worker/gpu_model_runner.py", 1400, "execute_model", "out = self.model(x)")],
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "79.10 GiB of which 1.10 GiB is free.",
    )
    odd = _engine_core_traceback([CORE, SCHED], "ValueError: num_computed_tokens went negative")
    write(tmp_path / "vllm-0.log", _served_then(oom))
    write(tmp_path / "vllm-1.log", _served_then(odd))
    (inc,) = analyze(tmp_path).to_json()["incidents"]
    assert inc["root_cause"]["category"] == "gpu-memory"
    read = [h for h in inc["hypotheses"] if Trait.UNCATALOGUED in traits_of(h["label"])]
    assert read and all(h["role"] != "root_cause" for h in read)


def test_the_engines_death_notice_alone_is_no_fault_of_where_it_was_raised(tmp_path):
    # EngineDeadError says "see above": with the cause cut from the paste, the verdict stays open.
    tb = _engine_core_traceback(
        [CORE], "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above)."
    )
    write(tmp_path / "vllm-0.log", _served_then(tb))
    (inc,) = analyze(tmp_path).to_json()["incidents"]
    assert inc["root_cause"]["status"] == "inconclusive"


def test_the_innermost_frame_in_a_known_area_names_it_past_library_frames():
    tb = (
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 625, in run_engine_core\n'
        '  File "/opt/venv/lib/python3.12/site-packages/lmcache/v1/cache_engine.py", line 410, in retrieve\n'
        '  File "/opt/venv/lib/python3.12/site-packages/torch/utils/_contextlib.py", line 116, in decorate_context\n'
        "IndexError: index 4096 is out of bounds for dimension 0 with size 4096"
    )
    exc = "IndexError: index 4096 is out of bounds for dimension 0 with size 4096"
    sig, text = frames.read(tb, exc)
    assert (sig.category, sig.kind, sig.label.split(" (")[0]) == ("kv-cache", "fault", "IndexError raised in LMCache")
    assert text.endswith("(raised at lmcache/v1/cache_engine.py:410 in retrieve)")
    assert Trait.UNCATALOGUED in traits_of(sig.label) and frames.is_uncatalogued(sig.label)
    # frames outside every serving package say nothing
    assert frames.read(tb.replace("lmcache/", "mylib/").replace("vllm/v1/engine/", "app/"), exc) is None


def test_an_engine_that_never_started_is_named_by_the_first_failure_of_its_start(tmp_path):
    # vLLM found no routable interface (the loopback warning), Gloo's mesh between the ranks could not
    # connect, the engine core failed to start and the client's "see root cause above" followed.
    start = [
        "INFO 03-02 08:00:04 [api_server.py:1043] vLLM API server version 0.8.5",
        "WARNING 03-02 08:00:20 [utils.py:2382] Using the loopback address as fallback: 127.0.0.1",
        "INFO 03-02 08:00:21 [core.py:58] Initializing a V1 LLM engine (v0.8.5) with config: model='m'",
    ]
    failed = _engine_core_traceback(
        [
            CORE,
            ("torch/distributed/distributed_c10d.py", 1710, "_new_process_group_helper", "ProcessGroupGloo(...)"),
        ],
        "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
        at="08:02:25",
    ).replace("EngineCore encountered a fatal error.", "EngineCore failed to start.")
    client = [
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core_client.py", line 420, in __init__',
        "RuntimeError: Engine core initialization failed. See root cause above.",
    ]
    write(tmp_path / "vllm-0.log", "\n".join([*start, failed, *client]) + "\n")
    (inc,) = analyze(tmp_path).to_json()["incidents"]
    rc = inc["root_cause"]
    assert (rc["status"], rc["category"]) == ("supported", "network")
    assert rc["label"].startswith("the ranks could not connect to each other at start-up")
    assert rc["evidence"][0]["line"] == 4
    # the client's pointer back at it is no fault of its own
    assert not any(Trait.UNCATALOGUED in traits_of(h["label"]) for h in inc["hypotheses"])
    assert "VLLM_HOST_IP" in advice.action_for(rc["category"], rc["label"])
