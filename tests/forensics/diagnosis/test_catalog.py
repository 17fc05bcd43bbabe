"""What the catalog calls a line: real fault strings by layer and kind, XIDs, and the catalog's own invariants (`forensics.diagnosis.catalog`, `signatures`)."""

from __future__ import annotations

import re

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.diagnosis import advice, signatures
from forensics.diagnosis.signatures import SIGNATURES
from tests.conftest import GOLDEN


@pytest.mark.parametrize(
    ("line", "exception", "category", "kind"),
    [
        ("transport/nvls.cc:212 NCCL WARN Cuda failure 101 'invalid device ordinal'", None, "gpu-fault", "fault"),
        ("include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'", None, "gpu-memory", "fault"),
        ("include/alloc.h:166 NCCL WARN Cuda failure 2 'out of memory'", None, "gpu-memory", "fault"),
        ("Traceback (most recent call last):", "ncclInternalError: Internal check failed.", "other", "fault"),
        (
            "Traceback (most recent call last):",
            "ncclSystemError: System call (e.g. socket, malloc) failed.",
            "network",
            "fault",
        ),
        ("Last State: Terminated (OOMKilled, exit code 137 SIGKILL) container vllm", None, "pod-lifecycle", "fault"),
        (
            "pod vllm-0 CrashLoopBackOff: ready 0/1, 5 restarts (kubectl get pods, age 13m)",
            None,
            "pod-lifecycle",
            "symptom",
        ),
        ("NodeNotReady: node gpu-node-3 is NotReady (kubectl get nodes)", None, "node", "fault"),
        (
            "[PG ID 0 PG GUID 0(default_pg) Rank 0] Received a dump signal due to a collective timeout from rank 5 and we will try our best to dump the debug info.",
            None,
            "collective-timeout",
            "symptom",
        ),
        ("failed (exitcode: -6) local_rank: 1 (pid: 7731) of binary: /usr/bin/python3", None, "engine", "symptom"),
        ("FailedScheduling: 0/2 nodes are available: 2 Insufficient amd.com/gpu.", None, "capacity", "fault"),
        ("Unhealthy: Liveness probe failed: HTTP probe failed with statuscode: 404", None, "pod-lifecycle", "fault"),
        ("Engine iteration timed out. This should never happen!", None, "engine", "symptom"),
        ("Failed to initialize NVML: Driver/library version mismatch", None, "gpu-fault", "fault"),
        (
            "torch.distributed.DistNetworkError: The client socket has timed out after 1800s while trying to connect to (10.4.0.7, 29500).",
            None,
            "network",
            "fault",
        ),
        (
            "ray.exceptions.RayActorError: The actor died because its node has died. Node Id: 5f1c0e",
            None,
            "node",
            "fault",
        ),
        (
            "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
            None,
            "engine",
            "symptom",
        ),
        (
            "Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 12.0 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 8.0%, Prefix cache hit rate: 0.0%, Corrupted: 3 reqs",
            None,
            "kv-cache",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "RuntimeError: NCCL error: remote process exited or there was a network error",
            "network",
            "fault",
        ),
        ("Traceback (most recent call last):", "RuntimeError: NCCL error: unhandled cuda error", "gpu-fault", "fault"),
        (
            "proxy.cc:1502 NCCL WARN [Proxy Service 6] Failed to execute operation Connect from rank 14, retcode 6",
            None,
            "network",
            "fault",
        ),
        ("bootstrap.cc:88 NCCL WARN Bootstrap : no socket interface found", None, "network", "fault"),
        ("proxy.cc:1217 NCCL WARN Socket recv failed while polling for opId=0x7f3a2c001230", None, "network", "fault"),
        ("Not all ranks joining collective 5 at entry 4", None, "collective-timeout", "symptom"),
        ("Collective sequence number: 4182 has errors", None, "collective-timeout", "symptom"),
        ("#0-0 (9a3c5e1f00d2b417) MISMATCH", None, "collective-timeout", "symptom"),
        ("DEAD", None, "collective-timeout", "symptom"),
        (
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
            "NVIDIA driver is installed and running.",
            None,
            "gpu-fault",
            "fault",
        ),
        ("GPU 00000000:2A:00.0: GPU requires reset", None, "gpu-fault", "fault"),
        (
            "Traceback (most recent call last):",
            "AssertionError: Invalid block found in popleft() which doesn't have a valid next_free_block",
            "kv-cache",
            "fault",
        ),
        (
            "ValueError: To serve at least one request with the model's max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (9.31 GiB).",
            None,
            "gpu-memory",
            "fault",
        ),
        (
            "Sequence group 7 is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space.",
            None,
            "capacity",
            "symptom",
        ),
        (
            "kernel: Memory cgroup out of memory: Killed process 88121 (python3) total-vm:91234567kB",
            None,
            "pod-lifecycle",
            "fault",
        ),
        ("kernel: Out of memory: Killed process 88121 (python3) total-vm:91234567kB", None, "node", "fault"),
        ('Failed: Failed to pull image "registry.local/vllm:v0.99": not found', None, "pod-lifecycle", "fault"),
        (
            'FailedMount: MountVolume.SetUp failed for volume "weights" : rpc error: code = Internal desc = mount failed',
            None,
            "pod-lifecycle",
            "fault",
        ),
        ("Unhealthy: Liveness probe failed: HTTP probe failed with statuscode: 503", None, "pod-lifecycle", "symptom"),
        ("kernel: mlx5_core 0000:3b:00.0 ib0: Link down", None, "network", "fault"),
        ("kernel: ixgbe 0000:01:00.0 eth0: NIC Link is Down", None, "network", "fault"),
        ("kernel: mlx5_core 0000:3b:00.0: Port module event: module 0, Cable unplugged", None, "network", "fault"),
        (
            "kernel: infiniband mlx5_0: mlx5_handle_error_cqe:332:(pid 0): WC error: 12, Message: transport retry counter exceeded",
            None,
            "network",
            "fault",
        ),
        ("systemd-networkd[812]: eth0: Lost carrier", None, "network", "fault"),
        (
            "3d3e22c3066f:168:168 [0] misc/shmutils.cc:72 NCCL WARN Error: failed to extend /dev/shm/nccl-UbzKZ9 to "
            "9637892 bytes",
            None,
            "pod-lifecycle",
            "fault",
        ),
        ("Traceback (most recent call last):", "OSError: [Errno 28] No space left on device", "node", "fault"),
        ("Evicted: The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi", None, "node", "fault"),
        ("kernel: watchdog: BUG: soft lockup - CPU#12 stuck for 22s! [python3:12345]", None, "node", "fault"),
        (
            "kernel: nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 24007, Fatal, Link 44 sourcetrack timeout",
            None,
            "gpu-fault",
            "fault",
        ),
        (
            "connect() failed (111: Connection refused) while connecting to upstream, client: 10.0.0.7, server: llm",
            None,
            "pod-lifecycle",
            "symptom",
        ),
        (
            "upstream timed out (110: Connection timed out) while reading response header from upstream",
            None,
            "engine",
            "symptom",
        ),
        (
            "kernel: mlx5_core 0000:5c:00.0: Port module event[error]: module 0, Cable error, High Temperature",
            None,
            "network",
            "fault",
        ),
        (
            "mlx5_core 0000:d2:00.0: poll_health:174: device's health compromised - reached miss count.",
            None,
            "network",
            "fault",
        ),
        ("NETDEV WATCHDOG: eth0 (mlx5_core): transmit queue 0 timed out", None, "network", "fault"),
        (
            "pcieport 0000:00:01.1: PCIe Bus Error: severity=Uncorrectable (Fatal), type=Transaction Layer, (Receiver ID)",
            None,
            "node",
            "fault",
        ),
        (
            "NVRM: GPU at PCI:0000:3b:00: GPU-5e7e Xid (PCI:0000:3b:00): 48, pid=1234, An uncorrectable double bit error (DBE) has been detected",
            None,
            "gpu-fault",
            "fault",
        ),
        ("nv-fabricmanager[2281]: NVSwitch fatal error detected on switch 2", None, "gpu-fault", "fault"),
        ("NodeHasDiskPressure: Node gpu-node-3 status is now: NodeHasDiskPressure", None, "node", "fault"),
        ("Preempted: Preempted by pod 6f1c0e1e-2d8b-4f7a on node gpu-node-1", None, "capacity", "fault"),
        ("Preempted: Preempted by a pod on node gpu-node-1", None, "capacity", "fault"),
        (
            "UnexpectedAdmissionError: Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected",
            None,
            "gpu-fault",
            "fault",
        ),
        (
            'FailedCreatePodSandBox: Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "4f1e": plugin type="calico" failed (add)',
            None,
            "node",
            "fault",
        ),
        ("Available KV cache memory: -0.53 GiB", None, "gpu-memory", "fault"),
        (
            "Traceback (most recent call last):",
            "AssertionError: Error in memory profiling. Initial free memory 10.2 GiB, current free memory 12.4 GiB. This happens when the GPU memory was not properly cleaned up before initializing the vLLM instance.",
            "gpu-memory",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't find it in the cached files and it looks like meta-llama/Llama-3.1-8B-Instruct is not the path to a directory containing a file named config.json.",
            "engine",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "huggingface_hub.errors.GatedRepoError: 401 Client Error. (Request ID: Root=1-6789)",
            "engine",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised: RuntimeError: Triton compilation failed",
            "engine",
            "fault",
        ),
        ("RuntimeError: NCCL communicator was aborted on rank 1.", None, "collective-timeout", "symptom"),
        ("Observed flight recorder dump signal from another rank via TCPStore.", None, "collective-timeout", "symptom"),
        (
            "Traceback (most recent call last):",
            "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.",
            "node",
            "fault",
        ),
        (
            "node_manager.cc:3069: 1 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: 5e7e, IP: 10.0.0.5) over the last time period.",
            None,
            "node",
            "fault",
        ),
        (
            "Raylet is terminated: ip=10.0.0.5, id=5e7e. Termination is unexpected. Possible reasons include: (1) SIGKILL by the user or system OOM killer",
            None,
            "node",
            "fault",
        ),
        ("Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.", None, "engine", "symptom"),
        ("TaskHung: INFO: task python3:1234 blocked for more than 120 seconds.", None, "node", "fault"),
        ("kernel: INFO: task python3:1234 blocked for more than 120 seconds.", None, "node", "fault"),
        (
            "KernelOops: kernel: BUG: unable to handle kernel NULL pointer dereference at 0000000000000008",
            None,
            "node",
            "fault",
        ),
        (
            "kernel: EXT4-fs error (device nvme0n1p1): ext4_journal_check_start:83: Detected aborted journal",
            None,
            "node",
            "fault",
        ),
        (
            "ReadonlyFilesystem: Node condition ReadonlyFilesystem is now: True, reason: FilesystemIsReadOnly",
            None,
            "node",
            "fault",
        ),
        ("Worker proc VllmWorker-0 died unexpectedly, shutting down executor.", None, "engine", "symptom"),
        ("TimeoutError: RPC call to execute_model timed out.", None, "engine", "symptom"),  # (V1 executor: a hang)
        ("RuntimeError: CUDA error: out of memory", None, "gpu-memory", "fault"),  # (a CUDA API call)
        (
            "A worker died or was killed while executing a task by an unexpected system error. To troubleshoot the problem, check the logs for the dead worker.",
            None,
            "engine",
            "symptom",
        ),
        (
            "XidCriticalError: Xid=79 on Device=GPU-5e7e3a2b, uuid=GPU-5e7e3a2b, the device will go unhealthy.",
            None,
            "gpu-fault",
            "fault",
        ),
        (
            "Unable to determine the device handle for GPU 0000:3b:00.0: GPU is lost.  Reboot the system to recover this GPU",
            None,
            "gpu-fault",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 802: system not yet initialized",
            "gpu-fault",
            "fault",
        ),
        (
            "[PG ID 0 PG GUID 0(default_pg) Rank 3] Terminating the process after attempting to dump debug info, due to collective timeout or exception.",
            None,
            "collective-timeout",
            "symptom",
        ),
        (  # LMCache's adapter, in a vLLM worker's log
            "Request chatcmpl-a45fe9554f56f11bThe number of retrieved tokens is less than the expected number of "
            "tokens! This should not happen!",
            None,
            "kv-cache",
            "fault",
        ),
        ("DeepEP timeout check failed: rank = 3, thread = 0, value = 1024)", None, "collective-timeout", "symptom"),
        ("RuntimeError: DeepEP error: CPU recv timeout", None, "collective-timeout", "symptom"),
        # Disaggregated prefill/decode (vLLM's NIXL and Mooncake connectors, their UCX transport).
        (
            "NIXL transfer failed for request cmpl-7f3a-0 with state ERR. Marking blocks as invalid.",
            None,
            "network",
            "fault",
        ),
        ("Handshake failed for request cmpl-7f3a-0, marking blocks as invalid", None, "network", "fault"),
        ("Mooncake transfer failed for request. remote_request_id=cmpl-7f3a-0, ret=-1. ", None, "network", "fault"),
        ("Transport retry count exceeded on mlx5_0:1/IB (synd 0x15 vend 0x81 hw_synd 0/0)", None, "network", "fault"),
        (  # Mooncake's transfer engine (glog), the completion's status in ibv_wc_status_str's words
            "Worker: Process failed for slice (opcode: 1, source_addr: 0x7f1, length: 65536, dest_addr: 0x7f2, "
            "local_nic: mlx5_3, peer_nic: 10.194.30.27:16737@mlx5_3, dest_rkey: 1, retry_cnt: 0): local protection error",
            None,
            "network",
            "fault",
        ),
        (
            "Potentially invalid KV blocks for unrecognized request cmpl-7f3a-0 were retrieved by a decode worker. "
            "They may have expired.",
            None,
            "kv-cache",
            "fault",
        ),
        (
            "Releasing expired KV blocks for request cmpl-7f3a-0 which were retrieved by 0 decode worker(s) within "
            "120 seconds.",
            None,
            "kv-cache",
            "symptom",
        ),
        (
            "Recovered from KV load failure: 3 request(s) rescheduled (12288 tokens affected).",
            None,
            "kv-cache",
            "symptom",
        ),
        (  # the connector's periodic stats line (every 10 s), counting failures since the last
            "KV Transfer metrics: Num successful transfers=80, Avg xfer time (ms)=173.794, P90 xfer time (ms)=235.706, "
            "Avg MB per transfer=313.0, Throughput (MB/s)=1800.983, Num failed transfers=3, Num KV expired reqs=0",
            None,
            "network",
            "fault",
        ),
        (
            "KV Transfer metrics: Num successful transfers=80, Avg xfer time (ms)=173.794, Num failed transfers=0, "
            "Num KV expired reqs=12",
            None,
            "kv-cache",
            "symptom",
        ),
        (
            "Traceback (most recent call last):",
            "RuntimeError: The NVIDIA driver on your system is too old (found version 12020). Please update your GPU driver",
            "engine",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "RuntimeError: NIXL compatibility hash mismatch. Local: 9c1e, Remote: 47ab. Prefill and decode instances "
            "have incompatible configurations.",
            "engine",
            "fault",
        ),
        # The image meeting a GPU it was not built for: the engine's start, not the GPU, failed.
        (
            "Traceback (most recent call last):",
            "torch.AcceleratorError: CUDA error: no kernel image is available for execution on the device",
            "engine",
            "fault",
        ),
        (
            "UserWarning: NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current "
            "PyTorch installation.",
            None,
            "engine",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 "
            "GPU has compute capability 7.5. You can use float16 instead by explicitly setting the`dtype` flag in "
            "CLI, for example: --dtype=half.",
            "engine",
            "fault",
        ),
        (  # vLLM V1's guard before profiling: another process (often a leftover EngineCore) holds the GPU
            "Traceback (most recent call last):",
            "ValueError: Free memory on device cuda:0 (12.18/23.56 GiB) on startup is less than desired GPU memory "
            "utilization (0.92, 21.67 GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
            "processes.",
            "gpu-memory",
            "fault",
        ),
        (  # V0's words for a KV cache too small for max_model_len
            "Traceback (most recent call last):",
            "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be "
            "stored in KV cache (93936). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
            "initializing the engine.",
            "gpu-memory",
            "fault",
        ),
        (  # AWS EFA under aws-ofi-nccl
            "ip-10-1-2-3:229905:230588 [0] ofi_process_cq:196 NCCL WARN NET/OFI Request 0x400aa7dd3b98 completed "
            "with error. RC: 107. Error: Inappropriate ioctl for device.",
            None,
            "network",
            "fault",
        ),
        ("gpu-b:2343:2381 [0] NCCL WARN NET/IB : mlx5_0:1 Got async event : port error", None, "network", "fault"),
        (
            "gpu-b:2343:2381 [0] NCCL WARN NET/IB : mlx5_0:1 Got async event : local catastrophic error",
            None,
            "network",
            "fault",
        ),
        (
            "mlx5_core 0000:0c:00.0: mlx5_fw_fatal_reporter_err_work:760:(pid 17): Driver is in error state. Unloading",
            None,
            "network",
            "fault",
        ),
        (
            "FailedScheduling: 0/3 nodes are available: 3 node(s) had untolerated taint {nvidia.com/gpu: present}. "
            "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
            None,
            "capacity",
            "fault",
        ),
        (
            "FailedScheduling: 0/6 nodes are available: 2 node(s) had taint {dedicated: gpu}, that the pod didn't "
            "tolerate, 4 node(s) didn't match node selector.",
            None,
            "capacity",
            "fault",
        ),
        (  # nodes tainted for their condition: the scheduler sees a node failure
            "FailedScheduling: 0/4 nodes are available: 4 node(s) had untolerated taint "
            "{node.kubernetes.io/not-ready: }. preemption: 0/4 nodes are available.",
            None,
            "node",
            "symptom",
        ),
        (
            "Traceback (most recent call last):",
            "ValueError: Model architectures ['Qwen3NextForCausalLM'] are not supported for now. Supported "
            "architectures: dict_keys(['AquilaModel', 'LlamaForCausalLM'])",
            "engine",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "ValueError: The checkpoint you are trying to load has model type `qwen3` but Transformers does not "
            "recognize this architecture. This could be because of an issue with the checkpoint, or because your "
            "version of Transformers is out of date.",
            "engine",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "ValueError: Total number of attention heads (40) must be divisible by tensor parallel size (3).",
            "engine",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer",
            "engine",
            "fault",
        ),
        (
            "The node with node id: 9426f44574cce4866be798cfed308f2d3e21ba69487d422872cdd6e3 and address: 10.130.0.113 "
            "and node name: 10.130.0.113 has been marked dead because the detector has missed too many heartbeats "
            "from it. This can happen when a (1) raylet crashes unexpectedly (OOM, preempted node, etc.)",
            None,
            "node",
            "fault",
        ),
        ("Terminated: Pod was terminated in response to imminent node shutdown.", None, "node", "fault"),
        ("NodeShutdown: Shutdown manager detected shutdown event", None, "node", "fault"),
        ("Evicted: The node had condition: [DiskPressure].", None, "node", "fault"),
        ("Traceback (most recent call last):", "OSError: [Errno 122] Disk quota exceeded", "node", "fault"),
        (
            'Unhealthy: Startup probe failed: Get "http://10.0.0.5:8000/health": dial tcp 10.0.0.5:8000: connect: '
            "connection refused",
            None,
            "pod-lifecycle",
            "symptom",
        ),
        # cuBLAS's handle created on a full GPU: memory, not the hardware the generic CUDA error says
        (
            "Traceback (most recent call last):",
            "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`",
            "gpu-memory",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
            "gpu-memory",
            "fault",
        ),
        # the server's port taken: uvicorn's bind, vLLM's own socket, torch's TCPStore (not a rendezvous failing)
        (
            "[Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use",
            None,
            "engine",
            "fault",
        ),
        ("Traceback (most recent call last):", "OSError: [Errno 98] Address already in use", "engine", "fault"),
        (
            "Traceback (most recent call last):",
            "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
            "port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use",
            "engine",
            "fault",
        ),
        # file descriptors exhausted under load (asyncio's accept loop logs it, then the exception)
        ("socket.accept() out of system resource", None, "engine", "fault"),
        ("Traceback (most recent call last):", "OSError: [Errno 24] Too many open files", "engine", "fault"),
        (
            "Traceback (most recent call last):",
            "PermissionError: [Errno 13] Permission denied: '/.cache'",
            "engine",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "OSError: [Errno 30] Read-only file system: '/root/.cache/huggingface/hub/models--Qwen--Qwen3-8B'",
            "engine",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "redis.exceptions.ConnectionError: Error 111 connecting to lmcache-redis:6379. Connection refused.",
            "kv-cache",
            "fault",
        ),
        ("Traceback (most recent call last):", "RuntimeError: CUDA driver error: out of memory", "gpu-memory", "fault"),
        (  # torch's older spelling of NCCL's result codes
            "Traceback (most recent call last):",
            "RuntimeError: NCCL Error 6: remote process exited or there was a network error",
            "network",
            "fault",
        ),
        (
            "Traceback (most recent call last):",
            "RuntimeError: NCCL Error 1: unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
            "gpu-fault",
            "fault",
        ),
        (  # a Triton kernel tuned for a larger GPU than the node's
            "Traceback (most recent call last):",
            "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 167936, Hardware limit: "
            "101376. Reducing block sizes or `num_stages` may help.",
            "engine",
            "fault",
        ),
        (  # the container started without the NVIDIA runtime
            "Traceback (most recent call last):",
            "ImportError: libcuda.so.1: cannot open shared object file: No such file or directory",
            "gpu-fault",
            "fault",
        ),
        (
            "/sgl-workspace/nvshmem/src/host/init/init.cu:nvshmemi_check_state_and_init:1080: nvshmem initialization "
            "failed, exiting",
            None,
            "network",
            "fault",
        ),
        (
            "/opt/nvshmem/nvshmem/src/modules/transport/ibgda/ibgda.cpp:1889: NULL value cannot allocate "
            "mlx5dv_devx_uar",
            None,
            "network",
            "fault",
        ),
        ("SystemOOM: System OOM encountered, victim process: python3, pid: 88121", None, "node", "fault"),
        ("mce: [Hardware Error]: Machine check events logged", None, "node", "fault"),
        ("EDAC MC0: 1 UE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0", None, "node", "fault"),
        (
            "blk_update_request: I/O error, dev nvme0n1, sector 123456 op 0x0:(READ) flags 0x80700 phys_seg 1 prio "
            "class 0",
            None,
            "node",
            "fault",
        ),
        ("nfs: server 10.0.0.5 not responding, still trying", None, "node", "fault"),
        ("NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x24:0x72:1436)", None, "gpu-fault", "fault"),
        ("Failed to connect to GCS at address 10.0.0.1:6379 within 5 seconds.", None, "network", "fault"),
        (
            "Traceback (most recent call last):",
            "socket.gaierror: [Errno -3] Temporary failure in name resolution",
            "network",
            "fault",
        ),
        (
            "failed to connect to the KV store: dial tcp: lookup lmcache-server on 10.96.0.10:53: no such host",
            None,
            "network",
            "fault",
        ),
        (  # the Hub unreachable at start is the weights failing to load, whatever DNS said
            "Traceback (most recent call last):",
            "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='huggingface.co', port=443): Max retries "
            'exceeded with url: /api/models/Qwen/Qwen3-8B (Caused by NameResolutionError("<urllib3.connection.'
            "HTTPSConnection object at 0x7f>: Failed to resolve 'huggingface.co' ([Errno -3] Temporary failure in "
            'name resolution)"))',
            "engine",
            "fault",
        ),
        ("Fatal Python error: Segmentation fault", None, "engine", "symptom"),
        # SGLang: its scheduler's death, and the server's word for it; the exception below is the fault
        ("Scheduler hit an exception: Traceback (most recent call last):", None, "engine", "symptom"),
        ("Received sigquit from a child process. It usually means the child failed.", None, "engine", "symptom"),
        (
            "Scheduler hit an exception: Traceback (most recent call last):",
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            "gpu-fault",
            "fault",
        ),
        ("*** SIGSEGV received at time=1700000000 on cpu 3 ***", None, "engine", "symptom"),
        (  # the store's server end: the other ranks never connected
            "Traceback (most recent call last):",
            "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.",
            "network",
            "fault",
        ),
        # TensorRT-LLM: its KV block manager's checks, a CUDA allocation it checked, its executor failing the
        # requests in flight (the fault, where the error it says is one)
        (
            "tensorrt_llm::common::TllmException: [TensorRT-LLM][ERROR] Assertion failed: mNextBlocks.empty() "
            "(/src/tensorrt_llm/cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp:219)",
            None,
            "kv-cache",
            "fault",
        ),
        (
            "[TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMallocAsync(ptr, n, mCudaStream->get()): out of memory "
            "(/src/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmBuffers.h:125)",
            None,
            "gpu-memory",
            "fault",
        ),
        ("Encountered an error in forwardAsync function: std::bad_alloc", None, "engine", "symptom"),
        # the CUDACHECK macro (vLLM's custom all-reduce): a failed CUDA call, an OOM where it says so
        ("Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:307 'invalid argument'", None, "gpu-fault", "fault"),
        ("Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:97 'out of memory'", None, "gpu-memory", "fault"),
        # UCX's handler: a signal killed the process (NIXL's transfer under it, or anything in native code)
        ("Caught signal 7 (Bus error: nonexistent physical address)", None, "engine", "symptom"),
        (
            "Encountered an error in forwardAsync function: [TensorRT-LLM][ERROR] Assertion failed: block is free "
            "(/src/tensorrt_llm/cpp/tensorrt_llm/batch_manager/evictionPolicy.cpp:88)",
            None,
            "kv-cache",
            "fault",
        ),
    ],
)
def test_real_fault_strings_are_classified_by_layer_and_kind(line, exception, category, kind):
    head, tb = signatures.classify_text(line, exception)
    sig = tb if exception else head
    assert (sig.category, sig.kind) == (category, kind)


