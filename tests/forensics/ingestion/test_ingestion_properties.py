"""Property tests: no input makes ingest raise, and the line accounting always balances."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from forensics import ingest
from forensics import schema as s
from parsers import continuation, k8s, nccl, pylog, torch, trtllm, ucx, vllm, wrappers
from parsers._common import extract_head
from parsers.jsonutil import load_json
from parsers.lines import parse_lines

pytestmark = pytest.mark.usefixtures("as_a_large_run")  # (random inputs through the compiled passes too)

VALID_LINES = [
    "2025-03-02T08:00:00.100000000Z (APIServer pid=66) INFO 03-02 08:00:00 [loggers.py:123] Engine 000: Avg prompt "
    "throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache "
    "usage: 1.0%, Prefix cache hit rate: 0.0%",
    '(APIServer pid=66) INFO:     10.0.3.7:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    "(EngineCore_DP0 pid=120) ERROR 03-02 08:00:11 [core.py:720] Traceback (most recent call last):",
    '(EngineCore_DP0 pid=120) ERROR 03-02 08:00:11 [core.py:720]   File "x.py", line 1, in f',
    "vllm-1:2343:2381 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.4.13<44413> with "
    "status=12 opcode=0 len=0 vendor err 129 (Send)",
    "vllm-1:2343:2381 [0] NCCL INFO transport/net.cc:1302 -> 6",
    "",
    "[rank1]:[E302 08:10:12.267261276 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=5730, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600009 milliseconds "
    "before timing out.",
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f in libc10.so)",
    'Mar 02 08:00:20 gpu-node-3 kubelet[1450]: I0302 08:00:20.934473    1450 kubelet.go:2455] "SyncLoop"',
    "[2025-03-02 08:00:10,912] LMCache ERROR: Cache corruption detected in block 88123 (storage.py:412:lmcache.x)",
    "2016-10-06T00:17:09.669794202Z stdout P partial start ",
    "2016-10-06T00:17:09.669794203Z stdout F and its end",
    "  Warning  Unhealthy  2m (x12 over 3m)   kubelet  Liveness probe failed: connection refused",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "\x1b[1;36m(Worker_TP1 pid=7)\x1b[0;0m WARNING 03-02 08:00:01 [shm_broadcast.py:466] No available shared memory "
    "broadcast block found in 60 seconds.",
    "random words that match nothing",
    "   indented continuation",
    "Not all ranks joining collective 5 at entry 4",
    "missing ranks: {1}",
    "(VLLM) ERROR 03-02 08:00:11 [core.py:720] Traceback (most recent call last):",
    "#0-0 (9a3c5e1f00d2b417) MISMATCH",
    "  Rank 12 has launched up to operation 4181 -- GPU 4 managed by process 41376 on node gpu-node-3",
    "[1772618403.123456] [vllm-decode-0:41   :1]   ib_mlx5_log.c:171  UCX  ERROR   Transport retry count exceeded",
    "[cn0001:3639441:0:3639441] ib_mlx5_log.c:171  Transport retry count exceeded on mlx5_0:1/IB",
    '{"level":"error","ts":1754042401.5,"caller":"handlers/server.go:88","msg":"x","error":"no pods"}',
    'time="2025-08-01T10:00:04.25+02:00" level=error msg="Failed to watch metrics" error="x \\"q\\" y"',
    '[2025-08-01T10:00:05.123Z] "POST /v1/completions HTTP/1.1" 503 UH no_healthy_upstream - "-" 310 19 0 -',
    '10.0.0.7 - - [07/Mar/2024:11:00:07 +0100] "POST /v1/chat/completions HTTP/1.1" 503 190 "-" "httpx" 812 0.000',
    "2024/03/07 10:00:06 [error] 31#31: *1234 no live upstreams while connecting to upstream, client: 10.0.0.7",
    '{"textPayload":"ERROR 03-09 09:00:01 [core.py:720] x","resource":{"labels":{"pod_name":"q-0"}},'
    '"timestamp":"2025-03-09T09:00:01Z","severity":"ERROR"}',
    "(VllmWorker rank=0 pid=120) Loading safetensors checkpoint shards:  45% Completed | 49/109 [16:20<20:00, 2.0s/it]",
    "Capturing CUDA graph shapes:  50%|#####     | 1/2\rCapturing CUDA graph shapes: 100%|##########| 2/2",
    '{"jsonPayload":{"reason":"Killing","message":"Stopping container vllm","involvedObject":{"kind":"Pod",'
    '"name":"q-0"},"source":{"host":"gke-n-1"}},"resource":{"labels":{}},"timestamp":"2025-03-09T09:00:02Z"}',
    "2025-03-02T10:00:02.123456Z  WARN request{id=7}:handle: dynamo_llm::kv_router: no workers",
    '2025-03-02T10:00:03.123Z\tERROR\tcontroller/pool.go:88\tReconciler error\t{"pool": "vllm"}',
    "1.7409096e+09\tINFO\tsetup\tstarting manager",
    "[2025-03-02T10:00:06Z ERROR vllm_router::router] upstream returned 503",
    "2025/03/02 10:00:05 main.go:40: Loading NVML",
    "ERROR:vllm.engine.async_llm_engine:Engine background task failed",
    "(raylet) [2025-03-02 10:00:03,000 E 123 456] (raylet) node_manager.cc:3021: 1 Workers (tasks / actors) killed "
    "due to memory pressure (OOM)",
    "(pid=4711, ip=10.0.0.2) INFO 03-02 08:00:01 [worker.py:1] behind a pid-only prefix",
    "2025-03-02 10:00:01,123\tINFO worker.py:1234 -- Connected to Ray cluster.",
    "> ERROR 03-02 08:00:11 [core.py:720] quoted in a reply",
    ">     raise RuntimeError('x')",
    "   INFO 03-02 08:00:12 [engine.py:1] indented under a list item",
    ">>> import vllm",
    "```text",
    "```",
    "<details>",
    "<summary>Full log</summary>",
    "[2025-03-01 06:21:44 TP0] Decode batch. #running-req: 8, #token: 48211, token usage: 0.12, gen throughput "
    "(token/s): 171.25, #queue-req: 0",
    "[2026-01-14 11:40:12 DP1 TP0] Prefill batch, #new-seq: 1, #new-token: 377, #cached-token: 0, token usage: 0.08, "
    "#running-req: 31, #queue-req: 0, cuda graph: True, input throughput (token/s): 1288.40",
    '[2026-01-14 11:40:11] INFO:     127.0.0.1:38411 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    "[05:12:07 TP1] Scheduler hit an exception: Traceback (most recent call last):",
    '(EngineCore_DP0 pid=114) {"asctime": "03-02 08:06:39", "levelname": "ERROR", "name": "vllm.v1.engine.core", '
    '"message": "EngineCore encountered a fatal error.", "process": 114, "vllm_process_name": "EngineCore_DP0"}',
    "INFO 2024-11-21 09:14:27,318 default_A k2m9q4tz 5b0e7c21-3d4f-4a1b-9c2e-7f6a8d9e0b13 -- POST /v1/x 200 4.1ms",
    "WARNING 2023-03-11 16:22:40,715 controller 812 deployment_state.py:1498 - Replica D#Kq3VzN failed health check",
    "(ServeReplica:default:VLLMDeployment pid=1234) ERROR 03-02 08:00:11 [core.py:720] Traceback (most recent call last):",
    '{"asctime": "2025-03-02 08:06:39,120", "levelname": "INFO", "name": "uvicorn.access", "message": '
    '"10.0.0.7:51234 - \\"POST /v1/chat/completions HTTP/1.1\\" 200"}',
    "[11/02/2025-14:06:30] [TRT-LLM] [RANK 1] [E] Error in event loop: CUDA error: an illegal memory access",
    "[TensorRT-LLM][ERROR][3] Assertion failed: free blocks left (/src/kvCacheManager.cpp:512)",
    "[TensorRT-LLM] TensorRT-LLM version: 0.17.0",
    "2       0x7f3a74a01c2e /usr/lib/libtensorrt_llm.so(+0xa01c2e) [0x7f3a74a01c2e]",
    "[vllm-decode-0:41:0:57] Caught signal 11 (Segmentation fault: address not mapped to object at address (nil))",
    "==== backtrace (tid:     57) ====",
]


def _lines_frame(lines: list[str]) -> pl.DataFrame:
    n = len(lines)
    return pl.DataFrame(
        {
            "_fid": pl.Series([0] * n, dtype=pl.UInt32),
            "_seg": pl.Series([0] * n, dtype=pl.UInt32),
            s.LINE: pl.Series(range(1, n + 1), dtype=pl.Int64),
            "body": pl.Series(lines, dtype=pl.String),
            "_extra": pl.Series([False] * n, dtype=pl.Boolean),
        }
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(VALID_LINES), min_size=1, max_size=40))
def test_any_interleaving_of_valid_lines_parses_and_every_line_lands_in_an_event(lines):
    ev = parse_lines(_lines_frame(lines))
    kept = ev.filter(~pl.col("_drop"))
    # Each physical line is the head of one event or folded into one (CRI P+F pieces count twice).
    assert int(ev["_nfold"].sum()) + kept.height == len(lines)
    assert kept[s.SOURCE].null_count() == 0


def _ingest_beside_a_good_log(name: str, data: str | bytes):
    """Ingest `data` as file `name` in a directory that also holds one valid log line."""
    with tempfile.TemporaryDirectory() as d:
        if isinstance(data, bytes):
            Path(d, name).write_bytes(data)
        else:
            Path(d, name).write_text(data)
        Path(d, "ok.log").write_text("INFO 03-02 10:00:00 [x.py:1] fine\n")
        return ingest(Path(d), year=2025)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(min_size=0, max_size=3000))
def test_random_bytes_never_raise_and_accounting_balances(data):
    r = _ingest_beside_a_good_log("junk.log", data)
    for f in r.files:
        assert f.lines == f.parsed + f.folded + f.unparsed
    assert r.parsed >= 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(VALID_LINES), st.text(max_size=80)), min_size=1, max_size=30))
def test_valid_lines_mixed_with_random_text_keep_accounting_balanced(lines):
    text = "\n".join(line.replace("\n", " ").replace("\r", " ") for line in lines) + "\n"
    r = _ingest_beside_a_good_log("mixed.log", text)
    if any(k.file == "mixed.log" for k in r.skipped):
        return  # set aside with a reason (binary-looking junk): also a valid outcome
    f = next(f for f in r.files if f.file == "mixed.log")
    assert f.lines == len(text.split("\n")) - 1
    assert f.lines == f.parsed + f.folded + f.unparsed


_JSON_KEYS = st.sampled_from(
    [
        "log",
        "message",
        "msg",
        "time",
        "date",
        "@timestamp",
        "stream",
        "kubernetes",
        "pod_name",
        "pod",
        "name",
        "namespace",
        "host",
        "__REALTIME_TIMESTAMP",
        "MESSAGE",
        "_PID",
        "_HOSTNAME",
        "SYSLOG_IDENTIFIER",
        # (python-json-logger's, vLLM's JSON formatter's)
        "levelname",
        "asctime",
        "created",
        "process",
        "processName",
        "vllm_process_name",
        "filename",
    ]
)
_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**25), max_value=10**25)
    | st.floats(allow_nan=True, allow_infinity=False)
    | st.text(max_size=30)
    | st.sampled_from(
        ["vllm.v1.engine.core", "uvicorn.access", "lmcache.v1", "12-31 23:59:30", "2025-02-29 08:07:00,123", "ERROR"]
    ),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_JSON_KEYS, inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.dictionaries(_JSON_KEYS, _JSON_VALUES, min_size=1, max_size=6), min_size=1, max_size=12))
def test_arbitrary_json_records_never_raise_and_accounting_balances(records):
    # What a log shipper or journalctl -o json could hand us, including values of the wrong type.
    import json

    text = "".join(json.dumps(r) + "\n" for r in records)
    r = _ingest_beside_a_good_log("export.jsonl", text)
    for f in r.files:
        assert f.lines == f.parsed + f.folded + f.unparsed


KV_MESSAGE = st.lists(
    st.sampled_from(list("ab Zé汉.:()-_/ \t") + ["py", " (", ".py:", "(x.py:1)", " (s.py:88:lmcache.x)"]), max_size=12
).map("".join)
"""Messages built from the pieces that decide where LMCache's message ends: spaces, parens, file tails."""


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["DEBUG", "INFO", "WARN", "WARNING", "ERROR", "CRITICAL"]), KV_MESSAGE),
        min_size=1,
        max_size=10,
    )
)
def test_positional_lmcache_parse_gives_what_the_full_regex_gives(entries):
    lines = [f"[2025-05-04 05:25:03,{i % 1000:03d}] LMCache {level}: {msg}" for i, (level, msg) in enumerate(entries)]
    frame = pl.DataFrame({"body": pl.Series(lines, dtype=pl.String)})
    fast, full = pylog._parse_kv_fast(frame), pylog._parse_regex(frame)
    assert frame.select(pl.col("body").str.contains(pylog.FAST_KV)).to_series().all()
    assert fast.select(sorted(full.columns)).equals(full.select(sorted(full.columns)))


