"""Reading the catalog: which entry a message matches, and the signals table of an incident's events.

The entries are in `forensics.diagnosis.catalog`; this module matches them fast (a polars
screen of every distinct line against all patterns, then Python's `re` on the few that can
match) and turns matches into rows. It re-exports the catalog's names its callers use.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import numpy as np
import polars as pl

from forensics import schema as s
from forensics.diagnosis.catalog import BY_ID, SIGNATURES, Layer, Signature, Trait, frames, traits_of
from forensics.diagnosis.catalog.labels import (
    DEEPEP_TIMEOUT,
    FD_EXHAUSTED,
    GPU_FAULT,
    HOST_OOM,
    KERNEL_EXCEPTION,
    SLOWDOWN,
    SOCKET_LOST,
)

__all__ = [
    "BY_ID",
    "DEEPEP_TIMEOUT",
    "EXCEPTION_LINE",
    "FD_EXHAUSTED",
    "GPU_FAULT",
    "HOST_OOM",
    "KERNEL_EXCEPTION",
    "SIGNATURES",
    "SLOWDOWN",
    "SOCKET_LOST",
    "Layer",
    "Signature",
    "Trait",
    "classify",
    "classify_text",
    "exception_line",
    "traits_of",
]

_COMPILED = [(sig, re.compile(sig.pattern)) for sig in SIGNATURES]
EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Fault)(?::.*)?$")


def classify_text(
    first_line: str, exception: str | None, maybe: Iterable[int] | None = None
) -> tuple[Signature | None, Signature | None]:
    """(signature of the message line, fault signature of its traceback's exception line).

    `maybe`: the indices of the signatures that can match the message line at all (a superset,
    in catalog order), when the caller has screened it; the first of them whose regex matches
    is its signature, as it would be scanning the whole catalog.
    """
    head = None
    for i in range(len(_COMPILED)) if maybe is None else maybe:
        sig, rx = _COMPILED[i]
        if rx.search(first_line):
            head = sig
            break
    tb = None
    if exception:
        for sig, rx in _COMPILED:
            if sig.kind == "fault" and rx.search(exception):
                tb = sig
                break
    return head, tb


_SCREENS = [sig.pattern.replace("(?!out of memory)", "") for sig in SIGNATURES]
"""Each signature's pattern for polars' regex engine, which has no lookahead: without it, a
superset of what Python's `re` matches with it (the patterns use nothing else the two read
differently), so a screen never hides a signature the catalog order would pick."""
_PROBE = "|".join(f"(?:{p})" for p in _SCREENS).replace("(?i)", "")
"""Any signature at all, in one pattern: the cheap first filter of `classify`."""


def _screen(first_lines: pl.Series) -> np.ndarray:
    """For each message line, which signatures can match it (a row of booleans in catalog order)."""
    frame = pl.DataFrame({"m": first_lines})
    hits = frame.select(pl.col("m").str.contains(p).alias(str(i)) for i, p in enumerate(_SCREENS))
    return hits.to_numpy()


def exception_line(message: str) -> str | None:
    """The last `SomeError: text` line of a multi-line message (a traceback's verdict).

    A bare `AssertionError` says nothing; the `assert` statement the traceback shows above it
    says what failed (vLLM's block pool guards its invariants with plain asserts), so it is
    given as the text: `AssertionError: assert curr_block is not None`.
    """
    return next(exception_lines(message), None)


def exception_lines(message: str) -> Iterator[str]:
    """Every `SomeError: text` line of a multi-line message, the last first (`exception_line`).

    One event can hold several: a chained exception (`The above exception was the direct
    cause of the following exception`), or a process's traceback and its parent's notice
    (`Engine core initialization failed. See root cause above`) folded together. The fault
    may be any of them, the notice never."""
    if "\n" not in message:
        return
    lines = message.split("\n")
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i].strip()
        if EXCEPTION_LINE.match(line):
            if line.endswith("AssertionError"):
                stmt = next((x.strip() for x in reversed(lines[:i]) if x.strip().startswith("assert ")), None)
                if stmt:
                    yield f"{line}: {stmt}"
                    continue
            yield line


def _traceback_fault(message: str, first: str, head: Signature | None) -> tuple[Signature | None, str | None]:
    """The fault a message's traceback names, and its exception line: the last exception line
    the catalog knows as a fault, else the last one whose frames name a layer (`frames.read`).
    (None, the last exception line) when neither."""
    excs = list(exception_lines(message))
    for exc in excs:
        tb = classify_text(first, exc, ())[1]
        if tb is not None:
            return tb, exc
    if head is None or head.kind != "fault":
        for exc in excs:
            read = frames.read(message, exc)
            if read is not None:
                return read
    return None, excs[0] if excs else None


ENGINE_PROCESS = r"^(?:EngineCore|VllmWorker|Worker|RayWorker|TP\d|DP\d|Scheduler|scheduler)"
"""The processes that run the model (vLLM's engine core and its workers, SGLang's TP/DP
schedulers), as the prefix of their lines names them; the API server's tracebacks are mostly
requests it refused, not the engine failing."""
LONE_TRACEBACK = "an engine process logged a traceback cut before its exception (its error is not in these logs)"


def _lone_tracebacks(events: pl.DataFrame, read: pl.Series) -> pl.DataFrame:
    """Error-level tracebacks of engine processes (`ENGINE_PROCESS`) that no row in `read` explains."""
    return (
        events.with_row_index("_ev")
        .filter(
            pl.col(s.LEVEL).is_in(["ERROR", "CRITICAL"])
            & pl.col(s.PROCESS).cast(pl.String).str.contains(ENGINE_PROCESS).fill_null(False)
            & pl.col(s.MESSAGE).str.contains("(?m)" + frames.FRAME.pattern)
            & ~pl.col("_ev").is_in(read.implode())
        )
        .select("_ev", s.MESSAGE)
    )


def classify(events: pl.DataFrame) -> pl.DataFrame:
    """One row per event that matches a signature: category, kind, layer, label, text.

    Columns of `events` used: message, http_status, level, source. Events without a
    signature are not returned (most lines are not evidence). An engine crash whose
    traceback ends in a fault yields two rows: the fault (text = exception line) and
    the symptom.
    """
    # Cheap pre-filter: only lines that can match anything are examined in Python.
    cand = events.with_row_index("_ev").filter(
        pl.col(s.MESSAGE).str.contains(_PROBE) | pl.col(s.MESSAGE).str.to_lowercase().str.contains("corrupt|stale")
    )
    rows = []
    # A flood repeats its message verbatim (a warning every few seconds, a probe failing): each
    # distinct message is read once. The ~40 regexes of the catalog cost ~1 µs each a message in
    # Python's `re`; polars screens every distinct line against all of them in one pass, so a
    # line meets in Python only the few that can match it.
    distinct = cand.select(pl.col(s.MESSAGE).unique(maintain_order=True))[s.MESSAGE]
    firsts = distinct.str.split_exact("\n", 1).struct.field("field_0")
    screen = _screen(firsts)
    seen: dict[str, tuple[str, str | None, Signature | None, Signature | None]] = {}
    for k, (msg, first) in enumerate(zip(distinct, firsts, strict=True)):
        head = classify_text(first, None, np.flatnonzero(screen[k]).tolist())[0]
        tb, exc = _traceback_fault(msg, first, head)
        seen[msg] = (first, exc, head, tb)
    for idx, msg in cand.select("_ev", s.MESSAGE).iter_rows():
        first, exc, head, tb = seen[msg]
        if tb is not None and (head is None or head.kind != "fault"):
            rows.append((idx, tb.category, tb.kind, tb.layer, tb.label, exc))
        if head is not None and Trait.NO_ACTION not in head.traits:
            rows.append((idx, head.category, head.kind, head.layer, head.label, first))
    # An engine process's traceback that nothing above read: the engine failed, and these logs
    # do not say why (cut before its exception, or an exception raised outside the known layers).
    read = pl.Series("_ev", [r[0] for r in rows], dtype=pl.UInt32)
    lone = (
        _lone_tracebacks(events, read)
        if {s.LEVEL, s.PROCESS} <= set(events.columns)
        else pl.DataFrame(schema={"_ev": pl.UInt32, s.MESSAGE: pl.String})
    )
    for idx, msg in lone.iter_rows():
        exc = exception_line(msg)
        label = (
            LONE_TRACEBACK
            if exc is None
            else f"an engine process raised {exc.split(':', 1)[0]} outside the layers the catalog reads"
        )
        rows.append((idx, "engine", "symptom", int(Layer.ENGINE), label, exc or msg.split("\n", 1)[0]))
    sig = pl.DataFrame(
        rows,
        schema={
            "_ev": pl.UInt32,
            "category": pl.String,
            "kind": pl.String,
            "layer": pl.Int32,
            "label": pl.String,
            "text": pl.String,
        },
        orient="row",
    )
    # HTTP 5xx access lines: user-visible impact.
    errs = (
        events.with_row_index("_ev")
        .filter(pl.col(s.HTTP_STATUS) >= 500)
        .select(
            "_ev",
            pl.lit("request-errors").alias("category"),
            pl.lit("impact").alias("kind"),
            pl.lit(6, pl.Int32).alias("layer"),
            pl.lit("HTTP 5xx responses").alias("label"),
            pl.col(s.MESSAGE).str.replace(r"^\S* - ", "").alias("text"),
        )
    )
    return pl.concat([sig, errs]).sort("_ev")
