"""Which ranks did not report a collective's watchdog timeout, or fell behind: where the straggler is.

When one rank hangs or dies inside a collective, every *other* rank of the group waits
for it and its watchdog fires with the same (op, sequence number); the culprit is the rank
that is missing from that chorus (shared docs, prior-art-and-root-cause.md: "ranks missing
from a collective"). With only the survivors' logs the cause cannot be read, but the
analysis can say exactly whose logs to get.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

import polars as pl

from forensics import schema as s
from parsers import nccl, torch
from parsers.documents import flight_dump

NRANKS = r"\bnranks (\d+)\b"
"""NCCL's `comm 0x... rank 0 nranks 4 cudaDev 0 ... Init COMPLETE` line gives the world size."""


@dataclass(frozen=True)
class SilentRanks:
    op: str | None
    seq: int
    timed_out: list[int]
    world: int
    silent: list[int]
    behind_seq: int | None = None
    """Set when every rank reported, but `silent` timed out on this earlier SeqNum: they fell behind."""

    def sentence(self) -> str:
        who = _span(self.silent)
        s_ = "s" if len(self.silent) > 1 else ""
        waiting = f"rank{'s' if len(self.timed_out) > 1 else ''} {_span(self.timed_out)}"
        if self.behind_seq is not None:
            return (
                f"{waiting} timed out waiting in {self.op or 'a collective'} "
                f"SeqNum={self.seq} while rank{s_} {who} never finished SeqNum={self.behind_seq}: rank{s_} {who} fell "
                f"behind (stuck in or before that collective), so rank {who}'s host and GPU are where to look"
            )
        return (
            f"{waiting} of {self.world} timed out waiting in "
            f"{self.op or 'a collective'} SeqNum={self.seq}; rank{s_} {who} never "
            f"reported it: the straggler (hung or dead first) is there, so get rank {who}'s logs"
        )


_NEVER_JOINED = (
    "never joined {what}: the straggler, hung or dead before it, so rank {who}'s host, GPU and logs are where to look"
)
_NEVER_STARTED = (
    "enqueued {what} but never started it on the GPU while the other ranks had: an earlier kernel hung there, so "
    "rank {who}'s GPU (Xid, ECC), driver and logs are where to look"
)


@dataclass(frozen=True)
class FlightFinding:
    """What the flight recorder found about one collective: from its analyser's output
    (`torchfrtrace`), or from the per-rank dumps themselves (`dump_findings`)."""

    seq: int | None
    op: str | None
    missing: list[int]
    """Ranks that never joined it (the stragglers)."""
    culprits: list[tuple[int, str]]
    """(rank, what differed) for ranks that joined with another collective, size or state."""
    where: str
    by: str = "analysis"
    """`analysis` (torchfrtrace's findings) or `dumps` (read here from the dumps)."""
    stalled: list[int] = field(default_factory=list)
    """Ranks that enqueued it but whose GPU never started it, while the others' had."""
    undumped: list[int] = field(default_factory=list)
    """Members of the group with no dump, when every dumped rank waits in the collective."""

    def sentence(self) -> str:
        what = f"{self.op or 'a collective'}" + (f" (sequence number {self.seq})" if self.seq is not None else "")
        said = f"the flight recorder's {self.by} ({self.where})"
        _s = "s" if self.by == "analysis" else ""  # (the analysis shows; the dumps show)
        for ranks, says in ((self.missing, _NEVER_JOINED), (self.stalled, _NEVER_STARTED)):
            if ranks:
                who = _span(ranks)
                return f"{said} show{_s} rank{'s' if len(ranks) > 1 else ''} {who} " + says.format(what=what, who=who)
        if self.culprits:
            rank, why = self.culprits[0]
            return (
                f"{said} name{_s} rank {rank} as the culprit of {what}: {why}; the ranks "
                f"ran different code (a desync), so what rank {rank} did differently is where to look"
            )
        who = _span(self.undumped)
        return (
            f"{said} show{_s} every dumped rank waiting in {what}, and no dump from rank{'s' if len(self.undumped) > 1 else ''} "
            f"{who}: the straggler is among them (a rank that died or hung cannot answer the dump request), so get "
            f"rank {who}'s dumps and logs"
        )


_MISSING = r"(?i)missing ranks(?: are|:)\s*\{([\d,\s]*)\}"
_CULPRIT = r"Culprit rank (\d+); ([^\n,]*(?:, (?!Culprit)[^\n,]*)*)"
_FLIGHT_OP = r"(?m)^collective: (\S+)|\bcollective (\w+:\w+)"


