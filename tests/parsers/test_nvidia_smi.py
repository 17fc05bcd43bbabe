"""`nvidia-smi -q` snapshots in an incident bundle: what a node's GPUs said about themselves."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forensics import ingest
from parsers.documents import nvidia_smi
from parsers.paths import node_of
from tests.conftest import nvidia_smi_gpu, nvidia_smi_snapshot, write


def _findings(r) -> list[tuple]:
    ev = r.events.filter(pl.col("level").cast(pl.String) != "INFO").sort("line", "message")
    return list(ev.select("host", "level", "message").iter_rows())


def test_a_gpus_pending_row_remap_and_uncorrectable_errors_are_events_of_its_node(tmp_path):
    text = nvidia_smi_snapshot(
        nvidia_smi_gpu("00000000:18:00.0", "GPU-3f1c0e1e-2d8b-4f7a-9e61-0c4c1d2b7a10"),
        nvidia_smi_gpu("00000000:2A:00.0", "GPU-5e7e3a2b-9c41-4d77-b1f0-7a2e6c5d4b33", dram_ue=2, pending="Yes"),
    )
    write(tmp_path / "gpu-node-3" / "nvidia-smi.txt", text)
    r = ingest(tmp_path, tz="UTC")
    (f,) = r.files
    assert (f.wrapper, f.lines, f.parsed, f.unparsed) == ("nvidia-smi", text.count("\n"), f.lines, 0)
    assert _findings(r) == [
        ("gpu-node-3", "ERROR", "nvidia-smi: GPU 00000000:2A:00.0: 2 uncorrectable ECC errors since the driver loaded"),
        (
            "gpu-node-3",
            "ERROR",
            "nvidia-smi: GPU 00000000:2A:00.0: uncorrectable ECC errors, a row remap pending (reset the GPU)",
        ),
    ]  # (the aggregate counters are the GPU's history: no event)
    assert set(r.events["ts"].dt.to_string("%Y-%m-%d %H:%M:%S")) == {"2025-03-02 08:09:12"}
    assert r.events["pod"].null_count() == r.n_events  # (a node's file)


@pytest.mark.parametrize(
    ("gpu", "said"),
    [
        (nvidia_smi_gpu("00000000:18:00.0", "GPU-1", failed="Yes", dram_ue=9), "row remapping failed"),
        (
            nvidia_smi_gpu("00000000:18:00.0", "GPU-1", thermal="Active"),
            "clocks held down by the hardware (HW Thermal Slowdown)",
        ),
    ],
)
def test_a_failed_remap_and_a_thermal_slowdown_are_findings(tmp_path, gpu, said):
    write(tmp_path / "gpu-node-1-nvidia-smi-q.txt", nvidia_smi_snapshot(gpu))
    r = ingest(tmp_path)
    assert any(said in m for _h, _l, m in _findings(r))
    assert set(r.events["host"]) == {"gpu-node-1"}


def test_a_gpu_nvidia_smi_cannot_read_and_a_loop_of_snapshots_are_read_each_at_its_time(tmp_path):
    lost = "Unable to determine the device handle for GPU0000:2A:00.0: Unknown Error\n"
    text = (
        nvidia_smi_snapshot(nvidia_smi_gpu("00000000:18:00.0", "GPU-1"))
        + lost
        + nvidia_smi_snapshot(nvidia_smi_gpu("00000000:18:00.0", "GPU-1"), stamp="Sun Mar  2 08:09:17 2025")
    )
    write(tmp_path / "node-7" / "smi.log", text)
    r = ingest(tmp_path)
    (f,) = r.files
    assert f.lines == f.parsed and f.unparsed == 0
    (err,) = [m for _h, lvl, m in _findings(r) if lvl == "ERROR"]
    assert err == lost.strip()
    times = r.events.filter(pl.col("message").str.starts_with("nvidia-smi: GPU"))["ts"].dt.strftime("%H:%M:%S")
    assert times.to_list() == ["08:09:12", "08:09:17"]


@pytest.mark.parametrize(
    ("rel", "host"),
    [
        ("gpu-node-3/nvidia-smi.txt", "gpu-node-3"),
        ("nvidia-smi-gpu-node-3.txt", "gpu-node-3"),
        ("gpu-node-3.nvidia_smi_q.log", "gpu-node-3"),
        ("nvidia-smi.txt", None),
        ("smith-node-2/nvidia-smi.txt", "smith-node-2"),
        ("smith-node-2-nvidia-smi.txt", "smith-node-2"),
    ],
)
def test_the_node_is_read_from_the_files_name_or_directory(rel, host):
    assert node_of(rel) == host


_LINES = st.sampled_from(
    [
        *nvidia_smi_gpu("00000000:2A:00.0", "GPU-2", dram_ue=2, pending="Yes", thermal="Active").splitlines(),
        "Timestamp                                 : Sun Mar  2 08:09:12 2025",
        "Timestamp                                 : not a time",
        "==============NVSMI LOG==============",
        "Unable to determine the device handle for GPU0000:2A:00.0: Unknown Error",
        "        DRAM Uncorrectable            : [Unknown Error]",
        "",
    ]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_LINES | st.text(max_size=30), max_size=30))
def test_any_mix_of_snapshot_lines_is_read_and_every_line_accounted(lines):
    text = "==============NVSMI LOG==============\n" + "\n".join(lines) + "\n"
    rows = nvidia_smi.parse_document(text, nvidia_smi.sniff(text), "gpu-node-3/nvidia-smi.txt")
    assert rows and all(1 <= r["line"] <= text.count("\n") for r in rows)


def _table(ecc1: str = "0", temp1: str = "36C") -> str:
    """Plain `nvidia-smi` as driver 550 prints it, two H100s (the processes table cut)."""
    return (
        "Sun Mar  2 08:09:12 2025       \n"
        "+-----------------------------------------------------------------------------------------+\n"
        "| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |\n"
        "|-----------------------------------------+------------------------+----------------------+\n"
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n"
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |\n"
        "|                                         |                        |               MIG M. |\n"
        "|=========================================+========================+======================|\n"
        "|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |\n"
        "| N/A   34C    P0             69W /  700W |       1MiB /  81559MiB |      0%      Default |\n"
        "|                                         |                        |             Disabled |\n"
        "+-----------------------------------------+------------------------+----------------------+\n"
        f"|   1  NVIDIA H100 80GB HBM3          On  |   00000000:2A:00.0 Off | {ecc1:>20} |\n"
        f"| N/A   {temp1:>4}    P0             70W /  700W |       1MiB /  81559MiB |      0%      Default |\n"
        "|                                         |                        |             Disabled |\n"
        "+-----------------------------------------+------------------------+----------------------+\n"
    )


@pytest.mark.parametrize(
    ("table", "finding"),
    [
        (_table(), None),
        (_table(ecc1="ERR!"), "nvidia-smi: GPU 1 (00000000:2A:00.0): ERR! in its row"),
        (_table(temp1="ERR!"), "nvidia-smi: GPU 1 (00000000:2A:00.0): ERR! in its row"),
        (_table(ecc1="3"), "nvidia-smi: GPU 1 (00000000:2A:00.0): 3 uncorrectable ECC errors since the driver loaded"),
    ],
)
def test_plain_nvidia_smi_lists_each_gpu_and_flags_err_and_ecc(tmp_path, table, finding):
    write(tmp_path / "gpu-node-3" / "nvidia-smi.txt", table)
    r = ingest(tmp_path)
    (f,) = r.files
    assert (f.wrapper, f.unparsed) == ("nvidia-smi", 0)
    gpus = r.events.filter(pl.col("level").cast(pl.String) == "INFO")["message"].to_list()
    assert gpus == ["nvidia-smi: GPU 0 (00000000:18:00.0) NVIDIA H100 80GB HBM3, 34C", gpus[1]] and len(gpus) == 2
    found = [m for _h, _l, m in _findings(r)]
    assert found == ([] if finding is None else [found[0]]) and (finding is None or found[0].startswith(finding))
    assert set(r.events["host"]) == {"gpu-node-3"} and r.events["ts"].dt.strftime("%H:%M:%S")[0] == "08:09:12"


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_table(ecc1="ERR!").split("\n")) | st.text(max_size=30), max_size=30))
def test_any_mix_of_table_lines_is_read_and_every_line_accounted(lines):
    text = "| NVIDIA-SMI 550.54.15     Driver Version: 550.54.15     CUDA Version: 12.4 |\n" + "\n".join(lines) + "\n"
    rows = nvidia_smi.parse_document(text, nvidia_smi.sniff(text), "gpu-node-3/nvidia-smi.txt")
    assert rows and all(1 <= r["line"] <= text.count("\n") for r in rows)


def test_a_snapshot_taken_after_the_timeouts_explains_them_without_claiming_it_came_first(tmp_path):
    # Seven ranks time out at 08:17:01; the node's nvidia-smi, taken at 08:20:12, shows the GPU's
    # uncorrectable errors. The summary must not say the timeouts "followed" the snapshot.
    from forensics import analyze
    from forensics.report.render import render

    write(
        tmp_path / "gpu-node-3" / "nvidia-smi.txt",
        nvidia_smi_snapshot(
            nvidia_smi_gpu("00000000:18:00.0", "GPU-1"),
            nvidia_smi_gpu("00000000:2A:00.0", "GPU-2", dram_ue=2, pending="Yes"),
            stamp="Sun Mar  2 08:20:12 2025",
        ),
    )
    write(
        tmp_path / "ranks.log",
        "".join(
            f"[rank{r}]:[E0302 08:17:01.20417{r}093 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=4182, OpType=ALLREDUCE, NumelIn=65536, NumelOut=65536, "
            "Timeout(ms)=600000) ran for 600031 milliseconds before timing out.\n"
            for r in range(8)
            if r != 5
        ),
    )
    report = analyze(tmp_path, year=2025).to_json()
    rc = report["incidents"][0]["root_cause"]
    assert (rc["category"], rc["hosts"][:1]) == ("gpu-fault", ["gpu-node-3"])
    md = render(report)
    assert "It explains what was logged before it from 08:17:01 (collective-timeout): symptoms, not causes." in md
    assert "followed it" not in md and "the first sign of" not in md