@pytest.mark.parametrize(
    "line",
    [
        "kernel: nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 33 egress non-posted PRIV error (First)",
        "nv-fabricmanager[1234]: detected NVSwitch non-fatal error 12028 on fid 0 on NVSwitch pci bus id 00000000:05:00.0",
        "mlx5_core 0000:5c:00.0: Port module event: module 0, Cable plugged",
        "pcieport 0000:00:03.1: AER: Corrected error received: 0000:00:03.1",
        "mlx5_cmd_out_err:838: ACCESS_REG(0x805) op_mod(0x1) failed, status bad operation(0x2)",
        # NCCL's IB async events that a healthy fabric sends too (the subnet manager's doing)
        "gpu-b:2343:2381 [0] NCCL WARN NET/IB : mlx5_0:1 Got async event : GID table change",
        "gpu-b:2343:2381 [0] NCCL WARN NET/IB : mlx5_0:1 Got async event : client reregistration",
        # aws-ofi-nccl finding no EFA: NCCL falls back to its socket transport and goes on
        "NCCL INFO NET/OFI No eligible providers were found",
        # host memory's corrected errors are wear; an NFS server answering again is the recovery
        "EDAC MC0: 1 CE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0",
        "nfs: server 10.0.0.5 OK",
    ],
)
def test_routine_hardware_notices_are_no_fault(line):
    # Non-fatal NVSwitch errors, a cable plugged in, a corrected PCIe error and a monitoring
    # tool's refused register read happen on healthy nodes: blaming them would mislead.
    assert signatures.classify_text(line, None) == (None, None)


