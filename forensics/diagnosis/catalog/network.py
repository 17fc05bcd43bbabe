"""The network and NCCL's transports: InfiniBand/RDMA and EFA completions, NIC and link faults,
sockets, bootstrap and rendezvous, NVSHMEM, DNS."""

from __future__ import annotations

from forensics.diagnosis.catalog.entry import Layer, Signature, Trait
from forensics.diagnosis.catalog.labels import KV_TRANSFER_FAILED, SOCKET_LOST

ENTRIES: tuple[Signature, ...] = (
    # --- network / NCCL transport
    Signature(
        id="network.infiniband-rdma-transport-error",
        source="NCCL src/transport/net_ib.cc ('NET/IB : Got completion from peer'), ibverbs calls; kubelet NetworkUnavailable condition",
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
        source="aws-ofi-nccl src/nccl_ofi_rdma.c ('NET/OFI Request completed with error')",
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
        source="vLLM nixl_connector.py, Mooncake transfer engine (mooncake-transfer-engine), vLLM KV connectors",
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
        source="Linux NIC drivers (mlx5_core, ixgbe: 'Link down', 'NIC Link is Down'), ibverbs work-completion errors",
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
        source="Linux mlx5_core driver (drivers/net/ethernet/mellanox/mlx5/core/health.c, events.c)",
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
        source="NCCL src/misc/socket.cc (socketProgress, socketStartConnect, socketPollConnect)",
        category="network",
        kind="fault",
        layer=Layer.NETWORK,
        pattern=r"socketProgress(?:Opt)?: |socket(?:Start|Poll)Connect|\bNet : (?:Call to recv|Connection (?:closed|reset))",
        label="NCCL socket error",
        traits=frozenset({Trait.AS_THE_APP_SAW_IT}),
    ),
    Signature(
        id="network.connection-reset-closed-unroutable",
        source="Linux ECONNRESET, EHOSTUNREACH, EPIPE as NCCL, Gloo and Python report them",
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
        source="NCCL src/transport/shm.cc and src/misc/shmutils.cc (/dev/shm segments); PyTorch shared-memory errors",
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
        source="Linux ENOSPC (errno 28) and EDQUOT (errno 122) as Python reports them",
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
        source="NCCL src/nccl.h.in (ncclSystemError, ncclRemoteError) and ncclGetErrorString",
        category="network",
        kind="fault",
        layer=Layer.NETWORK,
        pattern=r"ncclSystemError|ncclRemoteError|NCCL [Ee]rror.*(?:unhandled system error|remote process exited or there was a network error)",
        label="NCCL system / remote error",
        traits=frozenset({Trait.AS_THE_APP_SAW_IT}),
    ),
    Signature(
        id="network.nccl-proxy-bootstrap-network",
        source="NCCL src/proxy.cc ('[Proxy Service N] Failed to execute operation'), src/bootstrap.cc",
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
        source="NVSHMEM initialization errors as DeepEP (deepseek-ai/DeepEP csrc/) reports them",
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
        source="PyTorch torch/csrc/distributed/c10d/socket.cpp (DistNetworkError), torch/distributed/elastic/rendezvous/",
        category="network",
        kind="fault",
        layer=Layer.NETWORK,
        pattern=r"DistNetworkError|The client socket has (?:failed to connect|timed out after)|RendezvousTimeoutError"
        r"|RendezvousConnectionError|TCPStore.*(?:timed out|Connection refused|Connection reset)"
        # the store's server end: the other ranks never connected (not started, or cannot reach it)
        r"|Timed out after \d+ seconds waiting for clients",
        label="torch.distributed rendezvous / TCPStore connection failed",
    ),
    # Gloo's TCP pairs between the ranks at start-up (torch's `ProcessGroupGloo`, which vLLM
    # builds beside NCCL): `connectFullMesh failed` (gloo/transport/tcp/pair.cc) when a rank
    # cannot reach another's advertised address, typically after vLLM warned `Using the loopback
    # address as fallback` (vllm/utils: no routable interface found), or with the wrong NIC picked.
    Signature(
        id="network.gloo-ranks-could-not-connect",
        source="Gloo gloo/transport/tcp/pair.cc and PyTorch ProcessGroupGloo ('Gloo connectFullMesh failed')",
        category="network",
        kind="fault",
        layer=Layer.NETWORK,
        pattern=r"Gloo connectFullMesh failed|gloo/transport/tcp/\S+ (?:Connection refused|Connection reset|Timed out)",
        label="the ranks could not connect to each other at start-up (Gloo's TCP mesh: the address or the interface "
        "each rank advertised; engine start)",
        action="Make every rank advertise an address the others reach: set `VLLM_HOST_IP` (and `GLOO_SOCKET_IFNAME` / "
        "`NCCL_SOCKET_IFNAME`) to the pod's routable interface on {host}, since a `Using the loopback address as "
        "fallback` warning means vLLM found none; check that the ports between the pods are open.",
        traits=frozenset({Trait.AT_START}),
    ),
    Signature(
        id="network.ray-node-cannot-reach",
        source="Ray src/ray/gcs/gcs_client/ ('Failed to connect to GCS within N seconds')",
        category="network",
        kind="fault",
        layer=Layer.NETWORK,
        pattern=r"Failed to connect to GCS (?:at address \S+ )?within \d+ seconds",
        label="a Ray node cannot reach the head's GCS (the head down, or the network to it)",
    ),
    Signature(
        id="other.nccl-internal-error-misuse",
        source="NCCL src/nccl.h.in (ncclInternalError, ncclInvalidUsage, ncclInvalidArgument)",
        category="other",
        kind="fault",
        layer=Layer.NETWORK,
        pattern=r"ncclInternalError|ncclInvalidUsage|ncclInvalidArgument|NCCL [Ee]rror.*(?:internal error - please report|invalid usage|invalid argument)",
        label="NCCL internal error or misuse",
    ),
)
