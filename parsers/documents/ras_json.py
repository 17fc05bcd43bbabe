"""NCCL RAS reports in JSON (`ncclras -f json`, NCCL >= 2.28), as the text report's blocks.

Why: schedulers and training frameworks poll RAS with `-f json` (it is what a program
reads), so that is the form saved beside the logs after a hang. Its writer is
`src/ras/client_support.cc`; NCCL 2.28.9's omits the comma before a missing rank's
`status`, which makes the document invalid JSON: the comma is put back before reading.

    {"nccl_version": "2.28.9", "timestamp": "2026-06-19 06:55:57", "communicators_count": 1,
     "communicators": [{"hash": "0xa1349768e9517ed7", "size": 2, "ranks_count": 1, "missing_ranks_count": 1,
        "ranks": [{"rank": 0, "host": "10.0.77.184", "pid": 10018, "cuda_dev": 0, "nvml_dev": 0,
                   "status": {"init_state": 0, "async_error": 0, "finalize_called": false, ...},
                   "collective_counts": {"AllReduce": 4, ...}}],
        "missing_ranks": [{"rank": 1, "host": "10.0.77.184", "pid": 10017, "cuda_dev": 1, "nvml_dev": 1,
                           "status": {"unresponsive": true, "considered_dead": false}}]}],
     "ras": {"collection_time_sec": 0.000, "timeouts_count": 0}}

Each finding becomes the event the text report's block would (`parsers.nccl`, same words),
so `forensics.diagnosis.collectives.ras_findings` reads both forms alike: DEAD (a missing rank RAS
considers dead), INCOMPLETE (missing ranks that did not answer), ERROR (ranks with an
asynchronous or initialisation error), MISMATCH (ranks behind the others in a collective's
operation count). The report's own time (`timestamp`, the client's local clock: `--tz`)
times them; each sits at its communicator's line.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from parsers import schema as s
from parsers._common import as_dict, as_list, line_of, line_starts
from parsers.jsonutil import load_json
from parsers.nccl import RAS_COMPONENT

SNIFF = re.compile(r'^\s*\{\s*"nccl_version"\s*:')
"""The writer's first key (the text report starts with `Job summary`)."""
_KEYS = ('"communicators"', '"ranks"')
_MISSING_COMMA = re.compile(r'([\d"el\]}])(\s*\n\s*")')
"""A value at a line's end followed by a key on the next: the comma NCCL 2.28.9 leaves out."""

ERROR_MEANING = {
    1: "unhandled cuda error",
    2: "unhandled system error",
    3: "internal error",
    4: "invalid argument",
    5: "invalid usage",
    6: "remote process exited or there was a network error",
    7: "an operation in progress",
    8: "a timeout",
}
"""What each ncclResult_t (schema.NCCL_RESULT_NAMES) says, in ncclGetErrorString's words."""


def sniff(text: str) -> bool:
    return bool(SNIFF.match(text[:4096])) and all(k in text for k in _KEYS)


def parse_document(text: str, tz: str = "UTC") -> tuple[list[dict], list[str]]:
    """The report's events as row dicts (with `line`), and notes. Raises ValueError (with
    what to do) when the text is not a report that can be read."""
    notes: list[str] = []
    try:
        doc = load_json(text)
    except json.JSONDecodeError:
        try:
            doc = load_json(_MISSING_COMMA.sub(r"\1,\2", text))
        except json.JSONDecodeError as e:
            raise ValueError(f"ncclras JSON report not read ({e}); truncated? save `ncclras -f json` again") from None
        notes.append("ncclras JSON: commas NCCL's writer left out were put back (NCCL 2.28.9's missing_ranks status)")
    if not isinstance(doc, dict) or not isinstance(doc.get("communicators"), list):
        raise ValueError("ncclras JSON report not read: no `communicators` list")
    when = _time(doc.get("timestamp"), tz)
    starts = line_starts(text)
    base = {s.TS: when, s.SOURCE: "nccl", s.COMPONENT: RAS_COMPONENT}
    comms = [c for c in doc["communicators"] if isinstance(c, dict)]
    missing = sum(len(as_list(c.get("missing_ranks"))) for c in comms)
    head = (
        f"NCCL RAS report (NCCL {doc.get('nccl_version', '?')}): {len(comms)} communicator(s), "
        f"{missing} missing rank(s), {_int(as_dict(doc.get('ras')).get('timeouts_count')) or 0} RAS timeout(s)"
    )
    rows = [base | {s.LEVEL: "WARNING" if missing else "INFO", s.MESSAGE: head, s.LINE: 1}]
    cursor = 0
    for i, comm in enumerate(comms):
        tag = f"#{i}-0 ({str(comm.get('hash') or '0').removeprefix('0x') or '0'})"
        pos = text.find(str(comm.get("hash", "")), cursor) if comm.get("hash") else -1
        cursor = max(cursor, pos)
        line = line_of(starts, pos) if pos >= 0 else 1
        for level, msg in _blocks(tag, comm):
            rows.append(base | {s.LEVEL: level, s.MESSAGE: msg, s.LINE: line})
    return rows, notes


