"""Flight-recorder dumps read straight from the ranks' trace files: who the others waited on."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forensics import analyze, ingest
from forensics.diagnosis import collectives
from parsers.documents import flight_dump
from tests.conftest import write as write_file

T0_NS = 1_716_457_277_000_000_000  # 2024-05-23 09:41:17 UTC
RANKS = 8


def _entry(record: int, seq: int, *, op: str = "nccl:_allgather_base", state: str = "completed", **over) -> dict:
    """One ring-buffer entry as torch >= 2.4 writes it (`FlightRecorder::dump_entry`)."""
    started = state in ("started", "completed")
    e = {
        "record_id": record,
        "pg_id": 0,
        "process_group": ("0", "default_pg"),
        "collective_seq_id": seq,
        "p2p_seq_id": 0,
        "op_id": seq,
        "profiling_name": op,
        "time_created_ns": T0_NS + seq * 20_000_000,
        "duration_ms": 0.9 if state == "completed" else None,
        "input_sizes": [[65536]],
        "input_dtypes": ["BFloat16"],
        "output_sizes": [[524288]],
        "output_dtypes": ["BFloat16"],
        "state": state,
        "time_discovered_started_ns": T0_NS + seq * 20_000_000 + 5000 if started else None,
        "time_discovered_completed_ns": T0_NS + seq * 20_000_000 + 9000 if state == "completed" else None,
        "retired": state == "completed",
        "timeout_ms": 600000,
        "is_p2p": False,
        "thread_id": "140031224510272",
        "thread_name": "pt_main_thread",
        "frames": [
            {"name": "all_gather_into_tensor", "filename": "torch/distributed/distributed_c10d.py", "line": 3711},
            {"name": "forward", "filename": "vllm/distributed/parallel_state.py", "line": 412},
        ],
    }
    return e | over


def _dump(last: list[dict], members: int = RANKS, first_seq: int = 4170) -> dict:
    """A rank's dump: completed collectives up to the entries in `last`."""
    seq0 = last[0]["collective_seq_id"]
    done = [_entry(i, seq) for i, seq in enumerate(range(first_seq, seq0))]
    entries = done + [e | {"record_id": len(done) + i} for i, e in enumerate(last)]
    completed = max((e["collective_seq_id"] for e in entries if e["state"] == "completed"), default=-1)
    return {
        "version": "2.4",
        "nccl_version": "2.21.5",
        "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": str(list(range(members)))}},
        "pg_status": {
            "0": {
                "last_enqueued_collective": entries[-1]["collective_seq_id"],
                "last_started_collective": max(
                    e["collective_seq_id"] for e in entries if e["state"] in ("started", "completed")
                ),
                "last_completed_collective": completed,
            }
        },
        "entries": entries,
    }


def _write_dumps(root: Path, dumps: dict[int, dict], name: str = "nccl_trace_rank_{}") -> None:
    root.mkdir(parents=True, exist_ok=True)
    for rank, d in dumps.items():
        (root / name.format(rank)).write_bytes(pickle.dumps(d, protocol=2))


def _stuck(rank: int, state: str = "started", **over) -> dict:
    """Rank `rank` enqueued collective 4182 and waits in it (`started`: on its GPU)."""
    return _dump([_entry(0, 4182, state=state, **over)])


def _watchdogs(ranks: list[int]) -> str:
    """The timeouts the waiting ranks log once the collective's 600 s are up."""
    return "".join(
        f"[rank{r}]:[E0523 09:51:18.2041{r}7093 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=4182, OpType=_ALLGATHER_BASE, NumelIn=65536, NumelOut=524288, "
        "Timeout(ms)=600000) ran for 600031 milliseconds before timing out.\n"
        for r in ranks
    )


def test_the_rank_whose_dump_stops_a_collective_early_is_named_as_the_one_the_others_waited_on(tmp_path):
    # Rank 5 never enqueued collective 4182; the other seven started it, waited 600 s, and
    # their watchdogs fired. Every rank dumped; nobody ran torchfrtrace.
    dumps = {r: _stuck(r) for r in range(RANKS) if r != 5} | {5: _dump([_entry(0, 4181)])}
    _write_dumps(tmp_path / "fr", dumps)
    write_file(tmp_path / "ranks.log", _watchdogs([r for r in range(RANKS) if r != 5]))
    analysis = analyze(tmp_path, year=2024)
    incidents = analysis.to_json()["incidents"]
    assert len(incidents) == 1  # (the hang the dumps record and the timeouts 10 min later are one incident)
    rc = incidents[0]["root_cause"]
    assert rc["status"] == "inconclusive"
    assert rc["missing"].startswith(
        "The flight recorder's dumps (fr/nccl_trace_rank_5:13) show rank 5 never joined nccl:_allgather_base "
        "(sequence number 4182): the straggler"
    )
    (f,) = [f for f in analysis.ingest.files if f.file == "fr/nccl_trace_rank_0"]
    assert (f.wrapper, f.lines, f.parsed, f.unparsed) == ("flight-recorder-pickle", 14, 14, 0)  # (header + 13 entries)


