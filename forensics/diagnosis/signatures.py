"""What a log message means for an incident: its category, its kind and its causal layer.

The catalog is the domain knowledge of the root-cause ranking (shared docs,
prior-art-and-root-cause.md §0 and §10; log-formats.md §1.5, §2.3, §3.3, §4.4):

* kind `fault`: a hard fault that can start an incident (corrupt KV read, IB completion
  error, CUDA OOM, PLEG/NotReady);
* kind `change`: a state change that can trigger one (image/config rollout, traffic surge);
* kind `symptom`: what follows a fault (watchdog timeouts, engine death, probe failures,
  restarts). Symptoms are never the root cause when an earlier fault explains them;
* kind `impact`: user-visible damage (HTTP 5xx).

`layer` orders the GPU-serving causal chain: node/hardware (0) -> network (1) ->
memory and KV cache (2) -> collectives (3) -> engine (4) -> pods (5) -> requests (6).
A symptom at a higher layer is explained by a fault at a lower or equal layer before it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum, StrEnum

import numpy as np
import polars as pl

from forensics import schema as s
from forensics.schema import Category, Kind

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


def _xid(*codes: int) -> str:
    """An Xid with one of `codes`, as the kernel, the device plugin and DCGM print it."""
    return rf"(?:\bXid \(PCI:[^)]*\):\s*|\bXid[=: ]\s*)(?:{'|'.join(map(str, codes))})\b"


class Layer(IntEnum):
    """The GPU-serving causal chain, lowest first: a fault explains what happens above it."""

    NODE = 0
    NETWORK = 1
    MEMORY_KV = 2
    COLLECTIVES = 3
    ENGINE = 4
    PODS = 5
    REQUESTS = 6


class Trait(StrEnum):
    """What the ranking and the alerts must know of a fault beyond its category and layer."""

    OOM_KILL = "oom-kill"
    """Kills a process from outside for memory: its peers' lost sockets are its echo."""
    AS_THE_APP_SAW_IT = "as-the-app-saw-it"
    """A fault as a process saw it (a CUDA call or a transfer failed), not what failed: the
    node's own report of the same failure names it."""
    SOFTWARE_PRONE = "software-prone"
    """A GPU fault a kernel can raise as well as the hardware: on several GPUs at once, software."""
    AT_START = "at-start"
    """Hit by a pod before it serves (image, volume, weights, GPU memory at engine start): what a
    rollout's new version fails on, so the rollout before it is its trigger, not a rival."""
    KV_TRANSFER = "kv-transfer"
    """Disaggregated prefill/decode: where one is seen, the alerts watch NIXL's counters."""


@dataclass(frozen=True, kw_only=True)
class Signature:
    """One fault, change, symptom or impact the catalog knows: how to find it and what it means."""

    id: str
    """Stable: `<category>.<words of the label>`. What code and tests compare; the label may be reworded."""
    category: Category
    kind: Kind
    layer: Layer
    pattern: str
    """Regex searched in the message's first line or, for `in_traceback`, in its last exception line."""
    label: str
    """How the report names it."""
    in_traceback: bool = False
    action: str | None = None
    """The postmortem's action item when this is the root cause, where it differs from its
    category's (`forensics.diagnosis.advice.ACTIONS`)."""
    traits: frozenset[Trait] = frozenset()