@pytest.mark.parametrize(
    ("line", "label", "kind"),
    [
        (
            "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.",
            "fell off the bus",
            "fault",
        ),
        ("XidCriticalError: Xid=79 on Device=GPU-5e7e3a2b, the device will go unhealthy.", "fell off the bus", "fault"),
        ("DCGM_FI_DEV_XID_ERRORS: Xid=48 on GPU 1 (GPU-5fd3)", "ECC", "fault"),
        ("NVRM: Xid (PCI:0000:18:00): 94, pid=2311, Contained: SM (0x1). RST: No, D-RST: No", "ECC", "fault"),
        ("NVRM: Xid (PCI:0000:18:00): 74, pid=2311, NVLink: fatal error detected on link 3", "NVLink", "fault"),
        ("NVRM: Xid (PCI:0000:18:00): 119, pid=2311, Timeout waiting for RPC from GSP!", "GSP", "fault"),
        (
            "NVRM: Xid (PCI:0000:18:00): 31, pid=2311, name=python3, Ch 00000008, intr 10000000. MMU Fault: ENGINE "
            "GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f1a_2c000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
            "usually software",
            "fault",
        ),
        ("NVRM: Xid (PCI:0000:18:00): 45, pid=2311, Ch 00000010", "Xid 45", "symptom"),
        ("NVRM: Xid (PCI:0000:18:00): 154, pid=1, GPU recovery action changed", "needs recovery", "fault"),
        # every other code by the resolution bucket of NVIDIA's catalog
        (
            "NVRM: Xid (PCI:0000:18:00): 109, pid=2311, errorString CTX SWITCH TIMEOUT, Info 0x3c046",
            "GPU reset",
            "fault",
        ),
        (
            "NVRM: Xid (PCI:0000:18:00): 62, pid='<unknown>', name=<unknown>, 2a4c4a(8744) 00000000",
            "GPU reset",
            "fault",
        ),
        ("NVRM: Xid (PCI:0000:18:00): 39, pid=2311, name=python3, CE0 exception", "restart the application", "fault"),
        ("NVRM: Xid (PCI:0000:18:00): 146, pid=2311, NVLink: TLW error", "NVLink", "fault"),
        ("NVRM: Xid (PCI:0000:18:00): 171, pid=2311, Uncorrectable DRAM error", "ECC", "fault"),
        ("NVRM: Xid (PCI:0000:18:00): 137, pid=2311, NVLink: privilege error", "needs no action", "symptom"),
    ],
)
def test_an_xids_number_names_what_failed_and_what_to_do(line, label, kind):
    # Xid 45 is the driver cleaning up after a process that died (an OOM kill, a crash): never the cause.
    from forensics.diagnosis import signatures

    sig, _ = signatures.classify_text(line, None)
    assert (sig.category, sig.kind) == ("gpu-fault", kind) and label in sig.label
    if kind == "fault" and "Xid" in sig.label:
        assert "{host}" in advice.ACTIONS_BY_LABEL[sig.label]  # (its own action item, for the node at fault)