def _blocks(tag: str, comm: dict) -> list[tuple[str, str]]:
    """The text report's blocks for one communicator (`parsers.nccl` shows their shape)."""
    out: list[tuple[str, str]] = []
    missing = [m for m in as_list(comm.get("missing_ranks")) if isinstance(m, dict)]
    dead = [m for m in missing if as_dict(m.get("status")).get("considered_dead") is True]
    if dead:
        lines = [
            f"{len(dead)} job process{'es are' if len(dead) > 1 else ' is'} considered dead (unreachable via the RAS network)"
        ]
        lines += [
            f"Process {_int(m.get('pid'))} on node {m.get('host')} managing GPU {_int(m.get('cuda_dev'))}" for m in dead
        ]
        out.append(("ERROR", _block("DEAD", lines)))
    if missing:
        lines = [f"Missing communicator data from {len(missing)} rank{'s' if len(missing) > 1 else ''}"]
        lines += [f"Rank {_int(m.get('rank'))} -- {_where(m)}" for m in missing]
        out.append(("ERROR", _block(f"{tag} INCOMPLETE", lines)))
    ranks = [r for r in as_list(comm.get("ranks")) if isinstance(r, dict)]
    failing = []
    for r in ranks:
        st = as_dict(r.get("status"))
        for key, what in (("async_error", "Asynchronous"), ("init_state", "Initialization")):
            code = _int(st.get(key))
            if code:
                name = s.NCCL_RESULT_NAMES.get(code, f"ncclResult {code}")
                failing.append(
                    (
                        what,
                        f"Rank {_int(r.get('rank'))} reported {ERROR_MEANING.get(code, name)} ({name}) -- {_where(r)}",
                    )
                )
    for what in ("Asynchronous", "Initialization"):
        said = [line for w, line in failing if w == what]
        if said:
            out.append(
                (
                    "ERROR",
                    _block(f"{tag} ERROR", [f"{what} errors on {len(said)} rank{'s' if len(said) > 1 else ''}", *said]),
                )
            )
    out += [("WARNING", b) for b in _mismatches(tag, ranks)]
    return out


def _mismatches(tag: str, ranks: list[dict]) -> list[str]:
    """One MISMATCH block per collective whose operation count differs across ranks: the
    most common count's ranks summed up, the others listed."""
    counts: dict[str, dict[int, int]] = {}
    for r in ranks:
        for op, n in as_dict(r.get("collective_counts")).items():
            if _int(n) is not None and _int(r.get("rank")) is not None:
                counts.setdefault(str(op), {})[_int(r.get("rank"))] = _int(n)
    out = []
    by_rank = {_int(r.get("rank")): r for r in ranks}
    for op, per_rank in sorted(counts.items()):
        values = list(per_rank.values())
        if len(set(values)) < 2:
            continue
        usual = max(sorted(set(values), reverse=True), key=values.count)
        lines = [f"Communicator ranks have different {op} operation counts"]
        lines.append(f"{values.count(usual)} ranks have launched up to operation {usual}")
        for rank, n in sorted(per_rank.items()):
            if n != usual:
                lines.append(f"Rank {rank} has launched up to operation {n} -- {_where(by_rank[rank])}")
        out.append(_block(f"{tag} MISMATCH", lines))
    return out


def _block(head: str, lines: list[str]) -> str:
    return "\n".join([head, *(f"  {x}" for x in lines)])


def _where(r: dict) -> str:
    return f"GPU {_int(r.get('cuda_dev'))} managed by process {_int(r.get('pid'))} on node {r.get('host')}"


def _time(v: object, tz: str) -> datetime | None:
    try:
        return datetime.strptime(str(v), "%Y-%m-%d %H:%M:%S").replace(tzinfo=ZoneInfo(tz)).astimezone(UTC)
    except ValueError:
        return None


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None