SIGNATURES: tuple[Signature, ...] = (
    # --- KV cache / block manager (vLLM V0/V1 asserts, LMCache-style stores)
    Signature(
        id="kv-cache.kv-cache-corruption",
        category="kv-cache",
        kind="fault",
        layer=Layer.MEMORY_KV,
        pattern=r"(?i)cache corruption detected|corrupt(?:ed)? (?:kv|block|cache)|stale (?:kv )?block",
        label="KV cache corruption",
    ),
    Signature(
        id="kv-cache.kv-block-pool-invariant",
        category="kv-cache",
        kind="fault",
        layer=Layer.MEMORY_KV,
        pattern=r"No free blocks available|out of sync with the free list|The block already has a hash|Double free!|remove\(\) called on an invalid block|Cannot get \d+ free blocks"
        r"|NoFreeBlocksError|assert curr_block is not None|assert total_num_scheduled_tokens > 0"
        r"|Invalid block found in popleft\(\)"
        # TensorRT-LLM's KV block manager and its eviction policy (TLLM_CHECK: `Assertion failed: cond (file:line)`)
        r"|Assertion failed: .*\((?:[^()]*/)?(?:kvCacheManager|evictionPolicy)\.cpp:\d+\)",
        label="KV block-pool invariant violated",
    ),
    # LMCache's vLLM adapter checks what the store returned against what its lookup promised:
    # fewer tokens means a chunk left the store between the two (evicted or lost).
    Signature(
        id="kv-cache.kv-store-returned-fewer",
        category="kv-cache",
        kind="fault",
        layer=Layer.MEMORY_KV,
        pattern=r"The number of retrieved tokens is less than the expected number of tokens"
        r"|The number of tokens is more than the number of blocks",
        label="KV store returned fewer tokens than its lookup promised (chunks evicted or lost in between)",
    ),
    # The remote KV store behind LMCache (its Redis backend, redis-py's words): unreachable, the
    # engine recomputes every prefix it would have read (throughput falls, no wrong output).
    Signature(
        id="kv-cache.remote-kv-store-redis",
        category="kv-cache",
        kind="fault",
        layer=Layer.MEMORY_KV,
        pattern=r"redis\.exceptions\.(?:ConnectionError|TimeoutError|BusyLoadingError)"
        r"|Error \d+ connecting to \S+:\d+\. Connection refused",
        label="the remote KV store (Redis) cannot be reached",
        action="Restore the KV store the pods' LMCache config names (its pods, Service and memory: a Redis evicting "
        "or restarting under load), and alert on its availability and on LMCache's remote errors; serving falls back "
        "to recomputing prefixes, so size the fleet for a store outage.",
    ),
    # Disaggregated prefill (P/D): the prefill instance holds a request's KV blocks under a lease
    # until decode has read them (vLLM's NixlConnector; `VLLM_NIXL_ABORT_REQUEST_TIMEOUT`). A
    # read it no longer recognises may have copied blocks already freed and reused: stale KV.
    Signature(
        id="kv-cache.decode-read-kv-blocks",
        category="kv-cache",
        kind="fault",
        layer=Layer.MEMORY_KV,
        pattern=r"Potentially invalid KV blocks for unrecognized request",
        label=KV_STALE_READ,
        action="Treat the outputs of the requests named as suspect (their KV may have been another request's). "
        "Find why decode read late (its queue, transfer stalls), raise the prefill side's lease "
        "(`VLLM_NIXL_ABORT_REQUEST_TIMEOUT`) above decode's worst wait, and alert on the prefill's "
        "'Releasing expired KV blocks' warnings.",
        traits=frozenset({Trait.KV_TRANSFER}),
    ),
    Signature(
        id="kv-cache.requests-produced-nan-logits",
        category="kv-cache",
        kind="fault",
        layer=Layer.MEMORY_KV,
        pattern=r"Corrupted: [1-9]\d* reqs",
        label="requests produced NaN logits (corrupted KV or numerics; VLLM_COMPUTE_NANS_IN_LOGITS)",
    ),
    # --- host memory as Ray reports it (before the GPU-memory group: Ray's `OutOfMemoryError`
    # is the node's RAM, not the GPU's)
    Signature(
        id="node.host-memory-exhausted-ray",
        category="node",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"ray\.exceptions\.OutOfMemoryError|killed due to the node running low on memory"
        r"|killed due to memory pressure \(OOM\)",
        label=RAY_OOM,
        traits=frozenset({Trait.OOM_KILL}),
    ),
    Signature(
        id="node.ray-raylet-node-died",
        category="node",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"Raylet is terminated|The raylet exited unexpectedly",
        label="Ray's raylet on the node died (OOM killer, a crash or a signal)",
    ),
    # The head's view of a lost worker node: it says which (`address: 10.0.0.5`), not what
    # happened there, and it is logged on the head, so the action does not name the host.
    Signature(
        id="node.ray-worker-node-lost",
        category="node",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"has been marked dead because the detector has missed too many heartbeats",
        label="a Ray worker node was lost: the head stopped hearing its raylet (a crash, the OOM killer, preemption or "
        "the network)",
        action="Find why the raylet of the node the message names (its address) stopped: its kernel log (the OOM "
        "killer), its kubelet (an eviction, a preemption, a NotReady node) and the network to the head; an engine "
        "whose tensor- or pipeline-parallel workers span that node stops with it.",
    ),
    # --- GPU memory and GPU faults
    Signature(
        id="gpu-memory.gpu-out-memory",
        category="gpu-memory",
        kind="fault",
        layer=Layer.MEMORY_KV,
        pattern=r"OutOfMemoryError|CUDA out of memory|CUDA (?:driver )?error: out of memory|Cuda failure (?:\d+ )?'?out of memory|Failed to CUDA calloc"
        r"|No available memory for the cache blocks"
        r"|CUDA runtime error in .*: out of memory"  # (TensorRT-LLM's check of a CUDA call)
        r"|Failed: Cuda error \S+:\d+ 'out of memory'",
        label="GPU out of memory",
    ),
    # cuBLAS creating its handle or workspace: ALLOC_FAILED is an allocation; NOT_INITIALIZED is,
    # in PyTorch, nearly always the same (the handle is created lazily, at the first matmul, on a
    # GPU another allocation has filled). Both read `CUDA error: CUBLAS_STATUS_...`, which the
    # generic GPU fault would otherwise take for the hardware's.
    Signature(
        id="gpu-memory.cublas-could-not-allocate",
        category="gpu-memory",
        kind="fault",
        layer=Layer.MEMORY_KV,
        pattern=r"CUBLAS_STATUS_(?:ALLOC_FAILED|NOT_INITIALIZED)",
        label="cuBLAS could not allocate its handle or workspace (GPU memory exhausted)",
        action="Leave cuBLAS room on the GPU: lower `gpu_memory_utilization` or `max_num_seqs`, and check that no other "
        "process holds memory on it (`nvidia-smi`); the GPU itself is not faulty.",
    ),
    Signature(
        id="gpu-memory.kv-cache-too-small",
        category="gpu-memory",
        kind="fault",
        layer=Layer.MEMORY_KV,
        pattern=r"To serve at least one request with the models?'s max seq len|estimated maximum model length is"
        r"|is larger than the maximum number of tokens that can be stored in KV cache",
        label="KV cache too small for max_model_len (engine start)",
        traits=frozenset({Trait.AT_START}),
    ),
    # An Xid's number says what failed (NVIDIA's Xid catalog); the kernel (`NVRM: Xid (PCI:..): 79,`),
    # the device plugin (`Xid=79`) and DCGM (`Xid=79`) spell it. The generic GPU fault below
    # takes the rest.
    Signature(
        id="gpu-fault.gpu-fell-off-bus",
        category="gpu-fault",
        kind="fault",
        layer=Layer.NODE,
        pattern=_xid(79) + r"|fallen off the bus",
        label="GPU fell off the bus (Xid 79)",
        action="Drain {host}: the GPU is gone until the node reboots. Check its PCIe link, power and temperature "
        "(BMC logs), reseat it, and RMA it if it falls off again.",
    ),
    Signature(
        id="gpu-fault.gpu-memory-ecc-error",
        category="gpu-fault",
        kind="fault",
        layer=Layer.NODE,
        pattern=_xid(48, 63, 64, 92, 94, 95) + r"|uncorrectable ECC|double bit error",
        label="GPU memory ECC error (Xid 48/63/64/92/94/95)",
        action="Drain {host} and reset the GPU (`nvidia-smi -r`) so pending row remaps apply; read "
        "`nvidia-smi -q -d ROW_REMAPPER,ECC`, and RMA the GPU when a remap failed or the errors recur.",
    ),
    Signature(
        id="gpu-fault.nvlink-error-xid-74",
        category="gpu-fault",
        kind="fault",
        layer=Layer.NODE,
        pattern=_xid(74) + r"|uncorrectable NVLink error",
        label="NVLink error (Xid 74)",
        action="Drain {host}; read the link's error counters (`nvidia-smi nvlink -e`) and the fabric manager's log, "
        "reset the GPUs on that link, and RMA the GPU or baseboard if the link stays down.",
    ),
    Signature(
        id="gpu-fault.gpu-firmware-gsp-timeout",
        category="gpu-fault",
        kind="fault",
        layer=Layer.NODE,
        pattern=_xid(119, 120, 140),
        label="GPU firmware (GSP) timeout or error (Xid 119/120/140)",
        action="Reset the GPU or reboot {host}; if it recurs, move to a driver release that fixes it (or run with "
        "the GSP firmware disabled where NVIDIA's notes allow).",
    ),
    Signature(
        id="gpu-fault.gpu-exception-kernel-xid",
        category="gpu-fault",
        kind="fault",
        layer=Layer.NODE,
        pattern=_xid(13, 31, 43),
        label=KERNEL_EXCEPTION,
        action="Find whose kernel faulted: if the fault follows the workload to another GPU it is a software bug "
        "(the kernel or its inputs, such as block tables); if it stays with {host}'s GPU, run DCGM diagnostics "
        "(level 3) there.",
        traits=frozenset({Trait.SOFTWARE_PRONE}),
    ),
    Signature(
        id="gpu-fault.gpu-clocks-held-down",
        category="gpu-fault",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"clocks held down by the hardware|\b(?:HW|SW) (?:Thermal |Power Brake )?Slowdown\s*:\s*Active",
        label=SLOWDOWN,
        action="Check {host}'s cooling and power (BMC logs; `nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER`): a "
        "slowed GPU slows every collective it is in, so drain it until it runs at full clocks again.",
    ),
    Signature(
        id="gpu-fault.gpu-error-state-nvidia",
        category="gpu-fault",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"ERR! in its row",
        label="GPU in an error state (nvidia-smi shows ERR!)",
        action="Read the Xid in {host}'s kernel log (`dmesg | grep -i xid`) to know what failed; drain {host} and reset "
        "the GPU, and replace it if the error returns.",
    ),
    # The image's CUDA needs a newer driver than the node has: a rollout's new pods never start
    # (PyTorch's and CUDA's own words). Before the generic fault, whose `CUDA error: ` it contains.
    Signature(
        id="engine.image-cuda-needs-newer",
        category="engine",
        kind="fault",
        layer=Layer.ENGINE,
        pattern=r"The NVIDIA driver on your system is too old|CUDA driver version is insufficient for CUDA runtime version"
        r"|forward compatibility was attempted on non supported HW",
        label="the image's CUDA needs a newer GPU driver than the node has (engine start)",
        action="Roll back to the previous image, or move the nodes to the driver the image's CUDA needs "
        "(`nvidia-smi` shows the driver's CUDA version; CUDA forward compatibility works on datacenter GPUs only); "
        "gate rollouts on a canary pod whose engine starts.",
        traits=frozenset({Trait.AT_START}),
    ),
    # The image's kernels not built for the node's GPU (a wheel without its `sm_XX`, or bfloat16
    # on a GPU before Ampere): software meeting the wrong hardware, not a failing GPU; every pod
    # of that image on that GPU model fails at start. Before the generic fault (`CUDA error: `).
    Signature(
        id="engine.image-kernels-dtype-do",
        category="engine",
        kind="fault",
        layer=Layer.ENGINE,
        pattern=r"no kernel image is available for execution on the device"
        r"|with CUDA capability sm_\d+ is not compatible with the current PyTorch installation"
        r"|Bfloat16 is only supported on GPUs with compute capability"
        # a kernel tuned for a larger GPU (Triton's tile needs more shared memory than it has)
        r"|OutOfResources: out of resource: shared memory|FlashAttention only supports Ampere GPUs or newer",
        label="the image's kernels or dtype do not support the node's GPU model (CUDA architecture; engine start)",
        action="Run an image whose PyTorch and vLLM wheels include this GPU's architecture (compare "
        "`torch.cuda.get_arch_list()` with `nvidia-smi --query-gpu=name,compute_cap --format=csv`), or `--dtype half` "
        "on GPUs before Ampere; pin the pods to the GPU models the image supports (a node selector on "
        "`nvidia.com/gpu.product`). The GPU itself is not faulty: do not drain the node for it.",
        traits=frozenset({Trait.AT_START}),
    ),
    Signature(
        id="gpu-fault.gpu-work-cleaned-up",
        category="gpu-fault",
        kind="symptom",
        layer=Layer.NODE,
        pattern=_xid(45),
        label="GPU work cleaned up after its process died or an earlier error (Xid 45)",
    ),
    Signature(
        id="gpu-fault.gpu-cuda-fault",
        category="gpu-fault",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"illegal memory access|Xid \d+|NVRM: Xid|\bXid \(PCI:|\bXid=\d+|device will go unhealthy|device marked unhealthy|uncorrectable ECC|fallen off the bus|device-side assert|CUDA error: (?!out of memory)"
        r"|Failed: Cuda error \S+:\d+ '",
        label=GPU_FAULT,
        action="Look up the Xid {host}'s GPU logged then in NVIDIA's Xid catalog (`dmesg -T | grep -i xid` on the node "
        "where these logs lack it): a hardware one (48, 63/64, 74, 79, 94/95, 119) means drain the node, run DCGM "
        "diagnostics (level 3) and RMA the GPU if it recurs; none, or 13/31/43, points at software: rerun the "
        "failing requests on one replica with `CUDA_LAUNCH_BLOCKING=1` and roll back the vLLM/torch version or the "
        "kernel option (attention backend, CUDA graphs) that changed.",
        traits=frozenset({Trait.AS_THE_APP_SAW_IT, Trait.SOFTWARE_PRONE}),
    ),
    Signature(
        id="gpu-fault.nvswitch-nvlink-fabric-failure",
        category="gpu-fault",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"NVSwitch fatal|(?i:fabric ?manager).*(?:[^-]\bfatal\b|\bfailed\b)|NVLink: fatal"
        r"|\bSXid \([^)]*\): \d+, Fatal",
        label="NVSwitch / NVLink fabric failure",
    ),
    Signature(
        id="gpu-fault.cuda-call-failed-inside",
        category="gpu-fault",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"Cuda failure \d* ?'(?!out of memory)|ncclUnhandledCudaError|NCCL [Ee]rror.*unhandled cuda error",
        label="CUDA call failed inside NCCL",
        traits=frozenset({Trait.AS_THE_APP_SAW_IT}),
    ),
    Signature(
        id="gpu-fault.gpu-driver-nvml-failure",
        category="gpu-fault",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"Failed to initialize NVML|Driver/library version mismatch|NVML_ERROR_|Found no NVIDIA driver on your system"
        r"|no CUDA-capable device is detected|cudaErrorNoDevice|nvidia-container-cli: .*error"
        r"|Unable to determine the device handle for GPU|GPU is lost|No CUDA GPUs are available"
        r"|Unexpected error from cudaGetDeviceCount|Error 802: system not yet initialized"
        r"|NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver|GPU requires reset"
        r"|NVRM: .*RmInitAdapter failed"
        # the container started without the NVIDIA runtime (no runtimeClass, no device plugin mount)
        r"|lib(?:cuda|nvidia-ml)\.so\.1: cannot open shared object file",
        label="GPU driver / NVML failure",
        action="Check the NVIDIA driver and container runtime on {host}: `nvidia-smi` there (a driver upgraded without a "
        "reboot says `Driver/library version mismatch`: reboot the node), the GPU operator's driver and toolkit pods, "
        "and the pod's `runtimeClassName` and `nvidia.com/gpu` request (without them the container gets no "
        "libcuda); if the driver cannot bring a GPU up (RmInitAdapter), run DCGM diagnostics and RMA it.",
    ),
    # A process out of file descriptors fails every socket it opens: said before the transports
    # that report it (asyncio's accept loop, NCCL's sockets, ZMQ). Under load it is the API
    # server's open connections over its `ulimit -n`.
    Signature(
        id="engine.process-ran-out-file",
        category="engine",
        kind="fault",
        layer=Layer.ENGINE,
        pattern=r"\[Errno 24\] Too many open files|Too many open files \(|socket\.accept\(\) out of system resource"
        r"|: Too many open files$",
        label=FD_EXHAUSTED,
        action="Raise the container's open-file limit (`LimitNOFILE` of the container runtime, or `ulimit -n` in the "
        "entrypoint, to 65536 or more), cap concurrent connections per pod at the gateway, and alert on "
        "`process_open_fds` against `process_max_fds`.",
    ),
    # The API server's port (uvicorn's bind, vLLM's own socket), the TCPStore's master port or a
    # ZMQ endpoint taken: a leftover server from the previous start, or two hostNetwork pods. Before
    # the rendezvous signature, which would read torch's `DistNetworkError: ... EADDRINUSE` as a
    # connection failing.
    Signature(
        id="engine.server-port-already-taken",
        category="engine",
        kind="fault",
        layer=Layer.ENGINE,
        pattern=r"(?i:address already in use)|\bEADDRINUSE\b",
        label="the server's port is already taken (a leftover vLLM process, or two hostNetwork pods on one node; engine "
        "start)",
        action="Find what holds the port on {host} (`ss -ltnp | grep PORT`): a vLLM from an earlier start still "
        "running (kill it, or make the entrypoint `exec` vLLM so it dies with the container), or a second pod with "
        "`hostNetwork: true` (give each its own port, or an anti-affinity).",
        traits=frozenset({Trait.AT_START}),
    ),
    # --- network / NCCL transport
    Signature(
        id="network.infiniband-rdma-transport-error",
        category="network",
        kind="fault",
        layer=Layer.NETWORK,
        pattern=r"NET/IB ?: ?Got completion|ibv_\w+ failed|Call to ibv_|link down|NodeHasNetworkUnavailable|NetworkUnavailable"
        # NCCL's IB async-event thread (net_ib.cc) names the event in ibv_event_type_str's words;
        # a port going down is this, the HCA's own catastrophic errors the adapter's fault below
        r"|Got async event ?: ?port error"
        # ibv_wc_status_str's words, which UCX, Mooncake's transfer engine and NCCL end a failed
        # completion with ("work request flushed" only follows the first error, and is left out)
        r"|(?i:transport retry count(?:er)? exceeded|RNR retry count(?:er)? exceeded|remote access error)"
        r"|(?i:local (?:length|QP operation|protection|access) error|remote (?:invalid request|operation) error)",
        label="InfiniBand / RDMA transport error",
        traits=frozenset({Trait.AS_THE_APP_SAW_IT}),
    ),
    # AWS EFA (and other libfabric fabrics) under NCCL's aws-ofi-nccl plugin: a failed completion,
    # `NET/OFI Request 0x.. completed with error. RC: 5. Error: Input/output error.` The plugin's
    # failed start is left out: NCCL then falls back to sockets, slower but working.
    Signature(
        id="network.efa-libfabric-transport-error",
        category="network",
        kind="fault",
        layer=Layer.NETWORK,
        pattern=r"NET/OFI Request (?:\S+ )?completed with error",
        label="EFA / libfabric transport error (aws-ofi-nccl)",
        action="Check the EFA path of {host}: the `vpc.amazonaws.com/efa` devices the pod was given, `fi_info -p efa` "
        "inside it, the EFA hardware counters (`/sys/class/infiniband/*/ports/*/hw_counters`), and that the "
        "security group allows all traffic among its own members; rerun with `FI_LOG_LEVEL=warn` for libfabric's "
        "own error.",
    ),
    # The KV cache moving between prefill and decode instances (vLLM's NIXL and Mooncake
    # connectors, over UCX/RDMA): a failed read leaves decode's blocks invalid, and the
    # scheduler recomputes or fails the requests (`kv_load_failure_policy`).
    Signature(
        id="network.kv-transfer-between-prefill",
        category="network",
        kind="fault",
        layer=Layer.NETWORK,
        pattern=r"NIXL transfer (?:failed|exception) for request|Mooncake transfer failed|Failed to transfer KV cache for request"
        r"|Handshake failed for request \S+, marking blocks as invalid|^Handshake with \S+ failed\s*$"
        r"|^vllm:nixl_num_failed_transfers_total rose|^KV Transfer metrics: .*\bNum failed transfers=[1-9]",
        label=KV_TRANSFER_FAILED,
        action="Check the RDMA path between the prefill and decode pods on {host} (`UCX_LOG_LEVEL=info`, "
        "`ibv_devinfo`, `ib_write_bw` between the two nodes) and that decode reaches the prefill's side channel "
        "(`VLLM_NIXL_SIDE_CHANNEL_HOST`/`_PORT`); a failed read is recomputed or failed per "
        "`kv_load_failure_policy`, so alert on 'Recovered from KV load failure'.",
        traits=frozenset({Trait.KV_TRANSFER}),
    ),
    # The node's kernel on its NICs and HCAs: mlx5/ib `ib0: Link down`, Intel `NIC Link is Down`,
    # bonding, systemd-networkd's `Lost carrier`, a pulled cable, an RDMA completion error.
    Signature(
        id="network.network-link-down-rdma",
        category="network",
        kind="fault",
        layer=Layer.NETWORK,
        pattern=r": Link down\b|NIC Link is Down|link status definitely down|: Lost carrier\b|Cable unplugged"
        r"|WC error: \d+, Message: |transport retry counter exceeded",
        label="network link down or RDMA completion error on the node (kernel)",
    ),
    # The NIC/HCA itself failing, in the mlx5 driver's and the kernel's words (events.c,
    # health.c, cmd.c, sch_generic.c): a cable or transceiver in error, the firmware's
    # heartbeat lost, a command to the firmware timing out, a transmit queue stalled.
    Signature(
        id="network.node-network-adapter-failed",
        category="network",
        kind="fault",
        layer=Layer.NETWORK,
        pattern=r"Port module event\[error\]: module \d+, Cable error|mlx[45]\S*.*(?:health compromised|unrecoverable hardware error"
        r"|health poll failed|cmd_exec timeout|Driver is in error state)"
        r"|\(0x[0-9a-f]+\) timeout\. Will cause a leak of a command resource"
        r"|Got async event ?: ?(?:local catastrophic error|local work queue catastrophic error|SRQ catastrophic error)"
        r"|NETDEV WATCHDOG: \S+ \([^)]*\): transmit queue \d+ timed out",
        label="the node's network adapter failed (mlx5 firmware, cable or transceiver error, transmit queue stalled)",
        action="Take {host} out of service and check its adapters (`mlxlink -d <dev> -m` for the cable and "
        "transceiver, `devlink health show`, `ibstat`); reseat or replace the cable or HCA before returning it.",
    ),
    Signature(
        id="network.nccl-socket-error",
        category="network",
        kind="fault",
        layer=Layer.NETWORK,
        pattern=r"socketProgress(?:Opt)?: |socket(?:Start|Poll)Connect|\bNet : (?:Call to recv|Connection (?:closed|reset))",
        label="NCCL socket error",
        traits=frozenset({Trait.AS_THE_APP_SAW_IT}),
    ),
    Signature(
        id="network.connection-reset-closed-unroutable",
        category="network",
        kind="fault",
        layer=Layer.NETWORK,
        pattern=r"Connection (?:closed|reset) by (?:remote )?peer|No route to host|Broken pipe",
        label=SOCKET_LOST,
        traits=frozenset({Trait.AS_THE_APP_SAW_IT}),
    ),
    # A container's /dev/shm is 64 MB unless the pod mounts a memory emptyDir there; NCCL's
    # shared-memory transport (and vLLM's broadcast) need more. NCCL's own words (misc/shmutils.cc),
    # before its "system error" below, which names no cause.
    Signature(
        id="pod-lifecycle.dev-shm-too-small",
        category="pod-lifecycle",
        kind="fault",
        layer=Layer.PODS,
        pattern=r"Error while creating shared memory segment /dev/shm/|failed to extend /dev/shm/\S+ to \d+ bytes"
        r"|/dev/shm\S*:? .*No space left on device",
        label="/dev/shm too small in the container for NCCL's shared-memory transport",
        action="Mount an `emptyDir` with `medium: Memory` at /dev/shm in the pod spec (a few GiB, `sizeLimit`), or set "
        "`NCCL_SHM_DISABLE=1` at some speed; check for `/dev/shm/nccl-*` segments a crashed run left behind.",
        traits=frozenset({Trait.AT_START}),
    ),
    Signature(
        id="node.disk-full-node-s",
        category="node",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"\[Errno 28\] No space left on device|No space left on device \(28\)|: No space left on device$"
        r"|\[Errno 122\] Disk quota exceeded",
        label="a disk is full (the node's, a volume's or the container's: model cache, compile cache, logs)",
        action="Free or grow the disk the path is on (`df -h` on {host}, the PVC's usage); move caches "
        "(HF_HOME, the torch.compile cache) to a volume sized for them and alert on the node's and volume's free space.",
    ),
    Signature(
        id="network.nccl-system-remote-error",
        category="network",
        kind="fault",
        layer=Layer.NETWORK,
        pattern=r"ncclSystemError|ncclRemoteError|NCCL [Ee]rror.*(?:unhandled system error|remote process exited or there was a network error)",
        label="NCCL system / remote error",
        traits=frozenset({Trait.AS_THE_APP_SAW_IT}),
    ),
    Signature(
        id="network.nccl-proxy-bootstrap-network",
        category="network",
        kind="fault",
        layer=Layer.NETWORK,
        pattern=r"\[Proxy Service \d+\] Failed to execute operation|Socket recv failed while polling for opId"
        r"|Bootstrap : no socket interface found|NET/Socket : no usable interface",
        label="NCCL proxy or bootstrap network failure",
    ),
    # NVSHMEM, DeepEP's transport for expert parallelism, failing to come up (its init.cu and
    # transport modules' words): no usable IB device or IBGDA in the pod, or its bootstrap
    # between the ranks broken. The engine cannot start its expert-parallel layers.
    Signature(
        id="network.nvshmem-deepep-expert-parallel",
        category="network",
        kind="fault",
        layer=Layer.NETWORK,
        pattern=r"(?i:nvshmem initialization failed|nvshmem setup connections failed|building transport map failed"
        r"|NVSHMEM API called before NVSHMEM initialization|aborting due to error in nvshmemi_init_thread)"
        r"|cannot allocate mlx5dv_devx_uar",
        label="NVSHMEM (DeepEP's expert-parallel transport) could not initialise (IB / IBGDA or its bootstrap; engine start)",
        action="Check NVSHMEM's transport in the pod on {host}: `nvshmem-info -a`, the IB devices the pod sees "
        "(`ibv_devinfo`), IBGDA's driver settings (`NVreg_EnableStreamMemOPs=1`, peer mapping) and the container's "
        "RDMA rights (`IPC_LOCK`, the RDMA device plugin; IBGDA's DEVX needs more than a plain pod), and that every "
        "rank reaches the bootstrap address; run DeepEP's `test_internode.py` on the nodes before serving.",
        traits=frozenset({Trait.AT_START}),
    ),
    Signature(
        id="network.torch-distributed-rendezvous-tcpstore",
        category="network",
        kind="fault",
        layer=Layer.NETWORK,
        pattern=r"DistNetworkError|The client socket has (?:failed to connect|timed out after)|RendezvousTimeoutError"
        r"|RendezvousConnectionError|TCPStore.*(?:timed out|Connection refused|Connection reset)"
        # the store's server end: the other ranks never connected (not started, or cannot reach it)
        r"|Timed out after \d+ seconds waiting for clients",
        label="torch.distributed rendezvous / TCPStore connection failed",
    ),
    Signature(
        id="network.ray-node-cannot-reach",
        category="network",
        kind="fault",
        layer=Layer.NETWORK,
        pattern=r"Failed to connect to GCS (?:at address \S+ )?within \d+ seconds",
        label="a Ray node cannot reach the head's GCS (the head down, or the network to it)",
    ),
    Signature(
        id="other.nccl-internal-error-misuse",
        category="other",
        kind="fault",
        layer=Layer.NETWORK,
        pattern=r"ncclInternalError|ncclInvalidUsage|ncclInvalidArgument|NCCL [Ee]rror.*(?:internal error - please report|invalid usage|invalid argument)",
        label="NCCL internal error or misuse",
    ),
    # --- node
    # The kernel's global OOM killer (`Out of memory:`, not a cgroup's `Memory cgroup out of
    # memory:`), as the kernel, the kubelet (`SystemOOM`) and node-problem-detector
    # (`OOMKilling`) report it: the node's RAM ran out, whoever it killed.
    Signature(
        id="node.host-memory-exhausted-kernel",
        category="node",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"\bOut of memory: Killed process|oom-kill:constraint=CONSTRAINT_NONE|\bglobal_oom\b|^SystemOOM\b"
        r"|System OOM encountered|^OOMKilling\b",
        label=HOST_OOM,
        action="Find what grew on {host}: the kernel log's OOM report lists each process's RSS (vLLM's CPU swap "
        "space or KV offload, LMCache's local CPU backend, a leak, another pod); give the serving pods memory "
        "requests equal to their limits so the node is not overcommitted, and alert on node memory available.",
        traits=frozenset({Trait.OOM_KILL}),
    ),
    Signature(
        id="node.node-failure",
        category="node",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"PLEG is not healthy|NodeNotReady|status is now: NodeNotReady|Rebooted|has been rebooted|NodeHasInsufficientMemory|NodeHas(?:Disk|Memory|PID)Pressure|NodeHasInsufficientPID|EvictionThresholdMet|Kernel panic|(?:Memory|Disk|PID)Pressure=True"
        r"|^\w+: \w+=(?:True|False|Unknown)(?: since .*)? \((?:kubectl (?:describe|get) node|kube-state-metrics node \S+)\)$"
        r"|because its node has died|node \S+ has been marked dead|has been marked dead because the detector has missed",
        label="node failure",
    ),
    # PCIe Advanced Error Reporting: an uncorrectable fatal error takes a GPU, NIC or switch
    # off the bus (the driver's Xid 79 or a NIC reset often follows).
    Signature(
        id="node.pcie-fatal-error-node",
        category="node",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"PCIe Bus Error: severity=Uncorrect(?:able|ed) \(Fatal\)|AER: (?:Multiple )?Uncorrected \(Fatal\) error",
        label="PCIe fatal error on the node (AER: a GPU, NIC or PCIe switch dropped off the bus)",
        action="Drain {host}; the AER lines name the device's bus id (`lspci -s <id>`, `nvidia-smi -q` for a GPU): "
        "reseat or replace it and check the riser and PCIe switch before returning the node.",
    ),
    # The host's own hardware: a machine check (CPU, cache, memory controller) or host memory's
    # uncorrectable ECC (EDAC's `UE`; its corrected `CE` counts are wear, no fault).
    Signature(
        id="node.host-hardware-error-node",
        category="node",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"mce: \[Hardware Error\]|Machine check events logged|Machine Check Exception"
        r"|EDAC \S+: \d+ UE |EDAC .*[Uu]ncorrect(?:ed|able)",
        label="host hardware error on the node (machine check or uncorrectable memory ECC)",
        action="Drain {host} and read its BMC / IPMI event log (`ipmitool sel list`) and `mcelog` or `rasdaemon`: "
        "replace the DIMM or CPU they name before returning the node.",
    ),
    Signature(
        id="node.node-kernel-filesystem-failure",
        category="node",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"KernelOops|BUG: unable to handle kernel|blocked for more than \d+ seconds|TaskHung"
        r"|soft lockup - CPU#\d+ stuck|rcu_\w+ self-detected stall|rcu: INFO: rcu_\w+ detected stalls"
        r"|ReadonlyFilesystem|FilesystemIsReadOnly|Remounting filesystem read-only|EXT4-fs error"
        # the block layer's words for a failing disk (its 5.x and 6.x spellings)
        r"|\bI/O error, dev \w+|Buffer I/O error on dev|XFS \(\S+\): .*(?:I/O error|[Cc]orruption)",
        label="node kernel or filesystem failure (oops, hung task, read-only filesystem)",
        action="Drain {host} and read its kernel log (`journalctl -k`, node-problem-detector events): a hung task in D state often points at storage or the GPU driver, a read-only root at the disk; return it only after a reboot and a clean check.",
    ),
    # The NFS client's own words (fs/nfs): every read of the volume (a model's weights on a shared
    # volume, a cache) blocks until the server answers; `nfs: server X OK` says when it did.
    Signature(
        id="node.nfs-server-volume-stopped",
        category="node",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"\bnfs: server \S+ not responding",
        label="the NFS server of a volume stopped responding (reads of the model volume hang)",
        action="Check the NFS server and the network to it (its load, `nfsstat`, `mountstats` on {host}); keep the "
        "model's weights on a local disk or a pre-pulled cache so a storage stall cannot stop serving pods.",
    ),
    Signature(
        id="pod-lifecycle.container-oom-killed-memory",
        category="pod-lifecycle",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"\(OOMKilled\b|^pod \S+ OOMKilled:|Reason:\s+OOMKilled|Memory cgroup out of memory: Killed process",
        label=CONTAINER_OOM,
        traits=frozenset({Trait.OOM_KILL}),
    ),
    Signature(
        id="pod-lifecycle.health-probe-misconfigured-server",
        category="pod-lifecycle",
        kind="fault",
        layer=Layer.PODS,
        pattern=r"(?:Liveness|Readiness|Startup) probe failed: HTTP probe failed with statuscode: 40[45]\b",
        label="health probe misconfigured: the server does not serve the probe's path (HTTP 404)",
        action="Point the pod's liveness/readiness probes at a path the server serves (vLLM: `/health`; check the image's routes) and give slow model loads a startupProbe, so the kubelet stops restarting a healthy container.",
        traits=frozenset({Trait.AT_START}),
    ),
    Signature(
        id="pod-lifecycle.image-cannot-pulled-tag",
        category="pod-lifecycle",
        kind="fault",
        layer=Layer.PODS,
        pattern=r"Failed to pull image|ErrImagePull|ImagePullBackOff|Back-off pulling image",
        label="image cannot be pulled (tag, registry or credentials)",
        action="Fix the image reference (tag or digest) or the registry credentials (`imagePullSecrets`), and pin releases by digest so a rollout cannot point at a missing image.",
        traits=frozenset({Trait.AT_START}),
    ),
    Signature(
        id="pod-lifecycle.volume-cannot-mounted-model",
        category="pod-lifecycle",
        kind="fault",
        layer=Layer.PODS,
        pattern=r"MountVolume\.\w+ failed for volume \"[^\"]+\" : (?:rpc error|mount failed|kubernetes\.io/csi|MountDevice failed)"
        r"|Unable to attach or mount volumes|^FailedAttachVolume:|AttachVolume\.Attach failed",
        label="volume cannot be mounted (model cache or PVC)",
        action="Repair the volume the pods mount (PVC binding, CSI driver, NFS server) and alert on FailedMount events; keep a copy of the model weights the pods can fall back to.",
        traits=frozenset({Trait.AT_START}),
    ),
    # A missing ConfigMap or Secret behind a mount (`configmap "x" not found`) is left out on
    # purpose: it is a config slip on whatever pod mounts it, usually not the serving path.
    Signature(
        id="capacity.pods-cannot-scheduled-not",
        category="capacity",
        kind="fault",
        layer=Layer.PODS,
        pattern=r"\d+ Insufficient (?:[\w.-]+/)?[\w.-]+",
        label="pods cannot be scheduled: not enough GPUs or resources free in the cluster",
        action="Free or add GPUs for the pending pods (compare `kubectl describe node` allocatable with the pods' requests, including GPU-memory quotas of a sharing scheduler) and alert on pods Pending for more than a few minutes.",
    ),
    # The scheduler's FailedScheduling message counts the nodes by why they do not fit. Nodes
    # tainted for a condition they are in (not ready, unreachable, under pressure) are a node's
    # failure seen from the scheduler: a symptom (beside full nodes, the lack of spare GPUs above
    # is what kept the pod pending, and its own fault).
    Signature(
        id="node.pods-cannot-scheduled-nodes",
        category="node",
        kind="symptom",
        layer=Layer.NODE,
        pattern=r"node\(s\) had (?:untolerated )?taints? \{node\.kubernetes\.io/"
        r"(?:not-ready|unreachable|(?:memory|disk|pid)-pressure|network-unavailable)\b",
        label="pods cannot be scheduled: the nodes are not ready, unreachable or under pressure",
    ),
    # Every node refused by the pod's own constraints: a selector, affinity or toleration that
    # matches no node (a rollout that changed them, GPU nodes tainted and the pod not tolerating).
    Signature(
        id="capacity.pods-cannot-scheduled-no",
        category="capacity",
        kind="fault",
        layer=Layer.PODS,
        pattern=r"node\(s\) had untolerated taint|node\(s\) had taints? .*that the pod didn't tolerate"
        r"|node\(s\) didn't match (?:Pod's )?node (?:affinity|selector)",
        label="pods cannot be scheduled: no node matches their node selector, affinity or tolerations",
        action="Make the pods' nodeSelector, affinity and tolerations match the GPU nodes (compare the pod spec with "
        "`kubectl get nodes --show-labels` and `kubectl describe node | grep Taints`; the GPU operator taints GPU "
        "nodes `nvidia.com/gpu`), and alert on pods Pending for more than a few minutes.",
        traits=frozenset({Trait.AT_START}),
    ),
    Signature(
        id="capacity.pod-preempted-scheduler-higher",
        category="capacity",
        kind="fault",
        layer=Layer.PODS,
        pattern=r"^Preempted: Preempted by |Preempted by (?:a )?pod \S* ?on node",
        label="pod preempted by the scheduler for a higher-priority pod",
        action="Give the serving pods a PriorityClass above the batch work that shares their GPUs (or a PodDisruptionBudget with dedicated nodes), so the scheduler does not preempt them.",
    ),
    Signature(
        id="gpu-fault.node-gpus-pod-given",
        category="gpu-fault",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"UnexpectedAdmissionError: Allocate failed due to requested number of devices unavailable",
        label="the node's GPUs the pod was given are unavailable (device plugin: unhealthy or gone)",
    ),
    Signature(
        id="node.pod-sandbox-cannot-created",
        category="node",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"^FailedCreatePodSandBox: |failed to setup network for sandbox",
        label="pod sandbox cannot be created on the node (CNI or container runtime)",
        action="Repair the node's pod networking or container runtime (CNI plugin pods and logs, containerd) and cordon the node until a test pod starts on it.",
    ),
    # --- engine start: what stops a new pod (often a rollout) from ever serving
    Signature(
        id="gpu-memory.no-gpu-memory-left",
        category="gpu-memory",
        kind="fault",
        layer=Layer.MEMORY_KV,
        pattern=r"Available KV cache memory: -\d|Error in memory profiling"
        # V1's guard before profiling: a leftover engine (a zombie EngineCore) or another model on the GPU
        r"|on startup is less than desired GPU memory utilization",
        label="no GPU memory left for the KV cache at engine start (other processes on the GPU, or a utilization limit too low)",
        action="Give the engine its GPU alone (no other process on it, check `nvidia-smi`) or raise `gpu_memory_utilization`; gate rollouts on the engine starting.",
        traits=frozenset({Trait.AT_START}),
    ),
    Signature(
        id="engine.model-weights-config-cannot",
        category="engine",
        kind="fault",
        layer=Layer.ENGINE,
        pattern=r"We couldn't connect to 'https://huggingface\.co'|GatedRepoError|RepositoryNotFoundError|LocalEntryNotFoundError"
        r"|Cannot find any model weights|No such file or directory: '[^']*(?:config\.json|\.safetensors|tokenizer[^']*)'"
        # the Hub refusing a burst of replicas' downloads; a weights file cut short (a download
        # interrupted into a shared cache) that safetensors cannot read
        r"|429 Client Error: Too Many Requests for url: https://huggingface\.co|Error while deserializing header"
        # requests failing to reach the Hub at all (its DNS, a proxy, no egress)
        r"|HTTPSConnectionPool\(host='(?:[\w-]+\.)*(?:huggingface\.co|hf\.co)', port=443\): Max retries exceeded",
        label="model weights or config cannot be loaded at engine start (path, Hugging Face access or network)",
        action="Make the model loadable on every node before rollout: weights on a volume or pre-pulled cache (`HF_HUB_OFFLINE=1`), the access token as a Secret, and a startup probe that fails the rollout, not the serving replicas.",
        traits=frozenset({Trait.AT_START}),
    ),
    # The model and the engine that serves it do not fit: an architecture this vLLM or this
    # Transformers does not know (a new model on an old image), or serving arguments the model
    # cannot take (vLLM's config checks).
    Signature(
        id="engine.model-does-not-fit",
        category="engine",
        kind="fault",
        layer=Layer.ENGINE,
        pattern=r"Model architectures \[[^\]]*\] are not supported for now|but Transformers does not recognize this architecture"
        r"|must be divisible by tensor parallel size|User-specified max_model_len \(\d+\) is greater than the derived"
        r"|max_num_batched_tokens \(\d+\) is smaller than max_model_len",
        label="the model does not fit the engine's version or arguments (an architecture this vLLM/Transformers does not "
        "know, or a tensor-parallel size or max_model_len the model cannot take; engine start)",
        action="Serve the model with a vLLM (and Transformers) version that supports its architecture, or fix the "
        "argument the error names (a tensor-parallel size that divides the attention heads, a max_model_len within "
        "the model's); start each new model or argument set on a canary before it replaces the serving version.",
        traits=frozenset({Trait.AT_START}),
    ),
    Signature(
        id="engine.prefill-decode-instances-run",
        category="engine",
        kind="fault",
        layer=Layer.MEMORY_KV,
        pattern=r"NIXL compatibility hash mismatch|Remote NIXL agent engine ID mismatch|Failed to decode NixlHandshakePayload",
        label=PD_MISMATCH,
        action="Deploy prefill and decode from one spec: the same vLLM version, model, dtype, KV-cache dtype and "
        "attention backend (what NIXL's compatibility hash covers); roll the newer side back until both match.",
        traits=frozenset({Trait.KV_TRANSFER}),
    ),
    # Caches the engine writes at start (Hugging Face's, torch.compile's, Triton's, vLLM's own)
    # default under $HOME: a read-only root filesystem or an arbitrary UID (OpenShift) refuse them.
    Signature(
        id="engine.engine-cannot-write-cache",
        category="engine",
        kind="fault",
        layer=Layer.ENGINE,
        pattern=r"\[Errno (?:13|30)\] (?:Permission denied|Read-only file system): '[^']*"
        r"(?:\.cache|\.triton|\.config|huggingface|torch_extensions|vllm)",
        label="the engine cannot write its cache directories (read-only root filesystem or a non-root user; engine start)",
        action="Mount a writable `emptyDir` for the caches and point the engine at it (`HF_HOME`, `XDG_CACHE_HOME`, "
        "`TRITON_CACHE_DIR`, `VLLM_CACHE_ROOT`), or run as a user that owns $HOME; check `readOnlyRootFilesystem` "
        "and `runAsUser` in the pod's securityContext.",
        traits=frozenset({Trait.AT_START}),
    ),
    Signature(
        id="engine.torch-compile-failed-engine",
        category="engine",
        kind="fault",
        layer=Layer.ENGINE,
        pattern=r"BackendCompilerFailed",
        label="torch.compile failed at engine start",
        action="Pin the vLLM/torch versions that compiled this model in staging, or start with `--enforce-eager` / `compilation_config` off until the compile error is fixed.",
        traits=frozenset({Trait.AT_START}),
    ),
    # Name resolution, last of the faults: an image pull or a model download that failed on it
    # keeps its own signature above (what failed, at start); alone (the KV store's, a peer's
    # name), cluster DNS is the fault.
    Signature(
        id="network.dns-resolution-failed-cluster",
        category="network",
        kind="fault",
        layer=Layer.NETWORK,
        pattern=r"Temporary failure in name resolution|\[Errno -[25]\] (?:Name or service not known|Name has no usable address)"
        r"|: lookup \S+ on [\d.:\[\]a-f]+: (?:no such host|server misbehaving|read udp \S+->\S+: i/o timeout)",
        label="DNS resolution failed (cluster DNS / CoreDNS, or a name that does not exist)",
        action="Check cluster DNS (CoreDNS pods' logs and load, `kubectl -n kube-system get pods -l k8s-app=kube-dns`) "
        "and the name the pod looked up (a Service that exists in its namespace); alert on CoreDNS errors.",
    ),
    # --- changes
    Signature(
        id="config-change.rollout-config-change",
        category="config-change",
        kind="change",
        layer=Layer.PODS,
        pattern=r"^ScalingReplicaSet:|^Pulling: Pulling image|^SuccessfulRescale|rolled out|configmap .* (?:updated|changed)",
        label="rollout / config change",
    ),
    # --- symptoms
    Signature(
        id="collective-timeout.nccl-watchdog-timeout",
        category="collective-timeout",
        kind="symptom",
        layer=Layer.COLLECTIVES,
        pattern=r"Watchdog caught collective operation timeout|failure detected by watchdog|NCCL communicator was aborted|Terminating the process after attempting to dump debug info|flight[- ]recorder dump signal|Some NCCL operations have failed or timed out|To avoid data inconsistency|Heartbeat monitor timed out|watchdog got stuck|watchdog thread terminated|Timeout at NCCL work|detected by watchdog|DistBackendError|dump signal due to a collective timeout",
        label="NCCL watchdog timeout",
    ),
    Signature(
        id="collective-timeout.nccl-bus-bandwidth-gpu",
        category="collective-timeout",
        kind="symptom",
        layer=Layer.COLLECTIVES,
        pattern=r"^nccl_bus_bandwidth_gbs fell to ",
        label="NCCL bus bandwidth of a GPU collapsed (NCCL Inspector)",
    ),
    Signature(
        id="collective-timeout.deepep-expert-all-all",
        category="collective-timeout",
        kind="symptom",
        layer=Layer.COLLECTIVES,
        pattern=r"DeepEP timeout check failed|DeepEP error: (?:CPU recv timeout|timeout \()",
        label=DEEPEP_TIMEOUT,
    ),
    Signature(
        id="collective-timeout.shared-memory-broadcast-stall",
        category="collective-timeout",
        kind="symptom",
        layer=Layer.COLLECTIVES,
        pattern=r"No available (?:shared memory broadcast )?block found in \d+ second",
        label="shared-memory broadcast stall",
    ),
    Signature(
        id="collective-timeout.collectives-out-step-flight",
        category="collective-timeout",
        kind="symptom",
        layer=Layer.COLLECTIVES,
        pattern=r"^(?:Not all ranks joining collective\b|Collective sequence number: \d+ has errors|Collective \d+ at entry \d+ "
        r"errors|Input/output mismatch in the collective\b|flight recorder: rank \d+'s .*\bnot completed \()",
        label="collectives out of step (flight recorder)",
    ),
    Signature(
        id="collective-timeout.nccl-ras-process-dead",
        category="collective-timeout",
        kind="symptom",
        layer=Layer.COLLECTIVES,
        pattern=r"^(?:DEAD|INCOMPLETE|#\d+-\d+ \([0-9a-f]+\) (?:INCOMPLETE|ERROR|MISMATCH))\s*$",
        label="NCCL RAS: a process dead, silent or out of step",
    ),
    Signature(
        id="engine.engine-died",
        category="engine",
        kind="symptom",
        layer=Layer.ENGINE,
        pattern=r"EngineCore encountered a fatal error|EngineDeadError|AsyncLLM output_handler failed|Engine background task failed|AsyncEngineDeadError|Engine loop has died|Worker \S+ pid \d+ died|failed \(exitcode: -?\d+\) local_rank: \d+|ChildFailedError|WorkerProc hit an exception|Engine core initialization failed|EngineCore failed to start|Engine iteration timed out|RPC call to \w+ timed out|Parent process exited, terminating worker|Killing local vLLM worker processes|RayActorError|ActorDiedError|The actor died unexpectedly|A worker died or was killed while executing a task"
        r"|Engine core proc \S+ died unexpectedly|Worker proc \S+ died unexpectedly|WorkerProc failed to start"
        r"|EngineCore encountered an issue|RuntimeError: Executor failed"
        # TensorRT-LLM's executor, failing the requests in flight for what its step raised
        r"|Encountered an error in forwardAsync function"
        # SGLang's scheduler, its TP worker, DP controller and detokenizer, and its server's word for their death
        r"|^(?:Scheduler|TpModelWorkerClient|DataParallelController|DetokenizerManager|Detokenizer) hit an exception"
        r"|Received sigquit from a child process\. It usually means the child failed"
        # the interpreter's and absl's crash handlers: a crash in native code, said on stderr
        r"|^Fatal Python error: (?:Segmentation fault|Aborted|Bus error)|^Segmentation fault \(core dumped\)"
        r"|^\*\*\* SIG(?:SEGV|ABRT|BUS) received at time="
        r"|(?:^|\] )Caught signal \d+ \((?:Segmentation fault|Bus error|Aborted|Illegal instruction)",
        label="engine died",
    ),
    Signature(
        id="kv-cache.kv-transfer-not-completed",
        category="kv-cache",
        kind="symptom",
        layer=Layer.MEMORY_KV,
        pattern=r"Releasing expired KV blocks for request|Recovered from KV load failure"
        r"|Failing \d+ request\(s\) due to KV load failure"
        r"|^vllm:nixl_num_(?:kv_expired_reqs|failed_notifications)_total rose"
        r"|^KV Transfer metrics: .*\bNum (?:KV expired reqs|failed notifications|failed recvs)=[1-9]",
        label=KV_TRANSFER_UNFINISHED,
        traits=frozenset({Trait.KV_TRANSFER}),
    ),
    Signature(
        id="capacity.requests-preempted-lack-kv",
        category="capacity",
        kind="symptom",
        layer=Layer.MEMORY_KV,
        pattern=r"is preempted by PreemptionMode\.\w+ mode because there is not enough KV cache space",
        label="requests preempted for lack of KV cache space",
    ),
    Signature(
        id="pod-lifecycle.gateway-found-no-healthy",
        category="pod-lifecycle",
        kind="symptom",
        layer=Layer.PODS,
        pattern=r'^"[A-Z]+ \S+ HTTP/[\d.]+" 503 (?:[A-Z]+,)*UH\b|\bno_healthy_upstream\b'
        r"|^no live upstreams while connecting to upstream",
        label="the gateway found no healthy backend pod (Envoy UH, nginx no live upstreams: every pod gone or not ready)",
    ),
    # nginx's error log on what the backend did (ngx_http_upstream.c's and the kernel's words).
    Signature(
        id="pod-lifecycle.gateway-connection-backend-pod",
        category="pod-lifecycle",
        kind="symptom",
        layer=Layer.PODS,
        pattern=r"^connect\(\) failed \(111: Connection refused\) while connecting to upstream"
        r"|^(?:upstream prematurely closed connection|recv\(\) failed \(104: Connection reset by peer\)) while reading "
        r"response header from upstream",
        label="the gateway's connection to a backend pod was refused or dropped (server not listening, restarting or crashed)",
    ),
    Signature(
        id="engine.gateway-timed-out-waiting",
        category="engine",
        kind="symptom",
        layer=Layer.ENGINE,
        pattern=r"^upstream timed out \(110: (?:Connection|Operation) timed out\) while (?:reading response header|connecting)",
        label="the gateway timed out waiting for a backend pod (a hung or saturated engine, or a proxy timeout shorter "
        "than long generations)",
    ),
    # The kubelet's eviction messages (pkg/kubelet/eviction): the node ran short, or the pod
    # outgrew its own ephemeral-storage limit.
    Signature(
        id="node.node-ran-out-memory",
        category="node",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"The node was low on resource: \[?(?:memory|ephemeral-storage|nodefs|imagefs|pids)"
        r"|The node had condition: \[(?:DiskPressure|MemoryPressure|PIDPressure)",
        label="the node ran out of memory or disk and the kubelet evicted pods",
    ),
    # The kubelet's graceful node shutdown (nodeshutdown manager): a spot or preemptible VM
    # reclaimed, maintenance, an autoscaler's scale-down. No failure of the node's own, but it
    # takes every pod on it down.
    Signature(
        id="node.node-shut-down-under",
        category="node",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"Pod was terminated in response to imminent node shutdown|Pod was rejected as the node is shutting down"
        r"|Shutdown manager detected shutdown event",
        label="the node shut down under its pods (a spot or preemptible VM reclaimed, maintenance or a scale-down)",
        action="Find why {host} shut down (the cloud's instance events: a spot or preemptible reclaim, maintenance, "
        "the cluster autoscaler); keep serving replicas on on-demand nodes or spread across nodes with a "
        "PodDisruptionBudget, so one node's shutdown cannot take the service down.",
    ),
    Signature(
        id="pod-lifecycle.pod-evicted-exceeding-ephemeral",
        category="pod-lifecycle",
        kind="fault",
        layer=Layer.PODS,
        pattern=r"Pod ephemeral local storage usage exceeds the total limit|Container \S+ exceeded its local ephemeral storage limit",
        label="pod evicted for exceeding its ephemeral-storage limit (model or compile cache on the container's disk)",
    ),
    Signature(
        id="pod-lifecycle.pod-probes-restarts",
        category="pod-lifecycle",
        kind="symptom",
        layer=Layer.PODS,
        pattern=r"^BackOff:|CrashLoopBackOff|^Killing: Container \S+ failed|^Unhealthy:|Probe failed|Liveness probe failed|Readiness probe failed|Startup probe failed|ContainerDied|^FailedScheduling:|TaintManagerEviction|Marking for deletion|^Evicted:|Node is not ready",
        label="pod probes / restarts",
    ),
)
"""Checked in order; the first match wins. Fault patterns come first so that an engine
traceback ending in `torch.OutOfMemoryError` counts as the OOM, not as 'engine died'."""

