"""Throughput series over long and odd ranges: slowed and dark replicas, load that falls, stray timestamps (`forensics.diagnosis.series`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from forensics import analyze
from forensics.report.postmortem import write_all
from tests.conftest import SAMPLES, nvidia_smi_gpu, nvidia_smi_snapshot
from tests.conftest import write as write_file
from tests.forensics.diagnosis.conftest import k8s_event, metrics_lines, scheduled_on


def _one_replica_slows(tmp_path: Path, queued: bool, dark: bool = False, replicas: int = 3) -> None:
    """`replicas` replicas at ~1,000 tokens/s for 30 min; then llm-1 serves at 30% for 20 min (or,
    `dark`, logs nothing more), requests queueing (`queued`) or not (less traffic sent to it)."""
    start = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
    for pod in (f"llm-{k}" for k in range(replicas)):
        lines = []
        for i in range(300):
            t = start + timedelta(seconds=10 * i)
            slow = pod == "llm-1" and i >= 180
            if slow and dark:
                break
            gen = (1000.0 + (i % 5) * 8) * (0.3 if slow else 1.0)
            waiting = 40 if i >= 180 and queued and (slow or dark) else 0
            lines.append(
                f"{t:%Y-%m-%dT%H:%M:%S}.000000000Z INFO {t:%m-%d %H:%M:%S} [loggers.py:123] Engine 000: Avg prompt "
                f"throughput: {gen * 3:.1f} tokens/s, Avg generation throughput: {gen:.1f} tokens/s, Running: 25 reqs, "
                f"Waiting: {waiting} reqs, GPU KV cache usage: 51.0%, Prefix cache hit rate: 12.0%\n"
            )
        write_file(tmp_path / "pods" / f"{pod}.log", "".join(lines))
    scheduled_on(tmp_path, {"llm-0": "gpu-1", "llm-1": "gpu-2", "llm-2": "gpu-3"})


def test_a_replica_slowed_while_its_requests_queue_is_an_incident_that_names_it(tmp_path):
    # A GPU held down by heat slows one replica without an error: the cluster loses a fifth of
    # its throughput, less than a drop, while that replica's users wait.
    _one_replica_slows(tmp_path, queued=True)
    (inc,) = analyze(tmp_path).to_json()["incidents"]
    assert (inc["impact"]["detector"], inc["impact"]["affected"]) == ("replica-slowdown", ["llm-1"])
    assert inc["start"].startswith("2026-11-24T12:30")
    assert inc["root_cause"]["status"] == "inconclusive"
    assert inc["root_cause"]["missing"].startswith("Replica llm-1 served at under half its usual throughput")


def test_a_slowed_replicas_node_snapshot_showing_hw_slowdown_is_its_cause(tmp_path):

    _one_replica_slows(tmp_path, queued=True)
    write_file(
        tmp_path / "nodes" / "gpu-2" / "nvidia-smi-q.txt",
        nvidia_smi_snapshot(
            nvidia_smi_gpu("00000000:C1:00.0", "GPU-9a1e", thermal="Active"), stamp="Tue Nov 24 12:35:00 2026"
        ),
    )
    rc = analyze(tmp_path).to_json()["incidents"][0]["root_cause"]
    assert (rc["status"], rc["label"], rc["hosts"]) == (
        "supported",
        "GPU clocks held down by heat or power (HW slowdown)",
        ["gpu-2"],
    )


@pytest.mark.parametrize("queued", [True, False])
def test_a_replica_gone_dark_while_requests_queue_is_an_incident_even_with_no_cause_logged(tmp_path, queued):
    # Its log just stops (an OOM kill with no `describe` collected): with requests queueing on
    # its peers that is capacity lost; without, it may be a scale-down, and nothing is claimed.
    _one_replica_slows(tmp_path, queued=queued, dark=True, replicas=5)  # (a fifth of the total: no drop)
    incs = analyze(tmp_path).to_json()["incidents"]
    if not queued:
        assert incs == []
        return
    (inc,) = incs
    assert (inc["impact"]["detector"], inc["impact"]["affected"]) == ("replica-drop", ["llm-1"])
    assert inc["root_cause"]["status"] == "inconclusive"
    assert inc["root_cause"]["missing"].startswith("Replica llm-1 stopped serving while requests queued")


@pytest.mark.parametrize(("crashed", "stopped"), [(True, False), (False, False), (True, True)])
def test_one_replica_of_twelve_going_dark_after_a_fault_is_an_incident_and_without_one_is_not(
    tmp_path, crashed, stopped
):
    # Losing one replica of twelve moves the cluster total by ~8%, what a rollout does too;
    # a hard fault logged as it went dark tells a crash from a replica replaced, unless the
    # pod was being stopped on purpose just before it (a shutdown's own errors).
    start = datetime(2025, 5, 1, 9, 0, tzinfo=UTC)
    if stopped:
        kill = k8s_event(start + timedelta(minutes=21, seconds=30), "Killing", "llm-7", "Stopping container vllm")
        write_file(tmp_path / "events.json", json.dumps({"kind": "List", "items": [kill]}))
    for k in range(12):
        lines = metrics_lines(start, 22 if k == 7 else 40, drop_at=None).splitlines(keepends=True)
        if k == 7 and crashed:
            t = start + timedelta(minutes=21, seconds=58)
            head = f"{t:%Y-%m-%dT%H:%M:%S}.000000000Z (EngineCore_DP0 pid=90) ERROR {t:%m-%d %H:%M:%S} [core.py:708] "
            lines += [
                head + "EngineCore encountered a fatal error.\n",
                head + "Traceback (most recent call last):\n",
                head + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n",
            ]
        write_file(tmp_path / f"llm-{k}.log", "".join(lines))
    incidents = analyze(tmp_path).to_json()["incidents"]
    if stopped or not crashed:
        assert incidents == []
        return
    (inc,) = incidents
    rc = inc["root_cause"]
    assert (inc["impact"]["detector"], rc["status"], rc["category"], rc["hosts"]) == (
        "replica-drop",
        "supported",
        "gpu-memory",
        ["llm-7"],
    )
    assert any("while its 11 peer pods were fine" in w for w in rc["why"])


def test_one_replica_going_dark_after_its_nodes_xid_is_an_incident_named_by_the_node(tmp_path):
    # The node's kernel names no pod: the replica the scheduler put there is the one it took down.
    start = datetime(2025, 5, 1, 9, 0, tzinfo=UTC)
    for k in range(12):
        write_file(tmp_path / f"llm-{k}.log", metrics_lines(start, 22 if k == 7 else 40, drop_at=None))
    assigned = k8s_event(start, "Scheduled", "llm-7", "Successfully assigned serving/llm-7 to gpu-node-3")
    write_file(tmp_path / "events.json", json.dumps({"kind": "List", "items": [assigned]}))
    write_file(
        tmp_path / "nodes" / "gpu-node-3" / "kernel.journal",
        "May 01 09:21:50 gpu-node-3 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=4121, GPU has fallen off the bus.\n",
    )
    (inc,) = analyze(tmp_path).to_json()["incidents"]
    rc = inc["root_cause"]
    assert (inc["impact"]["detector"], rc["status"], rc["label"], rc["hosts"]) == (
        "replica-drop",
        "supported",
        "GPU fell off the bus (Xid 79)",
        ["gpu-node-3"],
    )


def test_a_fault_the_throughput_did_not_feel_is_said_beside_no_incident_not_as_unexplained(tmp_path):
    # One IB completion error on a replica that went on serving, and an error the catalog
    # does not know: no incident, but "no incident" must not read as "nothing failed".
    start = datetime(2025, 5, 1, 9, 0, tzinfo=UTC)
    for k in range(3):
        body = metrics_lines(start, 40, drop_at=None)
        if k == 1:
            t = start + timedelta(minutes=12)
            body += (
                f"{t:%Y-%m-%dT%H:%M:%S}.000000000Z gpu-b:2343:2381 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : "
                "Got completion from peer 10.0.0.7<52415> with status=12 opcode=0 len=0 vendor err 129 (Send)\n"
                f"{t:%Y-%m-%dT%H:%M:%S}.500000000Z (APIServer pid=7) ERROR {t:%m-%d %H:%M:%S} [serving.py:88] "
                "tool parser returned nothing for request 7\n"
            )
        write_file(tmp_path / "logs" / f"llm-{k}.log", body)
    out = write_all(analyze(tmp_path / "logs"), tmp_path / "out")
    a = json.loads(out["analysis"].read_text())
    assert a["incidents"] == []
    (quiet,) = a["quiet_faults"]
    assert (quiet["label"], quiet["count"], quiet["file"]) == ("InfiniBand / RDMA transport error", 1, "llm-1.log")
    assert [e["template"] for e in a["unexplained_errors"]] == ["tool parser returned nothing for request <NUM>"]
    md = out["postmortem"].read_text()
    assert "no replica went dark, but faults were logged" in md and "| InfiniBand / RDMA transport error |" in md
    assert "no burst of faults" not in md


def test_a_replica_serving_less_because_less_is_sent_to_it_is_no_incident(tmp_path):
    _one_replica_slows(tmp_path, queued=False)
    assert analyze(tmp_path).to_json()["incidents"] == []


def test_a_drop_at_the_end_of_three_days_of_metrics_is_found(tmp_path):
    # A pod that served for days before failing: `kubectl logs` returns its whole life, which
    # is thousands of bins. (Python PELT took minutes per day of bins; the search must not.)
    from datetime import UTC, datetime

    start = datetime(2025, 3, 1, 0, 0, tzinfo=UTC)
    write_file(tmp_path / "vllm-0.log", metrics_lines(start, 3 * 24 * 60, drop_at=3 * 24 * 60 - 20, every_s=30))
    incs = analyze(tmp_path).to_json()["incidents"]
    assert len(incs) == 1
    assert incs[0]["start"].startswith("2025-03-03T23:4")
    assert incs[0]["impact"]["measured"] is True


def _ramp_lines(start, minutes: int, level, waiting=lambda m: 0) -> str:
    """A V1 engine's metrics lines every 10 s; `level(minute)` is its generation throughput
    (prompt throughput follows it: the load itself); an idle engine logs none (DEBUG)."""
    from datetime import timedelta

    out = []
    for i in range(minutes * 6):
        t, m = start + timedelta(seconds=10 * i), i / 6
        gen = level(m) + (i % 5) * 8 if level(m) > 0 else 0.0
        if gen <= 0:
            continue
        out.append(
            f"{t:%Y-%m-%dT%H:%M:%S}.000000000Z (APIServer pid=7) INFO {t:%m-%d %H:%M:%S} [loggers.py:123] Engine 000: "
            f"Avg prompt throughput: {gen * 0.7:.1f} tokens/s, Avg generation throughput: {gen:.1f} tokens/s, "
            f"Running: {int(gen / 60)} reqs, Waiting: {waiting(m)} reqs, GPU KV cache usage: 30.0%, "
            "Prefix cache hit rate: 20.0%\n"
        )
    return "".join(out)


def test_throughput_that_falls_with_the_load_is_said_but_is_no_incident(tmp_path):
    # The end of the business day: prompt and generation sink together over an hour, nothing
    # waits, nothing fails. A fall like this on the plot is explained, not paged on.
    from datetime import UTC, datetime

    start = datetime(2025, 3, 2, 16, 0, tzinfo=UTC)
    evening = lambda m: 2400.0 if m < 60 else max(0.0, 2400.0 * (1 - (m - 60) / 60))  # noqa: E731
    for pod in ("vllm-a", "vllm-b"):
        write_file(tmp_path / "day" / f"{pod}.log", _ramp_lines(start, 180, evening))
    report = analyze(tmp_path / "day")
    d = report.to_json()
    assert d["incidents"] == []
    [decline] = d["load_declines"]
    assert decline["unit"] == "generation tokens/s" and decline["to_per_s"] < 0.1 * decline["from_per_s"]
    md = write_all(report, tmp_path / "out")["postmortem"].read_text()
    assert "with the load" in md and "Throughput stayed within its normal range" not in md

    # The same evening with a queue building up: work was sent and not served, an incident.
    queued = lambda m: 0 if m < 70 else 25  # noqa: E731
    for pod in ("vllm-a", "vllm-b"):
        write_file(tmp_path / "queue" / f"{pod}.log", _ramp_lines(start, 180, evening, queued))
    d = analyze(tmp_path / "queue").to_json()
    assert len(d["incidents"]) == 1 and d["load_declines"] == []

    # The same evening where the engines go dark at once while still busy: a loss, an incident.
    for pod in ("vllm-a", "vllm-b"):
        write_file(
            tmp_path / "dark" / f"{pod}.log", _ramp_lines(start, 80, evening) + _ramp_lines(start, 180, lambda m: 0)
        )
    write_file(tmp_path / "dark" / "vllm-c.log", _ramp_lines(start, 180, lambda m: 300.0))
    d = analyze(tmp_path / "dark").to_json()
    assert len(d["incidents"]) == 1 and d["load_declines"] == []

    # ...and where one of three goes dark mid-ramp: not the load either.
    for pod in ("vllm-a", "vllm-b"):
        write_file(tmp_path / "one" / f"{pod}.log", _ramp_lines(start, 180, evening))
    write_file(tmp_path / "one" / "vllm-c.log", _ramp_lines(start, 85, evening))
    assert analyze(tmp_path / "one").to_json()["load_declines"] == []


def test_a_stray_timestamp_decades_away_does_not_stretch_the_throughput_series(tmp_path):
    # A node whose clock was reset stamps a line 1970-01-01: the series keeps to the logs' own
    # weeks (a grid of 30 s bins back to 1970 would be 58 million bins) and says what it left out.
    from datetime import UTC, datetime

    start = datetime(2025, 3, 2, 8, 0, tzinfo=UTC)
    stray = metrics_lines(datetime(1970, 1, 1, tzinfo=UTC), 1, None)
    write_file(tmp_path / "vllm-0.log", stray + metrics_lines(start, 60, drop_at=40))
    report = analyze(tmp_path)
    assert report.series.t[0] >= datetime(2025, 1, 1, tzinfo=UTC)
    incs = report.to_json()["incidents"]
    assert len(incs) == 1 and incs[0]["start"].startswith("2025-03-02T08:4")
    assert any("1970-01-01" in w and "throughput series" in w for w in report.warnings)


def _engine_lines(start: datetime, seconds: range, *, gen: float = 2400.0, running: int = 12, waiting: int = 0) -> str:
    """V1 metrics lines under `kubectl logs --timestamps`, at each second offset in `seconds`."""
    out = []
    for i in seconds:
        t = start + timedelta(seconds=i)
        out.append(
            f"{t:%Y-%m-%dT%H:%M:%S}.000000000Z (APIServer pid=7) INFO {t:%m-%d %H:%M:%S} [loggers.py:123] Engine 000: "
            f"Avg prompt throughput: {gen * 0.7:.1f} tokens/s, Avg generation throughput: {gen + (i % 70 if gen else 0):.1f} tokens/s, "
            f"Running: {running} reqs, Waiting: {waiting} reqs, GPU KV cache usage: 40.0%, Prefix cache hit rate: 20.0%\n"
        )
    return "".join(out)


def test_a_gap_in_one_engines_metrics_is_no_data_not_a_drop(tmp_path):
    # An excerpt pasted with 25 minutes cut out of its middle: before and after, the engine
    # served at its usual rate. The cut is not an outage.
    start = datetime(2026, 2, 3, 9, 0, tzinfo=UTC)
    lines = _engine_lines(start, range(0, 1200, 10)) + _engine_lines(start, range(2700, 3600, 10))
    write_file(tmp_path / "vllm.log", lines)
    report = analyze(tmp_path)
    assert report.to_json()["incidents"] == []
    assert np.isnan(report.series.throughput[45])  # (minute 22: no data, not zero)


def test_a_replica_whose_log_was_collected_over_a_shorter_window_is_no_drop(tmp_path):
    # Two of three pods' logs were collected with `--since=1h`, one with `--since=20m`: the
    # cluster sum loses its share, but no replica measured less than before.
    start = datetime(2026, 2, 3, 9, 0, tzinfo=UTC)
    for pod in ("llm-0", "llm-1"):
        write_file(tmp_path / "pods" / f"{pod}.log", _engine_lines(start, range(0, 3600, 10)))
    write_file(tmp_path / "pods" / "llm-2.log", _engine_lines(start, range(0, 1200, 10)))
    assert analyze(tmp_path).to_json()["incidents"] == []


def test_the_same_replica_going_silent_after_its_engine_died_is_a_drop(tmp_path):
    # The control: the short log ends with its engine's death, so its silence is a known zero.
    start = datetime(2026, 2, 3, 9, 0, tzinfo=UTC)
    for pod in ("llm-0", "llm-1"):
        write_file(tmp_path / "pods" / f"{pod}.log", _engine_lines(start, range(0, 3600, 10)))
    t = start + timedelta(seconds=1201)
    head = f"{t:%Y-%m-%dT%H:%M:%S}.000000000Z (EngineCore_DP0 pid=90) ERROR {t:%m-%d %H:%M:%S} [core.py:708] "
    died = head + "EngineCore encountered a fatal error.\n" + head + "torch.OutOfMemoryError: CUDA out of memory.\n"
    write_file(tmp_path / "pods" / "llm-2.log", _engine_lines(start, range(0, 1200, 10)) + died)
    (inc,) = analyze(tmp_path).to_json()["incidents"]
    assert inc["root_cause"]["category"] == "gpu-memory"
    assert inc["start"].startswith("2026-02-03T09:20")


@pytest.mark.parametrize("tail", ["fatal", "warning"])
def test_an_excerpt_cut_at_its_only_engines_death_is_an_outage(tmp_path, tail):
    # Nothing measured after the crash, so no drop to see; the fault after the last metrics line
    # still is one. A warning there is not (the control).
    start = datetime(2026, 2, 3, 9, 0, tzinfo=UTC)
    t = start + timedelta(seconds=1206)
    head = f"{t:%Y-%m-%dT%H:%M:%S}.000000000Z (EngineCore_DP0 pid=90) ERROR {t:%m-%d %H:%M:%S} [core.py:708] "
    last = (
        head + "EngineCore encountered a fatal error.\n" + head + "torch.OutOfMemoryError: CUDA out of memory.\n"
        if tail == "fatal"
        else head.replace("ERROR", "WARNING") + "Sampling parameter top_k is not supported; ignoring it.\n"
    )
    write_file(tmp_path / "pods" / "llm-0.log", _engine_lines(start, range(0, 1200, 10)) + last)
    incs = analyze(tmp_path).to_json()["incidents"]
    if tail == "warning":
        assert incs == []
        return
    (inc,) = incs
    assert (inc["detector"], inc["root_cause"]["category"]) == ("error-burst", "gpu-memory")
    assert inc["root_cause"]["evidence"][0]["line"] == 121


@pytest.mark.parametrize("last_line", ["idle", "busy"])
def test_an_engine_that_stops_logging_when_idle_is_not_down(tmp_path, last_line):
    # V1 logs one line with nothing running and nothing waiting, then only at DEBUG; V0 logs
    # while it steps, so its last line may still show requests that finished seconds later.
    # Its peer serves on; the idle one's silence, and its measured zero, are no outage.
    start = datetime(2026, 2, 3, 9, 0, tzinfo=UTC)
    write_file(tmp_path / "pods" / "llm-0.log", _engine_lines(start, range(0, 3600, 10)))
    tail = (
        _engine_lines(start, range(1200, 1230, 10), gen=0.0, running=0)
        if last_line == "idle"
        else _engine_lines(start, range(1200, 1210, 10), gen=300.0, running=3)
    )
    write_file(tmp_path / "pods" / "llm-1.log", _engine_lines(start, range(0, 1200, 10)) + tail)
    assert analyze(tmp_path).to_json()["incidents"] == []


def test_a_silent_replica_while_requests_fail_at_the_gateway_is_a_drop(tmp_path):
    # Nothing in its own log says it died (its container's log was lost with the node), but the
    # gateway answered 503 from then on: the silence is an outage, not a cut.
    start = datetime(2026, 2, 3, 9, 0, tzinfo=UTC)
    write_file(tmp_path / "pods" / "llm-0.log", _engine_lines(start, range(0, 1200, 10)))
    access = []
    for i in range(0, 3600, 2):
        t = start + timedelta(seconds=i)
        status = 200 if i < 1200 else 503
        access.append(
            f'[{t:%Y-%m-%dT%H:%M:%S}.000Z] "POST /v1/chat/completions HTTP/1.1" {status} - via_upstream - "-" 312 '
            f'{"1024" if status == 200 else "19"} 850 849 "-" "python-httpx/0.27.0" "id-{i}" "llm.svc" "10.0.0.5:8000"\n'
        )
    write_file(tmp_path / "gateway" / "envoy.log", "".join(access))
    (inc,) = analyze(tmp_path).to_json()["incidents"]
    assert inc["impact"]["detector"] == "throughput-drop"
    assert inc["start"].startswith("2026-02-03T09:20")


def test_an_only_engine_that_goes_on_logging_while_idle_has_no_incident(tmp_path):
    # The load test ended at 09:20: the engine logs nothing running and nothing waiting for
    # twenty minutes. Zero throughput with no work is no demand, not a failure.
    start = datetime(2026, 2, 3, 9, 0, tzinfo=UTC)
    busy, idle = (
        _engine_lines(start, range(0, 1200, 10)),
        _engine_lines(start, range(1200, 2400, 10), gen=0.0, running=0),
    )
    write_file(tmp_path / "vllm.log", busy + idle)
    assert analyze(tmp_path).to_json()["incidents"] == []


def test_a_slowed_replica_whose_gpu_dcgm_reports_thermal_slowdown_is_named_from_the_export(tmp_path):
    # No nvidia-smi was run: the Prometheus export saved beside the logs (a `promtool tsdb dump`)
    # has DCGM's clock-event reasons, and llm-1's GPU turned to HW thermal slowdown (0x40|0x8)
    # just before its throughput halved.
    _one_replica_slows(tmp_path, queued=True)
    start = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
    rows = []
    for i in range(0, 50 * 60, 30):
        t = int((start + timedelta(seconds=i)).timestamp() * 1000)
        for node, gpu in (("gpu-1", "GPU-11aa"), ("gpu-2", "GPU-9a1e"), ("gpu-3", "GPU-77c0")):
            mask = 72 if node == "gpu-2" and i >= 29 * 60 else 0
            labels = f'gpu="0",UUID="{gpu}",Hostname="{node}"'
            rows.append(f'{{__name__="DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", {labels}}} {mask} {t}')
    write_file(tmp_path / "metrics" / "dcgm-tsdb-dump.txt", "\n".join(rows) + "\n")
    rc = analyze(tmp_path).to_json()["incidents"][0]["root_cause"]
    assert (rc["status"], rc["category"], rc["hosts"]) == ("supported", "gpu-fault", ["gpu-2"])
    assert "HW Slowdown, HW Thermal Slowdown" in rc["evidence"][0]["text"]


def test_dcgm_clock_events_of_an_idle_or_power_capped_gpu_are_not_slowdowns(tmp_path):
    from parsers.documents import prometheus

    text = "\n".join(
        f'DCGM_FI_DEV_CLOCKS_EVENT_REASONS{{gpu="1",UUID="GPU-1",Hostname="n"}} {v} {1764000000000 + 30000 * k}'
        for k, v in enumerate([1, 4, 16, 5, 64, 64, 0])
    )
    export = prometheus.parse_document(text + "\n", "text", "UTC")
    said = [e["message"] for e in export.events if "clocks held down" in (e.get("message") or "")]
    assert said == [
        "DCGM_FI_DEV_CLOCKS_EVENT_REASONS is 64 on GPU 1 (GPU-1): clocks held down by the hardware (HW Thermal Slowdown)"
    ]


def test_a_slowdown_says_what_it_did_to_the_gpus_clock_and_temperature_from_the_same_export():
    from parsers.documents import prometheus

    gpu = 'gpu="0",UUID="GPU-7",Hostname="gpu-node-2"'
    rows = []
    for k, (mask, clock, temp) in enumerate([(0, 1980, 66), (0, 1975, 71), (72, 1215, 91), (72, 1200, 92)]):
        ms = 1764000000000 + 30000 * k
        rows += [
            f"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{{{gpu}}} {mask} {ms}",
            f"DCGM_FI_DEV_SM_CLOCK{{{gpu}}} {clock} {ms}",
            f"DCGM_FI_DEV_GPU_TEMP{{{gpu}}} {temp} {ms}",
            # another GPU's series must not be read as this one's
            f'DCGM_FI_DEV_SM_CLOCK{{gpu="1",UUID="GPU-8",Hostname="gpu-node-2"}} 1980 {ms}',
        ]
    export = prometheus.parse_document("\n".join(rows) + "\n", "text", "UTC")
    said = [e["message"] for e in export.events if "clocks held down" in (e.get("message") or "")]
    assert said == [
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS is 72 on GPU 0 (GPU-7): clocks held down by the hardware (HW Slowdown, "
        "HW Thermal Slowdown); SM clock 1215 MHz (first sample 1980 MHz at 16:00:00), temperature 91 C (first sample "
        "66 C at 16:00:00)"
    ]
    assert not any("clock" in m or "temp" in m for m in export.metrics["metric"].to_list())


def test_a_slowed_replica_whose_nic_flaps_is_named_a_network_fault_on_its_node(tmp_path):
    # Slow, not dead: llm-1's node loses and regains its RDMA link every minute from 12:29;
    # its replica serves at 30 % while requests queue. Nothing crashes.
    _one_replica_slows(tmp_path, queued=True)
    lines = []
    for k in range(8):
        down = datetime(2026, 11, 24, 12, 29, 30, tzinfo=UTC) + timedelta(minutes=k)
        up = down + timedelta(seconds=4)
        lines += [
            f"{down:%b %d %H:%M:%S} gpu-2 kernel: mlx5_core 0000:c1:00.0 ib0: Link down",
            f"{up:%b %d %H:%M:%S} gpu-2 kernel: mlx5_core 0000:c1:00.0 ib0: Link up",
        ]
    write_file(tmp_path / "nodes" / "gpu-2" / "kernel.journal", "\n".join(lines) + "\n")
    (inc,) = analyze(tmp_path, year=2026).to_json()["incidents"]
    rc = inc["root_cause"]
    assert inc["impact"]["detector"] == "replica-slowdown"
    assert (rc["status"], rc["category"], rc["hosts"][0]) == ("supported", "network", "gpu-2")


def _sm_clocks(rows: list[tuple[str, list[int]]], reasons: bool = False) -> str:
    out = []
    for gpu, values in rows:
        for k, v in enumerate(values):
            ms = 1764000000000 + 30000 * k
            labels = f'gpu="{gpu}",UUID="GPU-{gpu}",Hostname="node-{gpu}"'
            out.append(f"DCGM_FI_DEV_SM_CLOCK{{{labels}}} {v} {ms}")
            if reasons:
                out.append(f"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{{{labels}}} 0 {ms}")
    return "\n".join(out) + "\n"


def test_a_gpu_whose_sm_clock_falls_behind_its_peers_is_said_once_idle_and_other_skus_are_not():
    from parsers.documents import prometheus

    text = _sm_clocks(
        [
            ("0", [1980, 1975, 1110, 1100, 1105, 1980]),  # throttled from the third scrape, then back
            ("1", [1980, 1980, 1980, 1975, 1980, 1980]),
            ("2", [1965, 1980, 1980, 1980, 1975, 1980]),
            ("3", [1980, 1980, 210, 210, 1980, 1980]),  # idle: its idle clocks, not a slowdown
            ("4", [1410, 1410, 1410, 1410, 1410, 1410]),  # another SKU: never ran with the others
        ]
    )
    said = [e["message"] for e in prometheus.parse_document(text, "text", "UTC").events if "held down" in e["message"]]
    assert said == [
        "DCGM_FI_DEV_SM_CLOCK is 1110 MHz on GPU 0 (GPU-0): 56% of the other GPUs' 1980 MHz at that scrape, after "
        "running with them: its clocks are held down (no clock-event reasons in this export say why)"
    ]
    # with clock-event reasons in the export, they say it (with the reason), not the peers
    text = _sm_clocks([("0", [1980, 1980, 1100]), ("1", [1980] * 3), ("2", [1980] * 3)], reasons=True)
    assert not [e for e in prometheus.parse_document(text, "text", "UTC").events if "held down" in e["message"]]


def test_a_throttled_gpu_is_named_from_sm_clocks_alone_when_the_export_has_no_clock_event_reasons(tmp_path):
    import shutil

    logs = tmp_path / "gpu-throttle"
    shutil.copytree(SAMPLES / "gpu-throttle", logs)
    dump = logs / "metrics/dcgm-tsdb-dump.txt"
    dump.write_text("".join(line for line in dump.read_text().splitlines(True) if "CLOCK_THROTTLE_REASONS" not in line))
    rc = analyze(logs).to_json()["incidents"][0]["root_cause"]
    assert rc["category"] == "gpu-fault" and rc["hosts"] == ["gpu-node-2"]
    assert "DCGM_FI_DEV_SM_CLOCK is 1110 MHz on GPU 0" in rc["evidence"][0]["text"]
