"""How a line that continues the record above it looks, by its text alone.

A multi-line record (a traceback, a C++ stack, an exception whose message has several lines)
reaches us one physical line at a time, and often without what joined its lines: vLLM ends each
line but the last with `\\r`, which a paste into an issue, a log shipper or an editor drops;
PyTorch's `[rank0]:` prefix is on every line alike. Then only the text says that `For debugging
consider passing CUDA_LAUNCH_BLOCKING=1` belongs to the CUDA error above it rather than being
an error of its own: each such line, left alone, became an ERROR event and a template of its own,
nine for one crash.

Only text no logger starts a record with belongs here: each head is what Python, c10, NCCL or
asyncio write *inside* a record, under its first line.
"""

from __future__ import annotations

import re

LITERALS = (
    "Traceback (most recent call last)",
    "The above exception was",  # Python's chained exceptions
    "During handling of the above",
    "Exception raised from ",  # c10::Error's location, over its `frame #N:` stack
    "terminate called ",  # std::terminate, after an uncaught C++ exception
    "Last error:",  # NCCL's DistBackendError: `ncclSystemError: ...` / `Last error:` / what failed
    # torch's message under `RuntimeError: CUDA error: ...` (HIP's on ROCm)
    "CUDA kernel errors might be asynchronously reported",
    "HIP kernel errors might be asynchronously reported",
    "For debugging consider passing ",
    "Compile with `TORCH_USE_",
    "Search for `cuda",
    # asyncio's exception handler: its context under the message, one `key: repr` a line
    # (`Task exception was never retrieved` / `future: <Task ...>`), then the traceback
    "future: <",
    "task: <",
    "handle: <",
    "protocol: <",
    "transport: <",
    "socket: <",
    "asyncgen: <",
    "Extension modules: ",  # faulthandler's dump after `Fatal Python error: ...`, its last line
    "==== backtrace (tid:",  # UCX's handler, under `Caught signal 11 (...)`
)
"""Texts a continuation line begins with."""

PATTERNS = {
    "frame #": r"\d+:",  # a C++ stack frame (c10, the NCCL watchdog)
    "Process ": r"[\w\-]+:$",  # multiprocessing's `Process SpawnProcess-1:` over a child's traceback
    "source_traceback: ": r"\w+ created at",  # asyncio, in debug mode
    "handle_traceback: ": r"\w+ created at",
    "Current thread 0x": r"[0-9a-f]+ \(most recent call first\):",  # faulthandler, each thread's stack
    "Thread 0x": r"[0-9a-f]+ \(most recent call first\):",
}
"""Literal heads whose continuation lines need more than the head: head -> the regex after it.
(The fast lane, which tests heads byte by byte, leaves a line with one of these heads to the
general path.)"""

_ALTERNATIVES = (
    r"\s|\^+\s*$|"  # an indented line (a traceback's body); the carets under a Python 3.11+ frame
    + "|".join(re.escape(t) for t in LITERALS)
    + "|"
    + "|".join(re.escape(h) + rest for h, rest in PATTERNS.items())
)

FRAME_LINE = r"[0-9]+ +0x[0-9a-f]+ "
"""A frame of a native backtrace printed under the error line that threw it, with no header of
its own: TensorRT-LLM's `TllmException` (`2       0x7f3a74a01c2e tensorrt_llm::...`), UCX's
handler (`1 0x00000000010d475f createInferRuntime_INTERNAL()  ???:0`). Physical lines only: no
logger starts a message so, and the fast lane, which reads messages, need not know it."""

LINE = rf"^(?:{_ALTERNATIVES}|{FRAME_LINE})"
"""A physical line (its producer's prefix peeled) that continues the record above it."""

MESSAGE = rf"^(?:$|{_ALTERNATIVES})"
"""A vLLM message that continues the message above it with the same header (level, time, file
and line: one record's lines). An empty one too: a logger writes no empty record, but a message
holds blank lines (between chained tracebacks, after a C++ stack)."""