def _fold_by_windows(df: pl.DataFrame) -> tuple[list, list]:
    """The folding rules as polars window expressions (the implementation before the compiled
    scan): the oracle `folding.fold_and_event` must agree with on any frame."""
    kind, msg_cont = pl.col("_kind"), pl.col("_msgcont")
    pre = pl.col("_prefixed")
    same_file = ((pl.col("_fid") == pl.col("_fid").shift(1)) & (pl.col("_seg") == pl.col("_seg").shift(1))).fill_null(
        False
    )

    def prev(c: str) -> pl.Expr:
        return pl.when(pre).then(pl.col(c).shift(1).over("_sid")).otherwise(pl.when(same_file).then(pl.col(c).shift(1)))

    def ffill_prev(e: pl.Expr) -> pl.Expr:
        return (
            pl.when(pre)
            .then(e.shift(1).forward_fill().over("_sid"))
            .otherwise(e.shift(1).forward_fill().over(["_fid", "_seg"]))
        )

    silent = kind.is_in(["other", "blank", "k8s_header"])
    open_ff = ffill_prev(pl.when(~silent).then(pl.col("_open"))).fill_null(False)
    has_prev = pl.when(pre).then(pl.col("_row").cum_count().over("_sid") > 1).otherwise(same_file)
    same_hdr = kind.is_in(["vllm", "vllm_custom"]) & pl.col("_hdr").is_not_null() & (pl.col("_hdr") == prev("_hdr"))
    fold = (
        kind.is_in(["blank", "k8s_header"])
        | ((kind == "cont") & has_prev)
        | (kind.is_in(["exc", "other"]) & open_ff)
        | (same_hdr & (prev("_cr").fill_null(False) | msg_cont | prev("_open").fill_null(False)))
    ).fill_null(False)
    df = df.with_columns(fold.alias("_fold"))
    row = pl.col("_row").cast(pl.Int64)
    head = pl.when(~pl.col("_fold")).then(row)
    target = pl.when(pre).then(head.forward_fill().over("_sid")).otherwise(head.forward_fill().over(["_fid", "_seg"]))
    orphan = -1 - pl.when(pre).then(row.min().over("_sid")).otherwise(row.min().over(["_fid", "_seg"]))
    out = df.select("_fold", pl.coalesce(target, orphan).alias("_ev"))
    return out["_fold"].to_list(), out["_ev"].to_list()


FOLD_ROW = st.tuples(
    st.sampled_from(["other", "cont", "blank", "k8s_header", "exc", "vllm", "vllm_custom", "nccl"]),
    st.sampled_from([None, "APIServer", "EngineCore_DP0"]),  # process prefix (None: un-prefixed)
    st.sampled_from([None, True, False]),  # _open
    st.booleans(),  # _cr
    st.sampled_from([None, "", "INFO 03 02 08 00 00 core.py 1", "ERROR 03 02 08 00 00 core.py 1", "héader 1"]),
    st.booleans(),  # _msgcont
    st.integers(0, 2),  # file
)


@settings(max_examples=300, deadline=None)
@given(st.lists(FOLD_ROW, min_size=1, max_size=60))
def test_compiled_fold_scan_agrees_with_the_window_expressions(rows):
    from parsers._compiled import folding

    rows = sorted(rows, key=lambda r: r[6])  # a batch holds each file's lines together, in order
    kinds, procs, opens, crs, hdrs, conts, fids = zip(*rows, strict=True)
    df = pl.DataFrame(
        {
            "_row": pl.Series(range(len(rows)), dtype=pl.UInt32),
            "_fid": pl.Series(fids, dtype=pl.UInt32),
            "_seg": pl.Series([0] * len(rows), dtype=pl.UInt32),
            "_kind": list(kinds),
            s.PROCESS: pl.Series(procs, dtype=pl.String),
            "_open": pl.Series(opens, dtype=pl.Boolean),
            "_cr": list(crs),
            "_hdr": pl.Series(hdrs, dtype=pl.String),
            "_msgcont": list(conts),
        }
    ).with_columns(
        pl.col(s.PROCESS).is_not_null().alias("_prefixed"),
        pl.struct("_fid", "_seg", s.PROCESS).hash(seed=7).alias("_sid"),
        folding.kind_code(pl.col("_kind")).alias("_kcode"),
    )
    fold, ev = folding.fold_and_event(df)
    assert (fold.tolist(), ev.tolist()) == _fold_by_windows(df)


