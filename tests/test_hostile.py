"""Hostile and broken inputs: nothing read outside the given paths, no crash on odd but legal
trees and names, every skip said, and a report written all or nothing (issue 45)."""

from __future__ import annotations

import errno
import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from forensics import analyze
from forensics.errors import ForensicsError
from forensics.ingestion import files as _files
from forensics.ingestion import limits
from forensics.report import postmortem
from forensics.report.postmortem import write_all
from tests.conftest import SAMPLES
from tests.conftest import write as write_file

LINE = (
    "INFO 03-14 10:00:01 [loggers.py:123] Engine 000: Avg prompt throughput: 10.0 tokens/s, Avg generation "
    "throughput: 20.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%\n"
)


def _skipped(report) -> dict[str, str]:
    return {k.file: k.reason for k in report.ingest.skipped}


def test_a_symlink_out_of_the_log_directory_is_never_read(tmp_path):
    secret = tmp_path / "elsewhere" / "secret.txt"
    write_file(secret, "AWS_SECRET_ACCESS_KEY=hunter2\n")
    logs = tmp_path / "logs"
    write_file(logs / "vllm.log", LINE)
    (logs / "env.log").symlink_to(secret)
    (logs / "etc").symlink_to(secret.parent, target_is_directory=True)
    report = analyze(logs)
    skipped = _skipped(report)
    assert skipped["env.log"].startswith(f"symlink to {secret}, outside the paths given")
    assert "outside the paths given" in skipped["etc"]
    assert not report.events.filter(report.events["message"].str.contains("hunter2")).height
    md = write_all(report, tmp_path / "out")["postmortem"].read_text()
    assert "hunter2" not in md and "env.log" in md  # (listed among the skipped, with why)


def test_a_symlink_inside_the_log_directory_is_still_followed(tmp_path):
    logs = tmp_path / "logs"
    write_file(logs / "pods" / "vllm-0.log", LINE)
    (logs / "containers").mkdir()
    (logs / "containers" / "vllm-0.log").symlink_to(logs / "pods" / "vllm-0.log")
    report = analyze(logs)
    assert report.ingest.lines == 1
    assert _skipped(report) == {"pods/vllm-0.log": "same file as containers/vllm-0.log (symlink); read once"}


def test_an_endless_special_file_behind_a_symlink_is_skipped_not_read(tmp_path):
    write_file(tmp_path / "vllm.log", LINE)
    (tmp_path / "kmsg.log").symlink_to("/dev/zero")
    assert "never read" in _skipped(analyze(tmp_path))["kmsg.log"]


def test_a_tree_far_deeper_than_recursion_allows_is_read_to_a_depth_and_the_rest_said(tmp_path):
    write_file(tmp_path / "vllm.log", LINE)
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        for _ in range(1100):  # (os.makedirs itself recurses: one level at a time)
            os.mkdir("d")
            os.chdir("d")
        Path("deep.log").write_text(LINE)
    finally:
        os.chdir(here)
    try:
        files, skipped = _files.discover([tmp_path])
    finally:
        _remove_deep(tmp_path / "d")  # (pytest's own clean-up recurses, and would fail on it)
    assert [f.rel for f in files] == ["vllm.log"]
    (deep,) = skipped
    assert deep.file.count("d/") == limits.DEFAULT.dir_depth - 1 and "nested over 64 deep (--max-depth)" in deep.reason


def _remove_deep(top: Path) -> None:
    """Remove a chain of nested `d` directories deepest first, one `rmdir` at a time."""
    here = os.getcwd()
    os.chdir(top)
    try:
        depth = 1
        while os.path.isdir("d"):
            os.chdir("d")
            depth += 1
        for name in os.listdir("."):
            os.unlink(name)
        for _ in range(depth):
            os.chdir("..")
            os.rmdir("d")
    finally:
        os.chdir(here)


def test_a_file_name_that_is_not_utf8_is_read_and_shown_escaped(tmp_path):
    raw = os.path.join(os.fsencode(tmp_path), b"vllm-\xff.log")
    with open(raw, "wb") as fh:
        fh.write(LINE.encode())
    report = analyze(tmp_path)
    assert report.ingest.lines == 1
    assert report.events["file"].to_list() == ["vllm-\\xff.log"]
    write_all(report, tmp_path / "out")  # (was a UnicodeEncodeError)