def flight_findings(events: pl.DataFrame) -> FlightFinding | None:
    """The first finding of the flight recorder's analyser in file order that names a rank
    (torchfrtrace prints them in collective order: the first is where the job went out of
    step; later ones follow from it)."""
    fr = events.filter(
        (pl.col(s.SOURCE) == "torch") & (pl.col(s.COMPONENT).cast(pl.String) == torch.FLIGHT_COMPONENT)
    ).sort(s.FILE, s.LINE)
    for seq, msg, file, line in fr.select(s.COLL_SEQ, s.MESSAGE, s.FILE, s.LINE).iter_rows():
        missing = re.search(_MISSING, msg or "")
        culprits = [(int(r), why.strip()) for r, why in re.findall(_CULPRIT, msg or "")]
        ranks = sorted({int(r) for r in re.findall(r"\d+", missing[1])}) if missing else []
        if ranks or culprits:
            op = re.search(_FLIGHT_OP, msg or "")
            return FlightFinding(seq, (op[1] or op[2]) if op else None, ranks, culprits, f"{file}:{line}")
    return None


_DUMP_LAST = re.compile(flight_dump.LAST)


def dump_findings(events: pl.DataFrame) -> FlightFinding | None:
    """Who the others waited on, from the per-rank flight-recorder dumps (`parsers.documents.flight_dump`),
    as NVRx's "wavefront" reads them: in each process group, the dumped ranks whose last
    collective is behind the others' never joined the next one; if all reached it, a rank that
    joined with another op or size, or whose op never started on its GPU while the others' had,
    is the culprit; else members that left no dump are where the straggler is. The group whose
    stuck collective was enqueued first is the one reported (the rest waited on it)."""
    rows = events.filter(
        (pl.col(s.SOURCE) == "torch")
        & (pl.col(s.COMPONENT).cast(pl.String) == flight_dump.FLIGHT_DUMP_COMPONENT)
        & pl.col(s.RANK).is_not_null()
    )
    groups: dict[tuple[str, str], dict[int, dict]] = {}
    for ts, msg, file, line in rows.sort(s.FILE, s.LINE).select(s.TS, s.MESSAGE, s.FILE, s.LINE).iter_rows():
        m = _DUMP_LAST.match(msg or "")
        if m is None:
            continue
        last = m.groupdict() | {"ts": ts, "where": f"{file}:{line}", "seq": int(m["seq"])}
        groups.setdefault((m["pg"], m["ranks"]), {})[int(m["rank"])] = last
    found: list[tuple[int, datetime | None, FlightFinding]] = []
    for (_pg, members), by_rank in sorted(groups.items()):
        hi = max(r["seq"] for r in by_rank.values())
        ahead = sorted(r for r in by_rank if by_rank[r]["seq"] == hi)
        waiting = [r for r in ahead if by_rank[r]["state"] != "completed"]
        if not waiting:
            continue  # (the group's last collective finished)
        stuck = by_rank[waiting[0]]
        behind = sorted(r for r in by_rank if by_rank[r]["seq"] < hi)
        op = stuck["op"]
        if behind:
            where = by_rank[behind[0]]["where"]
            found.append((0, stuck["ts"], FlightFinding(hi, op, behind, [], where, by="dumps")))
            continue
        odd = _odd_ones(by_rank, ahead)
        if odd:
            found.append((1, stuck["ts"], FlightFinding(hi, op, [], odd, by_rank[odd[0][0]]["where"], by="dumps")))
            continue
        phases = {r: by_rank[r]["phase"] for r in ahead}
        stalled = sorted(r for r in ahead if phases[r] == "scheduled") if "started" in phases.values() else []
        if stalled:
            where = by_rank[stalled[0]]["where"]
            found.append((1, stuck["ts"], FlightFinding(hi, op, [], [], where, by="dumps", stalled=stalled)))
            continue
        undumped = sorted({int(r) for r in re.findall(r"\d+", members)} - set(by_rank))
        if undumped:
            found.append((2, stuck["ts"], FlightFinding(hi, op, [], [], stuck["where"], by="dumps", undumped=undumped)))
    if not found:
        return None
    return min(found, key=lambda f: (f[0], f[1] is None, f[1] or datetime.min, f[2].where))[2]


def _odd_ones(by_rank: dict[int, dict], ranks: list[int]) -> list[tuple[int, str]]:
    """Ranks whose copy of the collective differs from the most common one: another op or
    input shape (a desync)."""

    def common(key: str) -> str:
        values = [by_rank[r][key] for r in ranks]
        return max(sorted(set(values)), key=values.count)

    for key, says in (
        ("op", "ran {mine} where the others ran {theirs}"),
        ("what", "joined with {mine} where the others had {theirs}"),
    ):
        usual = common(key)
        odd = [(r, says.format(mine=by_rank[r][key], theirs=usual)) for r in ranks if by_rank[r][key] != usual]
        if odd and len(odd) < len(ranks):
            return odd
    return []