FAST_STAMPS = [
    "",
    "2025-03-02T08:00:00.100000000Z ",
    "2025-03-02T08:00:00+08:00 ",
    "2025-03-02T08:00:00.5-05:30 ",
    "2025-03-02T08:00:00+0800 ",  # journald short-iso: the general path's
    "2025-03-02T08:00:00.250000+00:00 ",  # systemd 255's short-iso-precise, when a journal entry follows
    "2025-02-30T08:00:00Z ",  # no such day: no time
    "2024-06-30T23:59:60.25Z ",  # leap second
    "2025-03-02T08:00:00.1Z stdout F ",  # CRI: a whole line
    "2025-03-02T08:00:00.2Z stdout P ",  # CRI: a piece, joined with the lines of its stream up to an F
    "2025-03-02T08:00:00.3Z stderr F ",
    "2025-03-02T08:00:00.4Z stderr P ",
    "2025-03-02T08:00:00.5Z stdout F:opt ",
    "2025-03-02T08:00:00+0800 stdout P ",
    "2025-03-02T08:00:00Z  ",
]
FAST_PREFIXES = [
    "",
    "(APIServer pid=66) ",
    "(VllmWorker rank=0 pid=265) ",
    "(RayWorkerWrapper pid=31, ip=10.0.0.2) ",
    "(EngineCore_DP0 pid=120)",
    "(Wörker pid=1) ",
    "(APIServer pid=) ",
    " (APIServer pid=66) ",
    # nested: a forked worker's own prefix after its parent's (the innermost names the line's process)
    "(EngineCore_DP0 pid=120) (Worker_TP1 pid=121) ",
    "(EngineCore pid=676) (RayWorkerProc pid=918) (Worker_TP0 pid=918) ",
    "(A pid=1) (B pid=2) (C pid=3) (D pid=4) (E pid=5) ",
    "(EngineCore_DP0 pid=120)(Worker_TP1 pid=121)",
    "(EngineCore_DP0 pid=120)  (Worker_TP1 pid=121) ",
    "(APIServer pid=1) (not a prefix) ",
    # Ray Serve's replicas: the application and deployment after colons
    "(ServeReplica:default:VLLMDeployment pid=1234) ",
    "(ServeReplica:llm-app:LLMServer:meta-llama--Llama-3.1-8B pid=77, ip=10.0.0.9) ",
    "(ServeReplica:default:A pid=1) (_RayWorkerWrapper pid=2) ",
    "(Serve:: pid=3) ",
]
FAST_BODIES = [
    "INFO 03-02 08:00:00 [logger.py:41] Received request chatcmpl-6f1c: params: SamplingParams(n=1).",
    "INFO 03-02 08:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s, Running: 1 reqs",
    "WARNING 03-02 08:00:00 shm_broadcast.py:466] No available shared memory broadcast block found in 60 seconds.",
    "DEBUG 03-02 08:00:00 [v1/metrics/loggers.py:271] step done",
    "ERROR 03-02 08:00:00 [core.py:720] EngineCore encountered a fatal error:",
    # the same header's later lines of one record (`continuation.MESSAGE`), their `\r` lost
    "ERROR 03-02 08:00:00 [core.py:720] ",
    "ERROR 03-02 08:00:00 [core.py:720] For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "ERROR 03-02 08:00:00 [core.py:720] frame #12: <unknown function> + 0x94ac3 (0x7f in libc.so.6)",
    "ERROR 03-02 08:00:00 [core.py:720] frame #x: not a frame",
    "ERROR 03-02 08:00:00 [core.py:720] Process SpawnProcess-1:",
    "ERROR 03-02 08:00:00 [core.py:720] Thread 0x00007f3a1bfff640 (most recent call first):",
    "INFO 03-02 08:00:00 [api_server.py:1]",
    "INFO 03-02 08:00:00 [módulo.py:3] non-ASCII file",
    "INFO 03-02 08:00:00 [a.py:1] doneINFO 03-02 08:00:01 [b.py:2] glued on",
    "INFO 03-02 08:00:00 [a.py:1] two records\rINFO 03-02 08:00:00 [a.py:1] tqdm redraw",
    "INFO 03-02 08:00:00 [a.py:1] \x1b[1;36mcoloured\x1b[0m",
    "INFO 03-02 08:00:00 [a.py:1] residue [0;36m here",
    "INFO 03-02 08:00:00 [a.py:1] hello [repeated 3x across cluster]",
    "INFO 03-02 08:00:00 [a.py:1] ends in a caret-M^M",
    "INFO 03-02 08:00:00 [a.py:1] Добрый день … ✓",
    'INFO:     10.0.3.7:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    'INFO:     10.0.3.7:51234 - "GET /v1/models/модель HTTP/1.1" 404 Not Found',
    "WARNING:  Invalid HTTP request received.",
    "INFO 03-02 08:00:00 [logger.py:41] Received request :no-id",
    "INFO 03-02 08:00:00 [logger.py:41] Aborted request cmpl-9f..",
    "INFO 03-02 08:00:00 [logger.py:41] Finished request ...",
    "INFO 03-02 08:00:00 [logger.py:41] Added request  two-spaces",
    "INFO 03-02 08:00:00 [logger.py:41] Received request idé-1: params",
    "INFO 03-02 08:00:00 [logger.py:41] Received request",
    'INFO:     - "GET / HTTP/1.1" 200 OK',
    'INFO:      - "POST /v1/completions HTTP/1.1" 500 Internal Server Error',
    'INFO:     - - "GET / HTTP/1.1" 200 OK',
    'INFO:     -- "GET / HTTP/1.1" 200 OK',
    'INFO:     1.2.3.4:5 - "get / HTTP/1.1" 200 OK',
    'INFO:     1.2.3.4:5 - "GET /x HTTP/2" 20',
    'INFO:     1.2.3.4:5 - "GET /x HTTP/1.1" ٢٠٠ OK',
    'INFO:     1.2.3.4:5 - "GET /x HTTP/1.1" 200OK',
    "ERROR:    Exception in ASGI application",
    "TRACE:    ASGI [4] Started",
    "INFO:root:plain logging",
    '  File "/usr/lib/python3.12/x.py", line 1, in f',
    "RuntimeError: Cache corruption detected in block 88123",
    'node-7 kubelet[2211]: E0309 09:00:01.250000    2211 kubelet.go:2412] "PLEG is not healthy"',
    "node-7 kernel: NVRM: Xid (PCI:0000:c1:00): 79, GPU has fallen off the bus.",
    "Engine core: not a journal entry",
    "vllm-1:2343:2381 [0] NCCL INFO Channel 00/32 : 0[0] -> 1[1] via P2P/IPC",
    "vllm-1:2343:2381 [0] NCCL INFO transport/net.cc:1302 -> 6 [Proxy Thread]",
    "vllm-1:2343:2381 [0] NCCL INFO net.cc:١٢ -> 6",
    "vllm-1:2343:2381 [0] NCCL INFO net.cc:12 -> ٦",
    "vllm-1:2343:2381 [0] NCCL INFO nét.cc:12 -> 6",
    "vllm-1:2343:2381 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>",
    "vllm-1:2343:2381 [0] NCCL INFO ncclCommInitRank comm 0x5f rank 1 nranks 8 - Init COMPLETE",
    "vllm-1:2343:2381 [99999999999] NCCL INFO huge device",
    "vllm-1:2343:2381 [0] NCCL INFO",
    "vllm-1:2343:2381 [0] NCCL INFO ends with a colon:",
    "vllm-1:2343:2381 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion with error 12",
    "1host:2343:2381 [0] NCCL INFO digit-led host",
    "pod@x:2343:2381 [0] NCCL INFO odd host",
    "INFO:2343:2381 [0] NCCL INFO host named like a level",
    "[rank1]:[E302 08:10:12.267261276 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout",
    "",
]


def _assert_fast_lane_gives_the_general_events(lines: list[str]) -> None:
    """`parse_lines` with the fast lane gives exactly the frame it gives without it."""
    import parsers.lines as lines_mod

    frame = _lines_frame(lines)
    fast = lines_mod.parse_lines(frame)
    taken = lines_mod.fastlane.split
    try:
        lines_mod.fastlane.split = lambda df, *_: (df.clear(), df)
        general = lines_mod.parse_lines(frame)
    finally:
        lines_mod.fastlane.split = taken
    cols = sorted(general.columns)
    assert sorted(fast.columns) == cols
    assert fast.select(cols).equals(general.select(cols))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.sampled_from(FAST_STAMPS), st.sampled_from(FAST_PREFIXES), st.sampled_from(FAST_BODIES)),
        min_size=1,
        max_size=30,
    )
)
def test_fast_lane_gives_the_events_the_general_path_gives(parts):
    _assert_fast_lane_gives_the_general_events(["".join(p) for p in parts])


