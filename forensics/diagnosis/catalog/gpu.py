"""GPU memory and GPU faults: CUDA OOM, cuBLAS allocations, every Xid by its meaning, the driver,
NVLink and NVSwitch, and an image's CUDA or kernels that do not fit the node's GPU."""

from __future__ import annotations

from forensics.diagnosis.catalog.entry import Layer, Signature, Trait
from forensics.diagnosis.catalog.labels import GPU_FAULT, KERNEL_EXCEPTION, SLOWDOWN
from forensics.diagnosis.catalog.xid import RECOVERY, XidCategory, codes, xid

_GROUPED = frozenset({79, 48, 63, 64, 92, 94, 95, 171, 172, 74, *range(144, 151), 119, 120, 140, 13, 31, 43, 45, 154})
"""The Xids an entry below names by number; `xid.codes` gives the rest of the catalog by what NVIDIA says to do."""

ENTRIES: tuple[Signature, ...] = (
    # --- GPU memory and GPU faults
    Signature(
        id="gpu-memory.gpu-out-memory",
        source="PyTorch c10/cuda/CUDACachingAllocator.cpp (torch.OutOfMemoryError); NCCL src/include/alloc.h ('Cuda failure out of memory')",
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
        source="cuBLAS status codes (NVIDIA cuBLAS documentation, cublasStatus_t); PyTorch aten/src/ATen/cuda/CublasHandlePool.cpp",
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
        source="vLLM vllm/v1/core/kv_cache_utils.py (check_enough_kv_cache_memory)",
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
        source="NVIDIA Xid catalog (docs.nvidia.com/deploy/xid-errors): Xid 79; the driver's NVRM kernel message",
        category="gpu-fault",
        kind="fault",
        layer=Layer.NODE,
        pattern=xid(79) + r"|fallen off the bus",
        label="GPU fell off the bus (Xid 79)",
        action="Drain {host}: the GPU is gone until the node reboots. Check its PCIe link, power and temperature "
        "(BMC logs), reseat it, and RMA it if it falls off again.",
    ),
    Signature(
        id="gpu-fault.gpu-memory-ecc-error",
        source="NVIDIA Xid catalog: Xid 48 (DBE), 63/64 (row remapping), 92 (SBE rate), 94/95 (contained/uncontained ECC), "
        "171/172 (the DRAM or SRAM detail of an Xid 48); NVIDIA DCGM dcgmlib/dcgm_errors.h (DCGM_FR_* health and diag messages)",
        category="gpu-fault",
        kind="fault",
        layer=Layer.NODE,
        pattern=xid(48, 63, 64, 92, 94, 95, 171, 172) + r"|uncorrectable ECC|double bit error"
        # DCGM's health watches and diagnostics (dcgm_errors.h: DCGM_FR_VOLATILE_DBE_DETECTED, ROW_REMAP_FAILURE,
        # UNCORRECTABLE_ROW_REMAP, PENDING_ROW_REMAP, DBE_PENDING_PAGE_RETIREMENTS, FAULTY_MEMORY, CUDA_DBE)
        r"|volatile double-bit ECC error|had uncorrectable memory errors and (?:row remapping failed|\d+ rows were remapped)"
        r"|had memory errors and row remappings are pending|Pending page retirements together with a DBE"
        r"|faulty memory elements on GPU|a double-bit ECC error has occured",
        label="GPU memory ECC error (Xid 48/63/64/92/94/95)",
        action="Drain {host} and reset the GPU (`nvidia-smi -r`) so pending row remaps apply; read "
        "`nvidia-smi -q -d ROW_REMAPPER,ECC`, and RMA the GPU when a remap failed or the errors recur.",
    ),
    Signature(
        id="gpu-fault.nvlink-error-xid-74",
        source="NVIDIA Xid catalog: Xid 74 (NVLink error), 144-150 (NVLink 5: SAW, RLW, TLW, TREX, NVLPW, NETIR, MSE); "
        "NVIDIA DCGM dcgmlib/dcgm_errors.h (DCGM_FR_NVLINK_*)",
        category="gpu-fault",
        kind="fault",
        layer=Layer.NODE,
        pattern=xid(74, *range(144, 151)) + r"|uncorrectable NVLink error"
        # DCGM (dcgm_errors.h: DCGM_FR_NVLINK_DOWN, GPU_EXPECTED_NVLINKS_UP, NVLINK_ERROR_THRESHOLD / _CRITICAL,
        # NVLINK_CRC_ERROR_THRESHOLD)
        r"|'s NvLink link \d+ is currently down|Only \d+ NvLinks are up out of the expected"
        r"|NvLink errors on GPU \d+'s NVLink|NvLink errors found occuring per second",
        label="NVLink error (Xid 74, or 144-150 on NVLink 5)",
        action="Drain {host}; read the link's error counters (`nvidia-smi nvlink -e`) and the fabric manager's log, "
        "reset the GPUs on that link, and RMA the GPU or baseboard if the link stays down.",
    ),
    Signature(
        id="gpu-fault.gpu-firmware-gsp-timeout",
        source="NVIDIA Xid catalog: Xid 119 (GSP RPC timeout), 120 (GSP error), 140 (unrecovered ECC)",
        category="gpu-fault",
        kind="fault",
        layer=Layer.NODE,
        pattern=xid(119, 120, 140),
        label="GPU firmware (GSP) timeout or error (Xid 119/120/140)",
        action="Reset the GPU or reboot {host}; if it recurs, move to a driver release that fixes it (or run with "
        "the GSP firmware disabled where NVIDIA's notes allow).",
    ),
    Signature(
        id="gpu-fault.gpu-exception-kernel-xid",
        source="NVIDIA Xid catalog: Xid 13 (graphics engine exception), 31 (GPU memory page fault), 43 (GPU stopped processing)",
        category="gpu-fault",
        kind="fault",
        layer=Layer.NODE,
        pattern=xid(13, 31, 43),
        label=KERNEL_EXCEPTION,
        action="Find whose kernel faulted: if the fault follows the workload to another GPU it is a software bug "
        "(the kernel or its inputs, such as block tables); if it stays with {host}'s GPU, run DCGM diagnostics "
        "(level 3) there.",
        traits=frozenset({Trait.SOFTWARE_PRONE}),
    ),
    Signature(
        id="gpu-fault.gpu-clocks-held-down",
        source="nvidia-smi -q -d PERFORMANCE ('Clocks Event Reasons'); NVML nvmlClocksEventReason* via DCGM_FI_DEV_CLOCKS_EVENT_REASONS; "
        "NVIDIA DCGM dcgmlib/dcgm_errors.h (DCGM_FR_CLOCK_THROTTLE_*, THERMAL_VIOLATIONS); "
        "or a GPU's DCGM_FI_DEV_SM_CLOCK fallen behind its peers' (parsers/documents/prometheus.py)",
        category="gpu-fault",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"clocks held down by the hardware|its clocks are held down \(no clock-event reasons"
        r"|\b(?:HW|SW) (?:Thermal |Power Brake )?Slowdown\s*:\s*Active"
        # DCGM (dcgm_errors.h: DCGM_FR_CLOCK_THROTTLE_THERMAL / _POWER, THERMAL_VIOLATIONS, THROTTLING_VIOLATION,
        # TEMP_VIOLATION)
        r"|Detected clock throttling due to (?:thermal|power) violation|There were thermal violations totaling"
        r"|Clocks are being throttled for GPU \d+|exceeded user-specified maximum allowed temperature",
        label=SLOWDOWN,
        action="Check {host}'s cooling and power (BMC logs; `nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER`): a "
        "slowed GPU slows every collective it is in, so drain it until it runs at full clocks again.",
    ),
    Signature(
        id="gpu-fault.gpu-error-state-nvidia",
        source="nvidia-smi's table ('ERR!' where a query failed)",
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
        source="PyTorch torch/cuda/__init__.py ('The NVIDIA driver on your system is too old'); CUDA runtime cudaErrorInsufficientDriver",
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
        source="CUDA runtime cudaErrorNoKernelImageForDevice; PyTorch torch/cuda/__init__.py (capability warning)",
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
    # DCGM's health watch and diagnostic on the GPU's PCIe link and InfoROM: the board, its slot or riser.
    Signature(
        id="gpu-fault.gpu-pcie-link-errors-dcgm",
        source="NVIDIA DCGM dcgmlib/dcgm_errors.h (DCGM_FR_PCI_REPLAY_RATE, PCIE_H_REPLAY_VIOLATION, PCIE_GENERATION, "
        "PCIE_WIDTH, CORRUPT_INFOROM)",
        category="gpu-fault",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"PCIe replays per minute for GPU \d+|host-side PCIe replay violation"
        r"|is running at PCI link (?:generation|width) \w+, which is below the minimum|A corrupt InfoROM has been detected",
        label="GPU's PCIe link or InfoROM failing (DCGM health)",
        action="Drain {host}; reseat the GPU and check its riser and PCIe switch (`nvidia-smi -q -d PCIE`, `lspci -vv` "
        "for the link's speed and width), run DCGM diagnostics (level 3), and RMA the board if the replays go on.",
    ),
    # Xid 154 summarises the recovery the other Xids of that moment need ("from 0x0 (None) to 0x2
    # (Node Reboot Required)"): a fault, named by the recovery; the Xid it summarises, logged just
    # before, is the more specific evidence where the logs have it.
    Signature(
        id="gpu-fault.gpu-needs-recovery-xid-154",
        source="NVIDIA Xid catalog: Xid 154 (GPU_RECOVERY_ACTION_CHANGED, resolution bucket XID_154)",
        category="gpu-fault",
        kind="fault",
        layer=Layer.NODE,
        pattern=RECOVERY + r"|GPU recovery action changed from",
        label="GPU needs recovery: the driver asks for a reset or a reboot (Xid 154)",
        action="Do what the driver asks on {host} (the why-line quotes it: drain and reset the GPU, or reboot the "
        "node), and read the Xid it logged just before in `dmesg -T` to know what failed.",
    ),
    # Every other Xid, by the resolution bucket NVIDIA's catalog gives it (`xid.XIDS`).
    Signature(
        id="gpu-fault.gpu-reset-service-xid",
        source="NVIDIA Xid catalog: the Xids whose immediate action is RESET_GPU, RESTART_BM/VM, CHECK_MECHANICALS, "
        "UPDATE_SWFW, CHECK_UVM or CONTACT_SUPPORT (46, 62, 109, 110, 136, 143, 155, 156, 158, ...)",
        category="gpu-fault",
        kind="fault",
        layer=Layer.NODE,
        pattern=xid(*codes(XidCategory.RESET, XidCategory.REBOOT, XidCategory.SERVICE, without=_GROUPED)),
        label="GPU fault that needs a GPU reset or service (NVIDIA's Xid catalog)",
        action="Drain {host} and do what NVIDIA's Xid catalog says for this Xid (the why-line quotes it: reset the "
        "GPU, restart the node, or service the board); if it recurs after the reset, run DCGM diagnostics (level 3) "
        "and RMA the GPU.",
    ),
    Signature(
        id="gpu-fault.gpu-engine-exception-xid",
        source="NVIDIA Xid catalog: the Xids whose immediate action is RESTART_APP (copy, video and JPEG engine "
        "exceptions, push buffer errors: 8, 11, 25, 32, 39-41, 68-72, 80, ...)",
        category="gpu-fault",
        kind="fault",
        layer=Layer.NODE,
        pattern=xid(*codes(XidCategory.APPLICATION, without=_GROUPED)),
        label="GPU engine exception the application met (NVIDIA's Xid catalog: restart the application)",
        action="Restart the engine on {host}; if the same Xid follows the workload to another GPU it is a software "
        "bug (the driver or the kernels), if it stays with {host}'s GPU, run DCGM diagnostics (level 3) there.",
        traits=frozenset({Trait.SOFTWARE_PRONE}),
    ),
    Signature(
        id="gpu-fault.gpu-notice-no-action-xid",
        source="NVIDIA Xid catalog: the Xids whose immediate action is IGNORE (37, 38, 44, 66, 67, 93, 121, 137, "
        "141, 157, 160, 161, ...)",
        category="gpu-fault",
        kind="symptom",
        layer=Layer.NODE,
        pattern=xid(*codes(XidCategory.NOTICE, without=_GROUPED)),
        label="GPU notice that needs no action (NVIDIA's Xid catalog)",
        traits=frozenset({Trait.NO_ACTION}),
    ),
    Signature(
        id="gpu-fault.gpu-work-cleaned-up",
        source="NVIDIA Xid catalog: Xid 45 (preemptive cleanup after an earlier error)",
        category="gpu-fault",
        kind="symptom",
        layer=Layer.NODE,
        pattern=xid(45),
        label="GPU work cleaned up after its process died or an earlier error (Xid 45)",
    ),
    Signature(
        id="gpu-fault.gpu-cuda-fault",
        source="CUDA runtime errors (cudaErrorIllegalAddress, device-side assert); NVIDIA k8s-device-plugin ('device will go unhealthy'); any other Xid",
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
        source="NVIDIA Fabric Manager logs and NVSwitch SXid messages (NVIDIA Fabric Manager user guide); "
        "NVIDIA DCGM dcgmlib/dcgm_errors.h (DCGM_FR_NVSWITCH_FATAL_ERROR, SXID_ERROR, NVSWITCH_EXPECTED_NVLINKS_UP)",
        category="gpu-fault",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"NVSwitch fatal|(?i:fabric ?manager).*(?:[^-]\bfatal\b|\bfailed\b)|NVLink: fatal"
        r"|\bSXid \([^)]*\): \d+, Fatal"
        r"|Detected fatal errors on NvSwitch \d+|Detected fatal NvSwitch SXID|NvSwitch \d+ - Only \d+ NvLinks are up",
        label="NVSwitch / NVLink fabric failure",
    ),
    Signature(
        id="gpu-fault.cuda-call-failed-inside",
        source="NCCL src/include/checks.h (CUDACHECK: 'Cuda failure'), ncclUnhandledCudaError in src/nccl.h.in",
        category="gpu-fault",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"Cuda failure \d* ?'(?!out of memory)|ncclUnhandledCudaError|NCCL [Ee]rror.*unhandled cuda error",
        label="CUDA call failed inside NCCL",
        traits=frozenset({Trait.AS_THE_APP_SAW_IT}),
    ),
    Signature(
        id="gpu-fault.gpu-driver-nvml-failure",
        source="NVML (nvmlInit errors, NVML_ERROR_*); nvidia-smi 'Driver/library version mismatch'; PyTorch 'Found no NVIDIA driver'",
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
)
