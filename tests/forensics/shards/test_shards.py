"""The sharded pipeline (`--engine pool|ray`) gives what the local pipeline gives.

Run here on the serial executor and a local process pool; `test_shards_ray.py` runs
the same pipeline on a real local Ray cluster. Shards are made small on purpose
(`shard_bytes`) so that every sample is cut into several shards.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from forensics import ingestion, mining
from forensics import schema as s
from forensics.cli import app
from forensics.errors import ForensicsError
from forensics.ingestion import files as _files
from forensics.ingestion import reference
from forensics.shards import pipeline as scaleout
from forensics.shards.engines import SerialExecutor
from tests.conftest import SAMPLES, write

SCENARIOS = sorted(p.name for p in SAMPLES.iterdir() if (p / "ground_truth.json").is_file())
SMALL_SHARDS = 150_000


def _sharded(root: Path, dataset: Path, shard_bytes: int = SMALL_SHARDS) -> scaleout.Sharded:
    return scaleout.ingest_and_mine([root], SerialExecutor(), dataset, shard_bytes=shard_bytes)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_sharded_run_gives_the_local_events_accounting_and_templates(scenario, tmp_path):
    root = SAMPLES / scenario
    local = ingestion.ingest(root)
    mined = mining.mine(local.events)
    size = sum(f.stat().st_size for f in root.rglob("*") if f.is_file())
    sharded = _sharded(root, tmp_path / "events", shard_bytes=min(SMALL_SHARDS, size // 5))

    assert sharded.shards >= 3, "the sample should be cut into several shards"
    assert sharded.ingest.events.equals(local.events)
    assert sharded.ingest.metrics.equals(local.metrics)
    assert sharded.ingest.accounting() == local.accounting()
    # The second Drain pass puts back together what the shards mined apart: on these
    # incidents every row gets the template it gets from one Drain over all lines.
    assert sharded.mined.template_ids.equals(mined.template_ids)
    assert sharded.mined.templates.sort(mining.TEMPLATE_ID).equals(mined.templates.sort(mining.TEMPLATE_ID))


def test_second_pass_merges_a_statement_that_shards_mined_apart():
    # Shard 1 saw one engine name only, so its "template" kept the literal; shard 2 saw three.
    shard_templates = pl.DataFrame(
        {
            s.SOURCE: ["vllm", "vllm", "vllm", "nccl"],
            mining.TEMPLATE: [
                "engine core alpha restarted after <NUM> s",
                "engine core <*> restarted after <NUM> s",
                "Loading weights took <NUM> GB",
                "NET/IB : Got completion from peer <IP> with status=<NUM> opcode=<NUM>",
            ],
            mining.COUNT: [40, 12, 8, 3],
        }
    )
    merged = mining.merge_shards(shard_templates)
    by_text = dict(zip(merged["shard_template"], merged[mining.TEMPLATE_ID], strict=True))
    assert by_text["engine core alpha restarted after <NUM> s"] == by_text["engine core <*> restarted after <NUM> s"]
    assert set(merged.filter(pl.col("shard_template").str.starts_with("engine"))[mining.TEMPLATE]) == {
        "engine core <*> restarted after <NUM> s"
    }
    assert by_text["Loading weights took <NUM> GB"] != by_text["engine core <*> restarted after <NUM> s"]
    # The global id is the content hash of the global template, as in a local run.
    assert by_text["Loading weights took <NUM> GB"] == mining.template_id("vllm", "Loading weights took <NUM> GB")


def test_a_statement_whose_value_different_shards_masked_differently_keeps_its_key():
    # One shard saw `vis=708` (NUM), another `vis=c0000700` (HEX): the statement is one, and its
    # template keeps `vis=`, so that the second pass can still join it with the shards that saw both.
    from forensics.mining.drain import merge_by_shape

    got = merge_by_shape(
        [("ui", "setSystemUiVisibility vis=<NUM> mask=<HEX>"), ("ui", "setSystemUiVisibility vis=<HEX> mask=<HEX>")]
    )
    assert set(got.values()) == {"setSystemUiVisibility vis=<*> mask=<HEX>"}


def test_second_pass_does_not_depend_on_the_order_shards_finished_in():
    rows = [
        ("vllm", f"request {w} finished in <NUM> ms on worker <NUM>", n)
        for n, w in enumerate(["alpha", "beta", "gamma", "<*>", "delta"], start=3)
    ] + [
        ("vllm", "Avg prompt throughput: <NUM> tokens/s", 50),
        ("k8s-event", "Back-off restarting failed container", 7),
    ]
    first = mining.merge_shards(pl.DataFrame(rows, schema=[s.SOURCE, mining.TEMPLATE, mining.COUNT], orient="row"))
    for seed in range(5):
        random.Random(seed).shuffle(rows)
        again = mining.merge_shards(pl.DataFrame(rows, schema=[s.SOURCE, mining.TEMPLATE, mining.COUNT], orient="row"))
        assert again.equals(first)


def test_plan_keeps_path_order_and_never_splits_a_file():
    files = [_files.InputFile(Path(f"/x/{n}"), f"{n}", size, 0.0) for n, size in enumerate([5, 5, 30, 1, 1, 1])]
    shards = scaleout.plan(files, shard_bytes=10)
    assert [[f.rel for f in g] for g in shards] == [["0", "1"], ["2"], ["3", "4", "5"]]


def test_a_shard_takes_the_year_from_a_dated_log_in_another_shard(tmp_path):
    # klog lines carry no year; the only dated log is another file, so another shard.
    write(
        tmp_path / "node" / "kubelet.log",
        'E1231 23:59:58.100000    2154 kubelet.go:2412] "Skipping pod synchronization" err="PLEG is not healthy"\n'
        'E0101 00:00:03.500000    2154 kubelet.go:2412] "Skipping pod synchronization" err="PLEG is not healthy"\n',
    )
    write(
        tmp_path / "pods" / "vllm-7f9c.log",
        "2030-12-31T23:59:50.000000000Z INFO 12-31 23:59:50 [engine.py:310] Engine step ok\n"
        "2031-01-01T00:00:05.000000000Z INFO 01-01 00:00:05 [engine.py:310] Engine step ok\n",
    )
    sharded = _sharded(tmp_path, tmp_path.parent / "ds-year", shard_bytes=1)
    assert sharded.shards == 2
    kubelet = sharded.ingest.events.filter(pl.col(s.FILE) == "node/kubelet.log")
    assert kubelet[s.TS].to_list() == [
        datetime(2030, 12, 31, 23, 59, 58, 100000, tzinfo=UTC),
        datetime(2031, 1, 1, 0, 0, 3, 500000, tzinfo=UTC),
    ]
    assert set(kubelet[s.TS_QUALITY]) == {"inferred-year"}
    assert sharded.ingest.events.equals(ingestion.ingest(tmp_path).events)


def test_rows_are_written_by_hour_and_source_and_join_to_global_templates(tmp_path):
    root = SAMPLES / "nccl-network"
    dataset = tmp_path / "events"
    sharded = _sharded(root, dataset)
    parts = sorted({p.parent.relative_to(dataset).as_posix() for p in dataset.glob(scaleout.ROWS_GLOB)})
    assert parts and all(p.startswith("hour=") and "/source=" in p for p in parts)
    expected = (
        sharded.ingest.events.select(
            pl.format(
                "hour={}/source={}",
                pl.col(s.TS).dt.strftime("%Y-%m-%dT%H").fill_null("__HIVE_DEFAULT_PARTITION__"),
                pl.col(s.SOURCE),
            )
        )
        .to_series()
        .unique()
        .sort()
        .to_list()
    )
    assert parts == expected
    assert "hour=2025-03-02T09/source=nccl" in parts
    # Row data keeps its shard template ids; the mapping table joins them to global ids.
    rows = pl.read_parquet(dataset / "hour=*/source=*/*.parquet", hive_partitioning=True)
    mapping = pl.read_parquet(dataset / scaleout.MAPPING_FILE)
    joined = rows.join(mapping.select(scaleout.SHARD_TEMPLATE_ID, mining.TEMPLATE_ID), on=scaleout.SHARD_TEMPLATE_ID)
    assert joined.height == rows.height == sharded.ingest.events.height
    assert set(joined[mining.TEMPLATE_ID]) == set(sharded.mined.templates[mining.TEMPLATE_ID])
    assert rows.schema[mining.PARAMS] == pl.List(pl.String)
    minutes = pl.read_parquet(dataset / scaleout.MINUTES_FILE)
    assert minutes[mining.COUNT].sum() == rows.height


def test_a_directory_that_is_not_a_dataset_is_never_emptied(tmp_path):
    keep = write(tmp_path / "events" / "notes.txt", "my notes\n")
    with pytest.raises(ForensicsError, match="not a forensics events dataset"):
        _sharded(SAMPLES / "gpu-oom", tmp_path / "events")
    assert keep.read_text() == "my notes\n"


def test_a_rerun_replaces_the_previous_rows(tmp_path):
    dataset = tmp_path / "events"
    _sharded(SAMPLES / "gpu-oom", dataset, shard_bytes=50_000)
    first = sorted(p.name for p in dataset.rglob("*.parquet"))
    again = _sharded(SAMPLES / "gpu-oom", dataset, shard_bytes=10_000_000)
    assert again.shards == 1
    assert sorted(p.name for p in dataset.rglob("*.parquet")) != first
    assert not [p for p in dataset.rglob("shard-000001-*.parquet")]


def test_cli_pool_engine_writes_the_same_analysis_as_local(tmp_path):
    runner = CliRunner()
    sample = str(SAMPLES / "kv-pressure")
    local = runner.invoke(app, ["analyze", sample, "--out", str(tmp_path / "local"), "-q"])
    pool = runner.invoke(
        app, ["analyze", sample, "--out", str(tmp_path / "pool"), "-q", "--engine", "pool", "--workers", "2"]
    )
    assert local.exit_code == 0, local.output
    assert pool.exit_code == 0, pool.output
    assert (tmp_path / "pool" / "analysis.json").read_text() == (tmp_path / "local" / "analysis.json").read_text()
    assert (tmp_path / "pool" / "postmortem.md").read_text() == (tmp_path / "local" / "postmortem.md").read_text()
    assert (tmp_path / "pool" / "events" / scaleout.MAPPING_FILE).is_file()
    assert not (tmp_path / "pool" / "events.parquet").exists()


def test_cli_ingest_with_the_pool_engine_reports_the_dataset(tmp_path):
    result = CliRunner().invoke(
        app, ["ingest", str(SAMPLES / "gpu-oom"), "--out", str(tmp_path), "-q", "--engine", "pool", "--workers", "2"]
    )
    assert result.exit_code == 0, result.output
    acct = json.loads((tmp_path / "ingest.json").read_text())
    assert acct["dataset"] == str(tmp_path / "events")
    assert acct["unparsed"] == 0 and acct["lines"] == acct["parsed"] + acct["folded"]


def test_cli_rejects_an_unknown_engine(tmp_path):
    result = CliRunner().invoke(app, ["analyze", str(SAMPLES / "gpu-oom"), "--engine", "spark", "-q"])
    assert result.exit_code != 0
    assert "unknown --engine 'spark'" in str(result.exception) + result.output


def test_reference_pass_reads_dated_lines_from_the_head_of_a_gzipped_log(tmp_path):
    import gzip

    dated = "".join(
        f"2029-12-31T23:{m:02d}:00.000000000Z INFO 12-31 23:{m:02d}:00 [engine.py:310] Engine step ok\n"
        for m in range(50)
    )
    (tmp_path / "pods").mkdir()
    (tmp_path / "pods" / "vllm-0.log.gz").write_bytes(gzip.compress(dated.encode()))
    write(tmp_path / "node" / "kubelet.log", 'E0101 00:00:07.000000    2154 kubelet.go:2412] "PLEG is not healthy"\n')
    refs = ingestion.reference_times(_files.discover([tmp_path])[0])
    assert refs["pods/vllm-0.log.gz"].year == 2029
    sharded = _sharded(tmp_path, tmp_path.parent / "ds-gz", shard_bytes=1)
    kubelet = sharded.ingest.events.filter(pl.col(s.FILE) == "node/kubelet.log")
    assert kubelet[s.TS].to_list() == [datetime(2030, 1, 1, 0, 0, 7, tzinfo=UTC)]


def test_read_head_stops_at_the_last_whole_line_within_the_limit(tmp_path):
    import gzip

    data = "".join(f"I0101 00:00:{i % 60:02d}.000000 1 x.go:1] line {i}\n" for i in range(5000)).encode()
    (tmp_path / "a.log").write_bytes(data)
    (tmp_path / "a.log.gz").write_bytes(gzip.compress(data))
    for name in ("a.log", "a.log.gz"):
        f = _files.InputFile(tmp_path / name, name, (tmp_path / name).stat().st_size, 0.0)
        head = _files.read_head(f, 1000)
        assert 900 < len(head) <= 1000 and head.endswith(b"\n") and data.startswith(head)
        assert _files.read_head(f, 10**9) == data


def test_reference_pass_reads_further_into_a_log_whose_head_has_no_dated_line(tmp_path):
    import gzip

    # A vLLM log's start-up (no year, no wrapper) runs past the first head read; its first
    # dated line (a Python logging stamp) comes after it. Gzipped: the size on disk is small.
    undated = "".join(
        f"INFO 12-31 23:59:{i % 60:02d} [model_runner.py:1071] Loading weights took {i} GiB\n" for i in range(6000)
    )
    dated = "2029-12-31 23:59:58,104 - torch.distributed.elastic - INFO - rendezvous complete\n"
    data = (undated + dated).encode()
    assert len(data) > reference.REFERENCE_HEAD_BYTES[0]
    (tmp_path / "vllm-0.log.gz").write_bytes(gzip.compress(data))
    refs = ingestion.reference_times(_files.discover([tmp_path])[0])
    assert refs == {"vllm-0.log.gz": datetime(2029, 12, 31, 23, 59, 58, 104000, tzinfo=UTC)}


def test_head_of_says_whether_it_read_the_whole_file(tmp_path):
    data = b"".join(b"I0101 00:00:01.000000 1 x.go:1] line %d\n" % i for i in range(100))
    (tmp_path / "a.log").write_bytes(data)
    f = _files.InputFile(tmp_path / "a.log", "a.log", len(data), 0.0)
    assert _files.head_of(f, len(data) + 1) == (data, True)
    head, whole = _files.head_of(f, len(data) - 1)
    assert not whole and data.startswith(head) and len(head) < len(data)


def test_sixteen_contiguous_shards_and_the_second_pass_group_like_one_miner():
    # The CI-sized analogue of `bench/loghub_accuracy.py --shards 16` (Loghub data stays
    # outside the project). Each shard sees one worker name only, so its own miner keeps the
    # name as a literal (`worker alpha`), where one miner over all lines makes it `<*>`:
    # without the second pass those would be 16 templates.
    names = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa".split()
    rows = []
    for shard, name in enumerate(names):
        for i in range(60):
            rows.append(("vllm", f"KV offload worker {name} flushed {i * 7 + shard} blocks to host memory"))
            rows.append(("vllm", f"Engine 000: Avg prompt throughput: {i}.5 tokens/s, Running: {i % 9} reqs"))
            rows.append(("nccl", f"NET/IB : GPU Direct RDMA Enabled for HCA {i % 4} 'mlx5_{i % 4}'"))
    ev = pl.DataFrame(rows, schema=[s.SOURCE, s.MESSAGE], orient="row")
    single, _, _ = mining.cluster(ev[s.SOURCE], ev[s.MESSAGE])
    size = ev.height // 16
    shard_text, tables = [], []
    for k in range(0, ev.height, size):
        part = ev.slice(k, size)
        ids, names_, _ = mining.cluster(part[s.SOURCE], part[s.MESSAGE])
        text = dict(zip(names_[mining.TEMPLATE_ID], names_[mining.TEMPLATE], strict=True))
        shard_text += list(zip(part[s.SOURCE].to_list(), [text[i] for i in ids], strict=True))
        tables.append(
            pl.DataFrame({s.SOURCE: part[s.SOURCE], mining.TEMPLATE: [text[i] for i in ids]})
            .group_by(s.SOURCE, mining.TEMPLATE)
            .len(mining.COUNT)
        )
    merged = mining.merge_shards(pl.concat(tables))
    to_global = {
        (src, t): g
        for src, t, g in zip(merged[s.SOURCE], merged["shard_template"], merged[mining.TEMPLATE_ID], strict=True)
    }

    def grouping_accuracy(pred: list) -> float:
        """Loghub's GA of `pred` against the single miner's groups."""
        pairs = pl.DataFrame({"one": single, "pred": [str(p) for p in pred]})
        groups = pairs.group_by("pred").agg(pl.col("one").n_unique().alias("k"), pl.col("one").first(), pl.len())
        sizes = dict(pairs.group_by("one").len().iter_rows())
        return sum(n for _, k, one, n in groups.iter_rows() if k == 1 and sizes[one] == n) / len(pred)

    assert grouping_accuracy(shard_text) < 0.7  # shard templates alone split the worker lines 16 ways
    assert grouping_accuracy([to_global[k] for k in shard_text]) >= 0.99


def test_one_file_per_shard_still_gives_the_local_result(tmp_path):
    # The harshest cut: every file alone, including shards holding only a trace or a JSON
    # document that is not a log (nothing to parse, nothing to mine).
    root = SAMPLES / "cache-corruption"
    sharded = _sharded(root, tmp_path / "events", shard_bytes=1)
    local = ingestion.ingest(root)
    assert sharded.shards == len(_files.discover([root])[0])
    assert sharded.ingest.events.equals(local.events)
    assert sharded.ingest.accounting() == local.accounting()
    assert sharded.mined.template_ids.equals(mining.mine(local.events).template_ids)
