"""What stops a new pod (often a rollout's) from ever serving: GPU memory at engine start, model
weights and config, caches a read-only filesystem refuses, torch.compile."""

from __future__ import annotations

from forensics.diagnosis.catalog.entry import Layer, Signature, Trait
from forensics.diagnosis.catalog.labels import PD_MISMATCH

ENTRIES: tuple[Signature, ...] = (
    # --- engine start: what stops a new pod (often a rollout) from ever serving
    Signature(
        id="gpu-memory.no-gpu-memory-left",
        source="vLLM vllm/v1/worker/gpu_worker.py and utils (memory profiling, 'less than desired GPU memory utilization')",
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
        source="huggingface_hub errors (GatedRepoError, RepositoryNotFoundError, LocalEntryNotFoundError); vLLM model loader; safetensors",
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
        source="vLLM vllm/model_executor/models/registry.py and vllm/config (architecture, tensor-parallel and max_model_len checks)",
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
        source="vLLM nixl_connector.py (handshake: compatibility hash, engine id)",
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
        source="Linux EACCES/EROFS on the caches vLLM, Triton and Hugging Face write (~/.cache, ~/.triton)",
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
        source="PyTorch torch/_dynamo/exc.py (BackendCompilerFailed)",
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
        source="glibc getaddrinfo errors (EAI_AGAIN, EAI_NONAME) as Python reports them",
        category="network",
        kind="fault",
        layer=Layer.NETWORK,
        pattern=r"Temporary failure in name resolution|\[Errno -[25]\] (?:Name or service not known|Name has no usable address)"
        r"|: lookup \S+ on [\d.:\[\]a-f]+: (?:no such host|server misbehaving|read udp \S+->\S+: i/o timeout)",
        label="DNS resolution failed (cluster DNS / CoreDNS, or a name that does not exist)",
        action="Check cluster DNS (CoreDNS pods' logs and load, `kubectl -n kube-system get pods -l k8s-app=kube-dns`) "
        "and the name the pod looked up (a Service that exists in its namespace); alert on CoreDNS errors.",
    ),
)
