"""The command line: exit codes, outputs and messages."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import polars as pl
import pytest

from tests.conftest import SAMPLES, write


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "forensics", *args], capture_output=True, text=True, timeout=300)


def test_ingest_writes_parquet_and_accounting_and_exits_0(incident_dir, tmp_path):
    out = tmp_path / "out"
    p = run("ingest", str(incident_dir), "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert "lines in 5 files" in p.stdout and "0 unparsed" in p.stdout
    assert pl.read_parquet(out / "events.parquet").height > 10
    assert pl.read_parquet(out / "metrics.parquet").height > 0
    acc = json.loads((out / "ingest.json").read_text())
    assert acc["lines"] == acc["parsed"] + acc["folded"] + acc["unparsed"]


def test_ingest_reports_skipped_files_and_still_exits_0(tmp_path):
    write(tmp_path / "logs/core.bin", bytes(range(256)) * 50)
    write(tmp_path / "logs/ok.log", "INFO 03-02 10:00:00 [x.py:1] fine\n")
    p = run("ingest", str(tmp_path / "logs"), "--out", str(tmp_path / "out"), "--year", "2025")
    assert p.returncode == 0, p.stderr
    assert "skipped core.bin: binary file" in p.stdout


def test_ingest_of_nothing_readable_exits_1_with_a_hint(tmp_path):
    p = run("ingest", str(tmp_path / "missing"), "--out", str(tmp_path / "out"))
    assert p.returncode == 1
    assert "error: no log lines could be read" in p.stderr and "hint:" in p.stderr


def test_usage_error_exits_2():
    p = run("ingest")
    assert p.returncode == 2


def test_version_flag_prints_the_version():
    from forensics import __version__

    p = run("--version")
    assert p.returncode == 0 and p.stdout.strip() == f"forensics {__version__}"


def test_analyze_with_no_incident_still_points_at_error_lines_nothing_explains(tmp_path):
    # The API server's traceback with no known fault in it: "no incident" must not read as "all clear".
    write(
        tmp_path / "logs/vllm-0.log",
        "(APIServer pid=7) ERROR 09-17 04:06:37 [serving_chat.py:222] Traceback (most recent call last):\n"
        '(APIServer pid=7) ERROR 09-17 04:06:37 [serving_chat.py:222]   File "serving_chat.py", line 205, in create\n'
        "(APIServer pid=7) ERROR 09-17 04:06:37 [serving_chat.py:222]     ) = await self._preprocess_chat(\n",
    )
    p = run("analyze", str(tmp_path / "logs"), "--out", str(tmp_path / "out"), "--year", "2025")
    assert p.returncode == 0, p.stderr
    out = " ".join(p.stdout.split())  # (rich wraps to the terminal's width)
    assert "No incident found: no fault bursts, and no throughput series in these logs to look for a drop in." in out
    assert "1 error-level message(s) match no known fault or symptom (1 template(s), first at vllm-0.log:1)" in out


def test_analyze_into_an_out_that_is_a_file_says_so_and_exits_1(tmp_path):
    write(tmp_path / "logs/vllm.log", "INFO 03-14 10:00:01 [api_server.py:1] vLLM API server version 0.10.2\n")
    write(tmp_path / "report", "not a directory\n")
    p = run("analyze", str(tmp_path / "logs"), "--out", str(tmp_path / "report"), "-q")
    assert p.returncode == 1, p.stderr
    assert "is a file, not a directory" in p.stderr and "Traceback" not in p.stderr


def test_markup_and_terminal_escapes_from_the_logs_are_printed_as_text(tmp_path):
    # A file name and a log line carrying rich markup, an OSC title sequence and HTML: the console
    # shows them as they are, sends no escape to the terminal, and the postmortem holds no raw HTML.
    head = "2025-03-02T10:00:00.000000000Z (EngineCore_DP0 pid=9) ERROR 03-02 10:00:00 [core.py:708] "
    body = (
        head
        + "EngineCore encountered a fatal error.\n"
        + head
        + "Traceback (most recent call last):\n"
        + head
        + "torch.OutOfMemoryError: CUDA out of memory [/] [link=http://evil.example]x[/link] \x1b]0;pwned\x07 "
        "<img src=x onerror=alert(1)>\n"
    )
    write(tmp_path / "logs" / "vllm-[x]y.log", body)
    p = run("analyze", str(tmp_path / "logs"), "--out", str(tmp_path / "out"))
    assert p.returncode == 0, p.stderr
    out = " ".join(p.stdout.split())
    assert "\x1b" not in p.stdout and "\\x1b]" in out
    assert "vllm-[x]y" in out and "[link=http://evil.example]x[/link]" in out
    md = (tmp_path / "out" / "postmortem.md").read_text()
    prose = re.sub(r"(`+)(.+?)\1", "", re.sub(r"```.*?```", "", md, flags=re.S))
    assert "<img" not in prose


def test_console_output_piped_to_a_file_is_not_wrapped(tmp_path):
    p = run("analyze", str(SAMPLES / "gpu-oom"), "--out", str(tmp_path / "out"))
    assert p.returncode == 0, p.stderr
    root = next(line for line in p.stdout.splitlines() if line.startswith("  root cause"))
    assert len(root) > 80 and "from 2025-" in root  # (one line, not cut at 80 columns)


def test_the_templates_table_piped_to_a_file_keeps_each_template_on_its_row():
    # rich lays a table out 80 columns wide off a terminal: the template column came out four
    # characters wide, each template broken over a dozen lines.
    # (`COLUMNS`, when exported, is the width asked for: left out here, as a shell leaves it)
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    p = subprocess.run(
        [sys.executable, "-m", "forensics", "templates", str(SAMPLES / "gpu-oom"), "--top", "5"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert p.returncode == 0, p.stderr
    rows = [line for line in p.stdout.splitlines() if "Avg prompt throughput: <NUM> tokens/s" in line]
    assert rows and all("│" in r for r in rows)  # (the template's head sits on its own row)


def test_ray_engine_with_no_cluster_to_join_is_an_error_with_a_hint_not_a_bug(tmp_path):
    pytest.importorskip("ray")
    p = run(
        "analyze", str(SAMPLES / "healthy"), "--out", str(tmp_path / "out"), "--engine", "ray", "--ray-address", "auto"
    )
    assert p.returncode == 1, p.stderr
    assert "cannot start or reach Ray at auto" in p.stderr and "ray start --head" in p.stderr


@pytest.mark.parametrize(
    "args, says",
    [
        (["analyze", "{logs}", "--engine", "pool", "--workers", "-3"], "--workers -3 is out of range"),
        (["analyze", "{logs}", "--replay", "--replay-blocks", "-1"], "--replay-blocks -1 is out of range"),
        (["analyze", "{logs}", "--replay", "--replay-rate-scale", "nan"], "--replay-rate-scale nan is out of range"),
        (["analyze", "{logs}", "--replay", "--replay-max-requests", "0"], "--replay-max-requests 0 is out of range"),
        (["replay", "{trace}", "--rate-scale", "0"], "--rate-scale 0.0 is out of range"),
        (["replay", "{trace}", "--blocks", "0"], "--blocks 0 is out of range"),
        (["replay", "{trace}", "--device", "tpu"], "unknown --device 'tpu'"),
        (["replay", "{trace}", "--out", "{file}"], "is a file, not a directory"),
        (["templates", "{logs}", "--save", "{dir}"], "is a directory"),
        (["ingest", "{logs}", "--out", "{file}"], "is a file, not a directory"),
    ],
)
def test_a_bad_option_value_is_exit_1_with_a_hint_never_a_traceback(tmp_path, args, says):
    logs = write(tmp_path / "logs/vllm.log", "INFO 03-02 10:00:00 [x.py:1] fine\n").parent
    trace = write(tmp_path / "trace.jsonl", '{"timestamp": 0, "input_length": 10, "output_length": 5}\n')
    file = write(tmp_path / "a-file", "x")
    filled = [a.format(logs=logs, trace=trace, file=file, dir=tmp_path) for a in args]
    p = run(*filled)
    assert p.returncode == 1, p.stderr
    assert says in p.stderr and "hint:" in p.stderr and "internal error" not in p.stderr
