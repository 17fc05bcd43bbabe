"""What a traceback's frames say when no entry names its exception: which layer raised it.

An engine's own exception that nobody catalogued (a grammar that fails to compile, a KV
offload connector losing track of a block, a sampler error) still says where it failed: the
innermost frame in a serving package's module names the layer (`vllm/v1/core/block_pool.py`
is the KV cache, `vllm/v1/structured_output/` the grammar backend). Each area below is a
package path as the projects lay out their sources (vLLM `vllm/`, SGLang `python/sglang/srt/`,
TensorRT-LLM `tensorrt_llm/`, LMCache `lmcache/`, Mooncake `mooncake/`, NIXL `nixl/`, PyTorch
`torch/distributed/`), most specific first.

A fault read this way is `Trait.UNCATALOGUED`: the ranking puts it below any catalogued cause
(`rootcause`), because a known fault's text is stronger evidence than where an unknown one
was raised.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from forensics.diagnosis.catalog.entry import Layer, Signature, Trait
from forensics.schema import Category


@dataclass(frozen=True, kw_only=True)
class Area:
    """A package path and what failing there means."""

    path: str
    """Regex searched in a frame's file path."""
    name: str
    """How the report names the area: `KeyError in vLLM's KV offload`."""
    category: Category
    layer: Layer


AREAS: tuple[Area, ...] = (
    # The KV cache and what moves it: vllm/v1/core/{kv_cache_manager,kv_cache_coordinator,
    # kv_cache_utils,block_pool,single_type_kv_cache_manager}.py, the connectors and offload.
    Area(
        path=r"vllm/v1/core/(?:kv_cache_\w+|block_pool|single_type_kv_cache_manager)\.py",
        name="vLLM's KV cache manager",
        category="kv-cache",
        layer=Layer.MEMORY_KV,
    ),
    Area(path=r"vllm/v1/kv_offload/", name="vLLM's KV offload", category="kv-cache", layer=Layer.MEMORY_KV),
    Area(
        path=r"vllm/distributed/kv_transfer/|/kv_connector/",
        name="vLLM's KV connector",
        category="kv-cache",
        layer=Layer.MEMORY_KV,
    ),
    Area(path=r"(?:^|/)lmcache/", name="LMCache", category="kv-cache", layer=Layer.MEMORY_KV),
    Area(path=r"(?:^|/)mooncake/", name="the Mooncake transfer engine", category="kv-cache", layer=Layer.MEMORY_KV),
    Area(path=r"(?:^|/)nixl/|/nixl_", name="NIXL", category="kv-cache", layer=Layer.MEMORY_KV),
    Area(path=r"sglang/srt/mem_cache/", name="SGLang's KV memory pool", category="kv-cache", layer=Layer.MEMORY_KV),
    Area(
        path=r"tensorrt_llm/.*kv_cache|tensorrt_llm/_torch/pyexecutor/resource_manager",
        name="TensorRT-LLM's KV cache manager",
        category="kv-cache",
        layer=Layer.MEMORY_KV,
    ),
    # vLLM's own communicators (custom all-reduce, pynccl, the shared-memory broadcast). Not
    # torch/distributed: what it raises is the collective's failure as a rank saw it (a
    # timeout, a lost store), catalogued as such, and a symptom of whatever stopped the peer.
    Area(
        path=r"vllm/distributed/device_communicators/",
        name="the distributed communicators",
        category="engine",
        layer=Layer.COLLECTIVES,
    ),
    # The engine's own stages.
    Area(
        path=r"vllm/v1/structured_output/|vllm/model_executor/guided_decoding/|(?:^|/)xgrammar/|(?:^|/)outlines/",
        name="structured output (grammar compilation)",
        category="engine",
        layer=Layer.ENGINE,
    ),
    Area(
        path=r"vllm/v1/sample/|vllm/model_executor/layers/sampler|sglang/srt/layers/sampler",
        name="the sampler",
        category="engine",
        layer=Layer.ENGINE,
    ),
    Area(path=r"vllm/v1/core/sched/", name="vLLM's scheduler", category="engine", layer=Layer.ENGINE),
    Area(path=r"sglang/srt/managers/scheduler", name="SGLang's scheduler", category="engine", layer=Layer.ENGINE),
    Area(
        path=r"vllm/model_executor/|vllm/v1/worker/|vllm/worker/|sglang/srt/model_executor/",
        name="the model runner",
        category="engine",
        layer=Layer.ENGINE,
    ),
    Area(path=r"tensorrt_llm/", name="TensorRT-LLM's executor", category="engine", layer=Layer.ENGINE),
    Area(path=r"vllm/v1/engine/|vllm/engine/|sglang/srt/", name="the engine", category="engine", layer=Layer.ENGINE),
)

