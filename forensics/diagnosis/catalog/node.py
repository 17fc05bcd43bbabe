"""The node: the kernel's OOM killer, the kubelet and the node lost, PCIe and host hardware, file
systems and NFS; and the pods and scheduling failures a node's condition explains."""

from __future__ import annotations

from forensics.diagnosis.catalog.entry import Layer, Signature, Trait
from forensics.diagnosis.catalog.labels import CONTAINER_OOM, HOST_OOM

ENTRIES: tuple[Signature, ...] = (
    # --- node
    # The kernel's global OOM killer (`Out of memory:`, not a cgroup's `Memory cgroup out of
    # memory:`), as the kernel, the kubelet (`SystemOOM`) and node-problem-detector
    # (`OOMKilling`) report it: the node's RAM ran out, whoever it killed.
    Signature(
        id="node.host-memory-exhausted-kernel",
        source="Linux mm/oom_kill.c ('Out of memory: Killed process'); kubelet SystemOOM event",
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
        source="kubelet pkg/kubelet/pleg/generic.go ('PLEG is not healthy'), node controller NodeNotReady events, kubelet node conditions",
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
        source="Linux drivers/pci/pcie/aer.c ('PCIe Bus Error: severity=Uncorrected (Fatal)')",
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
        source="Linux arch/x86/kernel/cpu/mce/ and drivers/edac/ (machine checks, uncorrected memory errors)",
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
        source="Linux kernel oops, hung-task and soft-lockup detectors; node-problem-detector KernelOops/TaskHung conditions",
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
        source="Linux fs/nfs ('nfs: server X not responding')",
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
        source="Kubernetes container status reason OOMKilled (kubectl describe, kube-state-metrics); Linux memcontrol.c",
        category="pod-lifecycle",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"\(OOMKilled\b|^pod \S+ OOMKilled:|Reason:\s+OOMKilled|Memory cgroup out of memory: Killed process",
        label=CONTAINER_OOM,
        traits=frozenset({Trait.OOM_KILL}),
    ),
    Signature(
        id="pod-lifecycle.health-probe-misconfigured-server",
        source="kubelet pkg/kubelet/prober/ ('HTTP probe failed with statuscode')",
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
        source="kubelet pkg/kubelet/images/ (ErrImagePull, ImagePullBackOff events)",
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
        source="kubelet pkg/volume/ (MountVolume.SetUp/MountDevice failed events)",
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
        source="kube-scheduler FailedScheduling messages ('Insufficient nvidia.com/gpu')",
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
        source="kube-scheduler FailedScheduling with node.kubernetes.io/not-ready, unreachable and pressure taints",
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
        source="kube-scheduler FailedScheduling (taints, node affinity/selector)",
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
        source="kube-scheduler Preempted event",
        category="capacity",
        kind="fault",
        layer=Layer.PODS,
        pattern=r"^Preempted: Preempted by |Preempted by (?:a )?pod \S* ?on node",
        label="pod preempted by the scheduler for a higher-priority pod",
        action="Give the serving pods a PriorityClass above the batch work that shares their GPUs (or a PodDisruptionBudget with dedicated nodes), so the scheduler does not preempt them.",
    ),
    Signature(
        id="gpu-fault.node-gpus-pod-given",
        source="kubelet device manager pkg/kubelet/cm/devicemanager/ (UnexpectedAdmissionError)",
        category="gpu-fault",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"UnexpectedAdmissionError: Allocate failed due to requested number of devices unavailable",
        label="the node's GPUs the pod was given are unavailable (device plugin: unhealthy or gone)",
    ),
    Signature(
        id="node.pod-sandbox-cannot-created",
        source="kubelet FailedCreatePodSandBox event (CRI, CNI errors)",
        category="node",
        kind="fault",
        layer=Layer.NODE,
        pattern=r"^FailedCreatePodSandBox: |failed to setup network for sandbox",
        label="pod sandbox cannot be created on the node (CNI or container runtime)",
        action="Repair the node's pod networking or container runtime (CNI plugin pods and logs, containerd) and cordon the node until a test pod starts on it.",
    ),
)