@pytest.mark.parametrize(
    ("dumps", "said"),
    [
        (  # rank 6 joined with another collective: a desync
            {r: _stuck(r) for r in range(RANKS) if r != 6} | {6: _stuck(6, profiling_name="nccl:all_reduce")},
            "the flight recorder's dumps (nccl_trace_rank_6:14) name rank 6 as the culprit of nccl:_allgather_base "
            "(sequence number 4182): ran nccl:all_reduce where the others ran nccl:_allgather_base; the ranks ran "
            "different code",
        ),
        (  # rank 2 joined with another size
            {r: _stuck(r) for r in range(RANKS) if r != 2} | {2: _stuck(2, input_sizes=[[32768]])},
            "the flight recorder's dumps (nccl_trace_rank_2:14) name rank 2 as the culprit of nccl:_allgather_base "
            "(sequence number 4182): joined with (input [[32768]] BFloat16) from forward "
            "(vllm/distributed/parallel_state.py:412) where the others had (input [[65536]] BFloat16) from forward",
        ),
        (  # rank 4 issued the same collective from another place in the code: out of step
            {r: _stuck(r) for r in range(RANKS) if r != 4}
            | {4: _stuck(4, frames=[{"name": "sample", "filename": "vllm/v1/sample/sampler.py", "line": 88}])},
            "the flight recorder's dumps (nccl_trace_rank_4:14) name rank 4 as the culprit of nccl:_allgather_base "
            "(sequence number 4182): joined with (input [[65536]] BFloat16) from sample (v1/sample/sampler.py:88) "
            "where the others had (input [[65536]] BFloat16) from forward (vllm/distributed/parallel_state.py:412)",
        ),
        (  # rank 3 enqueued it, but its GPU never started it: a kernel before it hung
            {r: _stuck(r) for r in range(RANKS) if r != 3} | {3: _stuck(3, state="scheduled")},
            "the flight recorder's dumps (nccl_trace_rank_3:14) show rank 3 enqueued nccl:_allgather_base (sequence "
            "number 4182) but never started it on the GPU while the other ranks had",
        ),
        (  # ranks 4-7 left no dump (dead, or hung where they could not answer)
            {r: _stuck(r) for r in range(4)},
            "the flight recorder's dumps (nccl_trace_rank_0:14) show every dumped rank waiting in "
            "nccl:_allgather_base (sequence number 4182), and no dump from ranks 4-7: the straggler is among them",
        ),
    ],
)
def test_the_dumps_name_the_odd_rank_out_when_every_rank_reached_the_collective(tmp_path, dumps, said):
    _write_dumps(tmp_path, dumps)
    finding = collectives.dump_findings(ingest(tmp_path).events)
    assert finding is not None and finding.sentence().startswith(said)


def test_the_dumps_collectives_are_not_read_as_watchdog_timeouts(tmp_path):
    # 63 ranks wait in the collective their dumps record; none of them logged a timeout.
    dumps = {r: _stuck(r) for r in range(64) if r != 17} | {17: _dump([_entry(0, 4181)])}
    for d in dumps.values():
        d["pg_config"]["0"]["ranks"] = str(list(range(64)))
    _write_dumps(tmp_path, dumps)
    ev = ingest(tmp_path).events
    assert collectives.silent_ranks(ev) is None
    assert collectives.dump_findings(ev).missing == [17]


def test_rank_lists_read_as_ranges():
    assert collectives._span([0, 1, 2, 3, 4, 6, 7]) == "0-4, 6, 7"
    assert collectives._span(list(range(64))[:17] + list(range(18, 64))) == "0-16, 18-63"
    assert collectives._span([5]) == "5"


def test_dumps_where_every_collective_completed_name_no_one(tmp_path):
    _write_dumps(tmp_path, {r: _dump([_entry(0, 4182)]) for r in range(RANKS)})
    r = ingest(tmp_path)
    assert collectives.dump_findings(r.events) is None
    assert set(r.events["level"].cast(pl.String)) == {"INFO"}  # (nothing in flight: no symptom)


