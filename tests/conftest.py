"""Shared fixtures and helpers: paths to test data, the optional shared evaluation data, and
writing lines to ingest and reading back their events with every line accounted for."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from forensics import ingest
from forensics import schema as s

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).parent.parent
SAMPLES = REPO / "samples"
"""The shipped sample incidents."""
GOLDEN = Path(__file__).parent / "golden"
FAULT_SAMPLES = [
    "cache-corruption",
    "nccl-network",
    "gpu-oom",
    "node-failure",
    "kv-pressure",
    "pd-transfer",
    "config-rollout",
    "gpu-throttle",
    "silent-kv",
    "startup-failure",
    "sglang-kv-leak",
]
"""The shipped samples with an incident, each with its ground truth (`samples/*/ground_truth.json`)."""
"""Pinned outputs: the samples' postmortems, the catalog's ids."""
SHARED = REPO.parent / "shared" / "data"


@pytest.fixture(scope="module")
def as_a_large_run():
    """Ingest through the compiled speed passes (fast lane, metrics scan) as a large run does.

    A run of a few KB, as every test's is, leaves all its lines to the general path and the
    metrics regexes (`forensics.ingestion.batches.SPEED_PASSES_MIN_CHARS`), which define what the
    passes must give; the format tests use this to cover the passes end to end too. (Module
    scope: hypothesis refuses function-scoped fixtures.)"""
    from forensics.ingestion import batches

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(batches, "SPEED_PASSES_MIN_CHARS", 0)
        yield


@pytest.fixture
def incident_dir() -> Path:
    """A small multi-source incident written in the real formats (tests/data/incident)."""
    return DATA / "incident"


def write(path: Path, text: str | bytes) -> Path:
    """Write `text` to `path`, creating parents."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def event_row(ev: pl.DataFrame, **eq) -> dict:
    """The first event whose columns equal `eq` (there must be one)."""
    df = ev
    for k, v in eq.items():
        df = df.filter(pl.col(k) == v)
    assert df.height >= 1, f"no event with {eq}"
    return df.row(0, named=True)


def assert_balanced(result) -> None:
    """Every file's lines are parsed, folded or unparsed: none is dropped."""
    for f in result.files:
        assert f.lines == f.parsed + f.folded + f.unparsed, f


def events_of(path, lines: list[str]) -> pl.DataFrame:
    """Ingest `lines` written to `path` (every line accounted for): the events in file order."""
    write(path, "\n".join(lines) + "\n")
    result = ingest(path.parent)
    assert_balanced(result)
    return result.events.sort(s.LINE)


def nvidia_smi_gpu(
    bus: str, uuid: str, *, dram_ue: int = 0, pending: str = "No", failed: str = "No", thermal: str = "Not Active"
):
    """One GPU's block as driver 550 prints it for an H100 (abridged, layout kept)."""
    return (
        f"GPU {bus}\n"
        "    Product Name                          : NVIDIA H100 80GB HBM3\n"
        "    Product Brand                         : NVIDIA\n"
        f"    GPU UUID                              : {uuid}\n"
        "    Minor Number                          : 1\n"
        "    PCI\n"
        "        Bus                               : 0x2A\n"
        f"        Bus Id                            : {bus}\n"
        "    Clocks Event Reasons\n"
        "        Idle                              : Not Active\n"
        "        Applications Clocks Setting       : Not Active\n"
        "        SW Power Cap                      : Not Active\n"
        "        HW Slowdown                       : Not Active\n"
        f"            HW Thermal Slowdown           : {thermal}\n"
        "            HW Power Brake Slowdown       : Not Active\n"
        "        Sync Boost                        : Not Active\n"
        "        SW Thermal Slowdown               : Not Active\n"
        "    ECC Mode\n"
        "        Current                           : Enabled\n"
        "        Pending                           : Enabled\n"
        "    ECC Errors\n"
        "        Volatile\n"
        "            SRAM Correctable              : 0\n"
        "            SRAM Uncorrectable Parity     : 0\n"
        "            SRAM Uncorrectable SEC-DED    : 0\n"
        "            DRAM Correctable              : 0\n"
        f"            DRAM Uncorrectable            : {dram_ue}\n"
        "        Aggregate\n"
        "            SRAM Correctable              : 0\n"
        "            SRAM Uncorrectable Parity     : 0\n"
        "            SRAM Uncorrectable SEC-DED    : 0\n"
        "            DRAM Correctable              : 3\n"
        "            DRAM Uncorrectable            : 7\n"
        "    Retired Pages\n"
        "        Single Bit ECC                    : N/A\n"
        "        Double Bit ECC                    : N/A\n"
        "        Pending Page Blacklist            : N/A\n"
        "    Remapped Rows\n"
        "        Correctable Error                 : 0\n"
        f"        Uncorrectable Error               : {dram_ue}\n"
        f"        Pending                           : {pending}\n"
        f"        Remapping Failure Occurred        : {failed}\n"
        "        Bank Remap Availability Histogram\n"
        "            Max                           : 639 bank(s)\n"
        "            High                          : 1 bank(s)\n"
        "    Temperature\n"
        "        GPU Current Temp                  : 41 C\n"
        "        GPU T.Limit Temp                  : 44 C\n"
    )


def nvidia_smi_snapshot(*gpus: str, stamp: str = "Sun Mar  2 08:09:12 2025") -> str:
    return (
        "\n==============NVSMI LOG==============\n\n"
        f"Timestamp                                 : {stamp}\n"
        "Driver Version                            : 550.54.15\n"
        "CUDA Version                              : 12.4\n\n"
        f"Attached GPUs                             : {len(gpus)}\n" + "".join(gpus) + "\n"
    )
