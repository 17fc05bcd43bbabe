"""The caps that keep hostile input from exhausting the machine, and their options.

Why: incident logs come from machines that were failing or compromised and from tarballs
people mail around. A few MB of gzip can expand to many GB of zeros, one line can be 50 MB, a
directory tree can be a thousand levels deep. Each cap cuts what is past it and says so in the
file's notes (and so in the report); none fails the run. The defaults are far above what real
logs reach; `forensics analyze`/`ingest` expose each as an option (README, Safety).

The limits in force are process-wide for the duration of an `ingest` (`using`): the thread
pool that parses batches reads them, and the shard tasks of a sharded run get them with their
files (`ShardSpec.limits`). Concurrent ingests with different limits in one process are not
supported.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass

GiB, MiB = 1024**3, 1024**2


@dataclass(frozen=True, kw_only=True)
class Limits:
    decompressed_bytes: int = 32 * GiB
    """The most read from one compressed file (`--max-decompressed`)."""
    bomb_ratio: int = 200
    """Logs compress 5-20:1 (gzip) and 20-50:1 (zstd at high levels): a stream that has given
    more than this many bytes for each compressed one, past `bomb_floor_bytes`, is a
    compression bomb and is cut (`--max-ratio`)."""
    bomb_floor_bytes: int = 256 * MiB
    """Output below which no ratio is judged: a small, very repetitive log is no threat."""
    line_chars: int = 1 * MiB
    """Longer lines are cut here with a marker, as Loki does, so one 50 MB line cannot stall
    parsing (`--max-line`)."""
    dir_depth: int = 64
    """Directories are read this many levels below a given path: deeper is a hostile or broken
    tree (a log collection is a few levels deep), said in the skipped list (`--max-depth`)."""

    def __post_init__(self) -> None:
        for name in ("decompressed_bytes", "bomb_ratio", "bomb_floor_bytes", "line_chars", "dir_depth"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")


DEFAULT = Limits()
_now: Limits = DEFAULT


def current() -> Limits:
    """The limits of the ingest in progress (`DEFAULT` outside one)."""
    return _now


@contextlib.contextmanager
def using(limits: Limits | None) -> Iterator[Limits]:
    """Make `limits` (None: `DEFAULT`) the ones in force for the block."""
    global _now
    before = _now
    _now = limits or DEFAULT
    try:
        yield _now
    finally:
        _now = before


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)(?:i?[bB])?\s*$")


def size(text: str) -> int:
    """`32G`, `256M`, `1.5GiB`, `4096`: a size in bytes (powers of 1024). Raises ValueError."""
    m = _SIZE.match(text)
    if m is None:
        raise ValueError(f"not a size: {text!r} (e.g. 32G, 256M, 1048576)")
    scale = {"": 1, "k": 1024, "m": MiB, "g": GiB, "t": 1024 * GiB}[m[2].lower()]
    return int(float(m[1]) * scale)
