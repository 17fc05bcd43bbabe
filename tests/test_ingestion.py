"""Ingest: every format in the real-world shapes, times, folding, metrics and accounting."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from forensics import ingest
from forensics import schema as s
from forensics.ingestion import batches
from parsers._compiled import fastlane, metric_scan
from tests.conftest import DATA, SHARED, write

pytestmark = pytest.mark.usefixtures("as_a_large_run")  # (the threshold's own tests set theirs)


def _row(ev: pl.DataFrame, **eq) -> dict:
    df = ev
    for k, v in eq.items():
        df = df.filter(pl.col(k) == v)
    assert df.height >= 1, f"no event with {eq}"
    return df.row(0, named=True)


def _balanced(result) -> None:
    for f in result.files:
        assert f.lines == f.parsed + f.folded + f.unparsed, f


# --- the multi-source incident fixture -----------------------------------------------


def _events_of(path, lines: list[str]) -> pl.DataFrame:
    """Ingest `lines` written to `path` (every line accounted for): the events in file order."""
    write(path, "\n".join(lines) + "\n")
    result = ingest(path.parent)
    _balanced(result)
    return result.events.sort(s.LINE)


def test_events_table_has_the_declared_schema(incident_dir):
    r = ingest(incident_dir)
    assert dict(r.events.schema) == s.EVENT_DTYPES
    assert dict(r.metrics.schema) == s.METRIC_DTYPES


def test_every_line_of_the_incident_fixture_is_accounted_for(incident_dir):
    r = ingest(incident_dir)
    _balanced(r)
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
    _balanced(r)
    assert r.unparsed == 0
    assert r.metrics.height > 0
    assert _row(r.events, source="uvicorn")[s.HTTP_STATUS] is not None


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
    row = _row(ev, file="vllm-0.log", line=1)
    assert row[s.TS] == datetime(2025, 3, 2, 7, 59, 50, tzinfo=UTC)
    assert row[s.TS_QUALITY] == "exact"
    assert row[s.SOURCE] == "vllm"
    assert row[s.PROCESS] == "APIServer" and row[s.PID] == 66
    assert row[s.MESSAGE] == "vLLM API server version 0.10.2"
    assert row[s.POD] == "vllm-0"


def test_logger_exception_traceback_is_folded_into_its_header_event(incident_dir):
    ev = ingest(incident_dir).events
    row = _row(ev, file="vllm-0.log", line=7)
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
    _balanced(result)
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
    ev = _events_of(tmp_path / "engine.log", body)
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
    ev = _events_of(tmp_path / "engine.log", lines)
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
    ev = _events_of(tmp_path / "trainer.log", lines)
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
    ev = _events_of(tmp_path / "engine.log", lines)
    assert ev[s.PROCESS].to_list() == ["Worker_TP0", "Worker_TP1", "EngineCore_DP0", "Worker_TP0"]
    assert ev[s.PID].to_list() == [1026751, 1026752, 1026745, 918]
    assert ev[s.RAW_LINES].to_list() == [3, 3, 1, 1]
    assert ev[s.SOURCE].to_list() == ["vllm"] * 4
    assert ev[s.MESSAGE][3] == "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"


def test_interleaved_process_lines_are_not_folded_into_another_process(incident_dir):
    ev = ingest(incident_dir).events
    access = _row(ev, file="vllm-0.log", line=9)
    assert access[s.SOURCE] == "uvicorn" and access[s.PROCESS] == "APIServer"
    assert access[s.HTTP_STATUS] == 200


def test_raw_traceback_with_only_a_process_prefix_folds_into_that_process(incident_dir):
    ev = ingest(incident_dir).events
    row = _row(ev, file="vllm-0.log", line=13)
    assert row[s.MESSAGE].startswith("AsyncLLM output_handler failed.\nTraceback")
    assert "EngineDeadError" in row[s.MESSAGE]
    assert row[s.RAW_LINES] == 4


def test_uvicorn_access_line_gives_method_path_and_status(incident_dir):
    ev = ingest(incident_dir).events
    row = _row(ev, file="vllm-0.log", line=17)
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
    row = _row(ev, file="vllm-0.log", line=5)
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
    warn = _row(ev, file="nccl-worker.log", line=4)
    assert warn[s.SOURCE] == "nccl" and warn[s.LEVEL] == "WARNING"
    assert warn[s.HOST] == "vllm-1" and warn[s.CUDA_DEV] == 0 and warn[s.PID] == 2343
    assert warn[s.COMPONENT] == "transport/net_ib.cc"
    assert warn[s.MESSAGE].startswith("NET/IB : Got completion from peer 10.0.4.13<44413> with status=12")
    rep = next(f for f in r.files if f.file == "nccl-worker.log")
    assert rep.folded >= 3  # three blank lines before WARNs, plus the C++ stack


def test_nccl_error_propagation_line_gets_the_result_code_and_name(incident_dir):
    ev = ingest(incident_dir).events
    row = _row(ev, file="nccl-worker.log", line=5)
    assert row[s.NCCL_CODE] == 6 and row[s.NCCL_CODE_NAME] == "ncclRemoteError"
    assert row[s.COMPONENT] == "transport/net.cc"


def test_nccl_226_timestamp_and_230_function_layouts_are_parsed(incident_dir):
    ev = ingest(incident_dir).events
    ts_line = _row(ev, file="nccl-worker.log", line=8)
    assert ts_line[s.TS] == datetime(2025, 3, 2, 8, 0, 15, tzinfo=UTC) and ts_line[s.TS_QUALITY] == "exact"
    fn_line = _row(ev, file="nccl-worker.log", line=10)
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
    row = _row(ev, file="nccl-worker.log", line=11)
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
    pg = _row(ev, file="nccl-worker.log", line=12)
    assert pg[s.PG] == "4"


def test_cpp_stack_after_terminate_is_folded(incident_dir):
    ev = ingest(incident_dir).events
    row = _row(ev, file="nccl-worker.log", line=12)
    assert "frame #1:" in row[s.MESSAGE] and row[s.RAW_LINES] == 6


def test_kubelet_journal_gives_host_source_and_inferred_year(incident_dir):
    ev = ingest(incident_dir).events
    row = _row(ev, file="kubelet.journal", line=2)
    assert row[s.SOURCE] == "kubelet" and row[s.LEVEL] == "ERROR" and row[s.HOST] == "gpu-node-3"
    assert row[s.COMPONENT] == "pod_workers.go"
    assert row[s.TS] == datetime(2025, 3, 2, 8, 0, 21, 844381, tzinfo=UTC)
    assert row[s.POD] is None


def test_k8s_event_json_handles_both_recorder_populations(incident_dir):
    ev = ingest(incident_dir).events.filter(pl.col(s.SOURCE) == "k8s-event")
    backoff = _row(ev, k8s_reason="BackOff")
    assert backoff[s.TS] == datetime(2025, 3, 2, 8, 3, 10, tzinfo=UTC)  # lastTimestamp
    assert backoff[s.K8S_COUNT] == 4 and backoff[s.K8S_OBJECT] == "pod/vllm-0"
    assert backoff[s.HOST] == "gpu-node-3" and backoff[s.CONTAINER] == "vllm"
    assert backoff[s.LEVEL] == "WARNING"
    sched = _row(ev, k8s_reason="FailedScheduling")
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
    row = _row(ev, file="kvstore.log", line=2)
    assert row[s.SOURCE] == "kv-store" and row[s.LEVEL] == "ERROR"
    assert row[s.MESSAGE].startswith("Cache corruption detected in block 88123")
    assert row[s.COMPONENT] == "storage_backend.py"
    assert row[s.TS] == datetime(2025, 3, 2, 8, 0, 10, 912000, tzinfo=UTC)


# --- wrappers ------------------------------------------------------------------------


def test_cri_file_layout_and_partial_lines_are_reassembled(tmp_path):
    pod_dir = tmp_path / "var/log/pods/inference_vllm-0_3f0c2a9e-1111-2222-3333-444455556666/vllm"
    write(
        pod_dir / "0.log",
        "2025-03-02T08:00:00.1Z stdout P INFO 03-02 08:00:00 [logger.py:41] Received request cmpl-1: params: "
        "SamplingParams(n=1,\n"
        "2025-03-02T08:00:00.1Z stdout F  temperature=0.7), lora_request: None.\n"
        "2025-03-02T08:00:01.5+01:00 stderr F WARNING 03-02 08:00:01 [config.py:1] benign warning\n",
    )
    r = ingest(tmp_path)
    _balanced(r)
    ev = r.events
    assert ev.height == 2
    first = ev.row(0, named=True)
    assert first[s.MESSAGE].endswith("SamplingParams(n=1, temperature=0.7), lora_request: None.")
    assert first[s.RAW_LINES] == 2 and first[s.STREAM] == "stdout"
    assert (first[s.NAMESPACE], first[s.POD], first[s.CONTAINER]) == ("inference", "vllm-0", "vllm")
    second = ev.row(1, named=True)
    assert second[s.TS] == datetime(2025, 3, 2, 7, 0, 1, 500000, tzinfo=UTC)  # +01:00 offset honoured
    assert r.files[0].wrapper == "cri"


def test_a_pods_path_names_its_own_lines_alone(tmp_path):
    """A pod's CRI log and a plain log read in one batch: the pod's lines take its namespace,
    pod and container from the path; the plain log's lines only a pod, from its file name."""
    pod_dir = tmp_path / "var/log/pods/inference_vllm-0_3f0c2a9e-1111-2222-3333-444455556666/vllm"
    write(pod_dir / "0.log", "2025-03-02T08:00:00.1Z stdout F INFO 03-02 08:00:00 [logger.py:41] Received request a\n")
    write(tmp_path / "router.log", "2025-03-02T08:00:01Z INFO 03-02 08:00:01 [logger.py:41] Received request b\n")
    ev = ingest(tmp_path).events
    pod, plain = _row(ev, **{s.REQUEST_ID: "a"}), _row(ev, **{s.REQUEST_ID: "b"})
    assert (pod[s.NAMESPACE], pod[s.POD], pod[s.CONTAINER]) == ("inference", "vllm-0", "vllm")
    assert (plain[s.FILE], plain[s.NAMESPACE], plain[s.POD], plain[s.CONTAINER]) == ("router.log", None, "router", None)


def test_ansi_colours_and_their_residue_are_stripped(tmp_path):
    write(
        tmp_path / "ray.log",
        "\x1b[1;36m(EngineCore_DP0 pid=279)\x1b[0;0m INFO 12-02 15:47:51 [core.py:93] Initializing a V1 LLM engine\n"
        " [36m(RayWorkerVllm pid=5085) [0m [E ProcessGroupNCCL.cpp:475] [Rank 4] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=20518, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800270 milliseconds before "
        "timing out. [32m [repeated 6x across cluster] [0m\n",
    )
    ev = ingest(tmp_path, year=2024).events
    a, b = ev.row(0, named=True), ev.row(1, named=True)
    assert a[s.PROCESS] == "EngineCore_DP0" and a[s.SOURCE] == "vllm" and "\x1b" not in a[s.MESSAGE]
    assert b[s.PROCESS] == "RayWorkerVllm" and b[s.SOURCE] == "torch" and b[s.RANK] == 4
    assert b[s.COLL_SEQ] == 20518 and b[s.MESSAGE].endswith("before timing out.")


def test_compose_prefix_and_carriage_returns_are_removed(tmp_path):
    write(
        tmp_path / "compose.log",
        "vllm-mxfp4  | INFO 07-28 06:40:59 [loggers.py:118] Engine 000: Avg prompt throughput: 1.0 tokens/s, "
        "Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.1%, "
        "Prefix cache hit rate: 0.0%\r\n",
    )
    r = ingest(tmp_path, year=2025)
    assert r.events.row(0, named=True)[s.SOURCE] == "vllm"
    assert r.metrics.filter(pl.col(s.METRIC) == "generation_tokens_per_s")[s.VALUE].to_list() == [2.0]


def test_glued_vllm_records_on_one_line_are_split(tmp_path):
    write(
        tmp_path / "glued.log",
        "INFO 07-28 06:40:59 [loggers.py:118] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
        "throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: "
        "0.0%INFO 07-28 06:41:19 [loggers.py:118] Engine 000: Avg prompt throughput: 9.0 tokens/s, Avg generation "
        "throughput: 1.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.5%, Prefix cache hit rate: 0.0%\n",
    )
    r = ingest(tmp_path, year=2025)
    _balanced(r)
    assert r.events.height == 2 and r.lines == 1
    assert r.metrics.filter(pl.col(s.METRIC) == "prompt_tokens_per_s")[s.VALUE].to_list() == [0.0, 9.0]


def test_a_traceback_under_a_glued_record_folds_into_it_and_is_counted(tmp_path):
    # The traceback's lines fold into the second of two records glued on one line; their count
    # was taken from each line's first record alone, and the file's accounting failed the run.
    lines = [
        "ERROR 03-02 08:00:00 [a.py:1] doneERROR 03-02 08:00:01 [core.py:9] EngineCore failed:",
        "Traceback (most recent call last):",
        '  File "core.py", line 9, in run',
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "INFO 03-02 08:00:02 [a.py:1] next",
    ]
    ev = _events_of(tmp_path / "glued.log", lines)
    assert ev.select(s.LINE, s.RAW_LINES).rows() == [(1, 1), (1, 4), (5, 1)]
    assert ev[s.MESSAGE][1].endswith("RuntimeError: CUDA error: an illegal memory access was encountered")


def test_a_record_glued_onto_the_record_it_continues_is_one_line_of_one_event(tmp_path):
    # The second record continues the first (its `\r` lost as well as its newline): it folds
    # into it, and was counted as a folded line of its own, one more than the file has.
    lines = [
        "ERROR 03-02 08:00:00 [core.py:720] EngineCore failed:ERROR 03-02 08:00:00 [core.py:720] For debugging "
        "consider passing CUDA_LAUNCH_BLOCKING=1",
        "2025-03-02T08:00:00.2Z stdout P ERROR 03-02 08:00:01 [core.py:720] Thread 0x00007f3a1bfff640 (most recent "
        "call first):",
        "2025-03-02T08:00:00.3Z stdout F ERROR 03-02 08:00:01 [core.py:720] For debugging consider passing CUDA_",
    ]
    ev = _events_of(tmp_path / "0.log", lines)
    assert ev.select(s.LINE, s.RAW_LINES).rows() == [(1, 1), (2, 2)]
    assert ev[s.MESSAGE][0] == "EngineCore failed:\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1"


def test_a_cri_line_of_pieces_holding_glued_records_counts_its_pieces_once(tmp_path):
    # The runtime's pieces of one line are joined, then the glued records split: each record
    # carried the pieces' count, and the accounting counted them once a record.
    stamp = "2025-03-02T08:00:00.000000000Z stdout "
    lines = [
        stamp + "P INFO 03-02 08:00:00 [a.py:1] doneINFO 03-02 08:00:01 [b.py:2] glued",
        stamp + "F  on, in a second piece",
        stamp + "F INFO 03-02 08:00:02 [a.py:1] next",
    ]
    ev = _events_of(tmp_path / "0.log", lines)
    assert ev[s.MESSAGE].to_list() == ["done", "glued on, in a second piece", "next"]


def test_an_operators_vllm_logging_prefix_is_peeled_and_kept_as_the_process(tmp_path):
    # VLLM_LOGGING_PREFIX="(VLLM) " (log-formats 1.1): before every line, continuation lines of a
    # traceback included (NewLineFormatter repeats the whole header).
    write(
        tmp_path / "decode-0.log",
        "(VLLM) INFO 03-14 06:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 900.0 tokens/s, Avg "
        "generation throughput: 1500.0 tokens/s, Running: 30 reqs, Waiting: 0 reqs, GPU KV cache usage: 40.0%, "
        "Prefix cache hit rate: 10.0%\n"
        "(VLLM) ERROR 03-14 06:00:05 [core.py:720] EngineCore encountered a fatal error.\r\n"
        "(VLLM) ERROR 03-14 06:00:05 [core.py:720] Traceback (most recent call last):\r\n"
        '(VLLM) ERROR 03-14 06:00:05 [core.py:720]   File "/vllm/v1/engine/core.py", line 711, in run_engine_core\r\n'
        "(VLLM) ERROR 03-14 06:00:05 [core.py:720] RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "[prefill-0] WARNING 03-14 06:00:06 [scheduler.py:1] prefill instance lost its decode peer\n",
    )
    r = ingest(tmp_path, year=2026)
    _balanced(r)
    assert r.unparsed == 0
    ev = r.events.sort(s.LINE)
    assert ev.select(s.LINE, s.SOURCE, s.PROCESS, s.LEVEL).rows() == [
        (1, "vllm", "VLLM", "INFO"),
        (2, "vllm", "VLLM", "ERROR"),  # (its traceback folded in)
        (6, "vllm", "prefill-0", "WARNING"),
    ]
    assert ev[s.RAW_LINES].to_list() == [1, 4, 1] and ev[s.MESSAGE][1].endswith("illegal memory access was encountered")
    assert r.metrics.filter(pl.col(s.METRIC) == "generation_tokens_per_s")[s.VALUE].to_list() == [1500.0]


def test_v0_metrics_line_has_swapped_pending_and_cpu_cache(tmp_path):
    write(
        tmp_path / "v0.log",
        "INFO 11-03 19:42:08 metrics.py:396] Avg prompt throughput: 842.7 tokens/s, Avg generation throughput: "
        "96.3 tokens/s, Running: 12 reqs, Swapped: 1 reqs, Pending: 7 reqs, GPU KV cache usage: 88.4%, CPU KV cache usage: 0.5%.\n"
        "INFO 11-03 19:42:08 metrics.py:412] Prefix cache hit rate: GPU: 12.50%, CPU: 0.00%\n",
    )
    got = {(r[s.LINE], r[s.METRIC]): r[s.VALUE] for r in ingest(tmp_path, year=2024).metrics.iter_rows(named=True)}
    assert got[(1, "waiting")] == 7 and got[(1, "swapped")] == 1
    assert got[(1, "cpu_kv_cache_usage")] == pytest.approx(0.005)
    assert got[(2, "prefix_cache_hit_rate")] == pytest.approx(0.125)


