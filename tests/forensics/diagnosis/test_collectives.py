"""Collectives: stragglers, flight-recorder and ncclras findings, process groups, first-collective timeouts (`forensics.diagnosis.collectives`)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from forensics import analyze
from tests.conftest import write as write_file


def test_a_rank_one_collective_behind_the_others_is_named_as_the_straggler(tmp_path):
    # Every rank timed out, but rank 2 is still in SeqNum 4107 while the others wait in 4108:
    # rank 2 never enqueued the collective they wait for.
    lines = [
        f"[rank{r}]:[E0611 10:20:{30 + r}.1{r}0000000 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
        f"operation timeout: WorkNCCL(SeqNum={4107 if r == 2 else 4108}, OpType=ALLGATHER, NumelIn=2048, NumelOut=8192, "
        f"Timeout(ms)=600000) ran for 60001{r} milliseconds before timing out.\n"
        for r in range(4)
    ]
    write_file(tmp_path / "ranks.log", "".join(lines))
    rc = analyze(tmp_path, year=2025).to_json()["incidents"][0]["root_cause"]
    assert rc["status"] == "inconclusive"
    assert rc["missing"].startswith(
        "Ranks 0, 1, 3 timed out waiting in ALLGATHER SeqNum=4108 while rank 2 never finished SeqNum=4107"
    )


def _beside_the_chorus(tmp_path: Path, ranks: int, op: str, name: str, report: str):
    """(`name`'s file report, the root cause) when every rank's watchdog fired in the same
    collective (SeqNum 4182: who stopped is not in those lines) and `report` lies beside them."""
    chorus = "".join(
        f"[rank{r}]:[E0523 09:41:17.20417{r % 10}093 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
        f"operation timeout: WorkNCCL(SeqNum=4182, OpType={op}, NumelIn=65536, NumelOut=65536, Timeout(ms)=600000) "
        "ran for 600031 milliseconds before timing out.\n"
        for r in range(ranks)
    )
    write_file(tmp_path / "ranks.log", chorus)
    write_file(tmp_path / name, report)
    analysis = analyze(tmp_path, year=2024)
    (f,) = [f for f in analysis.ingest.files if f.file == name]
    return f, analysis.to_json()["incidents"][0]["root_cause"]


FR_MISSING = (  # torchfrtrace, torch 2.5/2.6 (the tutorial's shape)
    "Not all ranks joining collective 4182 at entry 97\n"
    "group info: 0:default_pg\n"
    "collective: nccl:_allgather_base\n"
    "missing ranks: {5}\n"
    "input sizes: [[65536]]\n"
    "output sizes: [[524288]]\n"
    "expected ranks: 8\n"
    "collective state: scheduled\n"
    "collective stack trace:\n"
    "  all_gather_into_tensor at /usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py:3711\n"
    "  forward at /workspace/vllm/distributed/parallel_state.py:412\n"
)


FR_CULPRIT = (  # torchfrtrace, torch 2.7+: a rank that ran another collective
    "Collective sequence number: 4182 has errors\n"
    "internal record id: 97\n"
    "group info: 0:default_pg\n"
    "collective: nccl:_allgather_base\n"
    "input sizes: [[65536]]\n"
    "output sizes: [[524288]]\n"
    "world size: 8\n"
    "expected ranks: {0, 1, 2, 3, 4, 5, 6, 7}\n"
    "collective state: scheduled\n"
    "error msg: Culprit rank 6; Expected collective type: 'nccl:_allgather_base' does not match found collective "
    "type: 'nccl:all_reduce'\n"
    "collective stack trace: \n"
    " all_gather_into_tensor at /usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py:3711\n"
)


@pytest.mark.parametrize(
    ("report", "said"),
    [
        (
            FR_MISSING,
            "The flight recorder's analysis (fr_trace.txt:1) shows rank 5 never joined nccl:_allgather_base "
            "(sequence number 4182): the straggler",
        ),
        (
            FR_CULPRIT,
            "The flight recorder's analysis (fr_trace.txt:1) names rank 6 as the culprit of "
            "nccl:_allgather_base (sequence number 4182): Expected collective type: 'nccl:_allgather_base' does not "
            "match found collective type: 'nccl:all_reduce'",
        ),
    ],
)
def test_a_flight_recorder_finding_beside_the_timeouts_names_the_rank_that_stopped(tmp_path, report, said):
    # Every rank's watchdog fired in the same collective: the timeouts alone cannot say who
    # stopped; torchfrtrace over the ranks' dumps can, and was saved beside the logs.
    f, rc = _beside_the_chorus(tmp_path, 8, "_ALLGATHER_BASE", "fr_trace.txt", report)
    assert (f.parsed, f.unparsed, f.folded) == (1, 0, f.lines - 1)  # (one finding, its details folded in)
    assert rc["status"] == "inconclusive"
    assert rc["missing"].startswith(said)


@pytest.mark.parametrize(
    ("text", "missing"),
    [
        (  # torch 2.4's print(): the finding on one line
            "Not all ranks joining collective for group 0:default_pg collective nccl:all_reduce  Missing ranks are "
            "{1, 3}  [[3, 4]] [[3, 4]] 4 scheduled \nCollective stack traces: \n"
            "  all_reduce at /opt/torch/distributed/distributed_c10d.py:2288\n",
            [1, 3],
        ),
        (FR_MISSING, [5]),
        (  # torch 2.7+
            "Not all ranks joining collective, sequence number: 4181\ninternal record id: 96\n"
            "group info: 0:default_pg\ncollective: nccl:all_reduce\nmissing ranks: {2}\nworld size: 4\n"
            "expected ranks: {0, 1, 2, 3}\ncollective state: scheduled\ncollective stack trace: \n"
            " all_reduce at /opt/torch/distributed/distributed_c10d.py:2810\n" + FR_CULPRIT,
            [2],
        ),
    ],
)
def test_flight_recorder_findings_of_each_torch_generation_are_one_event_each(tmp_path, text, missing):
    from forensics import ingest
    from forensics.diagnosis import collectives

    write_file(tmp_path / "fr.txt", text)
    r = ingest(tmp_path)
    (f,) = r.files
    heads = r.events.filter(pl.col("component").cast(pl.String) == "flight_recorder")
    assert heads.height == f.parsed == text.count("Not all ranks") + text.count("has errors") and f.unparsed == 0
    assert set(heads["level"]) == {"WARNING"}
    assert collectives.flight_findings(r.events).missing == missing  # (the first finding: where it went out of step)


RAS_HEAD = (  # `ncclras` (NCCL >= 2.24): the summary before the findings
    "Job summary\n===========\n\n"
    "  Nodes  Processes         GPUs  Processes     GPUs\n"
    "(total)   per node  per process    (total)  (total)\n"
    "      2          8            1         16       16\n\n"
    "Communicators... (0.00s)\n=============\n\n"
    "Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors\n"
    "    #  in group  per comm  per node  per comm  in group\n"
    "    0         1         2         8        16        16   RUNNING  INCOMPLETE,MISMATCH\n\n"
)


RAS_DEAD = (
    "Errors\n======\n\n"
    "DEAD\n"
    "  1 job process is considered dead (unreachable via the RAS network)\n"
    "  Process 41377 on node gpu-node-3 managing GPU 5\n\n"
    "#0-0 (9a3c5e1f00d2b417) INCOMPLETE\n"
    "  Missing communicator data from 1 rank\n"
    "  Rank 13 -- GPU 5 managed by process 41377 on node gpu-node-3\n\n"
)


RAS_MISMATCH = (
    "Warnings\n========\n\n"
    "#0-0 (9a3c5e1f00d2b417) MISMATCH\n"
    "  Communicator ranks have different AllReduce operation counts\n"
    "  15 ranks have launched up to operation 4182\n"
    "  Rank 12 has launched up to operation 4181 -- GPU 4 managed by process 41376 on node gpu-node-3\n\n"
)


RAS_ERROR = (
    "Errors\n======\n\n"
    "#0-0 (9a3c5e1f00d2b417) ERROR\n"
    "  Asynchronous errors on 2 ranks\n"
    "  2 ranks reported remote process exited or there was a network error\n"
    "  Rank 6 -- GPU 6 managed by process 51220 on node gpu-node-1\n"
    "  Rank 9 -- GPU 1 managed by process 41373 on node gpu-node-3\n\n"
)


@pytest.mark.parametrize(
    ("report", "said"),
    [
        (
            RAS_HEAD + RAS_DEAD + RAS_MISMATCH,
            "NCCL's RAS report (ncclras.txt:18) lists process 41377 on node "
            "gpu-node-3 (GPU 5) as dead (unreachable over RAS's own network)",
        ),
        (
            RAS_HEAD + RAS_MISMATCH,
            "NCCL's RAS report (ncclras.txt:18) lists rank 12 (process 41376 on node gpu-node-3, "
            "GPU 4) as out of step: rank 12 has launched up to operation 4181",
        ),
        (
            RAS_HEAD + RAS_ERROR + RAS_MISMATCH,
            "NCCL's RAS report (ncclras.txt:18) lists rank 6 (process 51220 on node "
            "gpu-node-1, GPU 6) as failing: rank 6 reported remote process exited or there was a network error",
        ),
    ],
)
def test_an_ncclras_report_beside_the_timeouts_names_the_process_the_others_waited_on(tmp_path, report, said):
    f, rc = _beside_the_chorus(tmp_path, 16, "ALLREDUCE", "ncclras.txt", report)
    assert f.lines == f.parsed + f.folded + f.unparsed and f.parsed == report.count("\n#") + ("DEAD" in report)
    assert rc["status"] == "inconclusive"
    assert rc["missing"].startswith(said)


def _ras_json(
    missing: dict[int, dict] | None = None, async_error: dict[int, int] | None = None, behind: int | None = None
):
    """`ncclras -f json` as NCCL 2.28.9 writes it (2-space indent; a missing rank's `status`
    without the comma before it), for 16 ranks on two nodes."""

    def where(r: int) -> str:
        return (
            f'"rank": {r},\n          "host": "gpu-node-{1 + r // 8}",\n          "pid": {41360 + r},\n'
            f'          "cuda_dev": {r % 8},\n          "nvml_dev": {r % 8}'
        )

    reported = [
        "        {\n          " + where(r) + ',\n          "status": {\n            "init_state": 0,\n'
        f'            "async_error": {(async_error or {}).get(r, 0)},\n            "finalize_called": false,\n'
        '            "destroy_flag": false,\n            "abort_flag": false\n          },\n'
        '          "collective_counts": {\n            "Broadcast": 0,\n            "AllGather": 0,\n'
        f'            "AllReduce": {4181 if r == behind else 4182}\n          }}\n        }}'
        for r in range(16)
        if r not in (missing or {})
    ]
    gone = [
        "        {\n          " + where(r) + '\n          "status": {\n'  # (no comma: NCCL 2.28.9)
        f'            "unresponsive": {json.dumps(st["unresponsive"])},\n'
        f'            "considered_dead": {json.dumps(st["considered_dead"])}\n          }}\n        }}'
        for r, st in (missing or {}).items()
    ]
    return (
        '{\n  "nccl_version": "2.28.9",\n  "cuda_runtime_version": 12090,\n  "cuda_driver_version": 13000,\n'
        '  "timestamp": "2024-05-23 09:51:40",\n  "communicators_count": 1,\n  "communicators": [\n    {\n'
        '      "hash": "0x9a3c5e1f00d2b417",\n      "secondary_hash": "0x51e0c2d4a9b7f613:0x0c6a1f9e3d2b8475",\n'
        f'      "size": 16,\n      "ranks_count": {len(reported)},\n      "missing_ranks_count": {len(gone)},\n'
        '      "ranks": [\n'
        + ",\n".join(reported)
        + '\n      ],\n      "missing_ranks": [\n'
        + ",\n".join(gone)
        + '\n      ]\n    }\n  ],\n  "ras": {\n    "collection_time_sec": 0.004,\n'
        '    "timeouts_count": 0\n  }\n}\n'
    )


@pytest.mark.parametrize(
    ("report", "said"),
    [
        (
            _ras_json(missing={13: {"unresponsive": True, "considered_dead": True}}),
            "NCCL's RAS report (ncclras.json:9) lists process 41373 on node gpu-node-2 (GPU 5) as dead",
        ),
        (
            _ras_json(missing={13: {"unresponsive": True, "considered_dead": False}}),
            "NCCL's RAS report (ncclras.json:9) lists rank 13 (process 41373 on node gpu-node-2, GPU 5) as missing "
            "from the communicator (it did not answer)",
        ),
        (
            _ras_json(async_error={6: 6}),
            "NCCL's RAS report (ncclras.json:9) lists rank 6 (process 41366 on node gpu-node-1, GPU 6) as failing: "
            "rank 6 reported remote process exited or there was a network error (ncclRemoteError)",
        ),
        (
            _ras_json(behind=12),
            "NCCL's RAS report (ncclras.json:9) lists rank 12 (process 41372 on node gpu-node-2, GPU 4) as out of "
            "step: rank 12 has launched up to operation 4181",
        ),
    ],
)
def test_an_ncclras_json_report_names_the_process_the_others_waited_on_as_the_text_one_does(tmp_path, report, said):
    f, rc = _beside_the_chorus(tmp_path, 16, "ALLREDUCE", "ncclras.json", report)
    assert (f.wrapper, f.lines, f.parsed, f.unparsed) == ("ncclras-json", report.count("\n"), f.lines, 0)
    assert any("commas NCCL's writer left out were put back" in n for n in f.notes) == ('"unresponsive"' in report)
    assert rc["status"] == "inconclusive"
    assert rc["missing"].startswith(said)


def test_a_healthy_ncclras_json_report_is_one_informational_event(tmp_path):
    from forensics import ingest
    from forensics.diagnosis import collectives

    write_file(tmp_path / "ras.json", _ras_json())
    r = ingest(tmp_path)
    assert r.events["level"].cast(pl.String).to_list() == ["INFO"]
    assert r.events["ts"][0].isoformat() == "2024-05-23T09:51:40+00:00"  # (the report's own time, in --tz)
    assert collectives.ras_findings(r.events) is None


def test_a_truncated_ncclras_json_report_is_read_line_by_line_with_a_note(tmp_path):
    from forensics import ingest

    text = _ras_json(behind=3)
    write_file(tmp_path / "ras.json", text[: len(text) // 2])
    (f,) = ingest(tmp_path).files
    assert f.lines == f.parsed + f.folded + f.unparsed
    assert any(n.startswith("ncclras JSON report not read") and "line by line" in n for n in f.notes)


@pytest.mark.parametrize(("seq", "completed", "first"), [(1, -1, True), (4182, 4181, False)])
def test_a_timeout_in_the_groups_first_collective_points_at_the_transport(tmp_path, seq, completed, first):
    write_file(
        tmp_path / "ranks.log",
        "".join(
            f"[rank{r}]:[E1001 16:06:04.53713184{r} ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught collective "
            f"operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=128, NumelOut=128, "
            "Timeout(ms)=600000) ran for 600009 milliseconds before timing out.\n"
            f"[rank{r}]:[E1001 16:06:04.53735690{r} ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank {r}] Exception "
            f"(either an error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL work: {seq}, last "
            f"completed NCCL work: {completed}.\n"
            for r in range(4)
        ),
    )
    rc = analyze(tmp_path, year=2024).to_json()["incidents"][0]["root_cause"]
    assert rc["status"] == "inconclusive"
    said = "No collective of the group ever completed (ranks.log:1: its first one timed out): the communicator never"
    assert rc["missing"].startswith(said) == first
    assert ("NCCL_P2P_DISABLE=1" in rc["missing"]) == first


def test_timeouts_of_different_process_groups_are_not_read_as_a_rank_falling_behind():
    import polars as pl

    from forensics import schema as s
    from forensics.diagnosis import collectives

    ev = pl.DataFrame(
        {
            s.TS: [None, None],
            s.SOURCE: ["torch", "torch"],
            s.RANK: [0, 1],
            s.COLL_SEQ: [1, 5730],
            s.COLL_OP: ["ALLREDUCE", "BROADCAST"],
            s.MESSAGE: ["x", "y"],
        },
        schema_overrides={s.TS: pl.Datetime("us", "UTC"), s.RANK: pl.Int32},
    )
    assert collectives.silent_ranks(ev) is None
