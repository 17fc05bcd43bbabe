"""The command line: exit codes, outputs and messages."""

from __future__ import annotations

import json
import subprocess
import sys

import polars as pl

from tests.conftest import write


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