def test_metric_numbers_read_in_the_scan_are_the_numbers_written(tmp_path):
    # Short numbers are read by the metrics scan itself; one too long to read exactly by hand
    # (17 digits) sends its batch back to casting the text. Both give the value as written.
    write(
        tmp_path / "vllm.log",
        "INFO 03-02 08:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 0.1 tokens/s, Avg generation "
        "throughput: 3141.59 tokens/s, Running: 7 reqs, Waiting: 0 reqs, GPU KV cache usage: 99.9%, Prefix cache hit rate: .5%\n",
    )
    write(
        tmp_path / "long" / "vllm.log",
        "INFO 03-02 08:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 12345678901234567.5 tokens/s, "
        "Avg generation throughput: 3141.59 tokens/s, Running: 7 reqs, Waiting: 0 reqs, GPU KV cache usage: 99.9%\n",
    )
    for d in (tmp_path, tmp_path / "long"):
        got = {r[s.METRIC]: r[s.VALUE] for r in ingest(d / "vllm.log", year=2025).metrics.iter_rows(named=True)}
        assert got["generation_tokens_per_s"] == 3141.59 and got["running"] == 7.0 and got["waiting"] == 0.0
        assert got["gpu_kv_cache_usage"] == 99.9 * 0.01
    assert got["prompt_tokens_per_s"] == float("12345678901234567.5")


def test_metric_rows_stay_in_line_order_when_some_lines_are_read_by_the_regexes(tmp_path):
    # Every other line has a non-ASCII byte, which leaves it to the regexes rather than the scan.
    write(
        tmp_path / "vllm.log",
        "".join(
            f"INFO 03-02 08:00:0{i} [loggers.py:123] Engine 000: Avg prompt throughput: {i}.5 tokens/s, Avg generation "
            f"throughput: 1.0 tokens/s, Running: {i} reqs, Waiting: 0 reqs, GPU KV cache usage: 5{i}.0%"
            + (" \u2014 ok\n" if i % 2 else "\n")
            for i in range(6)
        ),
    )
    metrics = ingest(tmp_path, year=2025).metrics
    assert metrics.select(s.LINE, s.METRIC).rows() == sorted(metrics.select(s.LINE, s.METRIC).rows())
    per_line = metrics.group_by(s.LINE, maintain_order=True).len()["len"].to_list()
    assert per_line == [5] * 6
    assert metrics.filter(pl.col(s.METRIC) == "running")[s.VALUE].to_list() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    usage = metrics.filter(pl.col(s.METRIC) == "gpu_kv_cache_usage")[s.VALUE].to_list()
    assert usage == [(50.0 + i) * 0.01 for i in range(6)]


def test_describe_events_age_is_resolved_only_with_captured_at_and_said_without(tmp_path):
    write(
        tmp_path / "describe.txt",
        "Events:\n"
        "  Type     Reason     Age                From     Message\n"
        "  ----     ------     ----               ----     -------\n"
        '  Warning  Unhealthy  2m (x12 over 3m)   kubelet  Liveness probe failed: Get "http://10.244.1.7:8000/health": '
        "dial tcp 10.244.1.7:8000: connect: connection refused\n",
    )
    r = ingest(tmp_path)
    _balanced(r)
    assert r.unparsed == 0
    row = _row(r.events, k8s_reason="Unhealthy")
    assert row[s.K8S_COUNT] == 12 and row[s.TS] is None and row[s.TS_QUALITY] == "none"
    # Left off the timeline: the run says so, and how to place it.
    (said,) = [w for w in r.warnings if w.startswith("describe.txt:")]
    assert "1 event timed only relative to when kubectl ran" in said and "--captured-at" in said
    cap = datetime(2025, 3, 2, 9, 0, tzinfo=UTC)
    r = ingest(tmp_path, captured_at=cap)
    row = _row(r.events, k8s_reason="Unhealthy")
    assert row[s.TS] == datetime(2025, 3, 2, 8, 58, tzinfo=UTC) and row[s.TS_QUALITY] == "relative"
    assert not any("captured-at" in w for w in r.warnings)


def test_kubectl_get_events_table_rows_are_events(tmp_path):
    write(
        tmp_path / "get-events.txt",
        "LAST SEEN   TYPE      REASON             OBJECT        MESSAGE\n"
        "29m         Warning   FailedScheduling   pod/vllm-2    0/1 nodes are available: 1 Insufficient nvidia.com/gpu.\n"
        '5m2s        Normal    Pulled             pod/vllm-0    Container image "vllm/vllm-openai:v0.10.2" already present\n',
    )
    r = ingest(tmp_path)
    assert r.unparsed == 0
    row = _row(r.events, k8s_reason="FailedScheduling")
    assert row[s.K8S_OBJECT] == "pod/vllm-2" and row[s.LEVEL] == "WARNING"
    assert row[s.POD] == "vllm-2"  # (the pod's event, as an event document's is)


def test_kubectl_events_rows_give_their_pod_count_and_last_time_as_get_events_rows_do(tmp_path):
    # `kubectl events -A` (kubectl >= 1.26): the object as `Kind/name`, and an event seen more than
    # once as `LAST SEEN (xN over FIRST)`; before, neither row shape was read and both were unknown.
    write(
        tmp_path / "kubectl-events.txt",
        "NAMESPACE   LAST SEEN           TYPE      REASON      OBJECT                         MESSAGE\n"
        "serving     14m                 Normal    Scheduled   Pod/llama-70b-5f7d9c-q2w4e     Successfully assigned serving/llama-70b-5f7d9c-q2w4e to h100-node-2\n"
        "serving     2m (x12 over 13m)   Warning   BackOff     Pod/llama-70b-5f7d9c-q2w4e     Back-off restarting failed container vllm in pod llama-70b-5f7d9c-q2w4e_serving(7c1d)\n"
        "serving     40s                 Warning   NodeNotReady   Node/h100-node-2            Node h100-node-2 status is now: NodeNotReady\n",
    )
    cap = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
    r = ingest(tmp_path, captured_at=cap)
    assert r.unparsed == 0
    ev = r.events.filter(pl.col(s.SOURCE) == "k8s-event").sort(s.LINE)
    assert ev.select(s.NAMESPACE, s.POD, s.K8S_OBJECT, s.K8S_REASON, s.K8S_COUNT, s.LEVEL, s.TS).rows() == [
        (
            "serving",
            "llama-70b-5f7d9c-q2w4e",
            "pod/llama-70b-5f7d9c-q2w4e",
            "Scheduled",
            None,
            "INFO",
            cap - timedelta(minutes=14),
        ),
        (
            "serving",
            "llama-70b-5f7d9c-q2w4e",
            "pod/llama-70b-5f7d9c-q2w4e",
            "BackOff",
            12,
            "WARNING",
            cap - timedelta(minutes=2),
        ),
        ("serving", None, "node/h100-node-2", "NodeNotReady", None, "WARNING", cap - timedelta(seconds=40)),
    ]
    assert set(ev[s.TS_QUALITY]) == {"relative"}
    assert ev[s.MESSAGE][1].startswith("BackOff: Back-off restarting failed container vllm")
    assert ev[s.HOST][2] == "h100-node-2"  # (a node's event is on that node, as in `-o json`)


def test_cluster_info_dump_markers_set_pod_and_container(tmp_path):
    write(
        tmp_path / "dump/default/vllm-0/logs.txt",
        "==== START logs for container vllm of pod default/vllm-0 ====\n"
        "INFO 03-02 08:00:00 [api_server.py:1885] vLLM API server version 0.10.2\n"
        "==== END logs for container vllm of pod default/vllm-0 ====\n",
    )
    ev = ingest(tmp_path, year=2025).events
    row = _row(ev, source="vllm")
    assert (row[s.NAMESPACE], row[s.POD], row[s.CONTAINER]) == ("default", "vllm-0", "vllm")


def test_must_gather_pod_logs_are_their_pods_not_current_and_previous(tmp_path):
    # OpenShift's must-gather / `oc adm inspect`: each container's log and its previous instance's
    # as `current.log` and `previous.log`, under the pod and container they belong to.
    base = tmp_path / "must-gather.local.42/quay-io-openshift-release-dev-sha256-ab12/namespaces/serving/pods"
    line = "2026-11-30T03:10:00.000000000Z ERROR 11-30 03:10:00 [core.py:720] EngineCore encountered a fatal error.\n"
    for pod in ("vllm-0", "vllm-1"):
        for name in ("current.log", "previous.log"):
            write(base / pod / "vllm" / "vllm" / "logs" / name, line)
    write(base / "vllm-0" / "vllm-0.yaml", "apiVersion: v1\nkind: Pod\n")
    r = ingest(tmp_path)
    logs = r.events.filter(pl.col(s.SOURCE) == "vllm")
    assert sorted(logs.select(s.NAMESPACE, s.POD, s.CONTAINER).rows()) == [
        ("serving", "vllm-0", "vllm"),
        ("serving", "vllm-0", "vllm"),
        ("serving", "vllm-1", "vllm"),
        ("serving", "vllm-1", "vllm"),
    ]


def test_a_nodes_container_log_links_name_their_pod_namespace_and_container(tmp_path):
    # What log shippers tail: the kubelet's `/var/log/containers/<pod>_<ns>_<container>-<id>.log`,
    # copied off the node with its name (the CRI line format inside).
    cid = "3f" * 32
    line = "2026-11-30T03:10:00.123456789Z stderr F ERROR 11-30 03:10:00 [core.py:720] EngineCore died.\n"
    write(tmp_path / "gpu-node-3/var/log/containers" / f"vllm-decode-7c9f-x2kq_serving_vllm-server-{cid}.log", line)
    write(
        tmp_path / "gpu-node-3/var/log/containers" / f"nccl-test-0_default_main-{cid}.log.gz",
        gzip.compress(line.encode()),
    )
    ev = ingest(tmp_path).events.filter(pl.col(s.SOURCE) == "vllm")
    assert sorted(ev.select(s.POD, s.NAMESPACE, s.CONTAINER).rows()) == [
        ("nccl-test-0", "default", "main"),
        ("vllm-decode-7c9f-x2kq", "serving", "vllm-server"),
    ]


def test_unknown_lines_are_kept_as_unknown_events_never_dropped(tmp_path):
    write(tmp_path / "misc.log", "something entirely different\nINFO 03-02 08:00:00 [x.py:1] ok\nmore noise here\n")
    r = ingest(tmp_path, year=2025)
    _balanced(r)
    assert r.unparsed == 2
    assert r.events.filter(pl.col(s.SOURCE) == "unknown")[s.MESSAGE].to_list() == [
        "something entirely different",
        "more noise here",
    ]


# --- time ----------------------------------------------------------------------------


def test_year_rolls_over_from_december_to_january_with_a_reference(tmp_path):
    write(tmp_path / "a.log", "2025-01-01T00:00:30.000000000Z INFO 01-01 00:00:30 [x.py:1] after\n")
    write(tmp_path / "b.log", "INFO 12-31 23:59:50 [x.py:1] before\nINFO 01-01 00:00:10 [x.py:1] after\n")
    ev = ingest(tmp_path).events.filter(pl.col(s.FILE) == "b.log")
    assert ev[s.TS].to_list() == [
        datetime(2024, 12, 31, 23, 59, 50, tzinfo=UTC),
        datetime(2025, 1, 1, 0, 0, 10, tzinfo=UTC),
    ]
    assert set(ev[s.TS_QUALITY]) == {"inferred-year"}


@pytest.mark.parametrize("dated", [True, False])
def test_a_day_the_years_month_lacks_is_no_time_not_a_failed_run(tmp_path, dated):
    # Feb 29 beside a 2025 reference (or under --year 2025) was a polars error that ended the
    # run. Of the years around a reference, the leap one is the day's; `--year` is the year,
    # which has no such day. Apr 31 is no day in any year.
    if dated:
        write(tmp_path / "a.log", "2025-03-02T08:00:00.100Z INFO 03-02 08:00:00 [a.py:1] dated\n")
    write(
        tmp_path / "b.log",
        "INFO 02-29 12:00:00 [x.py:1] leap day\n"
        "INFO 04-31 12:00:00 [x.py:1] no such day\n"
        "INFO 03-01 12:00:00 [x.py:1] next\n",
    )
    r = ingest(tmp_path, year=None if dated else 2025)
    _balanced(r)
    ev = r.events.filter(pl.col(s.FILE) == "b.log").sort(s.LINE)
    leap, march = datetime(2024, 2, 29, 12, tzinfo=UTC), datetime(2025, 3, 1, 12, tzinfo=UTC)
    if dated:
        assert ev[s.TS].to_list() == [leap, leap, march]
        assert ev[s.TS_QUALITY].to_list() == ["inferred-year", "inherited", "inferred-year"]
    else:
        assert ev[s.TS].to_list() == [None, None, march]
        assert ev[s.TS_QUALITY].to_list() == ["none", "none", "inferred-year"]


def test_a_time_outside_the_years_an_event_may_have_is_no_time_and_fails_no_run(tmp_path):
    # A clock set to year 9999 and a Go zero time (`0001-01-01T00:00:00Z`, a field never set):
    # no time an event had. Before, a file's reference time, the median of its one line stamped
    # 9999-12-31T23:59:59.999999Z, rounded past year 9999 and failed the whole run once a
    # year-less line asked for it; the others stood in the tables in year 1 and 9999.
    write(tmp_path / "odd.log", "9999-12-31T23:59:59.999999Z lone line\n")
    write(
        tmp_path / "vllm-0.log",
        "2025-03-02T08:00:00.000000Z INFO 03-02 08:00:00 [api_server.py:1] started\n"
        "9999-12-31T23:59:59.999999Z ERROR 03-02 08:00:01 [core.py:1] clock gone mad\n"
        "2025-03-02T08:00:02.000000Z INFO 03-02 08:00:02 [api_server.py:1] still here\n",
    )
    write(
        tmp_path / "router.log",
        '{"level":"info","ts":"2025-03-02T08:00:00Z","msg":"router up"}\n'
        '{"level":"error","ts":"0001-01-01T00:00:00Z","msg":"upstream unset"}\n',
    )
    write(tmp_path / "vllm-1.log", "INFO 03-02 08:00:05 [api_server.py:1] a line without its year\n")
    r = ingest(tmp_path)
    _balanced(r)
    ev = r.events.sort(s.FILE, s.LINE)
    start, end = s.TS_RANGE
    assert ev.filter(pl.col(s.TS).is_not_null() & ~pl.col(s.TS).is_between(start, end, closed="left")).is_empty()
    got = {m: (ts, q) for m, ts, q in ev.select(s.MESSAGE, s.TS, s.TS_QUALITY).iter_rows()}
    at = datetime(2025, 3, 2, 8, 0, tzinfo=UTC)
    assert got["lone line"] == (None, "none")
    assert got["clock gone mad"] == (at, "inherited") and got["upstream unset"] == (at, "inherited")
    assert got["a line without its year"] == (at + timedelta(seconds=5), "inferred-year")


def test_a_full_date_that_does_not_exist_is_untimed_not_moved_to_another_year(tmp_path):
    # `2025-02-29` says its year: it is no day, not the leap day of 2024 (a year-less `02-29` may be).
    write(
        tmp_path / "a.log",
        "2025-02-28 10:00:00,123 - worker - INFO - fine\n"
        "2025-02-29 10:00:01,000 - worker - ERROR - no such day\n"
        "[2025-02-29 10:00:02 TP0] Decode batch. #running-req: 1, token usage: 0.10, gen throughput (token/s): 5.0\n"
        "2025-03-01 10:00:03,000 - worker - INFO - next\n",
    )
    r = ingest(tmp_path)
    _balanced(r)
    ev = r.events.sort(s.LINE)
    fine = datetime(2025, 2, 28, 10, 0, 0, 123000, tzinfo=UTC)
    assert ev[s.TS].to_list() == [fine, fine, fine, datetime(2025, 3, 1, 10, 0, 3, tzinfo=UTC)]
    assert ev[s.TS_QUALITY].to_list() == ["exact", "inherited", "inherited", "exact"]


def test_year_rolls_over_within_a_file_with_only_year_option(tmp_path):
    write(tmp_path / "b.log", "INFO 12-31 23:59:50 [x.py:1] before\nINFO 01-01 00:00:10 [x.py:1] after\n")
    ev = ingest(tmp_path, year=2024).events
    assert [t.year for t in ev[s.TS]] == [2024, 2025]


def test_year_rollover_compares_with_the_previous_dated_line_across_untimed_ones(tmp_path):
    access = 'INFO:     10.0.0.1:1 - "GET /health HTTP/1.1" 200 OK\n'
    write(
        tmp_path / "b.log",
        "INFO 12-31 23:59:50 [x.py:1] before\n" + access + "INFO 01-01 00:00:10 [x.py:1] after\n" + access,
    )
    ev = ingest(tmp_path, year=2024).events
    assert [(t.year, q) for t, q in zip(ev[s.TS], ev[s.TS_QUALITY], strict=True)] == [
        (2024, "inferred-year"),
        (2024, "inherited"),
        (2025, "inferred-year"),
        (2025, "inherited"),
    ]


