"""Ingest benchmark: lines/s, MB/s and peak RSS on a generated mixed-format directory.

Usage: python bench/ingest.py [--mb 1024] [--dir bench/_data/ingest-1024mb] [--naive-lines 300000]

Generates the corpus once (bench/_corpus.py, deterministic), ingests it as `forensics
ingest --out` does (tables streamed to Parquet as they are parsed), then runs a naive
per-line `re` parser over a sample in the same process for the ratio. The last
line has the shape:
    ingest lines_per_s=1234567 mb_per_s=180.5 peak_rss_mb=900 naive_ratio=12.3
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from forensics import _malloc  # noqa: E402

_malloc.tune()  # as the CLI does, before polars loads

from bench._corpus import write_corpus  # noqa: E402

NAIVE = [
    re.compile(r"^(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})) (?P<rest>.*)$"),
    re.compile(r"^\((?P<proc>[A-Za-z]\w*) pid=(?P<pid>\d+)\) (?P<rest>.*)$"),
    re.compile(
        r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<mo>\d{2})-(?P<d>\d{2}) (?P<hms>\d{2}:\d{2}:\d{2}) "
        r"\[?(?P<file>[\w./\-]+):(?P<line>\d+)\] (?P<msg>.*)$"
    ),
    re.compile(r"^(?P<level>INFO|WARNING|ERROR): +(?P<msg>.*)$"),
    re.compile(r"^(?P<host>[^\s:]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] NCCL (?P<level>\w+) (?P<msg>.*)$"),
    re.compile(r"^\[?rank(?P<rank>\d+)\]:\[(?P<sev>[EWIF])\d{3,4} \S+ (?P<file>\S+):(?P<line>\d+)\] (?P<msg>.*)$"),
    re.compile(r"^(?P<mon>\w{3}) +\d+ \S+ (?P<host>\S+) (?P<ident>\w+)\[\d+\]: (?P<rest>.*)$"),
    re.compile(r"^\[(?P<ts>[\d\- :,]+)\] (?P<app>\w+) (?P<level>\w+): (?P<msg>.*)$"),
]


def naive_parse(lines: list[str]) -> int:
    """A per-line `re` parser doing the same peeling and field extraction, one line at a time."""
    n = 0
    for line in lines:
        rest = line
        for rx in NAIVE[:2]:
            m = rx.match(rest)
            if m:
                rest = m.group("rest")
        for rx in NAIVE[2:]:
            m = rx.match(rest)
            if m:
                m.groupdict()
                n += 1
                break
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=1024.0)
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--naive-lines", type=int, default=300_000)
    args = ap.parse_args()
    d = args.dir or Path(__file__).parent / "_data" / f"ingest-{int(args.mb)}mb"
    if not (d / ".done").exists():
        t = time.perf_counter()
        write_corpus(d, args.mb)
        (d / ".done").write_text("")
        print(f"generated {d} in {time.perf_counter() - t:.1f}s", file=sys.stderr)
    size = sum(p.stat().st_size for p in d.iterdir() if p.suffix in (".log", ".journal"))

    import tempfile

    from forensics import ingest
    from forensics.ingestion import batches

    # Steady state, not start-up: a first ingest of a few lines of each file loads (or, on a
    # fresh checkout, compiles) the compiled passes, which a long run pays once. (A run that
    # small would not take the passes that exist for speed: this one is told to.)
    with tempfile.TemporaryDirectory(prefix="forensics-warm-", dir=d.parent) as warm:
        for p in sorted(d.iterdir()):
            if p.suffix in (".log", ".journal"):
                with open(p, "rb") as fh:
                    (Path(warm) / p.name).write_bytes(b"".join(fh.readline() for _ in range(2000)))
        t = time.perf_counter()
        threshold, batches.SPEED_PASSES_MIN_CHARS = batches.SPEED_PASSES_MIN_CHARS, 0
        ingest(Path(warm), stream_to=Path(warm) / "out")
        batches.SPEED_PASSES_MIN_CHARS = threshold
        print(f"warm-up (load or compile the compiled passes): {time.perf_counter() - t:.1f}s", file=sys.stderr)

    # As `forensics ingest --out` runs: the tables are streamed to Parquet as they are parsed.
    # CPU seconds beside the wall time: this VM's hosts differ by up to 3x in speed, and the
    # CPU a GB costs (with the cores it kept busy) is what a change on another host compares with.
    with tempfile.TemporaryDirectory(prefix="forensics-bench-", dir=d.parent) as out:
        t, cpu = time.perf_counter(), os.times()
        r = ingest(d, stream_to=Path(out))
        dt, cpu_end = time.perf_counter() - t, os.times()
    cpu_s = (cpu_end.user + cpu_end.system) - (cpu.user + cpu.system)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    lines_per_s = r.lines / dt
    print(
        f"ours: {r.lines} lines, {size / 1e6:.0f} MB in {dt:.1f}s ({cpu_s:.1f} CPU-s, {cpu_s / dt:.2f} cores busy), "
        f"unparsed={r.unparsed}",
        file=sys.stderr,
    )

    sample: list[str] = []
    for p in sorted(d.iterdir()):
        if p.suffix in (".log", ".journal"):
            with open(p) as fh:
                for i, line in enumerate(fh):
                    if i >= args.naive_lines // 8:
                        break
                    sample.append(line.rstrip("\n"))
    t = time.perf_counter()
    naive_parse(sample)
    naive_lps = len(sample) / (time.perf_counter() - t)
    print(f"naive per-line re: {naive_lps:.0f} lines/s on {len(sample)} lines", file=sys.stderr)
    print(
        f"ingest lines_per_s={lines_per_s:.0f} mb_per_s={size / 1e6 / dt:.1f} "
        f"peak_rss_mb={peak_mb:.0f} naive_ratio={lines_per_s / naive_lps:.1f}"
    )


if __name__ == "__main__":
    main()
