"""The layers peeled off a line before its producer's format: CRI and kubectl stamps, collectors, pastes, process and rank prefixes (`parsers.wrappers`)."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime

import polars as pl
import pytest

from forensics import ingest
from forensics import schema as s
from tests.conftest import assert_balanced, event_row, events_of, write

pytestmark = pytest.mark.usefixtures("as_a_large_run")  # (the threshold's own tests set theirs)


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
    assert_balanced(r)
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
    pod, plain = event_row(ev, **{s.REQUEST_ID: "a"}), event_row(ev, **{s.REQUEST_ID: "b"})
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
    assert_balanced(r)
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
    ev = events_of(tmp_path / "glued.log", lines)
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
    ev = events_of(tmp_path / "0.log", lines)
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
    ev = events_of(tmp_path / "0.log", lines)
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
    assert_balanced(r)
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


def test_cluster_info_dump_markers_set_pod_and_container(tmp_path):
    write(
        tmp_path / "dump/default/vllm-0/logs.txt",
        "==== START logs for container vllm of pod default/vllm-0 ====\n"
        "INFO 03-02 08:00:00 [api_server.py:1885] vLLM API server version 0.10.2\n"
        "==== END logs for container vllm of pod default/vllm-0 ====\n",
    )
    ev = ingest(tmp_path, year=2025).events
    row = event_row(ev, source="vllm")
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
    assert_balanced(r)
    assert r.unparsed == 2
    assert r.events.filter(pl.col(s.SOURCE) == "unknown")[s.MESSAGE].to_list() == [
        "something entirely different",
        "more noise here",
    ]


def test_docker_json_file_lines_are_unwrapped(tmp_path):
    write(
        tmp_path / "c-json.log",
        '{"log":"INFO 03-02 10:00:00 [x.py:1] hello\\n","stream":"stderr","time":"2025-03-02T10:00:00.25Z"}\n',
    )
    row = ingest(tmp_path).events.row(0, named=True)
    assert row[s.MESSAGE] == "hello" and row[s.STREAM] == "stderr" and row[s.TS_QUALITY] == "exact"


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
    assert_balanced(r)
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
    assert_balanced(r)
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
    assert_balanced(r)
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
    assert_balanced(r)
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
    assert_balanced(r)
    ev = r.events.sort(s.FILE, s.LINE)
    assert ev.select(s.FILE, s.LINE, s.SOURCE, s.LEVEL).rows() == [
        ("app.log", 1, "app", "INFO"),
        ("app.log", 2, "unknown", None),
        ("app.log", 3, "app", "ERROR"),
        ("app.log", 4, "unknown", None),
        ("junk.log", 1, "unknown", None),
    ]