def test_events_do_not_depend_on_where_files_are_cut_into_batches(tmp_path, monkeypatch):
    # Each batch is finished (timed, given its pod) as soon as it is parsed, so what a file's
    # earlier lines decide must carry into its next batch: the year rolling over (with only
    # --year), the time inherited by untimed lines, the pod of a cluster-info dump header, a
    # dmesg boot's offset from the wall clock; and an event document parsed whole keeps its
    # place in file order.
    from forensics.ingestion import files as _files

    access = 'INFO:     10.0.0.1:1 - "GET /health HTTP/1.1" 200 OK\n'
    undated, dated = tmp_path / "undated", tmp_path / "dated"
    write(
        undated / "a-rollover.log",
        "INFO 12-31 23:59:50 [x.py:1] before\n" + access * 30 + "INFO 01-01 00:00:10 [x.py:1] after\n" + access * 30,
    )
    write(
        undated / "b-dump.txt",
        "==== START logs for container vllm of pod default/vllm-0 ====\n"
        + "INFO 03-02 08:00:00 [api_server.py:1885] vLLM API server version 0.10.2\n" * 40
        + "==== START logs for container sidecar of pod infra/proxy-1 ====\n"
        + "INFO 03-02 08:00:01 [x.py:1] proxied\n" * 40,
    )
    event = {
        "type": "Warning",
        "reason": "BackOff",
        "message": "restarting",
        "count": 1,
        "involvedObject": {"kind": "Pod", "name": "vllm-0", "namespace": "default"},
        "firstTimestamp": "2024-03-02T08:00:05Z",
        "lastTimestamp": "2024-03-02T08:00:05Z",
    }
    write(dated / "a.log", "INFO 03-02 08:00:02 [x.py:1] timed\n" + access * 60)
    write(dated / "b-events.json", json.dumps({"kind": "EventList", "items": [event]}))
    write(dated / "c.log", access * 5 + "INFO 03-02 08:00:09 [x.py:1] timed\n" + access * 60)
    # A dmesg whose boot's RTC line is batches before its Xid; then a reboot with no wall time.
    booted, kmsg = tmp_path / "booted", "[{:12.6f}] nvidia-nvswitch: probe of 0000:05:00.0 ok\n"
    write(
        booted / "dmesg.txt",
        "[    1.912345] rtc_cmos 00:00: setting system clock to 2025-10-14T10:00:00 UTC (1760436000)\n"
        + "".join(kmsg.format(10.0 + i) for i in range(30))
        + "[86592.000040] NVRM: Xid (PCI:0000:3b:00): 79, pid=812, name=python3, GPU has fallen off the bus.\n"
        + "[    0.000000] Linux version 5.15.0-1053-nvidia #54-Ubuntu SMP\n"
        + "".join(kmsg.format(5.0 + i) for i in range(30)),
    )
    whole = {d: ingest(d, year=2024) for d in (undated, dated, booted)}
    xid = whole[booted].events.filter(pl.col(s.MESSAGE).str.contains("Xid", literal=True)).row(0, named=True)
    assert (xid[s.TS], xid[s.TS_QUALITY]) == (datetime(2025, 10, 15, 10, 3, 10, 87695, tzinfo=UTC), "relative")
    monkeypatch.setattr(batches, "BATCH_CHARS", 700)
    monkeypatch.setattr(_files, "SEGMENT_CHARS", 500)
    for d, expected in whole.items():
        cut = ingest(d, year=2024)
        assert cut.events.equals(expected.events) and cut.metrics.equals(expected.metrics)
        assert cut.accounting() == expected.accounting()
    ev = whole[undated].events
    assert ev.filter(pl.col(s.FILE) == "a-rollover.log")[s.TS].dt.year().to_list() == [2024] * 31 + [2025] * 31
    dump = ev.filter(pl.col(s.FILE) == "b-dump.txt", pl.col(s.SOURCE) != "k8s-state")
    assert dump.group_by(s.NAMESPACE, s.POD, s.CONTAINER).len().sort(s.POD).rows() == [
        ("infra", "proxy-1", "sidecar", 41),
        ("default", "vllm-0", "vllm", 41),
    ]
    ev = whole[dated].events
    assert ev[s.FILE].to_list() == ["a.log"] * 61 + ["b-events.json"] + ["c.log"] * 66
    assert ev.filter(pl.col(s.FILE) == "c.log")[s.TS_QUALITY].value_counts().sort(s.TS_QUALITY).rows() == [
        ("inferred-year", 1),
        ("inherited", 60),
        ("none", 5),
    ]


def test_streamed_tables_are_the_held_ones_written_as_batches_finish(incident_dir, tmp_path, monkeypatch):
    # `forensics ingest --out` streams both tables to Parquet batch by batch (memory stays
    # that of a few batches): what it writes must be exactly what `ingest` would hold.
    from forensics.ingestion import files as _files

    monkeypatch.setattr(batches, "BATCH_CHARS", 2000)
    monkeypatch.setattr(_files, "SEGMENT_CHARS", 1500)
    held = ingest(incident_dir)
    streamed = ingest(incident_dir, stream_to=tmp_path / "out")
    assert streamed.events.height == 0 and streamed.metrics.height == 0
    assert pl.read_parquet(tmp_path / "out/events.parquet").equals(held.events)
    assert pl.read_parquet(tmp_path / "out/metrics.parquet").equals(held.metrics)
    assert streamed.accounting() == held.accounting()
    assert streamed.n_events == held.events.height > 20
    assert streamed.time_span() == held.time_span()
    assert sorted(streamed.column(s.POD).drop_nulls().unique()) == sorted(held.events[s.POD].drop_nulls().unique())


def test_a_streamed_ingest_without_a_single_event_still_writes_both_tables(tmp_path):
    write(tmp_path / "logs/empty.log", "")
    write(tmp_path / "logs/blank.log", "\n\n")
    r = ingest(tmp_path / "logs", stream_to=tmp_path / "out")
    assert r.n_events == 0 and r.files
    assert dict(pl.read_parquet(tmp_path / "out/events.parquet").schema) == s.EVENT_DTYPES
    assert dict(pl.read_parquet(tmp_path / "out/metrics.parquet").schema) == s.METRIC_DTYPES


def test_tz_option_converts_local_time_formats_to_utc(tmp_path):
    write(tmp_path / "v.log", "INFO 03-02 10:00:00 [x.py:1] local\n")
    ev = ingest(tmp_path, year=2025, tz="Europe/Berlin").events
    assert ev[s.TS][0] == datetime(2025, 3, 2, 9, 0, tzinfo=UTC)


def test_lines_without_time_inherit_from_previous_timed_line(tmp_path):
    write(
        tmp_path / "v.log",
        'INFO:     10.0.0.1:1 - "GET /health HTTP/1.1" 200 OK\n'
        "INFO 03-02 10:00:00 [x.py:1] timed\n"
        'INFO:     10.0.0.1:2 - "GET /health HTTP/1.1" 200 OK\n',
    )
    ev = ingest(tmp_path, year=2025).events
    assert ev[s.TS_QUALITY].to_list() == ["none", "inferred-year", "inherited"]
    assert ev[s.TS][2] == ev[s.TS][1]


def test_without_any_year_source_the_file_mtime_year_is_used_with_a_warning(tmp_path):
    p = write(tmp_path / "v.log", "INFO 03-02 10:00:00 [x.py:1] x\n")
    import os

    os.utime(p, (1_700_000_000, 1_700_000_000))  # 2023-11-14
    r = ingest(tmp_path)
    assert r.events[s.TS][0].year == 2023
    assert any("--year" in w for w in r.warnings)


def test_a_file_modified_early_in_a_year_puts_its_december_lines_in_the_year_before(tmp_path):
    # An incident of Dec 30 collected (the files last written) on Jan 2: its lines are not
    # in the coming December, and the Jan lines after them roll over into the mtime's year.
    import os

    p = write(
        tmp_path / "kernel.log",
        "Dec 30 23:59:00 gpu-node-3 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n"
        "Jan  2 00:00:10 gpu-node-3 kernel: nvidia-nvlink: Unregistered Nvlink Core\n",
    )
    collected = datetime(2026, 1, 2, 8, 0, tzinfo=UTC).timestamp()
    os.utime(p, (collected, collected))
    ev = ingest(tmp_path).events.sort(s.LINE)
    assert ev[s.TS].to_list() == [
        datetime(2025, 12, 30, 23, 59, tzinfo=UTC),
        datetime(2026, 1, 2, 0, 0, 10, tzinfo=UTC),
    ]
    # a first line no later than the day after the mtime keeps the mtime's year
    write(p, "Dec 30 06:00:00 gpu-node-3 kernel: x\n")
    os.utime(p, (collected - 86400 * 4, collected - 86400 * 4))  # Dec 29, 2025
    assert ingest(tmp_path).events[s.TS][0] == datetime(2025, 12, 30, 6, 0, tzinfo=UTC)


# --- bad input -----------------------------------------------------------------------


