"""Prometheus exports beside the logs: scrape loops, federate/promtool dumps, query results."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forensics import analyze, ingest
from forensics.report.render import render
from parsers.documents import prometheus
from tests.conftest import write

T0 = datetime(2026, 3, 14, 6, 0, tzinfo=UTC)
LABELS = 'engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"'


def _scrape(i: int, generated: float, waiting: int, corrupted: int = 0) -> list[str]:
    """One `/metrics` scrape of a vLLM V1 server as it prints them (abridged)."""
    return [
        "# HELP vllm:num_requests_running Number of requests in model execution batches.",
        "# TYPE vllm:num_requests_running gauge",
        f"vllm:num_requests_running{{{LABELS}}} 24.0",
        "# TYPE vllm:num_requests_waiting gauge",
        f"vllm:num_requests_waiting{{{LABELS}}} {waiting}.0",
        "# TYPE vllm:kv_cache_usage_perc gauge",
        f"vllm:kv_cache_usage_perc{{{LABELS}}} 0.42",
        "# TYPE vllm:generation_tokens counter",
        f"vllm:generation_tokens_total{{{LABELS}}} {generated:.6e}",
        f"vllm:generation_tokens_created{{{LABELS}}} 1.773467e+09",
        f"vllm:corrupted_requests_total{{{LABELS}}} {corrupted}.0",
        f'vllm:e2e_request_latency_seconds_bucket{{{LABELS},le="+Inf"}} {100 + i}.0',
        "",
    ]


def _loop(stamps: list[str], rates: list[float], corrupted_from: int | None = None) -> str:
    """`while :; do date -u; curl -s :8000/metrics; sleep 15; done`, one stamp a scrape."""
    out, generated = [], 1e6
    for i, stamp in enumerate(stamps):
        out.append(stamp)
        out += _scrape(
            i, generated, 0 if rates[i] else 7, 3 if corrupted_from is not None and i >= corrupted_from else 0
        )
        generated += 15 * rates[min(i + 1, len(rates) - 1)]
    return "\n".join(out) + "\n"


def _balanced(r) -> None:
    for f in r.files:
        assert f.lines == f.parsed + f.folded + f.unparsed, f


def test_a_scrape_loop_gives_the_logs_rates_and_gauges_per_pod_and_engine(tmp_path):
    stamps = [(T0 + timedelta(seconds=15 * i)).strftime("%a %b %d %H:%M:%S UTC %Y") for i in range(8)]
    write(tmp_path / "metrics" / "vllm-0.prom", _loop(stamps, [1500.0] * 5 + [0.0] * 3))
    r = ingest(tmp_path)
    _balanced(r)
    (f,) = r.files
    assert (f.wrapper, f.formats, f.unparsed, f.parsed) == ("prometheus-text", ("prometheus",), 0, 8)
    m = r.metrics
    gen = m.filter(pl.col("metric") == "generation_tokens_per_s").sort("ts")
    assert gen["value"].to_list() == pytest.approx([1500.0] * 4 + [0.0] * 3)  # (a rate needs two samples)
    assert gen["ts"][0] == T0 + timedelta(seconds=15)
    assert set(m["pod"]) == {"vllm-0"} and set(m["engine"]) == {"000"} and set(m["ts_quality"]) == {"exact"}
    assert m.filter(pl.col("metric") == "gpu_kv_cache_usage")["value"].to_list() == [0.42] * 8  # (a fraction)
    assert m.filter(pl.col("metric") == "waiting")["value"].to_list() == [0.0] * 5 + [7.0] * 3
    scrapes = r.events.filter(pl.col("source") == "prometheus")
    assert scrapes.height == 8 and scrapes["message"][0] == "Prometheus scrape: 7 samples of 7 metrics"


@pytest.mark.parametrize(
    "fmt",
    [
        "%a %b %d %I:%M:%S %p UTC %Y",  # date, en_US locale
        "%a %d %b %H:%M:%S UTC %Y",  # date, en_GB locale
        "%Y-%m-%dT%H:%M:%SZ",  # date -u -Iseconds
        "# %Y-%m-%d %H:%M:%S+00:00",  # a comment
        "%s",  # date +%s
    ],
)
def test_each_common_way_of_stamping_a_scrape_times_it(tmp_path, fmt):
    stamps = [
        str(int((T0 + timedelta(seconds=15 * i)).timestamp()))
        if fmt == "%s"
        else (T0 + timedelta(seconds=15 * i)).strftime(fmt)
        for i in range(3)
    ]
    write(tmp_path / "vllm-0.metrics.txt", _loop(stamps, [1000.0] * 3))
    m = ingest(tmp_path).metrics.filter(pl.col("metric") == "running")
    assert m["ts"].to_list() == [T0, T0 + timedelta(seconds=15), T0 + timedelta(seconds=30)]
    assert set(m["pod"]) == {"vllm-0"}


def test_a_stamp_without_a_zone_is_read_in_the_tz_given(tmp_path):
    write(
        tmp_path / "vllm-0.prom",
        _loop(["2026-03-14 07:00:00", "2026-03-14 07:00:15", "2026-03-14 07:00:30"], [1.0] * 3),
    )
    m = ingest(tmp_path, tz="Europe/Berlin").metrics  # (UTC+1 in March)
    assert m["ts"].min() == T0


def test_a_v0_servers_throughput_gauges_are_read_as_they_are(tmp_path):
    lines = [
        f'vllm:avg_generation_throughput_toks_per_s{{model_name="m"}} {v} {1773468000000 + 10_000 * i}'
        for i, v in enumerate([812.5, 790.0, 0.0])
    ]
    write(
        tmp_path / "vllm-0.prom", "# TYPE vllm:avg_generation_throughput_toks_per_s gauge\n" + "\n".join(lines) + "\n"
    )
    gen = ingest(tmp_path).metrics.filter(pl.col("metric") == "generation_tokens_per_s")
    assert gen["value"].to_list() == [812.5, 790.0, 0.0] and gen["engine"].to_list() == [None] * 3


def test_a_counter_that_falls_is_a_restart_counted_from_zero(tmp_path):
    lines = [
        f'vllm:generation_tokens_total{{engine="0"}} {v} {1773468000000 + 10_000 * i}'
        for i, v in enumerate([50_000, 60_000, 70_000, 2_000, 12_000])
    ]
    write(tmp_path / "vllm-0.prom", "# TYPE vllm:generation_tokens counter\n" + "\n".join(lines) + "\n")
    gen = ingest(tmp_path).metrics.filter(pl.col("metric") == "generation_tokens_per_s")
    assert gen["value"].to_list() == pytest.approx([1000.0, 1000.0, 200.0, 1000.0])


def test_federate_and_promtool_dumps_take_each_samples_time_and_pod_label(tmp_path):
    federate = [  # `/federate`: milliseconds; the pods' own labels
        f'vllm:num_requests_waiting{{engine="0",instance="10.0.1.{p}:8000",node="gpu-node-{p}",pod="vllm-{p}"}} {p} '
        f"{1773468000000 + 15_000 * i}"
        for i in range(3)
        for p in (1, 2)
    ]
    write(tmp_path / "federate.txt", "# TYPE vllm:num_requests_waiting untyped\n" + "\n".join(federate) + "\n")
    dump = [  # promtool tsdb dump: the name among the labels
        f'{{__name__="vllm:gpu_cache_usage_perc", engine="1", pod="vllm-3"}} 0.5 {1773468000000 + 15_000 * i}'
        for i in range(5)
    ]
    write(tmp_path / "dump.txt", "\n".join(dump) + "\n")
    write(
        tmp_path / "om.txt",
        '# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{pod="vllm-4"} 9 '
        '1773468000.5\nvllm:num_requests_running{pod="vllm-4"} 8 1773468015.5\n'
        'vllm:num_requests_running{pod="vllm-4"} 7 1773468030.5\n# EOF\n',
    )  # OpenMetrics: seconds
    r = ingest(tmp_path)
    _balanced(r)
    m = r.metrics
    waiting = m.filter(pl.col("metric") == "waiting")
    assert sorted(set(zip(waiting["pod"], waiting["host"], strict=True))) == [
        ("vllm-1", "gpu-node-1"),
        ("vllm-2", "gpu-node-2"),
    ]
    assert waiting["ts"].min() == T0
    assert r.events.filter(pl.col("file") == "federate.txt")["pod"].to_list() == [None]  # (many pods' file)
    kv = m.filter(pl.col("metric") == "gpu_kv_cache_usage")
    assert (kv.height, set(kv["pod"]), set(kv["engine"])) == (5, {"vllm-3"}, {"001"})
    running = m.filter(pl.col("metric") == "running")
    assert running["ts"].to_list()[0] == T0 + timedelta(milliseconds=500)
    assert {f.file: f.wrapper for f in r.files} == dict.fromkeys(
        ("dump.txt", "federate.txt", "om.txt"), "prometheus-text"
    )


def test_a_query_range_export_is_read_and_an_unnamed_series_is_named_in_a_note(tmp_path):
    t0 = int(T0.timestamp())
    result = [
        {
            "metric": {"__name__": "vllm:generation_tokens_total", "pod": "vllm-0", "engine": "0"},
            "values": [[t0 + 15 * i, str(1e6 + 15_000 * min(i, 4))] for i in range(8)],
        },
        {"metric": {"pod": "vllm-0"}, "values": [[t0, "812.5"]]},  # rate(...): no name
    ]
    write(
        tmp_path / "query.json",
        json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}, indent=2),
    )
    r = ingest(tmp_path)
    _balanced(r)
    (f,) = r.files
    assert f.wrapper == "prometheus-json" and f.unparsed == 0
    assert any("1 series without a metric name" in n for n in f.notes)
    gen = r.metrics.filter(pl.col("metric") == "generation_tokens_per_s")
    assert gen["value"].to_list() == pytest.approx([1000.0] * 4 + [0.0] * 3)
    assert r.events["message"].to_list() == ["Prometheus query result: 8 samples of 1 series"]


def _dcgm(values: list[int], host: str = "gpu-node-3") -> str:
    return (
        "\n".join(
            f'DCGM_FI_DEV_XID_ERRORS{{DCGM_FI_DRIVER_VERSION="535.129.03",Hostname="{host}",UUID="GPU-5fd3",device="nvidia1",'
            f'gpu="1",modelName="NVIDIA H100 80GB HBM3"}} {v} {1773468000000 + 30_000 * i}'
            for i, v in enumerate(values)
        )
        + "\n"
    )


def test_a_gpus_xid_turning_nonzero_is_one_event_of_its_node_classified_as_a_gpu_fault(tmp_path):
    from forensics.diagnosis.signatures import classify

    write(tmp_path / "dcgm" / "exporter.txt", _dcgm([0, 0, 79, 79, 79, 0, 48]))
    r = ingest(tmp_path)
    _balanced(r)
    xid = r.events.filter(pl.col("level") == "ERROR").sort("line")
    assert xid["message"].to_list() == [
        "DCGM_FI_DEV_XID_ERRORS: Xid=79 on GPU 1 (GPU-5fd3)",  # (the gauge holds the last Xid: a change is the event)
        "DCGM_FI_DEV_XID_ERRORS: Xid=48 on GPU 1 (GPU-5fd3)",
    ]
    assert xid["ts"][0] == T0 + timedelta(seconds=60)
    assert xid["host"].to_list() == ["gpu-node-3"] * 2 and xid["pod"].to_list() == [
        None,
        None,
    ]  # (the node's, not the file's)
    assert set(classify(xid)["category"]) == {"gpu-fault"}


def test_a_gpus_uncorrectable_ecc_errors_are_gpu_fault_events_but_a_lifetime_counters_history_is_not(tmp_path):
    from forensics.diagnosis.signatures import classify

    def series(name: str, values: list[int]) -> str:
        return "\n".join(
            f'{name}{{Hostname="gpu-node-2",UUID="GPU-77aa",gpu="6"}} {v} {1773468000000 + 30_000 * i}'
            for i, v in enumerate(values)
        )

    write(
        tmp_path / "dcgm.txt",
        "\n".join(
            [
                series("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", [0, 0, 2, 2]),
                series("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", [5, 5, 6, 6]),  # (5 from long ago)
                series("DCGM_FI_DEV_ROW_REMAP_FAILURE", [0, 0, 0, 1]),
            ]
        )
        + "\n",
    )
    bad = ingest(tmp_path).events.filter(pl.col("level") == "ERROR").sort("ts", "line")
    assert bad["message"].to_list() == [
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL rose by 2 on GPU 6 (GPU-77aa): uncorrectable ECC errors (double-bit) since the "
        "driver loaded",
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS rose by 1 on GPU 6 (GPU-77aa): rows remapped after uncorrectable ECC "
        "errors",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE is 1 on GPU 6 (GPU-77aa): row remapping failed (uncorrectable ECC errors; reset "
        "or replace the GPU)",
    ]
    assert set(bad["host"]) == {"gpu-node-2"}
    assert set(classify(bad)["category"]) == {"gpu-fault"}


def test_kube_state_metrics_states_become_the_events_describe_would_give(tmp_path):
    from forensics.diagnosis.signatures import classify

    ms = [1773468000000 + 30_000 * i for i in range(4)]
    lines = [
        *(
            'kube_pod_container_status_last_terminated_reason{container="vllm",namespace="serving",pod="vllm-1",'
            f'reason="OOMKilled"}} {v} {t}'
            for v, t in zip([0, 1, 1, 1], ms, strict=True)
        ),
        *(
            'kube_pod_container_status_waiting_reason{container="vllm",namespace="serving",pod="vllm-1",'
            f'reason="CrashLoopBackOff"}} {v} {t}'
            for v, t in zip([0, 0, 1, 1], ms, strict=True)
        ),
        *(
            f'kube_node_status_condition{{condition="Ready",node="gpu-node-4",status="{st}"}} {v} {ms[2]}'
            for st, v in (("true", 0), ("false", 0), ("unknown", 1))
        ),
        f'kube_node_status_condition{{condition="MemoryPressure",node="gpu-node-2",status="false"}} 1 {ms[0]}',
    ]
    write(tmp_path / "ksm.txt", "\n".join(lines) + "\n")
    ev = ingest(tmp_path).events.filter(pl.col("level") == "WARNING").sort("ts", "line")
    assert ev.select("message", "pod", "host").rows() == [
        ("Last State: Terminated (OOMKilled) container vllm", "vllm-1", None),
        ("State: Waiting (CrashLoopBackOff) container vllm", "vllm-1", None),
        ("NodeNotReady: Ready=Unknown (kube-state-metrics node gpu-node-4)", None, "gpu-node-4"),
    ]
    got = classify(ev).sort("_ev")
    assert got.select("category", "kind").rows() == [
        ("pod-lifecycle", "fault"),
        ("pod-lifecycle", "symptom"),
        ("node", "fault"),
    ]


def test_corrupted_requests_rising_is_a_kv_cache_fault_event_of_the_pod(tmp_path):
    from forensics.diagnosis.signatures import classify

    stamps = [(T0 + timedelta(seconds=15 * i)).isoformat() for i in range(5)]
    write(tmp_path / "vllm-2.prom", _loop(stamps, [900.0] * 5, corrupted_from=3))
    r = ingest(tmp_path)
    bad = r.events.filter(pl.col("level") == "ERROR")
    assert bad["message"].to_list() == [
        "vllm:corrupted_requests_total rose by 3 since the previous sample on engine 000 (Corrupted: 3 reqs)"
    ]
    assert (bad["pod"][0], bad["ts"][0]) == ("vllm-2", T0 + timedelta(seconds=45))
    assert classify(bad)["category"].to_list() == ["kv-cache"]
    assert r.metrics.filter(pl.col("metric") == "corrupted")["value"].to_list() == [0.0, 0.0, 3.0, 0.0]


def test_a_stray_line_in_an_export_stays_an_unparsed_event_and_is_noted(tmp_path):
    text = _loop([f"2026-03-14T06:00:{15 * i:02d}Z" for i in range(3)], [1.0] * 3)
    write(tmp_path / "vllm-0.prom", text.replace("# TYPE vllm:kv_cache_usage_perc gauge", "curl: (56) Recv failure", 1))
    r = ingest(tmp_path)
    _balanced(r)
    (f,) = r.files
    assert f.unparsed == 1 and "not a Prometheus sample" in f.notes[0]
    assert r.events.filter(pl.col("source") == "unknown")["message"].to_list() == ["curl: (56) Recv failure"]


def test_an_untimed_scrape_keeps_its_gauges_and_says_how_to_time_the_next(tmp_path):
    write(tmp_path / "vllm-0.prom", "\n".join(_scrape(0, 1e6, 4)) + "\n")
    r = ingest(tmp_path)
    (f,) = r.files
    assert any("date -u" in n for n in f.notes)
    m = r.metrics
    assert m.filter(pl.col("metric") == "waiting")["value"].to_list() == [4.0]
    assert m["ts"].null_count() == m.height and set(m["ts_quality"]) == {"none"}
    assert m.filter(pl.col("metric") == "generation_tokens_per_s").is_empty()  # (no interval, no rate)


@pytest.mark.parametrize(
    "text",
    [
        "INFO 03-14 06:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s\n" * 10,
        "gpu-node-1:55:99 [2] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n" * 10,
        '{"apiVersion": "v1", "kind": "List", "items": []}\n',
        '{"log":"INFO 12-01 10:00:00 x\\n","stream":"stdout","time":"2026-03-14T06:00:00Z"}\n' * 10,
        "requests_total 5\nhello world\nthis is prose\nand more prose\nanother line\n",
    ],
)
def test_a_log_or_another_document_is_not_taken_for_an_export(text):
    assert prometheus.sniff(text) is None


LINES = st.sampled_from(
    [
        "# HELP vllm:num_requests_running Number of requests.",
        "# TYPE vllm:num_requests_running gauge",
        f"vllm:num_requests_running{{{LABELS}}} 3.0",
        f"vllm:generation_tokens_total{{{LABELS}}} 1.5e+06",
        'DCGM_FI_DEV_XID_ERRORS{gpu="0",Hostname="n"} 79',
        'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu="0",Hostname="n"} 3',
        f"vllm:corrupted_requests_total{{{LABELS}}} 2",
        "Sat Mar 14 06:00:00 UTC 2026",
        "2026-03-14T06:00:15Z",
        "1773468030",
        'vllm:num_requests_waiting{engine="0"} 1e+400 99999999999999999999999',  # (out of every range)
        "",
        "# EOF",
    ]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(LINES, st.text(max_size=60)), min_size=1, max_size=40))
def test_any_mix_of_export_and_stray_lines_parses_and_accounts_every_line(lines):
    lines = [line.replace("\n", " ").replace("\r", " ") for line in lines]
    export = prometheus.parse_document("\n".join(lines) + "\n", "text")
    heads = [e for e in export.events if not e["_extra"]]
    assert sum(1 + e["_nfold"] for e in heads) == len(lines)
    assert sorted(e["line"] for e in heads) == sorted({e["line"] for e in heads})  # (one event a line at most)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
        max_leaves=12,
    )
)
def test_any_json_in_a_query_result_never_raises(result):
    text = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}})
    export = prometheus.parse_document(text, "json")
    assert sum(1 + e["_nfold"] for e in export.events if not e["_extra"]) == 1


def test_an_incident_seen_only_in_prometheus_is_found_and_blamed_on_the_gpu_that_raised_an_xid(tmp_path: Path):
    """vLLM run with --disable-log-stats: the throughput is in a federate dump, the cause in DCGM's."""
    fail = T0 + timedelta(minutes=30)
    pods = {"vllm-0": "gpu-node-1", "vllm-1": "gpu-node-2", "vllm-2": "gpu-node-3"}
    total = dict.fromkeys(pods, 5e6)
    served = {(pod, code): 0 for pod in pods for code in ("2xx", "5xx")}
    lines, failed_at = [], []
    for i in range(200):
        t = T0 + timedelta(seconds=15 * i)
        for pod, node in pods.items():
            dead = pod == "vllm-2" and t >= fail
            total[pod] += 0 if dead else 1200 * 15
            served[pod, "5xx" if dead else "2xx"] += 45
            failed_at += [t] * dead
            lab = f'engine="0",node="{node}",pod="{pod}"'
            ms = int(t.timestamp() * 1000)
            lines.append(f"vllm:generation_tokens_total{{{lab}}} {total[pod]:.1f} {ms}")
            lines.append(f"vllm:num_requests_waiting{{{lab}}} {40 if dead else 0} {ms}")
            for code in ("2xx", "5xx"):  # (the API server's own counter, from prometheus-fastapi-instrumentator)
                http = f'handler="/v1/chat/completions",method="POST",node="{node}",pod="{pod}",status="{code}"'
                lines.append(f"http_requests_total{{{http}}} {served[pod, code]}.0 {ms}")
    write(tmp_path / "prometheus" / "federate.txt", "\n".join(lines) + "\n")
    xids = [79 if T0 + timedelta(seconds=30 * i) >= fail else 0 for i in range(100)]
    write(tmp_path / "prometheus" / "dcgm.txt", _dcgm(xids))
    stamp = (fail + timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%S.000000000Z")
    write(
        tmp_path / "pods" / "vllm-2.log",
        "\n".join(
            [
                f"{stamp} (EngineCore_DP0 pid=120) ERROR 03-14 06:30:02 [core.py:700] EngineCore encountered a fatal error.",
                f"{stamp} (EngineCore_DP0 pid=120) RuntimeError: CUDA error: unspecified launch failure",
                f"{stamp} (APIServer pid=1) ERROR 03-14 06:30:02 [async_llm.py:430] AsyncLLM output_handler failed.",
            ]
        )
        + "\n",
    )
    report = analyze(tmp_path).to_json()
    (incident,) = report["incidents"]
    rc = incident["root_cause"]
    assert (rc["status"], rc["category"], rc["hosts"]) == ("supported", "gpu-fault", ["gpu-node-3"])
    assert "DCGM_FI_DEV_XID_ERRORS" in rc["template"]
    assert incident["start"].startswith("2026-03-14T06:30")
    # No access log: the impact's request counts are the API servers' counter over the incident.
    start = datetime.fromisoformat(incident["start"].replace("Z", "+00:00"))
    assert incident["end"] is None  # (not recovered: the incident runs to the end of the logs)
    impact = incident["impact"]
    assert impact["http_from"] == "prometheus"
    assert impact["http_5xx"] == 45 * sum(start < t for t in failed_at) > 0
    assert impact["http_requests"] == 3 * impact["http_5xx"]  # (the two healthy pods kept answering)
    said = f"{impact['http_5xx']:,} of {impact['http_requests']:,} HTTP responses counted by the API server"
    assert said in render(report)


def test_an_export_that_cannot_be_read_is_parsed_as_a_log_with_a_note(tmp_path, monkeypatch):
    def broken(*_args, **_kwargs):
        raise ValueError("simulated flaw")

    monkeypatch.setattr(prometheus, "parse_document", broken)
    write(tmp_path / "vllm-0.prom", _loop(["2026-03-14T06:00:00Z", "2026-03-14T06:00:15Z"], [1.0, 1.0]))
    r = ingest(tmp_path)
    _balanced(r)
    (f,) = r.files
    assert f.lines == 28 and any("simulated flaw" in n and "line by line" in n for n in f.notes)


def test_the_nixl_connectors_failed_transfers_and_expired_leases_rising_are_events_of_the_pod(tmp_path):
    # A P/D deployment's decode (failed transfers) and prefill (expired leases) engines, scraped.
    from forensics.diagnosis.signatures import classify

    stamps = [(T0 + timedelta(seconds=15 * i)).isoformat() for i in range(4)]
    for pod, family, counts in (
        ("vllm-decode-0", "vllm:nixl_num_failed_transfers_total", [0, 0, 4, 4]),
        ("vllm-prefill-0", "vllm:nixl_num_kv_expired_reqs_total", [0, 0, 0, 2]),
    ):
        lines = []
        for stamp, n in zip(stamps, counts, strict=True):
            lines += [stamp, f"# TYPE {family.removesuffix('_total')} counter", f"{family}{{{LABELS}}} {n}.0", ""]
        write(tmp_path / f"{pod}.prom", "\n".join(lines) + "\n")
    r = ingest(tmp_path)
    _balanced(r)
    bad = r.events.filter(pl.col("level") == "ERROR").sort("pod")
    assert bad.select("pod", "ts", "message").rows() == [
        (
            "vllm-decode-0",
            T0 + timedelta(seconds=30),
            "vllm:nixl_num_failed_transfers_total rose by 4 since the previous sample on engine 000 "
            "(NIXL KV transfers failed: 4)",
        ),
        (
            "vllm-prefill-0",
            T0 + timedelta(seconds=45),
            "vllm:nixl_num_kv_expired_reqs_total rose by 2 since the previous sample on engine 000 "
            "(prefill KV blocks released unread, lease expired: 2 requests)",
        ),
    ]
    assert classify(bad).select("category", "kind").rows() == [("network", "fault"), ("kv-cache", "symptom")]


def test_nccl_inspectors_bus_bandwidth_collapsing_on_one_gpu_is_one_event_of_its_node(tmp_path):
    # NCCL Inspector's Prometheus textfile (NCCL_INSPECTOR_PROM_DUMP=1), scraped every 30 s: GPU 1 of
    # gpu-node-3 drops to 0.3 GB/s for three dumps, then recovers. One event, not one a dump.
    from forensics.diagnosis.signatures import classify

    out = []
    for i in range(12):
        out += [(T0 + timedelta(seconds=30 * i)).isoformat(), "# TYPE nccl_bus_bandwidth_gbs gauge"]
        for node in ("gpu-node-1", "gpu-node-3"):
            for gpu in (0, 1):
                bw = 0.3 if (node, gpu) == ("gpu-node-3", 1) and 6 <= i < 9 else 180.0 + i
                out.append(
                    f'nccl_bus_bandwidth_gbs{{slurm_job_id="0",node="{node}",gpu="{gpu}",comm_name="0x7f",n_nodes="2",'
                    f'nranks="16",collective="AllReduce",message_size="4-5GB",algo_proto="Ring_Simple"}} {bw}'
                )
        out.append("")
    write(tmp_path / "nccl-inspector.prom", "\n".join(out) + "\n")
    r = ingest(tmp_path)
    _balanced(r)
    fell = r.events.filter(pl.col("message").str.starts_with("nccl_bus_bandwidth_gbs"))
    assert fell.select("host", "ts", "message").rows() == [
        (
            "gpu-node-3",
            T0 + timedelta(minutes=3),
            "nccl_bus_bandwidth_gbs fell to 0.3 from 185 on GPU 1 of gpu-node-3 (AllReduce, 4-5GB): its collectives "
            "stalled or its network failed (NCCL Inspector)",
        )
    ]
    assert classify(fell).select("category", "kind").rows() == [("collective-timeout", "symptom")]
