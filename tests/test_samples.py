"""Sample incidents: deterministic generation, shipped copies, realistic formats, ground truth."""

from __future__ import annotations

import filecmp
import json
from pathlib import Path

import polars as pl
import pytest

from forensics import ingest
from forensics import schema as s
from samples.generate import HOLDOUT, SCENARIOS, generate
from tests.conftest import SAMPLES

SHIPPED = SAMPLES
SHIPPED_NAMES = sorted(n for n in SCENARIOS if n not in HOLDOUT)


def _tree(d: Path) -> list[str]:
    return sorted(p.relative_to(d).as_posix() for p in d.rglob("*") if p.is_file())


@pytest.mark.parametrize("name", SHIPPED_NAMES)
def test_shipped_sample_is_regenerated_byte_for_byte(name, tmp_path):
    generate(name, tmp_path / name)
    assert _tree(tmp_path / name) == _tree(SHIPPED / name)
    for rel in _tree(SHIPPED / name):
        assert filecmp.cmp(tmp_path / name / rel, SHIPPED / name / rel, shallow=False), f"{name}/{rel} differs"


@pytest.mark.parametrize("name", SHIPPED_NAMES)
def test_sample_ingests_with_zero_unparsed_lines(name):
    r = ingest(SHIPPED / name)
    assert r.unparsed == 0 and r.lines > 2000
    assert {k.file for k in r.skipped} == {"ground_truth.json", "trace.jsonl"}
    assert r.traces == ["trace.jsonl"]
    assert r.events.filter(pl.col(s.TS).is_null()).height == 0


@pytest.mark.parametrize("name", SHIPPED_NAMES)
def test_sample_is_small_enough_to_ship(name):
    assert sum(p.stat().st_size for p in (SHIPPED / name).rglob("*") if p.is_file()) <= 2 * 1024 * 1024


def test_a_different_seed_gives_a_different_incident(tmp_path):
    generate("gpu-oom", tmp_path / "a", seed=1)
    generate("gpu-oom", tmp_path / "b", seed=2)
    assert (tmp_path / "a/events.json").read_text() != (tmp_path / "b/events.json").read_text()


def test_scale_grows_the_baseline_traffic(tmp_path):
    generate("healthy", tmp_path / "x1", scale=1)
    generate("healthy", tmp_path / "x4", scale=4)

    def access_lines(d: Path) -> int:
        return sum(p.read_text().count('"POST /v1/chat/completions') for p in d.rglob("*.log"))

    assert access_lines(tmp_path / "x4") > 3 * access_lines(tmp_path / "x1")


def test_cache_corruption_story_has_the_tell_the_fault_and_the_loud_symptoms():
    d = SHIPPED / "cache-corruption"
    truth = json.loads((d / "ground_truth.json").read_text())
    assert truth["root_cause"]["category"] == "kv-cache" and truth["root_cause"]["host"].startswith("gpu-node-")
    r = ingest(d)
    ev, m = r.events, r.metrics
    corrupt = ev.filter(pl.col(s.MESSAGE).str.starts_with("Cache corruption detected in block"))
    watchdog = ev.filter(pl.col(s.COLL_OP) == "ALLREDUCE")
    backoff = ev.filter(pl.col(s.K8S_REASON) == "BackOff")
    assert corrupt.height >= 4 and watchdog.height >= 4 and backoff.height >= 4
    # The loud symptoms come after the first corruption.
    assert watchdog[s.TS].min() > corrupt[s.TS].min() and backoff[s.TS].min() > corrupt[s.TS].min()
    # The tell: KV usage reaches 100% while nothing waits.
    kv = m.filter((pl.col(s.METRIC) == "gpu_kv_cache_usage") & (pl.col(s.VALUE) >= 0.999))
    assert kv.height > 0
    at_full = m.filter(pl.col(s.METRIC) == "waiting").join(kv.select(s.FILE, s.LINE), on=[s.FILE, s.LINE])
    assert at_full[s.VALUE].max() == 0
    # Pods are collected both ways.
    files = _tree(d)
    assert any(f.startswith("kubectl-logs/") for f in files) and any("/var/log/pods/" in f for f in files)


def test_healthy_sample_has_no_errors_beyond_noise():
    ev = ingest(SHIPPED / "healthy").events
    assert ev.filter(pl.col(s.LEVEL).is_in(["ERROR", "CRITICAL"])).height == 0
    assert ev.filter(pl.col(s.HTTP_STATUS) >= 500).height == 0


def test_cli_sample_writes_a_scenario(tmp_path):
    import subprocess
    import sys

    p = subprocess.run(
        [sys.executable, "-m", "forensics", "sample", "node-failure", str(tmp_path / "nf")],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    assert "root cause: node on gpu-node-3" in p.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "forensics", "sample", "nope", str(tmp_path / "x")], capture_output=True, text=True
    )
    assert bad.returncode == 1 and "choose one of" in bad.stderr


@pytest.mark.parametrize("name", ["holdout-gpu-xid", "holdout-ray-socket", "holdout-node-memory"])
def test_holdout_scenarios_generate_in_other_vllm_generations_and_ingest_cleanly(name, tmp_path):
    truth = generate(name, tmp_path / name)
    r = ingest(tmp_path / name)
    assert r.unparsed == 0 and truth["root_cause"]["host"]
    if name == "holdout-gpu-xid":
        assert r.events.filter(pl.col(s.SOURCE) == "kernel").height == 2
        assert r.events.filter(pl.col(s.PROCESS) == "VllmWorkerProcess").height > 0
    if name == "holdout-ray-socket":
        assert r.events.filter(pl.col(s.PROCESS) == "RayWorkerWrapper").height > 0
        assert r.events.filter(pl.col(s.COLL_OP) == "ALLREDUCE").height == 4