SYSLOG_KLOG_LINES = [
    "Mar 13 16:02:43 vk-prod4-node kubelet[1450]: I0313 16:02:43.934473    1450 kubelet.go:1778] skipping pod sync",
    "Mar  2 07:00:00 gpu-node-0 kubelet[1450]: W0302 07:00:00.973429 1450 pod_workers.go:12] ends with a colon:",
    "Dec 31 23:59:59.123456 node-1 kubelet: E1231 23:59:59.999999    77 kuberuntime_manager.go:9] no syslog pid",
    "Jan  1 00:00:00 node-1 containerd[9]: I0101 00:00:00.000001 12 server.cc:1] a C++ file",
    "Jan  1 00:00:00 node-1 containerd[9]: I0101 00:00:00.000001 12 server.go:1] neither kubelet nor C++",
    "Feb 29 12:00:00 node-1 kubelet[1]:I0229 12:00:00.000000 1 kubelet.go:1] no space after the colon",
    "Mar 02 07:00:00 node-1 kubelet[1]:  I0302 07:00:00.000000 1 kubelet.go:1] two spaces after it",
    "Mar 02 07:00:00 nöde kubelet[1]: I0302 07:00:00.000000 1 kubelet.go:1] non-ASCII host",
    "Mar 02 07:00:00 node_1.x kubelet[1]: I0302 07:00:00.000000 1 kubelet.go:1]",
    "Mar 02 07:00:00 node-1 kubelet[1]: I0302 07:00:00.000000 1 kubelet.go:1] ",
    "Mar 02 07:00:00 node-1 kubelet[1]: F0302 07:00:00.000000 1 kubelet.go:1] Traceback (most recent call last):",
    "Mar 02 07:00:00 node-1 kubelet[1]: I0302 07:00:00.000000 1 kubelet.go:1] \x1b[31mred\x1b[0m",
    "Mar 02 07:00:00 node-1 kubelet[1]: I0302 07:00:00.0000001 1 kubelet.go:1] seven fraction digits",
    "Mar 02 07:00:00 node-1 kubelet[١]: I0302 07:00:00.000000 1 kubelet.go:1] another script's digit",
    "Mar 02 07:00:00 node-1 kubelet[1]: I0302 07:00:00.000000 1 k8s.io/kubelet/x.go:1] a path, kubelet by ident",
    "Mar 02 07:00:00 node-1 k3s[1]: I0302 07:00:00.000000 1 prober.go:116] kubelet by file",
    'Mar 02 07:00:00 node-1 kubelet[1]: I0302 07:00:00.000000 1 kubelet.go:1]   File "x.py", line 1, in f',
    "Mar 02 07:00:00 node-1 kubelet[1]: I0302 07:00:00.000000 1 kubelet.go:1] RuntimeError: boom",
    "Mar 02 07:00:00 node-1 kubelet[1]: I0302 07:00:00.000000 1 kubelet.go:1] hi [repeated 3x across cluster]",
    "Mar 02 07:00:00 node-1 sshd[12]: Accepted publickey for root",
    "Mar 32 07:00:00 node-1 kubelet[1]: I0302 07:00:00.000000 1 kubelet.go:1] day 32",
    "Mar 2 07:00:00 node-1 kubelet[1]: I1302 25:61:61.000000 1 kubelet.go:1] impossible klog time",
    "Mab 02 07:00:00 node-1 kubelet[1]: I0302 07:00:00.000000 1 kubelet.go:1] no such month",
    "  goroutine 1 [running]:",
    "Mar 02 07:00:00 node-1 kubelet[1]: I0302 07:00:00.000000 1 kubelet.go:1] ends in a caret-M^M",
    "Jan  1 00:00:00 node-1 python3[9]: W0101 00:00:00.000001 12 torch/distributed/elastic/api.py:858] torch's",
    "Jan  1 00:00:00 node-1 python3[9]: W0101 00:00:00.000001 12 setup.py.go:1] a .py that is not the end",
    "",
]


KV = "[2025-05-04 05:25:03,029] LMCache "
LMCACHE_LINES = [
    KV + "ERROR: Cache corruption detected in block 88123 (storage.py:88:lmcache.storage)",
    KV + "INFO: Storing KV cache for 321 out of 4096 tokens (cache_engine.py:190:lmcache.v1.cache_engine)",
    KV + "WARN: short level (a.py:1)",
    KV + "WARNING:   leading and trailing spaces   ",
    KV + "DEBUG: no tail at all",
    KV + "DEBUG: two (x.py:1) (y.py:2)",
    KV + "DEBUG: not a py tail (x.c:1)",
    KV + "DEBUG: tail then spaces (x.py:1:a.b)   ",
    KV + "DEBUG: tail without a space(x.py:1)",
    KV + "DEBUG: no line number (x.py:)",
    KV + "DEBUG: an empty logger (x.py:1:)",
    KV + "DEBUG: (x.py:1)",
    KV + "INFO: ends with a colon:",
    KV + "INFO: Traceback (most recent call last):",
    KV + "INFO: ",
    KV + "INFO:",
    KV + "INFO: non-ASCII é (a.py:1)",
    KV + "INFO: \x1b[32mgreen\x1b[0m (a.py:1)",
    KV + "INFO: a tab\t(a.py:1)",
    KV + "FATAL: not one of its levels",
    KV + " INFO: two spaces",
    "[2025-05-04 05:25:03.029] LMCache INFO: a dot, not a comma",
    "[2025-13-45 25:61:61,999] LMCache INFO: an impossible date",
    "2025-03-02T08:00:00.1Z [2025-05-04 05:25:03,029] LMCache INFO: stamped (a.py:1)",
    "(EngineCore_DP0 pid=120) [2025-05-04 05:25:03,029] LMCache INFO: prefixed (a.py:1)",
]


WATCHDOG = (
    "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
    "Timeout(ms)=600000) ran for 600003 milliseconds before timing out."
)
C10D_LINES = [
    "[rank1]:[E302 07:13:53.307279509 ProcessGroupNCCL.cpp:632] [Rank 1] " + WATCHDOG,
    "[rank12]:[E1012 22:31:22.267261276 ProcessGroupNCCL.cpp:607] [PG ID 0 PG GUID 0(default_pg) Rank 12] " + WATCHDOG,
    "[rank0]: [W302 07:13:53.1 ProcessGroupNCCL.cpp:1] one space, a short fraction",
    "[rank0]:  [W302 07:13:53.1 ProcessGroupNCCL.cpp:1] two spaces",
    "[rank4]:[E ProcessGroupNCCL.cpp:475] [Rank 4] an old line without a date",
    "[rank4]:[I ProcessGroupNCCL.cpp:850]no space before the message",
    "[rank4]:[V302 07:13:53.307279509 socket.cpp:1]",
    "[rank4]:[F302 07:13:53.307279509 ProcessGroupNCCL.cpp:1] ends with a colon:",
    "[rank4]:[X302 07:13:53.307279509 ProcessGroupNCCL.cpp:1] no such severity",
    "[rank4]:[E30212 07:13:53.307279509 ProcessGroupNCCL.cpp:1] five digits of date",
    "[rank4]:[E302 07:13:53 ProcessGroupNCCL.cpp:1] no fraction",
    "[rank4]:[E302 07:13:53.307279509 Process/Group.cpp:1] a slash in the file",
    "[rank4]:[E302 07:13:53.307279509 ProcessGroupNCCL.cpp:1] \x1b[31mred\x1b[0m",
    "[rank٤]:[E302 07:13:53.307279509 ProcessGroupNCCL.cpp:1] another script's digit",
    "[rank4]: Traceback (most recent call last):",
    '[rank4]:   File "x.py", line 1, in f',
    "rank4]:[E302 07:13:53.307279509 ProcessGroupNCCL.cpp:1] no bracket before rank",
    "2025-03-02T08:00:00.1Z [rank3]:[E302 07:13:53.307279509 ProcessGroupNCCL.cpp:632] stamped",
    "(VllmWorker rank=3 pid=265) [rank3]:[E302 07:13:53.307279509 ProcessGroupNCCL.cpp:632] prefixed",
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f in libc10.so)",
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(SYSLOG_KLOG_LINES + LMCACHE_LINES + C10D_LINES + FAST_BODIES[:3]), min_size=1, max_size=30)
)
@example(lines=[C10D_LINES[4], "x", C10D_LINES[15]])  # the rank's stream: its File line folds into it
@example(lines=[SYSLOG_KLOG_LINES[1], "  goroutine 1 [running]:", SYSLOG_KLOG_LINES[16]])
@example(lines=[LMCACHE_LINES[12], '  File "x.py", line 1, in f', LMCACHE_LINES[0]])
def test_fast_lane_reads_journald_klog_lmcache_and_c10d_lines_as_the_general_path(lines):
    _assert_fast_lane_gives_the_general_events(lines)


def test_the_fast_lane_takes_plain_journald_klog_lines():
    from parsers._compiled import fastlane

    frame = _lines_frame(SYSLOG_KLOG_LINES[:6]).with_row_index("_row")
    taken, rest = fastlane.split(frame.with_columns(pl.lit(False).alias("_cr")))
    assert taken["_kind"].to_list() == ["klog"] * 6 and rest.is_empty()
    assert taken[s.SOURCE].to_list() == ["kubelet", "kubelet", "kubelet", "torch", "klog", "kubelet"]


