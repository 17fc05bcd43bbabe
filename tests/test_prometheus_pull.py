"""`analyze --prometheus URL`: series pulled from a live server, against a real `prometheus`.

The server is Debian's `prometheus` on 127.0.0.1, its TSDB backfilled with promtool from a
sample's series (`forensics.report.backtest.local_prometheus`); failure modes a real server
cannot be asked for (a refused token, a query too large) come from a small fake one.
"""

from __future__ import annotations

import http.server
import json
import re
import shutil
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlparse

import polars as pl
import pytest

import forensics
from forensics import schema as s
from forensics.errors import ForensicsError
from forensics.ingestion import prometheus_pull as pp
from forensics.report.backtest import local_prometheus
from forensics.report.postmortem import write_all
from tests.conftest import SAMPLES, write

SERVER = shutil.which("prometheus") is not None and shutil.which("promtool") is not None
needs_server = pytest.mark.skipif(
    not SERVER, reason="prometheus/promtool not installed (Debian package `prometheus`; CI installs it)"
)
T0 = datetime(2025, 3, 2, 8, 0, tzinfo=UTC)


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "forensics", *args], capture_output=True, text=True, timeout=300)


def dump_to_openmetrics(dump: str) -> str:
    """`promtool tsdb dump` lines (`{__name__="x", a="b"} v ms`) as OpenMetrics for backfilling."""
    out = []
    for line in dump.splitlines():
        m = re.match(r'\{__name__="([^"]+)", (.*)\} (\S+) (\d+)$', line)
        out.append(f"{m[1]}{{{m[2].replace(', ', ',')}}} {m[3]} {int(m[4]) / 1000:.3f}")
    return "\n".join([*out, "# EOF", ""])


def vllm_scrapes() -> str:
    """Twenty minutes of a vLLM pod's /metrics every 15 s, as a federate export (ms timestamps):
    the counters grow, the KV cache fills, a request waits from minute 12."""
    lines = []
    tokens = 0
    for i in range(80):
        ms = int((T0 + timedelta(seconds=15 * i)).timestamp() * 1000)
        tokens += 15 * (1800 + 10 * (i % 7))
        labels = 'engine="0",model_name="llama",pod="vllm-0"'
        lines += [
            f"vllm:generation_tokens_total{{{labels}}} {tokens} {ms}",
            f"vllm:kv_cache_usage_perc{{{labels}}} {min(0.3 + i * 0.01, 1.0):.2f} {ms}",
            f"vllm:num_requests_waiting{{{labels}}} {1 if i >= 48 else 0} {ms}",
            f"vllm:num_requests_running{{{labels}}} {40 + i % 3} {ms}",
        ]
    return "\n".join(lines) + "\n"


def as_openmetrics(federate: str) -> str:
    out = []
    for line in federate.splitlines():
        sel, value, ms = line.rsplit(" ", 2)
        out.append(f"{sel} {value} {int(ms) / 1000:.3f}")
    return "\n".join([*out, "# EOF", ""])


def rows(metrics: pl.DataFrame) -> list[tuple]:
    return sorted(metrics.select(s.TS, s.POD, s.METRIC, pl.col(s.VALUE).round(6)).iter_rows())


@needs_server
def test_pulled_vllm_series_equal_the_same_samples_parsed_from_an_export(tmp_path):
    text = vllm_scrapes()
    parsed = forensics.ingest(write(tmp_path / "export/federate.txt", text)).metrics
    with local_prometheus(as_openmetrics(text)) as url:
        report = forensics.analyze(
            [], prometheus=pp.Server(url=url), since=T0 - timedelta(minutes=5), until=T0 + timedelta(minutes=30)
        )
    pulled = report.ingest.metrics
    assert set(pulled[s.METRIC]) == {"generation_tokens_per_s", "gpu_kv_cache_usage", "waiting", "running"}
    assert rows(pulled) == rows(parsed)
    # each row cites its line of the pulled document
    assert pulled[s.FILE].str.starts_with("prometheus/").all()
    assert set(report.pulled.documents) == {"vllm.txt"}


