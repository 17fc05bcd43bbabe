"""Reading files as they come: compressed, archived, binary, damaged, huge, unreadable, linked (`forensics.ingestion.files`)."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from forensics import ingest
from forensics import schema as s
from tests.conftest import DATA, assert_balanced, write

pytestmark = pytest.mark.usefixtures("as_a_large_run")  # (the threshold's own tests set theirs)


def test_truncated_gzip_keeps_decompressed_lines_and_notes_it(tmp_path):
    body = "".join(f"INFO 03-02 10:00:{i % 60:02d} [x.py:1] line {i}\n" for i in range(2000)).encode()
    blob = gzip.compress(body)
    write(tmp_path / "cut.log.gz", blob[: len(blob) // 2])
    write(tmp_path / "ok.log.gz", gzip.compress(b"INFO 03-02 10:00:00 [x.py:1] fine\n"))
    r = ingest(tmp_path, year=2025)
    assert_balanced(r)
    cut = next(f for f in r.files if f.file == "cut.log.gz")
    assert 0 < cut.lines < 2000 and any("truncated gzip" in n for n in cut.notes)
    assert any(f.file == "ok.log.gz" and f.parsed == 1 for f in r.files)


def test_binary_and_empty_files_are_skipped_with_reasons(tmp_path):
    write(tmp_path / "core.bin", bytes(range(256)) * 100)
    write(tmp_path / "empty.log", "")
    write(tmp_path / "ok.log", "INFO 03-02 10:00:00 [x.py:1] fine\n")
    r = ingest(tmp_path, year=2025)
    reasons = {k.file: k.reason for k in r.skipped}
    assert reasons["core.bin"].startswith("binary file")
    assert reasons["empty.log"].startswith("empty file")
    assert r.parsed == 1


def test_known_binary_formats_are_skipped_by_name_with_what_to_do(tmp_path):
    # A journal file, a Parquet table or an SQLite database can pass for text of garbage (a Parquet
    # file's schema is printable); each is told by its first bytes and the message says what it is,
    # compressed too (a gzipped journal is told by what it decompresses to); a large file before
    # it is read whole, a small one once it is.
    import pyarrow as pa
    import pyarrow.parquet as pq

    from forensics.ingestion import files as _files

    journal = b"LPKSHHRH" + bytes(8) + b"MESSAGE=kernel: NVRM: Xid 79\n" * 5000
    assert len(journal) > _files.SNIFF_BYTES
    write(tmp_path / "node/system.journal", journal)
    write(tmp_path / "node/system@1.journal.gz", gzip.compress(journal[:2000], mtime=0))
    pq.write_table(pa.table({"message": ["Cache corruption detected in block 7"] * 50}), tmp_path / "old.parquet")
    write(tmp_path / "state.db", b"SQLite format 3\x00" + b"INFO 03-02 10:00:00 [x.py:1] fine\n" * 10)
    write(tmp_path / "ok.log", "INFO 03-02 10:00:00 [x.py:1] fine\n")
    r = ingest(tmp_path, year=2025)
    reasons = {k.file: k.reason for k in r.skipped}
    assert "journalctl --file" in reasons["node/system.journal"]
    assert "journalctl --file" in reasons["node/system@1.journal.gz"]
    assert "Parquet" in reasons["old.parquet"]
    assert "SQLite" in reasons["state.db"]
    assert all(v.startswith("binary file") for v in reasons.values())
    assert r.parsed == 1 and r.events[s.FILE].to_list() == ["ok.log"]


def test_an_earlier_runs_output_inside_the_logs_is_skipped_not_read_as_logs(tmp_path):
    # `forensics analyze logs/ --out logs/report`, run twice: the second run must not read the
    # first one's postmortem (which quotes the evidence lines) or its Parquet as logs.
    line = "ERROR 03-02 10:00:00 [core.py:720] EngineCore encountered a fatal error.\n"
    write(tmp_path / "vllm-0.log", line)
    write(tmp_path / "report/postmortem.md", "# Postmortem\n" + line)
    write(tmp_path / "report/analysis.json", "{}")
    write(tmp_path / "report/extra.log", line)
    write(tmp_path / "ingested/events.parquet", b"PAR1")
    write(tmp_path / "ingested/ingest.json", "{}")
    write(tmp_path / "notes/postmortem.md", "# an engineer's notes, not our output\n" + line)
    r = ingest(tmp_path, year=2025)
    reasons = {k.file: k.reason for k in r.skipped}
    assert reasons["report"] == "an earlier forensics run's output (analysis.json, postmortem.md), not logs"
    assert "events.parquet, ingest.json" in reasons["ingested"]
    assert sorted(set(r.events[s.FILE].to_list())) == ["notes/postmortem.md", "vllm-0.log"]


def test_xz_and_bzip2_logs_are_read_like_gzip_ones_damage_included(tmp_path):
    # `journalctl | xz > node.log.xz`, a bzip2'd rotation: read transparently, whatever the
    # name; a cut xz stream keeps what came before the cut, with a note.
    import bz2
    import lzma

    lines = "".join(f"INFO 03-02 10:00:{i % 60:02d} [engine.py:1] step {i}\n" for i in range(3000))
    write(tmp_path / "vllm-0.log.xz", lzma.compress(lines.encode()))
    write(tmp_path / "vllm-1.log.1", bz2.compress(lines.encode()))
    xz = lzma.compress(lines.encode())
    write(tmp_path / "vllm-2.log.xz", xz[: len(xz) // 2])
    r = ingest(tmp_path, year=2025)
    by = {f.file: f for f in r.files}
    assert by["vllm-0.log.xz"].lines == by["vllm-1.log.1"].lines == 3000
    assert not by["vllm-0.log.xz"].notes and not by["vllm-1.log.1"].notes
    cut = by["vllm-2.log.xz"]
    assert 0 < cut.lines < 3000 and cut.notes[0].startswith("truncated xz: the stream ends early; kept ")
    assert set(r.events.filter(pl.col(s.FILE) == "vllm-0.log.xz")[s.POD]) == {"vllm-0"}
    assert r.skipped == []


def zstd(data: bytes) -> bytes:
    """zstd-compressed `data` (a frame as the `zstd` command writes, without its checksum)."""
    import pyarrow as pa

    return pa.compress(data, codec="zstd", asbytes=True)


def test_zstd_and_lz4_logs_are_read_like_gzip_ones_damage_included(tmp_path):
    # logrotate's `compresscmd zstd`, `kubectl logs | zstd`, `pzstd`, an lz4 frame: read
    # transparently, every frame of a file, skippable ones skipped; a cut stream keeps what came
    # before the cut, and bytes after the last frame that start no other are damage, with a note.
    import pyarrow as pa

    lines = "".join(f"INFO 03-02 10:00:{i % 60:02d} [engine.py:1] step {i}\n" for i in range(30000)).encode()
    half = lines.index(b"step 15000\n") + len(b"step 15000\n")
    write(tmp_path / "vllm-0.log.zst", zstd(lines))
    write(tmp_path / "vllm-1.log.1", zstd(lines[:half]) + zstd(lines[half:]))
    write(tmp_path / "vllm-2.log.zst", zstd(lines)[: len(zstd(lines)) // 2])
    write(tmp_path / "vllm-3.log.zst", zstd(lines) + b"\x00junk after the frame")
    skippable = (0x184D2A50).to_bytes(4, "little") + (4).to_bytes(4, "little") + b"\x00\x01\x02\x03"
    write(tmp_path / "vllm-4.log.zst", skippable + zstd(lines[:half]) + skippable + zstd(lines[half:]))  # pzstd's
    write(tmp_path / "vllm-5.zst", zstd(lines[:half]))
    lz4 = pa.compress(lines, codec="lz4", asbytes=True)  # (an lz4 frame: the same reader)
    write(tmp_path / "vllm-6.log.lz4", lz4)
    write(tmp_path / "vllm-7.log.lz4", lz4[: len(lz4) // 2])
    r = ingest(tmp_path, year=2025)
    by = {f.file: f for f in r.files}
    assert by["vllm-0.log.zst"].lines == by["vllm-1.log.1"].lines == by["vllm-4.log.zst"].lines == 30000
    assert not by["vllm-0.log.zst"].notes and not by["vllm-1.log.1"].notes and not by["vllm-4.log.zst"].notes
    assert 0 < by["vllm-2.log.zst"].lines < 30000
    assert by["vllm-2.log.zst"].notes[0].startswith("truncated zstd: the stream ends early; kept ")
    junk = by["vllm-3.log.zst"]
    assert junk.notes[0].startswith("corrupt zstd (") and junk.lines >= 30000 - 64 * 1024 // 30
    assert set(r.events.filter(pl.col(s.FILE) == "vllm-5.zst")[s.POD]) == {"vllm-5"}  # (named without .zst)
    assert by["vllm-6.log.lz4"].lines == 30000 and not by["vllm-6.log.lz4"].notes
    assert 0 < by["vllm-7.log.lz4"].lines < 30000 and by["vllm-7.log.lz4"].notes[0].startswith("truncated lz4: ")
    first = r.events.filter(pl.col(s.FILE) == "vllm-2.log.zst")[s.MESSAGE].to_list()
    assert first[:-1] == [f"step {i}" for i in range(len(first) - 1)]  # (the last one cut mid-line)
    assert r.skipped == []


@pytest.mark.parametrize("codec", ["gzip", "xz", "bzip2", "zstd", "lz4"])
def test_a_compressed_files_head_is_read_decompressed(tmp_path, codec):
    # The reference-time pass and the sniffing of formats read a file's head: through its
    # decompressor, whichever (bzip2 is told by bytes past the first six).
    import bz2
    import lzma

    import pyarrow as pa

    from forensics.ingestion import files as _files

    compress = {
        "gzip": lambda b: gzip.compress(b, mtime=0),
        "xz": lzma.compress,
        "bzip2": bz2.compress,
        "zstd": zstd,
        "lz4": lambda b: pa.compress(b, codec="lz4", asbytes=True),
    }[codec]
    text = b"".join(b"2025-03-02T10:00:%02dZ INFO 03-02 10:00:%02d [x.py:1] line\n" % (i, i) for i in range(50))
    path = tmp_path / "vllm-0.log.1"
    path.write_bytes(compress(text))
    f = _files.InputFile(path, "vllm-0.log.1", path.stat().st_size, 0.0)
    head, whole = _files.head_of(f, 200)
    assert head == text[: text.rfind(b"\n", 0, 200) + 1] and not whole
    assert _files.binary_before_reading(f) is None


def test_a_sos_report_tar_xz_is_unpacked_and_read(tmp_path):
    # sos report's default bundle is an xz-compressed tarball.
    import io
    import tarfile

    kern = b"Mar  2 10:00:01 gpu-node-3 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tar:
        info = tarfile.TarInfo("sosreport-gpu-node-3-2025-03-02/var/log/messages")
        info.size = len(kern)
        tar.addfile(info, io.BytesIO(kern))
    write(tmp_path / "sosreport-gpu-node-3-2025-03-02.tar.xz", buf.getvalue())
    r = ingest(tmp_path, year=2025)
    assert r.skipped == [] and r.parsed == 1
    assert r.events[s.FILE].to_list() == [
        "sosreport-gpu-node-3-2025-03-02.tar.xz/sosreport-gpu-node-3-2025-03-02/var/log/messages"
    ]
    assert "Xid" in r.events[s.MESSAGE][0]


def test_a_large_log_whose_lines_begin_with_a_bracket_is_read_a_segment_at_a_time(tmp_path, monkeypatch):
    # LMCache's `[2025-05-04 05:25:03,029] LMCache ...`, `[rank0]:` and `[pod/x/c]` lines begin
    # with `[` as a JSON list does; such a log was read whole (twice its size held for a 5 GB
    # one), while a document still is (it parses only whole).
    from forensics.ingestion import files as _files

    monkeypatch.setattr(_files, "SEGMENT_CHARS", 4096)
    lmcache = "".join(
        f"[2025-05-04 05:25:{i % 60:02d},029] LMCache INFO: stored chunk {i} (storage.py:88:lmcache.x)\n"
        for i in range(2000)
    )
    listing = json.dumps(
        [{"message": f"line {i}", "@timestamp": "2025-05-04T05:25:03Z"} for i in range(2000)], indent=2
    )
    found = {}
    for name, text in (("lmcache.log", lmcache), ("export.json", listing), ("rank0.log", "[rank0]:" + lmcache)):
        write(tmp_path / name, text)
        path = tmp_path / name
        found[name] = _files.stream_head(_files.InputFile(path, name, path.stat().st_size, 0.0)) is not None
    assert found == {"lmcache.log": True, "export.json": False, "rank0.log": True}
    r = ingest(tmp_path)
    assert_balanced(r)
    assert r.events.filter(pl.col(s.FILE) == "lmcache.log").height == 2000


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_a_tar_zst_bundle_is_unpacked_and_a_cut_one_keeps_its_first_members(tmp_path, codec):
    # sos report --compression-type, must-gather bundles: zstd (or lz4) tarballs, unpacked member
    # by member from the stream; a download cut short keeps the members before the cut, and says so.
    import io
    import tarfile

    import pyarrow as pa

    kern = b"Mar  2 10:00:01 gpu-node-3 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n"
    noise = "".join(
        f"Mar  2 10:{i // 60 % 60:02d}:{i % 60:02d} gpu-node-3 kubelet[1]: tick {i:08x}\n" for i in range(40000)
    )
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in (("bundle/var/log/messages", kern), ("bundle/var/log/kubelet.log", noise.encode())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    packed = pa.compress(buf.getvalue(), codec=codec, asbytes=True)
    ext = {"zstd": "zst", "lz4": "lz4"}[codec]
    write(tmp_path / f"whole/sosreport-gpu-node-3.tar.{ext}", packed)
    write(tmp_path / f"cut/sosreport-gpu-node-3.tar.{ext}", packed[: len(packed) // 2])

    whole = ingest(tmp_path / "whole", year=2025)
    assert whole.skipped == [] and whole.parsed == 40001
    assert sorted(set(whole.events[s.FILE])) == [
        f"sosreport-gpu-node-3.tar.{ext}/bundle/var/log/kubelet.log",
        f"sosreport-gpu-node-3.tar.{ext}/bundle/var/log/messages",
    ]
    cut = ingest(tmp_path / "cut", year=2025)
    assert [k.file for k in cut.skipped] == [f"sosreport-gpu-node-3.tar.{ext}"]
    assert cut.skipped[0].reason.startswith(f"damaged tar.{ext} archive (truncated {codec}: the stream ends early")
    assert "Xid" in cut.events.filter(pl.col(s.FILE).str.ends_with("messages"))[s.MESSAGE][0]


def test_invalid_utf8_is_replaced_and_noted(tmp_path):
    write(tmp_path / "bad.log", b"INFO 03-02 10:00:00 [x.py:1] caf\xe9 \xff\xfe ok\n")
    r = ingest(tmp_path, year=2025)
    assert "\ufffd" in r.events[s.MESSAGE][0]
    assert any("invalid UTF-8" in n for n in r.files[0].notes)


def test_a_50_mb_single_line_is_truncated_and_accounted(tmp_path):
    write(
        tmp_path / "huge.log",
        "INFO 03-02 10:00:00 [x.py:1] Received request cmpl-1: prompt: '"
        + "x" * 50_000_000
        + "'\nINFO 03-02 10:00:01 [x.py:1] next\n",
    )
    r = ingest(tmp_path, year=2025)
    assert_balanced(r)
    assert r.lines == 2 and r.parsed == 2
    msg = r.events[s.MESSAGE][0]
    assert len(msg) < 1_100_000 and "line truncated by forensics" in msg


def test_a_long_multibyte_line_is_cut_by_characters_and_the_mark_counts_the_bytes_cut(tmp_path):
    from forensics.ingestion.limits import DEFAULT

    MAX_LINE_CHARS = DEFAULT.line_chars

    head = "INFO 03-02 10:00:00 [x.py:1] "
    short = "汉" * (MAX_LINE_CHARS // 2)  # more bytes than the limit, fewer characters: kept whole
    long = "é" * (MAX_LINE_CHARS + 1000)
    write(tmp_path / "wide.log", f"{head}{short}\n{head}{long}\n")
    ev = ingest(tmp_path, year=2025).events.sort(s.LINE)
    assert ev[s.MESSAGE][0] == short
    cut = len(head) + len(long) - MAX_LINE_CHARS  # characters past the limit, two bytes each
    assert (
        ev[s.MESSAGE][1]
        == long[: MAX_LINE_CHARS - len(head)] + f" …[line truncated by forensics: {2 * cut} more bytes]"
    )


def test_unreadable_file_is_skipped_and_the_rest_goes_on(tmp_path, monkeypatch):
    write(tmp_path / "secret.log", "INFO 03-02 10:00:00 [x.py:1] hidden\n")
    write(tmp_path / "ok.log", "INFO 03-02 10:00:00 [x.py:1] fine\n")
    import builtins

    real_open = builtins.open

    def fake_open(path, *a, **k):
        if str(path).endswith("secret.log"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *a, **k)

    monkeypatch.setattr(builtins, "open", fake_open)
    r = ingest(tmp_path, year=2025)
    assert {k.file: k.reason for k in r.skipped}["secret.log"].startswith("unreadable: Permission denied")
    assert r.parsed == 1


@pytest.mark.parametrize("gz", [False, True])
def test_a_large_log_read_a_segment_at_a_time_gives_what_reading_it_whole_gives(tmp_path, monkeypatch, gz):
    # Segments are shrunk to 2 KiB so a 40 KiB file streams: its events, notes and accounting
    # must be those of the whole-file read (same segment cuts: the text is ASCII). Gzipped,
    # the stream is also cut short: what came before the cut is kept, with the same note.
    import gzip

    from forensics.ingestion import files as _files

    monkeypatch.setattr(_files, "SEGMENT_CHARS", 2048)
    body = []
    for i in range(300):
        t = f"2025-03-02T08:{i // 60:02d}:{i % 60:02d}.000000000Z"
        body.append(f"{t} (EngineCore_DP0 pid=9) INFO 03-02 08:{i // 60:02d}:{i % 60:02d} [core.py:7] step {i}\n")
        if i % 50 == 7:
            body.append(
                f"{t} (EngineCore_DP0 pid=9) ERROR 03-02 08:00:00 [core.py:9] Traceback (most recent call last):\n"
            )
            body.append(f'{t} (EngineCore_DP0 pid=9) ERROR 03-02 08:00:00 [core.py:9]   File "x.py", line 1, in f\n')
    data = "".join(body).encode() + b"\x00\x00 tail \xff without newline"
    name = "vllm-0.log.gz" if gz else "vllm-0.log"
    write(tmp_path / "big" / name, gzip.compress(data, mtime=0)[:-9] if gz else data)
    write(tmp_path / "big" / "events.json", '{"kind": "EventList", "items": []}\n' + " " * 9000)
    read = []
    segments = _files.text_segments
    monkeypatch.setattr(_files, "text_segments", lambda f, notes: read.append(f.rel) or segments(f, notes))
    streamed = ingest(tmp_path / "big")
    assert read == [name]
    monkeypatch.setattr(_files, "stream_head", lambda f: None)
    whole = ingest(tmp_path / "big")
    assert streamed.events.equals(whole.events) and streamed.metrics.equals(whole.metrics)
    assert streamed.accounting() == whole.accounting()
    by = {f.file: f for f in streamed.files}
    if gz:
        assert by[name].notes[0].startswith("truncated gzip: the stream ends early; kept ")
        assert by[name].lines > 250
    else:
        assert by[name].notes == (
            "2 NUL bytes removed (padding left by an interrupted write?)",
            "invalid UTF-8 bytes replaced with U+FFFD",
        )
        assert by[name].lines == data.count(b"\n") + 1
    assert by["events.json"].wrapper == "k8s-events-json"  # a document: read whole, not streamed


def test_symlinked_file_is_read_once_and_symlink_loops_are_cut(tmp_path):
    real = write(tmp_path / "pods/vllm-0.log", "INFO 03-02 10:00:00 [x.py:1] once\n")
    (tmp_path / "containers").mkdir()
    (tmp_path / "containers/vllm-0_default_vllm-abc.log").symlink_to(real)
    (tmp_path / "pods/loop").symlink_to(tmp_path / "pods")
    (tmp_path / "dangling.log").symlink_to(tmp_path / "nowhere.log")
    (tmp_path / "a.log").symlink_to(tmp_path / "b.log")  # (a file's links in a ring)
    (tmp_path / "b.log").symlink_to(tmp_path / "a.log")
    r = ingest(tmp_path, year=2025)
    assert r.parsed == 1
    reasons = " | ".join(k.reason for k in r.skipped)
    assert "symlink" in reasons and "loop" in reasons and "broken symlink" in reasons
    said = {k.file: k.reason for k in r.skipped}
    assert said["a.log"].startswith("symlink loop") and said["dangling.log"] == "broken symlink"


def test_ten_thousand_tiny_files_are_ingested(tmp_path):
    for i in range(10_000):
        (tmp_path / f"f{i:05d}.log").write_text(f"INFO 03-02 10:00:00 [x.py:1] file {i}\n")
    r = ingest(tmp_path, year=2025)
    assert len(r.files) == 10_000 and r.parsed == 10_000


def test_nothing_readable_raises_no_input_error_with_a_hint(tmp_path):
    from forensics.errors import NoInputError

    write(tmp_path / "core.bin", bytes(range(256)) * 100)
    with pytest.raises(NoInputError) as e:
        ingest(tmp_path)
    assert "binary" in e.value.hint


def test_an_empty_directory_is_said_to_hold_no_files(tmp_path):
    from forensics.errors import NoInputError

    (tmp_path / "logs" / "empty-subdir").mkdir(parents=True)
    with pytest.raises(NoInputError) as e:
        ingest(tmp_path / "logs")
    assert "no files found" in e.value.hint and "skipped" not in e.value.hint


def test_nul_padding_after_a_crash_is_removed_and_the_file_still_parsed(tmp_path):
    write(
        tmp_path / "v.log",
        b"INFO 03-02 10:00:00 [x.py:1] before crash\n" + b"\x00" * 4096 + b"\nINFO 03-02 10:01:00 [x.py:1] after\n",
    )
    r = ingest(tmp_path, year=2025)
    assert r.parsed == 2 and any("NUL bytes removed" in n for n in r.files[0].notes)


def test_utf16_from_a_powershell_redirect_and_a_utf8_bom_lose_no_line(tmp_path):
    text = (
        "2025-04-01T06:00:00.000000000Z INFO 04-01 06:00:00 [core.py:1] Modèle chargé en 41 s\r\n"
        "2025-04-01T06:00:09.000000000Z ERROR 04-01 06:00:09 [core.py:720] EngineCore encountered a fatal error.\r\n"
    )
    write(tmp_path / "powershell.log", text.encode("utf-16"))  # BOM + UTF-16LE, as `> file` writes it
    write(tmp_path / "notepad.log", b"\xef\xbb\xbf" + text.encode())
    r = ingest(tmp_path)
    assert r.unparsed == 0 and r.lines == 4
    for name in ("powershell.log", "notepad.log"):
        ev = r.events.filter(pl.col(s.FILE) == name).sort(s.LINE)
        assert ev[s.MESSAGE].to_list() == ["Modèle chargé en 41 s", "EngineCore encountered a fatal error."]
        assert ev[s.TS].to_list()[0] == datetime(2025, 4, 1, 6, 0, tzinfo=UTC)
    notes = {f.file: f.notes for f in r.files}
    assert notes["powershell.log"] == ("UTF-16 text (e.g. a PowerShell redirect) decoded",)


def _tar_gz(path: Path, members: dict[str, bytes]) -> None:
    import io
    import tarfile

    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def test_support_bundles_are_unpacked_and_their_files_named_inside_the_archive(tmp_path):
    import zipfile

    members = {p.name: p.read_bytes() for p in sorted((DATA / "incident").iterdir())}
    _tar_gz(tmp_path / "must-gather.tgz", {f"gather/{k}": v for k, v in members.items()})
    with zipfile.ZipFile(tmp_path / "bundle.zip", "w") as z:
        z.writestr("node-logs/kubelet.journal", members["kubelet.journal"])
    plain = ingest(DATA / "incident")
    r = ingest(tmp_path)
    names = sorted(f.file for f in r.files)
    assert names == ["bundle.zip/node-logs/kubelet.journal"] + sorted(f"must-gather.tgz/gather/{k}" for k in members)
    journal_lines = next(f.lines for f in plain.files if f.file == "kubelet.journal")
    assert r.unparsed == plain.unparsed and r.lines == plain.lines + journal_lines
    inner = r.events.filter(pl.col(s.FILE).str.starts_with("must-gather.tgz/"))
    assert inner.drop(s.FILE).equals(plain.events.drop(s.FILE))


def test_a_hostile_or_truncated_archive_gives_what_it_safely_can(tmp_path):
    good = b"2025-03-02T08:06:40.000000000Z ERROR 03-02 08:06:40 [core.py:720] EngineCore encountered a fatal error.\n"
    _tar_gz(tmp_path / "evil.tar.gz", {"../../escape.log": good, "/etc/abs.log": good, "ok/pod.log": good})
    _tar_gz(tmp_path / "cut.tar.gz", {"a/first.log": good, "b/second.log": good * 4000})
    data = (tmp_path / "cut.tar.gz").read_bytes()
    (tmp_path / "cut.tar.gz").write_bytes(data[: len(data) * 2 // 3])
    r = ingest(tmp_path)
    names = {f.file for f in r.files}
    assert "evil.tar.gz/ok/pod.log" in names and not any("escape" in n or "abs" in n for n in names)
    assert "cut.tar.gz/a/first.log" in names
    assert not (tmp_path.parent / "escape.log").exists()
    assert any(k.file == "cut.tar.gz" and "damaged" in k.reason for k in r.skipped)


def test_a_large_json_lines_log_is_read_a_segment_at_a_time_as_it_is_whole(tmp_path, monkeypatch):
    # An application's JSON records, one a line, begin with `{` as a JSON document does; such a
    # log was read whole (its text, its lines and a dict a record held at once), while a
    # document (pretty-printed, or one line) still is.
    from forensics.ingestion import files as _files

    monkeypatch.setattr(_files, "SEGMENT_CHARS", 4096)
    records = "".join(
        json.dumps({"level": "error" if i % 7 == 0 else "info", "ts": 1740909600 + i, "msg": f"step {i}"}) + "\n"
        for i in range(2000)
    )
    one_line = json.dumps({"kind": "List", "items": [{"message": f"line {i}"} for i in range(2000)]}) + "\n"
    pretty = json.dumps({"kind": "List", "items": [{"message": f"line {i}"} for i in range(2000)]}, indent=2)
    found = {}
    for name, text in (("app.log", records), ("one-line.json", one_line), ("pretty.json", pretty)):
        write(tmp_path / name, text)
        path = tmp_path / name
        found[name] = _files.stream_head(_files.InputFile(path, name, path.stat().st_size, 0.0)) is not None
    assert found == {"app.log": True, "one-line.json": False, "pretty.json": False}
    for name in ("one-line.json", "pretty.json"):
        (tmp_path / name).unlink()
    streamed = ingest(tmp_path)
    monkeypatch.setattr(_files, "stream_head", lambda f: None)
    whole = ingest(tmp_path)
    assert_balanced(streamed)
    assert streamed.events.height == 2000 and streamed.events[s.LEVEL].value_counts().height == 2
    assert streamed.events.equals(whole.events) and streamed.accounting() == whole.accounting()


def test_an_archive_larger_than_the_room_left_is_read_only_up_to_the_limit(tmp_path, monkeypatch):
    from forensics.ingestion import files as _files

    line = b"2025-03-02T08:06:40.000000000Z INFO 03-02 08:06:40 [core.py:1] Engine step ok\n"
    _tar_gz(tmp_path / "big.tar.gz", {"a.log": line * 10, "b.log": line * 1000})
    monkeypatch.setattr(_files, "ARCHIVE_MAX_BYTES", len(line) * 100)
    r = ingest(tmp_path)
    assert [f.file for f in r.files] == ["big.tar.gz/a.log"]
    assert any(k.file == "big.tar.gz" and "read up to there" in k.reason for k in r.skipped)


def test_an_encrypted_zip_and_a_tarball_corrupt_in_the_middle_are_reported_not_dropped(tmp_path):
    import zipfile

    with zipfile.ZipFile(tmp_path / "locked.zip", "w") as z:
        z.writestr("pod.log", "INFO 03-02 10:00:00 [x.py:1] fine\n")
    data = (tmp_path / "locked.zip").read_bytes()
    # Mark the member encrypted (general-purpose flag bit 0) in the local and central headers.
    data = data.replace(b"PK\x03\x04\x14\x00\x00\x00", b"PK\x03\x04\x14\x00\x01\x00", 1)
    data = data.replace(b"PK\x01\x02\x14\x03\x14\x00\x00\x00", b"PK\x01\x02\x14\x03\x14\x00\x01\x00", 1)
    (tmp_path / "locked.zip").write_bytes(data)
    line = b"2025-03-02T08:06:40.000000000Z INFO 03-02 08:06:40 [core.py:1] Engine step ok\n"
    _tar_gz(tmp_path / "bundle.tar.gz", {"first.log": line * 20000, "second.log": line * 20000})
    packed = bytearray((tmp_path / "bundle.tar.gz").read_bytes())
    for i in range(len(packed) // 2, len(packed) // 2 + 64):
        packed[i] ^= 0x55
    (tmp_path / "bundle.tar.gz").write_bytes(bytes(packed))
    r = ingest(tmp_path)
    reasons = {k.file: k.reason for k in r.skipped}
    assert "encrypted" in reasons["locked.zip"]
    assert reasons["bundle.tar.gz"].startswith("damaged tar.gz archive")