def test_the_fast_lane_takes_c10d_lines_with_their_watchdog_fields():
    from parsers._compiled import fastlane

    lines = [C10D_LINES[i] for i in (0, 1, 2, 4, 7)] + C10D_LINES[-3:-1]
    taken, rest = fastlane.split(_lines_frame(lines).with_row_index("_row").with_columns(pl.lit(False).alias("_cr")))
    assert rest.is_empty() and set(taken["_kind"]) == {"torch"} and set(taken[s.SOURCE]) == {"torch"}
    assert taken["_rank"].to_list() == ["1", "12", "0", "4", "4", "3", "3"]
    assert taken[s.COLL_SEQ].to_list()[:2] == [12, 12] and taken[s.COLL_TIMEOUT_MS][0] == 600000
    assert taken["_mo"].to_list()[:4] == [3, 10, 3, None]


_C10D_HEAD = "[rank1]:[E302 07:13:53.307279509 ProcessGroupNCCL.cpp:632] "
_PG_HEADS = (
    "",
    "[Rank 3] ",
    "[PG ID 0 PG GUID 0(default_pg) Rank 12] ",
    "[PG 1 Rank 2] ",
    "[PG ID 5 PG GUID abc Rank 7] ",
    "[PG ID 0 PG GUID 0 (x) Rank 1] ",
    "[PG ID 0 PG GUID (x) Rank 1] ",
    "[PG ID 0 PG GUID 0(open Rank 1] ",
    "[Rank 99999999999] ",
    "[Rank 1234567890123456789012] ",
    "[Rank 3 ] ",
    "[x] [Rank 3] ",
    "[Rank \u0663] ",
    "[PG ID 0 PG GUID g\u00fc Rank 1] ",
    "[PG ID 0 PG GUID g\u00a0 Rank 1] ",
    "[PG ID x Rank 1] ",
    "[PG 1 Rank 2]",
)
_WATCHDOG_PARTS = (
    ("", "SeqNum=12, ", "SeqNum=, ", "SeqNum=12,", "SeqNum=1234567890123456789012, ", "SeqNum=1\u0663, "),
    ("ALLREDUCE", "_ALLGATHER_BASE", "", "ALLR\u00c9DUCE"),
    ("", ", NumelIn=1048576, NumelOut=1048576", ", NumelIn=1, NumelOut=", ", NumelIn=1"),
    ("", ", TensorShape=[1, 2048]", ", TensorShape=[]", ", TensorShape=[1, 2"),
    (", Timeout(ms)=600000)", ", Timeout(ms)=)", ", Timeout(ms)=600000", ", Timeout(ms)=99999999999999999999)"),
    ("", " ran for 600071 milliseconds before timing out.", " ran for milliseconds", " ran for 600071 ms",
     " ran for 6\u0663 milliseconds", " ran for 99999999999999999999 milliseconds"),
    ("", " then Watchdog caught collective operation timeout: WorkNCCL(OpType=BARRIER, Timeout(ms)=5)", " [Rank 9]"),
)  # fmt: skip


@st.composite
def _c10d_messages(draw) -> str:
    """A c10d message: a PG prefix, then the watchdog's timeout (or other text), each part drawn
    from its real shapes and near misses (the regexes' optional groups half there, other
    scripts' digits and letters, numbers too long for their column, a second occurrence)."""
    head = draw(st.sampled_from(_PG_HEADS))
    if draw(st.booleans()):
        seq, op, numel, shape, timeout, ran, tail = (draw(st.sampled_from(p)) for p in _WATCHDOG_PARTS)
        body = f"Watchdog caught collective operation timeout: WorkNCCL({seq}OpType={op}{numel}{shape}{timeout}{ran}"
        return head + body + tail
    return head + draw(st.sampled_from(("ProcessGroupNCCL initialization options: size: 8", "", "[PG 1 Rank 2]")))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_c10d_messages(), min_size=1, max_size=12))
@example(messages=["[Rank 3] " + WATCHDOG, "[x] [Rank 3] " + WATCHDOG])
def test_fast_lane_reads_the_watchdog_and_pg_fields_as_the_regexes(messages):
    from parsers._compiled import fastlane

    frame = (
        _lines_frame([_C10D_HEAD + m for m in messages]).with_row_index("_row").with_columns(pl.lit(False).alias("_cr"))
    )
    taken, _ = fastlane.split(frame)
    expected = taken.select(torch.collective_fields(pl.col(s.MESSAGE)))
    assert taken.select(expected.columns).equals(expected, null_equal=True)
    assert taken.height == len(messages)


def test_the_fast_lane_reads_common_watchdog_lines_without_the_regexes(monkeypatch):
    from parsers._compiled import fastlane

    def refuse(_msg):
        raise AssertionError("the regexes were used")

    monkeypatch.setattr(fastlane.torch, "collective_fields", refuse)
    lines = [*C10D_LINES[:2], _C10D_HEAD + "[PG 1 Rank 2] ProcessGroupNCCL initialization options: size: 8"]
    taken, _ = fastlane.split(_lines_frame(lines).with_row_index("_row").with_columns(pl.lit(False).alias("_cr")))
    assert taken[s.COLL_OP].to_list() == ["ALLREDUCE", "ALLREDUCE", None]
    assert taken[s.COLL_SEQ].to_list() == [12, 12, None] and taken[s.COLL_RAN_MS].to_list() == [600003, 600003, None]
    assert taken[s.COLL_TIMEOUT_MS].to_list() == [600000, 600000, None]
    assert taken[s.PG].to_list() == [None, "0", "1"] and taken["_line_rank"].to_list() == [1, 12, 2]


def test_the_fast_lane_takes_lmcache_lines():
    from parsers._compiled import fastlane

    lines = [LMCACHE_LINES[i] for i in (0, 1, 2, 3, 4)] + LMCACHE_LINES[-2:]
    taken, rest = fastlane.split(_lines_frame(lines).with_row_index("_row").with_columns(pl.lit(False).alias("_cr")))
    assert rest.is_empty() and set(taken["_kind"]) == {"pylog"} and set(taken[s.SOURCE]) == {"kv-store"}
    assert taken[s.COMPONENT].to_list() == ["storage.py", "cache_engine.py", "a.py", None, None, "a.py", "a.py"]
    assert taken[s.MESSAGE][3] == "leading and trailing spaces"


METRIC_KEYS = [
    "Engine 000: ",
    "Avg prompt throughput: ",
    "Avg generation throughput: ",
    "Running: ",
    "Waiting: ",
    "Pending: ",
    "Swapped: ",
    "Deferred: ",
    "Preemptions: ",
    "GPU KV cache usage: ",
    "CPU KV cache usage: ",
    "Prefix cache hit rate: ",
    "External prefix cache hit rate: ",
    "Corrupted: ",
    "Prefix cache hit rate: GPU: ",
]
METRIC_PHRASE = st.builds(
    "".join,
    st.tuples(
        st.sampled_from(METRIC_KEYS),
        st.sampled_from(["1.5", "42", ".", "1.2.3", "7.", "", "x", ".5", "007", "0.1", "12345678901234567"])
        | st.from_regex(r"\A[0-9]{1,17}(\.[0-9]{0,9})?\Z"),
        st.sampled_from([" tokens/s", " reqs", "%", "%, CPU: 3.5%", "", " "]),
    ),
)
"""Key, number, unit: mostly well formed, sometimes broken in the ways the regexes care about."""
METRIC_MESSAGE = st.lists(
    st.tuples(st.sampled_from([", ", " ", "l ", "x", ""]), METRIC_PHRASE), min_size=1, max_size=6
).map(lambda parts: "".join(sep + phrase for sep, phrase in parts))


@settings(max_examples=300, deadline=None)
@given(st.lists(METRIC_MESSAGE, min_size=1, max_size=8))
@example(
    [
        "Running: 1 reqs, Pending: 2 reqs, Waiting: 3 reqs",  # one regex, two keys: the leftmost wins
        "Waiting: 4 reqs, Pending: 5 reqs",
        "l Prefix cache hit rate: 1.5%, Prefix cache hit rate: 2.5%",  # not after `l `
        "Prefix cache hit rate: GPU: 1.0%, CPU: x%, Prefix cache hit rate: GPU: 2.0%, CPU: 3.0%",
    ]
)
def test_compiled_metric_spans_give_what_the_metric_regexes_give(messages):
    from parsers import vllm
    from parsers._compiled import metric_scan

    assert metric_scan.NAMES == list(vllm._PAIRS)
    msgs = pl.Series(messages)
    lo, hi, sure, value, state = metric_scan.spans(msgs)
    assert sure.all()
    frame = pl.DataFrame({"m": msgs})
    regexes = [rx for rx, _ in vllm._PAIRS.values()] + [vllm.PREFIX_V0, vllm.PREFIX_V0]
    groups = [1] * len(vllm._PAIRS) + [1, 2]
    for k, (rx, g) in enumerate(zip(regexes, groups, strict=True)):
        want = frame.select(pl.col("m").str.extract(rx, g)).to_series()
        got = [m[a:b] if a >= 0 else None for m, a, b in zip(messages, lo[:, k], hi[:, k], strict=True)]
        assert got == want.to_list(), (rx, messages)
        # The numbers read in the same pass are what casting the spans gives (or say they are not sure).
        cast = want.cast(pl.Float64, strict=False).to_list()
        for v, how, c in zip(value[:, k], state[:, k], cast, strict=True):
            read = (how == metric_scan.VALUE and v == c) or (how == metric_scan.NULL and c is None)
            assert read or how == metric_scan.UNSURE, (v, how, c)


