"""The signals table: each event the catalog gives a meaning (a fault, a change, a symptom, an
impact), with its category, layer, label and node, minus the noise of processes starting and
stopping. Every later step of the diagnosis reads this table, not the events."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import polars as pl

from forensics import mining
from forensics import schema as s
from forensics.diagnosis import series as ser
from forensics.diagnosis import signatures


def untimed(signals: pl.DataFrame) -> tuple[pl.DataFrame, list]:
    """One incident over the faults and symptoms that have no time, ordered by position."""
    bare = pl.col(s.TS).is_null() & pl.col("kind").is_in(["fault", "symptom"])
    if signals.is_empty() or not signals.select(bare.any()).item():
        return signals, []
    stand_in = pl.lit(ser.UNTIMED_EPOCH) + pl.duration(
        seconds=pl.col("_ev").cast(pl.Int64) * int(ser.UNTIMED_STEP.total_seconds())
    )
    signals = signals.with_columns(
        pl.when(pl.col(s.TS).is_null()).then(stand_in).otherwise(pl.col(s.TS)).alias(s.TS)
    ).sort(s.TS, "_ev")
    incidents = ser.error_bursts(signals.filter(pl.col(s.TS) < ser.UNTIMED_EPOCH.replace(year=1901)), gap=timedelta.max)
    for inc in incidents:
        inc.timed = False
    return signals, incidents


STOPPED = (
    r"^Killing: Stopping container |^Shutting down$|^Waiting for application shutdown\.|Received SIGTERM"
    r"|^Gracefully stopping"
)
"""A pod being stopped on purpose (a rollout, a scale-down, a drain): the kubelet's `Killing`
event (not a probe's, which says why) and the server's own graceful shutdown."""


STOP_ECHO = timedelta(minutes=5)
"""How long after a deliberate stop a pod's faults are its shutdown's (a tensor-parallel peer
gone first: `remote process exited`), not a crash. Strictly after: what made the kubelet stop
it (an eviction, a preemption) is logged in the same second."""


SCALED_DOWN = r"Scaled down replica set (?P<rs>[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?) to \d+"
"""A Deployment's scale-down (`ScalingReplicaSet` event): one or more pods of the replica set
`rs`, named `rs-<suffix>`, are being stopped."""


KILLED = rf"{STOPPED}|^Killing: "
"""A container stopped for any reason: on purpose (`STOPPED`), or killed by the kubelet after
its probe failed (`Killing: Container x failed liveness probe, will be restarted`)."""


@dataclass(frozen=True)
class Stops:
    """When each replica (`series.REPLICA`) was stopped: `on_purpose` (`STOPPED`) and for any
    reason (`KILLED`), each with the scale-downs of the replica set its pod name starts with
    (`SCALED_DOWN`), which a rollout logs for the Deployment, not the pod."""

    on_purpose: dict[str, list[datetime]]
    any: dict[str, list[datetime]]


def stops(events: pl.DataFrame) -> Stops:
    """The replicas' stops (`Stops`), from one scan of the messages (it reads every one)."""
    timed = events.filter(pl.col(s.TS).is_not_null())
    hits = timed.filter(pl.col(s.MESSAGE).str.contains(f"{KILLED}|{SCALED_DOWN}")).select(
        ser.REPLICA.alias("_src"), s.TS, s.MESSAGE
    )
    scaled: dict[str, list[datetime]] = {}
    downs = hits.select(pl.col(s.MESSAGE).str.extract(SCALED_DOWN, 1), s.TS).drop_nulls()
    replicas = timed.select(ser.REPLICA.alias("_src")).unique().drop_nulls()["_src"].to_list() if downs.height else []
    for rs, t in downs.iter_rows():
        for src in replicas:
            if src.rsplit("/", 1)[-1].startswith(f"{rs}-"):
                scaled.setdefault(src, []).append(t)

    def by_replica(pattern: str) -> dict[str, list[datetime]]:
        own = hits.filter(pl.col(s.MESSAGE).str.contains(pattern)).group_by("_src").agg(pl.col(s.TS))
        out: dict[str, list[datetime]] = {src: list(ts) for src, ts in own.iter_rows() if src is not None}
        for src, ts in scaled.items():
            out.setdefault(src, []).extend(ts)
        return {src: sorted(ts) for src, ts in sorted(out.items())}

    return Stops(on_purpose=by_replica(STOPPED), any=by_replica(KILLED))


def faulted(
    signals: pl.DataFrame, pod_node: dict[str, str], stopped: dict[str, list[datetime]]
) -> dict[str, list[datetime]]:
    """When each replica, or the node it runs on, logged a hard fault, by the name the series
    knows the replica by (`series.REPLICA`); leaving out the faults of a pod stopped on purpose
    just before them (`stops`, `STOP_ECHO`)."""
    faults = signals.filter((pl.col("kind") == "fault") & pl.col(s.TS).is_not_null())
    if faults.is_empty():
        return {}
    by = faults.group_by(ser.REPLICA.alias("_src")).agg(pl.col(s.TS))
    out: dict[str, list[datetime]] = {src: ts for src, ts in by.iter_rows() if src is not None}
    # A node's own reports (its kernel's Xid, its kubelet) name no pod: they are its pods' faults too.
    on_node = faults.filter(pl.col(s.POD).is_null()).select(pl.coalesce("node", s.HOST).alias("_n"), s.TS)
    at = {n: ts for n, ts in on_node.group_by("_n").agg(pl.col(s.TS)).iter_rows() if n is not None}
    for pod, node in pod_node.items():
        if node in at:
            out[pod] = out.get(pod, []) + at[node]
    return {
        src: sorted(f for f in ts if not any(timedelta(0) < f - x <= STOP_ECHO for x in stopped.get(src, ())))
        for src, ts in sorted(out.items())
    }


def signals_table(events: pl.DataFrame, templates: pl.DataFrame, pod_node: dict[str, str]) -> pl.DataFrame:
    """Classified events with their time, place, template and full text."""
    sig = signatures.classify(events)
    ev = events.with_row_index("_ev").select(
        "_ev",
        s.TS,
        s.TS_QUALITY,
        s.SOURCE,
        s.HOST,
        s.POD,
        s.FILE,
        s.LINE,
        s.LEVEL,
        mining.TEMPLATE_ID,
        s.COLL_RAN_MS,
        s.PROCESS,
        s.PID,
        pl.col(s.MESSAGE).alias("full"),
    )
    names = templates.select(mining.TEMPLATE_ID, pl.col(mining.TEMPLATE).alias("_tmpl"))
    out = sig.join(ev, on="_ev", how="left").join(names, on=mining.TEMPLATE_ID, how="left")
    first_line = pl.col("full").str.split("\n").list.first()
    masked = mining.mask_expr(pl.col("text"))
    # A fault read from a traceback's exception line gets its own template.
    is_head = pl.col("text") == first_line
    out = out.with_columns(
        pl.when(is_head).then(pl.col("_tmpl")).otherwise(masked).alias("template"),
        pl.col(s.POD).replace_strict(pod_node, default=None, return_dtype=pl.String).alias("node"),
    )
    ids = [
        tid if head else mining.template_id(src, t)
        for tid, head, src, t in zip(
            out[mining.TEMPLATE_ID], out.select(is_head)["text"], out[s.SOURCE], out["template"], strict=True
        )
    ]
    out = out.with_columns(pl.Series("template_id", ids, dtype=pl.String))
    out = _drop_startup_noise(out, events)
    return out.with_columns(
        pl.coalesce("node", pl.when(pl.col(s.SOURCE).is_in(["kubelet", "k8s-event"])).then(pl.col(s.HOST))).alias(
            "node"
        )
    ).sort(s.TS, "_ev")


STARTUP = r"^(?:vLLM API server version|Initializing a V1 LLM engine|Starting vLLM API server|init engine \(profile)"


STARTUP_NOISE_S = 180


def _drop_startup_noise(signals: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """A shared-memory broadcast stall within minutes of its engine's start is compilation, not a hang."""
    starts = events.filter(pl.col(s.MESSAGE).str.contains(STARTUP) & pl.col(s.TS).is_not_null()).select(
        s.FILE, pl.col(s.TS).alias("_st")
    )
    stall = pl.col("label") == "shared-memory broadcast stall"
    if starts.is_empty() or not signals.select(stall.any()).item():
        return signals
    cand = signals.with_row_index("_sig").filter(stall).join(starts, on=s.FILE, how="inner")
    noisy = cand.filter(
        (pl.col(s.TS) >= pl.col("_st")) & ((pl.col(s.TS) - pl.col("_st")).dt.total_seconds() <= STARTUP_NOISE_S)
    )["_sig"].unique()
    return signals.with_row_index("_sig").filter(~pl.col("_sig").is_in(noisy.implode())).drop("_sig")