@needs_server
def test_a_throttling_gpu_is_found_from_dcgm_series_pulled_instead_of_a_dump(tmp_path):
    logs = tmp_path / "gpu-throttle"
    shutil.copytree(SAMPLES / "gpu-throttle", logs, ignore=shutil.ignore_patterns("metrics"))
    dump = (SAMPLES / "gpu-throttle/metrics/dcgm-tsdb-dump.txt").read_text()
    with local_prometheus(dump_to_openmetrics(dump)) as url:
        pulled = forensics.analyze(logs, prometheus=pp.Server(url=url))
    exported = forensics.analyze(SAMPLES / "gpu-throttle")
    got, want = pulled.to_json()["incidents"][0], exported.to_json()["incidents"][0]
    assert got["root_cause"]["category"] == want["root_cause"]["category"] == "gpu-fault"
    assert got["root_cause"]["label"] == want["root_cause"]["label"]

    def slowdowns(r):
        ev = r.events.filter((pl.col(s.SOURCE) == "prometheus") & pl.col(s.MESSAGE).str.contains("held down"))
        return sorted(ev.select(s.TS, s.HOST, s.MESSAGE).iter_rows())

    assert slowdowns(pulled) == slowdowns(exported) and slowdowns(pulled)

    # the backtest reads the pulled DCGM series as they are: the slowdown rule fires on gpu-node-2
    write_all(pulled, tmp_path / "report", backtest=True)
    doc = json.loads((tmp_path / "report/analysis.json").read_text())["backtest"]
    rule = next(r for r in doc["rules"] if r["alert"] == "GPUClocksHeldDownByHardware")
    assert rule["fired"] and rule["labels"]["Hostname"] == "gpu-node-2", rule
    assert "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" in doc["series"] and doc["promtool"] == "passed"


@needs_server
def test_analyze_without_logs_pulls_the_window_and_keeps_the_documents(tmp_path):
    with local_prometheus(as_openmetrics(vllm_scrapes())) as url:
        p = run(
            "analyze", "--prometheus", url, "--since", "2025-03-02T07:55:00Z", "--until", "2025-03-02T08:30:00Z",
            "-o", str(tmp_path / "out"), "-q", "--no-backtest",
        )  # fmt: skip
    assert p.returncode == 0, p.stderr
    inputs = json.loads((tmp_path / "out/analysis.json").read_text())["input"]["paths"]
    assert inputs == [f"Prometheus {url} (2025-03-02T07:55:00Z to 2025-03-02T08:30:00Z, 4 metrics)"]
    kept = (tmp_path / "out/prometheus/vllm.txt").read_text()
    assert '\n{__name__="vllm:kv_cache_usage_perc", engine="0", model_name="llama", pod="vllm-0"} 0.3 ' in kept
    # the kept documents repeat the run offline
    again = forensics.ingest(tmp_path / "out/prometheus")
    assert again.metrics.height == 4 * 80 - 1  # (a counter's first sample gives no rate)


def test_an_unreachable_server_is_exit_1_with_what_to_check(tmp_path):
    write(tmp_path / "logs/vllm.log", "INFO 03-02 08:00:00 [x.py:1] Avg generation throughput: 10.0 tokens/s\n")
    p = run("analyze", str(tmp_path / "logs"), "--prometheus", "http://127.0.0.1:9", "-o", str(tmp_path / "o"), "-q")
    assert p.returncode == 1, p.stderr
    assert "cannot reach Prometheus at http://127.0.0.1:9" in p.stderr and "hint:" in p.stderr


def test_a_pull_without_logs_needs_its_window():
    p = run("analyze", "--prometheus", "http://127.0.0.1:9")
    assert p.returncode == 1 and "--since and --until" in p.stderr


