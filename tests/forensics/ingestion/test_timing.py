"""Times for lines without a whole one: years, zones, relative ages, inheritance, batches (`forensics.ingestion.timing`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from forensics import ingest
from forensics import schema as s
from forensics.ingestion import batches
from tests.conftest import assert_balanced, write

pytestmark = pytest.mark.usefixtures("as_a_large_run")  # (the threshold's own tests set theirs)


def test_year_rolls_over_from_december_to_january_with_a_reference(tmp_path):
    write(tmp_path / "a.log", "2025-01-01T00:00:30.000000000Z INFO 01-01 00:00:30 [x.py:1] after\n")
    write(tmp_path / "b.log", "INFO 12-31 23:59:50 [x.py:1] before\nINFO 01-01 00:00:10 [x.py:1] after\n")
    ev = ingest(tmp_path).events.filter(pl.col(s.FILE) == "b.log")
    assert ev[s.TS].to_list() == [
        datetime(2024, 12, 31, 23, 59, 50, tzinfo=UTC),
        datetime(2025, 1, 1, 0, 0, 10, tzinfo=UTC),
    ]
    assert set(ev[s.TS_QUALITY]) == {"inferred-year"}


@pytest.mark.parametrize("dated", [True, False])
def test_a_day_the_years_month_lacks_is_no_time_not_a_failed_run(tmp_path, dated):
    # Feb 29 beside a 2025 reference (or under --year 2025) was a polars error that ended the
    # run. Of the years around a reference, the leap one is the day's; `--year` is the year,
    # which has no such day. Apr 31 is no day in any year.
    if dated:
        write(tmp_path / "a.log", "2025-03-02T08:00:00.100Z INFO 03-02 08:00:00 [a.py:1] dated\n")
    write(
        tmp_path / "b.log",
        "INFO 02-29 12:00:00 [x.py:1] leap day\n"
        "INFO 04-31 12:00:00 [x.py:1] no such day\n"
        "INFO 03-01 12:00:00 [x.py:1] next\n",
    )
    r = ingest(tmp_path, year=None if dated else 2025)
    assert_balanced(r)
    ev = r.events.filter(pl.col(s.FILE) == "b.log").sort(s.LINE)
    leap, march = datetime(2024, 2, 29, 12, tzinfo=UTC), datetime(2025, 3, 1, 12, tzinfo=UTC)
    if dated:
        assert ev[s.TS].to_list() == [leap, leap, march]
        assert ev[s.TS_QUALITY].to_list() == ["inferred-year", "inherited", "inferred-year"]
    else:
        assert ev[s.TS].to_list() == [None, None, march]
        assert ev[s.TS_QUALITY].to_list() == ["none", "none", "inferred-year"]


def test_a_time_outside_the_years_an_event_may_have_is_no_time_and_fails_no_run(tmp_path):
    # A clock set to year 9999 and a Go zero time (`0001-01-01T00:00:00Z`, a field never set):
    # no time an event had. Before, a file's reference time, the median of its one line stamped
    # 9999-12-31T23:59:59.999999Z, rounded past year 9999 and failed the whole run once a
    # year-less line asked for it; the others stood in the tables in year 1 and 9999.
    write(tmp_path / "odd.log", "9999-12-31T23:59:59.999999Z lone line\n")
    write(
        tmp_path / "vllm-0.log",
        "2025-03-02T08:00:00.000000Z INFO 03-02 08:00:00 [api_server.py:1] started\n"
        "9999-12-31T23:59:59.999999Z ERROR 03-02 08:00:01 [core.py:1] clock gone mad\n"
        "2025-03-02T08:00:02.000000Z INFO 03-02 08:00:02 [api_server.py:1] still here\n",
    )
    write(
        tmp_path / "router.log",
        '{"level":"info","ts":"2025-03-02T08:00:00Z","msg":"router up"}\n'
        '{"level":"error","ts":"0001-01-01T00:00:00Z","msg":"upstream unset"}\n',
    )
    write(tmp_path / "vllm-1.log", "INFO 03-02 08:00:05 [api_server.py:1] a line without its year\n")
    r = ingest(tmp_path)
    assert_balanced(r)
    ev = r.events.sort(s.FILE, s.LINE)
    start, end = s.TS_RANGE
    assert ev.filter(pl.col(s.TS).is_not_null() & ~pl.col(s.TS).is_between(start, end, closed="left")).is_empty()
    got = {m: (ts, q) for m, ts, q in ev.select(s.MESSAGE, s.TS, s.TS_QUALITY).iter_rows()}
    at = datetime(2025, 3, 2, 8, 0, tzinfo=UTC)
    assert got["lone line"] == (None, "none")
    assert got["clock gone mad"] == (at, "inherited") and got["upstream unset"] == (at, "inherited")
    assert got["a line without its year"] == (at + timedelta(seconds=5), "inferred-year")


def test_a_full_date_that_does_not_exist_is_untimed_not_moved_to_another_year(tmp_path):
    # `2025-02-29` says its year: it is no day, not the leap day of 2024 (a year-less `02-29` may be).
    write(
        tmp_path / "a.log",
        "2025-02-28 10:00:00,123 - worker - INFO - fine\n"
        "2025-02-29 10:00:01,000 - worker - ERROR - no such day\n"
        "[2025-02-29 10:00:02 TP0] Decode batch. #running-req: 1, token usage: 0.10, gen throughput (token/s): 5.0\n"
        "2025-03-01 10:00:03,000 - worker - INFO - next\n",
    )
    r = ingest(tmp_path)
    assert_balanced(r)
    ev = r.events.sort(s.LINE)
    fine = datetime(2025, 2, 28, 10, 0, 0, 123000, tzinfo=UTC)
    assert ev[s.TS].to_list() == [fine, fine, fine, datetime(2025, 3, 1, 10, 0, 3, tzinfo=UTC)]
    assert ev[s.TS_QUALITY].to_list() == ["exact", "inherited", "inherited", "exact"]


def test_year_rolls_over_within_a_file_with_only_year_option(tmp_path):
    write(tmp_path / "b.log", "INFO 12-31 23:59:50 [x.py:1] before\nINFO 01-01 00:00:10 [x.py:1] after\n")
    ev = ingest(tmp_path, year=2024).events
    assert [t.year for t in ev[s.TS]] == [2024, 2025]


def test_year_rollover_compares_with_the_previous_dated_line_across_untimed_ones(tmp_path):
    access = 'INFO:     10.0.0.1:1 - "GET /health HTTP/1.1" 200 OK\n'
    write(
        tmp_path / "b.log",
        "INFO 12-31 23:59:50 [x.py:1] before\n" + access + "INFO 01-01 00:00:10 [x.py:1] after\n" + access,
    )
    ev = ingest(tmp_path, year=2024).events
    assert [(t.year, q) for t, q in zip(ev[s.TS], ev[s.TS_QUALITY], strict=True)] == [
        (2024, "inferred-year"),
        (2024, "inherited"),
        (2025, "inferred-year"),
        (2025, "inherited"),
    ]


def test_events_do_not_depend_on_where_files_are_cut_into_batches(tmp_path, monkeypatch):
    # Each batch is finished (timed, given its pod) as soon as it is parsed, so what a file's
    # earlier lines decide must carry into its next batch: the year rolling over (with only
    # --year), the time inherited by untimed lines, the pod of a cluster-info dump header, a
    # dmesg boot's offset from the wall clock; and an event document parsed whole keeps its
    # place in file order.
    from forensics.ingestion import files as _files

    access = 'INFO:     10.0.0.1:1 - "GET /health HTTP/1.1" 200 OK\n'
    undated, dated = tmp_path / "undated", tmp_path / "dated"
    write(
        undated / "a-rollover.log",
        "INFO 12-31 23:59:50 [x.py:1] before\n" + access * 30 + "INFO 01-01 00:00:10 [x.py:1] after\n" + access * 30,
    )
    write(
        undated / "b-dump.txt",
        "==== START logs for container vllm of pod default/vllm-0 ====\n"
        + "INFO 03-02 08:00:00 [api_server.py:1885] vLLM API server version 0.10.2\n" * 40
        + "==== START logs for container sidecar of pod infra/proxy-1 ====\n"
        + "INFO 03-02 08:00:01 [x.py:1] proxied\n" * 40,
    )
    event = {
        "type": "Warning",
        "reason": "BackOff",
        "message": "restarting",
        "count": 1,
        "involvedObject": {"kind": "Pod", "name": "vllm-0", "namespace": "default"},
        "firstTimestamp": "2024-03-02T08:00:05Z",
        "lastTimestamp": "2024-03-02T08:00:05Z",
    }
    write(dated / "a.log", "INFO 03-02 08:00:02 [x.py:1] timed\n" + access * 60)
    write(dated / "b-events.json", json.dumps({"kind": "EventList", "items": [event]}))
    write(dated / "c.log", access * 5 + "INFO 03-02 08:00:09 [x.py:1] timed\n" + access * 60)
    # A dmesg whose boot's RTC line is batches before its Xid; then a reboot with no wall time.
    booted, kmsg = tmp_path / "booted", "[{:12.6f}] nvidia-nvswitch: probe of 0000:05:00.0 ok\n"
    write(
        booted / "dmesg.txt",
        "[    1.912345] rtc_cmos 00:00: setting system clock to 2025-10-14T10:00:00 UTC (1760436000)\n"
        + "".join(kmsg.format(10.0 + i) for i in range(30))
        + "[86592.000040] NVRM: Xid (PCI:0000:3b:00): 79, pid=812, name=python3, GPU has fallen off the bus.\n"
        + "[    0.000000] Linux version 5.15.0-1053-nvidia #54-Ubuntu SMP\n"
        + "".join(kmsg.format(5.0 + i) for i in range(30)),
    )
    whole = {d: ingest(d, year=2024) for d in (undated, dated, booted)}
    xid = whole[booted].events.filter(pl.col(s.MESSAGE).str.contains("Xid", literal=True)).row(0, named=True)
    assert (xid[s.TS], xid[s.TS_QUALITY]) == (datetime(2025, 10, 15, 10, 3, 10, 87695, tzinfo=UTC), "relative")
    monkeypatch.setattr(batches, "BATCH_CHARS", 700)
    monkeypatch.setattr(_files, "SEGMENT_CHARS", 500)
    for d, expected in whole.items():
        cut = ingest(d, year=2024)
        assert cut.events.equals(expected.events) and cut.metrics.equals(expected.metrics)
        assert cut.accounting() == expected.accounting()
    ev = whole[undated].events
    assert ev.filter(pl.col(s.FILE) == "a-rollover.log")[s.TS].dt.year().to_list() == [2024] * 31 + [2025] * 31
    dump = ev.filter(pl.col(s.FILE) == "b-dump.txt", pl.col(s.SOURCE) != "k8s-state")
    assert dump.group_by(s.NAMESPACE, s.POD, s.CONTAINER).len().sort(s.POD).rows() == [
        ("infra", "proxy-1", "sidecar", 41),
        ("default", "vllm-0", "vllm", 41),
    ]
    ev = whole[dated].events
    assert ev[s.FILE].to_list() == ["a.log"] * 61 + ["b-events.json"] + ["c.log"] * 66
    assert ev.filter(pl.col(s.FILE) == "c.log")[s.TS_QUALITY].value_counts().sort(s.TS_QUALITY).rows() == [
        ("inferred-year", 1),
        ("inherited", 60),
        ("none", 5),
    ]


def test_streamed_tables_are_the_held_ones_written_as_batches_finish(incident_dir, tmp_path, monkeypatch):
    # `forensics ingest --out` streams both tables to Parquet batch by batch (memory stays
    # that of a few batches): what it writes must be exactly what `ingest` would hold.
    from forensics.ingestion import files as _files

    monkeypatch.setattr(batches, "BATCH_CHARS", 2000)
    monkeypatch.setattr(_files, "SEGMENT_CHARS", 1500)
    held = ingest(incident_dir)
    streamed = ingest(incident_dir, stream_to=tmp_path / "out")
    assert streamed.events.height == 0 and streamed.metrics.height == 0
    assert pl.read_parquet(tmp_path / "out/events.parquet").equals(held.events)
    assert pl.read_parquet(tmp_path / "out/metrics.parquet").equals(held.metrics)
    assert streamed.accounting() == held.accounting()
    assert streamed.n_events == held.events.height > 20
    assert streamed.time_span() == held.time_span()
    assert sorted(streamed.column(s.POD).drop_nulls().unique()) == sorted(held.events[s.POD].drop_nulls().unique())


def test_a_streamed_ingest_without_a_single_event_still_writes_both_tables(tmp_path):
    write(tmp_path / "logs/empty.log", "")
    write(tmp_path / "logs/blank.log", "\n\n")
    r = ingest(tmp_path / "logs", stream_to=tmp_path / "out")
    assert r.n_events == 0 and r.files
    assert dict(pl.read_parquet(tmp_path / "out/events.parquet").schema) == s.EVENT_DTYPES
    assert dict(pl.read_parquet(tmp_path / "out/metrics.parquet").schema) == s.METRIC_DTYPES


def test_tz_option_converts_local_time_formats_to_utc(tmp_path):
    write(tmp_path / "v.log", "INFO 03-02 10:00:00 [x.py:1] local\n")
    ev = ingest(tmp_path, year=2025, tz="Europe/Berlin").events
    assert ev[s.TS][0] == datetime(2025, 3, 2, 9, 0, tzinfo=UTC)


def test_lines_without_time_inherit_from_previous_timed_line(tmp_path):
    write(
        tmp_path / "v.log",
        'INFO:     10.0.0.1:1 - "GET /health HTTP/1.1" 200 OK\n'
        "INFO 03-02 10:00:00 [x.py:1] timed\n"
        'INFO:     10.0.0.1:2 - "GET /health HTTP/1.1" 200 OK\n',
    )
    ev = ingest(tmp_path, year=2025).events
    assert ev[s.TS_QUALITY].to_list() == ["none", "inferred-year", "inherited"]
    assert ev[s.TS][2] == ev[s.TS][1]


def test_without_any_year_source_the_file_mtime_year_is_used_with_a_warning(tmp_path):
    p = write(tmp_path / "v.log", "INFO 03-02 10:00:00 [x.py:1] x\n")
    import os

    os.utime(p, (1_700_000_000, 1_700_000_000))  # 2023-11-14
    r = ingest(tmp_path)
    assert r.events[s.TS][0].year == 2023
    assert any("--year" in w for w in r.warnings)


def test_a_file_modified_early_in_a_year_puts_its_december_lines_in_the_year_before(tmp_path):
    # An incident of Dec 30 collected (the files last written) on Jan 2: its lines are not
    # in the coming December, and the Jan lines after them roll over into the mtime's year.
    import os

    p = write(
        tmp_path / "kernel.log",
        "Dec 30 23:59:00 gpu-node-3 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n"
        "Jan  2 00:00:10 gpu-node-3 kernel: nvidia-nvlink: Unregistered Nvlink Core\n",
    )
    collected = datetime(2026, 1, 2, 8, 0, tzinfo=UTC).timestamp()
    os.utime(p, (collected, collected))
    ev = ingest(tmp_path).events.sort(s.LINE)
    assert ev[s.TS].to_list() == [
        datetime(2025, 12, 30, 23, 59, tzinfo=UTC),
        datetime(2026, 1, 2, 0, 0, 10, tzinfo=UTC),
    ]
    # a first line no later than the day after the mtime keeps the mtime's year
    write(p, "Dec 30 06:00:00 gpu-node-3 kernel: x\n")
    os.utime(p, (collected - 86400 * 4, collected - 86400 * 4))  # Dec 29, 2025
    assert ingest(tmp_path).events[s.TS][0] == datetime(2025, 12, 30, 6, 0, tzinfo=UTC)