def test_the_json_form_of_a_dump_reads_as_the_pickle_does(tmp_path):
    # `_dump_nccl_trace_json`: the same dictionary, lists for tuples, no stacks, strings in pg_status.
    dumps = {r: _stuck(r) for r in range(RANKS) if r != 1} | {1: _dump([_entry(0, 4181)])}
    for rank, d in dumps.items():
        d = d | {"entries": [{k: v for k, v in e.items() if k != "frames"} for e in d["entries"]]}
        d["pg_status"] = {g: {k: str(v) for k, v in st.items()} for g, st in d["pg_status"].items()}
        write_file(tmp_path / f"nccl_trace_rank_{rank}.json", json.dumps(d))
    r = ingest(tmp_path)
    assert {f.wrapper for f in r.files} == {"flight-recorder-json"}
    finding = collectives.dump_findings(r.events)
    assert (finding.missing, finding.seq, finding.op) == ([1], 4182, "nccl:_allgather_base")


def test_the_stuck_collective_is_timed_when_it_was_enqueued(tmp_path):
    _write_dumps(tmp_path, {0: _stuck(0)})
    ev = ingest(tmp_path).events
    (row,) = ev.filter(pl.col("level").cast(pl.String) == "WARNING").iter_rows(named=True)
    assert row["ts"].isoformat() == "2024-05-23T09:42:40.640000+00:00"  # (T0 + 4182 * 20 ms)
    assert (row["ts_quality"], row["rank"], row["coll_seq"], row["pg"]) == ("exact", 0, 4182, "0")
    assert row["pod"] is None  # (the file is named for its rank, not a pod)
    assert "not completed (started)" in row["message"]


def test_a_p2p_op_still_in_flight_beside_the_last_collective_is_its_own_event(tmp_path):
    send = _entry(0, 0, op="nccl:send 0->1", state="scheduled", is_p2p=True, p2p_seq_id=9, collective_seq_id=4182)
    dump = _dump([_entry(0, 4182, state="started"), send])
    _write_dumps(tmp_path, {0: dump})
    warned = ingest(tmp_path).events.filter(pl.col("level").cast(pl.String) == "WARNING")["message"].to_list()
    assert warned == [
        "flight recorder: rank 0's last collective of PG 0 (default_pg; ranks [0, 1, 2, 3, 4, 5, 6, 7]) is #4182 "
        "nccl:_allgather_base (input [[65536]] BFloat16) from forward (vllm/distributed/parallel_state.py:412), not "
        "completed (started); last completed #4181",
        "flight recorder: rank 0's p2p op #9 nccl:send 0->1 (input [[65536]] BFloat16) from forward "
        "(vllm/distributed/parallel_state.py:412) of PG 0 (default_pg) not completed (scheduled)",
    ]


def test_a_dump_large_enough_to_be_read_in_pieces_is_still_read_whole(tmp_path, monkeypatch):
    # A dump's frames (paths, function names) make most of its bytes text: past the size
    # where logs are streamed it must not be taken for one.
    from forensics.ingestion import files as _files

    monkeypatch.setattr(_files, "SEGMENT_CHARS", 1024)
    dump = _stuck(0)
    site = "/usr/local/lib/python3.12/dist-packages"
    for e in dump["entries"]:  # (a serving stack: ~30 frames, each its own path)
        e["frames"] = [
            {"name": f"forward_{i}", "filename": f"{site}/vllm/model_executor/layers/layer_{i}.py", "line": 100 + i}
            for i in range(30)
        ]
    _write_dumps(tmp_path, {0: dump})
    data = (tmp_path / "nccl_trace_rank_0").read_bytes()
    assert len(data) > 2 * 1024 and not _files.is_binary(data)
    (f,) = ingest(tmp_path).files
    assert (f.wrapper, f.unparsed) == ("flight-recorder-pickle", 0)


def test_a_dump_that_refers_to_python_code_is_refused_without_running_it(tmp_path):
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    (tmp_path / "nccl_trace_rank_0").write_bytes(pickle.dumps({"version": "2.4", "pg_config": Payload()}, protocol=2))
    write_file(tmp_path / "ranks.log", _watchdogs([1]))
    r = ingest(tmp_path, year=2024)
    assert not marker.exists()
    (skip,) = r.skipped
    assert skip.file == "nccl_trace_rank_0"
    assert skip.reason.startswith("flight-recorder dump not read: it refers to Python code (")
    assert skip.reason.endswith("system), which is never loaded")
    assert r.n_events == 1  # (the rest goes on)