def _span(ranks: list[int]) -> str:
    """`3` / `1, 4, 6` / `0-16, 18-63`: ranks as a reader scans them, runs of three or more
    written as a range (a 64-rank chorus is one line, not 63 numbers)."""
    runs: list[list[int]] = []
    for r in sorted(set(ranks)):
        if runs and r == runs[-1][-1] + 1:
            runs[-1].append(r)
        else:
            runs.append([r])
    return ", ".join(f"{run[0]}-{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)) for run in runs)


@dataclass(frozen=True)
class RasFinding:
    """The process NCCL's RAS report (`ncclras`) singles out: dead, silent, failing or behind."""

    what: str
    """`dead`, `silent`, `failed` or `behind`."""
    process: str
    """`process 41377 on node gpu-node-3 (GPU 5)`, or `rank 13` when the report has no process."""
    detail: str
    where: str

    def sentence(self) -> str:
        says = {
            "dead": "as dead (unreachable over RAS's own network)",
            "silent": "as missing from the communicator (it did not answer)",
            "failed": f"as failing: {self.detail}",
            "behind": f"as out of step: {self.detail}",
        }[self.what]
        return (
            f"NCCL's RAS report ({self.where}) lists {self.process} {says}; the other ranks waited on it, so its "
            "host, GPU and logs are where to look"
        )


_RAS_PROCESS_LINE = re.compile(r"^\s*Process (\d+) on node (\S+) managing (GPUs? [\d,\s]+?)\s*$")
_RAS_RANK_LINE = re.compile(
    r"^\s*Rank (\d+)(?: (has launched up to operation \d+|has not launched any operations|has status \w+|"
    r"reported .+?))? -- (?:GPU (\S+) managed by process (\d+) on node (\S+)|\[process information not found\])\s*$"
)
_RAS_MANY_REPORTED = re.compile(r"^\s*\d+ ranks reported (.+?)\s*$")
_RAS_KIND = (("DEAD", "dead"), ("INCOMPLETE", "silent"), ("ERROR", "failed"), ("MISMATCH", "behind"))


def ras_findings(events: pl.DataFrame) -> RasFinding | None:
    """The most telling process of an `ncclras` report: a dead one, else one that did not answer,
    else one that reported an error, else the odd one out of a mismatch (its own line says what
    it did: fewer operations launched, another status; the majority's ranks are listed bare)."""
    ras = events.filter((pl.col(s.SOURCE) == "nccl") & (pl.col(s.COMPONENT).cast(pl.String) == nccl.RAS_COMPONENT))
    found: dict[str, RasFinding] = {}
    for msg, file, line in ras.sort(s.FILE, s.LINE).select(s.MESSAGE, s.FILE, s.LINE).iter_rows():
        head, _, body = (msg or "").partition("\n")
        what = next((w for word, w in _RAS_KIND if head.rstrip().endswith(word)), None)
        if what is None or what in found:
            continue
        reported = None
        for text in body.splitlines():
            if m := _RAS_MANY_REPORTED.match(text):
                reported = m[1]
            elif m := _RAS_PROCESS_LINE.match(text):
                found[what] = RasFinding(what, f"process {m[1]} on node {m[2]} ({m[3]})", "", f"{file}:{line}")
            elif m := _RAS_RANK_LINE.match(text):
                state = m[2] or (f"reported {reported}" if reported else None)
                if what == "behind" and not state:
                    continue  # (a rank of the majority)
                process = f"rank {m[1]}" + (f" (process {m[4]} on node {m[5]}, GPU {m[3]})" if m[4] else "")
                found[what] = RasFinding(what, process, f"rank {m[1]} {state}" if state else "", f"{file}:{line}")
            if what in found:
                break
    return next((found[w] for _, w in _RAS_KIND if w in found), None)


NOT_A_DUMP = pl.col(s.COMPONENT).cast(pl.String).fill_null("") != flight_dump.FLIGHT_DUMP_COMPONENT
"""Events that are not a flight-recorder dump's: its collectives record where each rank was,
they are not timeouts a rank logged (`dump_findings` reads them)."""


NEVER_COMPLETED = r"last completed (?:NCCL )?work: -1\b"
"""c10d's watchdog status (torch >= 2.3) when no collective of the group ever completed."""


def first_collective_hung(events: pl.DataFrame, since: datetime | None = None) -> str | None:
    """A sentence when the timed-out collective was the group's first (SeqNum 1, or the
    watchdog's "last completed NCCL work: -1"): the communicator never moved any data, which
    points first at the transport between the GPUs or nodes (a hang at the first all-reduce
    is what vLLM's troubleshooting guide answers with its NCCL sanity check)."""
    lf = events.lazy().filter((pl.col(s.SOURCE) == "torch") & NOT_A_DUMP)
    if since is not None:
        lf = lf.filter(pl.col(s.TS).is_null() | (pl.col(s.TS) >= since))
    hit = (
        lf.filter((pl.col(s.COLL_SEQ) == 1) | pl.col(s.MESSAGE).str.contains(NEVER_COMPLETED))
        .select(s.FILE, s.LINE)
        .sort(s.FILE, s.LINE)
        .head(1)
        .collect()
    )
    if hit.is_empty():
        return None
    file, line = hit.row(0)
    return (
        f"no collective of the group ever completed ({file}:{line}: its first one timed out): the communicator "
        "never moved data, so the transport between the GPUs or nodes is the first suspect (P2P/NVLink or PCIe "
        "peer access blocked by ACS/IOMMU, the wrong NCCL_SOCKET_IFNAME, a firewall): run with NCCL_DEBUG=INFO "
        "to see the transport chosen, and try NCCL_P2P_DISABLE=1 to confirm"
    )


BEHIND_MAX = 2
"""Ranks whose timed-out SeqNums differ by more than this are taken to be in different
process groups (each counts its own collectives), not one rank behind the others."""


def silent_ranks(events: pl.DataFrame, since: datetime | None = None) -> SilentRanks | None:
    """The most reported timed-out collective from `since` on (untimed lines included), and the
    ranks of its world that did not report it."""
    lf = events.lazy()
    if s.COMPONENT in events.columns:  # (a flight-recorder dump's collectives are not timeouts)
        lf = lf.filter(NOT_A_DUMP)
    lf = lf.select(s.TS, s.SOURCE, s.RANK, s.COLL_SEQ, s.COLL_OP, s.MESSAGE)
    if since is not None:
        lf = lf.filter(pl.col(s.TS).is_null() | (pl.col(s.TS) >= since))
    to = lf.filter(pl.col(s.COLL_SEQ).is_not_null() & pl.col(s.RANK).is_not_null()).collect()
    if to.is_empty():
        return None
    top = (
        to.group_by(s.COLL_SEQ, s.COLL_OP)
        .agg(pl.col(s.RANK).unique().sort().alias("ranks"))
        .with_columns(pl.col("ranks").list.len().alias("n"))
        .sort("n", s.COLL_SEQ, descending=[True, False])
        .row(0, named=True)
    )
    world_seen = (
        lf.select(
            pl.col(s.MESSAGE)
            .filter(pl.col(s.SOURCE) == "nccl")
            .str.extract(NRANKS, 1)
            .cast(pl.Int64, strict=False)
            .max()
            .alias("nranks"),
            pl.col(s.RANK).max().alias("top_rank"),
        )
        .collect()
        .row(0)
    )
    nranks, top_rank = world_seen
    world = int(nranks) if nranks else (int(top_rank) + 1 if top_rank is not None else 0)
    timed_out = [int(r) for r in top["ranks"]]
    # Silent: no timeout at all from these ranks. A rank that timed out in another SeqNum
    # spoke, and may have fallen behind instead (`_behind`).
    silent = sorted(set(range(world)) - {int(r) for r in to[s.RANK].unique().to_list()})
    if silent and len(timed_out) >= 2:
        return SilentRanks(top[s.COLL_OP], int(top[s.COLL_SEQ]), timed_out, world, silent)
    return _behind(to, world)


def _behind(timeouts: pl.DataFrame, world: int) -> SilentRanks | None:
    """Every rank timed out, but not in the same collective: the ranks still in an earlier
    SeqNum never enqueued the next one, which the others wait for (a desync; shared docs,
    prior-art-and-root-cause.md §1: the laggard is the culprit, the rest are victims)."""
    per_rank = timeouts.group_by(s.RANK).agg(pl.col(s.COLL_SEQ).min(), pl.col(s.COLL_OP).first()).sort(s.RANK)
    seqs = dict(zip(per_rank[s.RANK].to_list(), per_rank[s.COLL_SEQ].to_list(), strict=True))
    lo, hi = min(seqs.values()), max(seqs.values())
    if len(seqs) < 2 or lo == hi or hi - lo > BEHIND_MAX:
        return None
    behind = sorted(int(r) for r, q in seqs.items() if q == lo)
    ahead = sorted(int(r) for r, q in seqs.items() if q == hi)
    op = per_rank.filter(pl.col(s.COLL_SEQ) == hi)[s.COLL_OP][0]
    return SilentRanks(op, int(hi), ahead, max(world, len(seqs)), behind, behind_seq=int(lo))
