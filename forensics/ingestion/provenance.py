"""Where an event came from: its file's pod, namespace, container and node from the path layout
(CRI, cluster-info dumps, must-gather), the rank a file name gives, and the final columns."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

import polars as pl

from forensics import schema as s
from forensics.ingestion import files as _files
from forensics.ingestion.state import BatchCarry, FileMeta
from parsers import k8s
from parsers.paths import node_of

NODE_LEVEL_SOURCES = ("kernel", "kubelet", "nvidia-smi")
"""Sources whose lines are always a node's own (never a pod's): given the node their path names
when they name none."""


CONTAINER_LOG_NAME = re.compile("^" + k8s.CONTAINER_LOG_NAME)
"""`k8s.CONTAINER_LOG_NAME`, a node's container log copied off it under that name (rotations too)."""


PREVIOUS_SUFFIX = re.compile(r"[._-](?:previous|prev)(?:[._-]?\d+)?$")
"""`kubectl logs --previous` saved as `<pod>.previous.log`, `<pod>-previous-2.log`, ..."""


def file_meta(f: _files.InputFile) -> FileMeta:
    """Pod/namespace/container from the path: CRI `/var/log/pods/<ns>_<pod>_<uid>/<c>/N.log` and
    `/var/log/containers/<pod>_<ns>_<c>-<id>.log`, OpenShift's must-gather and `oc adm inspect`
    `namespaces/<ns>/pods/<pod>/<c>/<c>/logs/{current,previous}.log`, cluster-info dump
    `<ns>/<pod>/logs.txt`, else the file name (`vllm-0.log` -> `vllm-0`)."""
    parts = PurePosixPath(f.rel).parts
    node = node_of(f.rel)
    for i, p in enumerate(parts[:-2]):
        bits = p.split("_")
        if len(bits) == 3 and len(bits[2]) >= 32 and "-" in bits[2]:
            return FileMeta(f.rel, bits[1], bits[0], parts[i + 1], f.mtime, node)
    if m := CONTAINER_LOG_NAME.match(parts[-1]):
        return FileMeta(f.rel, m["pod"], m["ns"], m["cont"], f.mtime, node)
    for i in range(2, len(parts) - 2):
        if parts[i] == "pods" and parts[i - 2] == "namespaces":
            container = parts[i + 2] if i + 3 < len(parts) else None  # (not `<pod>.yaml` beside them)
            return FileMeta(f.rel, parts[i + 1], parts[i - 1], container, f.mtime, node)
    if parts[-1] == "logs.txt" and len(parts) >= 3:
        return FileMeta(f.rel, parts[-2], parts[-3], None, f.mtime, node)
    name = parts[-1]
    for suffix in (
        ".gz",
        ".xz",
        ".bz2",
        ".zst",
        ".lz4",
        ".csv",
        ".tsv",
        ".log",
        ".txt",
        ".out",
        ".err",
        ".prom",
        ".metrics",
    ):
        name = name.removesuffix(suffix)
    name = name.split(".log.")[0]
    name = PREVIOUS_SUFFIX.sub("", name)
    return FileMeta(f.rel, name or None, None, None, f.mtime, node)


FINISH_INPUTS = frozenset(
    (
        "_fid",
        "_drop",
        "_dump_pod",
        "_dump_ns",
        "_dump_container",
        "_wpod",
        "_wns",
        "_wcont",
        "_rank",
        "_line_rank",
        "_pid",
    )
)
"""The working columns `finish_columns` reads; the others (time parts, wrapper flags) are dropped before it."""


DUMP_HINTS = ("_dump_pod", "_dump_ns", "_dump_container")
"""Pod, namespace and container a `kubectl cluster-info dump` header names, for the lines after it."""


RANK_IN_NAME = re.compile(r"rank=(\d+)")