def test_metric_scan_leaves_non_ascii_messages_to_the_regexes():
    from parsers._compiled import metric_scan

    _, _, sure, _, _ = metric_scan.spans(pl.Series(["Running: 3 reqs", "Running: ٣ reqs", "Waiting: 1 reqs — ok"]))
    assert sure.tolist() == [True, False, False]


HEAD_PATTERNS = {
    "klog": k8s.KLOG,
    "nccl": nccl.PATTERN,
    "torch": torch.PATTERN,
    "vllm": vllm.PATTERN,
    "syslog": wrappers.SYSLOG,
    "journald-iso": wrappers.SYSLOG_AFTER_ISO,
    "rank": wrappers.RANK,
    "python-logging": pylog.STAMP,
    "events-table": k8s.TABLE,
    "trtllm": trtllm.PATTERN,
    "ucx": ucx.PATTERN,
    "ucx-signal": ucx.SIGNAL,
}
HEAD_TEXT = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "I0302 08:00:20.934473    1450 kubelet.go:2455] ",
                "E1012 22:31:22.267261 7 ProcessGroupNCCL.cpp:607] ",
                "[E1012 22:31:22.267261276 ProcessGroupNCCL.cpp:607] ",
                "[E ProcessGroupNCCL.cpp:475] ",
                "vllm-1:2343:2381 [0] ",
                "transport/net.cc:1302 ",
                "[2025-03-02 08:00:00.123] ",
                "NCCL WARN ",
                "NCCL INFO",
                "INFO 03-02 08:00:00 [loggers.py:123] ",
                "WARNING 03-02 08:00:00 loggers.py:123] ",
                "Mar  2 08:00:20 gpu-node-3 kubelet[1450]: ",
                "Mar 02 08:00:20.123 gpu-node-3 kubelet: ",
                "gpu-node-3 systemd[1]: ",
                "[rank0]:",
                " rank12]: ",
                "[11/02/2025-14:06:30] [TRT-LLM] [RANK 1] [E] ",
                "[TensorRT-LLM][ERROR][3] ",
                "[TensorRT-LLM] ",
                "[vllm-decode-0:41:0:57] ",
                "[1772618403.123456] [vllm-decode-0:41   :1]   ",
                "ib_mlx5_log.c:171  UCX  ERROR   ",
                "Caught signal 11 (",
                "[2023-12-07 06:56:42,105 E 409240 409362] ",
                "2024-06-01 10:00:00.123456 - ",
                "default   ",
                "5m (x3 over 10m)  Warning   BackOff   pod/vllm-0   ",
                "2m (x12 over 14m)   Warning   BackOff   Pod/vllm-0   ",
                "<unknown>  Normal  Pulled  node/gpu-node-3 \n ",
                "message ",
                "a:b] ",
            ]
        ),
        st.text(alphabet=" :[]()0123456789٣\n\tINFOabc.-/_", max_size=6),
    ),
    max_size=5,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.lists(HEAD_TEXT, min_size=1, max_size=12), st.sampled_from(sorted(HEAD_PATTERNS)))
@example(["I0302 08:00:20.934473    1450 kubelet.go:2455] two\nlines", "I0302 08:00:20.934473 1 a.go:1] x"], "klog")
@example(["Mar  2 08:00:20 gpu-node-٣ kubelet[1450]: body", "Mar 02 08:00:20 h k: "], "syslog")
@example(["[E1012 22:31:22.٣67261276 ProcessGroupNCCL.cpp:607] ünïcode"], "torch")
def test_capturing_from_the_matched_head_gives_the_groups_of_the_whole_line(texts, name):
    # `extract_head` finds where the match ends, then captures groups from the head alone:
    # every field (the rest-of-line group too) must be what the whole-line regex captures,
    # including rows that do not match, nulls, and rests with a newline (where `.` stops).
    pattern = HEAD_PATTERNS[name]
    df = pl.DataFrame({"body": pl.Series([*texts, None], dtype=pl.String)})
    want = df.select(pl.col("body").str.extract_groups(pattern).alias("m")).unnest("m")
    got = extract_head(df, pattern, "m", rest="rest")
    assert got.select("m").unnest("m").equals(want)
    # `rest`: the text after the head (the pattern less a rest-of-line group), null where it does not match.
    head_only = re.sub(r"\(\?P<\w+>\.\*\)\$$", "", pattern)
    head = df.select(pl.col("body").str.extract(head_only, 0)).to_series()
    rest = [None if h is None else t[len(h) :] for t, h in zip(df["body"], head, strict=True)]
    assert got["rest"].to_list() == rest


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.lists(
        st.sampled_from([b"a", b"Z", b" ", b"\n", b"\x00", b"\xe2", b"\x82", b"\xac", b"\xff", b"\r"]), max_size=300
    ).map(b"".join),
    size=st.integers(1, 40),
    bom=st.booleans(),
    codec=st.sampled_from([None, "gzip", "xz", "bzip2", "zstd", "lz4"]),
)
def test_a_file_read_a_segment_at_a_time_decodes_to_the_text_read_whole(tmp_path, data, size, bom, codec):
    # Segments end at newlines, so no UTF-8 sequence is cut: the pieces decode to exactly the
    # whole file's text, repairs (NULs, invalid bytes) are counted once, and for ASCII text
    # the cuts fall where `split_segments` cuts the decoded text. Lines longer than the
    # segment size (most, here) make the reader read on past it, growing its buffer.
    import bz2
    import gzip
    import lzma

    from forensics.ingestion import files as _files

    path = tmp_path / "f.log"
    text = b"\xef\xbb\xbf" * bom + data
    # (UTF-16 with no byte-order mark and CR-only line endings are decoded whole, never in
    # segments: `stream_head` sends them that way)
    assume(not _files.utf16_without_bom(text) and not (b"\r" in text and b"\n" not in text))
    compress = {
        None: bytes,
        "gzip": lambda b: gzip.compress(b, mtime=0),
        "xz": lzma.compress,
        "bzip2": bz2.compress,
        "zstd": lambda b: pa.compress(b, codec="zstd", asbytes=True),
        "lz4": lambda b: pa.compress(b, codec="lz4", asbytes=True),
    }
    path.write_bytes(compress[codec](text))
    f = _files.InputFile(path, "f.log", path.stat().st_size, 0.0)
    notes: list[str] = []
    pieces = [bytes(p).decode() for p in _files.text_segments(f, notes, segment_bytes=size)]  # (strict: valid UTF-8)
    whole, repairs = _files.decode(text)
    assert "".join(pieces) == whole and notes == repairs
    assert all(p.endswith("\n") for p in pieces[:-1])
    if data.isascii() and b"\x00" not in data and not bom:
        assert pieces == list(_files.split_segments(whole, size))