@pytest.mark.parametrize(
    ("line", "nccl"),
    [
        ("socketProgress: Connection closed by remote peer gpu-b7-ib0<40217>", True),
        ("socketProgressOpt: Call to recv from 172.16.0.3<33759> failed : Connection reset by peer", True),
        ("Net : Call to recv from 10.200.84.247<58355> failed : Broken pipe", True),
        ("Net : Connection closed by remote peer a100-st-p4d24xlarge-22<34552>", True),
        ("socketPollConnect: connect returned Connection refused, exceeded error retry count (35)", True),
        ("fatal: Write failed: Connection reset by peer [preauth]", False),
        ("ConnectionResetError: [Errno 104] Connection reset by peer", False),
        (
            "[E socket.cpp:957] [c10d] The client socket has failed to connect to 10.0.0.1:29500: No route to host",
            False,
        ),
    ],
)
def test_only_nccls_own_socket_errors_are_called_nccls(line, nccl):
    # NCCL's socket code names its function; the same words from sshd or a Python client are
    # a lost connection of some process, as that process saw it.
    sig, _ = signatures.classify_text(line, None)
    assert (sig.category, sig.kind) == ("network", "fault")
    assert sig.label == ("NCCL socket error" if nccl else signatures.SOCKET_LOST)
    assert signatures.Trait.AS_THE_APP_SAW_IT in sig.traits


