"""The alert backtest: the written rules evaluated on an incident's own series.

The pure parts (series on the scrape grid, Prometheus' formatting, `for`) are tested on their
own; the verdicts come from a real `prometheus` and are checked again by `promtool test rules`.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
import yaml

from forensics import schema as s
from forensics.report import alerts
from forensics.report import backtest as bt
from tests.conftest import SAMPLES

SERVER = shutil.which("prometheus") is not None and shutil.which("promtool") is not None
needs_server = pytest.mark.skipif(
    not SERVER, reason="prometheus/promtool not installed (Debian package `prometheus`; CI installs it)"
)
T0 = datetime(2025, 3, 2, 8, 0, tzinfo=UTC)


def metrics(rows: list[tuple[int, str, str, float]]) -> pl.DataFrame:
    """A metrics table from (seconds after T0, pod, metric, value)."""
    return pl.DataFrame(
        [
            {
                s.TS: T0 + timedelta(seconds=sec),
                s.TS_QUALITY: "exact",
                s.HOST: None,
                s.POD: pod,
                s.ENGINE: "000",
                s.METRIC: metric,
                s.VALUE: value,
                s.FILE: f"{pod}.log",
                s.LINE: i + 1,
            }
            for i, (sec, pod, metric, value) in enumerate(rows)
        ],
        schema=s.METRIC_DTYPES,
    )


def test_logged_rates_become_a_counter_that_grows_by_rate_times_interval():
    rows = [(10 * i, "vllm-0", "generation_tokens_per_s", 100.0) for i in range(7)]
    data = bt.samples(metrics(rows))
    counter = data.series[("vllm:generation_tokens_total", (("engine", "000"), ("pod", "vllm-0")))]
    # 10 s lines at 100 tokens/s: 1,000 tokens a line, read on the 30 s grid.
    assert [v for v in counter if v is not None] == [1000.0, 4000.0, 7000.0]


def test_a_gap_in_the_logs_stays_a_gap_and_is_not_integrated_as_work_done():
    rows = [(10 * i, "vllm-0", "generation_tokens_per_s", 100.0) for i in range(4)]
    rows += [(600 + 10 * i, "vllm-0", "generation_tokens_per_s", 100.0) for i in range(4)]
    data = bt.samples(metrics(rows))
    counter = data.series[("vllm:generation_tokens_total", (("engine", "000"), ("pod", "vllm-0")))]
    assert counter[3:20] == [None] * 17  # ten minutes without a line: no scrape
    # after the gap, one usual interval is counted for the first line, not the 10-minute gap
    assert counter[-1] - counter[1] == pytest.approx(4 * 1000 + 1000)


def test_gauges_keep_their_values_and_series_are_keyed_by_pod():
    rows = [(0, "a", "gpu_kv_cache_usage", 0.5), (0, "b", "gpu_kv_cache_usage", 0.25), (30, "a", "waiting", 3.0)]
    data = bt.samples(metrics(rows))
    assert data.series[("vllm:kv_cache_usage_perc", (("engine", "000"), ("pod", "b")))][0] == 0.25
    assert data.names == {"vllm:kv_cache_usage_perc", "vllm:num_requests_waiting"}
    om = data.openmetrics()
    assert om.endswith("# EOF\n")
    assert 'vllm:kv_cache_usage_perc{engine="000",pod="a"} 0.5 1740902400' in om


def test_values_use_promtools_notation_for_runs_of_missing_samples():
    assert bt._values([None, None, None, 1.0, None, 2.5]) == "_x3 1 _ 2.5"


@pytest.mark.parametrize(
    "value, humanized, plain",
    [(0.0, "0", "0"), (1234567.0, "1.235M", "1234567"), (0.0042, "4.2m", "0.0042"), (0.5, "500m", "0.5"),
     (12.0, "12", "12"), (1e22, "10Z", "1e+22"), (0.00001, "10u", "1e-05")],
)  # fmt: skip
def test_annotation_values_are_formatted_as_prometheus_templates_do(value, humanized, plain):
    assert bt.humanize(value) == humanized
    assert bt.go_float(value) == plain


def test_an_alert_fires_only_after_its_condition_held_for_its_for():
    step = bt.INTERVAL.total_seconds()
    t = T0.timestamp()
    series = [{"metric": {"pod": "a"}, "values": [[t + i * step, "1"] for i in (0, 1, 2, 5, 6, 7, 8, 9, 10, 11)]}]
    pending, fired, firing = bt._alerting(series, timedelta(minutes=3))
    assert pending == T0
    # the first run (0..2) breaks; the second starts at step 5 and holds 3 min at step 11
    assert fired == T0 + 11 * bt.INTERVAL
    assert firing == [({"pod": "a"}, 1.0)]
    assert bt._alerting(series, timedelta(minutes=10))[1] is None


def test_every_metric_and_grouping_label_a_rule_reads_exists_in_its_exporter():
    """Each name is cited (`alerts.METRICS`: the exporter's file) with the labels it carries;
    a label a rule groups or joins by must be one of them or a scrape target label."""
    every = [r for _when, rules in alerts.WATCHES for r in rules] + alerts._slo_rules(None)
    for rule in every:
        names = bt.metrics_of(rule.expr)
        assert names, rule.alert
        for name in names:
            assert name in alerts.METRICS, f"{rule.alert}: {name} has no citation"
        known = set().union(*(alerts.METRICS[n][1] for n in names)) | alerts.TARGET_LABELS
        for group in re.findall(r"\b(?:by|on)\s*\(([^)]*)\)", rule.expr):
            for label in filter(None, (x.strip() for x in group.split(","))):
                assert label in known, f"{rule.alert}: label {label} is not on {sorted(names)}"
        for label in re.findall(r"\$labels\.(\w+)", rule.description):
            assert label in known, f"{rule.alert}: {{{{ $labels.{label} }}}} is not on {sorted(names)}"


def test_log_rules_are_written_only_for_what_only_logs_carry():
    nccl = {"incidents": [{"root_cause": {"category": "network"}, "hypotheses": [], "tell": None}]}
    doc = yaml.safe_load(alerts.loki_rules(nccl))
    exprs = [r["expr"] for r in doc["groups"][0]["rules"]]
    assert any('|= "NCCL WARN"' in e and "count_over_time(" in e for e in exprs)
    assert all(e.count("{") >= 1 and "[5m]" in e or "[10m]" in e for e in exprs)
    oom = {"incidents": [{"root_cause": {"category": "gpu-memory"}, "hypotheses": [], "tell": None}]}
    assert alerts.loki_rules(oom) is None


@pytest.fixture(scope="module")
def cache_corruption_report(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bt") / "report"
    p = subprocess.run(
        ["python", "-m", "forensics", "analyze", str(SAMPLES / "cache-corruption"), "-o", str(out), "-q"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    return out


@needs_server
def test_the_kv_full_rule_would_have_fired_first_a_minute_before_the_throughput_fell(cache_corruption_report):
    doc = json.loads((cache_corruption_report / "analysis.json").read_text())["backtest"]
    assert doc["ran"] and doc["promtool"] == "passed"
    fired = sorted((r for r in doc["rules"] if r["fired"]), key=lambda r: r["fired_at"])
    assert fired[0]["alert"] == "VLLMKVCacheFullWithoutQueueing"
    assert fired[0]["lead_minutes"] == 1.0  # pending 08:03, fires at 08:06 after its 3m; throughput fell at 08:07
    assert fired[0]["fired_at"] == "2025-03-02T08:06:00Z" and doc["outage"] == "2025-03-02T08:07:00Z"
    why = {r["alert"]: r["why_not"] for r in doc["rules"]}
    assert why["NCCLCommunicationFailure"].startswith("not collected: nccl_bus_bandwidth_gbs")
    md = (cache_corruption_report / "postmortem.md").read_text()
    assert (
        "| `VLLMKVCacheFullWithoutQueueing` | critical | yes | 08:06:00 | 1.0 min before | 0.7 min before | - |" in md
    )


@needs_server
def test_promtool_replays_the_backtest_on_the_incidents_own_series(cache_corruption_report):
    test = yaml.safe_load((cache_corruption_report / "alerts_test.yaml").read_text())
    series = {x["series"].split("{")[0] for x in test["tests"][0]["input_series"]}
    assert "vllm:kv_cache_usage_perc" in series and "vllm:generation_tokens_total" in series
    p = subprocess.run(
        ["promtool", "test", "rules", "alerts_test.yaml"], cwd=cache_corruption_report, capture_output=True, text=True
    )
    assert p.returncode == 0, p.stdout + p.stderr
    # and it is not vacuous: moving the fire time one step earlier fails
    cases = test["tests"][0]["alert_rule_test"]
    firing = next(c for c in cases if c["exp_alerts"])
    minutes = bt._duration(firing["eval_time"]) - bt.INTERVAL
    firing["eval_time"] = bt._go(minutes)
    (cache_corruption_report / "broken_test.yaml").write_text(yaml.safe_dump(test, sort_keys=False))
    p = subprocess.run(
        ["promtool", "test", "rules", "broken_test.yaml"], cwd=cache_corruption_report, capture_output=True, text=True
    )
    assert p.returncode != 0


def test_without_prometheus_the_report_says_the_backtest_did_not_run(monkeypatch):
    monkeypatch.setattr(bt.shutil, "which", lambda _name: None)
    verdicts, data, why = bt.backtest([], pl.DataFrame(schema=s.METRIC_DTYPES), None)
    assert verdicts == [] and data is None
    assert "install the Debian package `prometheus`" in why


def test_a_long_incident_is_backtested_on_a_coarser_grid_of_bounded_size(monkeypatch):
    monkeypatch.setattr(bt, "MAX_VALUES", 1_000)
    rows = [(30 * i, pod, "waiting", 1.0) for i in range(2 * 60 * 4) for pod in ("a", "b", "c")]  # 4 h, 3 pods
    data = bt.samples(metrics(rows))
    assert data.interval == 2 * bt.INTERVAL  # 3 series x 481 steps at 30 s is 1,443: 60 s steps
    assert len(data.series) * data.steps <= 1_000
    assert data.at(data.steps - 1) >= T0 + timedelta(hours=4) - data.interval