@settings(max_examples=300, deadline=None)
@given(
    members=st.lists(st.binary(max_size=3000), min_size=1, max_size=3),
    cut=st.one_of(st.none(), st.floats(0, 1)),
    flip=st.one_of(st.none(), st.floats(0, 1)),
    size=st.sampled_from([1, 7, 64, 4096]),
    codec=st.sampled_from(["gzip", "xz", "bzip2", "zstd", "lz4"]),
)
@example(members=[b"\x90\x00"], cut=0.6875, flip=None, size=1, codec="gzip")  # a cut stream's flushed tail, in pieces
def test_decompressed_pieces_keep_all_of_a_sound_stream_and_a_prefix_of_a_damaged_one(members, cut, flip, size, codec):
    import bz2
    import gzip
    import io
    import lzma

    from forensics.ingestion import files as _files

    compress = {
        "gzip": lambda m: gzip.compress(m, mtime=0),
        "xz": lzma.compress,
        "bzip2": bz2.compress,
        "zstd": lambda m: pa.compress(m, codec="zstd", asbytes=True),
        "lz4": lambda m: pa.compress(m, codec="lz4", asbytes=True),
    }[codec]
    blob = bytearray(b"".join(compress(m * 3) for m in members))
    if flip is not None:
        blob[min(int(flip * len(blob)), len(blob) - 1)] ^= 0x5A
    if cut is not None:
        blob = blob[: int(cut * len(blob))]
    notes: list[str] = []
    pieces = list(_files.decompress_pieces(codec, io.BytesIO(bytes(blob)).read, notes, size))
    out = b"".join(pieces)
    full = b"".join(m * 3 for m in members)
    assert all(len(p) <= size for p in pieces)
    if flip is None and cut is None:
        assert out == full and notes == []
    elif flip is None:
        assert full.startswith(out)  # a cut stream keeps what came before the cut
    if notes:
        assert len(notes) == 1 and notes[0].startswith((f"truncated {codec}", f"corrupt {codec}"))
        assert f" {len(out)} " in notes[0]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=30),
            st.text(max_size=30),
            st.integers(0, 40),
            st.integers(0, 40),
            st.booleans(),
        ),
        min_size=1,
        max_size=40,
    ),
    st.integers(0, 3),
)
def test_columns_cut_as_views_hold_the_bytes_between_the_offsets(rows, skip):
    """Inline (<= 12 bytes) and long cuts, nulls, text after non-ASCII, a frame sliced off a larger one."""
    from parsers.arrow_text import Text

    lines = ["pad"] * skip + [head + tail for head, tail, *_ in rows]
    body = pl.Series(lines, dtype=pl.String).slice(skip)
    at, end, expected = [], [], []
    for (head, _tail, a, b, to_end), line in zip(rows, lines[skip:], strict=True):
        a = min(a, len(head))  # offsets on character boundaries: in the ASCII head, or the line's end
        b = len(line.encode()) if to_end else max(a, min(b, len(head)))
        null = a == b == 0 and not to_end
        at.append(-1 if null else a)
        end.append(b)
        expected.append(None if null else line.encode()[a:b].decode())
    rows_at = np.arange(len(rows))[::-1].copy()  # any order of rows
    spans = np.array(at)[rows_at][:, None].repeat(2, 1), np.array(end)[rows_at][:, None].repeat(2, 1)
    # Column 0 of the spans a held column (its bytes copied), column 1 a view into the lines.
    copied, viewed = Text(body).cut_spans(rows_at, {0: "copied", 1: "viewed"}, *spans, held=frozenset({"copied"}))
    assert copied.to_list() == viewed.to_list() == [expected[r] for r in rows_at]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(st.none(), st.sampled_from(["INFO", "WARNING", "loggers.py", "é", "", "APIServer"])), max_size=30
    ),
    st.lists(st.text(max_size=5), max_size=5),
    st.integers(0, 3),
    st.booleans(),
)
def test_categories_convert_to_arrow_as_polars_converts_them(values, seen_before, skip, chunked):
    """Nulls, an all-null or empty column, categories other columns made first (their codes are
    not this column's), a sliced or multi-chunk column: the same dictionary and indices."""
    from parsers.arrow_text import categories_as_arrow

    pl.Series(seen_before, dtype=pl.Categorical)
    col = pl.Series(values, dtype=pl.Categorical)
    if chunked and len(values) > 2:
        col = pl.concat([col[: len(values) // 2], col[len(values) // 2 :]], rechunk=False)
    col = col[skip:]
    frame = pl.DataFrame({"c": col, "text": pl.Series([None] * len(col), dtype=pl.String), "same": col})
    arrays = categories_as_arrow(frame)
    assert set(arrays) == {"c", "same"} and arrays["c"].equals(col.to_arrow()) and arrays["same"].equals(col.to_arrow())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from("ab \n\n\né\t"), max_size=40), min_size=1, max_size=4))
def test_a_batchs_lines_column_splits_its_segments_at_newlines(segments):
    """Lines of any length (0, inline, long) at any position of the 8-byte words the newline search reads."""
    from parsers.arrow_text import count_lines, lines_column

    data = [seg.encode() for seg in segments]
    expected = [line for seg in segments for line in (seg[:-1] if seg.endswith("\n") else seg).split("\n")]
    assert lines_column(data).to_list() == expected
    assert lines_column(data, sum(count_lines(d) for d in data)).to_list() == expected


BLOCK_PIECES = ["Traceback (most recent call last)", "Traceback (most recent", "RuntimeError", "Error", "x", "é", "1"]
BLOCK_PIECES += [".", ":", " ", "\t", "\u00a0", "\u3000", "\u2007", "\u200b", "^", "Exception", "Exit", "_", "A"]
BLOCK_PIECES += ["-", "#", "7", "0x", "ff", "é:", "group", *continuation.LITERALS, *continuation.PATTERNS]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(BLOCK_PIECES) | st.text(max_size=3), max_size=8))
def test_compiled_block_flags_agree_with_the_fold_expressions(pieces):
    """`_open` and `_msgcont` as the fast lane computes them are the general path's, or it says it is unsure."""
    from parsers._compiled import fastlane

    message = "".join(pieces).replace("\n", " ")
    msg = pl.col("m")
    row = pl.DataFrame({"m": [message]}).select(
        (msg.str.strip_chars_end().str.ends_with(":") | msg.str.starts_with("Traceback (most recent")).alias("open"),
        (msg.str.contains(continuation.MESSAGE) | msg.str.contains(pylog.DETECT_EXC)).alias("cont"),
    )
    data = np.frombuffer(("pad " + message).encode(), np.uint8)
    opens, cont, unsure = fastlane._block_flags(data, 4, fastlane._TRACEBACK, fastlane._SUFFIXES, fastlane._HEADS)
    assert opens == row["open"][0]
    assert unsure or cont == row["cont"][0]
    left = tuple(h for h in continuation.PATTERNS if h not in fastlane.OWN_PATTERNS)
    if message.isascii() and not message.startswith(left):
        assert not unsure


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
    max_leaves=8,
)


def _shaped(**fields):
    """A dict with these keys, each value of its own strategy or anything at all (a document
    hand-edited or cut short holds any JSON where Kubernetes writes an object)."""
    return _JSON | st.fixed_dictionaries({k: v | _JSON for k, v in fields.items()})


_RUN = _shaped(reason=st.text(max_size=10), exitCode=st.integers(), finishedAt=st.text(max_size=25))
_CONTAINER = _shaped(name=st.text(max_size=6), lastState=_shaped(terminated=_RUN), state=_shaped(waiting=_RUN))
_CONDITION = _shaped(type=st.sampled_from(["Ready", "MemoryPressure", "KernelDeadlock"]), status=st.text(max_size=5))
_ITEM = _shaped(
    kind=st.sampled_from(["Pod", "Node"]),
    metadata=_shaped(name=st.text(max_size=6), namespace=st.text(max_size=6)),
    spec=_shaped(nodeName=st.text(max_size=6)),
    status=_shaped(
        containerStatuses=st.lists(_CONTAINER, max_size=2),
        conditions=st.lists(_CONDITION, max_size=2),
        reason=st.just("Evicted"),
        nodeInfo=st.just({}),
    ),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_ITEM, max_size=3), st.sampled_from(["PodList", "NodeList", "List"]))
@example(
    [
        {
            "metadata": {"name": "a", "namespace": 5},
            "status": {"containerStatuses": [{"name": 3, "lastState": {"terminated": {"reason": 7, "exitCode": "x"}}}]},
        },
        {"status": {"containerStatuses": 7}},
    ],
    "PodList",
)
def test_any_pod_or_node_document_never_raises_and_accounting_balances(items, kind):
    import json

    r = _ingest_beside_a_good_log("pods.json", json.dumps({"kind": kind, "items": items, "x": "containerStatuses"}))
    for f in r.files:
        assert f.lines == f.parsed + f.folded + f.unparsed


_EVENT = _shaped(
    involvedObject=_shaped(kind=st.sampled_from(["Pod", "Node"]), name=st.text(max_size=6)),
    reason=st.text(max_size=8),
    message=st.text(max_size=12),
    type=st.sampled_from(["Warning", "Normal"]),
    count=st.integers(),
    lastTimestamp=st.text(max_size=25),
    source=_shaped(component=st.text(max_size=6), host=st.text(max_size=6)),
    series=_shaped(count=st.integers(), lastObservedTime=st.text(max_size=25)),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_EVENT, max_size=3))
@example([{"involvedObject": {"kind": "Pod", "name": 5}, "reason": 7, "message": ["x"], "count": "a", "type": 3}])
def test_any_event_document_never_raises_and_accounting_balances(items):
    import json

    r = _ingest_beside_a_good_log("events.json", json.dumps({"kind": "EventList", "items": items}))
    for f in r.files:
        assert f.lines == f.parsed + f.folded + f.unparsed