BY_ID: dict[str, Signature] = {sig.id: sig for sig in SIGNATURES}
assert len(BY_ID) == len(SIGNATURES), "two catalog entries share an id"


def _traits_by_label() -> dict[str, frozenset[Trait]]:
    out: dict[str, frozenset[Trait]] = {}
    for sig in SIGNATURES:
        out[sig.label] = out.get(sig.label, frozenset()) | sig.traits
    return out


_TRAITS = _traits_by_label()


def traits_of(label: str) -> frozenset[Trait]:
    """The traits of the catalog entries a hypothesis or a report row is labelled by (none for a
    label the catalog does not give: a metric-derived cause, HTTP errors). Within one run a label
    is the catalog's own text, so rewording an entry changes nothing this answers."""
    return _TRAITS.get(label, frozenset())


_COMPILED = [(sig, re.compile(sig.pattern)) for sig in SIGNATURES]
EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Fault)(?::.*)?$")


def classify_text(
    first_line: str, exception: str | None, maybe: Iterable[int] | None = None
) -> tuple[Signature | None, Signature | None]:
    """(signature of the message line, fault signature of its traceback's exception line).

    `maybe`: the indices of the signatures that can match the message line at all (a superset,
    in catalog order), when the caller has screened it; the first of them whose regex matches
    is its signature, as it would be scanning the whole catalog.
    """
    head = None
    for i in range(len(_COMPILED)) if maybe is None else maybe:
        sig, rx = _COMPILED[i]
        if rx.search(first_line):
            head = sig
            break
    tb = None
    if exception:
        for sig, rx in _COMPILED:
            if sig.kind == "fault" and rx.search(exception):
                tb = sig
                break
    return head, tb


