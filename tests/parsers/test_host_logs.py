"""A node's own logs: journald in its output modes, dmesg and its clocks, and the node a path names (`parsers.wrappers.host`, `parsers.paths`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from forensics import ingest
from forensics import schema as s
from tests.conftest import event_row, write

pytestmark = pytest.mark.usefixtures("as_a_large_run")  # (the threshold's own tests set theirs)


def test_kubelet_journal_gives_host_source_and_inferred_year(incident_dir):
    ev = ingest(incident_dir).events
    row = event_row(ev, file="kubelet.journal", line=2)
    assert row[s.SOURCE] == "kubelet" and row[s.LEVEL] == "ERROR" and row[s.HOST] == "gpu-node-3"
    assert row[s.COMPONENT] == "pod_workers.go"
    assert row[s.TS] == datetime(2025, 3, 2, 8, 0, 21, 844381, tzinfo=UTC)
    assert row[s.POD] is None


def test_short_iso_journal_of_systemd_255_with_a_colon_in_the_offset_is_read_as_journald(tmp_path):
    # systemd 255 writes short-iso's offset as `+00:00` (RFC3339's), as kubectl --timestamps may:
    # an ident with its pid (or the kernel) after the stamp tells a journal entry from a container line.
    write(
        tmp_path / "node-7" / "kubelet.log",
        "2025-03-09T09:00:01.250000+00:00 node-7 kubelet[2211]: E0309 09:00:01.250000    2211 kubelet.go:2412] "
        '"Skipping pod synchronization" err="PLEG is not healthy"\n'
        "2025-03-09T10:00:02+01:00 node-7 kernel: NVRM: Xid (PCI:0000:c1:00): 79, GPU has fallen off the bus.\n"
        "2025-03-09T09:00:03+00:00 Engine core: a container's line after kubectl's stamp\n",
    )
    r = ingest(tmp_path)
    assert [f.wrapper for f in r.files] == ["journald"]
    ev = r.events.sort(s.LINE)
    assert ev[s.SOURCE].to_list() == ["kubelet", "kernel", "unknown"]
    assert ev[s.HOST].to_list() == ["node-7", "node-7", None]
    assert ev[s.LEVEL][0] == "ERROR" and ev[s.COMPONENT][0] == "kubelet.go"
    assert ev[s.MESSAGE][1] == "NVRM: Xid (PCI:0000:c1:00): 79, GPU has fallen off the bus."
    assert ev[s.MESSAGE][2] == "Engine core: a container's line after kubectl's stamp"
    assert ev[s.TS].dt.strftime("%H:%M:%S").to_list() == ["09:00:01", "09:00:02", "09:00:03"]
    assert ev[s.TS_QUALITY].cast(pl.String).to_list() == ["exact"] * 3


def test_host_logs_from_journalctl_json_short_iso_and_dmesg_are_timed_kernel_and_kubelet_events(tmp_path):
    # journalctl -o json (one entry a line; MESSAGE may be stored as bytes), -o short-iso,
    # dmesg (seconds since boot) and dmesg -T (wall time): the formats node logs are collected in.
    write(
        tmp_path / "node-7" / "journal.json",
        '{"__REALTIME_TIMESTAMP":"1741510800250000","_HOSTNAME":"node-7","SYSLOG_IDENTIFIER":"kubelet","_PID":"2211",'
        '"PRIORITY":"3","MESSAGE":"E0309 09:00:00.250000    2211 kubelet.go:2412] \\"Skipping pod synchronization\\" err=\\"PLEG is not healthy\\""}\n'
        '{"__REALTIME_TIMESTAMP":"1741510801000000","_HOSTNAME":"node-7","SYSLOG_IDENTIFIER":"kernel","PRIORITY":"4",'
        '"MESSAGE":[78,86,82,77,58,32,88,105,100,32,40,80,67,73,58,48,48,48,48,58,99,49,58,48,48,41,58,32,55,57]}\n',
    )
    write(
        tmp_path / "node-7" / "journal-iso.log",
        "2025-03-09T09:00:02+0000 node-7 kernel: NVRM: Xid (PCI:0000:c1:00): 79, pid=9120, GPU has fallen off the bus.\n"
        '2025-03-09T09:00:03+0000 node-7 containerd[977]: time="2025-03-09T09:00:03Z" level=error msg="task exit"\n',
    )
    write(
        tmp_path / "node-7" / "dmesg.txt",
        "[ 4211.730125] NVRM: Xid (PCI:0000:c1:00): 79, GPU has fallen off the bus.\n",
    )
    write(
        tmp_path / "node-7" / "dmesg-T.txt",
        "[Sun Mar  9 09:00:04 2025] Memory cgroup out of memory: Killed process 9120 (python3) total-vm:1024kB\n",
    )
    write(  # dmesg --time-format=iso: a comma before the microseconds
        tmp_path / "node-7" / "dmesg-iso.txt",
        "2025-03-09T10:00:05,250000+01:00 mlx5_core 0000:5e:00.0 ibp94s0: Link down\n",
    )
    r = ingest(tmp_path)
    assert r.unparsed == 0
    wrappers = {f.file: f.wrapper for f in r.files}
    assert wrappers == {
        "node-7/dmesg-T.txt": "dmesg",
        "node-7/dmesg-iso.txt": "dmesg",
        "node-7/dmesg.txt": "dmesg",
        "node-7/journal-iso.log": "journald",
        "node-7/journal.json": "journald-json",
    }
    ev = r.events.sort(s.FILE, s.LINE)
    kernel = ev.filter(pl.col(s.SOURCE) == "kernel")
    assert kernel[s.MESSAGE].to_list() == [
        "Memory cgroup out of memory: Killed process 9120 (python3) total-vm:1024kB",
        "mlx5_core 0000:5e:00.0 ibp94s0: Link down",
        "NVRM: Xid (PCI:0000:c1:00): 79, GPU has fallen off the bus.",
        "NVRM: Xid (PCI:0000:c1:00): 79, pid=9120, GPU has fallen off the bus.",
        "NVRM: Xid (PCI:0000:c1:00): 79",
    ]
    assert kernel[s.TS].to_list() == [
        datetime(2025, 3, 9, 9, 0, 4, tzinfo=UTC),
        datetime(2025, 3, 9, 9, 0, 5, 250000, tzinfo=UTC),
        None,  # dmesg without -T: seconds since boot are no wall time
        datetime(2025, 3, 9, 9, 0, 2, tzinfo=UTC),
        datetime(2025, 3, 9, 9, 0, 1, tzinfo=UTC),
    ]
    kubelet = ev.filter(pl.col(s.SOURCE) == "kubelet").row(0, named=True)
    assert (kubelet[s.HOST], kubelet[s.LEVEL], kubelet[s.TS_QUALITY]) == ("node-7", "ERROR", "exact")
    assert kubelet[s.TS] == datetime(2025, 3, 9, 9, 0, 0, 250000, tzinfo=UTC)
    containerd = ev.filter(pl.col(s.PROCESS) == "containerd").row(0, named=True)
    assert (containerd[s.SOURCE], containerd[s.LEVEL]) == ("syslog", "ERROR")


def test_plain_dmesg_lines_are_placed_by_a_line_of_their_boot_that_says_the_wall_time(tmp_path):
    # Plain `dmesg` across three boots: the first kept its RTC line (wall time at 1.912345 s
    # since boot), the second has an AppArmor audit record (the epoch in ms) after its Xid,
    # the third neither. A kern.log line carries both stamps and keeps its syslog time.
    write(
        tmp_path / "gpu-2" / "dmesg.txt",
        "[    0.000000] Linux version 5.15.0-1053-nvidia (buildd@lcy02-amd64-079) #54-Ubuntu SMP\n"
        "[    1.912345] rtc_cmos 00:00: setting system clock to 2025-10-14T10:00:00 UTC (1760436000)\n"
        "[86592.000040] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
        "[    0.000000] Linux version 5.15.0-1053-nvidia (buildd@lcy02-amd64-079) #54-Ubuntu SMP\n"
        "[  311.204000] NVRM: Xid (PCI:0000:3b:00): 48, pid=812, name=python3, Ch 00000008\n"
        '[  312.000000] audit: type=1400 audit(1760529600.500:212): apparmor="DENIED" operation="open" '
        'profile="cri-containerd.apparmor.d" name="/proc/sys/kernel/ns_last_pid" pid=9134 comm="nvidia-smi"\n'
        "[    0.000000] Linux version 5.15.0-1053-nvidia (buildd@lcy02-amd64-079) #54-Ubuntu SMP\n"
        "[   95.310000] NVRM: Xid (PCI:0000:3b:00): 79, pid=1022, name=python3, GPU has fallen off the bus.\n",
    )
    write(
        tmp_path / "gpu-2" / "kern.log",
        "Oct 15 10:03:11 gpu-2 kernel: [86593.100000] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n",
    )
    ev = ingest(tmp_path, year=2025).events.sort(s.FILE, s.LINE)
    dmesg = ev.filter(pl.col(s.FILE) == "gpu-2/dmesg.txt")
    boot = datetime(2025, 10, 14, 10, 0, tzinfo=UTC) - timedelta(seconds=1.912345)
    audit = datetime(2025, 10, 15, 12, 0, 0, 500000, tzinfo=UTC)
    assert dmesg[s.TS].to_list() == [
        boot,  # (before the RTC line, in its boot)
        datetime(2025, 10, 14, 10, 0, tzinfo=UTC),
        boot + timedelta(seconds=86592.000040),
        audit - timedelta(seconds=312),  # (a reboot: the boot before lends it no time)
        audit - timedelta(seconds=0.796),
        audit,
        None,  # a boot with no line that says the wall time
        None,
    ]
    assert dmesg[s.TS_QUALITY].cast(pl.String).to_list() == ["relative"] * 6 + ["none"] * 2
    assert dmesg[s.MESSAGE][2].startswith("NVRM: Xid (PCI:0000:3b:00): 79")
    kern = ev.filter(pl.col(s.FILE) == "gpu-2/kern.log").row(0, named=True)
    assert (kern[s.TS], kern[s.TS_QUALITY]) == (datetime(2025, 10, 15, 10, 3, 11, tzinfo=UTC), "inferred-year")


def test_journalctl_short_monotonic_lines_are_host_logs_placed_by_their_boot_clock(tmp_path):
    # `journalctl -k -o short-monotonic`: seconds since boot, then host and ident; the kernel's
    # lines are placed as dmesg's are, the kubelet's keep their own klog time.
    write(
        tmp_path / "gpu-2" / "journal-k.txt",
        "[    1.912345] gpu-2 kernel: rtc_cmos 00:00: setting system clock to 2025-10-14T10:00:00 UTC (1760436000)\n"
        "[86592.000040] gpu-2 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen "
        "off the bus.\n"
        '[86593.500000] gpu-2 kubelet[2211]: E1015 10:03:11.000001    2211 kubelet.go:2412] "Skipping pod '
        'synchronization" err="PLEG is not healthy"\n',
    )
    r = ingest(tmp_path, year=2025)
    assert r.unparsed == 0 and [f.wrapper for f in r.files] == ["journald"]
    ev = r.events.sort(s.LINE)
    assert ev[s.HOST].to_list() == ["gpu-2"] * 3
    assert ev[s.SOURCE].to_list() == ["kernel", "kernel", "kubelet"]
    assert ev[s.MESSAGE][1].startswith("NVRM: Xid (PCI:0000:3b:00): 79")
    boot = datetime(2025, 10, 14, 10, 0, tzinfo=UTC) - timedelta(seconds=1.912345)
    assert ev[s.TS].to_list() == [
        datetime(2025, 10, 14, 10, 0, tzinfo=UTC),
        boot + timedelta(seconds=86592.000040),
        datetime(2025, 10, 15, 10, 3, 11, 1, tzinfo=UTC),
    ]
    assert ev[s.TS_QUALITY].cast(pl.String).to_list() == ["relative", "relative", "inferred-year"]


def test_journalctl_short_full_and_short_unix_are_timed_host_logs(tmp_path):
    # `journalctl -o short-full` (weekday, date, time, zone) and `-o short-unix` (epoch seconds).
    write(
        tmp_path / "node-3" / "journal-full.log",
        "Sun 2025-03-09 09:00:02 UTC node-3 kernel: NVRM: Xid (PCI:0000:c1:00): 79, pid=9120, GPU has fallen off the bus.\n"
        'Sun 2025-03-09 09:00:03.250000 UTC node-3 kubelet[2211]: E0309 09:00:03.250000    2211 kubelet.go:2412] "Skipping '
        'pod synchronization" err="PLEG is not healthy"\n',
    )
    write(
        tmp_path / "node-4" / "journal-unix.log",
        "1741510804.500001 node-4 kernel: mlx5_core 0000:5e:00.0 ibp94s0: Link down\n",
    )
    r = ingest(tmp_path)
    assert r.unparsed == 0 and {f.wrapper for f in r.files} == {"journald"}
    ev = r.events.sort(s.TS)
    assert ev.select(s.SOURCE, s.HOST, s.TS).rows() == [
        ("kernel", "node-3", datetime(2025, 3, 9, 9, 0, 2, tzinfo=UTC)),
        ("kubelet", "node-3", datetime(2025, 3, 9, 9, 0, 3, 250000, tzinfo=UTC)),
        ("kernel", "node-4", datetime(2025, 3, 9, 9, 0, 4, 500001, tzinfo=UTC)),
    ]
    assert ev[s.MESSAGE][2] == "mlx5_core 0000:5e:00.0 ibp94s0: Link down"


@pytest.mark.parametrize(
    ("rel", "node"),
    [
        ("gpu-b.dmesg", "gpu-b"),
        ("dmesg-gpu-d.log", "gpu-d"),
        ("gpu-b-dmesg-T.txt", "gpu-b"),
        ("gpu-e/dmesg", "gpu-e"),
        ("nodes/gpu-c/var/log/kern.log", "gpu-c"),
        ("node-logs/gpu-f-kubelet.log", "gpu-f"),
        ("logs/kubelet.log", None),
        ("dmesg.txt", None),
        # a sos report: its directory names the host; its files, the command that wrote them
        ("sosreport-gpu-g-2026-11-20-xkqzvb/sos_commands/kernel/dmesg_-T", "gpu-g"),
        ("sosreport-gpu-g-04012345-2026-11-20-xkqzvb/sos_commands/logs/journalctl_--no-pager", "gpu-g"),
        ("sosreport-gpu-g.04012345-20261120093000/var/log/messages", "gpu-g"),
        ("gpu-h/dmesg_-T", "gpu-h"),
        ("journalctl_--no-pager_--unit_kubelet", None),
    ],
)
def test_a_nodes_own_lines_that_name_no_host_take_the_node_their_path_names(tmp_path, rel, node):
    # `dmesg -T > gpu-b.dmesg` and a kubelet.log copied off the node never name it; without the
    # node a link going down could not be put on the node whose pods then failed.
    write(
        tmp_path / rel,
        "[Fri Nov 20 09:20:05 2026] mlx5_core 0000:1a:00.0 ibp26s0: Link down\n"
        'E1120 09:30:47.123456    1450 kubelet.go:2412] "Skipping pod synchronization" err="PLEG is not healthy"\n',
    )
    write(  # a pod's own log beside it keeps no node from its name
        tmp_path / "llama-70b-1.log",
        "2026-11-20T09:20:08.000000Z INFO 11-20 09:20:08 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s\n",
    )
    ev = ingest(tmp_path).events.sort(s.FILE, s.LINE)
    assert sorted(ev.select(s.FILE, s.SOURCE, s.HOST).rows()) == sorted(
        [("llama-70b-1.log", "vllm", None), (rel, "kernel", node), (rel, "kubelet", node)]
    )


def test_a_journal_lines_own_host_wins_over_the_path(tmp_path):
    write(
        tmp_path / "nodes" / "gpu-c" / "journal.log",
        "2025-03-09T09:00:02+0000 node-3 kernel: NVRM: Xid (PCI:0000:c1:00): 79, pid=9120, GPU has fallen off the bus.\n",
    )
    assert ingest(tmp_path).events[s.HOST].to_list() == ["node-3"]