_RAS_RANK = _shaped(
    rank=st.integers(),
    host=st.text(max_size=6),
    pid=st.integers(),
    cuda_dev=st.integers(),
    status=_shaped(
        async_error=st.integers(-1, 9),
        init_state=st.integers(-1, 9),
        considered_dead=st.booleans(),
        unresponsive=st.booleans(),
    ),
    collective_counts=_shaped(AllReduce=st.integers(), AllGather=st.integers()),
)
_COMMUNICATOR = _shaped(
    hash=st.text(max_size=8), ranks=st.lists(_RAS_RANK, max_size=3), missing_ranks=st.lists(_RAS_RANK, max_size=2)
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_COMMUNICATOR, max_size=3), _JSON)
@example([{"hash": 7, "ranks": [{"rank": "x", "collective_counts": {"AllReduce": 3}}, 5], "missing_ranks": 3}], 1)
def test_any_ncclras_json_report_never_raises_and_accounting_balances(communicators, stamp):
    import json

    doc = {"nccl_version": "2.28.9", "timestamp": stamp, "communicators": communicators, "ranks": 0}
    r = _ingest_beside_a_good_log("ncclras.json", json.dumps(doc, indent=2))  # ("ranks": read as a report)
    (f,) = [f for f in r.files if f.file == "ncclras.json"]
    assert f.wrapper == "ncclras-json"
    for f in r.files:
        assert f.lines == f.parsed + f.folded + f.unparsed


@settings(max_examples=200, deadline=None)
@given(
    messages=st.lists(
        st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), min_size=1).filter(
            lambda m: m.strip() not in ("", "-", "null", "None") and not m.endswith(("\n", "\r"))
        ),
        min_size=1,
        max_size=20,
    ),
    newest_first=st.booleans(),
    delimiter=st.sampled_from([",", "\t"]),
)
def test_a_csv_exports_records_come_back_whole_and_oldest_first(messages, newest_first, delimiter):
    # Whatever a record's message holds (quotes, delimiters, newlines), the export gives back
    # each message whole, one record a line, in the order they were written.
    import csv
    import io

    from parsers.documents import csv_export

    buf = io.StringIO()
    out = csv.writer(buf, delimiter=delimiter)
    out.writerow(["@timestamp", "kubernetes.pod.name", "message"])
    rows = [[f"2025-03-02T10:00:{i:02d}.000Z", "vllm-0", m] for i, m in enumerate(messages)]
    out.writerows(rows[::-1] if newest_first else rows)
    records, notes = csv_export.log_entries_csv(buf.getvalue())
    got = [json.loads(r) for r in records]
    assert [g["message"] for g in got] == messages
    assert [g["time"] for g in got] == [f"2025-03-02T10:00:{i:02d}.000000Z" for i in range(len(messages))]
    assert all("\n" not in r for r in records)
    assert notes[0].startswith(f"a CSV export of {len(messages)} log records")
    assert any("newest first" in n for n in notes) == (newest_first and len(messages) > 1)


_DOCKER_TEXT = st.lists(
    st.sampled_from(FAST_BODIES) | st.text(max_size=12) | st.sampled_from(["\n", '"', "\\", "\x1b[0m", "\ud83d", "€"]),
    max_size=4,
).map("".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            _DOCKER_TEXT,
            st.sampled_from(["stdout", "stderr", "stdin"]),
            st.sampled_from(["2025-03-02T07:59:50.123456789Z", "2025-03-02T08:59:50+01:00", "", "yesterday"]),
            st.booleans(),
            st.booleans(),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_docker_json_records_read_by_polars_give_the_events_json_loads_gives(records):
    """`wrappers.records.docker_json` (polars' decoder on the daemon's exact shape) against
    `_json_record_each` (`json.loads` and a dict a line) for every record."""
    lines = []
    for log, stream, time, ascii_only, newline in records:
        rec = {"log": log + ("\n" if newline else ""), "stream": stream, "time": time}
        # (a lone surrogate has no UTF-8: a file holds it only escaped)
        ascii_only = ascii_only or any(0xD800 <= ord(c) < 0xE000 for c in log)
        lines.append(json.dumps(rec, ensure_ascii=ascii_only, separators=(",", ":")))
    _assert_polars_reads_as_json_loads(lines, "DOCKER_JSON")


def _assert_polars_reads_as_json_loads(lines: list[str], shape: str) -> None:
    """`lines` parse to the same events with the `wrappers.records` shape `shape` (the lines
    polars decodes) as with it matching nothing (every line through `json.loads`)."""
    from parsers.wrappers import records as wrappers

    frame = _lines_frame(lines)
    polars_read = parse_lines(frame)
    pattern = getattr(wrappers, shape)
    try:
        setattr(wrappers, shape, r"^\b\B")  # (matches nothing)
        python_read = parse_lines(frame)
    finally:
        setattr(wrappers, shape, pattern)
    cols = sorted(python_read.columns)
    assert sorted(polars_read.columns) == cols
    assert polars_read.select(cols).equals(python_read.select(cols))


_PY_TEXT = st.lists(
    st.sampled_from(["vllm", "vllm.v1.engine.core", "uvicorn.access", "lmcache", "MainProcess", "EngineCore_DP0"])
    | st.sampled_from(["INFO", " error ", "Warning", "CRITICAL", "12-31 23:59:30", "2025-03-02 08:07:00,123", ""])
    | st.sampled_from(["2025-03-02T08:07:00Z", "Traceback (most recent call last):\n  File", "\n", " ", "\x1c", "."])
    | st.text(max_size=8),
    max_size=3,
).map("".join)


def _py_field(*likely: str) -> st.SearchStrategy:
    """A record's string field: mostly what its key holds in real records, else anything."""
    return st.none() | st.sampled_from(likely) | _PY_TEXT


_PY_RECORD = st.fixed_dictionaries(
    {},
    optional={
        "asctime": _py_field("2025-03-02 08:07:00,123", "12-31 23:59:30", "2025-03-02T08:07:00.5", "03-02 08:07"),
        "timestamp": _py_field("2025-03-02T08:07:00.123456+00:00", "2025-03-02T08:07:00Z"),
        "levelname": _py_field(
            "INFO", " error ", "Warning", "CRITICAL\n", "DEBUG", "fatal", "dpanic", "trace", "\x1cINFO"
        ),
        "name": _py_field(
            "vllm", "vllm.v1.engine.core", "uvicorn.access", "lmcache.v1", "worker", "vllm.", "", "lmcache"
        ),
        "message": _py_field(
            "Engine 000: Avg prompt throughput: 1.0 tokens/s", "boom\n", "", "Received request x-1: p"
        ),
        "exc_info": _py_field("Traceback (most recent call last):\nRuntimeError: boom\n", "boom", " \n", "\x1c"),
        "processName": _py_field("MainProcess", "APIServer", ""),
        "vllm_process_name": _py_field("EngineCore_DP0", "MainProcess", ""),
        "filename": _py_field("core.py", ""),
        "process": st.none() | st.integers(min_value=-(10**20), max_value=10**20),
        "lineno": st.none() | st.integers(min_value=0, max_value=10**6),
        "created": st.none() | st.floats(allow_nan=False, allow_infinity=False) | st.integers(0, 2 * 10**12),
        "msecs": st.floats(allow_nan=False, allow_infinity=False),
    },
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_PY_RECORD, st.booleans(), st.booleans(), st.integers(0, 9)), min_size=1, max_size=12))
def test_python_logging_records_read_by_polars_give_the_events_json_loads_gives(records):
    """`wrappers.records._python_records` (polars' decoder on `PYTHON_RECORD` lines) against
    `_json_record_each` (`json.loads` and a dict a line) for every record."""
    lines = []
    for rec, ascii_only, compact, other in records:
        rec = rec | ({"extra": other} if other == 0 else {})  # (another key: `json.loads`' way)
        ascii_only = ascii_only or any(0xD800 <= ord(c) < 0xE000 for v in rec.values() if isinstance(v, str) for c in v)
        lines.append(json.dumps(rec, ensure_ascii=ascii_only, separators=(",", ":") if compact else None))
    _assert_polars_reads_as_json_loads(lines, "PYTHON_RECORD")


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES, st.booleans())
def test_load_json_reads_what_the_standard_library_reads(value, ascii_only):
    # orjson reads the lines first; what it reads must be what `json.loads` gives (for the
    # integers 64 bits hold, as logs write them; astral characters escaped as pairs too).
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert load_json(text) == json.loads(text)


SPLICED_PIECES = [
    *FAST_BODIES,
    *SYSLOG_KLOG_LINES[:6],
    *LMCACHE_LINES[:4],
    "Traceback (most recent call last):",
    '  File "x.py", line 1, in f',
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "INFO 02-29 12:00:00 [x.py:1] a leap day",
    "INFO 04-31 12:00:00 [x.py:1] no such day",
]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(FAST_STAMPS),
            st.sampled_from(SPLICED_PIECES),
            st.sampled_from(SPLICED_PIECES),
            st.booleans(),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_real_line_shapes_glued_and_in_pieces_keep_accounting_balanced(parts):
    # What fuzzing `analyze` with real shapes broke: records glued onto a line (the second
    # continuing the first, or a traceback under it), CRI pieces holding glued records, days a
    # year lacks (`--year 2025`, Feb 29).
    lines = [stamp + (a + b if glue else a) for stamp, a, b, glue in parts]
    r = _ingest_beside_a_good_log("spliced.log", "\n".join(lines) + "\n")
    f = next(f for f in r.files if f.file == "spliced.log")
    assert f.lines == len(lines) == f.parsed + f.folded + f.unparsed