_SCREENS = [sig.pattern.replace("(?!out of memory)", "") for sig in SIGNATURES]
"""Each signature's pattern for polars' regex engine, which has no lookahead: without it, a
superset of what Python's `re` matches with it (the patterns use nothing else the two read
differently), so a screen never hides a signature the catalog order would pick."""
_PROBE = "|".join(f"(?:{p})" for p in _SCREENS).replace("(?i)", "")
"""Any signature at all, in one pattern: the cheap first filter of `classify`."""


def _screen(first_lines: pl.Series) -> np.ndarray:
    """For each message line, which signatures can match it (a row of booleans in catalog order)."""
    frame = pl.DataFrame({"m": first_lines})
    hits = frame.select(pl.col("m").str.contains(p).alias(str(i)) for i, p in enumerate(_SCREENS))
    return hits.to_numpy()


def exception_line(message: str) -> str | None:
    """The last `SomeError: text` line of a multi-line message (a traceback's verdict).

    A bare `AssertionError` says nothing; the `assert` statement the traceback shows above it
    says what failed (vLLM's block pool guards its invariants with plain asserts), so it is
    given as the text: `AssertionError: assert curr_block is not None`.
    """
    if "\n" not in message:
        return None
    lines = message.split("\n")
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i].strip()
        if EXCEPTION_LINE.match(line):
            if line.endswith("AssertionError"):
                stmt = next((x.strip() for x in reversed(lines[:i]) if x.strip().startswith("assert ")), None)
                if stmt:
                    return f"{line}: {stmt}"
            return line
    return None


