"""Ingest end to end: the multi-source incident, schema, accounting, speed passes, Parquet, documents in file order."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from forensics import ingest
from forensics import schema as s
from forensics.ingestion import batches
from parsers._compiled import fastlane, metric_scan
from tests.conftest import SHARED, assert_balanced, event_row, events_of, write

pytestmark = pytest.mark.usefixtures("as_a_large_run")  # (the threshold's own tests set theirs)


def test_events_table_has_the_declared_schema(incident_dir):
    r = ingest(incident_dir)
    assert dict(r.events.schema) == s.EVENT_DTYPES
    assert dict(r.metrics.schema) == s.METRIC_DTYPES


def test_every_line_of_the_incident_fixture_is_accounted_for(incident_dir):
    r = ingest(incident_dir)
    assert_balanced(r)
    assert r.unparsed == 0
    n_lines = sum(len(p.read_text().splitlines()) for p in incident_dir.iterdir())
    assert r.lines == n_lines


def _refuse(*_args, **_kwargs):
    raise AssertionError("a compiled speed pass ran")


def test_a_small_run_reads_every_line_without_compiling_the_speed_passes(incident_dir, monkeypatch):
    monkeypatch.setattr(batches, "SPEED_PASSES_MIN_CHARS", 8 * 1024 * 1024)
    monkeypatch.setattr(fastlane, "split", _refuse)
    monkeypatch.setattr(metric_scan, "spans", _refuse)
    r = ingest(incident_dir)
    assert_balanced(r)
    assert r.unparsed == 0
    assert r.metrics.height > 0
    assert event_row(r.events, source="uvicorn")[s.HTTP_STATUS] is not None


def test_the_tables_do_not_depend_on_where_a_run_takes_up_the_speed_passes(incident_dir, tmp_path, monkeypatch):
    # Small batches, so that a run can switch after its first few, with a vLLM log (metrics
    # lines) on each side of the switch at 4,000 characters: `a-vllm.log`'s 2,907 come first.
    for f in incident_dir.iterdir():
        write(tmp_path / f.name, f.read_bytes())
    write(tmp_path / "a-vllm.log", (incident_dir / "vllm-0.log").read_bytes())
    monkeypatch.setattr(batches, "BATCH_CHARS", 1500)
    split, spans = fastlane.split, metric_scan.spans
    calls: list[str] = []

    def lane(df, *args):
        calls.append("lane")
        return split(df, *args)

    def scan(*args):
        calls.append("scan")
        return spans(*args)

    monkeypatch.setattr(fastlane, "split", lane)
    monkeypatch.setattr(metric_scan, "spans", scan)
    results, used = [], []
    for threshold in (0, 4000, 10**9):
        monkeypatch.setattr(batches, "SPEED_PASSES_MIN_CHARS", threshold)
        calls.clear()
        results.append(ingest(tmp_path))
        used.append((calls.count("lane"), calls.count("scan")))
    (lanes_all, scans_all), (lanes_later, scans_later), never = used
    assert lanes_all > lanes_later > 0 and scans_all > scans_later > 0
    assert never == (0, 0)
    every = results[0]
    for r in results[1:]:
        assert_frame_equal(r.events, every.events)
        assert_frame_equal(r.metrics, every.metrics)
        assert r.accounting() == every.accounting()


def test_kubectl_timestamp_prefix_gives_exact_utc_time(incident_dir):
    ev = ingest(incident_dir).events
    row = event_row(ev, file="vllm-0.log", line=1)
    assert row[s.TS] == datetime(2025, 3, 2, 7, 59, 50, tzinfo=UTC)
    assert row[s.TS_QUALITY] == "exact"
    assert row[s.SOURCE] == "vllm"
    assert row[s.PROCESS] == "APIServer" and row[s.PID] == 66
    assert row[s.MESSAGE] == "vLLM API server version 0.10.2"
    assert row[s.POD] == "vllm-0"


def test_logger_exception_traceback_is_folded_into_its_header_event(incident_dir):
    ev = ingest(incident_dir).events
    row = event_row(ev, file="vllm-0.log", line=7)
    assert row[s.LEVEL] == "ERROR" and row[s.PROCESS] == "EngineCore_DP0"
    assert row[s.RAW_LINES] == 5  # header, Traceback, File, code, RuntimeError (line 9 is another process)
    assert row[s.MESSAGE].startswith("EngineCore encountered a fatal error.\nTraceback (most recent call last):")
    assert row[s.MESSAGE].endswith("RuntimeError: Cache corruption detected in block 88123")


def test_asyncio_context_lines_and_traceback_fold_into_the_handler_message(tmp_path):
    # asyncio's default exception handler, as `kubectl logs --timestamps` stamps each line
    stamp = "2026-03-04T10:04:56.000000000Z "
    body = [
        "Task exception was never retrieved",
        "future: <Task finished name='Task-7' coro=<serve() done> exception=RuntimeError('boom')>",
        "Traceback (most recent call last):",
        '  File "/app/serve.py", line 12, in serve',
        "RuntimeError: boom",
        "(APIServer pid=1) INFO 03-04 10:04:56 [launcher.py:46] Route: /health, Methods: GET",
        "socket.accept() out of system resource",
        "socket: <asyncio.TransportSocket fd=9, family=2, type=1, proto=6, laddr=('0.0.0.0', 8000)>",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.12/asyncio/selector_events.py", line 178, in _accept_connection',
        "    conn, addr = sock.accept()",
        "OSError: [Errno 24] Too many open files",
    ]
    write(tmp_path / "api.log", "".join(stamp + line + "\n" for line in body))
    result = ingest(tmp_path)
    assert_balanced(result)
    ev = result.events.sort(s.LINE)
    assert ev[s.LINE].to_list() == [1, 6, 7]
    assert ev[s.RAW_LINES].to_list() == [5, 1, 6]
    assert ev[s.MESSAGE][0].startswith("Task exception was never retrieved\nfuture: <Task finished")
    assert ev[s.MESSAGE][2].startswith("socket.accept() out of system resource\nsocket: <asyncio.TransportSocket")
    assert ev[s.MESSAGE][2].endswith("OSError: [Errno 24] Too many open files")


def test_faulthandlers_thread_dumps_fold_into_the_fatal_error(tmp_path):
    body = [
        "Fatal Python error: Segmentation fault",
        "",
        "Thread 0x00007f3a1bfff640 (most recent call first):",
        '  File "/usr/lib/python3.12/threading.py", line 355 in wait',
        "",
        "Current thread 0x00007f3a2c8ff740 (most recent call first):",
        '  File "/app/vllm/v1/engine/core.py", line 237 in step',
        "",
        "Extension modules: numpy.core._multiarray_umath, torch._C (total: 2)",
        "INFO 03-02 10:00:00 [api_server.py:1] restarted",
    ]
    ev = events_of(tmp_path / "engine.log", body)
    assert ev[s.LINE].to_list() == [1, 10]
    assert ev[s.MESSAGE][0].endswith("Extension modules: numpy.core._multiarray_umath, torch._C (total: 2)")


def test_a_cuda_error_whose_line_ends_were_lost_stays_one_event(tmp_path):
    # vLLM ends each line of a multi-line record but the last with `\r`; a paste into an
    # issue or a log shipper drops it. The record's text alone must then hold it together:
    # torch's CUDA message, the blank line, c10's C++ stack, the chained traceback.
    head = "(EngineCore_DP0 pid=312) ERROR 10-14 03:14:21 [core.py:710] "
    record = [
        "EngineCore encountered a fatal error.",
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 701, in run_engine_core',
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
        "might be incorrect.",
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
        "",
        "Exception raised from c10_cuda_check_implementation at /pytorch/c10/cuda/CUDAException.cpp:43 "
        "(most recent call first):",
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7f1b5e5785e8 in libc10.so)",
        "frame #1: <unknown function> + 0xe0e3f (0x7f1b5e61be3f in libc10_cuda.so)",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.",
    ]
    stream = "(APIServer pid=1) ERROR 10-14 03:14:21 [serving_chat.py:1035] "
    streams = ["Error in chat completion stream generator.", "Traceback (most recent call last):", "EngineDeadError: x"]
    nccl = "(Worker_TP1 pid=341) ERROR 10-14 03:14:21 [multiproc_executor.py:671] "
    dist = [
        "WorkerProc hit an exception.",
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:3690, unhandled cuda error",
        "ncclUnhandledCudaError: Call to CUDA function failed.",
        "Last error:",
        "Cuda failure 'an illegal memory access was encountered'",
    ]
    lines = [head + m for m in record] + [stream + m for m in streams * 2] + [nccl + m for m in dist]
    ev = events_of(tmp_path / "engine.log", lines)
    # Two stream errors of one second and code line stay two events: each starts a record.
    assert ev[s.LINE].to_list() == [1, 17, 20, 23]
    assert ev[s.RAW_LINES].to_list() == [16, 3, 3, 5]
    assert ev[s.MESSAGE][0].endswith("EngineDeadError: EngineCore encountered an issue.")
    assert ev[s.MESSAGE][3].endswith("Last error:\nCuda failure 'an illegal memory access was encountered'")


def test_the_lines_under_a_watchdogs_cuda_error_fold_into_it(tmp_path):
    # PyTorch prefixes every line of the watchdog's exception with its rank, as it does a new record.
    lines = [
        "[rank0]:[E1014 03:14:21.518205471 ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID 0(default_pg) Rank 0] "
        "Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered",
        "[rank0]:CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
        "below might be incorrect.",
        "[rank0]:For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        "[rank0]:Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
        "[rank0]:",
        "[rank0]:Exception raised from c10_cuda_check_implementation at /pytorch/c10/cuda/CUDAException.cpp:43 "
        "(most recent call first):",
        "[rank0]:frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7f1b5e5785e8 in libc10.so)",
        "[rank1]:Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/"
        "group__CUDART__TYPES.html for more information.",
    ]
    ev = events_of(tmp_path / "trainer.log", lines)
    # (rank 1's line has no line of its rank above it: an event of its own, not rank 0's)
    assert ev[s.LINE].to_list() == [1, 8]
    assert ev[s.RAW_LINES].to_list() == [7, 1]
    assert ev[s.SOURCE][0] == "torch" and ev[s.RANK].to_list() == [0, 1]
    assert ev[s.MESSAGE][0].endswith("+ 0x98 (0x7f1b5e5785e8 in libc10.so)")


def test_a_forked_workers_nested_prefixes_make_its_lines_the_workers_own(tmp_path):
    # A worker forked from the engine core keeps its parent's prefix and adds its own; two
    # workers' tracebacks interleave under the shared outer prefix.
    core = "(EngineCore_DP0 pid=1026745) "
    head = "ERROR 02-01 09:32:13 [multiproc_executor.py:852] "
    tb = ["WorkerProc hit an exception.", "Traceback (most recent call last):", '  File "x.py", line 1, in f']
    lines = [f"{core}(Worker_TP{r} pid={1026751 + r}) {head}{m}" for m in tb for r in (0, 1)]
    lines.append(f"{core}INFO 02-01 09:32:14 [core.py:100] EngineCore exiting.")
    lines.append(
        "(EngineCore pid=676) (RayWorkerProc pid=918) (Worker_TP0 pid=918) ERROR 09-14 07:08:06 "
        "[multiproc_executor.py:991] torch.AcceleratorError: CUDA error: an illegal memory access was encountered"
    )
    ev = events_of(tmp_path / "engine.log", lines)
    assert ev[s.PROCESS].to_list() == ["Worker_TP0", "Worker_TP1", "EngineCore_DP0", "Worker_TP0"]
    assert ev[s.PID].to_list() == [1026751, 1026752, 1026745, 918]
    assert ev[s.RAW_LINES].to_list() == [3, 3, 1, 1]
    assert ev[s.SOURCE].to_list() == ["vllm"] * 4
    assert ev[s.MESSAGE][3] == "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"


def test_interleaved_process_lines_are_not_folded_into_another_process(incident_dir):
    ev = ingest(incident_dir).events
    access = event_row(ev, file="vllm-0.log", line=9)
    assert access[s.SOURCE] == "uvicorn" and access[s.PROCESS] == "APIServer"
    assert access[s.HTTP_STATUS] == 200


def test_raw_traceback_with_only_a_process_prefix_folds_into_that_process(incident_dir):
    ev = ingest(incident_dir).events
    row = event_row(ev, file="vllm-0.log", line=13)
    assert row[s.MESSAGE].startswith("AsyncLLM output_handler failed.\nTraceback")
    assert "EngineDeadError" in row[s.MESSAGE]
    assert row[s.RAW_LINES] == 4


def test_uvicorn_access_line_gives_method_path_and_status(incident_dir):
    ev = ingest(incident_dir).events
    row = event_row(ev, file="vllm-0.log", line=17)
    assert (row[s.HTTP_METHOD], row[s.HTTP_PATH], row[s.HTTP_STATUS]) == ("POST", "/v1/chat/completions", 500)


def test_access_line_with_non_ascii_path_keeps_its_status(tmp_path):
    write(
        tmp_path / "api.log",
        'INFO:     10.0.0.7:51234 - "GET /v1/models/модель-ünïcode HTTP/1.1" 404 Not Found\n'
        'INFO:     10.0.0.7:51236 - "POST /v1/completions HTTP/1.1" 200 OK\n',
    )
    ev = ingest(tmp_path).events.sort(s.LINE)
    assert ev[s.HTTP_STATUS].to_list() == [404, 200]
    assert ev[s.HTTP_PATH].to_list() == ["/v1/models/модель-ünïcode", "/v1/completions"]
    assert ev[s.HTTP_METHOD].to_list() == ["GET", "POST"]


def test_access_line_with_an_empty_client_keeps_its_request_and_status(tmp_path):
    # uvicorn writes an empty client_addr (a unix socket, some proxies) as nothing before ` - "`.
    write(
        tmp_path / "api.log",
        'INFO:      - "POST /v1/completions HTTP/1.1" 500 Internal Server Error\n'
        '(APIServer pid=1) INFO:      - "GET /health HTTP/1.1" 200 OK\n',
    )
    ev = ingest(tmp_path).events.sort(s.LINE)
    assert ev[s.HTTP_STATUS].to_list() == [500, 200]
    assert ev[s.HTTP_METHOD].to_list() == ["POST", "GET"]
    assert ev[s.HTTP_PATH].to_list() == ["/v1/completions", "/health"]


def test_request_id_is_extracted_from_received_request_lines(incident_dir):
    ev = ingest(incident_dir).events
    row = event_row(ev, file="vllm-0.log", line=5)
    assert row[s.REQUEST_ID] == "chatcmpl-6f1c0e1e2d8b4f7aa3c59d0b9a6e7f10"


def test_v1_metrics_lines_become_metric_rows_keyed_by_engine(incident_dir):
    m = ingest(incident_dir).metrics
    first = m.filter(pl.col(s.LINE) == 3)
    got = dict(zip(first[s.METRIC], first[s.VALUE], strict=True))
    assert got["prompt_tokens_per_s"] == pytest.approx(5120.4)
    assert got["generation_tokens_per_s"] == pytest.approx(8210.0)
    assert got["running"] == 48 and got["waiting"] == 0
    assert got["gpu_kv_cache_usage"] == pytest.approx(0.713)
    assert got["prefix_cache_hit_rate"] == pytest.approx(0.42)
    assert set(first[s.ENGINE]) == {"000"} and set(first[s.POD]) == {"vllm-0"}
    later = m.filter(pl.col(s.LINE) == 6)
    assert dict(zip(later[s.METRIC], later[s.VALUE], strict=True))["preemptions"] == 0


def test_nccl_warn_keeps_file_device_and_host_and_blank_line_is_folded(incident_dir):
    r = ingest(incident_dir)
    ev = r.events
    warn = event_row(ev, file="nccl-worker.log", line=4)
    assert warn[s.SOURCE] == "nccl" and warn[s.LEVEL] == "WARNING"
    assert warn[s.HOST] == "vllm-1" and warn[s.CUDA_DEV] == 0 and warn[s.PID] == 2343
    assert warn[s.COMPONENT] == "transport/net_ib.cc"
    assert warn[s.MESSAGE].startswith("NET/IB : Got completion from peer 10.0.4.13<44413> with status=12")
    rep = next(f for f in r.files if f.file == "nccl-worker.log")
    assert rep.folded >= 3  # three blank lines before WARNs, plus the C++ stack


def test_nccl_error_propagation_line_gets_the_result_code_and_name(incident_dir):
    ev = ingest(incident_dir).events
    row = event_row(ev, file="nccl-worker.log", line=5)
    assert row[s.NCCL_CODE] == 6 and row[s.NCCL_CODE_NAME] == "ncclRemoteError"
    assert row[s.COMPONENT] == "transport/net.cc"


def test_nccl_226_timestamp_and_230_function_layouts_are_parsed(incident_dir):
    ev = ingest(incident_dir).events
    ts_line = event_row(ev, file="nccl-worker.log", line=8)
    assert ts_line[s.TS] == datetime(2025, 3, 2, 8, 0, 15, tzinfo=UTC) and ts_line[s.TS_QUALITY] == "exact"
    fn_line = event_row(ev, file="nccl-worker.log", line=10)
    assert fn_line[s.SOURCE] == "nccl" and fn_line[s.COMPONENT] == "misc/socket.cc"
    assert fn_line[s.MESSAGE].startswith("socketProgress: Connection closed")


def test_a_line_that_mentions_nccl_but_is_no_nccl_line_keeps_its_own_text(tmp_path):
    # CRLF endings (a log saved on Windows) keep these lines off the fast lane: the general
    # path's NCCL parser reads them, takes the INFO line and gives the first one back. It
    # hands its rows back reordered, and the refused one must still be that line.
    lines = [
        "watchdog: NCCL INFO lines stopped at 08:00, restarting the engine",
        "gpu-node-3:2343:2381 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.3<0>",
    ]
    (tmp_path / "worker.log").write_bytes("".join(f"{line}\r\n" for line in lines).encode())
    ev = ingest(tmp_path).events.sort(s.LINE)
    assert ev[s.LINE].to_list() == [1, 2]
    assert ev[s.MESSAGE][0] == lines[0] and ev[s.SOURCE][0] == "unknown"
    assert ev[s.MESSAGE][1].startswith("Bootstrap : Using eth0") and ev[s.SOURCE][1] == "nccl"


def test_a_progress_bar_redrawn_with_carriage_returns_keeps_its_stamp_and_stream(tmp_path):
    # tqdm redraws in place (`\r`); the runtime stamps the whole physical line. The event shows
    # the last state, at the stamp's time, and a CRI `F` so redrawn still ends the partial run
    # before it: the next line stays an event of its own.
    lines = [
        "2025-03-02T08:00:00.100000000Z stdout P INFO 03-02 08:00:00 [weight_utils.py:288] Loading safetensors",
        "2025-03-02T08:00:01.500000000Z stdout F  shards:  10% 1/10\rLoading safetensors shards: 100% 10/10",
        "2025-03-02T08:00:02.000000000Z stdout F INFO 03-02 08:00:02 [gpu_model_runner.py:1595] Model loading took 14.99 GiB",
        "2025-03-02T08:00:03.000000000Z Capturing CUDA graphs:  50%|#####     | 1/2\rCapturing CUDA graphs: 100%|##########| 2/2",
    ]
    (tmp_path / "vllm-0.log").write_text("\n".join(lines) + "\n")
    ev = ingest(tmp_path).events.sort(s.LINE)
    assert ev[s.LINE].to_list() == [1, 3, 4]
    first, loaded, graphs = ev.rows(named=True)
    assert first[s.RAW_LINES] == 2 and first[s.STREAM] == "stdout"
    assert first[s.MESSAGE] == "Loading safetensors shards: 100% 10/10"
    assert loaded[s.MESSAGE] == "Model loading took 14.99 GiB" and loaded[s.RAW_LINES] == 1
    assert graphs[s.MESSAGE] == "Capturing CUDA graphs: 100%|##########| 2/2"
    assert graphs[s.TS] == datetime(2025, 3, 2, 8, 0, 3, tzinfo=UTC) and graphs[s.TS_QUALITY] == "exact"
    assert graphs[s.SOURCE] == "progress" and graphs[s.LEVEL] == "INFO"


@pytest.mark.parametrize(
    "bar",
    [
        "Loading safetensors checkpoint shards:  45% Completed | 49/109 [16:20<20:00, 20.0s/it]",  # vLLM's bar_format
        "Capturing CUDA graph shapes: 100%|██████████| 67/67 [00:20<00:00,  3.28it/s]",
        "model-00001-of-00004.safetensors:  37%|███▋      | 1.84G/4.98G [00:12<00:21, 148MB/s]",
    ],
)
def test_a_progress_bar_is_a_parsed_event_of_its_process(tmp_path, bar):
    # tqdm prints beside the loggers, through the process prefix: what a starting engine was doing.
    write(tmp_path / "vllm-0.log", f"2025-03-02T08:00:03.000000000Z (VllmWorker rank=0 pid=120) {bar}\n")
    r = ingest(tmp_path)
    assert r.unparsed == 0
    (row,) = r.events.rows(named=True)
    assert (row[s.SOURCE], row[s.LEVEL], row[s.PROCESS], row[s.PID], row[s.MESSAGE]) == (
        "progress",
        "INFO",
        "VllmWorker rank=0",
        120,
        bar,
    )


def test_c10_watchdog_timeout_fields_and_three_digit_mmdd(incident_dir):
    ev = ingest(incident_dir).events
    row = event_row(ev, file="nccl-worker.log", line=11)
    assert row[s.SOURCE] == "torch" and row[s.LEVEL] == "ERROR" and row[s.RANK] == 1
    assert (row[s.COLL_OP], row[s.COLL_SEQ], row[s.COLL_TIMEOUT_MS], row[s.COLL_RAN_MS]) == (
        "ALLREDUCE",
        5730,
        600000,
        600009,
    )
    # E302 = March 2nd; the year comes from the dated NCCL WARN in the same directory.
    assert row[s.TS] == datetime(2025, 3, 2, 8, 10, 12, tzinfo=UTC)
    assert row[s.TS_QUALITY] == "inferred-year"
    pg = event_row(ev, file="nccl-worker.log", line=12)
    assert pg[s.PG] == "4"


def test_cpp_stack_after_terminate_is_folded(incident_dir):
    ev = ingest(incident_dir).events
    row = event_row(ev, file="nccl-worker.log", line=12)
    assert "frame #1:" in row[s.MESSAGE] and row[s.RAW_LINES] == 6


def test_k8s_event_json_handles_both_recorder_populations(incident_dir):
    ev = ingest(incident_dir).events.filter(pl.col(s.SOURCE) == "k8s-event")
    backoff = event_row(ev, k8s_reason="BackOff")
    assert backoff[s.TS] == datetime(2025, 3, 2, 8, 3, 10, tzinfo=UTC)  # lastTimestamp
    assert backoff[s.K8S_COUNT] == 4 and backoff[s.K8S_OBJECT] == "pod/vllm-0"
    assert backoff[s.HOST] == "gpu-node-3" and backoff[s.CONTAINER] == "vllm"
    assert backoff[s.LEVEL] == "WARNING"
    sched = event_row(ev, k8s_reason="FailedScheduling")
    assert sched[s.TS] == datetime(2025, 3, 2, 8, 4, 0, 123456, tzinfo=UTC)  # eventTime
    assert sched[s.COMPONENT] == "default-scheduler" and sched[s.K8S_COUNT] == 1


def test_events_k8s_io_v1_listing_reads_note_regarding_series_and_the_deprecated_fields(tmp_path):
    # `kubectl get events.events.k8s.io -o json`: `note`/`regarding`/`series` for events created by
    # that API, and the kubelet's core/v1 events with their fields renamed `deprecated*`.
    items = [
        {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "eventTime": "2025-03-02T07:10:00.123456Z",
            "metadata": {"name": "vllm-0.1", "namespace": "serving"},
            "note": "Liveness probe failed: context deadline exceeded",
            "reason": "Unhealthy",
            "regarding": {"kind": "Pod", "name": "vllm-0", "namespace": "serving"},
            "reportingController": "kubelet",
            "reportingInstance": "gpu-node-3",
            "series": {"count": 5, "lastObservedTime": "2025-03-02T07:12:00.000000Z"},
            "type": "Warning",
        },
        {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "eventTime": None,
            "deprecatedFirstTimestamp": "2025-03-02T07:09:00Z",
            "deprecatedLastTimestamp": "2025-03-02T07:09:30Z",
            "deprecatedCount": 3,
            "deprecatedSource": {"component": "kubelet", "host": "gpu-node-4"},
            "metadata": {"name": "vllm-1.2", "namespace": "serving"},
            "note": "Back-off restarting failed container vllm in pod vllm-1",
            "reason": "BackOff",
            "regarding": {"kind": "Pod", "name": "vllm-1", "namespace": "serving"},
            "type": "Warning",
        },
    ]
    write(tmp_path / "events.json", json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    ev = ingest(tmp_path).events.sort(s.LINE)
    assert ev[s.TS].to_list() == [
        datetime(2025, 3, 2, 7, 12, tzinfo=UTC),  # series.lastObservedTime
        datetime(2025, 3, 2, 7, 9, 30, tzinfo=UTC),  # deprecatedLastTimestamp
    ]
    assert ev[s.TS_QUALITY].cast(pl.String).to_list() == ["exact", "exact"]
    assert ev[s.K8S_COUNT].to_list() == [5, 3]
    assert ev[s.HOST].to_list() == ["gpu-node-3", "gpu-node-4"]
    assert ev[s.POD].to_list() == ["vllm-0", "vllm-1"]
    assert ev[s.COMPONENT].cast(pl.String).to_list() == ["kubelet", "kubelet"]
    assert ev[s.MESSAGE][1] == "BackOff: Back-off restarting failed container vllm in pod vllm-1"


def test_lmcache_lines_are_kv_store_events_with_exact_time(incident_dir):
    ev = ingest(incident_dir).events
    row = event_row(ev, file="kvstore.log", line=2)
    assert row[s.SOURCE] == "kv-store" and row[s.LEVEL] == "ERROR"
    assert row[s.MESSAGE].startswith("Cache corruption detected in block 88123")
    assert row[s.COMPONENT] == "storage_backend.py"
    assert row[s.TS] == datetime(2025, 3, 2, 8, 0, 10, 912000, tzinfo=UTC)


def test_request_traces_and_other_json_documents_are_set_aside(tmp_path):
    write(tmp_path / "trace.jsonl", '{"timestamp": 0, "input_length": 10, "output_length": 5, "hash_ids": [1]}\n')
    write(tmp_path / "ground_truth.json", '{"root_cause": {"category": "kv-cache"}}\n')
    write(tmp_path / "ok.log", "INFO 03-02 10:00:00 [x.py:1] fine\n")
    r = ingest(tmp_path, year=2025)
    reasons = {k.file: k.reason for k in r.skipped}
    assert reasons["trace.jsonl"].startswith("request trace")
    assert reasons["ground_truth.json"].startswith("JSON document")
    assert r.traces == ["trace.jsonl"]


def test_parquet_round_trip_keeps_the_schema(incident_dir, tmp_path):
    from forensics.ingestion import write_tables

    paths = write_tables(ingest(incident_dir), tmp_path)
    assert dict(pl.read_parquet(paths["events"]).schema) == s.EVENT_DTYPES
    import json

    acc = json.loads(paths["accounting"].read_text())
    assert acc["lines"] == acc["parsed"] + acc["folded"] + acc["unparsed"]


@pytest.mark.skipif(not (SHARED / "reallogs").is_dir(), reason="shared/data/reallogs not present")
def test_every_real_excerpt_ingests_with_every_line_accounted():
    r = ingest(SHARED / "reallogs")
    assert_balanced(r)
    assert len(r.files) == len(list((SHARED / "reallogs").glob("*.log")))
    # Everything but the `# source:` headers and kubectl tables of pods is recognised.
    unknown = r.events.filter(pl.col(s.SOURCE) == "unknown")
    assert unknown.filter(~pl.col(s.MESSAGE).str.starts_with("#")).height <= 20


def test_ingest_accepts_a_single_file(incident_dir):
    r = ingest(Path(incident_dir / "kvstore.log"))
    assert r.parsed == 2 and r.files[0].file == "kvstore.log"


def test_events_parquet_is_byte_identical_whatever_categories_the_process_saw_before(tmp_path):
    # Categorical columns share process-wide category ids, assigned in order of first sight:
    # the file written must not depend on what else the process cast before.
    import subprocess
    import sys

    write(tmp_path / "logs" / "v.log", "INFO 03-02 10:00:00 [x.py:1] a\nERROR 03-02 10:00:01 [y.py:2] b\n")
    run = (
        "import sys, polars as pl; from pathlib import Path; from forensics import ingest; "
        "from forensics.ingestion import write_tables; "
        "pl.Series(sys.argv[3:], dtype=pl.String).cast(pl.Categorical); "
        "write_tables(ingest(Path(sys.argv[1]), year=2025), Path(sys.argv[2]))"
    )
    seen = ["zzz", "y.py", "inferred-year", "ERROR", "x.py", "INFO"]
    for out, first in (("a", []), ("b", seen), ("c", seen[::-1])):
        subprocess.run([sys.executable, "-c", run, str(tmp_path / "logs"), str(tmp_path / out), *first], check=True)
    files = {(tmp_path / out / "events.parquet").read_bytes() for out in "abc"}
    assert len(files) == 1
