"""Each sample incident against its ground truth, and the analysis.json contract (`forensics.diagnosis.analysis`)."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta

import pytest

from forensics import analyze
from forensics.report.postmortem import write_all
from tests.conftest import FAULT_SAMPLES, SAMPLES

FAULT_SCENARIOS = FAULT_SAMPLES


@pytest.fixture(scope="module")
def analyses() -> dict[str, dict]:
    return {name: analyze(SAMPLES / name).to_json() for name in [*FAULT_SCENARIOS, "healthy"]}


def _truth(name: str) -> dict:
    return json.loads((SAMPLES / name / "ground_truth.json").read_text())


@pytest.mark.parametrize("name", FAULT_SCENARIOS)
def test_root_cause_category_and_host_match_the_ground_truth(analyses, name):
    truth = _truth(name)["root_cause"]
    incidents = analyses[name]["incidents"]
    assert len(incidents) == 1, [i["start"] for i in incidents]
    rc = incidents[0]["root_cause"]
    assert rc["status"] == "supported" and rc["confidence"] >= 0.5
    assert rc["category"] == truth["category"]
    if truth["host"]:
        assert rc["hosts"][0] == truth["host"]


def test_the_new_samples_name_what_their_class_of_fault_shows(analyses):
    # Each sample of issue 44's classes: its detector, and the values the verdict rests on.
    rollout, throttle, silent, start = (
        analyses[n]["incidents"][0] for n in ("config-rollout", "gpu-throttle", "silent-kv", "startup-failure")
    )
    assert (
        "gpu_memory_utilization 0.92 → 0.6; GPU KV cache size 1,843,200 → 614,400 tokens"
        in rollout["root_cause"]["label"]
    )
    assert throttle["impact"]["detector"] == "replica-slowdown"
    assert "qwen-72b-6c8f9d7b5-lft7s" in throttle["impact"]["affected"]
    assert "HW Thermal Slowdown" in throttle["root_cause"]["evidence"][0]["text"]
    assert silent["root_cause"]["template_id"] == "metric:kv-full-no-queue"
    assert any(h["role"] == "symptom" and "sampler" in h["label"] for h in silent["hypotheses"])
    assert start["impact"]["detector"] == "startup-failure"
    assert any("no routable address" in w for w in start["root_cause"]["why"])


@pytest.mark.parametrize("name", FAULT_SCENARIOS)
def test_incident_window_covers_the_true_impact_start(analyses, name):

    truth = _truth(name)["impact"]
    inc = analyses[name]["incidents"][0]
    start = datetime.fromisoformat(inc["start"])
    true_start = datetime.fromisoformat(truth["start"])
    assert abs(start - true_start) <= timedelta(minutes=2)


def test_healthy_day_has_no_incident(analyses):
    assert analyses["healthy"]["incidents"] == []


def test_nccl_watchdog_timeouts_and_pod_restarts_are_ranked_as_symptoms_in_cache_corruption(analyses):
    inc = analyses["cache-corruption"]["incidents"][0]
    roles = {h["template"]: h["role"] for h in inc["hypotheses"]}
    watchdog = [r for t, r in roles.items() if "Watchdog caught collective operation timeout" in t]
    restarts = [r for t, r in roles.items() if t.startswith(("BackOff:", "Killing:", "Unhealthy:"))]
    assert watchdog == ["symptom"] and restarts and set(restarts) == {"symptom"}
    assert inc["hypotheses"][0]["role"] == "root_cause" and inc["hypotheses"][0]["category"] == "kv-cache"


def test_cache_corruption_reports_the_tell_the_trigger_the_recurrence_and_the_fix(analyses):
    inc = analyses["cache-corruption"]["incidents"][0]
    assert inc["tell"]["kind"] == "kv-full-empty-queue" and inc["tell"]["start"] < inc["root_cause"]["first_seen"]
    assert inc["trigger"]["kind"] == "traffic surge" and inc["trigger"]["ratio"] > 1.25
    assert len(inc["impact"]["partial_recoveries"]) >= 2
    assert inc["resolution"]["kind"] == "rollout"
    assert any("evictfix" in d["text"] for d in inc["resolution"]["details"])
    # The last restart had brought throughput back (08:45:30) before the fix rolled out (08:51:30).
    assert inc["resolution"]["after_recovery"] is True and inc["resolution"]["recovered"] < inc["resolution"]["ts"]
    assert any("recurs" in w for w in inc["root_cause"]["why"])
    assert inc["impact"]["http_5xx"] > 0 and inc["min_tokens_per_s"] == 0.0
    assert inc["impact"]["http_requests"] > inc["impact"]["http_5xx"]


def test_a_saturation_names_the_same_peak_queue_in_its_reasons_as_in_its_impact(analyses):
    inc = analyses["kv-pressure"]["incidents"][0]
    peak = round(inc["impact"]["peak_waiting"])
    assert f"with {peak:,} requests waiting" in inc["root_cause"]["why"][0]


def test_evidence_points_at_the_real_file_and_line(analyses):
    ev = analyses["cache-corruption"]["incidents"][0]["root_cause"]["evidence"][0]
    line = (SAMPLES / "cache-corruption" / ev["file"]).read_text().splitlines()[ev["line"] - 1]
    assert "Cache corruption detected in block" in line and ev["text"].split("\n")[0] in line


def test_clock_offsets_recover_the_generated_node_skew(analyses):
    truth = _truth("cache-corruption")["clock_skew_s"]
    got = analyses["cache-corruption"]["clock_offsets"]
    assert set(got) == set(truth)
    for node, skew in truth.items():
        assert abs(got[node] - skew) < 1.2, (node, got[node], skew)


def test_analysis_json_has_the_contract_fields(analyses):
    d = analyses["cache-corruption"]
    assert {"files", "lines", "parsed", "unparsed", "skipped"} <= set(d["input"])
    inc = d["incidents"][0]
    assert {
        "start",
        "end",
        "baseline_tokens_per_s",
        "min_tokens_per_s",
        "root_cause",
        "hypotheses",
        "timeline",
        "clock_offsets",
    } <= set(inc)
    assert {"status", "confidence", "category", "template", "template_id", "hosts", "first_seen", "evidence"} <= set(
        inc["root_cause"]
    )
    h = inc["hypotheses"][0]
    assert {
        "rank",
        "role",
        "category",
        "template",
        "template_id",
        "score",
        "first_seen",
        "hosts",
        "count",
        "why",
    } <= set(h)
    assert {"ts", "host", "source", "template_id", "summary", "file", "line"} <= set(inc["timeline"][0])
    assert [x["ts"] for x in inc["timeline"]] == sorted(x["ts"] for x in inc["timeline"])


def test_the_same_logs_give_byte_identical_analysis(tmp_path):
    a = write_all(analyze(SAMPLES / "gpu-oom"), tmp_path / "a")["analysis"].read_bytes()
    b = write_all(analyze(SAMPLES / "gpu-oom"), tmp_path / "b")["analysis"].read_bytes()
    assert a == b


def test_cli_analyze_prints_the_verdict_and_writes_analysis_json(tmp_path):
    import subprocess
    import sys

    p = subprocess.run(
        [sys.executable, "-m", "forensics", "analyze", str(SAMPLES / "cache-corruption"), "--out", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        env={"COLUMNS": "200", "PATH": ""},
    )
    assert p.returncode == 0, p.stderr
    assert "root cause supported" in p.stdout and "kv-cache" in p.stdout and "symptom: collective-timeout" in p.stdout
    assert (
        json.loads((tmp_path / "r" / "analysis.json").read_text())["incidents"][0]["root_cause"]["category"]
        == "kv-cache"
    )


_VLLM_TEXT = re.compile(
    r"^(?P<ts>\S+) (?P<pre>\((?P<proc>\w+) pid=(?P<pid>\d+)\) )?(?P<hdr>(?P<level>INFO|WARNING|ERROR) "
    r"\d\d-\d\d (?P<t>\d\d:\d\d:\d\d) \[(?P<file>[\w./]+)\.py:\d+\]) (?P<msg>.*)$"
)


def _as_vllm_json_logs(text: str) -> str:
    """kubectl-stamped vLLM text lines as vLLM's JSON formatter writes them: one record per log
    record (the lines of a message, which repeat its header, in one), behind the process
    prefix, the time local and to the second; any other line as it was."""
    out: list[str | list] = []
    for line in text.splitlines():
        m = _VLLM_TEXT.match(line)
        if m is None:
            out.append(line)
            continue
        last = out[-1] if out else None
        if isinstance(last, list) and last[0] == (m["pre"], m["hdr"]):
            last[2]["message"] += "\n" + m["msg"]
            continue
        record = {
            "asctime": f"{m['ts'][:10]} {m['t']},000",
            "levelname": m["level"],
            "name": "vllm." + m["file"].replace("/", "."),
            "process": int(m["pid"] or 1),
            "message": m["msg"],
            "vllm_process_name": m["proc"] or "MainProcess",
        }
        out.append([(m["pre"], m["hdr"]), f"{m['ts']} {m['pre'] or ''}", record])
    return "".join((e if isinstance(e, str) else e[1] + json.dumps(e[2])) + "\n" for e in out)


def test_a_deployment_logging_json_gets_the_root_cause_and_window_its_text_logs_give(tmp_path, analyses):
    # The same outage, its engines logging with `--logging-config.formatter json`: the metrics,
    # the corruption and the symptoms come from the records, and the verdict is the text logs'.
    import shutil

    shutil.copytree(SAMPLES / "cache-corruption", tmp_path / "logs")
    for f in (tmp_path / "logs" / "kubectl-logs").glob("*.log"):
        f.write_text(_as_vllm_json_logs(f.read_text()))
    assert '{"asctime"' in (tmp_path / "logs" / "kubectl-logs" / "llama-70b-7d9c5b8f6-t2q8j.previous-0.log").read_text()
    got = analyze(tmp_path / "logs").to_json()
    want = analyses["cache-corruption"]
    assert got["input"]["unparsed"] == want["input"]["unparsed"] == 0
    assert len(got["incidents"]) == 1
    inc, text = got["incidents"][0], want["incidents"][0]
    assert (inc["start"], inc["baseline_tokens_per_s"]) == (text["start"], text["baseline_tokens_per_s"])
    keys = ("status", "category", "template", "hosts", "first_seen")
    assert {k: inc["root_cause"][k] for k in keys} == {k: text["root_cause"][k] for k in keys}