def classify(events: pl.DataFrame) -> pl.DataFrame:
    """One row per event that matches a signature: category, kind, layer, label, text.

    Columns of `events` used: message, http_status, level, source. Events without a
    signature are not returned (most lines are not evidence). An engine crash whose
    traceback ends in a fault yields two rows: the fault (text = exception line) and
    the symptom.
    """
    # Cheap pre-filter: only lines that can match anything are examined in Python.
    cand = events.with_row_index("_ev").filter(
        pl.col(s.MESSAGE).str.contains(_PROBE) | pl.col(s.MESSAGE).str.to_lowercase().str.contains("corrupt|stale")
    )
    rows = []
    # A flood repeats its message verbatim (a warning every few seconds, a probe failing): each
    # distinct message is read once. The ~40 regexes of the catalog cost ~1 µs each a message in
    # Python's `re`; polars screens every distinct line against all of them in one pass, so a
    # line meets in Python only the few that can match it.
    distinct = cand.select(pl.col(s.MESSAGE).unique(maintain_order=True))[s.MESSAGE]
    firsts = distinct.str.split_exact("\n", 1).struct.field("field_0")
    screen = _screen(firsts)
    seen: dict[str, tuple[str, str | None, Signature | None, Signature | None]] = {}
    for k, (msg, first) in enumerate(zip(distinct, firsts, strict=True)):
        exc = exception_line(msg)
        seen[msg] = (first, exc, *classify_text(first, exc, np.flatnonzero(screen[k]).tolist()))
    for idx, msg in cand.select("_ev", s.MESSAGE).iter_rows():
        first, exc, head, tb = seen[msg]
        if tb is not None and (head is None or head.kind != "fault"):
            rows.append((idx, tb.category, tb.kind, tb.layer, tb.label, exc))
        if head is not None:
            rows.append((idx, head.category, head.kind, head.layer, head.label, first))
    sig = pl.DataFrame(
        rows,
        schema={
            "_ev": pl.UInt32,
            "category": pl.String,
            "kind": pl.String,
            "layer": pl.Int32,
            "label": pl.String,
            "text": pl.String,
        },
        orient="row",
    )
    # HTTP 5xx access lines: user-visible impact.
    errs = (
        events.with_row_index("_ev")
        .filter(pl.col(s.HTTP_STATUS) >= 500)
        .select(
            "_ev",
            pl.lit("request-errors").alias("category"),
            pl.lit("impact").alias("kind"),
            pl.lit(6, pl.Int32).alias("layer"),
            pl.lit("HTTP 5xx responses").alias("label"),
            pl.col(s.MESSAGE).str.replace(r"^\S* - ", "").alias("text"),
        )
    )
    return pl.concat([sig, errs]).sort("_ev")