_CATALOG_WORDS = sorted({w for sig in SIGNATURES for w in re.findall(r"[A-Za-z][\w.]+", sig.pattern)})
"""The catalog's own words, so that generated lines come near (and into) its patterns."""


def test_what_the_ranking_asks_of_a_fault_is_a_trait_of_its_catalog_entry():
    # The ranking and the alerts ask traits, never spelt labels: rewording an entry's label
    # cannot stop a rule that names it.
    # (UNCATALOGUED is what no entry has: `catalog.frames` gives it to what it reads.)
    entry_traits = set(signatures.Trait) - {signatures.Trait.UNCATALOGUED}
    with_trait = {t: [sig.id for sig in SIGNATURES if t in sig.traits] for t in entry_traits}
    assert len(with_trait[signatures.Trait.AT_START]) >= 8
    assert all(with_trait.values()), [t for t, ids in with_trait.items() if not ids]
    for sig in SIGNATURES:
        assert signatures.traits_of(sig.label) >= sig.traits


def test_catalog_ids_are_stable_unique_and_name_their_category():
    # An id is what code, tests and users' tooling compare: once given, it stays.
    ids = [sig.id for sig in SIGNATURES]
    assert len(set(ids)) == len(ids)
    assert all(sig.id.startswith(sig.category + ".") for sig in SIGNATURES)
    golden = (GOLDEN / "catalog-ids.txt").read_text().split()
    assert [i for i in golden if i not in signatures.BY_ID] == [], "a catalog id was renamed or removed"


