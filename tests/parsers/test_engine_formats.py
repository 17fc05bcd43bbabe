"""Serving engines' and services' own line formats: vLLM JSON logs, TensorRT-LLM, SGLang, Ray Serve, PyTorch, Python logging, Go/Rust services, nginx, Envoy, UCX."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import polars as pl
import pytest

from forensics import ingest
from forensics import schema as s
from tests.conftest import assert_balanced, events_of, write

pytestmark = pytest.mark.usefixtures("as_a_large_run")  # (the threshold's own tests set theirs)


def test_ray_core_worker_fatal_lines_keep_their_critical_level(tmp_path):
    write(
        tmp_path / "raylet.out",
        "[2024-10-02 17:40:11,532 E 51220 51301] core_worker.cc:712: Worker died unexpectedly: SIGSEGV\n"
        "[2024-10-02 17:40:11,540 C 51220 51301] core_worker.cc:201: The core worker has already been shutdown.\n",
    )
    ev = ingest(tmp_path).events.sort(s.LINE)
    assert ev.select(s.SOURCE, s.LEVEL).rows() == [("ray", "ERROR"), ("ray", "CRITICAL")]
    assert ev[s.MESSAGE][1] == "core_worker.cc:201: The core worker has already been shutdown."


def test_a_worker_named_with_its_rank_gives_the_rank_column(tmp_path):
    write(
        tmp_path / "v.log",
        "(VllmWorker rank=1 pid=265) INFO 03-02 10:00:00 [x.py:1] loading weights\n"
        "(VllmWorker rank=12 pid=266) INFO 03-02 10:00:00 [x.py:1] loading weights\n"
        "(APIServer pid=264) INFO 03-02 10:00:01 [y.py:2] serving\n",
    )
    ev = ingest(tmp_path, year=2025).events
    assert ev.select(s.PROCESS, s.RANK, s.PID).rows() == [
        ("VllmWorker rank=1", 1, 265),
        ("VllmWorker rank=12", 12, 266),
        ("APIServer", None, 264),
    ]


def test_ucx_lines_are_timed_by_their_epoch_stamp_and_named_by_their_host(tmp_path):
    # UCX (under NIXL's prefill/decode KV transfer): `[epoch.us] [host:pid:thread] file:line UCX LEVEL msg`,
    # the pid padded; the same without the stamp; and its fatal-error handler's `[host:pid:thread:tid]`.
    write(
        tmp_path / "decode-0" / "ucx.log",
        "[1772618403.123456] [vllm-decode-0:41   :1]   ib_mlx5_log.c:171  UCX  ERROR   Transport retry count "
        "exceeded on mlx5_0:1/IB (synd 0x15 vend 0x81 hw_synd 0/0)\n"
        "[1772618404.000001] [vllm-decode-0:41   :0]         parser.c:2045 UCX  WARN  unused environment variable: "
        "UCX_MEMTYPE_CACHE\n"
        "mm_posix.c:195  UCX  ERROR open(file_name=/proc/211766/fd/28 flags=0x0) failed: Permission denied\n"
        "[cn0001:3639441:0:3639441] ib_mlx5_log.c:171  Transport retry count exceeded on mlx5_0:1/IB\n"
        # the handler's word of a signal that killed the process, with its backtrace below it
        "[vllm-decode-0:41:0:57] Caught signal 11 (Segmentation fault: address not mapped to object at address (nil))\n"
        "==== backtrace (tid:     57) ====\n"
        " 0 0x0000000000042520 __sigaction()  ???:0\n"
        " 1 0x00000000000a1b2c uct_ib_mlx5_completion_with_err()  ???:0\n"
        "=================================\n",
    )
    write(
        tmp_path / "node-7" / "dmesg.txt",
        "[ 4211.730125] NVRM: Xid (PCI:0000:c1:00): 79, GPU has fallen off the bus.\n",
    )
    r = ingest(tmp_path)
    assert_balanced(r)
    assert r.unparsed == 0
    ucx = r.events.filter(pl.col(s.SOURCE) == "ucx").sort(s.LINE)
    assert ucx.select(s.LEVEL, s.HOST, s.PID, s.COMPONENT).rows() == [
        ("ERROR", "vllm-decode-0", 41, "ib_mlx5_log.c"),
        ("WARNING", "vllm-decode-0", 41, "parser.c"),
        ("ERROR", None, None, "mm_posix.c"),
        ("ERROR", "cn0001", 3639441, "ib_mlx5_log.c"),  # (the fatal-error handler names no level)
        ("ERROR", "vllm-decode-0", 41, None),
    ]
    assert ucx[s.RAW_LINES].to_list()[-1] == 5 and ucx[s.MESSAGE].to_list()[-1].startswith("Caught signal 11 (")
    assert (
        ucx[s.MESSAGE].to_list()[0] == "Transport retry count exceeded on mlx5_0:1/IB (synd 0x15 vend 0x81 hw_synd 0/0)"
    )
    assert ucx[s.TS].to_list()[:2] == [
        datetime(2026, 3, 4, 10, 0, 3, 123456, tzinfo=UTC),
        datetime(2026, 3, 4, 10, 0, 4, 1, tzinfo=UTC),
    ]
    assert ucx[s.TS_QUALITY].to_list()[:2] == ["exact", "exact"]
    # A dmesg stamp counts seconds since boot (nine digits at most): still the kernel's.
    kernel = r.events.filter(pl.col(s.SOURCE) == "kernel")
    assert kernel[s.MESSAGE].to_list() == ["NVRM: Xid (PCI:0000:c1:00): 79, GPU has fallen off the bus."]


def test_an_applications_json_records_keep_their_level_logger_and_the_error_beside_the_message(tmp_path):
    # zap (the inference gateway's EPP, operators), python-json-logger: the cause is in `error`
    # or `exc_info`, not in `msg`; a shipper's record of a producer's line is still that producer's.
    write(
        tmp_path / "epp.log",
        '{"level":"info","ts":"2025-08-01T10:00:00.123Z","logger":"epp","caller":"scheduling/scheduler.go:112",'
        '"msg":"Scheduling a request"}\n'
        '{"level":"error","ts":1754042401.5,"caller":"handlers/server.go:88","msg":"Failed to dispatch request",'
        '"error":"no pods available for the model"}\n'
        '{"log":"INFO 08-01 10:00:02 [api_server.py:1] Started server process\\n","stream":"stderr",'
        '"time":"2025-08-01T10:00:02.000000000Z"}\n'
        '{"log":"a line of no producer\\n","stream":"stderr","time":"2025-08-01T10:00:02.500000000Z"}\n'
        '{"levelname":"ERROR","name":"worker","message":"step failed","timestamp":"2025-08-01T10:00:03Z",'
        '"exc_info":"Traceback (most recent call last):\\n  File \\"w.py\\", line 3, in run\\nRuntimeError: boom"}\n',
    )
    r = ingest(tmp_path)
    assert_balanced(r)
    ev = r.events.sort(s.LINE)
    assert ev.select(s.SOURCE, s.LEVEL, s.COMPONENT).rows() == [
        ("app", "INFO", "epp"),
        ("app", "ERROR", "handlers/server.go"),
        ("vllm", "INFO", "api_server.py"),
        ("unknown", None, None),
        ("app", "ERROR", "worker"),
    ]
    assert ev[s.MESSAGE][1] == 'Failed to dispatch request error="no pods available for the model"'
    assert ev[s.MESSAGE][4].split("\n")[0] == "step failed" and ev[s.MESSAGE][4].endswith("RuntimeError: boom")
    assert ev[s.TS][1] == datetime(2025, 8, 1, 10, 0, 1, 500000, tzinfo=UTC)
    assert r.unparsed == 1  # (only the line of no producer)


def _json_lines(*records: dict) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def test_vllms_json_log_records_are_vllm_and_uvicorn_events_with_metrics_and_request_ids(tmp_path):
    # `vllm serve --logging-config.formatter json` (or python-json-logger in a dictConfig): one
    # record per vLLM and uvicorn log record; the time is the formatter's local `asctime`, no zone.
    def rec(t, level, name, message, proc="EngineCore_DP0", pid=311, **extra):
        return (
            {"asctime": t, "levelname": level, "name": name, "processName": proc, "process": pid}
            | {
                "message": message,
                "vllm_process_name": proc,
            }
            | extra
        )

    write(
        tmp_path / "vllm-0.log",
        _json_lines(
            rec(
                "2025-03-02 08:06:50,120",
                "INFO",
                "vllm.entrypoints.openai.api_server",
                "Received request chatcmpl-9f2c: params: SamplingParams(n=1)",
                proc="APIServer",
                pid=1,
            ),
            rec(
                "2025-03-02 08:06:50,500",
                "INFO",
                "uvicorn.access",
                '10.0.0.7:51234 - "POST /v1/chat/completions HTTP/1.1" 503',
                proc="MainProcess",
                pid=1,
            ),
            rec(
                "2025-03-02 08:07:00,123",
                "INFO",
                "vllm.v1.metrics.loggers",
                "Engine 000: Avg prompt throughput: "
                "120.5 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 12 reqs, "
                "GPU KV cache usage: 99.5%, Prefix cache hit rate: 0.0%",
            ),
            rec(
                "2025-03-02 08:07:01,004",
                "ERROR",
                "vllm.v1.engine.core",
                "EngineCore encountered a fatal error.",
                exc_info='Traceback (most recent call last):\n  File "core.py", line 7, in run\nRuntimeError: '
                "Cache corruption detected in block 7",
            ),
            rec(
                "2025-03-02 08:07:01,010",
                "ERROR",
                "lmcache.v1.cache_engine",
                "Cache corruption detected in block 7",
                filename="cache_engine.py",
            ),
        ),
    )
    r = ingest(tmp_path, tz="Europe/Berlin")
    assert_balanced(r)
    assert r.unparsed == 0
    ev = r.events.sort(s.LINE)
    assert ev.select(s.SOURCE, s.LEVEL, s.PROCESS, s.PID, s.COMPONENT).rows() == [
        ("vllm", "INFO", "APIServer", 1, "vllm.entrypoints.openai.api_server"),
        ("uvicorn", "INFO", None, 1, "access"),
        ("vllm", "INFO", "EngineCore_DP0", 311, "vllm.v1.metrics.loggers"),
        ("vllm", "ERROR", "EngineCore_DP0", 311, "vllm.v1.engine.core"),
        ("kv-store", "ERROR", "EngineCore_DP0", 311, "cache_engine.py"),
    ]
    assert ev[s.REQUEST_ID][0] == "chatcmpl-9f2c"
    assert (ev[s.HTTP_STATUS][1], ev[s.HTTP_PATH][1]) == (503, "/v1/chat/completions")
    assert ev[s.MESSAGE][3].startswith("EngineCore encountered a fatal error.\nTraceback")
    # The local times, in the zone asked for (Berlin is UTC+1 in March).
    assert ev[s.TS][2] == datetime(2025, 3, 2, 7, 7, 0, 123000, tzinfo=UTC)
    metrics = dict(r.metrics.select(s.METRIC, s.VALUE).rows())
    assert metrics["gpu_kv_cache_usage"] == pytest.approx(0.995) and metrics["waiting"] == 12
    assert set(r.metrics[s.ENGINE]) == {"000"}


def test_vllms_json_records_behind_its_process_prefix_and_kubectls_stamp_keep_both(tmp_path):
    # vLLM prefixes all its engine and workers write, JSON records too; kubectl's exact stamp is
    # the time (the record's `asctime` is local and to the second); a dict a process prints is no record.
    def rec(level, name, message):
        return json.dumps({"asctime": "2025-03-02 09:06:39,000", "levelname": level, "name": name, "message": message})

    write(
        tmp_path / "llama-70b-0.log",
        "2025-03-02T08:06:39.418000794Z (EngineCore_DP0 pid=114) "
        + rec("ERROR", "vllm.v1.engine.core", "EngineCore encountered a fatal error.")
        + "\n2025-03-02T08:06:39.418001690Z (EngineCore_DP0 pid=114) Traceback (most recent call last):\n"
        "2025-03-02T08:06:39.418002755Z (EngineCore_DP0 pid=114) RuntimeError: Cache corruption detected in block 7\n"
        '2025-03-02T08:06:40.000000000Z (Worker_TP1 pid=241) {"rank": 1, "world_size": 2}\n'
        "2025-03-02T08:06:41.500000000Z (APIServer pid=60) "
        + rec(
            "INFO",
            "vllm.v1.metrics.loggers",
            "Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
            "throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 31 reqs, GPU KV cache usage: 0.0%",
        )
        + "\n",
    )
    r = ingest(tmp_path, tz="Asia/Tokyo")
    assert_balanced(r)
    ev = r.events.sort(s.LINE)
    assert ev.select(s.LINE, s.SOURCE, s.LEVEL, s.PROCESS, s.PID, s.RAW_LINES).rows() == [
        (1, "vllm", "ERROR", "EngineCore_DP0", 114, 3),
        (4, "unknown", None, "Worker_TP1", 241, 1),
        (5, "vllm", "INFO", "APIServer", 60, 1),
    ]
    assert ev[s.MESSAGE][0].endswith("RuntimeError: Cache corruption detected in block 7")
    assert ev[s.MESSAGE][1] == '{"rank": 1, "world_size": 2}'
    assert ev[s.TS][0] == datetime(2025, 3, 2, 8, 6, 39, 418000, tzinfo=UTC)
    assert ev[s.TS_QUALITY][0] == "exact"
    assert r.metrics.filter(pl.col(s.METRIC) == "waiting")[s.VALUE].to_list() == [31.0]


def test_a_json_records_zoneless_time_is_local_and_a_yearless_one_takes_the_directorys_year(tmp_path):
    # vLLM's own date format (`%m-%d %H:%M:%S`) in a record, beside a pod log with exact times;
    # python-json-logger's `created` (epoch seconds) is preferred to its `asctime`.
    write(tmp_path / "other.log", "2025-12-31T23:59:00.000000000Z INFO 12-31 23:59:00 [core.py:1] start\n")
    write(
        tmp_path / "vllm-json.log",
        _json_lines(
            {"asctime": "12-31 23:59:30", "levelname": "WARNING", "name": "vllm.v1.core", "message": "late"},
            {"asctime": "01-01 00:00:10", "levelname": "INFO", "name": "vllm.v1.core", "message": "new year"},
            {"created": 1767225620.5, "asctime": "nonsense", "levelname": "INFO", "name": "vllm", "message": "epoch"},
            {"asctime": "2026-01-01T00:00:30.25", "levelname": "INFO", "name": "vllm", "message": "iso, no zone"},
        ),
    )
    r = ingest(tmp_path)
    assert_balanced(r)
    ev = r.events.filter(pl.col(s.FILE) == "vllm-json.log").sort(s.LINE)
    assert ev[s.TS].to_list() == [
        datetime(2025, 12, 31, 23, 59, 30, tzinfo=UTC),
        datetime(2026, 1, 1, 0, 0, 10, tzinfo=UTC),
        datetime(2026, 1, 1, 0, 0, 20, 500000, tzinfo=UTC),
        datetime(2026, 1, 1, 0, 0, 30, 250000, tzinfo=UTC),
    ]
    assert ev[s.TS_QUALITY].to_list() == ["inferred-year", "inferred-year", "exact", "exact"]


def test_tensorrt_llm_lines_are_trtllm_events_with_their_level_rank_and_local_time(tmp_path):
    # Its Python logger (`[%m/%d/%Y-%H:%M:%S] [TRT-LLM] [RANK n] [X]`, local time) and its C++
    # runtime (`[TensorRT-LLM][LEVEL][rank]`, no time): before, every line was an unknown one,
    # so the engine's ERROR lines counted for nothing.
    write(
        tmp_path / "trtllm-worker-0.log",
        "[TensorRT-LLM] TensorRT-LLM version: 0.17.0\n"
        "[11/02/2025-14:05:01] [TRT] [W] Unused input: position_ids\n"
        "[11/02/2025-14:05:09] [TRT-LLM] [I] Load engine takes: 41.2 sec\n"
        "[TensorRT-LLM][INFO] Allocated 18.25 GiB for max tokens in paged KV cache (59840).\n"
        "[TensorRT-LLM][ERROR][3] Assertion failed: free blocks left (/src/kvCacheManager.cpp:512)\n"
        "[TensorRT-LLM][ERROR] tensorrt_llm::common::TllmException: [TensorRT-LLM][ERROR] Assertion failed: "
        "free blocks left (/src/kvCacheManager.cpp:512)\n"
        "1       0x7f3a740272b5 tensorrt_llm::common::throwRuntimeError(char const*, int, std::string const&) + 82\n"
        "2       0x7f3a74a01c2e /usr/lib/python3/dist-packages/tensorrt_llm/libs/libtensorrt_llm.so(+0xa01c2e) [0x7f3a74a01c2e]\n"
        "[11/02/2025-14:06:30] [TRT-LLM] [RANK 1] [E] Error in event loop: Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.12/dist-packages/tensorrt_llm/_torch/pyexecutor/py_executor.py", line 901\n'
        "RuntimeError: CUDA error: an illegal memory access was encountered\n",
    )
    r = ingest(tmp_path, tz="Europe/Berlin")
    assert_balanced(r)
    assert r.unparsed == 0
    ev = r.events.sort(s.LINE)
    assert ev.select(s.LINE, s.SOURCE, s.LEVEL, s.COMPONENT, s.RANK, s.RAW_LINES).rows() == [
        (1, "trtllm", None, "TensorRT-LLM", None, 1),
        (2, "trtllm", "WARNING", "TRT", None, 1),
        (3, "trtllm", "INFO", "TRT-LLM", None, 1),
        (4, "trtllm", "INFO", "TensorRT-LLM", None, 1),
        (5, "trtllm", "ERROR", "TensorRT-LLM", 3, 1),
        (6, "trtllm", "ERROR", "TensorRT-LLM", None, 3),  # (its exception's native backtrace folded in)
        (9, "trtllm", "ERROR", "TRT-LLM", 1, 3),
    ]
    assert ev[s.MESSAGE][4] == "Assertion failed: free blocks left (/src/kvCacheManager.cpp:512)"
    assert ev[s.MESSAGE][5].endswith("[0x7f3a74a01c2e]")
    assert ev[s.MESSAGE][6].endswith("an illegal memory access was encountered")
    # Local times in the zone asked for; the C++ runtime's lines inherit the line above's.
    assert ev[s.TS][2] == datetime(2025, 11, 2, 13, 5, 9, tzinfo=UTC)
    assert ev[s.TS_QUALITY].to_list() == ["none", "exact", "exact", "inherited", "inherited", "inherited", "exact"]


def test_sglangs_lines_are_events_of_its_ranks_with_batch_metrics_and_uvicorns_access_lines(tmp_path):
    # `[%(asctime)s{prefix}] %(message)s`: the ranks in the prefix, no level, a local time; uvicorn's
    # lines through the same format; a traceback's lines raw below the line that logged it.
    write(
        tmp_path / "sglang-llama-0.log",
        "[2025-03-02 08:00:00] The server is fired up and ready to roll!\n"
        "[2025-03-02 08:00:01 TP0] Prefill batch. #new-seq: 1, #new-token: 23, #cached-token: 0, token usage: 0.05, "
        "#running-req: 0, #queue-req: 4\n"
        "[2025-03-02 08:00:02 TP0] Decode batch. #running-req: 8, #token: 48211, token usage: 0.12, "
        "gen throughput (token/s): 171.25, #queue-req: 0\n"
        '[2025-03-02 08:00:02] INFO:     127.0.0.1:38411 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
        "[2026-01-14 11:40:11 DP1 TP0] Decode batch, #running-req: 32, #token: 9342, full token usage: 0.08, "
        "swa token usage: 0.02, cuda graph: True, gen throughput (token/s): 1402.87, #queue-req: 0\n"
        "[2026-01-14 11:40:12 DP1 TP0] Prefill batch, #new-seq: 1, #new-token: 214, #cached-token: 0, token usage: "
        "0.08, #running-req: 31, #queue-req: 0, cuda graph: True, input throughput (token/s): 611.04\n"
        "[2026-01-14 11:40:13 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1999, in run_scheduler_process\n'
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "[20:02:54 TP0] Decode batch. #running-req: 1, #token: 56, token usage: 0.00, gen throughput (token/s): 28.23, "
        "#queue-req: 0\n",
    )
    r = ingest(tmp_path, tz="Europe/Berlin")
    assert_balanced(r)
    assert r.unparsed == 0
    ev = r.events.sort(s.LINE)
    assert ev.select(s.LINE, s.SOURCE, s.LEVEL, s.PROCESS, s.RANK, s.RAW_LINES).rows() == [
        (1, "python", None, None, None, 1),  # (no rank, no batch: the generic Python-logging line it is)
        (2, "sglang", None, "TP0", 0, 1),
        (3, "sglang", None, "TP0", 0, 1),
        (4, "uvicorn", "INFO", None, None, 1),
        (5, "sglang", None, "DP1 TP0", None, 1),
        (6, "sglang", None, "DP1 TP0", None, 1),
        (7, "sglang", None, "TP1", 1, 3),
        (10, "sglang", None, "TP0", 0, 1),
    ]
    assert ev[s.HTTP_STATUS][3] == 200 and ev[s.MESSAGE][6].endswith("an illegal memory access was encountered")
    # Local times in the zone asked for; a line without its date has no time of its own.
    assert ev[s.TS][2] == datetime(2025, 3, 2, 7, 0, 2, tzinfo=UTC) and ev[s.TS][3] == ev[s.TS][2]
    assert ev[s.TS_QUALITY].to_list()[6:] == ["exact", "inherited"]
    got = {(row[s.LINE], row[s.METRIC]): row[s.VALUE] for row in r.metrics.iter_rows(named=True)}
    assert got == {
        (2, "gpu_kv_cache_usage"): 0.05,
        (2, "running"): 0,
        (2, "waiting"): 4,
        (3, "generation_tokens_per_s"): 171.25,
        (3, "gpu_kv_cache_usage"): 0.12,
        (3, "running"): 8,
        (3, "waiting"): 0,
        (5, "generation_tokens_per_s"): 1402.87,
        (5, "gpu_kv_cache_usage"): 0.08,
        (5, "running"): 32,
        (5, "waiting"): 0,
        (6, "prompt_tokens_per_s"): 611.04,
        (6, "gpu_kv_cache_usage"): 0.08,
        (6, "running"): 31,
        (6, "waiting"): 0,
        (10, "generation_tokens_per_s"): 28.23,
        (10, "gpu_kv_cache_usage"): 0.0,
        (10, "running"): 1,
        (10, "waiting"): 0,
    }
    assert dict(r.metrics.select(s.LINE, s.ENGINE).unique().rows())[5] == "DP1 TP0"


def test_ray_serve_replicas_vllm_lines_and_serves_own_lines_are_read(tmp_path):
    # vLLM inside a Ray Serve replica writes behind Ray's actor prefix (the application and
    # deployment after colons); Serve's controller, proxy and replicas write their own format.
    write(
        tmp_path / "ray-serve-llm.log",
        "(ServeReplica:default:VLLMDeployment pid=1234) INFO 03-02 08:00:02 [loggers.py:123] Engine 000: Avg "
        "prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 "
        "reqs, GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%\n"
        "(ServeReplica:llm-app:LLMServer:meta-llama--Llama-3.1-8B pid=77, ip=10.0.0.9) ERROR 03-02 08:00:03 "
        "[core.py:720] EngineCore encountered a fatal error.\n"
        "INFO 2025-03-02 08:00:04,197 default_VLLMDeployment k2m9q4tz 5b0e7c21-3d4f-4a1b-9c2e-7f6a8d9e0b13 -- "
        "POST /v1/chat/completions 500 4.1ms\n"
        "INFO 2025-03-02 08:00:04,803 default_D p7d3x1rw 8e2f4a61-0c3b-47d9-a5e8-2b1c9d7f3e05 -- CALL method OK 1.3ms\n"
        "WARNING 2025-03-02 08:00:05,409 controller 812 deployment_state.py:1498 - Replica D#Kq3VzN of deployment "
        "D failed health check, stopping it.\n",
    )
    r = ingest(tmp_path, year=2025)
    assert_balanced(r)
    assert r.unparsed == 0
    ev = r.events.sort(s.LINE)
    assert ev.select(s.SOURCE, s.LEVEL, s.PROCESS, s.PID, s.COMPONENT).rows() == [
        ("vllm", "INFO", "ServeReplica:default:VLLMDeployment", 1234, "loggers.py"),
        ("vllm", "ERROR", "ServeReplica:llm-app:LLMServer:meta-llama--Llama-3.1-8B", 77, "core.py"),
        ("ray", "INFO", "k2m9q4tz", None, "default_VLLMDeployment"),
        ("ray", "INFO", "p7d3x1rw", None, "default_D"),
        ("ray", "WARNING", None, 812, "controller"),
    ]
    access = ev.row(2, named=True)
    assert (access[s.HTTP_METHOD], access[s.HTTP_PATH], access[s.HTTP_STATUS]) == ("POST", "/v1/chat/completions", 500)
    assert access[s.REQUEST_ID] == "5b0e7c21-3d4f-4a1b-9c2e-7f6a8d9e0b13"
    assert access[s.TS] == datetime(2025, 3, 2, 8, 0, 4, 197000, tzinfo=UTC)
    assert ev[s.HTTP_STATUS][3] is None  # (a handle call is no HTTP request)
    assert ev[s.MESSAGE][4].startswith("Replica D#Kq3VzN")
    assert r.metrics.filter(pl.col(s.METRIC) == "generation_tokens_per_s")[s.VALUE].to_list() == [2.0]


def test_logfmt_records_of_go_services_are_timed_levelled_events(tmp_path):
    # dcgm-exporter / containerd (logrus), slog, go-kit (Prometheus family): time with its offset.
    write(
        tmp_path / "dcgm-exporter.log",
        'time="2025-08-01T10:00:03Z" level=info msg="Starting dcgm-exporter"\n'
        'time="2025-08-01T12:00:04.25+02:00" level=error msg="Failed to watch metrics" error="x \\"quoted\\" y"\n'
        'time=2025-08-01T10:00:05.120Z level=ERROR msg="dispatch failed" pool=vllm err="no ready endpoints"\n'
        'level=error ts=2025-08-01T10:00:07.001Z caller=notifier.go:527 msg="Error sending alert" err="deadline"\n'
        "time=2025-08-01T10:00:08Z level=warning msg=plain\n",
    )
    r = ingest(tmp_path)
    assert_balanced(r)
    assert r.unparsed == 0
    ev = r.events.sort(s.LINE)
    assert ev.select(s.SOURCE, s.LEVEL, s.COMPONENT, s.MESSAGE).rows() == [
        ("app", "INFO", None, "Starting dcgm-exporter"),
        ("app", "ERROR", None, 'Failed to watch metrics error="x \\"quoted\\" y"'),
        ("app", "ERROR", None, 'dispatch failed error="no ready endpoints"'),
        ("app", "ERROR", "notifier.go", 'Error sending alert error="deadline"'),
        ("app", "WARNING", None, "plain"),
    ]
    assert ev[s.TS].to_list()[:2] == [
        datetime(2025, 8, 1, 10, 0, 3, tzinfo=UTC),
        datetime(2025, 8, 1, 10, 0, 4, 250000, tzinfo=UTC),
    ]
    assert set(ev[s.TS_QUALITY].to_list()) == {"exact"}


def test_go_and_rust_services_console_lines_are_timed_levelled_events(tmp_path):
    # The router, KV-aware scheduler and operators beside the engines: Rust tracing (level padded
    # to five, spans before the target, colour when on a TTY), zap's console (tab-separated, its
    # time ISO or epoch, JSON fields last), env_logger, Go's log (local time). A padded ` WARN`
    # line is an event of its own, not an indented continuation of the line above.
    write(
        tmp_path / "router.log",
        '2025-03-02T10:00:01.123456Z ERROR dynamo_runtime::pipeline: request failed error="connection reset"\n'
        "2025-03-02T10:00:02.123456Z  WARN request{id=7 method=POST}:handle: dynamo_llm::kv_router: no workers\n"
        "\x1b[2m2025-03-02T10:00:03.5Z\x1b[0m \x1b[32m INFO\x1b[0m \x1b[2mdynamo_llm::http\x1b[0m\x1b[2m:\x1b[0m served\n"
        "[2025-03-02T10:00:06Z ERROR vllm_router::router] upstream returned 503\n",
    )
    write(
        tmp_path / "scheduler.log",
        '2025-03-02T11:00:03.123+01:00\tERROR\tcontroller/pool.go:88\tReconciler error\t{"pool": "vllm"}\n'
        "2025-03-02T10:00:04.000Z\tinfo\tscheduler\tpicked pod vllm-1\n"
        "1740909605.5\tWARN\tsetup\tslow start\n",
    )
    write(tmp_path / "device-plugin.log", "2025/03/02 11:00:07 main.go:40: [ERROR] Failed to initialize NVML\n")
    r = ingest(tmp_path, tz="Europe/Berlin")
    assert_balanced(r)
    assert r.unparsed == 0 and r.folded == 0
    ev = r.events.sort(s.FILE, s.LINE)
    assert ev.select(s.FILE, s.SOURCE, s.LEVEL, s.COMPONENT, s.MESSAGE).rows() == [
        ("device-plugin.log", "app", "ERROR", "main.go", "[ERROR] Failed to initialize NVML"),
        ("router.log", "app", "ERROR", "dynamo_runtime::pipeline", 'request failed error="connection reset"'),
        ("router.log", "app", "WARNING", "dynamo_llm::kv_router", "no workers"),
        ("router.log", "app", "INFO", "dynamo_llm::http", "served"),
        ("router.log", "app", "ERROR", "vllm_router::router", "upstream returned 503"),
        ("scheduler.log", "app", "ERROR", "pool.go", 'Reconciler error {"pool": "vllm"}'),
        ("scheduler.log", "app", "INFO", "scheduler", "picked pod vllm-1"),
        ("scheduler.log", "app", "WARNING", "setup", "slow start"),
    ]
    assert ev[s.TS].to_list() == [
        datetime(2025, 3, 2, 10, 0, 7, tzinfo=UTC),  # (Berlin's local time, `--tz`)
        datetime(2025, 3, 2, 10, 0, 1, 123456, tzinfo=UTC),
        datetime(2025, 3, 2, 10, 0, 2, 123456, tzinfo=UTC),
        datetime(2025, 3, 2, 10, 0, 3, 500000, tzinfo=UTC),
        datetime(2025, 3, 2, 10, 0, 6, tzinfo=UTC),
        datetime(2025, 3, 2, 10, 0, 3, 123000, tzinfo=UTC),
        datetime(2025, 3, 2, 10, 0, 4, tzinfo=UTC),
        datetime(2025, 3, 2, 10, 0, 5, 500000, tzinfo=UTC),
    ]


def test_pytorchs_own_glog_layout_lines_are_torch_events_of_the_pod(tmp_path):
    # torch._logging (torchrun's elastic agent, dynamo) writes glog's layout from Python: read as
    # klog it was a node's line (no pod), and the worker's death went unattributed.
    write(
        tmp_path / "vllm-0.log",
        "W1012 22:31:22.267000 140 torch/distributed/elastic/multiprocessing/api.py:858] Sending process 123 "
        "closing signal SIGTERM\n"
        "E1012 22:31:23.100000 140 torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: -6) "
        "local_rank: 0 (pid: 123) of binary: /usr/bin/python\n"
        "[rank0]:W1012 22:31:25.000000 140 torch/_dynamo/convert_frame.py:762] hit config.cache_size_limit\n",
    )
    write(tmp_path / "node/kubelet.log", 'I1012 22:31:24.000000 1450 kubelet.go:2455] "SyncLoop ADD" source="api"\n')
    r = ingest(tmp_path, year=2025)
    ev = r.events.sort(s.FILE, s.LINE).select(s.FILE, s.SOURCE, s.LEVEL, s.POD, s.RANK)
    assert ev.rows() == [
        ("node/kubelet.log", "kubelet", "INFO", None, None),
        ("vllm-0.log", "torch", "WARNING", "vllm-0", None),
        ("vllm-0.log", "torch", "ERROR", "vllm-0", None),
        ("vllm-0.log", "torch", "WARNING", "vllm-0", 0),
    ]


def test_a_ray_drivers_output_names_its_daemons_and_workers(tmp_path):
    # `ray job logs` / the driver's console: its own `ts<TAB>LEVEL file.py:N -- message` lines,
    # the raylet's OOM killer behind `(raylet)`, a worker without an actor name behind `(pid=N)`.
    write(
        tmp_path / "ray-driver.log",
        "2025-03-02 10:00:01,123\tINFO worker.py:1234 -- Connected to Ray cluster.\n"
        "(raylet) [2025-03-02 10:00:03,000 E 123 456] (raylet) node_manager.cc:3021: 1 Workers (tasks / actors) "
        "killed due to memory pressure (OOM)\n"
        "(pid=4711, ip=10.0.0.2) ERROR 03-02 10:00:04 [worker_base.py:575] Error executing method execute_model\n",
    )
    r = ingest(tmp_path)
    assert_balanced(r)
    ev = r.events.sort(s.LINE).select(s.SOURCE, s.LEVEL, s.COMPONENT, s.PROCESS, s.PID, s.MESSAGE)
    assert ev.rows() == [
        ("python", "INFO", "worker.py", None, None, "Connected to Ray cluster."),
        (
            "ray",
            "ERROR",
            None,
            "raylet",
            None,
            "(raylet) node_manager.cc:3021: 1 Workers (tasks / actors) killed due to memory pressure (OOM)",
        ),
        ("vllm", "ERROR", "worker_base.py", None, 4711, "Error executing method execute_model"),
    ]


def test_python_loggings_common_formats_give_the_logger_and_the_level(tmp_path):
    # basicConfig's `LEVEL:name:message` (no time: it inherits one), the cookbook's
    # `name - LEVEL - message` and `[LEVEL] [name]`, vLLM production-stack router's `LEVEL: message
    # (file:line:logger)`, torch elastic's `name: [LEVEL] message`: the logger (or file) is the
    # component. basicConfig lines after a message that ends in `:` are events, not the block it opens.
    write(
        tmp_path / "router.log",
        "2025-03-02 10:00:01,123 - vllm.engine - ERROR - Engine loop died:\n"
        "ERROR:vllm.engine.async_llm_engine:Engine background task failed\n"
        "WARNING:root:low memory\n"
        "2025-03-02 10:00:02,000 [WARNING] [router.health] vllm-1 unhealthy\n"
        "2025-03-02 10:00:03,000 INFO router.pool: 3 endpoints\n"
        "[2025-03-02 10:00:04,000] ERROR: Error during request: Server disconnected "
        "(request.py:140:vllm_router.services.request_service.request)\n"
        "[2025-03-02 10:00:05,456] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -6) "
        "local_rank: 0 (pid: 340) of binary: /usr/bin/python3\n",
    )
    r = ingest(tmp_path)
    assert_balanced(r)
    assert r.unparsed == 0 and r.folded == 0
    assert r.events.sort(s.LINE).select(s.SOURCE, s.LEVEL, s.COMPONENT, s.MESSAGE, s.TS_QUALITY).rows() == [
        ("python", "ERROR", "vllm.engine", "Engine loop died:", "exact"),
        ("python", "ERROR", "vllm.engine.async_llm_engine", "Engine background task failed", "inherited"),
        ("python", "WARNING", "root", "low memory", "inherited"),
        ("python", "WARNING", "router.health", "vllm-1 unhealthy", "exact"),
        ("python", "INFO", "router.pool", "3 endpoints", "exact"),
        ("python", "ERROR", "request.py", "Error during request: Server disconnected", "exact"),  # production-stack
        (  # torchrun's elastic agent
            "torch",
            "ERROR",
            "torch.distributed.elastic.multiprocessing.api",
            "failed (exitcode: -6) local_rank: 0 (pid: 340) of binary: /usr/bin/python3",
            "exact",
        ),
    ]


def test_a_python_warning_is_a_warning_of_its_category_with_its_source_line_folded_in(tmp_path):
    # `warnings` writes `file:line: Category: message` to stderr, then the warning's source line
    # indented; inside a vLLM process its prefix is on both. No time: each inherits one.
    cuda = "/usr/local/lib/python3.12/dist-packages/torch/cuda/__init__.py:61: FutureWarning: "
    c10d = "/usr/local/lib/python3.12/dist-packages/torch/distributed/distributed_c10d.py:4807: UserWarning: "
    lines = [
        "INFO 03-01 11:11:30 [api_server.py:1] vLLM API server version 0.11.0",
        cuda + "The pynvml package is deprecated. Please install nvidia-ml-py instead.",
        "  import pynvml  # type: ignore[import]",
        "(Worker_TP1 pid=7) " + c10d + "No device id is provided via `init_process_group` or `barrier `.",
        "(Worker_TP1 pid=7)   warnings.warn(  # warn only once",
        "<frozen importlib._bootstrap>:241: DeprecationWarning: builtin type SwigPyPacked has no __module__",
        "/srv/app.py:3: not a warning: Warning is not the category",
    ]
    ev = events_of(tmp_path / "vllm.log", lines)
    assert ev.select(s.LINE, s.SOURCE, s.LEVEL, s.COMPONENT, s.PROCESS, s.RAW_LINES, s.TS_QUALITY).rows() == [
        (1, "vllm", "INFO", "api_server.py", None, 1, "inferred-year"),
        (2, "python", "WARNING", "FutureWarning", None, 2, "inherited"),
        (4, "python", "WARNING", "UserWarning", "Worker_TP1", 2, "inherited"),
        (6, "python", "WARNING", "DeprecationWarning", None, 1, "inherited"),
        (7, "unknown", None, None, None, 1, "inherited"),
    ]
    assert ev[s.MESSAGE][1] == cuda + (
        "The pynvml package is deprecated. Please install nvidia-ml-py instead.\n  import pynvml  # type: ignore[import]"
    )


def test_nginx_access_and_error_lines_of_the_ingress_are_timed_requests_and_errors(tmp_path):
    # ingress-nginx's controller: klog lines, access lines (`upstreaminfo`, any offset) and the
    # error log's lines (local time, level, pid, the connection's `*serial`) in one stream.
    write(
        tmp_path / "ingress-nginx-controller.log",
        'I0307 09:59:58.123456       7 controller.go:214] "Backend successfully reloaded"\n'
        '10.0.0.7 - - [07/Mar/2024:10:00:05 +0000] "POST /v1/chat/completions HTTP/1.1" 200 1530 "-" "httpx/0.27" '
        "812 3.104 [serving-vllm-8000] [] 10.1.2.3:8000 1530 3.104 200 6f1c9a\n"
        "2024/03/07 10:00:06 [error] 31#31: *1234 connect() failed (111: Connection refused) while connecting to "
        'upstream, client: 10.0.0.7, server: llm.example.com, request: "POST /v1/chat/completions HTTP/1.1"\n'
        '10.0.0.7 - - [07/Mar/2024:11:00:07 +0100] "POST /v1/chat/completions HTTP/1.1" 503 190 "-" "httpx/0.27" '
        "812 0.000 [serving-vllm-8000] [] - - - - 6f1c9c\n"
        '192.168.1.1 - - [07/Mar/2024:10:00:08 +0000] "GET /healthz HTTP/1.1" 200 2 "-" "kube-probe/1.29"\n',
    )
    r = ingest(tmp_path)
    assert_balanced(r)
    assert r.unparsed == 0
    ev = r.events.sort(s.LINE).filter(pl.col(s.SOURCE) == "nginx")
    assert ev.select(s.LEVEL, s.HTTP_METHOD, s.HTTP_PATH, s.HTTP_STATUS, s.TS, s.PID).rows() == [
        ("INFO", "POST", "/v1/chat/completions", 200, datetime(2024, 3, 7, 10, 0, 5, tzinfo=UTC), None),
        ("ERROR", None, None, None, datetime(2024, 3, 7, 10, 0, 6, tzinfo=UTC), 31),
        ("INFO", "POST", "/v1/chat/completions", 503, datetime(2024, 3, 7, 10, 0, 7, tzinfo=UTC), None),
        ("INFO", "GET", "/healthz", 200, datetime(2024, 3, 7, 10, 0, 8, tzinfo=UTC), None),
    ]
    assert ev[s.MESSAGE][1].startswith("connect() failed (111: Connection refused) while connecting to upstream")
    # (no time in an access line's message: one kind of request mines to one template)
    assert ev[s.MESSAGE][0] == (
        '10.0.0.7 - "POST /v1/chat/completions" 200 1530 "-" "httpx/0.27" 812 3.104 [serving-vllm-8000] [] '
        "10.1.2.3:8000 1530 3.104 200 6f1c9a"
    )


def test_envoy_access_lines_of_the_gateway_are_timed_requests_with_their_status(tmp_path):
    # Envoy's default format and Istio's (response code details and more after the flags).
    write(
        tmp_path / "istio-ingressgateway.log",
        '[2025-08-01T10:00:05.123Z] "POST /v1/completions HTTP/1.1" 503 UH no_healthy_upstream - "-" 310 19 0 - '
        '"10.0.0.7" "python-requests/2.31" "req-1" "vllm.svc:8000" "-" outbound|8000||vllm.default.svc.cluster.local '
        "- 10.0.1.9:8080 10.0.0.7:51234 - default\n"
        '[2016-04-15T20:17:00.310Z] "POST /api/v1/locations HTTP/2" 204 - 154 0 226 100 "10.0.35.28" "nsq2http" '
        '"cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2" "locations" "tcp://10.0.2.1:80"\n'
        # Envoy Gateway's default JSON access record
        '{":authority":"vllm.example.com","bytes_received":310,"bytes_sent":19,"duration":0,"method":"POST",'
        '"protocol":"HTTP/1.1","response_code":503,"response_code_details":"no_healthy_upstream","response_flags":"UH",'
        '"start_time":"2025-08-01T10:15:00.123Z","upstream_host":null,"x-envoy-origin-path":"/v1/completions",'
        '"x-request-id":"a1b2"}\n',
    )
    r = ingest(tmp_path)
    assert_balanced(r)
    assert r.unparsed == 0
    ev = r.events.sort(s.LINE)
    assert ev.select(s.SOURCE, s.HTTP_METHOD, s.HTTP_PATH, s.HTTP_STATUS, s.TS).rows() == [
        ("envoy", "POST", "/v1/completions", 503, datetime(2025, 8, 1, 10, 0, 5, 123000, tzinfo=UTC)),
        ("envoy", "POST", "/api/v1/locations", 204, datetime(2016, 4, 15, 20, 17, 0, 310000, tzinfo=UTC)),
        ("envoy", "POST", "/v1/completions", 503, datetime(2025, 8, 1, 10, 15, 0, 123000, tzinfo=UTC)),
    ]
    assert ev[s.MESSAGE][0].startswith('"POST /v1/completions HTTP/1.1" 503 UH no_healthy_upstream')
    assert ev[s.MESSAGE][2].startswith('"POST /v1/completions HTTP/1.1" 503 UH no_healthy_upstream')
