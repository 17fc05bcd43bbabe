"""What follows a fault: collective timeouts, the engine dying, KV transfers unfinished,
preemptions, gateways finding no backend, evictions, probes and restarts."""

from __future__ import annotations

from forensics.diagnosis.catalog.entry import Layer, Signature, Trait
from forensics.diagnosis.catalog.labels import DEEPEP_TIMEOUT, KV_TRANSFER_UNFINISHED

ENTRIES: tuple[Signature, ...] = (
    # --- symptoms
    Signature(
        id="collective-timeout.nccl-watchdog-timeout",
        source="PyTorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (watchdog)",
        category="collective-timeout",
        kind="symptom",
        layer=Layer.COLLECTIVES,
        pattern=r"Watchdog caught collective operation timeout|failure detected by watchdog|NCCL communicator was aborted|Terminating the process after attempting to dump debug info|flight[- ]recorder dump signal|Some NCCL operations have failed or timed out|To avoid data inconsistency|Heartbeat monitor timed out|watchdog got stuck|watchdog thread terminated|Timeout at NCCL work|detected by watchdog|DistBackendError|dump signal due to a collective timeout",
        label="NCCL watchdog timeout",
    ),
    Signature(
        id="collective-timeout.nccl-bus-bandwidth-gpu",
        source="NCCL Inspector's Prometheus output (parsers/documents/prometheus.py)",
        category="collective-timeout",
        kind="symptom",
        layer=Layer.COLLECTIVES,
        pattern=r"^nccl_bus_bandwidth_gbs fell to ",
        label="NCCL bus bandwidth of a GPU collapsed (NCCL Inspector)",
    ),
    Signature(
        id="collective-timeout.deepep-expert-all-all",
        source="DeepEP csrc/kernels/ (timeout checks)",
        category="collective-timeout",
        kind="symptom",
        layer=Layer.COLLECTIVES,
        pattern=r"DeepEP timeout check failed|DeepEP error: (?:CPU recv timeout|timeout \()",
        label=DEEPEP_TIMEOUT,
    ),
    Signature(
        id="collective-timeout.shared-memory-broadcast-stall",
        source="vLLM vllm/distributed/device_communicators/shm_broadcast.py",
        category="collective-timeout",
        kind="symptom",
        layer=Layer.COLLECTIVES,
        pattern=r"No available (?:shared memory broadcast )?block found in \d+ second",
        label="shared-memory broadcast stall",
    ),
    Signature(
        id="collective-timeout.collectives-out-step-flight",
        source="PyTorch torch/distributed/flight_recorder (fr_trace analysis output)",
        category="collective-timeout",
        kind="symptom",
        layer=Layer.COLLECTIVES,
        pattern=r"^(?:Not all ranks joining collective\b|Collective sequence number: \d+ has errors|Collective \d+ at entry \d+ "
        r"errors|Input/output mismatch in the collective\b|flight recorder: rank \d+'s .*\bnot completed \()",
        label="collectives out of step (flight recorder)",
    ),
    Signature(
        id="collective-timeout.nccl-ras-process-dead",
        source="NCCL src/ras/ (ncclras client report)",
        category="collective-timeout",
        kind="symptom",
        layer=Layer.COLLECTIVES,
        pattern=r"^(?:DEAD|INCOMPLETE|#\d+-\d+ \([0-9a-f]+\) (?:INCOMPLETE|ERROR|MISMATCH))\s*$",
        label="NCCL RAS: a process dead, silent or out of step",
    ),
    Signature(
        id="engine.engine-died",
        source="vLLM vllm/v1/engine/core.py, core_client.py, async_llm.py, exceptions.py; torch.distributed.elastic; SGLang scheduler and detokenizer; Ray actor errors",
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
        source="vLLM nixl_connector.py ('Releasing expired KV blocks') and KV load-failure recovery",
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
        source="vLLM V0 vllm/core/scheduler.py (preemption warning)",
        category="capacity",
        kind="symptom",
        layer=Layer.MEMORY_KV,
        pattern=r"is preempted by PreemptionMode\.\w+ mode because there is not enough KV cache space",
        label="requests preempted for lack of KV cache space",
    ),
    Signature(
        id="pod-lifecycle.gateway-found-no-healthy",
        source="Envoy response flags (UH, no_healthy_upstream); nginx 'no live upstreams'",
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
        source="nginx ngx_http_upstream ('connect() failed (111: Connection refused) while connecting to upstream')",
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
        source="nginx ngx_http_upstream ('upstream timed out (110: Connection timed out)')",
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
        source="kubelet pkg/kubelet/eviction/ (Evicted: 'The node was low on resource')",
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
        source="kubelet pkg/kubelet/nodeshutdown/ (graceful node shutdown)",
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
        source="kubelet pkg/kubelet/eviction/ (ephemeral-storage limits)",
        category="pod-lifecycle",
        kind="fault",
        layer=Layer.PODS,
        pattern=r"Pod ephemeral local storage usage exceeds the total limit|Container \S+ exceeded its local ephemeral storage limit",
        label="pod evicted for exceeding its ephemeral-storage limit (model or compile cache on the container's disk)",
    ),
    Signature(
        id="pod-lifecycle.pod-probes-restarts",
        source="kubelet events (BackOff, Killing, Unhealthy) and pkg/kubelet/prober/",
        category="pod-lifecycle",
        kind="symptom",
        layer=Layer.PODS,
        pattern=r"^BackOff:|CrashLoopBackOff|^Killing: Container \S+ failed|^Unhealthy:|Probe failed|Liveness probe failed|Readiness probe failed|Startup probe failed|ContainerDied|^FailedScheduling:|TaintManagerEviction|Marking for deletion|^Evicted:|Node is not ready",
        label="pod probes / restarts",
    ),
)
