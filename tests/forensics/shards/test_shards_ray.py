"""`--engine ray` on a real local Ray cluster (one per module: starting one takes seconds).

The claim tested: on every shipped incident, Ray gives the same incidents, root causes
and templates as the local engine. Template ids could in principle differ where the
second Drain pass merges shard templates differently from one Drain over all lines
(shared docs, scale-out.md §2b); the tolerance stated here is at most 2% of templates,
and the incidents and verdicts must match exactly.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from forensics.cli import app
from forensics.diagnosis import analysis
from forensics.shards import pipeline as scaleout
from tests.conftest import SAMPLES

ray = pytest.importorskip("ray")

SCENARIOS = sorted(p.name for p in SAMPLES.iterdir() if (p / "ground_truth.json").is_file())
TEMPLATE_TOLERANCE = 0.02


@pytest.fixture(scope="module")
def ray_cluster():
    ray.init(num_cpus=2, object_store_memory=512 * 1024 * 1024, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture
def small_shards(monkeypatch):
    """Cut each sample into several shards (the default shard is 64 MiB, bigger than a sample)."""
    monkeypatch.setattr(scaleout, "SHARD_BYTES", 150_000)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_ray_gives_the_local_incidents_root_causes_and_templates(scenario, ray_cluster, small_shards):
    local = analysis.analyze(SAMPLES / scenario)
    on_ray = analysis.analyze(SAMPLES / scenario, engine="ray")

    lj, rj = local.to_json(), on_ray.to_json()
    assert rj["incidents"] == lj["incidents"]
    assert rj["input"] == lj["input"]
    assert rj["throughput"] == lj["throughput"]
    ours, theirs = set(local.templates["template"]), set(on_ray.templates["template"])
    assert len(ours ^ theirs) <= TEMPLATE_TOLERANCE * len(ours), sorted(ours ^ theirs)
    truth = (SAMPLES / scenario / "ground_truth.json").read_text()
    if lj["incidents"]:
        assert rj["incidents"][0]["root_cause"]["category"] in truth


def test_cli_ray_engine_joins_the_running_cluster_and_leaves_it_up(tmp_path, ray_cluster):
    result = CliRunner().invoke(
        app, ["analyze", str(SAMPLES / "gpu-oom"), "--out", str(tmp_path), "-q", "--engine", "ray"]
    )
    assert result.exit_code == 0, result.output
    assert ray.is_initialized(), "a cluster forensics did not start must not be shut down by it"
    assert (tmp_path / "events" / scaleout.MAPPING_FILE).is_file()
    assert "gpu-memory" in (tmp_path / "postmortem.md").read_text()
