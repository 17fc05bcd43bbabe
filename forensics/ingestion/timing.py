"""Times for lines that do not carry a whole one: the year a year-less stamp is in, the zone a
local stamp is in, the wall time of a stamp counted since boot, and the time of an untimed line.

A file's reference time (the median of its exact stamps, else its neighbours', else its mtime)
gives the year; a year-less stamp that runs backwards across New Year rolls it."""

from __future__ import annotations

import functools
import re
from concurrent.futures import Future
from datetime import UTC, datetime, timedelta
from pathlib import PurePosixPath

import polars as pl

from forensics import schema as s
from forensics.ingestion.state import BatchCarry, FileMeta, TimeHints
from parsers.frame import TIME_PARTS
from parsers.wrappers import syslog_time_parts


class YearResolver:
    """Where a file's lines without a year take it from, decided once per file.

    A file's reference is the median exact time of its head (`reference_times`), else
    the median of its directory's references, else an ancestor directory's; failing
    all, `--year` (with Dec->Jan rollover within the file), else the year the file was
    last modified, with a warning: the latest year that does not put the file's first line
    after that (an incident of Dec 30 collected on Jan 2 is last year's).
    """

    def __init__(
        self,
        refs: dict[str, datetime] | Future,
        metas: list[FileMeta],
        hints: TimeHints,
    ) -> None:
        """`refs`: relative path -> reference time, or the future of the pass computing them
        (it runs beside the first batches' parse; nothing waits for it before a batch is done)."""
        self._refs, self.metas = refs, metas
        self.year, self.tz, self.captured_at = hints.year, hints.tz, hints.captured_at
        self.warnings: list[str] = []
        self.untimed_ages: dict[int, int] = {}
        """File id -> its rows timed only relative to the capture (an age, a snapshot's state) that
        stay untimed for want of `captured_at`: said in `age_warnings`, as the timeline leaves them out."""
        self._decided: dict[int, tuple[datetime | None, int | None]] = {}

    @functools.cached_property
    def refs(self) -> dict[str, datetime]:
        return self._refs.result() if isinstance(self._refs, Future) else self._refs

    @functools.cached_property
    def _by_dir(self) -> dict[str, datetime]:
        """Each directory's median reference over the files under it (at any depth)."""
        by_dir: dict[str, list[datetime]] = {}
        for rel, t in self.refs.items():
            d = str(PurePosixPath(rel).parent)
            while True:
                by_dir.setdefault(d, []).append(t)
                if d in ("", "."):
                    break
                d = str(PurePosixPath(d).parent)
        return {d: sorted(ts)[len(ts) // 2] for d, ts in by_dir.items()}

    def age_warnings(self) -> list[str]:
        """One warning per file whose relative ages could not be placed, in file order."""
        return [
            f"{self.metas[fid].rel}: {n:,} event{'s' if n > 1 else ''} timed only relative to when kubectl ran (an age "
            "like `3m`, or `get pods` / `get nodes` state at that moment) left untimed and off the timeline: pass "
            "--captured-at with when the command ran (the logs collected with it end near then)"
            for fid, n in sorted(self.untimed_ages.items())
        ]

    def of(self, fid: int, first: tuple[int, int] | None = None) -> tuple[datetime | None, int | None]:
        """(reference time, fallback year) of file `fid`: exactly one is set. `first`: the
        (month, day) of the file's first line without a year, which the modification time's
        year must not put after it."""
        if fid not in self._decided:
            rel = self.metas[fid].rel
            ref = self.refs.get(rel)
            d = str(PurePosixPath(rel).parent)
            while ref is None and d not in self._by_dir and d not in ("", "."):
                d = str(PurePosixPath(d).parent)
            ref = ref or self._by_dir.get(d)
            fallback = None
            if ref is None:
                fallback = self.year
                if fallback is None:
                    fallback = _year_before(datetime.fromtimestamp(self.metas[fid].mtime, UTC), first)
                    self.warnings.append(
                        f"{rel}: no year in its timestamps and no dated log beside it; assumed {fallback} from the "
                        "file's modification time (pass --year to set it)"
                    )
            self._decided[fid] = (ref, fallback)
        return self._decided[fid]


def _year_before(mtime: datetime, first: tuple[int, int] | None) -> int:
    """The year of a file's first line (`first`: its month and day) that puts it last before the
    file's modification time, a day of slack for zones and clocks."""
    if first is None:
        return mtime.year
    mo, d = first
    try:  # (an mtime in the year 9999 has no day after it)
        start = datetime(mtime.year, min(max(mo, 1), 12), 1, tzinfo=UTC) + timedelta(days=min(max(d, 1), 31) - 1)
        return mtime.year - 1 if start > mtime + timedelta(days=1) else mtime.year
    except (OverflowError, ValueError):
        return mtime.year


def resolve_time(ev: pl.DataFrame, clock: YearResolver, carry: BatchCarry) -> tuple[pl.DataFrame, dict]:
    """Give every event of a batch a UTC `ts` and a `ts_quality` (see `schema.TsQuality`).

    Order of preference: the wrapper's RFC3339 time (exact); a full local date-time
    from the line (exact, in `tz`); month/day/time from the line with the year closest
    to the file's reference (Dec->Jan rollover), or `--year`; a relative age with
    `captured_at`; the previous timed event of the same file (inherited, across batches
    through `carry`). Also returns the time part of the batch's own carry.

    Requires `ev` in file order (`_fid`, `_seg`, `line`), as batches are built.
    """
    tz = clock.tz
    if ev["_outer_ts"].null_count() == 0 and ev.select(_plausible(pl.col("_outer_ts")).null_count()).item() == 0:
        # Every line has its wrapper's exact time (kubectl --timestamps, CRI): nothing to
        # infer, inherit or convert, the common case of pod logs.
        times = time_columns(ev).with_columns(pl.col("_outer_ts").alias(s.TS))
        exact = pl.select(pl.repeat(_quality("exact"), ev.height)).to_series().alias(s.TS_QUALITY)
        return ev.with_columns(times[s.TS], exact), _time_carry(carry, times)
    # Work on the time columns alone, each step on only the rows it concerns: adding even a
    # null column to the whole batch copies what it is added to.
    full = ev
    ev = time_columns(ev)
    # Syslog/journald time where the line itself has none.
    ev = _set_rows(ev, pl.col("_mo").is_null() & pl.col("_syslog").is_not_null(), syslog_time_parts())
    ev = _set_rows(ev, pl.col("_outer_ts").is_null() & pl.col("_Y").is_not_null(), [exact_time(tz).alias("_outer_ts")])
    # (a line whose full date does not exist, `2025-02-29`, is untimed: its year is no guess to redo)
    yearless = pl.col("_outer_ts").is_null() & pl.col("_mo").is_not_null() & pl.col("_Y").is_null()
    refs: dict[int, datetime] = {}
    fallback_year: dict[int, int] = {}
    # Each file's first line without a year, in this batch (its first such line in the file
    # when the file is decided here: batches come in file order).
    heads = ev.filter(yearless).group_by("_fid", maintain_order=True).agg(pl.col("_mo").first(), pl.col("_d").first())
    for fid, mo, d in sorted(heads.iter_rows()):
        ref, year = clock.of(fid, (mo, d) if d is not None else None)
        if ref is not None:
            refs[fid] = ref
        else:
            fallback_year[fid] = year
    cont = carry.rows
    if fallback_year:
        # With only a year to go by, the year rolls over when the month falls back (Dec -> Jan)
        # within a file; the count goes on from the batch before.
        prev = pl.col("_mo").shift(1).over("_fid")
        if carry.mo is not None:
            prev = pl.when(prev.is_null() & cont).then(pl.lit(carry.mo)).otherwise(prev)
        rolls = (pl.col("_mo") < prev - 6).fill_null(False).cast(pl.Int32).cum_sum().over("_fid")
        rolls = rolls + pl.when(cont).then(pl.lit(carry.rolls)).otherwise(0)
        ev = _set_rows(ev, yearless, [rolls.alias("_rolls")])
    rolls = pl.col("_rolls") if fallback_year else pl.lit(0, pl.Int32)
    ev = _set_rows(ev, yearless, [_infer_year(refs, fallback_year, tz, rolls).alias("_inf")])
    if clock.captured_at is not None:
        age = pl.duration(microseconds=(pl.col("_age_s") * 1e6).cast(pl.Int64))
        relative = pl.lit(clock.captured_at).cast(pl.Datetime("us", "UTC")) - age
        ev = _set_rows(ev, pl.col("_outer_ts").is_null() & pl.col("_age_s").is_not_null(), [relative.alias("_rel")])
    else:
        aged = ev.filter(pl.col("_outer_ts").is_null() & pl.col("_age_s").is_not_null())
        for fid, n in aged.group_by("_fid").len().iter_rows():
            clock.untimed_ages[fid] = clock.untimed_ages.get(fid, 0) + n
    for c, t in (("_inf", pl.Datetime("us", "UTC")), ("_rel", pl.Datetime("us", "UTC"))):
        if c not in ev.columns:
            ev = ev.with_columns(pl.lit(None, t).alias(c))
    if "_uptime_s" in full.columns:
        ev = _since_boot(ev, full[s.MESSAGE], carry)
    # (a time that cannot be, `schema.TS_RANGE`, is none: the line is untimed)
    exact, inferred, relative = (_plausible(pl.col(c)) for c in ("_outer_ts", "_inf", "_rel"))
    quality = (
        pl.when(exact.is_not_null())
        .then(_quality("exact"))
        .when(inferred.is_not_null())
        .then(_quality("inferred-year"))
        .when(relative.is_not_null())
        .then(_quality("relative"))
    )
    ev = ev.with_columns(pl.coalesce(exact, inferred, relative).alias(s.TS), quality.alias(s.TS_QUALITY))
    # A row with a relative age (`5m` in a describe Events table) is not a continuation of
    # the line above it: without --captured-at it stays untimed rather than borrow a time;
    # nor is a document's row (`_standalone`).
    # Nor is a `dmesg` line, whose time is its own seconds since boot or none (a line of
    # another boot above it would lend it a time from before the reboot).
    untimed_ok = pl.col("_age_s").is_null() & pl.col("_uptime_s").is_null() & ~pl.col("_standalone").fill_null(False)
    inherited = pl.when(untimed_ok).then(pl.col(s.TS).forward_fill().over("_fid"))
    if carry.ts is not None:
        inherited = pl.coalesce(inherited, pl.when(untimed_ok & cont).then(pl.lit(carry.ts)))
    ev = ev.with_columns(
        pl.when(pl.col(s.TS).is_null() & inherited.is_not_null())
        .then(_quality("inherited"))
        .otherwise(pl.col(s.TS_QUALITY))
        .fill_null(_quality("none"))
        .alias(s.TS_QUALITY),
        pl.coalesce(pl.col(s.TS), inherited).alias(s.TS),
    )
    return full.with_columns(ev["_outer_ts"], ev[s.TS], ev[s.TS_QUALITY]), _time_carry(carry, ev)


WALL_CLOCK = re.compile(
    r"setting system clock to \S+(?: \d{2}:\d{2}:\d{2})? UTC \((\d{9,11})\)|audit\((\d{9,11}\.\d{3}):\d+\)"
)
"""`dmesg` lines that say the wall time at their stamp: the RTC driver at boot (`rtc_cmos 00:00:
setting system clock to 2025-10-14T10:00:00 UTC (1760436000)`, older kernels with a space
before the time) and the kernel's audit records, printed there when no auditd reads them
(`audit: type=1400 audit(1760515000.123:3456): apparmor="DENIED" ...`, AppArmor's and
seccomp's on a Kubernetes node), stamped with the epoch in milliseconds."""


BOOT_RESET_S = 1.0
"""A `dmesg` stamp this much below the line before it starts a new boot (the kernel's stamps
from different CPUs may step back by microseconds, never by a second)."""


def _since_boot(ev: pl.DataFrame, message: pl.Series, carry: BatchCarry) -> pl.DataFrame:
    """`dmesg` lines (`_uptime_s`: seconds since boot) placed at the wall time of their boot's
    last line before them that says it (`WALL_CLOCK`; its first, for the lines before it), plus
    the seconds between, as `_rel`; each line's offset (wall time minus stamp) as `_boot_offset`,
    which the batch's carry hands on.

    Why not leave them untimed: a GPU's Xid 79 or an OOM kill minutes before the NCCL timeouts
    is the cause only if it can be put before them. The stamp counts the scheduler clock, which
    NTP does not steer: weeks from the line that placed it, it can be off the wall clock by a
    minute or two (seconds when an audit record is near), hence `relative`, not `exact`; the
    nearest line before also replaces an RTC kept in local time. Lines of a boot without such
    a line stay untimed. Requires `ev` in file order (a boot's lines together); a file's boot
    goes on from the batch before through `carry.boot`, read as a line at its last stamp."""
    at = ev.select(pl.arg_where(pl.col("_uptime_s").is_not_null())).to_series()
    said = message.gather(at).str.extract_groups(WALL_CLOCK.pattern).struct
    clock = pl.coalesce(said.field("1"), said.field("2")).cast(pl.Float64)
    lines = ev.select(pl.col("_fid").gather(at), pl.col("_uptime_s").gather(at)).with_columns(clock.alias("_clock"))
    seeded = carry.boot is not None and lines.height > 0 and lines["_fid"][0] == carry.fid
    if seeded:
        offset, stamp = carry.boot
        seed = pl.DataFrame(
            {"_fid": [carry.fid], "_uptime_s": [stamp], "_clock": [None if offset is None else offset + stamp]},
            schema=lines.schema,
        )
        lines = pl.concat([seed, lines])
    if lines["_clock"].null_count() == lines.height:
        return ev
    up = pl.col("_uptime_s")
    boot = (up < up.shift(1).over("_fid") - BOOT_RESET_S).fill_null(False).cast(pl.Int32).cum_sum().over("_fid")
    offsets = (
        lines.with_columns(boot.alias("_boot"))
        .select((pl.col("_clock") - up).forward_fill().backward_fill().over("_fid", "_boot"))
        .to_series()
        .slice(1 if seeded else 0)
    )
    placed = pl.select(
        pl.from_epoch(((offsets + ev["_uptime_s"].gather(at)) * 1e6).round().cast(pl.Int64), "us").dt.replace_time_zone(
            "UTC"
        )
    ).to_series()
    own = ev.select((pl.col("_outer_ts").is_null() & pl.col("_mo").is_null()).gather(at)).to_series()
    keep = placed.is_not_null() & own
    none = pl.repeat(None, ev.height, dtype=pl.Float64, eager=True)
    return ev.with_columns(
        ev["_rel"].scatter(at.filter(keep), placed.filter(keep)),
        none.scatter(at, offsets).alias("_boot_offset"),
    )


def _quality(name: str) -> pl.Expr:
    """A `ts_quality` value as the table's category: choosing among category literals is a pass
    over codes, where strings chosen and then cast to categories were hashed row by row (~2 ms
    per 100,000 rows)."""
    return pl.lit(name, dtype=pl.Categorical)


def _time_carry(carry: BatchCarry, ev: pl.DataFrame) -> dict:
    """The time fields of the carry the batch `ev` (its time columns) hands on."""
    last = int(ev["_fid"][-1])
    rows = ev.filter(pl.col("_fid") == last)
    same = last == carry.fid
    ts = rows[s.TS].drop_nulls()
    out = {"fid": last, "ts": ts[-1] if len(ts) else (carry.ts if same else None), "mo": None, "rolls": 0}
    yearless = rows.filter(pl.col("_outer_ts").is_null() & pl.col("_mo").is_not_null() & pl.col("_Y").is_null())
    if yearless.height:
        out["mo"] = int(yearless["_mo"][-1])
        out["rolls"] = int(yearless["_rolls"][-1]) if "_rolls" in yearless.columns else 0
    elif same:
        out["mo"], out["rolls"] = carry.mo, carry.rolls
    stamped = rows.filter(pl.col("_uptime_s").is_not_null())
    if stamped.height:
        offset = stamped["_boot_offset"][-1] if "_boot_offset" in stamped.columns else None
        out["boot"] = (offset, float(stamped["_uptime_s"][-1]))
    elif same:
        out["boot"] = carry.boot
    return out


TIME_COLUMNS: dict[str, pl.DataType] = {
    **{c: pl.Int32() for c in TIME_PARTS},
    "_syslog": pl.String(),
    "_age_s": pl.Float64(),
    "_uptime_s": pl.Float64(),
    "_outer_ts": pl.Datetime("us", "UTC"),
    "_standalone": pl.Boolean(),
}
"""What the parsers may leave about a line's time: local date-time parts, a syslog stamp, a
relative age, `dmesg`'s seconds since boot, the wrapper's exact time, and whether the row
stands alone (a document's: the row above is another object, whose time it must not borrow).
A batch has only the columns its formats produced."""


def _set_rows(df: pl.DataFrame, rows: pl.Expr, exprs: list[pl.Expr]) -> pl.DataFrame:
    """`df` with `exprs` evaluated on the rows where `rows` holds, in file order, and written
    there; other rows keep their values (null in a new column). Row order never changes."""
    at = df.select(pl.arg_where(rows.fill_null(False))).to_series()
    if at.len() == 0:
        return df
    sub = df[at].select(exprs)
    base = {
        c: df[c] if c in df.columns else pl.repeat(None, df.height, dtype=t, eager=True) for c, t in sub.schema.items()
    }
    return df.with_columns(base[c].clone().scatter(at, sub[c]).alias(c) for c in sub.columns)


def time_columns(ev: pl.DataFrame) -> pl.DataFrame:
    """The file id and every `TIME_COLUMNS` column of `ev`, missing ones as nulls (selected
    first: adding even a null column to the whole table copies what it is added to)."""
    return ev.select(
        "_fid", *(pl.col(c) if c in ev.columns else pl.lit(None, t).alias(c) for c, t in TIME_COLUMNS.items())
    )


def exact_time(tz: str) -> pl.Expr:
    """A line's exact UTC time: the wrapper's, else a full local date-time read in `tz`; none
    where that is no time an event may have (`schema.TS_RANGE`)."""
    return _plausible(pl.coalesce(pl.col("_outer_ts"), _local_to_utc(pl.col("_Y"), tz)))


def _plausible(ts: pl.Expr) -> pl.Expr:
    """`ts` where it lies in `schema.TS_RANGE`, else null."""
    start, end = (pl.lit(t).cast(pl.Datetime("us", "UTC")) for t in s.TS_RANGE)
    return pl.when((ts >= start) & (ts < end)).then(ts)


def _infer_year(refs: dict[int, datetime], fallback_year: dict[int, int], tz: str, rolls: pl.Expr) -> pl.Expr:
    """Time for month/day/time rows (only those, in file order): in the year closest to the
    file's reference, or in --year plus the file's rollovers so far (`rolls`)."""
    ref = pl.col("_fid").replace_strict(refs, default=None, return_dtype=pl.Datetime("us", "UTC"))
    ref_year = ref.dt.year().cast(pl.Int32)
    cands = [_local_to_utc(ref_year + k, tz) for k in (-1, 0, 1)]
    far = pl.duration(days=99999)
    dist = [(c - ref).abs().fill_null(far) for c in cands]
    closest = (
        pl.when(dist[1] <= pl.min_horizontal(dist[0], dist[2]))
        .then(cands[1])
        .when(dist[0] <= dist[2])
        .then(cands[0])
        .otherwise(cands[2])
    )
    fallback = pl.col("_fid").replace_strict(fallback_year, default=None, return_dtype=pl.Int32)
    return pl.when(ref.is_not_null()).then(closest).otherwise(_local_to_utc(fallback + rolls, tz))


def _local_to_utc(year: pl.Expr, tz: str) -> pl.Expr:
    """Naive local date-time from time parts and `year`, interpreted in `tz`, as UTC; null where
    that year has no such day (Feb 29 of 2025: of the candidate years, a leap one is chosen)."""
    month = pl.col("_mo").clip(1, 12)
    month_days = pl.date(year, month, 1).dt.month_end().dt.day().cast(pl.Int32)
    naive = pl.datetime(
        year,
        month,
        pl.min_horizontal(pl.col("_d").clip(1, 31), month_days),  # (polars raises on a day the month lacks)
        pl.col("_H").fill_null(0).clip(0, 23),
        pl.col("_M").fill_null(0).clip(0, 59),
        pl.col("_S").fill_null(0).clip(0, 59),
        pl.col("_us").fill_null(0),
        time_unit="us",
    )
    valid = year.is_not_null() & pl.col("_mo").is_between(1, 12) & pl.col("_d").is_between(1, month_days)
    out = naive.dt.replace_time_zone(tz, ambiguous="earliest", non_existent="null").dt.convert_time_zone("UTC")
    return pl.when(valid).then(out)