def test_a_truncated_dump_is_skipped_with_what_to_do(tmp_path):
    data = pickle.dumps(_stuck(0), protocol=2)
    (tmp_path / "nccl_trace_rank_0").write_bytes(data[: len(data) // 2])
    _write_dumps(tmp_path, {1: _stuck(1)})
    r = ingest(tmp_path)
    (skip,) = r.skipped
    assert "truncated? copy it again from the node" in skip.reason
    assert [f.file for f in r.files] == ["nccl_trace_rank_1"]


def test_a_dump_without_a_rank_in_its_name_is_listed_with_a_note(tmp_path):
    (tmp_path / "trace.pkl").write_bytes(pickle.dumps(_stuck(0), protocol=2))
    r = ingest(tmp_path)
    (f,) = r.files
    assert r.events["rank"].null_count() == r.n_events > 0
    assert any("no rank at the end of its file name" in n for n in f.notes)
    assert collectives.dump_findings(r.events) is None


REAL_DUMP = textwrap.dedent(
    """
    import os, sys
    import torch, torch.distributed as dist
    import torch.multiprocessing as mp
    from torch._C import _distributed_c10d as c10d

    def run(rank, out):
        dist.init_process_group("gloo", init_method=f"file://{out}/store", rank=rank, world_size=2)
        t = torch.ones(8)
        for _ in range(3):
            dist.all_reduce(t)
        if rank == 0:
            dist.all_reduce(t, async_op=True)  # rank 1 never joins
        with open(os.path.join(out, f"nccl_trace_rank_{rank}"), "wb") as f:
            f.write(c10d._dump_fr_trace())
        os._exit(0)

    if __name__ == "__main__":
        os.environ["TORCH_FR_BUFFER_SIZE"] = "100"
        mp.start_processes(run, args=(sys.argv[1],), nprocs=2, start_method="spawn", join=True)
    """
)


def test_a_dump_written_by_torch_itself_names_the_rank_that_never_joined(tmp_path):
    pytest.importorskip("torch")
    from torch._C import _distributed_c10d as c10d

    if not hasattr(c10d, "_dump_fr_trace"):
        pytest.skip("this torch has no gloo flight recorder (torch < 2.7)")
    out = tmp_path / "dumps"
    out.mkdir()
    script = tmp_path / "gen.py"
    script.write_text(REAL_DUMP)
    done = subprocess.run([sys.executable, str(script), str(out)], capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    (out / "store").unlink(missing_ok=True)
    finding = collectives.dump_findings(ingest(out).events)
    assert (finding.missing, finding.seq, finding.op) == ([1], 4, "gloo:all_reduce")


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
_KEYS = ("process_group", "collective_seq_id", "profiling_name", "state", "retired", "is_p2p", "time_created_ns")


@settings(max_examples=150, deadline=None)
@given(
    entries=st.lists(st.dictionaries(st.sampled_from(_KEYS), _VALUES) | _VALUES, max_size=6),
    groups=_VALUES,
    status=_VALUES,
)
def test_any_dump_shaped_document_gives_events_and_never_raises(entries, groups, status):
    data = json.dumps({"version": "2.4", "pg_config": groups, "pg_status": status, "entries": entries}).encode()
    try:
        dump = flight_dump.read(data, flight_dump.sniff(data) or "json", "nccl_trace_rank_3")
    except ValueError as e:  # (a document that is not torch's dictionary: said so)
        assert str(e).startswith("flight-recorder dump not read")
        return
    rows = flight_dump.rows(dump)
    assert rows and all(1 <= r["line"] <= dump.records for r in rows)


def test_a_dump_whose_lists_share_themselves_is_written_short_not_spelled_out(tmp_path):
    # 40 bytes of pickle memo can name a list of 2**40 leaves; no message may spell it out.
    nested: list = [65536]
    for _ in range(40):
        nested = [nested, nested]
    _write_dumps(tmp_path, {0: _dump([_entry(0, 4182, state="started", input_sizes=nested, profiling_name=nested)])})
    (f,) = ingest(tmp_path).files
    assert f.unparsed == 0 and f.events >= 1


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.binary(max_size=200))
def test_any_bytes_behind_a_pickle_header_are_read_or_refused_with_a_message(before, after):
    data = b"\x80\x02" + before + b"pg_config" + after
    assert flight_dump.sniff(data) == "pickle"
    try:
        dump = flight_dump.read(data, "pickle", "nccl_trace_rank_0")
    except ValueError as e:
        assert str(e).startswith("flight-recorder dump not read")
        return
    assert flight_dump.rows(dump)