def test_truncated_gzip_keeps_decompressed_lines_and_notes_it(tmp_path):
    body = "".join(f"INFO 03-02 10:00:{i % 60:02d} [x.py:1] line {i}\n" for i in range(2000)).encode()
    blob = gzip.compress(body)
    write(tmp_path / "cut.log.gz", blob[: len(blob) // 2])
    write(tmp_path / "ok.log.gz", gzip.compress(b"INFO 03-02 10:00:00 [x.py:1] fine\n"))
    r = ingest(tmp_path, year=2025)
    _balanced(r)
    cut = next(f for f in r.files if f.file == "cut.log.gz")
    assert 0 < cut.lines < 2000 and any("truncated gzip" in n for n in cut.notes)
    assert any(f.file == "ok.log.gz" and f.parsed == 1 for f in r.files)


def test_binary_and_empty_files_are_skipped_with_reasons(tmp_path):
    write(tmp_path / "core.bin", bytes(range(256)) * 100)
    write(tmp_path / "empty.log", "")
    write(tmp_path / "ok.log", "INFO 03-02 10:00:00 [x.py:1] fine\n")
    r = ingest(tmp_path, year=2025)
    reasons = {k.file: k.reason for k in r.skipped}
    assert reasons["core.bin"].startswith("binary file")
    assert reasons["empty.log"].startswith("empty file")
    assert r.parsed == 1


def test_known_binary_formats_are_skipped_by_name_with_what_to_do(tmp_path):
    # A journal file, a Parquet table or an SQLite database can pass for text of garbage (a Parquet
    # file's schema is printable); each is told by its first bytes and the message says what it is,
    # compressed too (a gzipped journal is told by what it decompresses to); a large file before
    # it is read whole, a small one once it is.
    import pyarrow as pa
    import pyarrow.parquet as pq

    from forensics.ingestion import files as _files

    journal = b"LPKSHHRH" + bytes(8) + b"MESSAGE=kernel: NVRM: Xid 79\n" * 5000
    assert len(journal) > _files.SNIFF_BYTES
    write(tmp_path / "node/system.journal", journal)
    write(tmp_path / "node/system@1.journal.gz", gzip.compress(journal[:2000], mtime=0))
    pq.write_table(pa.table({"message": ["Cache corruption detected in block 7"] * 50}), tmp_path / "old.parquet")
    write(tmp_path / "state.db", b"SQLite format 3\x00" + b"INFO 03-02 10:00:00 [x.py:1] fine\n" * 10)
    write(tmp_path / "ok.log", "INFO 03-02 10:00:00 [x.py:1] fine\n")
    r = ingest(tmp_path, year=2025)
    reasons = {k.file: k.reason for k in r.skipped}
    assert "journalctl --file" in reasons["node/system.journal"]
    assert "journalctl --file" in reasons["node/system@1.journal.gz"]
    assert "Parquet" in reasons["old.parquet"]
    assert "SQLite" in reasons["state.db"]
    assert all(v.startswith("binary file") for v in reasons.values())
    assert r.parsed == 1 and r.events[s.FILE].to_list() == ["ok.log"]


def test_an_earlier_runs_output_inside_the_logs_is_skipped_not_read_as_logs(tmp_path):
    # `forensics analyze logs/ --out logs/report`, run twice: the second run must not read the
    # first one's postmortem (which quotes the evidence lines) or its Parquet as logs.
    line = "ERROR 03-02 10:00:00 [core.py:720] EngineCore encountered a fatal error.\n"
    write(tmp_path / "vllm-0.log", line)
    write(tmp_path / "report/postmortem.md", "# Postmortem\n" + line)
    write(tmp_path / "report/analysis.json", "{}")
    write(tmp_path / "report/extra.log", line)
    write(tmp_path / "ingested/events.parquet", b"PAR1")
    write(tmp_path / "ingested/ingest.json", "{}")
    write(tmp_path / "notes/postmortem.md", "# an engineer's notes, not our output\n" + line)
    r = ingest(tmp_path, year=2025)
    reasons = {k.file: k.reason for k in r.skipped}
    assert reasons["report"] == "an earlier forensics run's output (analysis.json, postmortem.md), not logs"
    assert "events.parquet, ingest.json" in reasons["ingested"]
    assert sorted(set(r.events[s.FILE].to_list())) == ["notes/postmortem.md", "vllm-0.log"]


def test_xz_and_bzip2_logs_are_read_like_gzip_ones_damage_included(tmp_path):
    # `journalctl | xz > node.log.xz`, a bzip2'd rotation: read transparently, whatever the
    # name; a cut xz stream keeps what came before the cut, with a note.
    import bz2
    import lzma

    lines = "".join(f"INFO 03-02 10:00:{i % 60:02d} [engine.py:1] step {i}\n" for i in range(3000))
    write(tmp_path / "vllm-0.log.xz", lzma.compress(lines.encode()))
    write(tmp_path / "vllm-1.log.1", bz2.compress(lines.encode()))
    xz = lzma.compress(lines.encode())
    write(tmp_path / "vllm-2.log.xz", xz[: len(xz) // 2])
    r = ingest(tmp_path, year=2025)
    by = {f.file: f for f in r.files}
    assert by["vllm-0.log.xz"].lines == by["vllm-1.log.1"].lines == 3000
    assert not by["vllm-0.log.xz"].notes and not by["vllm-1.log.1"].notes
    cut = by["vllm-2.log.xz"]
    assert 0 < cut.lines < 3000 and cut.notes[0].startswith("truncated xz: the stream ends early; kept ")
    assert set(r.events.filter(pl.col(s.FILE) == "vllm-0.log.xz")[s.POD]) == {"vllm-0"}
    assert r.skipped == []


def zstd(data: bytes) -> bytes:
    """zstd-compressed `data` (a frame as the `zstd` command writes, without its checksum)."""
    import pyarrow as pa

    return pa.compress(data, codec="zstd", asbytes=True)


def test_zstd_and_lz4_logs_are_read_like_gzip_ones_damage_included(tmp_path):
    # logrotate's `compresscmd zstd`, `kubectl logs | zstd`, `pzstd`, an lz4 frame: read
    # transparently, every frame of a file, skippable ones skipped; a cut stream keeps what came
    # before the cut, and bytes after the last frame that start no other are damage, with a note.
    import pyarrow as pa

    lines = "".join(f"INFO 03-02 10:00:{i % 60:02d} [engine.py:1] step {i}\n" for i in range(30000)).encode()
    half = lines.index(b"step 15000\n") + len(b"step 15000\n")
    write(tmp_path / "vllm-0.log.zst", zstd(lines))
    write(tmp_path / "vllm-1.log.1", zstd(lines[:half]) + zstd(lines[half:]))
    write(tmp_path / "vllm-2.log.zst", zstd(lines)[: len(zstd(lines)) // 2])
    write(tmp_path / "vllm-3.log.zst", zstd(lines) + b"\x00junk after the frame")
    skippable = (0x184D2A50).to_bytes(4, "little") + (4).to_bytes(4, "little") + b"\x00\x01\x02\x03"
    write(tmp_path / "vllm-4.log.zst", skippable + zstd(lines[:half]) + skippable + zstd(lines[half:]))  # pzstd's
    write(tmp_path / "vllm-5.zst", zstd(lines[:half]))
    lz4 = pa.compress(lines, codec="lz4", asbytes=True)  # (an lz4 frame: the same reader)
    write(tmp_path / "vllm-6.log.lz4", lz4)
    write(tmp_path / "vllm-7.log.lz4", lz4[: len(lz4) // 2])
    r = ingest(tmp_path, year=2025)
    by = {f.file: f for f in r.files}
    assert by["vllm-0.log.zst"].lines == by["vllm-1.log.1"].lines == by["vllm-4.log.zst"].lines == 30000
    assert not by["vllm-0.log.zst"].notes and not by["vllm-1.log.1"].notes and not by["vllm-4.log.zst"].notes
    assert 0 < by["vllm-2.log.zst"].lines < 30000
    assert by["vllm-2.log.zst"].notes[0].startswith("truncated zstd: the stream ends early; kept ")
    junk = by["vllm-3.log.zst"]
    assert junk.notes[0].startswith("corrupt zstd (") and junk.lines >= 30000 - 64 * 1024 // 30
    assert set(r.events.filter(pl.col(s.FILE) == "vllm-5.zst")[s.POD]) == {"vllm-5"}  # (named without .zst)
    assert by["vllm-6.log.lz4"].lines == 30000 and not by["vllm-6.log.lz4"].notes
    assert 0 < by["vllm-7.log.lz4"].lines < 30000 and by["vllm-7.log.lz4"].notes[0].startswith("truncated lz4: ")
    first = r.events.filter(pl.col(s.FILE) == "vllm-2.log.zst")[s.MESSAGE].to_list()
    assert first[:-1] == [f"step {i}" for i in range(len(first) - 1)]  # (the last one cut mid-line)
    assert r.skipped == []


@pytest.mark.parametrize("codec", ["gzip", "xz", "bzip2", "zstd", "lz4"])
def test_a_compressed_files_head_is_read_decompressed(tmp_path, codec):
    # The reference-time pass and the sniffing of formats read a file's head: through its
    # decompressor, whichever (bzip2 is told by bytes past the first six).
    import bz2
    import lzma

    import pyarrow as pa

    from forensics.ingestion import files as _files

    compress = {
        "gzip": lambda b: gzip.compress(b, mtime=0),
        "xz": lzma.compress,
        "bzip2": bz2.compress,
        "zstd": zstd,
        "lz4": lambda b: pa.compress(b, codec="lz4", asbytes=True),
    }[codec]
    text = b"".join(b"2025-03-02T10:00:%02dZ INFO 03-02 10:00:%02d [x.py:1] line\n" % (i, i) for i in range(50))
    path = tmp_path / "vllm-0.log.1"
    path.write_bytes(compress(text))
    f = _files.InputFile(path, "vllm-0.log.1", path.stat().st_size, 0.0)
    head, whole = _files.head_of(f, 200)
    assert head == text[: text.rfind(b"\n", 0, 200) + 1] and not whole
    assert _files.known_binary(f) is None


def test_a_sos_report_tar_xz_is_unpacked_and_read(tmp_path):
    # sos report's default bundle is an xz-compressed tarball.
    import io
    import tarfile

    kern = b"Mar  2 10:00:01 gpu-node-3 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tar:
        info = tarfile.TarInfo("sosreport-gpu-node-3-2025-03-02/var/log/messages")
        info.size = len(kern)
        tar.addfile(info, io.BytesIO(kern))
    write(tmp_path / "sosreport-gpu-node-3-2025-03-02.tar.xz", buf.getvalue())
    r = ingest(tmp_path, year=2025)
    assert r.skipped == [] and r.parsed == 1
    assert r.events[s.FILE].to_list() == [
        "sosreport-gpu-node-3-2025-03-02.tar.xz/sosreport-gpu-node-3-2025-03-02/var/log/messages"
    ]
    assert "Xid" in r.events[s.MESSAGE][0]


def test_a_large_log_whose_lines_begin_with_a_bracket_is_read_a_segment_at_a_time(tmp_path, monkeypatch):
    # LMCache's `[2025-05-04 05:25:03,029] LMCache ...`, `[rank0]:` and `[pod/x/c]` lines begin
    # with `[` as a JSON list does; such a log was read whole (twice its size held for a 5 GB
    # one), while a document still is (it parses only whole).
    from forensics.ingestion import files as _files

    monkeypatch.setattr(_files, "SEGMENT_CHARS", 4096)
    lmcache = "".join(
        f"[2025-05-04 05:25:{i % 60:02d},029] LMCache INFO: stored chunk {i} (storage.py:88:lmcache.x)\n"
        for i in range(2000)
    )
    listing = json.dumps(
        [{"message": f"line {i}", "@timestamp": "2025-05-04T05:25:03Z"} for i in range(2000)], indent=2
    )
    found = {}
    for name, text in (("lmcache.log", lmcache), ("export.json", listing), ("rank0.log", "[rank0]:" + lmcache)):
        write(tmp_path / name, text)
        path = tmp_path / name
        found[name] = _files.stream_head(_files.InputFile(path, name, path.stat().st_size, 0.0)) is not None
    assert found == {"lmcache.log": True, "export.json": False, "rank0.log": True}
    r = ingest(tmp_path)
    _balanced(r)
    assert r.events.filter(pl.col(s.FILE) == "lmcache.log").height == 2000


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_a_tar_zst_bundle_is_unpacked_and_a_cut_one_keeps_its_first_members(tmp_path, codec):
    # sos report --compression-type, must-gather bundles: zstd (or lz4) tarballs, unpacked member
    # by member from the stream; a download cut short keeps the members before the cut, and says so.
    import io
    import tarfile

    import pyarrow as pa

    kern = b"Mar  2 10:00:01 gpu-node-3 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n"
    noise = "".join(
        f"Mar  2 10:{i // 60 % 60:02d}:{i % 60:02d} gpu-node-3 kubelet[1]: tick {i:08x}\n" for i in range(40000)
    )
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in (("bundle/var/log/messages", kern), ("bundle/var/log/kubelet.log", noise.encode())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    packed = pa.compress(buf.getvalue(), codec=codec, asbytes=True)
    ext = {"zstd": "zst", "lz4": "lz4"}[codec]
    write(tmp_path / f"whole/sosreport-gpu-node-3.tar.{ext}", packed)
    write(tmp_path / f"cut/sosreport-gpu-node-3.tar.{ext}", packed[: len(packed) // 2])

    whole = ingest(tmp_path / "whole", year=2025)
    assert whole.skipped == [] and whole.parsed == 40001
    assert sorted(set(whole.events[s.FILE])) == [
        f"sosreport-gpu-node-3.tar.{ext}/bundle/var/log/kubelet.log",
        f"sosreport-gpu-node-3.tar.{ext}/bundle/var/log/messages",
    ]
    cut = ingest(tmp_path / "cut", year=2025)
    assert [k.file for k in cut.skipped] == [f"sosreport-gpu-node-3.tar.{ext}"]
    assert cut.skipped[0].reason.startswith(f"damaged tar.{ext} archive (truncated {codec}: the stream ends early")
    assert "Xid" in cut.events.filter(pl.col(s.FILE).str.ends_with("messages"))[s.MESSAGE][0]


def test_invalid_utf8_is_replaced_and_noted(tmp_path):
    write(tmp_path / "bad.log", b"INFO 03-02 10:00:00 [x.py:1] caf\xe9 \xff\xfe ok\n")
    r = ingest(tmp_path, year=2025)
    assert "\ufffd" in r.events[s.MESSAGE][0]
    assert any("invalid UTF-8" in n for n in r.files[0].notes)


def test_a_50_mb_single_line_is_truncated_and_accounted(tmp_path):
    write(
        tmp_path / "huge.log",
        "INFO 03-02 10:00:00 [x.py:1] Received request cmpl-1: prompt: '"
        + "x" * 50_000_000
        + "'\nINFO 03-02 10:00:01 [x.py:1] next\n",
    )
    r = ingest(tmp_path, year=2025)
    _balanced(r)
    assert r.lines == 2 and r.parsed == 2
    msg = r.events[s.MESSAGE][0]
    assert len(msg) < 1_100_000 and "line truncated by forensics" in msg


def test_a_long_multibyte_line_is_cut_by_characters_and_the_mark_counts_the_bytes_cut(tmp_path):
    from forensics.ingestion.batches import MAX_LINE_CHARS

    head = "INFO 03-02 10:00:00 [x.py:1] "
    short = "汉" * (MAX_LINE_CHARS // 2)  # more bytes than the limit, fewer characters: kept whole
    long = "é" * (MAX_LINE_CHARS + 1000)
    write(tmp_path / "wide.log", f"{head}{short}\n{head}{long}\n")
    ev = ingest(tmp_path, year=2025).events.sort(s.LINE)
    assert ev[s.MESSAGE][0] == short
    cut = len(head) + len(long) - MAX_LINE_CHARS  # characters past the limit, two bytes each
    assert (
        ev[s.MESSAGE][1]
        == long[: MAX_LINE_CHARS - len(head)] + f" …[line truncated by forensics: {2 * cut} more bytes]"
    )


def test_unreadable_file_is_skipped_and_the_rest_goes_on(tmp_path, monkeypatch):
    write(tmp_path / "secret.log", "INFO 03-02 10:00:00 [x.py:1] hidden\n")
    write(tmp_path / "ok.log", "INFO 03-02 10:00:00 [x.py:1] fine\n")
    import builtins

    real_open = builtins.open

    def fake_open(path, *a, **k):
        if str(path).endswith("secret.log"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *a, **k)

    monkeypatch.setattr(builtins, "open", fake_open)
    r = ingest(tmp_path, year=2025)
    assert {k.file: k.reason for k in r.skipped}["secret.log"].startswith("unreadable: Permission denied")
    assert r.parsed == 1


@pytest.mark.parametrize("gz", [False, True])
def test_a_large_log_read_a_segment_at_a_time_gives_what_reading_it_whole_gives(tmp_path, monkeypatch, gz):
    # Segments are shrunk to 2 KiB so a 40 KiB file streams: its events, notes and accounting
    # must be those of the whole-file read (same segment cuts: the text is ASCII). Gzipped,
    # the stream is also cut short: what came before the cut is kept, with the same note.
    import gzip

    from forensics.ingestion import files as _files

    monkeypatch.setattr(_files, "SEGMENT_CHARS", 2048)
    body = []
    for i in range(300):
        t = f"2025-03-02T08:{i // 60:02d}:{i % 60:02d}.000000000Z"
        body.append(f"{t} (EngineCore_DP0 pid=9) INFO 03-02 08:{i // 60:02d}:{i % 60:02d} [core.py:7] step {i}\n")
        if i % 50 == 7:
            body.append(
                f"{t} (EngineCore_DP0 pid=9) ERROR 03-02 08:00:00 [core.py:9] Traceback (most recent call last):\n"
            )
            body.append(f'{t} (EngineCore_DP0 pid=9) ERROR 03-02 08:00:00 [core.py:9]   File "x.py", line 1, in f\n')
    data = "".join(body).encode() + b"\x00\x00 tail \xff without newline"
    name = "vllm-0.log.gz" if gz else "vllm-0.log"
    write(tmp_path / "big" / name, gzip.compress(data, mtime=0)[:-9] if gz else data)
    write(tmp_path / "big" / "events.json", '{"kind": "EventList", "items": []}\n' + " " * 9000)
    read = []
    segments = _files.text_segments
    monkeypatch.setattr(_files, "text_segments", lambda f, notes: read.append(f.rel) or segments(f, notes))
    streamed = ingest(tmp_path / "big")
    assert read == [name]
    monkeypatch.setattr(_files, "stream_head", lambda f: None)
    whole = ingest(tmp_path / "big")
    assert streamed.events.equals(whole.events) and streamed.metrics.equals(whole.metrics)
    assert streamed.accounting() == whole.accounting()
    by = {f.file: f for f in streamed.files}
    if gz:
        assert by[name].notes[0].startswith("truncated gzip: the stream ends early; kept ")
        assert by[name].lines > 250
    else:
        assert by[name].notes == (
            "2 NUL bytes removed (padding left by an interrupted write?)",
            "invalid UTF-8 bytes replaced with U+FFFD",
        )
        assert by[name].lines == data.count(b"\n") + 1
    assert by["events.json"].wrapper == "k8s-events-json"  # a document: read whole, not streamed


def test_symlinked_file_is_read_once_and_symlink_loops_are_cut(tmp_path):
    real = write(tmp_path / "pods/vllm-0.log", "INFO 03-02 10:00:00 [x.py:1] once\n")
    (tmp_path / "containers").mkdir()
    (tmp_path / "containers/vllm-0_default_vllm-abc.log").symlink_to(real)
    (tmp_path / "pods/loop").symlink_to(tmp_path / "pods")
    (tmp_path / "dangling.log").symlink_to(tmp_path / "nowhere.log")
    (tmp_path / "a.log").symlink_to(tmp_path / "b.log")  # (a file's links in a ring)
    (tmp_path / "b.log").symlink_to(tmp_path / "a.log")
    r = ingest(tmp_path, year=2025)
    assert r.parsed == 1
    reasons = " | ".join(k.reason for k in r.skipped)
    assert "symlink" in reasons and "loop" in reasons and "broken symlink" in reasons
    said = {k.file: k.reason for k in r.skipped}
    assert said["a.log"].startswith("symlink loop") and said["dangling.log"] == "broken symlink"


def test_ten_thousand_tiny_files_are_ingested(tmp_path):
    for i in range(10_000):
        (tmp_path / f"f{i:05d}.log").write_text(f"INFO 03-02 10:00:00 [x.py:1] file {i}\n")
    r = ingest(tmp_path, year=2025)
    assert len(r.files) == 10_000 and r.parsed == 10_000


def test_nothing_readable_raises_no_input_error_with_a_hint(tmp_path):
    from forensics.errors import NoInputError

    write(tmp_path / "core.bin", bytes(range(256)) * 100)
    with pytest.raises(NoInputError) as e:
        ingest(tmp_path)
    assert "binary" in e.value.hint


def test_an_empty_directory_is_said_to_hold_no_files(tmp_path):
    from forensics.errors import NoInputError

    (tmp_path / "logs" / "empty-subdir").mkdir(parents=True)
    with pytest.raises(NoInputError) as e:
        ingest(tmp_path / "logs")
    assert "no files found" in e.value.hint and "skipped" not in e.value.hint


def test_request_traces_and_other_json_documents_are_set_aside(tmp_path):
    write(tmp_path / "trace.jsonl", '{"timestamp": 0, "input_length": 10, "output_length": 5, "hash_ids": [1]}\n')
    write(tmp_path / "ground_truth.json", '{"root_cause": {"category": "kv-cache"}}\n')
    write(tmp_path / "ok.log", "INFO 03-02 10:00:00 [x.py:1] fine\n")
    r = ingest(tmp_path, year=2025)
    reasons = {k.file: k.reason for k in r.skipped}
    assert reasons["trace.jsonl"].startswith("request trace")
    assert reasons["ground_truth.json"].startswith("JSON document")
    assert r.traces == ["trace.jsonl"]


def test_docker_json_file_lines_are_unwrapped(tmp_path):
    write(
        tmp_path / "c-json.log",
        '{"log":"INFO 03-02 10:00:00 [x.py:1] hello\\n","stream":"stderr","time":"2025-03-02T10:00:00.25Z"}\n',
    )
    row = ingest(tmp_path).events.row(0, named=True)
    assert row[s.MESSAGE] == "hello" and row[s.STREAM] == "stderr" and row[s.TS_QUALITY] == "exact"


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
    _balanced(r)
    assert len(r.files) == len(list((SHARED / "reallogs").glob("*.log")))
    # Everything but the `# source:` headers and kubectl tables of pods is recognised.
    unknown = r.events.filter(pl.col(s.SOURCE) == "unknown")
    assert unknown.filter(~pl.col(s.MESSAGE).str.starts_with("#")).height <= 20


def test_ingest_accepts_a_single_file(incident_dir):
    r = ingest(Path(incident_dir / "kvstore.log"))
    assert r.parsed == 2 and r.files[0].file == "kvstore.log"


def test_nul_padding_after_a_crash_is_removed_and_the_file_still_parsed(tmp_path):
    write(
        tmp_path / "v.log",
        b"INFO 03-02 10:00:00 [x.py:1] before crash\n" + b"\x00" * 4096 + b"\nINFO 03-02 10:01:00 [x.py:1] after\n",
    )
    r = ingest(tmp_path, year=2025)
    assert r.parsed == 2 and any("NUL bytes removed" in n for n in r.files[0].notes)


def test_kubectl_get_pods_nodes_and_describe_pod_become_state_events():
    """Snapshots an on-call pastes into the incident folder: pod status rows, node status rows,
    and a describe whose container Last State says why the container died, with its time."""
    r = ingest([DATA / "k8s-state"])
    ev = r.events.filter(pl.col("source") == "k8s-state")
    pods = ev.filter(pl.col("k8s_object").str.starts_with("pod/"))
    assert pods.select("pod", "k8s_reason", "level", "host").rows() == [
        ("qwen2-72b-instruct-7f9c6d5b48-m4xzt", "CrashLoopBackOff", "WARNING", "gpu-a100-7"),
        ("embed-0", "Running", "INFO", "gpu-a100-7"),
    ]
    assert "4 restarts, last 1m40s ago" in pods["message"][0]
    node = ev.filter(pl.col("k8s_reason") == "NodeNotReady")
    assert node.select("host", "pod").rows() == [("gpu-a100-2", None)]
    died = ev.filter(pl.col("k8s_reason") == "OOMKilled").row(0, named=True)
    assert died["message"].startswith("Last State: Terminated (OOMKilled, exit code 137 SIGKILL) container vllm\n")
    assert died["ts"] == datetime(2025, 6, 12, 3, 24, 52, tzinfo=UTC) and died["ts_quality"] == "exact"
    assert (died["pod"], died["container"], died["host"]) == (
        "qwen2-72b-instruct-7f9c6d5b48-m4xzt",
        "vllm",
        "gpu-a100-7",
    )
    (f,) = r.files
    assert f.unparsed == 3  # the three `$ kubectl ...` shell prompts, honestly counted
    assert f.parsed + f.folded + f.unparsed == f.lines


def test_paste_artefacts_from_issue_threads_and_terminals_are_peeled(tmp_path):
    """k9s box borders, pasted line numbers, Docker Desktop and CI time prefixes (log-formats §6.15)."""
    write(
        tmp_path / "pasted.log",
        "│ INFO 07-28 06:41:19 [loggers.py:118] Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation "
        "throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.1%, Prefix cache hit rate: 0.0% │\n"
        "[80746] ERROR 07-28 06:41:20 [core.py:100] EngineCore encountered a fatal error.\n"
        "2025-07-28 06:41:21 (APIServer pid=1) WARNING 07-28 06:41:21 [api_server.py:1000] docker desktop view\n"
        "[2025-07-28T06:41:23Z] INFO 07-28 06:41:23 [core.py:103] ci runner\n",
    )
    r = ingest([tmp_path])
    ev = r.events
    assert ev["source"].to_list() == ["vllm"] * 4 and r.unparsed == 0
    assert ev["message"].to_list()[1:] == [
        "EngineCore encountered a fatal error.",
        "docker desktop view",
        "ci runner",
    ]
    assert ev["process"][2] == "APIServer"
    assert ev["ts"][3] == datetime(2025, 7, 28, 6, 41, 23, tzinfo=UTC)
    assert r.metrics.filter(pl.col("metric") == "generation_tokens_per_s")["value"].to_list() == [2.0]


def test_a_log_quoted_or_indented_in_an_issue_thread_keeps_its_lines_and_tracebacks(tmp_path):
    # A reply quoting the log (`> ` on every line, nested `> > `), a log indented under a list
    # item: each line is still its producer's event, a traceback under it still folds into it,
    # and a REPL's `>>> ` is no quote. An indented vLLM line after a shell prompt was a
    # continuation of the prompt's line.
    write(
        tmp_path / "issue.log",
        "> ERROR 03-02 10:00:00 [core.py:720] EngineCore failed: Traceback (most recent call last):\n"
        '>     raise RuntimeError("Cache corruption detected in block 7")\n'
        "> > WARNING 03-02 10:00:01 [engine.py:1] quoted twice\n"
        "$ kubectl logs vllm-0\n"
        "   INFO 03-02 10:00:02 [engine.py:1] indented under a list item\n"
        "\t[rank0]:[E302 10:00:03.267261276 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective "
        "operation timeout\n"
        ">>> import vllm\n",
    )
    r = ingest(tmp_path, year=2025)
    _balanced(r)
    ev = r.events.sort(s.LINE)
    assert ev.select(s.LINE, s.SOURCE, s.LEVEL, s.PROCESS, s.RAW_LINES).rows() == [
        (1, "vllm", "ERROR", None, 2),
        (3, "vllm", "WARNING", None, 1),
        (4, "unknown", None, None, 1),
        (5, "vllm", "INFO", None, 1),
        (6, "torch", "ERROR", None, 1),
        (7, "unknown", None, None, 1),
    ]
    assert ev[s.MESSAGE][0].endswith('\n    raise RuntimeError("Cache corruption detected in block 7")')
    assert ev[s.MESSAGE][-1] == ">>> import vllm"


def test_a_pastes_code_fences_are_no_lines_of_the_log_and_end_the_block_above(tmp_path):
    # An issue's Markdown: the log between ```` ``` ```` fences, folded in `<details>`; prose after
    # a pasted traceback. The fences fold (counted, their text not kept) and end the traceback's
    # block, so the prose is an event of its own rather than the traceback's last lines.
    write(
        tmp_path / "issue.log",
        "<details>\n<summary>Full log</summary>\n\n```text\n"
        "ERROR 03-02 10:00:00 [core.py:720] EngineCore failed:\n"
        '  File "x.py", line 1, in f\n'
        "RuntimeError: Cache corruption detected in block 7\n"
        "```\n"
        "I then restarted the pod and it worked\n"
        "~~~\n"
        "INFO 03-02 10:00:05 [engine.py:1] ok\n"
        "~~~\n</details>\n",
    )
    r = ingest(tmp_path, year=2025)
    _balanced(r)
    ev = r.events.sort(s.LINE)
    assert ev.select(s.LINE, s.SOURCE, s.MESSAGE).rows() == [
        (
            5,
            "vllm",
            'EngineCore failed:\n  File "x.py", line 1, in f\nRuntimeError: Cache corruption detected in block 7',
        ),
        (9, "unknown", "I then restarted the pod and it worked"),
        (11, "vllm", "ok"),
    ]
    assert (r.files[0].lines, r.files[0].folded) == (13, 10)


def test_a_directory_holding_only_an_event_document_is_ingested(tmp_path):
    # Regression: with no line-oriented log beside it, accounting looked for the
    # wrapper's `stream` column that only line batches have, and crashed.
    write(tmp_path / "events.json", (DATA / "incident" / "events.json").read_text())
    r = ingest(tmp_path)
    assert r.events.height > 0
    assert r.unparsed == 0 and r.lines == r.parsed
    assert r.files[0].wrapper == "k8s-events-json"
    assert set(r.events["source"]) == {"k8s-event"}


@pytest.mark.parametrize("batch_files", [1, 4000])
def test_event_documents_take_their_place_in_file_order_between_batches(tmp_path, monkeypatch, batch_files):
    # Event documents are parsed whole, apart from the line batches, and put back among
    # them by file id; with a batch per file the places fall between and after batches.

    monkeypatch.setattr(batches, "BATCH_FILES", batch_files)
    events = (DATA / "incident" / "events.json").read_text()
    line = "2025-07-28T06:41:2{n}.000000Z INFO 07-28 06:41:2{n} [x.py:1] file {name} line {n}\n"
    for name in ("a", "c", "e"):
        write(tmp_path / f"{name}.log", "".join(line.format(n=n, name=name) for n in range(3)))
    write(tmp_path / "b-events.json", events)
    write(tmp_path / "d-events.json", events)
    write(tmp_path / "f-events.json", events)
    ev = ingest(tmp_path).events
    order = list(zip(ev[s.FILE], ev[s.LINE], strict=True))
    assert order == sorted(order)
    assert [f for f, _ in order if f.endswith(".log")] == ["a.log"] * 3 + ["c.log"] * 3 + ["e.log"] * 3
    assert {f for f, _ in order} == {"a.log", "b-events.json", "c.log", "d-events.json", "e.log", "f-events.json"}
    assert ev.n_chunks() == 1


def test_short_iso_journal_of_systemd_255_with_a_colon_in_the_offset_is_read_as_journald(tmp_path):
    # systemd 255 writes short-iso's offset as `+00:00` (RFC3339's), as kubectl --timestamps may:
    # an ident with its pid (or the kernel) after the stamp tells a journal entry from a container line.
    write(
        tmp_path / "node-7" / "kubelet.log",
        "2025-03-09T09:00:01.250000+00:00 node-7 kubelet[2211]: E0309 09:00:01.250000    2211 kubelet.go:2412] "
        '"Skipping pod synchronization" err="PLEG is not healthy"\n'
        "2025-03-09T10:00:02+01:00 node-7 kernel: NVRM: Xid (PCI:0000:c1:00): 79, GPU has fallen off the bus.\n"
        "2025-03-09T09:00:03+00:00 Engine core: a container's line after kubectl's stamp\n",
    )
    r = ingest(tmp_path)
    assert [f.wrapper for f in r.files] == ["journald"]
    ev = r.events.sort(s.LINE)
    assert ev[s.SOURCE].to_list() == ["kubelet", "kernel", "unknown"]
    assert ev[s.HOST].to_list() == ["node-7", "node-7", None]
    assert ev[s.LEVEL][0] == "ERROR" and ev[s.COMPONENT][0] == "kubelet.go"
    assert ev[s.MESSAGE][1] == "NVRM: Xid (PCI:0000:c1:00): 79, GPU has fallen off the bus."
    assert ev[s.MESSAGE][2] == "Engine core: a container's line after kubectl's stamp"
    assert ev[s.TS].dt.strftime("%H:%M:%S").to_list() == ["09:00:01", "09:00:02", "09:00:03"]
    assert ev[s.TS_QUALITY].cast(pl.String).to_list() == ["exact"] * 3


def test_host_logs_from_journalctl_json_short_iso_and_dmesg_are_timed_kernel_and_kubelet_events(tmp_path):
    # journalctl -o json (one entry a line; MESSAGE may be stored as bytes), -o short-iso,
    # dmesg (seconds since boot) and dmesg -T (wall time): the formats node logs are collected in.
    write(
        tmp_path / "node-7" / "journal.json",
        '{"__REALTIME_TIMESTAMP":"1741510800250000","_HOSTNAME":"node-7","SYSLOG_IDENTIFIER":"kubelet","_PID":"2211",'
        '"PRIORITY":"3","MESSAGE":"E0309 09:00:00.250000    2211 kubelet.go:2412] \\"Skipping pod synchronization\\" err=\\"PLEG is not healthy\\""}\n'
        '{"__REALTIME_TIMESTAMP":"1741510801000000","_HOSTNAME":"node-7","SYSLOG_IDENTIFIER":"kernel","PRIORITY":"4",'
        '"MESSAGE":[78,86,82,77,58,32,88,105,100,32,40,80,67,73,58,48,48,48,48,58,99,49,58,48,48,41,58,32,55,57]}\n',
    )
    write(
        tmp_path / "node-7" / "journal-iso.log",
        "2025-03-09T09:00:02+0000 node-7 kernel: NVRM: Xid (PCI:0000:c1:00): 79, pid=9120, GPU has fallen off the bus.\n"
        '2025-03-09T09:00:03+0000 node-7 containerd[977]: time="2025-03-09T09:00:03Z" level=error msg="task exit"\n',
    )
    write(
        tmp_path / "node-7" / "dmesg.txt",
        "[ 4211.730125] NVRM: Xid (PCI:0000:c1:00): 79, GPU has fallen off the bus.\n",
    )
    write(
        tmp_path / "node-7" / "dmesg-T.txt",
        "[Sun Mar  9 09:00:04 2025] Memory cgroup out of memory: Killed process 9120 (python3) total-vm:1024kB\n",
    )
    write(  # dmesg --time-format=iso: a comma before the microseconds
        tmp_path / "node-7" / "dmesg-iso.txt",
        "2025-03-09T10:00:05,250000+01:00 mlx5_core 0000:5e:00.0 ibp94s0: Link down\n",
    )
    r = ingest(tmp_path)
    assert r.unparsed == 0
    wrappers = {f.file: f.wrapper for f in r.files}
    assert wrappers == {
        "node-7/dmesg-T.txt": "dmesg",
        "node-7/dmesg-iso.txt": "dmesg",
        "node-7/dmesg.txt": "dmesg",
        "node-7/journal-iso.log": "journald",
        "node-7/journal.json": "journald-json",
    }
    ev = r.events.sort(s.FILE, s.LINE)
    kernel = ev.filter(pl.col(s.SOURCE) == "kernel")
    assert kernel[s.MESSAGE].to_list() == [
        "Memory cgroup out of memory: Killed process 9120 (python3) total-vm:1024kB",
        "mlx5_core 0000:5e:00.0 ibp94s0: Link down",
        "NVRM: Xid (PCI:0000:c1:00): 79, GPU has fallen off the bus.",
        "NVRM: Xid (PCI:0000:c1:00): 79, pid=9120, GPU has fallen off the bus.",
        "NVRM: Xid (PCI:0000:c1:00): 79",
    ]
    assert kernel[s.TS].to_list() == [
        datetime(2025, 3, 9, 9, 0, 4, tzinfo=UTC),
        datetime(2025, 3, 9, 9, 0, 5, 250000, tzinfo=UTC),
        None,  # dmesg without -T: seconds since boot are no wall time
        datetime(2025, 3, 9, 9, 0, 2, tzinfo=UTC),
        datetime(2025, 3, 9, 9, 0, 1, tzinfo=UTC),
    ]
    kubelet = ev.filter(pl.col(s.SOURCE) == "kubelet").row(0, named=True)
    assert (kubelet[s.HOST], kubelet[s.LEVEL], kubelet[s.TS_QUALITY]) == ("node-7", "ERROR", "exact")
    assert kubelet[s.TS] == datetime(2025, 3, 9, 9, 0, 0, 250000, tzinfo=UTC)
    containerd = ev.filter(pl.col(s.PROCESS) == "containerd").row(0, named=True)
    assert (containerd[s.SOURCE], containerd[s.LEVEL]) == ("syslog", "ERROR")


def test_plain_dmesg_lines_are_placed_by_a_line_of_their_boot_that_says_the_wall_time(tmp_path):
    # Plain `dmesg` across three boots: the first kept its RTC line (wall time at 1.912345 s
    # since boot), the second has an AppArmor audit record (the epoch in ms) after its Xid,
    # the third neither. A kern.log line carries both stamps and keeps its syslog time.
    write(
        tmp_path / "gpu-2" / "dmesg.txt",
        "[    0.000000] Linux version 5.15.0-1053-nvidia (buildd@lcy02-amd64-079) #54-Ubuntu SMP\n"
        "[    1.912345] rtc_cmos 00:00: setting system clock to 2025-10-14T10:00:00 UTC (1760436000)\n"
        "[86592.000040] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
        "[    0.000000] Linux version 5.15.0-1053-nvidia (buildd@lcy02-amd64-079) #54-Ubuntu SMP\n"
        "[  311.204000] NVRM: Xid (PCI:0000:3b:00): 48, pid=812, name=python3, Ch 00000008\n"
        '[  312.000000] audit: type=1400 audit(1760529600.500:212): apparmor="DENIED" operation="open" '
        'profile="cri-containerd.apparmor.d" name="/proc/sys/kernel/ns_last_pid" pid=9134 comm="nvidia-smi"\n'
        "[    0.000000] Linux version 5.15.0-1053-nvidia (buildd@lcy02-amd64-079) #54-Ubuntu SMP\n"
        "[   95.310000] NVRM: Xid (PCI:0000:3b:00): 79, pid=1022, name=python3, GPU has fallen off the bus.\n",
    )
    write(
        tmp_path / "gpu-2" / "kern.log",
        "Oct 15 10:03:11 gpu-2 kernel: [86593.100000] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n",
    )
    ev = ingest(tmp_path, year=2025).events.sort(s.FILE, s.LINE)
    dmesg = ev.filter(pl.col(s.FILE) == "gpu-2/dmesg.txt")
    boot = datetime(2025, 10, 14, 10, 0, tzinfo=UTC) - timedelta(seconds=1.912345)
    audit = datetime(2025, 10, 15, 12, 0, 0, 500000, tzinfo=UTC)
    assert dmesg[s.TS].to_list() == [
        boot,  # (before the RTC line, in its boot)
        datetime(2025, 10, 14, 10, 0, tzinfo=UTC),
        boot + timedelta(seconds=86592.000040),
        audit - timedelta(seconds=312),  # (a reboot: the boot before lends it no time)
        audit - timedelta(seconds=0.796),
        audit,
        None,  # a boot with no line that says the wall time
        None,
    ]
    assert dmesg[s.TS_QUALITY].cast(pl.String).to_list() == ["relative"] * 6 + ["none"] * 2
    assert dmesg[s.MESSAGE][2].startswith("NVRM: Xid (PCI:0000:3b:00): 79")
    kern = ev.filter(pl.col(s.FILE) == "gpu-2/kern.log").row(0, named=True)
    assert (kern[s.TS], kern[s.TS_QUALITY]) == (datetime(2025, 10, 15, 10, 3, 11, tzinfo=UTC), "inferred-year")


def test_journalctl_short_monotonic_lines_are_host_logs_placed_by_their_boot_clock(tmp_path):
    # `journalctl -k -o short-monotonic`: seconds since boot, then host and ident; the kernel's
    # lines are placed as dmesg's are, the kubelet's keep their own klog time.
    write(
        tmp_path / "gpu-2" / "journal-k.txt",
        "[    1.912345] gpu-2 kernel: rtc_cmos 00:00: setting system clock to 2025-10-14T10:00:00 UTC (1760436000)\n"
        "[86592.000040] gpu-2 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen "
        "off the bus.\n"
        '[86593.500000] gpu-2 kubelet[2211]: E1015 10:03:11.000001    2211 kubelet.go:2412] "Skipping pod '
        'synchronization" err="PLEG is not healthy"\n',
    )
    r = ingest(tmp_path, year=2025)
    assert r.unparsed == 0 and [f.wrapper for f in r.files] == ["journald"]
    ev = r.events.sort(s.LINE)
    assert ev[s.HOST].to_list() == ["gpu-2"] * 3
    assert ev[s.SOURCE].to_list() == ["kernel", "kernel", "kubelet"]
    assert ev[s.MESSAGE][1].startswith("NVRM: Xid (PCI:0000:3b:00): 79")
    boot = datetime(2025, 10, 14, 10, 0, tzinfo=UTC) - timedelta(seconds=1.912345)
    assert ev[s.TS].to_list() == [
        datetime(2025, 10, 14, 10, 0, tzinfo=UTC),
        boot + timedelta(seconds=86592.000040),
        datetime(2025, 10, 15, 10, 3, 11, 1, tzinfo=UTC),
    ]
    assert ev[s.TS_QUALITY].cast(pl.String).to_list() == ["relative", "relative", "inferred-year"]


def test_journalctl_short_full_and_short_unix_are_timed_host_logs(tmp_path):
    # `journalctl -o short-full` (weekday, date, time, zone) and `-o short-unix` (epoch seconds).
    write(
        tmp_path / "node-3" / "journal-full.log",
        "Sun 2025-03-09 09:00:02 UTC node-3 kernel: NVRM: Xid (PCI:0000:c1:00): 79, pid=9120, GPU has fallen off the bus.\n"
        'Sun 2025-03-09 09:00:03.250000 UTC node-3 kubelet[2211]: E0309 09:00:03.250000    2211 kubelet.go:2412] "Skipping '
        'pod synchronization" err="PLEG is not healthy"\n',
    )
    write(
        tmp_path / "node-4" / "journal-unix.log",
        "1741510804.500001 node-4 kernel: mlx5_core 0000:5e:00.0 ibp94s0: Link down\n",
    )
    r = ingest(tmp_path)
    assert r.unparsed == 0 and {f.wrapper for f in r.files} == {"journald"}
    ev = r.events.sort(s.TS)
    assert ev.select(s.SOURCE, s.HOST, s.TS).rows() == [
        ("kernel", "node-3", datetime(2025, 3, 9, 9, 0, 2, tzinfo=UTC)),
        ("kubelet", "node-3", datetime(2025, 3, 9, 9, 0, 3, 250000, tzinfo=UTC)),
        ("kernel", "node-4", datetime(2025, 3, 9, 9, 0, 4, 500001, tzinfo=UTC)),
    ]
    assert ev[s.MESSAGE][2] == "mlx5_core 0000:5e:00.0 ibp94s0: Link down"


@pytest.mark.parametrize(
    ("rel", "node"),
    [
        ("gpu-b.dmesg", "gpu-b"),
        ("dmesg-gpu-d.log", "gpu-d"),
        ("gpu-b-dmesg-T.txt", "gpu-b"),
        ("gpu-e/dmesg", "gpu-e"),
        ("nodes/gpu-c/var/log/kern.log", "gpu-c"),
        ("node-logs/gpu-f-kubelet.log", "gpu-f"),
        ("logs/kubelet.log", None),
        ("dmesg.txt", None),
        # a sos report: its directory names the host; its files, the command that wrote them
        ("sosreport-gpu-g-2026-11-20-xkqzvb/sos_commands/kernel/dmesg_-T", "gpu-g"),
        ("sosreport-gpu-g-04012345-2026-11-20-xkqzvb/sos_commands/logs/journalctl_--no-pager", "gpu-g"),
        ("sosreport-gpu-g.04012345-20261120093000/var/log/messages", "gpu-g"),
        ("gpu-h/dmesg_-T", "gpu-h"),
        ("journalctl_--no-pager_--unit_kubelet", None),
    ],
)
def test_a_nodes_own_lines_that_name_no_host_take_the_node_their_path_names(tmp_path, rel, node):
    # `dmesg -T > gpu-b.dmesg` and a kubelet.log copied off the node never name it; without the
    # node a link going down could not be put on the node whose pods then failed.
    write(
        tmp_path / rel,
        "[Fri Nov 20 09:20:05 2026] mlx5_core 0000:1a:00.0 ibp26s0: Link down\n"
        'E1120 09:30:47.123456    1450 kubelet.go:2412] "Skipping pod synchronization" err="PLEG is not healthy"\n',
    )
    write(  # a pod's own log beside it keeps no node from its name
        tmp_path / "llama-70b-1.log",
        "2026-11-20T09:20:08.000000Z INFO 11-20 09:20:08 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s\n",
    )
    ev = ingest(tmp_path).events.sort(s.FILE, s.LINE)
    assert sorted(ev.select(s.FILE, s.SOURCE, s.HOST).rows()) == sorted(
        [("llama-70b-1.log", "vllm", None), (rel, "kernel", node), (rel, "kubelet", node)]
    )


def test_a_journal_lines_own_host_wins_over_the_path(tmp_path):
    write(
        tmp_path / "nodes" / "gpu-c" / "journal.log",
        "2025-03-09T09:00:02+0000 node-3 kernel: NVRM: Xid (PCI:0000:c1:00): 79, pid=9120, GPU has fallen off the bus.\n",
    )
    assert ingest(tmp_path).events[s.HOST].to_list() == ["node-3"]


POD_LIST = {  # a cluster-info dump's serving/pods.json (`kubectl get pods -o json` is a `List` alike)
    "kind": "PodList",
    "apiVersion": "v1",
    "items": [
        {
            "metadata": {"name": "vllm-0", "namespace": "serving"},
            "spec": {"nodeName": "gpu-node-1"},
            "status": {"containerStatuses": [{"name": "vllm", "state": {"running": {}}, "lastState": {}}]},
        },
        {
            "metadata": {"name": "vllm-1", "namespace": "serving"},
            "spec": {"nodeName": "gpu-node-2"},
            "status": {
                "containerStatuses": [
                    {
                        "name": "vllm",
                        "restartCount": 3,
                        "state": {
                            "waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s restarting failed"}
                        },
                        "lastState": {
                            "terminated": {
                                "exitCode": 137,
                                "reason": "OOMKilled",
                                "startedAt": "2025-06-12T03:21:05Z",
                                "finishedAt": "2025-06-12T03:24:52Z",
                            }
                        },
                    }
                ]
            },
        },
        {
            "metadata": {"name": "vllm-9", "namespace": "serving"},
            "spec": {"nodeName": "gpu-node-4"},
            "status": {"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory. "},
        },
    ],
}
NODE_LIST = {
    "kind": "NodeList",
    "apiVersion": "v1",
    "items": [
        {
            "metadata": {"name": "gpu-node-4"},
            "status": {
                "nodeInfo": {"kubeletVersion": "v1.30.2"},
                "conditions": [
                    {
                        "type": "MemoryPressure",
                        "status": "True",
                        "lastTransitionTime": "2025-06-12T03:20:00Z",
                        "reason": "KubeletHasInsufficientMemory",
                        "message": "kubelet has insufficient memory available",
                    },
                    {
                        "type": "Ready",
                        "status": "True",
                        "lastTransitionTime": "2025-06-01T00:00:00Z",
                        "reason": "KubeletReady",
                        "message": "kubelet is posting ready status",
                    },
                    {  # (node-problem-detector's: False is healthy)
                        "type": "ReadonlyFilesystem",
                        "status": "False",
                        "lastTransitionTime": "2025-06-01T00:00:00Z",
                        "reason": "FilesystemIsNotReadOnly",
                        "message": "Filesystem is not read-only",
                    },
                ],
            },
        }
    ],
}


def test_pod_and_node_documents_give_what_describe_gives(tmp_path):
    import yaml

    write(tmp_path / "dump" / "serving" / "pods.json", json.dumps(POD_LIST, indent=2))
    write(tmp_path / "dump" / "nodes.yaml", yaml.safe_dump(NODE_LIST))
    r = ingest(tmp_path)
    assert r.skipped == [] and r.unparsed == 0
    assert {f.file: f.wrapper for f in r.files} == {
        "dump/nodes.yaml": "k8s-state-yaml",
        "dump/serving/pods.json": "k8s-state-json",
    }
    ev = r.events.sort(s.FILE, s.LINE)
    assert ev.select(s.HOST, s.POD, s.K8S_REASON, s.TS).rows() == [
        ("gpu-node-4", None, "MemoryPressure", datetime(2025, 6, 12, 3, 20, tzinfo=UTC)),
        ("gpu-node-2", "vllm-1", "OOMKilled", datetime(2025, 6, 12, 3, 24, 52, tzinfo=UTC)),
        ("gpu-node-2", "vllm-1", "CrashLoopBackOff", datetime(2025, 6, 12, 3, 24, 52, tzinfo=UTC)),  # (since the kill)
        ("gpu-node-4", "vllm-9", "Evicted", None),  # (no condition to time it: untimed, not the row above's)
    ]
    assert ev.filter(pl.col(s.K8S_REASON) == "OOMKilled")[s.MESSAGE][0] == (
        "Last State: Terminated (OOMKilled, exit code 137 SIGKILL) container vllm"
    )
    assert set(ev[s.SOURCE]) == {"k8s-state"} and set(ev[s.LEVEL]) == {"WARNING"}


GKE_ENTRIES = [
    {
        "insertId": "a1",
        "textPayload": "ERROR 03-09 09:00:01 [core.py:720] EngineCore encountered a fatal error.",
        "resource": {
            "type": "k8s_container",
            "labels": {"pod_name": "qwen-0", "namespace_name": "llm", "container_name": "vllm", "cluster_name": "c"},
        },
        "labels": {"compute.googleapis.com/resource_name": "gke-gpu-pool-3"},
        "timestamp": "2025-03-09T09:00:01.500000Z",
        "severity": "ERROR",
    },
    {  # a Kubernetes event, as GKE logs them
        "insertId": "a2",
        "jsonPayload": {
            "reason": "Unhealthy",
            "message": "Liveness probe failed: HTTP probe failed with statuscode: 500",
            "involvedObject": {"kind": "Pod", "name": "qwen-0", "namespace": "llm"},
        },
        "resource": {"type": "k8s_pod", "labels": {"pod_name": "qwen-0", "namespace_name": "llm"}},
        "timestamp": "2025-03-09T09:00:05Z",
        "severity": "WARNING",
    },
    {  # the scheduler's: the pod's node, for the pod-to-node map
        "insertId": "a3",
        "jsonPayload": {
            "kind": "Event",
            "type": "Normal",
            "reason": "Scheduled",
            "message": "Successfully assigned llm/qwen-1 to gke-gpu-pool-5",
            "involvedObject": {"kind": "Pod", "name": "qwen-1", "namespace": "llm"},
            "reportingComponent": "default-scheduler",
        },
        "resource": {"type": "k8s_pod", "labels": {"pod_name": "qwen-1", "namespace_name": "llm"}},
        "timestamp": "2025-03-09T09:00:06Z",
        "severity": "INFO",
    },
    {  # a reason that reads like a Python exception: still an event
        "insertId": "a5",
        "jsonPayload": {
            "kind": "Event",
            "type": "Warning",
            "reason": "CreateContainerConfigError",
            "message": 'Error: secret "hf-token" not found',
            "involvedObject": {"kind": "Pod", "name": "qwen-1", "namespace": "llm"},
            "source": {"component": "kubelet", "host": "gke-gpu-pool-5"},
        },
        "resource": {"type": "k8s_pod", "labels": {"pod_name": "qwen-1", "namespace_name": "llm"}},
        "timestamp": "2025-03-09T09:00:06.500000Z",
        "severity": "WARNING",
    },
    {  # a node's, from its kubelet, counted
        "insertId": "a4",
        "jsonPayload": {
            "kind": "Event",
            "type": "Warning",
            "reason": "NodeNotReady",
            "message": "Node gke-gpu-pool-3 status is now: NodeNotReady",
            "involvedObject": {"kind": "Node", "name": "gke-gpu-pool-3", "uid": "gke-gpu-pool-3"},
            "source": {"component": "kubelet", "host": "gke-gpu-pool-3"},
            "count": 3,
        },
        "resource": {"type": "k8s_node", "labels": {"node_name": "gke-gpu-pool-3"}},
        "timestamp": "2025-03-09T09:00:07Z",
        "severity": "WARNING",
    },
]


@pytest.mark.parametrize("layout", ["lines", "gcloud-json"])
def test_google_cloud_logging_entries_keep_their_pod_node_and_time(tmp_path, layout):
    # GKE's logs as a Log Router sink writes them (one entry a line) or as
    # `gcloud logging read --format=json` prints them (one indented list).
    text = (
        "".join(json.dumps(e) + "\n" for e in GKE_ENTRIES) if layout == "lines" else json.dumps(GKE_ENTRIES, indent=2)
    )
    write(tmp_path / "gke-logs.json", text)
    r = ingest(tmp_path)
    _balanced(r)
    assert (r.unparsed, r.skipped) == (0, [])
    ev = r.events.sort(s.LINE).select(s.LINE, s.TS, s.SOURCE, s.HOST, s.POD, s.NAMESPACE, s.LEVEL, s.MESSAGE)
    assert ev.rows() == [
        (
            1,
            datetime(2025, 3, 9, 9, 0, 1, 500000, tzinfo=UTC),
            "vllm",
            "gke-gpu-pool-3",
            "qwen-0",
            "llm",
            "ERROR",
            "EngineCore encountered a fatal error.",
        ),
        (
            2,
            datetime(2025, 3, 9, 9, 0, 5, tzinfo=UTC),
            "k8s-event",
            None,
            "qwen-0",
            "llm",
            "WARNING",  # (no type: the entry's severity says it)
            "Unhealthy: Liveness probe failed: HTTP probe failed with statuscode: 500",
        ),
        (
            3,
            datetime(2025, 3, 9, 9, 0, 6, tzinfo=UTC),
            "k8s-event",
            None,
            "qwen-1",
            "llm",
            "INFO",
            "Scheduled: Successfully assigned llm/qwen-1 to gke-gpu-pool-5",
        ),
        (
            4,
            datetime(2025, 3, 9, 9, 0, 6, 500000, tzinfo=UTC),
            "k8s-event",
            "gke-gpu-pool-5",
            "qwen-1",
            "llm",
            "WARNING",
            'CreateContainerConfigError: Error: secret "hf-token" not found',
        ),
        (
            5,
            datetime(2025, 3, 9, 9, 0, 7, tzinfo=UTC),
            "k8s-event",
            "gke-gpu-pool-3",
            None,
            None,
            "WARNING",
            "NodeNotReady: Node gke-gpu-pool-3 status is now: NodeNotReady",
        ),
    ]
    # Read as `kubectl get events -o json` is: its reason, type, object, count and reporter.
    k8s = r.events.sort(s.LINE).filter(pl.col(s.SOURCE) == "k8s-event")
    assert k8s.select(s.K8S_REASON, s.K8S_TYPE, s.K8S_OBJECT, s.K8S_COUNT, s.COMPONENT).rows() == [
        ("Unhealthy", "Warning", "pod/qwen-0", 1, None),
        ("Scheduled", "Normal", "pod/qwen-1", 1, "default-scheduler"),
        ("CreateContainerConfigError", "Warning", "pod/qwen-1", 1, "kubelet"),
        ("NodeNotReady", "Warning", "node/gke-gpu-pool-3", 3, "kubelet"),
    ]
    from forensics.diagnosis import skew

    assert skew.pod_nodes(r.events) == {"qwen-1": "gke-gpu-pool-5"}


def test_cloudwatch_and_elasticsearch_exports_are_read_one_record_a_line(tmp_path):
    stream = "kube.var.log.containers.qwen-1_llm_vllm-" + "0f" * 32 + ".log"
    write(
        tmp_path / "cloudwatch.json",
        json.dumps(
            {
                "events": [
                    {
                        "logStreamName": stream,
                        "timestamp": 1741510801500,
                        "message": "ERROR 03-09 09:00:01 [core.py:720] EngineCore encountered a fatal error.",
                        "eventId": "1",
                    }
                ],
                "searchedLogStreams": [],
            },
            indent=2,
        ),
    )
    write(
        tmp_path / "es-search.json",
        json.dumps(
            {
                "took": 3,
                "hits": {
                    "total": {"value": 1},
                    "hits": [
                        {
                            "_index": "logs",
                            "_source": {
                                "@timestamp": "2025-03-09T09:00:02Z",
                                "message": "ERROR 03-09 09:00:02 [core.py:720] EngineCore encountered a fatal error.",
                                "kubernetes": {"pod": {"name": "qwen-2"}, "namespace": "llm"},
                            },
                        }
                    ],
                },
            }
        ),
    )
    r = ingest(tmp_path)
    assert (r.unparsed, r.skipped) == (0, [])
    assert all("read one record a line" in f.notes[0] for f in r.files)
    ev = r.events.sort(s.FILE).select(s.FILE, s.TS, s.POD, s.NAMESPACE, s.CONTAINER, s.SOURCE)
    assert ev.rows() == [
        ("cloudwatch.json", datetime(2025, 3, 9, 9, 0, 1, 500000, tzinfo=UTC), "qwen-1", "llm", "vllm", "vllm"),
        ("es-search.json", datetime(2025, 3, 9, 9, 0, 2, tzinfo=UTC), "qwen-2", "llm", None, "vllm"),
    ]


def test_a_kibana_csv_export_is_read_oldest_first_with_its_pods_and_tracebacks(tmp_path):
    # Kibana's Discover "Generate CSV": its date format, ECS columns, `-` for a missing field,
    # the newest record first, and a traceback kept in one quoted cell (quotes doubled).
    write(
        tmp_path / "discover.csv",
        '"@timestamp","kubernetes.pod.name","kubernetes.namespace","kubernetes.container.name","host.name",message\n'
        '"Mar 2, 2025 @ 10:00:03.500","vllm-0",serving,vllm,"gpu-node-3","ERROR 03-02 10:00:03 [core.py:720] '
        "EngineCore encountered a fatal error.\nTraceback (most recent call last):\n"
        '  File ""/usr/lib/python3/vllm/core.py"", line 711, in run\n'
        'RuntimeError: Cache corruption detected in block 17"\n'
        '"Mar 2, 2025 @ 10:00:02.000","vllm-0",serving,vllm,"gpu-node-3","INFO 03-02 10:00:02 [loggers.py:118] '
        "Engine 000: Avg prompt throughput: 120.0 tokens/s, Avg generation throughput: 80.0 tokens/s, Running: 4 reqs, "
        'Waiting: 0 reqs, GPU KV cache usage: 45.0%, Prefix cache hit rate: 10.0%"\n'
        '"Mar 2, 2025 @ 10:00:01.000","vllm-1",serving,vllm,-,"INFO 03-02 10:00:01 [async_llm.py:270] Added request '
        'cmpl-abc123."\n',
    )
    r = ingest(tmp_path)
    (f,) = r.files
    assert (f.wrapper, f.lines, f.parsed, f.unparsed) == ("log-export-csv", 3, 3, 0)
    assert "a CSV export of 3 log records" in f.notes[0]
    assert f.notes[1] == "its records were listed newest first (as log stores show them): read oldest first"
    ev = r.events.select(s.LINE, s.TS, s.SOURCE, s.LEVEL, s.HOST, s.POD, s.NAMESPACE, s.CONTAINER, s.REQUEST_ID)
    assert ev.rows() == [
        (
            1,
            datetime(2025, 3, 2, 10, 0, 1, tzinfo=UTC),
            "vllm",
            "INFO",
            None,
            "vllm-1",
            "serving",
            "vllm",
            "cmpl-abc123",
        ),
        (
            2,
            datetime(2025, 3, 2, 10, 0, 2, tzinfo=UTC),
            "vllm",
            "INFO",
            "gpu-node-3",
            "vllm-0",
            "serving",
            "vllm",
            None,
        ),
        (
            3,
            datetime(2025, 3, 2, 10, 0, 3, 500000, tzinfo=UTC),
            "vllm",
            "ERROR",
            "gpu-node-3",
            "vllm-0",
            "serving",
            "vllm",
            None,
        ),
    ]
    fatal = r.events[s.MESSAGE][2]
    assert fatal.startswith("EngineCore encountered a fatal error.\nTraceback")
    assert fatal.endswith(
        'File "/usr/lib/python3/vllm/core.py", line 711, in run\nRuntimeError: Cache corruption detected in block 17'
    )
    kv = r.metrics.filter(pl.col("metric") == "gpu_kv_cache_usage").select(s.POD, "value").rows()
    assert kv == [("vllm-0", 0.45)]


def test_grafana_datadog_and_splunk_csv_exports_name_pods_nodes_and_exact_times(tmp_path):
    # Grafana Explore on Loki (the stream labels as JSON, `tsNs` before the zone-less `Time`),
    # Datadog's Log Explorer (`Status` as the level) and Splunk (`_raw`, the container log path
    # in `source`), one tab-separated.
    labels = '"{""container"":""vllm"",""namespace"":""llm"",""pod"":""qwen-1"",""node_name"":""node-21""}"'
    write(
        tmp_path / "explore.csv",
        "labels,Time,Line,tsNs,id\n"
        f'{labels},2025-03-09 11:00:02.000,"[rank3]:[E309 09:00:02.000000000 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog '
        "caught collective operation timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, "
        'Timeout(ms)=600000) ran for 600012 milliseconds before timing out.",1741510802123456789,a\n'
        f'{labels},2025-03-09 11:00:01.000,"node-21:412:498 [3] NCCL INFO comm 0x5581 rank 3 nranks 8 cudaDev 3 '
        'busId 3b000 - Init COMPLETE",1741510801000000000,b\n',
    )
    write(
        tmp_path / "datadog.csv",
        "Date,Host,Service,Status,Message\n"
        '2025-03-09T09:00:03.250Z,node-22,vllm,warn,"Sequence group 7 is preempted: not enough KV cache space"\n',
    )
    path = "/var/log/containers/qwen-2_llm_vllm-" + "ab" * 32 + ".log"
    write(
        tmp_path / "splunk.tsv",
        f"_time\t_raw\thost\tsource\n2025-03-09T09:00:04.000+00:00\tERROR 03-09 09:00:04 [core.py:720] EngineCore "
        f"encountered a fatal error.\tnode-22\t{path}\n",
    )
    r = ingest(tmp_path)
    assert r.skipped == [] and r.unparsed == 0
    assert {f.file: f.wrapper for f in r.files} == dict.fromkeys(
        ("datadog.csv", "explore.csv", "splunk.tsv"), "log-export-csv"
    )
    ev = r.events.sort(s.TS).select(s.TS, s.SOURCE, s.LEVEL, s.HOST, s.POD, s.NAMESPACE, s.CONTAINER)
    assert ev.rows() == [
        (datetime(2025, 3, 9, 9, 0, 1, tzinfo=UTC), "nccl", "INFO", "node-21", "qwen-1", "llm", "vllm"),
        (datetime(2025, 3, 9, 9, 0, 2, 123456, tzinfo=UTC), "torch", "ERROR", "node-21", "qwen-1", "llm", "vllm"),
        (datetime(2025, 3, 9, 9, 0, 3, 250000, tzinfo=UTC), "app", "WARNING", "node-22", "datadog", None, None),
        (datetime(2025, 3, 9, 9, 0, 4, tzinfo=UTC), "vllm", "ERROR", "node-22", "qwen-2", "llm", "vllm"),
    ]
    watchdog = r.events.filter(pl.col(s.SOURCE) == "torch").row(0, named=True)
    assert (watchdog[s.COLL_SEQ], watchdog[s.COLL_OP], watchdog[s.COLL_TIMEOUT_MS]) == (42, "ALLREDUCE", 600000)


def test_a_csv_exports_zoneless_times_are_in_the_zone_given_and_rows_without_a_message_are_kept(tmp_path):
    write(
        tmp_path / "insights.csv",
        "@timestamp,@message,@logStream\n"
        "2025-03-09 10:00:05.000,CUDA error: an illegal memory access was encountered,vllm-0\n"
        "2025-03-09 10:00:06.000,,vllm-0\n",
    )
    r = ingest(tmp_path, tz="Europe/Berlin")
    assert r.files[0].lines == 2 and r.unparsed + r.parsed == 2
    assert r.events[s.TS].to_list() == [
        datetime(2025, 3, 9, 9, 0, 5, tzinfo=UTC),
        datetime(2025, 3, 9, 9, 0, 6, tzinfo=UTC),
    ]
    # A row without a message keeps its cells as its line (its time read back off them): never dropped.
    assert r.events[s.MESSAGE].to_list()[1] == "vllm-0"


def _yearless_log_beside(tmp_path) -> list[datetime]:
    """The times of a yearless vLLM line written into `tmp_path` beside what is there, its file
    modified in 2027: what the directory's dated files make of its year."""
    import os

    log = tmp_path / "vllm-0.log"
    write(log, "ERROR 03-02 10:05:00 [core.py:720] EngineCore encountered a fatal error.\n")
    later = datetime(2027, 6, 1, tzinfo=UTC).timestamp()
    os.utime(log, (later, later))
    return ingest(tmp_path).events.filter(pl.col(s.FILE) == "vllm-0.log")[s.TS].to_list()


def test_a_csv_exports_exact_times_give_the_year_of_the_yearless_logs_beside_it(tmp_path):
    # The export pulled from the log store is the directory's only fully qualified clock; a
    # vLLM log copied off a pod later (its modification time two years on) takes its year from it.
    write(
        tmp_path / "discover.csv",
        '"@timestamp",message\n"Mar 2, 2025 @ 10:00:01.000","INFO 03-02 10:00:01 [x.py:1] from the store"\n',
    )
    assert _yearless_log_beside(tmp_path) == [datetime(2025, 3, 2, 10, 5, tzinfo=UTC)]


@pytest.mark.parametrize("records", [1, 3000])
def test_a_json_exports_exact_times_give_the_year_of_the_yearless_logs_beside_it(tmp_path, records):
    # An Elasticsearch search response pretty-printed by `jq`: one record, its head the whole
    # file, or thousands, a head cut short that parses as no JSON (the file is read whole).
    hits = [
        {
            "_index": "logs",
            "_source": {
                "@timestamp": f"2025-03-02T10:00:{i % 60:02d}Z",
                "message": f"INFO 03-02 10:00:{i % 60:02d} [x.py:1] from the store {i}",
            },
        }
        for i in range(records)
    ]
    write(tmp_path / "es-search.json", json.dumps({"took": 3, "hits": {"hits": hits}}, indent=2))
    assert ((tmp_path / "es-search.json").stat().st_size > 256 * 1024) == (records > 1)
    assert _yearless_log_beside(tmp_path) == [datetime(2025, 3, 2, 10, 5, tzinfo=UTC)]


def test_a_log_line_with_commas_is_not_taken_for_a_csv_export_header(tmp_path):
    # A header names columns, one or two words each, and an export's rows have its columns:
    # a log whose first line happens to look like a header, or a sentence, stays a log.
    write(tmp_path / "vllm-0.log", "time,message\nINFO 03-02 10:00:00 [x.py:1] time, message, and more\n")
    write(tmp_path / "notes.csv", "time,message,a few more words\nsomething happened\n")
    r = ingest(tmp_path, year=2025)
    by = {f.file: f for f in r.files}
    assert by["vllm-0.log"].wrapper is None and (by["vllm-0.log"].lines, by["vllm-0.log"].parsed) == (2, 1)
    assert by["notes.csv"].wrapper is None and by["notes.csv"].lines == 2 == by["notes.csv"].unparsed


def test_shipper_exports_keep_the_pod_and_node_the_shipper_attached(tmp_path):
    # Fluent Bit / Vector JSON lines, an Elasticsearch export (ECS fields) and `logcli query`
    # output: the incident's logs as pulled from the log store instead of from the pods.
    write(
        tmp_path / "fluent-bit.jsonl",
        '{"date":1741510800.25,"log":"INFO 03-09 09:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 900.0 tokens/s, '
        "Avg generation throughput: 610.5 tokens/s, Running: 9 reqs, Waiting: 0 reqs, GPU KV cache usage: 33.0%, "
        'Prefix cache hit rate: 5.0%\\n","stream":"stdout","kubernetes":{"pod_name":"qwen-14b-7d5c9b6f4-abcde",'
        '"namespace_name":"llm","container_name":"vllm","host":"node-21"}}\n'
        '{"@timestamp":"2025-03-09T09:00:01.500Z","message":"ERROR 03-09 09:00:01 [core.py:720] EngineCore encountered a fatal error.",'
        '"kubernetes":{"pod":{"name":"qwen-14b-7d5c9b6f4-abcde"},"namespace":"llm","node":{"name":"node-21"}}}\n',
    )
    write(
        tmp_path / "loki-export.log",
        '2025-03-09T09:00:02Z {container="vllm", namespace="llm", pod="qwen-14b-7d5c9b6f4-fghij", node_name="node-22"} '
        "ERROR 03-09 09:00:02 [core.py:720] EngineCore encountered a fatal error.\n",
    )
    r = ingest(tmp_path)
    assert r.unparsed == 0
    ev = r.events.sort(s.FILE, s.LINE).select(s.TS, s.SOURCE, s.HOST, s.POD, s.NAMESPACE, s.LEVEL)
    assert ev.rows() == [
        (
            datetime(2025, 3, 9, 9, 0, 0, 250000, tzinfo=UTC),
            "vllm",
            "node-21",
            "qwen-14b-7d5c9b6f4-abcde",
            "llm",
            "INFO",
        ),
        (
            datetime(2025, 3, 9, 9, 0, 1, 500000, tzinfo=UTC),
            "vllm",
            "node-21",
            "qwen-14b-7d5c9b6f4-abcde",
            "llm",
            "ERROR",
        ),
        (datetime(2025, 3, 9, 9, 0, 2, tzinfo=UTC), "vllm", "node-22", "qwen-14b-7d5c9b6f4-fghij", "llm", "ERROR"),
    ]
    m = r.metrics.filter(pl.col("metric") == "generation_tokens_per_s").row(0, named=True)
    assert (m["pod"], m["value"]) == ("qwen-14b-7d5c9b6f4-abcde", 610.5)


def test_utf16_from_a_powershell_redirect_and_a_utf8_bom_lose_no_line(tmp_path):
    text = (
        "2025-04-01T06:00:00.000000000Z INFO 04-01 06:00:00 [core.py:1] Modèle chargé en 41 s\r\n"
        "2025-04-01T06:00:09.000000000Z ERROR 04-01 06:00:09 [core.py:720] EngineCore encountered a fatal error.\r\n"
    )
    write(tmp_path / "powershell.log", text.encode("utf-16"))  # BOM + UTF-16LE, as `> file` writes it
    write(tmp_path / "notepad.log", b"\xef\xbb\xbf" + text.encode())
    r = ingest(tmp_path)
    assert r.unparsed == 0 and r.lines == 4
    for name in ("powershell.log", "notepad.log"):
        ev = r.events.filter(pl.col(s.FILE) == name).sort(s.LINE)
        assert ev[s.MESSAGE].to_list() == ["Modèle chargé en 41 s", "EngineCore encountered a fatal error."]
        assert ev[s.TS].to_list()[0] == datetime(2025, 4, 1, 6, 0, tzinfo=UTC)
    notes = {f.file: f.notes for f in r.files}
    assert notes["powershell.log"] == ("UTF-16 text (e.g. a PowerShell redirect) decoded",)


def _tar_gz(path: Path, members: dict[str, bytes]) -> None:
    import io
    import tarfile

    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def test_support_bundles_are_unpacked_and_their_files_named_inside_the_archive(tmp_path):
    import zipfile

    members = {p.name: p.read_bytes() for p in sorted((DATA / "incident").iterdir())}
    _tar_gz(tmp_path / "must-gather.tgz", {f"gather/{k}": v for k, v in members.items()})
    with zipfile.ZipFile(tmp_path / "bundle.zip", "w") as z:
        z.writestr("node-logs/kubelet.journal", members["kubelet.journal"])
    plain = ingest(DATA / "incident")
    r = ingest(tmp_path)
    names = sorted(f.file for f in r.files)
    assert names == ["bundle.zip/node-logs/kubelet.journal"] + sorted(f"must-gather.tgz/gather/{k}" for k in members)
    journal_lines = next(f.lines for f in plain.files if f.file == "kubelet.journal")
    assert r.unparsed == plain.unparsed and r.lines == plain.lines + journal_lines
    inner = r.events.filter(pl.col(s.FILE).str.starts_with("must-gather.tgz/"))
    assert inner.drop(s.FILE).equals(plain.events.drop(s.FILE))


def test_a_hostile_or_truncated_archive_gives_what_it_safely_can(tmp_path):
    good = b"2025-03-02T08:06:40.000000000Z ERROR 03-02 08:06:40 [core.py:720] EngineCore encountered a fatal error.\n"
    _tar_gz(tmp_path / "evil.tar.gz", {"../../escape.log": good, "/etc/abs.log": good, "ok/pod.log": good})
    _tar_gz(tmp_path / "cut.tar.gz", {"a/first.log": good, "b/second.log": good * 4000})
    data = (tmp_path / "cut.tar.gz").read_bytes()
    (tmp_path / "cut.tar.gz").write_bytes(data[: len(data) * 2 // 3])
    r = ingest(tmp_path)
    names = {f.file for f in r.files}
    assert "evil.tar.gz/ok/pod.log" in names and not any("escape" in n or "abs" in n for n in names)
    assert "cut.tar.gz/a/first.log" in names
    assert not (tmp_path.parent / "escape.log").exists()
    assert any(k.file == "cut.tar.gz" and "damaged" in k.reason for k in r.skipped)


def test_kubectl_prefix_output_of_many_pods_keeps_each_pods_traceback_whole(tmp_path):
    # `kubectl logs -l app=vllm --prefix --timestamps`: the pods' lines interleave in one file.
    a, b = "[pod/mixtral-5b9c7d6f8-r4t6y/vllm] ", "[pod/mixtral-5b9c7d6f8-u8i9o/vllm] "
    ts = "2025-05-20T14:00:01.000000000Z "
    write(
        tmp_path / "all-replicas.log",
        f"{a}{ts}ERROR 05-20 14:00:01 [core.py:720] EngineCore encountered a fatal error.\n"
        f"{b}{ts}INFO 05-20 14:00:01 [logger.py:41] Received request chatcmpl-77a1: prompt length 31.\n"
        f"{a}{ts}Traceback (most recent call last):\n"
        f"{b}{ts}INFO 05-20 14:00:01 [logger.py:41] Finished request chatcmpl-77a1.\n"
        f'{a}{ts}  File "/opt/vllm/v1/engine/core.py", line 701, in run_engine_core\n'
        f"{a}{ts}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.25 GiB.\n",
    )
    r = ingest(tmp_path)
    assert r.unparsed == 0 and r.folded == 3
    ev = r.events.sort(s.LINE)
    assert ev[s.POD].to_list() == ["mixtral-5b9c7d6f8-r4t6y", "mixtral-5b9c7d6f8-u8i9o", "mixtral-5b9c7d6f8-u8i9o"]
    assert set(ev[s.CONTAINER]) == {"vllm"}
    crash = ev.row(0, named=True)
    assert crash[s.RAW_LINES] == 4 and crash[s.MESSAGE].endswith("CUDA out of memory. Tried to allocate 1.25 GiB.")


def test_describe_node_failing_conditions_are_timed_node_events(tmp_path):
    write(
        tmp_path / "describe-nodes.txt",
        "Name:               h100-node-12\n"
        "Roles:              <none>\n"
        "CreationTimestamp:  Tue, 04 Feb 2025 11:02:10 +0000\n"
        "Taints:             node.kubernetes.io/memory-pressure:NoSchedule\n"
        "Conditions:\n"
        "  Type             Status  LastHeartbeatTime                 LastTransitionTime                Reason                       Message\n"
        "  ----             ------  -----------------                 ------------------                ------                       -------\n"
        "  MemoryPressure   True    Fri, 14 Mar 2025 03:10:44 +0000   Fri, 14 Mar 2025 03:07:31 +0000   KubeletHasInsufficientMemory kubelet has insufficient memory available\n"
        "  DiskPressure     False   Fri, 14 Mar 2025 03:10:44 +0000   Tue, 04 Feb 2025 11:02:10 +0000   KubeletHasNoDiskPressure     kubelet has no disk pressure\n"
        "  Ready            True    Fri, 14 Mar 2025 03:10:44 +0000   Tue, 04 Feb 2025 11:02:40 +0000   KubeletReady                 kubelet is posting ready status\n"
        "  KernelDeadlock   True    Fri, 14 Mar 2025 03:10:44 +0000   Fri, 14 Mar 2025 03:08:12 +0000   DockerHung                   task docker:7 blocked for more than 120 seconds.\n"
        "Name:               h100-node-13\n"
        "Conditions:\n"
        "  Type             Status    LastHeartbeatTime                 LastTransitionTime                Reason              Message\n"
        "  ----             ------    -----------------                 ------------------                ------              -------\n"
        "  Ready            Unknown   Fri, 14 Mar 2025 03:09:02 +0000   Fri, 14 Mar 2025 03:09:58 +0000   NodeStatusUnknown   Kubelet stopped posting node status.\n",
    )
    r = ingest(tmp_path)
    assert r.unparsed == 0
    bad = r.events.filter(pl.col(s.K8S_TYPE) == "Warning").sort(s.LINE)
    assert bad.select(s.HOST, s.K8S_REASON, s.K8S_OBJECT, s.TS).rows() == [
        ("h100-node-12", "MemoryPressure", "node/h100-node-12", datetime(2025, 3, 14, 3, 7, 31, tzinfo=UTC)),
        # node-problem-detector's own condition: True is the problem, as for the pressures
        ("h100-node-12", "KernelDeadlock", "node/h100-node-12", datetime(2025, 3, 14, 3, 8, 12, tzinfo=UTC)),
        ("h100-node-13", "NodeNotReady", "node/h100-node-13", datetime(2025, 3, 14, 3, 9, 58, tzinfo=UTC)),
    ]
    from forensics.diagnosis.signatures import classify

    assert classify(bad)["category"].to_list() == ["node"] * 3
    assert bad[s.MESSAGE][2].startswith("NodeNotReady: Ready=Unknown since Fri, 14 Mar 2025 03:09:58 +0000")
    # Healthy conditions fold into their block instead of reading as events of their own.
    assert not r.events.filter(pl.col(s.MESSAGE).str.starts_with("DiskPressure")).height


def test_a_describe_event_with_a_relative_age_never_borrows_the_time_of_the_line_above(tmp_path):
    write(
        tmp_path / "describe-pod.txt",
        "Name:         llama-3-8b-5c7f9d6b4-k2v9x\n"
        "Start Time:   Wed, 07 May 2025 10:14:02 +0000\n"
        "Containers:\n"
        "  vllm:\n"
        "    State:          Terminated\n"
        "      Reason:       Error\n"
        "      Exit Code:    1\n"
        "      Finished:     Wed, 07 May 2025 10:31:40 +0000\n"
        "Events:\n"
        "  Type     Reason   Age                From     Message\n"
        "  ----     ------   ----               ----     -------\n"
        "  Warning  BackOff  3m (x7 over 15m)   kubelet  Back-off restarting failed container vllm in pod llama-3-8b-5c7f9d6b4-k2v9x\n",
    )
    backoff = pl.col(s.K8S_REASON) == "BackOff"
    row = ingest(tmp_path).events.filter(backoff).row(0, named=True)
    assert (row[s.TS], row[s.TS_QUALITY]) == (None, "none")
    captured = datetime(2025, 5, 7, 10, 40, tzinfo=UTC)
    row = ingest(tmp_path, captured_at=captured).events.filter(backoff).row(0, named=True)
    assert (row[s.TS], row[s.TS_QUALITY]) == (datetime(2025, 5, 7, 10, 37, tzinfo=UTC), "relative")


def test_ray_core_worker_fatal_lines_keep_their_critical_level(tmp_path):
    write(
        tmp_path / "raylet.out",
        "[2024-10-02 17:40:11,532 E 51220 51301] core_worker.cc:712: Worker died unexpectedly: SIGSEGV\n"
        "[2024-10-02 17:40:11,540 C 51220 51301] core_worker.cc:201: The core worker has already been shutdown.\n",
    )
    ev = ingest(tmp_path).events.sort(s.LINE)
    assert ev.select(s.SOURCE, s.LEVEL).rows() == [("ray", "ERROR"), ("ray", "CRITICAL")]
    assert ev[s.MESSAGE][1] == "core_worker.cc:201: The core worker has already been shutdown."


def test_stern_output_names_each_line_with_its_pod_and_container(tmp_path):
    # `stern qwen --timestamps` on a TTY: coloured pod and container names, then the line.
    write(
        tmp_path / "stern.log",
        "\x1b[32mqwen-7b-58d6c9f7b-t5r4e\x1b[0m \x1b[33mvllm\x1b[0m 2025-08-01T12:00:00.000000000Z "
        "ERROR 08-01 12:00:00 [core.py:720] EngineCore encountered a fatal error.\n"
        "\x1b[32mqwen-7b-58d6c9f7b-t5r4e\x1b[0m \x1b[33mvllm\x1b[0m 2025-08-01T12:00:00.000000000Z "
        "Traceback (most recent call last):\n"
        "qwen-7b-58d6c9f7b-y7u8i vllm 2025-08-01T12:00:02.000000000Z "
        'INFO:     10.0.0.9:51000 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error\n'
        "just a line that happens to start with two words\n",
    )
    r = ingest(tmp_path)
    ev = r.events.sort(s.LINE)
    assert ev.select(s.POD, s.CONTAINER, s.SOURCE).rows()[:2] == [
        ("qwen-7b-58d6c9f7b-t5r4e", "vllm", "vllm"),
        ("qwen-7b-58d6c9f7b-y7u8i", "vllm", "uvicorn"),
    ]
    assert ev[s.RAW_LINES][0] == 2 and ev[s.TS][1] == datetime(2025, 8, 1, 12, 0, 2, tzinfo=UTC)
    assert ev[s.MESSAGE][2] == "just a line that happens to start with two words" and r.unparsed == 1


def test_sterns_own_notices_are_their_containers_lifecycle_not_unparsed_lines(tmp_path):
    # stern between the lines it tails: `+ pod › container` when it starts tailing a container,
    # `- pod › container` when the container ends (a restart is a `-` then a `+`), coloured on a TTY.
    pod = "qwen-7b-58d6c9f7b-t5r4e"
    write(
        tmp_path / "stern.log",
        f"\x1b[32m+\x1b[0m \x1b[36m{pod}\x1b[0m \u203a \x1b[33mvllm\x1b[0m\n"
        f"{pod} vllm 2025-08-01T12:00:00.000000000Z ERROR 08-01 12:00:00 [core.py:720] EngineCore encountered a "
        "fatal error.\n"
        f"- {pod} \u203a vllm\n"
        f"+ {pod} \u203a vllm\n"
        "+ a line of its own \u203a that only looks like one\n",
    )
    r = ingest(tmp_path)
    _balanced(r)
    ev = r.events.sort(s.LINE)
    notices = ev.filter(pl.col(s.SOURCE) == "k8s-state")
    assert notices[s.LINE].to_list() == [1, 3, 4]
    assert set(notices.select(s.POD, s.CONTAINER).rows()) == {(pod, "vllm")}
    assert [m.split(" container")[0] for m in notices[s.MESSAGE]] == [
        "stern began tailing",
        "stern stopped tailing",
        "stern began tailing",
    ]
    # The notices take the time of the line before them (stern prints them as it goes).
    assert notices[s.TS].to_list()[1:] == [datetime(2025, 8, 1, 12, 0, tzinfo=UTC)] * 2
    assert r.unparsed == 1 and ev.filter(pl.col(s.LINE) == 5)[s.SOURCE].item() == "unknown"


def test_hostile_json_lines_never_crash_the_collector_wrappers(tmp_path):
    write(
        tmp_path / "export.jsonl",
        '{"date": 1e300, "log": "an epoch past any log"}\n'
        '{"date": NaN, "log": "not a number"}\n'
        '{"time": true, "log": "a boolean time"}\n'
        '{"log": 5}\n'
        '{"log": "odd metadata", "kubernetes": {"pod": 7, "namespace": ["x"], "host": {"a": 1}}}\n'
        '{"__REALTIME_TIMESTAMP": "99999999999999999999999", "_PID": 4242, "MESSAGE": "a 23-digit journal time"}\n'
        '{"__REALTIME_TIMESTAMP": "abc", "MESSAGE": [300, -1, "x", 104, 105]}\n'
        "[1, 2, 3]\n"
        '{"unterminated": \n'
        # Python logging's shape with numbers JSON has no word for (leading zeros, past a double)
        '{"message": "leading zero", "name": "vllm", "lineno": 00012}\n'
        '{"message": "huge", "name": "vllm", "created": 1e999}\n'
        '{"message": "a good record", "name": "vllm", "created": 1741000000.5}\n',
    )
    r = ingest(tmp_path)
    f = r.files[0]
    assert f.lines == 12 and f.parsed + f.folded + f.unparsed == 12
    assert r.events.filter(pl.col(s.LINE) == 12)[s.SOURCE].to_list() == ["vllm"]
    by_line = {row[s.LINE]: row for row in r.events.iter_rows(named=True)}
    assert by_line[1][s.MESSAGE] == "an epoch past any log" and by_line[1][s.TS] is None
    assert by_line[6][s.MESSAGE] == "a 23-digit journal time" and by_line[6][s.PID] == 4242
    assert by_line[7][s.MESSAGE] == "hi"  # journald's byte-array MESSAGE, invalid bytes dropped


def test_a_lone_surrogate_escape_in_json_is_a_replacement_character_not_a_failed_run(tmp_path):
    # `\ud83d` without its pair (an emoji's escape cut short) decodes to no UTF-8 text: a
    # column of strings with one could not be built and the whole run failed.
    write(
        tmp_path / "c-json.log",
        '{"log":"INFO 03-02 10:00:00 [x.py:1] ok\\n","stream":"stdout","time":"2025-03-02T10:00:00Z"}\n'
        '{"log":"INFO 03-02 10:00:01 [x.py:1] cut \\ud83d\\n","stream":"stdout","time":"2025-03-02T10:00:01Z"}\n'
        '{"msg":"pair \\ud83d\\ude00 and half \\udc00","level":"error","ts":1740909602}\n',
    )
    event = {
        "kind": "Event",
        "involvedObject": {"kind": "Pod", "name": "vllm-0", "namespace": "default"},
        "reason": "BackOff",
        "message": "Back-off \ud83d restarting",
        "type": "Warning",
        "count": 3,
        "lastTimestamp": "2025-03-02T10:00:03Z",
    }
    write(tmp_path / "events.json", json.dumps({"kind": "List", "items": [event]}))
    r = ingest(tmp_path)
    _balanced(r)
    assert sorted(r.events[s.MESSAGE].to_list()) == [
        "BackOff: Back-off \ufffd restarting",
        "cut \ufffd",
        "ok",
        "pair \U0001f600 and half \ufffd",
    ]


def test_json_nested_past_the_stack_is_a_line_of_junk_not_a_failed_run(tmp_path):
    # The standard library recurses a level a bracket and raised RecursionError, which no
    # reader of JSON caught: the whole run failed on one junk line.
    deep = "[" * 100_000 + "]" * 100_000
    write(tmp_path / "junk.log", deep + "\n")  # (the file's head: the document sniffers)
    write(
        tmp_path / "app.log",
        '{"msg":"engine ready","level":"info","ts":1740909600}\n'
        '{"msg":"deep","a":' + deep + "}\n"
        '{"msg":"engine dead","level":"error","ts":1740909602}\n'
        # (deep enough for the standard library's reader, not for the surrogate repair after it)
         + '{"a":' * 900 + '"cut \\ud83d"' + "}" * 900 + "\n",
    )
    r = ingest(tmp_path)
    _balanced(r)
    ev = r.events.sort(s.FILE, s.LINE)
    assert ev.select(s.FILE, s.LINE, s.SOURCE, s.LEVEL).rows() == [
        ("app.log", 1, "app", "INFO"),
        ("app.log", 2, "unknown", None),
        ("app.log", 3, "app", "ERROR"),
        ("app.log", 4, "unknown", None),
        ("junk.log", 1, "unknown", None),
    ]


def test_a_large_json_lines_log_is_read_a_segment_at_a_time_as_it_is_whole(tmp_path, monkeypatch):
    # An application's JSON records, one a line, begin with `{` as a JSON document does; such a
    # log was read whole (its text, its lines and a dict a record held at once), while a
    # document (pretty-printed, or one line) still is.
    from forensics.ingestion import files as _files

    monkeypatch.setattr(_files, "SEGMENT_CHARS", 4096)
    records = "".join(
        json.dumps({"level": "error" if i % 7 == 0 else "info", "ts": 1740909600 + i, "msg": f"step {i}"}) + "\n"
        for i in range(2000)
    )
    one_line = json.dumps({"kind": "List", "items": [{"message": f"line {i}"} for i in range(2000)]}) + "\n"
    pretty = json.dumps({"kind": "List", "items": [{"message": f"line {i}"} for i in range(2000)]}, indent=2)
    found = {}
    for name, text in (("app.log", records), ("one-line.json", one_line), ("pretty.json", pretty)):
        write(tmp_path / name, text)
        path = tmp_path / name
        found[name] = _files.stream_head(_files.InputFile(path, name, path.stat().st_size, 0.0)) is not None
    assert found == {"app.log": True, "one-line.json": False, "pretty.json": False}
    for name in ("one-line.json", "pretty.json"):
        (tmp_path / name).unlink()
    streamed = ingest(tmp_path)
    monkeypatch.setattr(_files, "stream_head", lambda f: None)
    whole = ingest(tmp_path)
    _balanced(streamed)
    assert streamed.events.height == 2000 and streamed.events[s.LEVEL].value_counts().height == 2
    assert streamed.events.equals(whole.events) and streamed.accounting() == whole.accounting()


def test_an_archive_larger_than_the_room_left_is_read_only_up_to_the_limit(tmp_path, monkeypatch):
    from forensics.ingestion import files as _files

    line = b"2025-03-02T08:06:40.000000000Z INFO 03-02 08:06:40 [core.py:1] Engine step ok\n"
    _tar_gz(tmp_path / "big.tar.gz", {"a.log": line * 10, "b.log": line * 1000})
    monkeypatch.setattr(_files, "ARCHIVE_MAX_BYTES", len(line) * 100)
    r = ingest(tmp_path)
    assert [f.file for f in r.files] == ["big.tar.gz/a.log"]
    assert any(k.file == "big.tar.gz" and "read up to there" in k.reason for k in r.skipped)


def test_kubectl_get_events_wide_gives_the_node_count_and_message_apart(tmp_path):
    write(
        tmp_path / "events-wide.txt",
        "LAST SEEN   TYPE      REASON      OBJECT                        SUBOBJECT                SOURCE                     MESSAGE                                        FIRST SEEN   COUNT   NAME\n"
        "2m          Warning   BackOff     pod/phi-3-6d8f7c5b9-w2e3r      spec.containers{vllm}    kubelet, h100-node-4       Back-off restarting failed container vllm      40m          17      phi-3-6d8f7c5b9-w2e3r.18a1b2c3d4e5f607\n"
        "9m          Normal    Scheduled   pod/phi-3-6d8f7c5b9-q9w8e                               default-scheduler          Successfully assigned llm/phi-3-6d8f7c5b9-q9w8e to h100-node-5   9m   1   phi-3-6d8f7c5b9-q9w8e.18a1b2c3d4e5f608\n",
    )
    r = ingest(tmp_path)
    assert r.unparsed == 0
    ev = r.events.filter(pl.col(s.SOURCE) == "k8s-event").sort(s.LINE)
    assert ev.select(s.K8S_REASON, s.HOST, s.POD, s.COMPONENT, s.K8S_COUNT, s.MESSAGE).rows() == [
        (
            "BackOff",
            "h100-node-4",
            "phi-3-6d8f7c5b9-w2e3r",
            "kubelet",
            17,
            "BackOff: Back-off restarting failed container vllm",
        ),
        (
            "Scheduled",
            None,
            "phi-3-6d8f7c5b9-q9w8e",
            "default-scheduler",
            1,
            "Scheduled: Successfully assigned llm/phi-3-6d8f7c5b9-q9w8e to h100-node-5",
        ),
    ]


EVENT_LISTINGS = {
    "events.json": json.dumps(
        {
            "kind": "List",
            "items": [
                {
                    "kind": "Event",
                    "type": t,
                    "reason": reason,
                    "message": message,
                    "lastTimestamp": "2025-06-01T10:00:00Z",
                    "involvedObject": {"kind": kind, "name": name, "namespace": "serving"},
                    "metadata": {"name": f"{name}.{reason}", "namespace": "serving"},
                }
                for t, reason, kind, name, message in [
                    ("Normal", "ScalingReplicaSet", "Deployment", "llama", "Scaled up replica set llama-7d9f to 1"),
                    ("Normal", "Killing", "Pod", "llama-0", "Container vllm failed startup probe, will be restarted"),
                ]
            ],
        }
    ),
    "events.txt": (
        "LAST SEEN   TYPE      REASON              OBJECT                  MESSAGE\n"
        "2m          Normal    ScalingReplicaSet   deployment/llama        Scaled up replica set llama-7d9f to 1\n"
        "1m          Normal    Killing             pod/llama-0             Container vllm failed startup probe, will be restarted\n"
    ),
    "kubectl-events.txt": (  # (`kubectl events`, kubectl >= 1.26: the object's kind as the API spells it)
        "LAST SEEN   TYPE      REASON              OBJECT                  MESSAGE\n"
        "2m          Normal    ScalingReplicaSet   Deployment/llama        Scaled up replica set llama-7d9f to 1\n"
        "1m          Normal    Killing             Pod/llama-0             Container vllm failed startup probe, will be restarted\n"
    ),
    "describe.txt": (
        "Name:         llama-0\n"
        "Namespace:    serving\n"
        "Events:\n"
        "  Type     Reason             Age   From                   Message\n"
        "  ----     ------             ----  ----                   -------\n"
        "  Normal   ScalingReplicaSet  2m    deployment-controller  Scaled up replica set llama-7d9f to 1\n"
        "  Normal   Killing            1m    kubelet                Container vllm failed startup probe, will be restarted\n"
    ),
}


@pytest.mark.parametrize("listing", sorted(EVENT_LISTINGS))
def test_an_event_reads_the_same_from_every_listing_so_the_catalog_knows_it(tmp_path, listing):
    # The catalog knows a rollout by `ScalingReplicaSet:` and a probe's kill by `Killing: Container
    # x failed`: a `kubectl get events` table or a `describe` section must say them as `-o json` does.
    from forensics.diagnosis import signatures

    write(tmp_path / listing, EVENT_LISTINGS[listing])
    ev = ingest(tmp_path).events.filter(pl.col(s.SOURCE) == "k8s-event").sort(s.LINE)
    assert ev[s.MESSAGE].to_list() == [
        "ScalingReplicaSet: Scaled up replica set llama-7d9f to 1",
        "Killing: Container vllm failed startup probe, will be restarted",
    ]
    kinds = signatures.classify(ev).select("category", "kind").rows()
    assert kinds == [("config-change", "change"), ("pod-lifecycle", "symptom")]


def test_an_encrypted_zip_and_a_tarball_corrupt_in_the_middle_are_reported_not_dropped(tmp_path):
    import zipfile

    with zipfile.ZipFile(tmp_path / "locked.zip", "w") as z:
        z.writestr("pod.log", "INFO 03-02 10:00:00 [x.py:1] fine\n")
    data = (tmp_path / "locked.zip").read_bytes()
    # Mark the member encrypted (general-purpose flag bit 0) in the local and central headers.
    data = data.replace(b"PK\x03\x04\x14\x00\x00\x00", b"PK\x03\x04\x14\x00\x01\x00", 1)
    data = data.replace(b"PK\x01\x02\x14\x03\x14\x00\x00\x00", b"PK\x01\x02\x14\x03\x14\x00\x01\x00", 1)
    (tmp_path / "locked.zip").write_bytes(data)
    line = b"2025-03-02T08:06:40.000000000Z INFO 03-02 08:06:40 [core.py:1] Engine step ok\n"
    _tar_gz(tmp_path / "bundle.tar.gz", {"first.log": line * 20000, "second.log": line * 20000})
    packed = bytearray((tmp_path / "bundle.tar.gz").read_bytes())
    for i in range(len(packed) // 2, len(packed) // 2 + 64):
        packed[i] ^= 0x55
    (tmp_path / "bundle.tar.gz").write_bytes(bytes(packed))
    r = ingest(tmp_path)
    reasons = {k.file: k.reason for k in r.skipped}
    assert "encrypted" in reasons["locked.zip"]
    assert reasons["bundle.tar.gz"].startswith("damaged tar.gz archive")


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
    _balanced(r)
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
    _balanced(r)
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
    _balanced(r)
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
    _balanced(r)
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
    _balanced(r)
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
    _balanced(r)
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
    _balanced(r)
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
    _balanced(r)
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
    _balanced(r)
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
    _balanced(r)
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
    _balanced(r)
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
    _balanced(r)
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
    ev = _events_of(tmp_path / "vllm.log", lines)
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
    _balanced(r)
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
    _balanced(r)
    assert r.unparsed == 0
    ev = r.events.sort(s.LINE)
    assert ev.select(s.SOURCE, s.HTTP_METHOD, s.HTTP_PATH, s.HTTP_STATUS, s.TS).rows() == [
        ("envoy", "POST", "/v1/completions", 503, datetime(2025, 8, 1, 10, 0, 5, 123000, tzinfo=UTC)),
        ("envoy", "POST", "/api/v1/locations", 204, datetime(2016, 4, 15, 20, 17, 0, 310000, tzinfo=UTC)),
        ("envoy", "POST", "/v1/completions", 503, datetime(2025, 8, 1, 10, 15, 0, 123000, tzinfo=UTC)),
    ]
    assert ev[s.MESSAGE][0].startswith('"POST /v1/completions HTTP/1.1" 503 UH no_healthy_upstream')
    assert ev[s.MESSAGE][2].startswith('"POST /v1/completions HTTP/1.1" 503 UH no_healthy_upstream')


DESCRIBE_SHUT_DOWN = """Name:             llama-0
Namespace:        serving
Node:             gke-spot-pool-3/10.128.0.9
Status:           Failed
Reason:           Terminated
Message:          Pod was terminated in response to imminent node shutdown.
Containers:
  vllm:
    State:          Terminated
      Reason:       Error
      Exit Code:    143
      Started:      Tue, 03 Jun 2025 09:00:05 +0000
      Finished:     Tue, 03 Jun 2025 11:47:30 +0000
Name:             llama-1
Namespace:        serving
Node:             gke-gpu-pool-1/10.128.0.4
Status:           Running
Containers:
  vllm:
    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
      Started:      Tue, 03 Jun 2025 09:00:05 +0000
      Finished:     Tue, 03 Jun 2025 10:12:00 +0000
"""


def test_a_described_pods_own_message_says_why_its_container_stopped(tmp_path):
    # The pod-level `Message:` (a node shutdown, an eviction) is why the container got its
    # SIGTERM: the container's state, timed and on its node, says it. Never another pod's.
    write(tmp_path / "describe.txt", DESCRIBE_SHUT_DOWN)
    ev = ingest(tmp_path).events.filter(pl.col(s.K8S_REASON).is_not_null()).sort(s.LINE)
    firsts = [m.split("\n")[0] for m in ev[s.MESSAGE]]
    assert list(zip(ev[s.HOST], ev[s.POD], firsts, strict=True)) == [
        (
            "gke-spot-pool-3",
            "llama-0",
            "State: Terminated (Error, exit code 143 SIGTERM) container vllm; the pod: Pod was terminated in "
            "response to imminent node shutdown.",
        ),
        ("gke-gpu-pool-1", "llama-1", "Last State: Terminated (OOMKilled, exit code 137 SIGKILL) container vllm"),
    ]


def test_a_describe_events_section_names_its_blocks_pod_and_node(tmp_path):
    # The Events rows of `kubectl describe pod` belong to the pod (on its `Node:`), those of
    # `describe node` to the node; an Events section pasted alone names nothing.
    write(
        tmp_path / "describe.txt",
        "Name:             llama-0\n"
        "Namespace:        serving\n"
        "Node:             gpu-node-3/10.0.0.3\n"
        "Events:\n"
        "  Type     Reason     Age   From     Message\n"
        "  ----     ------     ----  ----     -------\n"
        '  Warning  Unhealthy  2m    kubelet  Readiness probe failed: Get "http://10.4.2.17:8000/health": EOF\n'
        "Name:             llama-9\n"
        "Namespace:        serving\n"
        "Node:             <none>\n"
        "Events:\n"
        "  Type     Reason            Age   From               Message\n"
        "  ----     ------            ----  ----               -------\n"
        "  Warning  FailedScheduling  2m    default-scheduler  0/4 nodes are available: 4 Insufficient nvidia.com/gpu.\n"
        "Name:               gpu-node-4\n"
        "Roles:              <none>\n"
        "Events:\n"
        "  Type     Reason        Age   From     Message\n"
        "  ----     ------        ----  ----     -------\n"
        "  Warning  NodeNotReady  1m    kubelet  Node gpu-node-4 status is now: NodeNotReady\n",
    )
    write(
        tmp_path / "events-only.txt",
        "Events:\n"
        "  Type     Reason   Age   From     Message\n"
        "  ----     ------   ----  ----     -------\n"
        "  Warning  BackOff  1m    kubelet  Back-off restarting failed container vllm\n",
    )
    ev = ingest(tmp_path).events.filter(pl.col(s.SOURCE) == "k8s-event").sort(s.FILE, s.LINE)
    assert ev.select(s.FILE, s.K8S_REASON, s.POD, s.HOST, s.K8S_OBJECT).rows() == [
        ("describe.txt", "Unhealthy", "llama-0", "gpu-node-3", "pod/llama-0"),
        ("describe.txt", "FailedScheduling", "llama-9", None, "pod/llama-9"),  # (pending: `Node: <none>`)
        ("describe.txt", "NodeNotReady", None, "gpu-node-4", "node/gpu-node-4"),
        ("events-only.txt", "BackOff", None, None, None),
    ]