@pytest.mark.parametrize("sig", SIGNATURES, ids=lambda sig: sig.label[:40])
def test_every_signature_compiles_in_polars_regex_engine(sig):
    # polars' engine has no lookaround: a pattern it cannot compile fails the whole analysis.
    screen = signatures._SCREENS[SIGNATURES.index(sig)]
    assert pl.Series([sig.label, ""]).str.contains(screen).dtype == pl.Boolean  # (raises when it cannot compile)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(_CATALOG_WORDS),
            st.sampled_from([" ", ": ", "'", "(", ")", "[", "]", "=", "-", "/", ".", "\t", "é", "٣", "%"]),
            st.text(max_size=6),
            st.from_regex(r"\d{1,6}", fullmatch=True),
        ),
        max_size=14,
    ).map("".join)
)
def test_the_screen_never_changes_which_signature_a_line_gets(line):
    # polars screens each line against the whole catalog; Python's `re` still decides, in
    # catalog order, among what the screen lets through: the answer is the unscreened one.
    first = line.split("\n", 1)[0]
    maybe = np.flatnonzero(signatures._screen(pl.Series([first]))[0]).tolist()
    assert signatures.classify_text(first, None, maybe) == signatures.classify_text(first, None)


def test_a_flood_of_one_message_gives_each_of_its_events_its_signature_rows():
    import polars as pl

    crash = (
        "EngineCore encountered a fatal error.\nTraceback (most recent call last):\n"
        '  File "core.py", line 1, in run\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB'
    )
    shm = "No available shared memory broadcast block found in 60 seconds."
    messages = [crash, shm, "Added request chatcmpl-1.", crash, shm, crash]
    events = pl.DataFrame({"message": messages, "http_status": [None] * 6}, schema_overrides={"http_status": pl.Int32})
    got = signatures.classify(events)
    # The crash: its traceback's OOM (a fault) and the engine's death (a symptom), at each of its events.
    assert got["_ev"].to_list() == [0, 0, 1, 3, 3, 4, 5, 5]
    assert got.filter(pl.col("_ev") == 5)["category"].sort().to_list() == ["engine", "gpu-memory"]
    assert got.filter(pl.col("_ev") == 4)["text"].to_list() == [shm]


