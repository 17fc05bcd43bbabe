"""`nvidia-smi -q` and plain `nvidia-smi` snapshots: what a node's GPUs said about themselves.

Why: `nvidia-smi -q > node-3/nvidia-smi.txt` is in every GPU incident bundle, and it is where
the kernel log's story ends: uncorrectable ECC errors counted since the driver loaded, a row
remap pending (the GPU needs a reset) or failed (it needs replacing), pages waiting to be
retired, clocks held down by the hardware (thermal, power brake), a GPU the tool could not
read. Each block (`nvidia-smi -q -l N` repeats them) is timed by its own `Timestamp` line, in
the node's local time (`--tz`):

    ==============NVSMI LOG==============

    Timestamp                                 : Tue Dec  1 18:41:52 2026
    Driver Version                            : 550.54.15
    GPU 00000000:18:00.0
        Product Name                          : NVIDIA H100 80GB HBM3
        ECC Errors
            Volatile
                DRAM Uncorrectable            : 2
        Remapped Rows
            Pending                           : Yes
            Remapping Failure Occurred        : No
        Clocks Event Reasons                  (`Clocks Throttle Reasons` before driver 535)
            HW Thermal Slowdown               : Active

Events (source `nvidia-smi`, on the node the file's directory or name gives, else none):
one per GPU a block lists (its model, UUID and temperature), one per finding above, and one
per line the structure does not hold (an error nvidia-smi printed: `Unable to determine the
device handle for GPU 0000:3b:00.0: Unknown Error`), so the catalog reads it. Volatile counters
only: the aggregate ones are the GPU's history, not this incident.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from parsers import schema as s
from parsers.paths import node_of

HEADER = re.compile(r"^=+NVSMI LOG=+\s*$", re.MULTILINE)
_FIELD = re.compile(r"^(?P<indent>\s*)(?P<key>[^:]*?\S)\s*:\s?(?P<value>.*?)\s*$")
_SECTION = re.compile(r"^(?P<indent>\s*)(?P<key>\S.*?)\s*$")
_GPU = re.compile(r"^GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]$")
SLOWDOWNS = ("HW Slowdown", "HW Thermal Slowdown", "HW Power Brake Slowdown", "SW Thermal Slowdown")
"""Clock reasons that mean the GPU is held below its clocks by heat or power, not by choice."""


TABLE = re.compile(r"^\|\s*NVIDIA-SMI \d", re.MULTILINE)
"""Plain `nvidia-smi`'s table, whose first row names the tool and the driver."""
_TABLE_GPU = re.compile(
    r"^\|\s+(?P<index>\d+)\s+(?P<name>.+?)\s+(?:On|Off)\s+\|\s+(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)"
    r"\s+\S+\s+\|\s+(?P<ecc>\S+)\s+\|"
)
_TABLE_STAMP = re.compile(r"^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) +\w{3} +\d{1,2} +\d{2}:\d{2}:\d{2} +\d{4}\s*$")


def sniff(text: str) -> str | None:
    """`q` for `nvidia-smi -q` output, `table` for plain `nvidia-smi`'s, else None."""
    head = text[:8192]
    return "q" if HEADER.search(head) else "table" if TABLE.search(head) else None


@dataclass
class _Gpu:
    bus_id: str
    line: int
    fields: dict[str, str] = field(default_factory=dict)
    """`Section/Sub/Key` -> value."""


def parse_document(text: str, kind: str, rel: str, tz: str = "UTC") -> list[dict]:
    """The snapshot's events as row dicts (with `line`), `kind` from `sniff`. Never raises on
    text `sniff` accepted."""
    host = node_of(rel)
    if kind == "table":
        return _parse_table(text, host, tz)
    rows: list[dict] = []
    when: datetime | None = None
    gpu: _Gpu | None = None
    path: list[tuple[int, str]] = []

    def close() -> None:
        if gpu is not None:
            rows.extend(_gpu_rows(gpu, when, host))

    for n, raw in enumerate(text.split("\n"), 1):  # (not splitlines: the file counts \n only)
        line = raw.rstrip()
        if not line.strip() or HEADER.match(line):
            if HEADER.match(line):
                close()
                gpu, path, when = None, [], None
            continue
        if _GPU.match(line):
            close()
            gpu, path = _Gpu(line.split(" ", 1)[1], n), []
            continue
        m = _FIELD.match(line)
        indent = len(line) - len(line.lstrip())
        if m and m["value"] != "" and not line.lstrip().startswith(("Unable to", "Failed to", "No devices")):
            while path and path[-1][0] >= indent:
                path.pop()
            key = "/".join([p for _, p in path] + [m["key"]])
            if gpu is None:
                if m["key"] == "Timestamp":
                    when = _time(m["value"], tz)
                continue
            gpu.fields[key] = m["value"]
            continue
        sec = _SECTION.match(line)
        if sec and indent > 0 and gpu is not None:
            while path and path[-1][0] >= indent:
                path.pop()
            path.append((indent, sec["key"].rstrip(":")))
            continue
        # An error nvidia-smi printed, or anything else the structure does not hold.
        rows.append(_row(n, when, host, "ERROR" if re.search(r"(?i)error|lost|fail", line) else "INFO", line.strip()))
    close()
    if not rows:
        rows.append(_row(1, when, host, "INFO", "nvidia-smi -q: no GPU listed"))
    return sorted(rows, key=lambda r: r[s.LINE])