def test_tar_members_that_would_land_outside_the_archive_are_listed_as_skipped(tmp_path):
    with tarfile.open(tmp_path / "bundle.tar", "w") as tf:
        for name in ("../escape.log", "/etc/abs.log", "pods/vllm.log"):
            data = LINE.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    files, skipped = _files.discover([tmp_path])
    assert [f.rel for f in files] == ["bundle.tar/pods/vllm.log"]
    assert {k.file for k in skipped} == {"bundle.tar/../escape.log", "bundle.tar//etc/abs.log"}
    assert all("absolute or `..` path" in k.reason for k in skipped)


def test_analysis_json_never_holds_nan_or_infinity():
    doc = {"a": float("nan"), "b": [1.5, float("inf"), {"c": -float("inf")}], "d": "nan"}
    assert postmortem.finite(doc) == {"a": None, "b": [1.5, None, {"c": None}], "d": "nan"}


def test_a_second_run_that_finds_no_incident_leaves_no_alert_rules_of_the_first(tmp_path):
    out = tmp_path / "out"
    write_all(analyze(SAMPLES / "gpu-oom"), out)
    assert (out / "alerts.yaml").exists()
    write_all(analyze(SAMPLES / "healthy"), out)
    assert not (out / "alerts.yaml").exists() and not (out / "alerts_test.yaml").exists()
    assert json.loads((out / "analysis.json").read_text())["incidents"] == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # (no temporary directory left)


def test_a_run_without_a_pull_leaves_no_pulled_documents_of_the_last_one(tmp_path):
    from forensics.ingestion.prometheus_pull import Pulled

    out = tmp_path / "out"
    pulled = analyze(SAMPLES / "healthy")
    pulled.pulled = Pulled(documents={"vllm.txt": '{__name__="vllm:num_requests_running", pod="a"} 1 1740902400000\n'})
    write_all(pulled, out)
    assert (out / "prometheus/vllm.txt").is_file()
    write_all(pulled, out)  # (a directory replaced by a directory)
    assert (out / "prometheus/vllm.txt").is_file()
    write_all(analyze(SAMPLES / "healthy"), out)
    assert not (out / "prometheus").exists()


