"""The postmortem: golden files, escaping of hostile log text, plots, HTML and alert rules."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from forensics import analyze
from forensics.report import render as rpt
from forensics.report.postmortem import write_all
from tests.conftest import FAULT_SAMPLES, GOLDEN, SAMPLES
from tests.conftest import write as write_file

FAULTS = FAULT_SAMPLES
NAMES = [*FAULTS, "healthy"]
PROMTOOL = shutil.which("promtool")


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("reports")
    out = {}
    # The report shows input paths as the user typed them: run from the repo root with
    # relative paths so the golden files do not depend on where the checkout lives.
    cwd = os.getcwd()
    os.chdir(SAMPLES.parent)
    try:
        for name in NAMES:
            d = base / name
            write_all(analyze(Path("samples") / name), d, fmt="html", command=f"forensics analyze samples/{name}")
            out[name] = d
    finally:
        os.chdir(cwd)
    return out


@pytest.mark.parametrize("name", NAMES)
def test_postmortem_matches_its_golden_file_byte_for_byte(outputs, name):
    got = (outputs[name] / "postmortem.md").read_text()
    golden = GOLDEN / f"{name}.md"
    if os.environ.get("FORENSICS_UPDATE_GOLDEN"):
        golden.write_text(got)
    assert got == golden.read_text(), f"run FORENSICS_UPDATE_GOLDEN=1 pytest {__file__} after checking the diff"


def test_postmortem_has_the_sre_sections_in_order(outputs):
    md = (outputs["cache-corruption"] / "postmortem.md").read_text()
    sections = [
        "## Summary",
        "## Impact",
        "## Root cause",
        "## Trigger",
        "## Detection",
        "## Resolution",
        "## Symptoms and red herrings",
        "## Timeline (UTC)",
        "## Action items",
        "## Recommended alerts",
        "## Appendix",
    ]
    positions = [md.index(s) for s in sections]
    assert positions == sorted(positions)
    assert "![throughput](throughput.png)" in md and "```mermaid" in md
    assert "NCCL watchdog timeout" in md.split("## Symptoms and red herrings")[1].split("## Timeline")[0]


def test_healthy_postmortem_says_no_incident(outputs):
    md = (outputs["healthy"] / "postmortem.md").read_text()
    assert md.startswith("# Postmortem: no incident found") and not (outputs["healthy"] / "alerts.yaml").exists()


def _table_rows(md: str) -> list[str]:
    return [line for line in md.splitlines() if line.startswith("|")]


def _cells(row: str) -> int:
    return len(re.findall(r"(?<!\\)\|", row)) - 1


HOSTILE = [
    "INFO 03-02 10:00:00 [x.py:1] warmup",
    "ERROR 03-02 10:00:05 [core.py:720] EngineCore encountered a fatal error.",
    "ERROR 03-02 10:00:05 [core.py:720] Traceback (most recent call last):",
    "ERROR 03-02 10:00:05 [core.py:720] RuntimeError: Cache corruption detected in block 7 | col ``` `tick` <script>alert(1)</script> # Header",
    "[2025-03-02 10:00:04,000] LMCache ERROR: Cache corruption detected in block 7 ```` | <b>bold</b> \n",
    "[2025-03-02 10:00:04,100] LMCache ERROR: Cache corruption detected in block 8 " + "x" * 20000,
    "# not a header | **not bold** _x_ <img src=x onerror=alert(1)>",
]


def test_hostile_log_lines_never_break_the_markdown(tmp_path):
    write_file(tmp_path / "logs/vllm-0.log", "\n".join(HOSTILE) + "\n")
    out = write_all(analyze(tmp_path / "logs", year=2025), tmp_path / "out", fmt="html")
    md = out["postmortem"].read_text()
    # Every table row has as many cells as its header row.
    for block in re.split(r"\n\n+", md):
        rows = _table_rows(block)
        if len(rows) >= 2:
            assert len({_cells(r) for r in rows}) == 1, rows
    # Fences balance: nothing inside a code block closes it early.
    fences = re.findall(r"^\s*(`{3,})(\w*)$", md, flags=re.M)
    assert len(fences) % 2 == 0
    # Outside code spans and blocks (where Markdown shows text verbatim) no raw HTML survives.
    prose = re.sub(r"^( *)(`{3,})[^\n]*\n.*?^\1\2$", "", md, flags=re.M | re.S)
    prose = re.sub(r"(`+).*?\1", "", prose)
    assert "<script" not in prose and "<img" not in prose and "<b>" not in prose
    assert "x" * 1000 not in md  # the 20,000-character line is cut wherever it lands
    assert max(len(line) for line in md.splitlines()) < 5000
    html = out["html"].read_text()
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_markdown_filters_escape_each_context():
    assert rpt.cell("a|b\nc `d` <e>") == "a\\|b c \\`d\\` &lt;e&gt;"
    assert rpt.inline("x ``` y").startswith("````")
    block = rpt.code("a\n```\nb")
    assert block.startswith("````text\n") and block.endswith("\n````")
    assert rpt.code("\n".join(str(i) for i in range(100)), max_lines=5).count("\n") == 7


def test_plots_are_written_and_deterministic(outputs, tmp_path):
    d = outputs["cache-corruption"]
    for name in ("throughput.png", "throughput.svg", "kv_usage.png"):
        assert (d / name).stat().st_size > 5000
    again = tmp_path / "again"
    cwd = os.getcwd()
    os.chdir(SAMPLES.parent)
    try:
        write_all(
            analyze(Path("samples/cache-corruption")), again, command="forensics analyze samples/cache-corruption"
        )
    finally:
        os.chdir(cwd)
    for name in ("throughput.png", "throughput.svg", "kv_usage.png", "postmortem.md", "analysis.json", "alerts.yaml"):
        assert (again / name).read_bytes() == (d / name).read_bytes(), name


def test_plots_leave_out_what_has_no_place_on_the_time_axis_and_are_still_written(outputs, tmp_path):
    # An incident the logs could not time (its files had no timestamps), beside a series from
    # files that had them; a symptom first seen on a line whose clock said year 9999; a root
    # cause of another incident in 1970. Before, the first failed the report on `None` and the
    # second on the years matplotlib can draw; now they are left out of the plots, which are
    # otherwise the plots of the same analysis without them.
    import json

    from forensics.report import plots

    analysis = json.loads((outputs["cache-corruption"] / "analysis.json").read_text())
    plain = tmp_path / "plain"
    plain.mkdir()
    written = plots.throughput(analysis, plain) + plots.kv_usage(analysis, plain)
    first = analysis["incidents"][0]
    far = dict(first["hypotheses"][-1], role="symptom", category="far-future", first_seen="9999-03-02T08:08:21Z")
    first["hypotheses"].append(far)
    untimed = dict(first, start=None, end=None, tell=None)
    old = dict(first, root_cause=dict(first["root_cause"], first_seen="1970-01-01T00:00:05Z"))
    old.update(start="1970-01-01T00:00:00Z", end="1970-01-01T00:10:00Z")
    analysis["incidents"] += [untimed, old]
    marked = tmp_path / "marked"
    marked.mkdir()
    again = plots.throughput(analysis, marked) + plots.kv_usage(analysis, marked)
    assert [p.name for p in again] == [p.name for p in written] == ["throughput.png", "throughput.svg", "kv_usage.png"]
    for p in written:
        assert (marked / p.name).read_bytes() == p.read_bytes(), p.name


def test_html_report_is_self_contained(outputs):
    html = (outputs["cache-corruption"] / "postmortem.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "data:image/png;base64," in html
    assert "Cache corruption detected" in html and "</html>" in html


def test_a_custom_template_replaces_the_default(tmp_path):
    tpl = write_file(
        tmp_path / "mine.md.j2", "# {{ analysis.incidents[0].root_cause.category }} | {{ ctx.incidents[0].headline }}\n"
    )
    out = write_all(analyze(SAMPLES / "gpu-oom"), tmp_path / "out", template=tpl)
    assert out["postmortem"].read_text().startswith("# gpu-memory | GPU out of memory on gpu-node-1")


def test_alert_rules_are_a_prometheusrule_with_the_required_fields(outputs):
    import yaml

    doc = yaml.safe_load((outputs["cache-corruption"] / "alerts.yaml").read_text())
    assert doc["apiVersion"] == "monitoring.coreos.com/v1" and doc["kind"] == "PrometheusRule"
    rules = doc["spec"]["groups"][0]["rules"]
    names = {r["alert"] for r in rules}
    assert {
        "VLLMThroughputCollapse",
        "VLLMRequestLatencyP99High",
        "VLLMKVCacheFullWithoutQueueing",
        "NCCLCommunicationFailure",
        "NCCLAllReduceLatencySpike",
    } <= names
    assert any(
        "histogram_quantile(0.99" in r["expr"] and "vllm:e2e_request_latency_seconds_bucket" in r["expr"] for r in rules
    )
    for r in rules:
        assert r["for"] and r["labels"]["severity"] in ("critical", "warning", "info")
        assert {"summary", "description", "runbook_url"} <= set(r["annotations"])


def test_alerts_format_prometheus_writes_a_plain_rules_file(tmp_path):
    import yaml

    out = write_all(analyze(SAMPLES / "nccl-network"), tmp_path / "o", alerts_format="prometheus")
    doc = yaml.safe_load(out["alerts"].read_text())
    assert "groups" in doc and "kind" not in doc


def test_the_alert_tests_expect_only_the_rules_written_for_the_incident():
    # A KV-cache hypothesis that is only an impact (no tell) writes no KV-cache rule; its
    # test was still written and looked the rule up: a KeyError that failed the report.
    import yaml

    from forensics.report import alerts

    hyp = {"category": "kv-cache", "role": "impact", "label": "KV cache usage", "status": "supported"}
    analysis = {
        "incidents": [
            {
                "root_cause": {"category": "gpu-fault", "label": "GPU / CUDA fault"},
                "hypotheses": [hyp],
                "tell": None,
                "baseline_tokens_per_s": 1800.0,
            }
        ]
    }
    written = {r.alert for r in alerts.rules_for(analysis)}
    tested = {
        t["alertname"] for t in yaml.safe_load(alerts.promtool_test("r.yaml", analysis))["tests"][0]["alert_rule_test"]
    }
    assert "VLLMKVCacheFullWithoutQueueing" not in written
    assert tested and tested <= written


@pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (Debian package `prometheus`; CI installs it)")
@pytest.mark.parametrize("name", FAULTS)
def test_promtool_accepts_the_rules_and_the_incident_fixture_fires_the_alerts(outputs, name):
    d = outputs[name]
    check = subprocess.run([PROMTOOL, "check", "rules", "alerts.rules.yaml"], cwd=d, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    test = subprocess.run([PROMTOOL, "test", "rules", "alerts_test.yaml"], cwd=d, capture_output=True, text=True)
    assert test.returncode == 0 and "SUCCESS" in test.stdout, test.stdout + test.stderr


def test_a_cause_seen_on_no_named_node_and_at_no_time_reads_as_such(tmp_path):
    # A bare `kubectl describe pod` Events section, as pasted into a ticket: no pod name, no
    # node, relative ages only. The report must not say "on -", "first seen -" or "ends at -".
    write_file(
        tmp_path / "logs/describe.txt",
        "Events:\n"
        "  Type     Reason            Age   From               Message\n"
        "  ----     ------            ----  ----               -------\n"
        "  Warning  FailedScheduling  29m   default-scheduler  0/4 nodes are available: 4 Insufficient "
        "nvidia.com/gpu. preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod.\n",
    )
    out = write_all(analyze(tmp_path / "logs"), tmp_path / "out")
    md = out["postmortem"].read_text()
    assert "Insufficient nvidia.com/gpu" in md and "(`capacity`)" in md
    for dangling in (" on -", " on .", "first seen -", "ends at -", " on :"):
        assert dangling not in md, dangling
    assert "first in these untimed logs" in md


def test_no_incident_report_still_lists_error_lines_no_signature_explains(tmp_path):
    # The API server's traceback pasted without its exception line: nothing classifies it (an
    # engine's would be an engine failure), so no incident, but the reader must see that errors
    # were logged, where, and how often.
    prefix = "(APIServer pid=8812) ERROR 06-11 09:14:02 [serving_chat.py:222] "
    body = [
        "Error in preprocessing prompt inputs",
        "Traceback (most recent call last):",
        '  File "/opt/vllm/vllm/entrypoints/openai/serving_chat.py", line 205, in create_chat_completion',
        "    ) = await self._preprocess_chat(",
        "        ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    ]
    write_file(tmp_path / "logs/engine.log", "".join(prefix + b + "\n" for b in body))
    out = write_all(analyze(tmp_path / "logs", year=2025), tmp_path / "out")
    md = out["postmortem"].read_text()
    assert md.startswith("# Postmortem: no incident found")
    assert "match no known fault or symptom" in md
    # These logs have no throughput series: nothing may be said of throughput's range.
    assert "Throughput stayed" not in md and "no throughput series in these logs" in md
    row = next(line for line in md.splitlines() if "Error in preprocessing prompt inputs" in line)
    assert "| 1 | 09:14:02 | engine.log:1 |" in row
    healthy = write_all(analyze(SAMPLES / "healthy"), tmp_path / "healthy")["postmortem"].read_text()
    assert "match no known fault or symptom" not in healthy


def test_the_replay_verdict_keeps_its_code_spans(outputs):
    # The verdict is the tool's own Markdown (policy names in code spans): shown as code, not as
    # escaped backticks; what a log could carry (HTML) is still neutralised.
    analysis = json.loads((outputs["cache-corruption"] / "analysis.json").read_text())
    replay = {
        "requests": 3000,
        "rate_scale": 1.0,
        "load": None,
        "runs": [],
        "verdict": "Replay: the correct policy `lru` corrupted 0 of 3,000 requests; `lru-evict-live` <b>3,000</b>.",
    }
    md = rpt.render(analysis, fmt="md", replay=replay)
    assert "the correct policy `lru` corrupted 0" in md and "\\`" not in md.split("### Replay")[1].split("## ")[0]
    assert "&lt;b&gt;3,000&lt;/b&gt;" in md


def test_the_mermaid_gantt_names_each_section_once(outputs):
    for name in FAULTS:
        md = (outputs[name] / "postmortem.md").read_text()
        for block in re.findall(r"```mermaid\n(gantt.*?)```", md, flags=re.S):
            sections = re.findall(r"^    section (.+)$", block, flags=re.M)
            assert len(sections) == len(set(sections)), (name, sections)


def test_the_throughput_plot_labels_each_kind_of_mark_once_in_a_legend_beside_the_axes(outputs):
    svg = (outputs["cache-corruption"] / "throughput.svg").read_text()
    assert svg.count(">root cause: kv-cache<") == 1 and svg.count(">symptom: collective-timeout<") == 1
    assert svg.count("collective-timeout") == 1  # (no rotated label on the line itself)


def test_a_klog_quoted_value_reads_in_a_table_cell_without_escape_noise():
    from forensics.report.render import cell

    klog = 'E0302 08:07:42 "Error syncing pod" err="failed to \\"StartContainer\\" for \\"vllm\\"" pod="a|b"'
    assert cell(klog) == 'E0302 08:07:42 "Error syncing pod" err="failed to "StartContainer" for "vllm"" pod="a\\|b"'
    # a backslash that escapes nothing stays, doubled for Markdown
    assert cell("C:\\logs") == "C:\\\\logs"


def test_a_skipped_files_reason_shows_the_command_it_names_as_code_not_escaped_backticks(outputs):
    # The sample's trace is skipped with "replay it with `forensics replay`": a code span in the
    # table, where `cell` alone would print \`forensics replay\`. Text around it is still escaped.
    from forensics.report.render import cell_with_code

    md = (outputs["cache-corruption"] / "postmortem.md").read_text()
    assert "replay it with `forensics replay` |" in md and "\\`forensics replay\\`" not in md
    assert cell_with_code("a `x | y` and *b* <i>") == "a `x \\| y` and \\*b\\* &lt;i&gt;"
    assert cell_with_code("one ` tick") == "one \\` tick"