def _parse_table(text: str, host: str | None, tz: str) -> list[dict]:
    """Plain `nvidia-smi` (a loop of them, each after its `date`-style first line): one event
    per GPU row, a finding where its row reads `ERR!` (the driver reports an error on the GPU:
    fallen off the bus, an ECC error, a lost GPU) or its Volatile Uncorr. ECC count is not 0."""
    rows: list[dict] = []
    when: datetime | None = None
    lines = text.split("\n")
    for n, line in enumerate(lines, 1):
        if _TABLE_STAMP.match(line.strip()):
            when = _time(line.strip(), tz)
            continue
        m = _TABLE_GPU.match(line)
        if m is None:
            if re.search(r"(?i)unable to|failed to|unknown error|gpu is lost", line):
                rows.append(_row(n, when, host, "ERROR", line.strip()))
            continue
        say = f"nvidia-smi: GPU {m['index']} ({m['bus']})"
        below = lines[n] if n < len(lines) else ""
        temp = re.search(r"\b(\d+C)\b", below)
        rows.append(_row(n, when, host, "INFO", f"{say} {m['name']}, {temp[1] if temp else '? C'}"))
        if "ERR!" in line or "ERR!" in below:
            rows.append(
                _row(n, when, host, "ERROR", f"{say}: ERR! in its row (the driver reports an error on this GPU)")
            )
        elif _count(m["ecc"]):
            rows.append(
                _row(
                    n,
                    when,
                    host,
                    "ERROR",
                    f"{say}: {_count(m['ecc'])} uncorrectable ECC errors since the driver loaded",
                )
            )
    if not rows:
        rows.append(_row(1, when, host, "INFO", "nvidia-smi: no GPU listed"))
    return rows


def _gpu_rows(gpu: _Gpu, when: datetime | None, host: str | None) -> list[dict]:
    f = gpu.fields
    say = f"nvidia-smi: GPU {gpu.bus_id}"
    about = f"{f.get('Product Name', '?')} ({f.get('GPU UUID', '?')}), {f.get('Temperature/GPU Current Temp', '? C')}"
    found: list[tuple[str, str]] = []
    ecc = sum(
        _count(v)
        for k, v in f.items()
        if k.startswith("ECC Errors/Volatile/")
        and ("Uncorrectable" in k or k.startswith("ECC Errors/Volatile/Double Bit/Total"))
    )
    if ecc:
        found.append(("ERROR", f"{ecc} uncorrectable ECC errors since the driver loaded"))
    if f.get("Remapped Rows/Remapping Failure Occurred") == "Yes":
        found.append(("ERROR", "row remapping failed (uncorrectable ECC errors; replace the GPU)"))
    elif f.get("Remapped Rows/Pending") == "Yes":
        found.append(("ERROR", "uncorrectable ECC errors, a row remap pending (reset the GPU)"))
    if "Yes" in (f.get("Retired Pages/Pending Page Blacklist"), f.get("Retired Pages/Pending Page Retirement")):
        found.append(("ERROR", "uncorrectable ECC errors, page retirement pending (reset the GPU)"))
    reasons = ("Clocks Event Reasons/", "Clocks Throttle Reasons/", "Clocks Reasons/")
    active = [
        k.rsplit("/", 1)[-1]
        for k, v in f.items()
        if v == "Active" and k.startswith(reasons) and k.rsplit("/", 1)[-1] in SLOWDOWNS
    ]
    if active:
        found.append(("WARNING", f"clocks held down by the hardware ({', '.join(active)})"))
    unreadable = sorted({k.split("/", 1)[0] for k, v in f.items() if "Unknown Error" in v or "GPU is lost" in v})
    if unreadable:
        found.append(("ERROR", f"Unknown Error reading {', '.join(unreadable[:4])} (GPU is lost?)"))
    return [_row(gpu.line, when, host, "INFO", f"{say} {about}")] + [
        _row(gpu.line, when, host, level, f"{say}: {text}") for level, text in found
    ]


def _row(line: int, when: datetime | None, host: str | None, level: str, msg: str) -> dict:
    return {s.TS: when, s.SOURCE: "nvidia-smi", s.HOST: host, s.LEVEL: level, s.MESSAGE: msg, s.LINE: line}


def _count(v: str) -> int:
    return int(v) if v.strip().isdigit() else 0


def _time(v: str, tz: str) -> datetime | None:
    try:
        local = datetime.strptime(" ".join(v.split()), "%a %b %d %H:%M:%S %Y")
    except ValueError:
        return None
    return local.replace(tzinfo=ZoneInfo(tz)).astimezone(UTC)
