"""Labels the catalog gives more than one entry, or that code outside the catalog names.

A label is prose for the report, free to reword: code compares a signature's `id` and asks
its traits (`catalog.traits_of`), never a label's text.
"""

from __future__ import annotations

GPU_FAULT = "GPU / CUDA fault"
"""The catalog's generic GPU fault (what a CUDA call or the driver reported)."""
KERNEL_EXCEPTION = "GPU exception in a kernel (Xid 13/31/43, usually software)"
"""The GPU faults a kernel can raise as well as the hardware (`forensics.diagnosis.rootcause` reads a
fault of either label on several GPUs at once as software)."""


SLOWDOWN = "GPU clocks held down by heat or power (HW slowdown)"
"""A GPU made slow, not failing: it explains lost throughput, never a crash."""
KV_STALE_READ = "decode read KV blocks the prefill instance had already released (P/D lease expired: stale KV)"
KV_TRANSFER_FAILED = "KV transfer between prefill and decode failed (NIXL / Mooncake)"
KV_TRANSFER_UNFINISHED = (
    "KV transfer not completed: the prefill's lease expired or decode recomputed or failed requests"
)
PD_MISMATCH = "prefill and decode instances run incompatible configurations (NIXL handshake refused)"
SOCKET_LOST = "a connection reset, closed or unroutable (its peer process died, or the network between them failed)"
"""A socket error as any process words it (sshd, a Python client, Gloo): NCCL's own carry its
function's name and have a signature of their own."""
DEEPEP_TIMEOUT = "DeepEP expert all-to-all timed out (a peer rank stopped or its network failed)"
"""DeepEP's timeout checks; its kernels then `trap()` (`forensics.diagnosis.rootcause` reads the CUDA
error that follows as the timeout's echo)."""
FD_EXHAUSTED = (
    "a process ran out of file descriptors (its open-file limit, ulimit -n: open connections or sockets under load)"
)
"""Where this is seen, `forensics.report.alerts` watches the servers' open files against their limit."""
HOST_OOM = "host memory exhausted: the kernel's OOM killer killed a process on the node"
CONTAINER_OOM = "container OOM-killed (memory limit)"
RAY_OOM = "host memory exhausted: Ray's memory monitor killed workers"
