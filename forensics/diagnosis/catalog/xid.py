"""NVIDIA Xids: how the kernel, the device plugin and DCGM print them, and what each means.

The catalog's entries group the Xids by what to do (fell off the bus, ECC, NVLink, GSP,
kernel exceptions, cleanup); `MEANINGS` says, for any Xid a report shows, what NVIDIA's Xid
catalog calls it (docs.nvidia.com/deploy/xid-errors, "Analyzing Xid Errors with the Xid
Catalog": the Ampere-and-newer table, mnemonic and description), so a code outside the groups
is not left as a bare number.
"""

from __future__ import annotations

import re


def xid(*codes: int) -> str:
    """An Xid with one of `codes`, as the kernel, the device plugin and DCGM print it."""
    return rf"(?:\bXid \(PCI:[^)]*\):\s*|\bXid[=: ]\s*)(?:{'|'.join(map(str, codes))})\b"


MEANINGS: dict[int, str] = {
    8: "GPU stopped processing (a channel idle timeout)",
    13: "graphics engine exception (a kernel faulted: out-of-range access, illegal instruction)",
    31: "GPU memory page fault (a kernel read or wrote an unmapped address)",
    32: "invalid or corrupted push buffer stream (often PCIe corruption)",
    38: "driver firmware error",
    43: "GPU stopped processing (a channel reset after an application error)",
    45: "preemptive cleanup: the GPU's work was cleaned up after its process died or an earlier error",
    48: "double-bit ECC error (uncorrectable memory error)",
    56: "display engine error",
    57: "error programming video memory interface",
    58: "unstable video memory interface detected",
    61: "internal micro-controller breakpoint or warning",
    62: "internal micro-controller halt",
    63: "ECC page retirement or row remapping recorded (a reset applies it)",
    64: "ECC page retirement or row remapper recording failure",
    68: "video decoder (NVDEC) exception",
    69: "graphics engine class error",
    74: "NVLink error",
    79: "GPU has fallen off the bus",
    80: "corrupted data sent to the GPU",
    81: "VGA subsystem error",
    92: "high single-bit ECC error rate",
    93: "non-fatal violation of the provisioned InfoROM wear limit",
    94: "contained ECC error (the affected process was stopped; others run on)",
    95: "uncontained ECC error (every process on the GPU is affected; reset the GPU)",
    109: "context switch timeout",
    110: "security fault",
    119: "GSP RPC timeout (the GPU's firmware did not answer)",
    120: "GSP error (the GPU's firmware reported an error)",
    121: "C2C (chip-to-chip) link error",
    122: "SPI PMU RPC read failure",
    123: "SPI PMU RPC write failure",
    124: "SPI PMU RPC erase failure",
    125: "InfoROM filesystem failure",
    140: "unrecovered ECC error",
    143: "GPU initialization failure",
    144: "NVLink error (SAW)",
    145: "NVLink error (RLW)",
    146: "NVLink error (TLW)",
    147: "NVLink error (TREX)",
    148: "NVLink error (NVLPW control)",
    149: "NVLink error (NETIR)",
    150: "NVLink error (MSE)",
    154: "GPU recovery action changed (the driver asks for a GPU reset or a node reboot)",
}
"""Xid -> what NVIDIA's Xid catalog calls it, for the codes a serving GPU (A100, H100, B200,
GB200) can raise."""

_CODE = re.compile(r"(?:\bXid \(PCI:[^)]*\):\s*|\bXid[=: ]\s*)(\d+)\b")


def meaning(text: str) -> str | None:
    """What the first Xid in `text` is, in the Xid catalog's words ("Xid 94: contained ECC
    error..."), or None when the text holds no Xid or one the table does not know."""
    m = _CODE.search(text or "")
    if m is None:
        return None
    code = int(m.group(1))
    what = MEANINGS.get(code)
    return f"Xid {code}: {what} (NVIDIA's Xid catalog)" if what else None
