"""What to do about a cause, and what to collect when the logs do not name one.

Every sentence of advice the postmortem gives lives here or on its catalog entry
(`Signature.action`): the action item of each category, the fixes of the causes the ranking
itself names (a probe that killed a serving engine, a fault on many GPUs), why a symptom is
not a cause, and what log would decide an inconclusive verdict.
"""

from __future__ import annotations

from forensics.diagnosis import signatures
from forensics.diagnosis.catalog import frames

PROBE_KILL_LABEL = "liveness probe timed out on an engine that was serving: the kubelet restarted a working pod"
PROBE_KILL_ACTION = (
    "Stop the liveness probe from killing a busy engine: a longer `timeoutSeconds` and `failureThreshold` on "
    "`/health`, a startupProbe for model load, and readiness (not liveness) to take an overloaded pod out of "
    "rotation; alert on restarts whose previous container was serving."
)
STARTUP_KILL_LABEL = (
    "the kubelet's probe killed the container while its engine was still starting (loading the model): "
    "the probe allows less time than the start-up takes"
)
STARTUP_KILL_ACTION = (
    "Give the pod a startupProbe on `/health` whose `failureThreshold` x `periodSeconds` exceeds the engine's "
    "start-up (weights download and load, profiling, CUDA graph capture) with room to spare, and keep the "
    "liveness probe from running until it passes; cache the weights on a local volume to shorten the start."
)
SOFTWARE_FAULT_LABEL = "the same CUDA fault on several GPUs at once: a kernel bug or a request that crashes every replica it reaches, not one GPU's hardware"
SOFTWARE_FAULT_ACTION = (
    "Treat it as a software fault: find the request each replica was running when it crashed (the same prompt, "
    "length or sampling parameters?) and replay it on one replica with `CUDA_LAUNCH_BLOCKING=1`; roll back the "
    "vLLM/torch/driver version or the kernel option (attention backend, CUDA graphs) that changed, and shed that "
    "request at the gateway until it is fixed."
)

ACTIONS = {
    "kv-cache": "Fix the KV-cache eviction policy: never evict or reuse a block whose reference count is above zero, and drop its hash when it is reused. Add the replay of this incident's trace as a regression test (`forensics replay --compare`).",
    "network": "Take {host} out of service and repair its InfiniBand path (cable/HCA/switch port); run `ib_write_bw` and the NCCL tests before returning it.",
    "gpu-memory": "Bound memory per request: lower `max_model_len` / `max_num_batched_tokens` or `gpu_memory_utilization`, and reject oversized prompts at the gateway.",
    "gpu-fault": "Drain {host}, run DCGM diagnostics (level 3) and RMA the GPU if the XID recurs.",
    "node": "Find why the kubelet on {host} stopped (PLEG: container runtime health, disk, memory) and add node-problem-detector remediation.",
    "capacity": "Add capacity or autoscale on `vllm:num_requests_waiting` and KV usage; set an admission limit so overload queues at the gateway instead of preempting.",
    "config-change": "Roll back the change and gate future rollouts on a canary that watches throughput and errors.",
    "engine": "Find the exception that killed the engine (see evidence) and add a regression test for it.",
}

ACTIONS_BY_LABEL = {sig.label: sig.action for sig in signatures.SIGNATURES if sig.action} | {
    PROBE_KILL_LABEL: PROBE_KILL_ACTION,
    STARTUP_KILL_LABEL: STARTUP_KILL_ACTION,
    SOFTWARE_FAULT_LABEL: SOFTWARE_FAULT_ACTION,
}
"""Where one category holds faults that call for different fixes, the label picks the action."""

SYMPTOM_OF = {
    "collective-timeout": "a collective that never completed: a rank died, hung or lost its network first, "
    "and the watchdog only reports the wait",
    "engine": "the engine dies of a failure in a worker or the GPU; its own error is the news of it",
    "pod-lifecycle": "probes fail and pods restart after a process crashed or hung",
    "capacity": "preemptions follow a full KV cache; they do not fill it",
    "kv-cache": "a KV transfer decode never finished or had to redo: the transfer path, the other instance or "
    "decode's queue failed first",
}
"""Why a symptom of each category cannot be a root cause, said when no cause was found."""

ASK_FOR = {
    "collective-timeout": "logs from every rank and node (the one that failed first is missing) and the KV store",
    "engine": "the engine's full traceback (the worker's log lines before the engine died)",
    "capacity": "the engine's metrics lines (KV cache usage, running and waiting requests) and the request rate, "
    "to tell an overload from a leak",
    "pod-lifecycle": "the crashed container's own log (`kubectl logs --previous POD`) and its Last State in "
    "`kubectl describe pod` (reason, exit code)",
    "kv-cache": "the logs of both sides of the KV transfer (the decode instances' too: their transfer errors and "
    "queue) with UCX's errors (`UCX_LOG_LEVEL=error`)",
}
"""What to collect next when only symptoms of a category were logged: where their cause is."""


def action_for(category: str, label: str | None) -> str | None:
    """The action item for a root cause: its own (by the catalog entry or ranking rule that named
    it), else its category's; `{host}` is left for the report to fill."""
    if label and frames.is_uncatalogued(label):
        return frames.action_for(label)
    return ACTIONS_BY_LABEL.get(label) or ACTIONS.get(category)
