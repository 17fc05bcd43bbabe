"""The process's memory allocators, tuned for an ingest's churn of batch-sized arrays.

An ingest allocates a batch's worth of arrays many times over (lines, offsets, views,
copied fields: tens of MB per batch, on the parsing threads) and frees them a moment
later. Three allocators serve them: polars' jemalloc, pyarrow's mimalloc and glibc's
malloc (numpy, numba, Python's bytes). Each page an allocator hands back to the system
and then takes again costs a page fault (zeroing it): with the defaults, a GB of logs
cost ~0.9 million faults, ~3 s of system time on two cores. `tune` keeps freed memory for
reuse a little longer; `release_free_memory` hands it all back once the batches are done.
"""

from __future__ import annotations

import ctypes
import os

JEMALLOC_CONF = "dirty_decay_ms:5000,muzzy_decay_ms:5000"
"""Polars' jemalloc keeps freed pages 5 s before returning them. Polars sets 0.5 s dirty and
1 s muzzy when it loads (to keep the RSS of long sessions low; pola-rs/polars#18088) and
appends `_RJEM_MALLOC_CONF`, read once, when jemalloc first allocates: at 0.5 s, pages were
returned between one batch and the next that would have reused them."""

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 32 << 20
"""glibc serves blocks below this from its heap arenas (reused), above it with mmap (a
fresh mapping, faulted in page by page, each time). glibc raises its threshold to this
maximum on its own, but only after freeing a mapping of each size; a batch's arrays are
up to ~16 MB."""
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD
"""Free memory at the top of a heap that glibc keeps rather than trims: twice the mmap
threshold, as glibc's own dynamic rule sets it (setting one turns that rule off)."""


def tune() -> None:
    """Set the allocators' reuse as above; call before polars is imported (jemalloc reads its
    configuration once). Leaves a `_RJEM_MALLOC_CONF` the user set as it is."""
    os.environ.setdefault("_RJEM_MALLOC_CONF", JEMALLOC_CONF)
    libc = _glibc()
    if libc is not None:
        libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
        libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)


def release_free_memory() -> bool:
    """Return glibc's free pages to the system; whether it could (False off glibc).

    After the last batch the arenas' free blocks are dead weight: a GB of logs ingested and
    then analysed peaked ~1 GB higher for them. `malloc_trim(0)` returns every free page of
    every arena (glibc `malloc_trim(3)`).
    """
    libc = _glibc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


def _glibc() -> ctypes.CDLL | None:
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return None
        return ctypes.CDLL(None)
    except (ValueError, OSError, AttributeError):  # no such confstr name, no libc to load
        return None
