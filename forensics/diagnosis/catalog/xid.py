"""NVIDIA Xids as the kernel, the device plugin and DCGM print them."""

from __future__ import annotations


def xid(*codes: int) -> str:
    """An Xid with one of `codes`, as the kernel, the device plugin and DCGM print it."""
    return rf"(?:\bXid \(PCI:[^)]*\):\s*|\bXid[=: ]\s*)(?:{'|'.join(map(str, codes))})\b"
