"""Which ranks did not report a collective's watchdog timeout: where the straggler is.

When one rank hangs or dies inside a collective, every *other* rank of the group waits
for it and its watchdog fires with the same (op, sequence number); the culprit is the rank
that is missing from that chorus (shared docs, prior-art-and-root-cause.md: "ranks missing
from a collective"). With only the survivors' logs the cause cannot be read, but the
analysis can say exactly whose logs to get.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import polars as pl

from forensics import schema as s

NRANKS = r"\bnranks (\d+)\b"
"""NCCL's `comm 0x... rank 0 nranks 4 cudaDev 0 ... Init COMPLETE` line gives the world size."""


@dataclass(frozen=True)
class SilentRanks:
    op: str | None
    seq: int
    timed_out: list[int]
    world: int
    silent: list[int]

    def sentence(self) -> str:
        who = ", ".join(map(str, self.silent))
        return (
            f"ranks {', '.join(map(str, self.timed_out))} of {self.world} timed out waiting in "
            f"{self.op or 'a collective'} SeqNum={self.seq}; rank{'s' if len(self.silent) > 1 else ''} {who} never "
            f"reported it: the straggler (hung or dead first) is there, so get rank {who}'s logs"
        )


def silent_ranks(events: pl.DataFrame, since: datetime | None = None) -> SilentRanks | None:
    """The most reported timed-out collective from `since` on (untimed lines included), and the
    ranks of its world that did not report it."""
    lf = events.lazy().select(s.TS, s.SOURCE, s.RANK, s.COLL_SEQ, s.COLL_OP, s.MESSAGE)
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
    silent = sorted(set(range(world)) - set(timed_out))
    if not silent or len(timed_out) < 2:
        return None
    return SilentRanks(top[s.COLL_OP], int(top[s.COLL_SEQ]), timed_out, world, silent)