def test_a_write_that_fails_part_way_leaves_the_previous_report_whole(tmp_path, monkeypatch):
    out = tmp_path / "out"
    write_all(analyze(SAMPLES / "gpu-oom"), out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def disk_full(*_a, **_k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(postmortem.rpt, "render", disk_full)
    with pytest.raises(ForensicsError, match="No space left on device") as e:
        write_all(analyze(SAMPLES / "healthy"), out)
    assert "left as it was" in e.value.hint
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_cr_only_line_endings_are_lines(tmp_path):
    (tmp_path / "old-mac.log").write_bytes(LINE.replace("\n", "\r").encode() * 10)
    report = analyze(tmp_path)
    assert (report.ingest.lines, report.ingest.unparsed) == (10, 0)
    assert list(report.ingest.files[0].notes) == ["CR-only line endings read as line breaks"]


@pytest.mark.parametrize("order", ["utf-16-le", "utf-16-be"])
def test_utf16_without_a_byte_order_mark_is_decoded_not_stripped_of_nuls(tmp_path, order):
    text = LINE + "WARNING 03-14 10:00:02 [logger.py:41] Größe des Puffers überschritten: 4 GiB\n"
    (tmp_path / "win.log").write_bytes(text.encode(order))
    report = analyze(tmp_path)
    assert report.ingest.lines == 2 and report.ingest.unparsed == 0
    assert "Größe des Puffers überschritten: 4 GiB" in report.events["message"].to_list()


def test_a_compression_bomb_of_lines_is_cut_with_a_note(tmp_path):
    # A few hundred kB that expand 1,000:1 into one short line repeated: cut once past the
    # floor (lowered here from 256 MiB, so the test stays small), said in the file's notes.
    import gzip

    with gzip.open(tmp_path / "bomb.log.gz", "wb", compresslevel=9) as fh:
        for _ in range(64):
            fh.write(b"x\n" * (1 << 19))  # 64 MiB in all
    write_file(tmp_path / "vllm.log", LINE)
    report = analyze(tmp_path, limits=limits.Limits(bomb_floor_bytes=4 * 1024**2))
    (bomb,) = [f for f in report.ingest.files if f.file == "bomb.log.gz"]
    assert any("a compression bomb, the rest is not read" in n for n in bomb.notes)
    assert bomb.lines < 32 * 1024**2 // 4  # (stopped a few MiB in, not at its 32 Mi lines)


def test_a_yaml_alias_bomb_is_not_expanded(tmp_path):
    # Nine aliases of nine aliases, nine deep: 387 million nodes once walked. kubectl never
    # writes anchors, so the document is read line by line, with a note, in about a second.
    doc = 'apiVersion: v1\nkind: List\na: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    prev = "a"
    for name in "bcdefghi":
        doc += f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]\n"
        prev = name
    write_file(tmp_path / "events.yaml", doc + "items: *i  # involvedObject\n")
    report = analyze(tmp_path)
    (f,) = report.ingest.files
    assert any("anchors and aliases, not expanded" in n for n in f.notes)


def test_a_sparse_file_of_zeros_is_judged_by_its_head_not_read_whole(tmp_path):
    write_file(tmp_path / "vllm.log", LINE)
    with open(tmp_path / "huge.log", "wb") as fh:
        fh.truncate(20 * 1024**3)  # (sparse: no disk used; read whole it would need 20 GB of memory)
    reason = _skipped(analyze(tmp_path))["huge.log"]
    assert reason == "binary file (21474836480 bytes), not a text log (judged by its first bytes)"


def test_links_out_of_the_given_paths_are_followed_only_when_asked(tmp_path):
    target = tmp_path / "elsewhere" / "node-3.log"
    write_file(target, LINE)
    logs = tmp_path / "logs"
    write_file(logs / "vllm.log", LINE)
    (logs / "node-3.log").symlink_to(target)
    assert analyze(logs).ingest.lines == 1
    asked = analyze(logs, outside=True)
    assert asked.ingest.lines == 2 and not asked.ingest.skipped


def test_each_cap_is_an_option_and_what_it_cut_is_said(tmp_path):
    import gzip
    import subprocess
    import sys

    logs = tmp_path / "logs"
    write_file(logs / "vllm.log", LINE + "INFO 03-14 10:00:03 [x.py:1] " + "A" * 5000 + "\n")
    with gzip.open(logs / "big.log.gz", "wb") as fh:
        fh.write(LINE.encode() * 40_000)  # ~3 MB of lines
    write_file(logs / "a/b/c/deep.log", LINE)
    out = tmp_path / "out"
    args = ["--max-line", "1k", "--max-decompressed", "1M", "--max-depth", "2"]
    p = subprocess.run(
        [sys.executable, "-m", "forensics", "ingest", str(logs), "--out", str(out), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    acc = json.loads((out / "ingest.json").read_text())
    notes = {f["file"]: f["notes"] for f in acc["per_file"]}
    assert any("(--max-decompressed)" in n for n in notes["big.log.gz"])
    assert [k for k in acc["skipped"] if "(--max-depth)" in k["reason"]]
    import polars as pl

    msgs = pl.read_parquet(out / "events.parquet")["message"].to_list()
    assert any("line truncated by forensics" in m and len(m) < 1100 for m in msgs)


@pytest.mark.parametrize("option, value", [("--max-line", "lots"), ("--max-depth", "0"), ("--max-ratio", "-1")])
def test_a_bad_cap_is_exit_1_with_an_example(tmp_path, option, value):
    import subprocess
    import sys

    write_file(tmp_path / "logs/vllm.log", LINE)
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "forensics",
            "ingest",
            str(tmp_path / "logs"),
            "--out",
            str(tmp_path / "o"),
            option,
            value,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 1, p.stderr
    assert "bad cap" in p.stderr and "hint: e.g. --max-decompressed 32G" in p.stderr


def test_a_sharded_run_applies_the_caps_in_its_workers(tmp_path):
    from forensics.shards import pipeline

    write_file(tmp_path / "vllm.log", LINE + "INFO 03-14 10:00:03 [x.py:1] " + "B" * 5000 + "\n")
    out = pipeline.prepare([tmp_path], "pool", workers=1, limits=limits.Limits(line_chars=2048))
    msgs = out.ingest.events["message"].to_list() if out.ingest.events.height else []
    assert any("line truncated by forensics" in m and len(m) < 2200 for m in msgs)