def finish_columns(ev: pl.DataFrame, metas: list[FileMeta], carry: BatchCarry) -> tuple[pl.DataFrame, dict[str, str]]:
    """Attach file names and path hints, derive rank/pid, drop working columns and folded-away
    rows. Also returns the dump headers the batch's last file hands on (see `BatchCarry`)."""
    ev = ev.select(c for c in ev.columns if c in s.EVENT_COLUMNS or c in FINISH_INPUTS)
    # Per-file columns by gathering on the file id: a join or a filter here would copy the
    # whole batch (messages included).
    fid = ev["_fid"]
    per_file = {
        s.FILE: [m.rel for m in metas],
        "_hpod": [m.pod for m in metas],
        "_hns": [m.namespace for m in metas],
        "_hcont": [m.container for m in metas],
        "_hnode": [m.node for m in metas],
    }
    # A path hint no file of the batch has (a plain file's path names no namespace or
    # container) is left out rather than gathered as a column of nulls and coalesced.
    per_file = {c: v for c, v in per_file.items() if c == s.FILE or any(x is not None for x in v)}
    ev = ev.with_columns(pl.Series(c, v, dtype=pl.String).gather(fid) for c, v in per_file.items())
    # A working column no line had is absent (`_slim`): left out here rather than added as
    # nulls and worked on (forward-filling three absent dump columns cost ~1.3 s per GB).
    carried = {c: v for c, v in carry.dump.items() if c not in ev.columns}
    if carried:
        ev = ev.with_columns(pl.lit(None, pl.String).alias(c) for c in carried)
    have = set(ev.columns)

    def text(*columns: str) -> list[pl.Expr]:
        return [pl.col(c).cast(pl.String) for c in columns if c in have]

    dump_out: dict[str, str] = {}
    dump = [c for c in DUMP_HINTS if c in have]
    if dump:
        filled = {c: pl.col(c).cast(pl.String).forward_fill().over("_fid") for c in dump}
        filled = {
            c: pl.coalesce(e, pl.when(carry.rows).then(pl.lit(carry.dump[c]))) if c in carry.dump else e
            for c, e in filled.items()
        }
        ev = ev.with_columns(**filled)
        last = ev.filter(pl.col("_fid") == ev["_fid"][-1]).select(dump).tail(1).row(0, named=True)
        dump_out = {c: v for c, v in last.items() if v is not None}
        ev = ev.with_columns(pl.col(c).replace("", None) for c in dump)
    node_sources = ["kubelet", "klog", "k8s-event", "k8s-state", "syslog", "kernel", "nvidia-smi"]
    container_log = ~pl.col(s.SOURCE).is_in(node_sources)
    if s.HOST in have:  # (a Prometheus export's event that names its node is the node's: a GPU's Xid)
        container_log &= ~((pl.col(s.SOURCE) == "prometheus") & pl.col(s.HOST).is_not_null())

    def hint(column: str, container_only: bool = True) -> pl.Expr:
        if column not in have:
            return pl.lit(None, pl.String)
        return pl.when(container_log).then(pl.col(column)) if container_only else pl.col(column)

    ranks = [pl.col("_rank").cast(pl.Int32, strict=False)] if "_rank" in have else []
    ranks += [pl.col("_line_rank")] if "_line_rank" in have else []
    if s.PROCESS in have:  # `rank=N` in a Ray actor's process name: read once per distinct name
        named = {
            p: int(m[1]) for p in ev[s.PROCESS].unique().drop_nulls().cast(pl.String) if (m := RANK_IN_NAME.search(p))
        }
        named = {p: r for p, r in named.items() if r < 2**31}
        if named:
            ranks.append(pl.col(s.PROCESS).replace_strict(named, default=None, return_dtype=pl.Int32))
    if "_hnode" in have:  # a node's own lines that do not name it (`dmesg -T`, a kubelet.log)
        own = pl.col(s.SOURCE).is_in(NODE_LEVEL_SOURCES)
        host = pl.col(s.HOST) if s.HOST in have else pl.lit(None, pl.String)
        ev = ev.with_columns(pl.coalesce(host, pl.when(own).then(pl.col("_hnode"))).alias(s.HOST))
    ev = ev.with_columns(
        pl.coalesce(*text(s.POD, "_wpod", "_dump_pod"), hint("_hpod")).alias(s.POD),
        pl.coalesce(*text(s.NAMESPACE, "_wns", "_dump_ns"), hint("_hns", container_only=False)).alias(s.NAMESPACE),
        pl.coalesce(*text(s.CONTAINER, "_wcont", "_dump_container"), hint("_hcont")).alias(s.CONTAINER),
        (pl.coalesce(*ranks) if ranks else pl.lit(None, pl.Int32)).alias(s.RANK),
        (pl.col("_pid").cast(pl.Int64, strict=False) if "_pid" in have else pl.lit(None, pl.Int64)).alias(s.PID),
        pl.col(s.MESSAGE).fill_null("") if s.MESSAGE in have else pl.lit("").alias(s.MESSAGE),
    )
    # Batches are built in (file, segment, line) order: (file, line) order holds without
    # sorting on the string column. Rows that were only folded away (`_drop`) go.
    keep = ~ev["_drop"].fill_null(False)
    ev = s.conform(ev, s.EVENT_DTYPES)
    return (ev if keep.all() else ev.filter(keep)), dump_out