_AREAS = [(a, re.compile(a.path)) for a in AREAS]
FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)', re.M)
"""A Python traceback frame, as `traceback` prints it."""


NOTICES = frozenset(
    {
        "EngineDeadError",
        "AsyncEngineDeadError",
        "EngineGenerateError",
        "CancelledError",
        "KeyboardInterrupt",
        "SystemExit",
    }
)
"""Exceptions that report an earlier failure or a stop, not a fault of where they were raised:
vLLM's `EngineDeadError` says "See stack trace (above) for the root cause"."""
SEE_ABOVE = re.compile(r"(?i)see (?:the )?(?:root cause|stack trace|error|logs?)\W*(?:\(?above\)?)")
"""A message that points back at the real error: `Engine core initialization failed. See root
cause above.` (vLLM's core client)."""


def read(message: str, exception: str) -> tuple[Signature, str] | None:
    """The fault an uncatalogued traceback shows, by the innermost frame in a known area, and
    its text: the exception line with where it was raised. None when no frame is in one, or
    when the exception only reports an earlier failure (`NOTICES`)."""
    exc_type = exception.split(":", 1)[0].rsplit(".", 1)[-1]
    if exc_type in NOTICES or SEE_ABOVE.search(exception):
        return None
    frames = FRAME.findall(message)
    for path, line, func in reversed(frames):
        for area, rx in _AREAS:
            if rx.search(path):
                where = _short(path)
                return _signature(exc_type, area), f"{exception} (raised at {where}:{line} in {func})"
    return None


def _short(path: str) -> str:
    """The path from its package on (`vllm/v1/kv_offload/cpu.py`): site-packages prefixes vary by image."""
    m = re.search(r"(?:^|/)((?:vllm|sglang|tensorrt_llm|lmcache|mooncake|nixl|torch|xgrammar|outlines)/.*)$", path)
    return m.group(1) if m else path.rsplit("/", 1)[-1]


@cache
def _signature(exc_type: str, area: Area) -> Signature:
    slug = re.sub(r"[^a-z0-9]+", "-", area.name.lower()).strip("-")
    return Signature(
        id=f"{area.category}.uncatalogued.{slug}.{exc_type.lower()}",
        category=area.category,
        kind="fault",
        layer=area.layer,
        pattern=re.escape(exc_type),
        label=f"{exc_type} raised in {area.name}{UNCATALOGUED}",
        traits=frozenset({Trait.UNCATALOGUED}),
        source="the traceback's innermost frame in a known area (catalog.frames), no catalog text",
    )


UNCATALOGUED = " (no catalog entry names it: read from the traceback's frames)"
"""How the labels `read` makes end: what tells them apart from the catalog's, in any process
(a report re-rendered from analysis.json has only the label)."""
_LABEL = re.compile(r"^(?P<exc>\w+) raised in (?P<area>.+)" + re.escape(UNCATALOGUED) + "$")


def is_uncatalogued(label: str) -> bool:
    """Whether a hypothesis' label is one `read` made (its traits are not in the catalog's table)."""
    return label.endswith(UNCATALOGUED)


def action_for(label: str) -> str | None:
    """The action item for a fault `read` named: find what makes that area raise, and report it."""
    m = _LABEL.match(label)
    if not m:
        return None
    return (
        f"Find what makes {m['area']} raise `{m['exc']}`: the traceback in the evidence shows the call, and the "
        "request or feature it served (its prompt, sampling or grammar parameters, the connector or offload "
        "options) is what to reproduce on one replica. Until it is fixed, turn that feature off or roll back the "
        "version that brought it, and report the traceback upstream."
    )
