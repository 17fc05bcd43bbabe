"""PyTorch flight-recorder dumps: the per-rank trace files c10d writes on a watchdog timeout.

Why: "which rank is missing beats which rank timed out" (prior-art-and-root-cause.md §1).
With `TORCH_NCCL_DUMP_ON_TIMEOUT` each rank writes its ring buffer of recent collectives to
`TORCH_NCCL_DEBUG_INFO_TEMP_FILE<rank>` (default `/tmp/nccl_trace_rank_<rank>`); engineers
copy them beside the logs, and `torchfrtrace` is often not at hand. Reading them here lets
the analysis name the rank that never enqueued the collective the others wait in
(`forensics.diagnosis.collectives.dump_findings`).

A dump is a pickle (protocol 2, torch >= 2.4) or, from `_dump_nccl_trace_json` /
`_dump_fr_trace_json`, the same dictionary as JSON without stacks:

    {"version": "2.10", "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},
     "pg_status": {"0": {"last_enqueued_collective": 5, "last_started_collective": 4,
                         "last_completed_collective": 4}},
     "entries": [{"record_id": 4, "pg_id": 0, "process_group": ("0", "default_pg"),
                  "collective_seq_id": 5, "p2p_seq_id": 0, "profiling_name": "nccl:all_reduce",
                  "time_created_ns": 1796150574687685250, "input_sizes": [[8]], "input_dtypes": ["Float"],
                  "state": "scheduled", "retired": False, "is_p2p": False, "timeout_ms": 600000, ...}]}

The pickle is read by an unpickler that resolves no Python name but the identity helpers
torch's own pickler may refer to (`torch.jit._pickle.build_intlist`, ...): loading a
user-supplied pickle must never run code. The rank is not inside a dump; it is the number
its file name ends with, as `torchfrtrace` reads it.

Events (source `torch`, component `FLIGHT_DUMP_COMPONENT`, exact times from
`time_created_ns`): for each process group, the rank's last collective (`LAST`: its sequence
number, op, and whether it completed), and each other collective or p2p op still in flight
when the dump was taken. A dump's "lines" are its records: 1 is the header (version, groups,
status), entry *i* (0-based) is line *i* + 2, so evidence reads `nccl_trace_rank_3:2001`.
"""

from __future__ import annotations

import io
import pickle
import re
import reprlib
from dataclasses import dataclass, field
from datetime import UTC, datetime

from parsers import schema as s
from parsers._common import as_dict
from parsers.jsonutil import load_json

FLIGHT_DUMP_COMPONENT = "flight_recorder_dump"
"""The `component` of a dump's events (`forensics.diagnosis.collectives.dump_findings` reads them)."""

LAST = (
    r"^flight recorder: rank (?P<rank>\d+)'s last collective of PG (?P<pg>\S+) \((?P<desc>[^;]*); ranks "
    r"\[(?P<ranks>[\d, ]*)\]\) is #(?P<seq>\d+) (?P<op>\S+) (?P<what>.*?), (?P<state>completed|not completed "
    r"\((?P<phase>\w+)\))"
)
"""A group's summary event: the rank's last collective in that group, and whether it completed."""
IN_FLIGHT = "not completed"
"""The words every in-flight event carries (`forensics.diagnosis.signatures` classifies them)."""

