"""Which ranks did not report a collective's watchdog timeout: where the straggler is.

When one rank hangs or dies inside a collective, every *other* rank of the group waits
for it and its watchdog fires with the same (op, sequence number); the culprit is the rank
that is missing from that chorus (shared docs, prior-art-and-root-cause.md: "ranks missing
from a collective"). With only the survivors' logs the cause cannot be read, but the
analysis can say exactly whose logs to get.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def silent_ranks(events: pl.DataFrame) -> SilentRanks | None:
    """The most reported timed-out collective and the ranks of its world that did not report it."""
    to = events.filter(pl.col(s.COLL_SEQ).is_not_null() & pl.col(s.RANK).is_not_null())
    if to.is_empty():
        return None
    top = (
        to.group_by(s.COLL_SEQ, s.COLL_OP)
        .agg(pl.col(s.RANK).unique().sort().alias("ranks"))
        .with_columns(pl.col("ranks").list.len().alias("n"))
        .sort("n", s.COLL_SEQ, descending=[True, False])
        .row(0, named=True)
    )
    nranks = (
        events.filter(pl.col(s.SOURCE) == "nccl")
        .select(pl.col(s.MESSAGE).str.extract(NRANKS, 1).cast(pl.Int64, strict=False).max())
        .item()
    )
    seen = events[s.RANK].drop_nulls().unique().to_list()
    world = int(nranks) if nranks else (max(seen) + 1 if seen else 0)
    timed_out = [int(r) for r in top["ranks"]]
    silent = sorted(set(range(world)) - set(timed_out))
    if not silent or len(timed_out) < 2:
        return None
    return SilentRanks(top[s.COLL_OP], int(top[s.COLL_SEQ]), timed_out, world, silent)