class Fake(http.server.BaseHTTPRequestHandler):
    """A Prometheus API that refuses tokens other than `good`, answers `query=1`, refuses
    range queries longer than 20 minutes as too large, and serves one gauge sample a minute."""

    seen: list[dict] = []

    def do_GET(self):
        url = urlparse(self.path)
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        Fake.seen.append({"path": url.path, "auth": self.headers.get("Authorization"), **q})
        if self.headers.get("Authorization") != "Bearer good":
            return self._send(401, {"status": "error", "error": "unauthorized"})
        if url.path != "/api/v1/query":
            return self._send(404, {"status": "error", "error": "not found"})
        if q["query"] == "1":
            return self._send(200, {"status": "success", "data": {"resultType": "scalar", "result": [0, "1"]}})
        secs = int(re.search(r"\[(\d+)s\]$", q["query"])[1])
        if secs > 1200:
            return self._send(422, {"status": "error", "error": "query processing would load too many samples"})
        if "vllm:num_requests_waiting" not in q["query"]:
            return self._send(200, {"status": "success", "data": {"resultType": "matrix", "result": []}})
        end = float(q["time"])
        values = [[t, "2"] for t in range(int(end - secs), int(end) + 1) if t % 60 == 0 and t >= T0.timestamp()]
        if not values:
            return self._send(200, {"status": "success", "data": {"resultType": "matrix", "result": []}})
        metric = {"__name__": "vllm:num_requests_waiting", "pod": "vllm-0"}
        return self._send(200, {"status": "success", "data": {"resultType": "matrix", "result": [{"metric": metric, "values": values}]}})  # fmt: skip

    def _send(self, code: int, doc: dict) -> None:
        body = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args):
        pass


@pytest.fixture
def fake():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fake)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Fake.seen = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_refused_token_is_an_error_that_says_so(fake):
    with pytest.raises(ForensicsError, match="refused the credentials") as e:
        pp.pull(pp.Server(url=fake, token="bad"), T0, T0 + timedelta(hours=1))
    assert "--prometheus-token-file" in e.value.hint


def test_a_query_the_server_finds_too_large_is_asked_for_in_halves_and_nothing_is_lost(fake):
    pulled = pp.pull(pp.Server(url=fake, token="good"), T0, T0 + timedelta(hours=1))
    assert all(q["auth"] == "Bearer good" for q in Fake.seen)
    assert any(q.get("query", "").endswith("[900s]") for q in Fake.seen)  # 1 h -> 30 min -> 15 min
    doc = pulled.documents["vllm.txt"].splitlines()
    # one sample a minute over the hour, chunk boundaries not doubled
    assert len(doc) == 61 and len(set(doc)) == 61
    assert doc[0] == f'{{__name__="vllm:num_requests_waiting", pod="vllm-0"}} 2 {int(T0.timestamp() * 1000)}'


def test_a_pull_past_its_sample_cap_stops_and_says_what_it_left_out(fake, monkeypatch):
    monkeypatch.setattr(pp, "MAX_SAMPLES", 10)
    names = ("vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc")
    pulled = pp.pull(pp.Server(url=fake, token="good"), T0, T0 + timedelta(hours=1), names=names)
    assert list(pulled.documents) == ["vllm.txt"]
    assert any("left out" in n and "vllm:kv_cache_usage_perc" in n for n in pulled.notes)


def test_a_server_that_is_not_a_prometheus_api_is_named_as_such(tmp_path):
    class Html(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"<html>Grafana</html>")

        def log_message(self, *_args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Html)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(ForensicsError, match="did not answer as the Prometheus HTTP API"):
            pp.pull(pp.Server(url=f"http://127.0.0.1:{server.server_address[1]}"), T0, T0 + timedelta(hours=1))
    finally:
        server.shutdown()


def test_an_empty_answer_is_a_note_beside_the_logs_not_a_failure(fake, tmp_path):
    logs = write(
        tmp_path / "logs/vllm.log",
        "INFO 03-02 08:00:00 [loggers.py:1] Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation "
        "throughput: 10.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%\n",
    )
    report = forensics.analyze(
        logs, year=2025, prometheus=pp.Server(url=fake, token="good"), since=T0 - timedelta(days=30), until=T0 - timedelta(days=29)
    )  # fmt: skip
    assert any("has none of the series forensics reads" in w for w in report.ingest.warnings)
    assert report.ingest.metrics.height > 0