_PICKLE_PROTOCOLS = (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")
SNIFF_BYTES = 1 << 20
"""Where a dump shows itself: its groups' config, or an entry's `profiling_name` (the first
entry, when a torch version writes the entries first)."""
_SAFE_GLOBALS = {
    ("torch.jit._pickle", name)
    for name in ("build_intlist", "build_doublelist", "build_boollist", "build_tensorlist", "restore_type_tag")
}
"""The only names a dump may refer to: torch's pickler tags typed lists with them; each
returns its first argument."""
_RANK_IN_NAME = re.compile(r"(\d+)$")
_SUFFIXES = (".gz", ".json", ".pkl", ".pickle", ".pt", ".bin", ".dump")


def sniff(data: bytes) -> str | None:
    """`pickle` or `json` when `data` looks like a flight-recorder dump, else None."""
    head = data[:SNIFF_BYTES]
    if head.startswith(_PICKLE_PROTOCOLS):
        return "pickle" if b"pg_config" in head or b"profiling_name" in head else None
    stripped = head.lstrip()
    if stripped.startswith(b"{") and b'"pg_config"' in head and b'"entries"' in data:
        return "json"
    return None


class _Refused(pickle.UnpicklingError):
    pass


class _DumpUnpickler(pickle.Unpickler):
    """An unpickler that builds dicts, lists, tuples, strings and numbers, and nothing else."""

    def find_class(self, module: str, name: str):  # noqa: ANN201 - pickle's own signature
        if (module, name) in _SAFE_GLOBALS:
            return _first
        raise _Refused(f"it refers to Python code ({module}.{name}), which is never loaded")


def _first(value: object, *_: object) -> object:
    return value


@dataclass
class Dump:
    """One rank's dump: what `rows` turns into events."""

    rank: int | None
    version: str
    groups: dict[str, dict]
    """pg_config: group name -> {"name", "desc", "ranks"}."""
    status: dict[str, dict]
    entries: list[dict]
    notes: list[str] = field(default_factory=list)

    @property
    def records(self) -> int:
        """Its "lines": the header, then one per entry."""
        return 1 + len(self.entries)


def read(data: bytes, kind: str, name: str) -> Dump:
    """The dump in `data` (`kind` from `sniff`), its rank from the file `name`. Raises
    ValueError with what to do next when it is not a dump that can be read."""
    try:
        if kind == "pickle":
            raw = _DumpUnpickler(io.BytesIO(data)).load()
        else:
            raw = load_json(data)
    except _Refused as e:
        raise ValueError(f"flight-recorder dump not read: {e}") from None
    except Exception as e:  # noqa: BLE001 - a truncated or corrupt dump is bad input, not a crash
        raise ValueError(
            f"flight-recorder dump not read ({type(e).__name__}: {str(e)[:120]}); truncated? copy it again from the node"
        ) from None
    if not isinstance(raw, dict) or not isinstance(raw.get("entries", []), list):
        raise ValueError("flight-recorder dump not read: not the dictionary torch writes (no `entries` list)")
    stem = name.rsplit("/", 1)[-1]
    for suffix in _SUFFIXES:
        stem = stem.removesuffix(suffix)
    m = _RANK_IN_NAME.search(stem)
    dump = Dump(
        int(m[1]) if m and len(m[1]) < 10 else None,
        _text(raw.get("version", "")),
        {str(k): v for k, v in as_dict(raw.get("pg_config")).items() if isinstance(v, dict)},
        {str(k): v for k, v in as_dict(raw.get("pg_status")).items() if isinstance(v, dict)},
        [e if isinstance(e, dict) else {} for e in raw.get("entries", [])],
    )
    if dump.rank is None:
        dump.notes.append(
            "flight-recorder dump: no rank at the end of its file name (torch names them <prefix><rank>, e.g. "
            "nccl_trace_rank_3); its collectives are listed but not compared with other ranks'"
        )
    return dump


def rows(dump: Dump) -> list[dict]:
    """The dump's events (module docstring): per group the last collective, then what else was in flight."""
    by_group: dict[str, list[tuple[int, dict]]] = {}
    for i, e in enumerate(dump.entries):
        by_group.setdefault(_group_name(e), []).append((i + 2, e))
    out: list[dict] = []
    for name, entries in sorted(by_group.items()):
        cfg = _config(dump, name, entries[0][1])
        desc = _text(cfg.get("desc") or _pg(entries[0][1])[1] or "")
        members = ", ".join(str(r) for r in _ranks(cfg.get("ranks")))
        completed = _status(dump, name, entries[0][1], "last_completed_collective")
        collectives = [(line, e) for line, e in entries if not e.get("is_p2p") and _int(e.get("collective_seq_id"))]
        last = max(collectives, key=lambda le: _int(le[1].get("collective_seq_id")) or 0, default=None)
        for line, e in entries:
            if (last is not None and line == last[0]) or _done(e, completed):
                continue
            said = f"flight recorder: rank {_r(dump)}'s {_what(e)} of PG {name} ({desc}) {IN_FLIGHT} ({_phase(e)})"
            out.append(_row(dump, line, e, name, said))
        if last is not None:
            line, e = last
            seq = _int(e.get("collective_seq_id"))
            done = _done(e, completed)
            said = "completed" if done else f"{IN_FLIGHT} ({_phase(e)})"
            msg = (  # (`LAST` reads it back)
                f"flight recorder: rank {_r(dump)}'s last collective of PG {name} ({desc}; ranks [{members}]) is "
                f"#{seq} {_op(e)} {_shape(e)}{_caller(e)}, {said}"
            )
            if completed is not None and completed >= 0:
                msg += f"; last completed #{completed}"
            out.append(_row(dump, line, e, name, msg, level="INFO" if done else "WARNING"))
    if not out:
        out.append(
            {
                s.TS: None,
                s.SOURCE: "torch",
                s.LEVEL: "INFO",
                s.COMPONENT: FLIGHT_DUMP_COMPONENT,
                s.MESSAGE: f"flight recorder: rank {_r(dump)}'s dump (version {dump.version}) holds no collective",
                s.LINE: 1,
                "_rank": dump.rank,
            }
        )
    return sorted(out, key=lambda r: r[s.LINE])


def _row(dump: Dump, line: int, e: dict, group: str, msg: str, level: str = "WARNING") -> dict:
    created = _int(e.get("time_created_ns"))
    return {
        s.TS: datetime.fromtimestamp(created / 1e9, UTC) if created and 0 < created < 2**62 else None,
        s.SOURCE: "torch",
        s.LEVEL: level,
        s.COMPONENT: FLIGHT_DUMP_COMPONENT,
        s.MESSAGE: msg,
        s.LINE: line,
        s.PG: group,
        s.COLL_OP: _op(e),
        s.COLL_SEQ: None if e.get("is_p2p") else _int(e.get("collective_seq_id")),
        s.COLL_TIMEOUT_MS: _int(e.get("timeout_ms")),
        "_rank": dump.rank,
    }


def _done(e: dict, completed: int | None) -> bool:
    """Whether the entry finished: NCCL marks it `completed`; gloo never does, but retires it."""
    if e.get("state") == "completed" or e.get("retired") is True:
        return True
    seq = _int(e.get("collective_seq_id"))
    return not e.get("is_p2p") and completed is not None and seq is not None and 0 < seq <= completed


def _what(e: dict) -> str:
    if e.get("is_p2p"):
        return f"p2p op #{_int(e.get('p2p_seq_id'))} {_op(e)} {_shape(e)}{_caller(e)}"
    return f"collective #{_int(e.get('collective_seq_id'))} {_op(e)} {_shape(e)}{_caller(e)}"


_LIBRARY_FRAME = re.compile(r"(?:^|/)torch/(?:distributed|_|utils|nn/modules/module\.py)|<string>|multiprocessing/")
"""Frames of torch's own collective wrappers and of process start-up, skipped to find the caller."""


def _caller(e: dict) -> str:
    """` from forward (vllm/distributed/parallel_state.py:412)`: the innermost frame of the
    entry's stack outside torch's wrappers (where the program issued the collective; ranks
    issuing the same collective from different places are out of step), or nothing."""
    frames = e.get("frames")
    for f in frames[:64] if isinstance(frames, list) else []:
        if not isinstance(f, dict) or not isinstance(f.get("filename"), str):
            continue
        path = f["filename"]
        if _LIBRARY_FRAME.search(path):
            continue
        short = "/".join(path.split("/")[-3:])
        return f" from {_text(f.get('name'))} ({short[:120]}:{_int(f.get('line'))})"
    return ""


def _op(e: dict) -> str:
    name = _text(e.get("profiling_name") or "?")
    return name if e.get("is_p2p") else name.split(" ")[0]


def _shape(e: dict) -> str:
    sizes = e.get("input_sizes")
    dtypes = e.get("input_dtypes")
    dt = ",".join(_text(d) for d in dtypes[:8]) if isinstance(dtypes, list) else ""
    return f"(input {_text(sizes) if isinstance(sizes, list) else '?'} {dt})".replace(" )", ")")


def _phase(e: dict) -> str:
    return _text(e.get("state") or "unknown")


def _r(dump: Dump) -> str:
    return str(dump.rank) if dump.rank is not None else "?"


def _pg(e: dict) -> tuple[str, str]:
    pg = e.get("process_group")
    if isinstance(pg, list | tuple) and len(pg) == 2:
        return _text(pg[0]), _text(pg[1])
    return _text(e.get("pg_id", "?")), ""


def _group_name(e: dict) -> str:
    return _pg(e)[0]


def _config(dump: Dump, name: str, e: dict) -> dict:
    """The group's pg_config entry: by name, else by description, else the only one."""
    if name in dump.groups:
        return dump.groups[name]
    desc = _pg(e)[1]
    same = [c for c in dump.groups.values() if desc and c.get("desc") == desc]
    if len(same) == 1:
        return same[0]
    return next(iter(dump.groups.values())) if len(dump.groups) == 1 else {}


def _status(dump: Dump, name: str, e: dict, key: str) -> int | None:
    st = dump.status.get(name) or dump.status.get(_text(e.get("pg_id")))
    if st is None and len(dump.status) == 1:
        st = next(iter(dump.status.values()))
    return _int((st or {}).get(key))


def _ranks(v: object) -> list[int]:
    """pg_config's `ranks`: a string `"[0, 1, 2]"` (or, in hand-made dumps, a list)."""
    if isinstance(v, list):
        return [int(r) for r in v if isinstance(r, int)]
    return [int(r) for r in re.findall(r"\d+", v)] if isinstance(v, str) else []


_SHORT = reprlib.Repr()
"""How a dump's values are written into messages: a pickle's memo can share one list many
times over (a few bytes that `str` would spell out exponentially), so non-strings are cut."""
_SHORT.maxlevel, _SHORT.maxlist, _SHORT.maxtuple, _SHORT.maxdict = 3, 8, 8, 8
_SHORT.maxstring, _SHORT.maxother = 200, 80


def _text(v: object) -> str:
    return v[:200] if isinstance(v, str) else _SHORT.repr(v)


def _int(v: object) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and re.fullmatch(r"-?\d{1,19}", v.strip()):
        return int(v)
    return None