def test_every_catalog_entry_says_where_its_text_comes_from():
    # A project file that logs it, or the vendor document that lists it: what a reader checks
    # when a new release rewords a message.
    missing = [sig.id for sig in SIGNATURES if len(sig.source) < 12]
    assert missing == []
    xids = [sig for sig in SIGNATURES if "Xid" in sig.label and sig.category == "gpu-fault"]
    assert xids and all("Xid catalog" in sig.source for sig in xids)


def test_an_xid_outside_the_catalogs_groups_is_named_by_what_nvidia_calls_it(tmp_path):
    from forensics import analyze
    from tests.conftest import write as write_file

    write_file(
        tmp_path / "nodes" / "gpu-7" / "kernel.journal",
        "Mar 02 10:00:05 gpu-7 kernel: NVRM: Xid (PCI:0000:c1:00): 154, GPU recovery action changed from 0x0 "
        "(None) to 0x2 (Node Reboot Required)\n",
    )
    (inc,) = analyze(tmp_path, year=2025).to_json()["incidents"]
    rc = inc["root_cause"]
    assert (rc["category"], rc["hosts"]) == ("gpu-fault", ["gpu-7"])
    (said,) = [w for w in rc["why"] if w.startswith("Xid 154: GPU Recovery Action Changed")]
    assert "the driver now asks for: Node Reboot Required" in said and "XID_154" in said


def test_the_xid_table_is_nvidias_whole_catalog_with_its_resolution_buckets():
    # Every code 1-172, each with the driver's mnemonic and what NVIDIA says to do first: a report
    # quotes it for any Xid, not only those the catalog's entries group.
    from forensics.diagnosis.catalog.xid import XIDS, XidCategory

    assert sorted(XIDS) == list(range(1, 173))
    assert all(re.fullmatch(r"[A-Z0-9_]+", x.mnemonic) and x.description for x in XIDS.values())
    facts = {79: "RESTART_BM", 95: "RESET_GPU", 94: "RESTART_APP", 13: "RESTART_APP", 63: "IGNORE", 154: "XID_154"}
    assert {c: XIDS[c].immediate for c in facts} == facts
    assert XIDS[79].mnemonic == "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS"
    assert (XIDS[74].category, XIDS[137].category, XIDS[151].category) == ("reset", "notice", "reboot")
    # a code unused on Ampere and newer keeps the older GPUs' name: a Volta node can still log it
    assert (XIDS[9].category, XIDS[9].description) == (XidCategory.UNUSED, "Driver error programming GPU")
    assert "older GPUs' table" in XIDS[9].describe()


@pytest.mark.parametrize("code", [14, 37, 93, 121, 137, 157, 160])
def test_an_xid_nvidia_says_needs_no_action_starts_no_incident(tmp_path, code):
    # Xid 137 twice on a healthy node is no outage: its catalog row says IGNORE. The generic GPU
    # fault must not take it for one either.
    from forensics import analyze
    from tests.conftest import write as write_file

    lines = [f"Mar 02 10:0{m}:05 gpu-7 kernel: NVRM: Xid (PCI:0000:c1:00): {code}, pid=1234, notice" for m in (0, 3)]
    write_file(tmp_path / "nodes" / "gpu-7" / "kernel.journal", "\n".join(lines) + "\n")
    assert analyze(tmp_path, year=2025).to_json()["incidents"] == []


