"""The KV cache and its stores: block-pool invariants (vLLM V0/V1 asserts, TensorRT-LLM's checks),
LMCache-style stores, and the KV handed between prefill and decode instances."""

from __future__ import annotations

from forensics.diagnosis.catalog.entry import Layer, Signature, Trait
from forensics.diagnosis.catalog.labels import KV_STALE_READ

ENTRIES: tuple[Signature, ...] = (
    # --- KV cache / block manager (vLLM V0/V1 asserts, LMCache-style stores)
    Signature(
        id="kv-cache.kv-cache-corruption",
        source="KV stores behind vLLM's connectors (LMCache-style: 'Cache corruption detected in block N'), the incident this tool was built for",
        category="kv-cache",
        kind="fault",
        layer=Layer.MEMORY_KV,
        pattern=r"(?i)cache corruption detected|corrupt(?:ed)? (?:kv|block|cache)|stale (?:kv )?block",
        label="KV cache corruption",
    ),
    Signature(
        id="kv-cache.kv-block-pool-invariant",
        source="vLLM vllm/v1/core/block_pool.py, kv_cache_utils.py (FreeKVCacheBlockQueue), vllm/core/block/ (V0); TensorRT-LLM cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp, evictionPolicy.cpp (TLLM_CHECK)",
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
        source="LMCache lmcache/integration/vllm/vllm_v1_adapter.py (retrieve against lookup)",
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
        source="redis-py redis/exceptions.py and redis/connection.py ('Error N connecting to host:port')",
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
        source="vLLM vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py",
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
    # SGLang's scheduler checks, when it goes idle, that every KV slot is free or held by its radix
    # cache (python/sglang/srt/managers/scheduler.py, `check_memory`): slots neither free nor held
    # were lost by the allocator, and it raises.
    Signature(
        id="kv-cache.sglang-kv-pool-leak",
        source="SGLang python/sglang/srt/managers/scheduler.py (check_memory)",
        category="kv-cache",
        kind="fault",
        layer=Layer.MEMORY_KV,
        pattern=r"(?:token_to_kv_pool_allocator|token_to_kv_pool|req_to_token_pool) memory leak detected",
        label="SGLang's KV pool lost track of slots (memory leak detected by the scheduler's idle check)",
        action="Treat the outputs served before the leak as suspect, pin the SGLang version that does not leak "
        "(or turn off the feature whose path frees slots: radix cache, speculative decoding, hierarchical cache), and "
        "report the scheduler's `available_size` / `protected_size` numbers upstream.",
    ),
    # SGLang retracting running requests because the KV pool is full (scheduler.py,
    # `update_running_batch`): its preemption, which vLLM counts in its metrics line instead.
    Signature(
        id="kv-cache.sglang-kv-pool-full-retract",
        source="SGLang python/sglang/srt/managers/scheduler.py (update_running_batch: 'KV cache pool is full. Retract requests.')",
        category="kv-cache",
        kind="fault",
        layer=Layer.MEMORY_KV,
        pattern=r"KV cache pool is full\. Retract requests",
        label="SGLang's KV pool full: running requests retracted (recomputed later)",
    ),
    Signature(
        id="kv-cache.requests-produced-nan-logits",
        source="vLLM vllm/v1/metrics/loggers.py (Corrupted: N reqs, VLLM_COMPUTE_NANS_IN_LOGITS)",
        category="kv-cache",
        kind="fault",
        layer=Layer.MEMORY_KV,
        pattern=r"Corrupted: [1-9]\d* reqs",
        label="requests produced NaN logits (corrupted KV or numerics; VLLM_COMPUTE_NANS_IN_LOGITS)",
    ),
)