def test_an_xid_the_catalog_resets_the_gpu_for_is_a_fault_with_nvidias_action(tmp_path):
    from forensics import analyze
    from tests.conftest import write as write_file

    write_file(
        tmp_path / "nodes" / "gpu-3" / "kernel.journal",
        "Mar 02 10:00:05 gpu-3 kernel: NVRM: Xid (PCI:0000:c1:00): 158, pid=1234, name=python3, GPU fatal timeout\n",
    )
    (inc,) = analyze(tmp_path, year=2025).to_json()["incidents"]
    rc = inc["root_cause"]
    assert (rc["category"], rc["hosts"]) == ("gpu-fault", ["gpu-3"])
    assert rc["evidence"][0]["line"] == 1
    assert any(
        "Xid 158: GPU Fatal Timeout (GPU_FATAL_TIMEOUT)" in w and "reset the GPU (RESET_GPU)" in w for w in rc["why"]
    )


def test_the_recovery_the_driver_asks_for_after_an_xid_is_quoted_with_it(tmp_path):
    # Xid 154 summarises what the Xid before it needs: the reader learns it beside the cause, with
    # the line that says so; a 154 on another node says nothing of this one.
    from forensics import analyze
    from tests.conftest import write as write_file

    write_file(
        tmp_path / "nodes" / "gpu-b" / "kern.log",
        "Nov 12 03:14:07 gpu-b kernel: NVRM: Xid (PCI:0000:9b:00): 109, pid=48213, name=python3, Ch 00000008, "
        "errorString CTX SWITCH TIMEOUT, Info 0x3c046\n"
        "Nov 12 03:14:09 gpu-b kernel: NVRM: Xid (PCI:0000:9b:00): 154, GPU recovery action changed from 0x0 (None) "
        "to 0x1 (GPU Reset Required)\n",
    )
    write_file(
        tmp_path / "nodes" / "gpu-c" / "kern.log",
        "Nov 12 03:14:08 gpu-c kernel: NVRM: Xid (PCI:0000:1b:00): 154, GPU recovery action changed from 0x0 (None) "
        "to 0x2 (Node Reboot Required)\n",
    )
    incs = analyze(tmp_path, year=2025).to_json()["incidents"]
    rc = incs[0]["root_cause"]
    assert (rc["hosts"][:1], rc["evidence"][0]["line"]) == (["gpu-b"], 1)
    assert "then the driver asked for GPU Reset Required (Xid 154, nodes/gpu-b/kern.log:2)" in rc["why"]
    assert not any("Node Reboot Required" in w for w in rc["why"])


@pytest.mark.parametrize(
    ("line", "sig_id"),
    [
        # DCGM's health watches and diagnostics, as `dcgmi health -c`, `dcgmi diag` and nv-hostengine print them
        ("Detected XID 79 for GPU 0", "gpu-fault.gpu-fell-off-bus"),
        ("GPU had an uncontained error (XID 95)", "gpu-fault.gpu-memory-ecc-error"),
        ("Detected 3 volatile double-bit ECC error(s) in GPU 2.", "gpu-fault.gpu-memory-ecc-error"),
        ("GPU 1 had uncorrectable memory errors and row remapping failed.", "gpu-fault.gpu-memory-ecc-error"),
        ("GPU 5 had memory errors and row remappings are pending", "gpu-fault.gpu-memory-ecc-error"),
        ("GPU 3's NvLink link 5 is currently down", "gpu-fault.nvlink-error-xid-74"),
        ("Only 14 NvLinks are up out of the expected 18", "gpu-fault.nvlink-error-xid-74"),
        ("Detected fatal errors on NvSwitch 2 link 17", "gpu-fault.nvswitch-nvlink-fabric-failure"),
        ("Detected clock throttling due to thermal violation in GPU 4.", "gpu-fault.gpu-clocks-held-down"),
        ("There were thermal violations totaling 41.5 seconds for GPU 4", "gpu-fault.gpu-clocks-held-down"),
        ("Detected more than 8 PCIe replays per minute for GPU 0 : 13", "gpu-fault.gpu-pcie-link-errors-dcgm"),
        (
            "GPU 2 is running at PCI link width 8X, which is below the minimum allowed link generation of 16 "
            "(parameter 'pcie.min_pci_width')",
            "gpu-fault.gpu-pcie-link-errors-dcgm",
        ),
        ("A corrupt InfoROM has been detected in GPU 6.", "gpu-fault.gpu-pcie-link-errors-dcgm"),
    ],
)
def test_dcgms_health_and_diagnostic_messages_name_the_gpu_fault(line, sig_id):
    # DCGM words what its watches found (dcgm_errors.h); an Xid it reports reads `Detected XID 79`.
    sig, _ = signatures.classify_text(line, None)
    assert sig is not None and sig.id == sig_id


def test_sshds_routine_bind_failure_is_no_signal_and_a_servers_taken_port_still_is():
    # sshd logs a failed bind whenever two listen addresses cover one port, and serves on the rest.
    import polars as pl

    lines = [
        "sshd[3112]: error: Bind to port 22 on 10.0.7.21 failed: Address already in use.",
        "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use",
    ]
    got = signatures.classify(
        pl.DataFrame({"message": lines, "http_status": [None, None]}, schema_overrides={"http_status": pl.Int32})
    )
    assert got["_ev"].to_list() == [1] and got["label"][0].startswith("the server's port is already taken")
