"""End-to-end analyze time on the scaled cache-corruption sample (about 1 GB by default).

Usage: python bench/analyze.py [--scale 1600] [--dir bench/_data/cc-scaled]
Last line: `analyze seconds=42.0 lines=7000000 peak_rss_mb=1800`.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from forensics import _malloc  # noqa: E402

_malloc.tune()  # as the CLI does, before polars loads


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=1600.0)
    ap.add_argument("--dir", type=Path, default=None)
    args = ap.parse_args()
    d = args.dir or Path(__file__).parent / "_data" / f"cc-scale-{int(args.scale)}"
    if not (d / "ground_truth.json").exists():
        from samples.generate import generate

        t = time.perf_counter()
        generate("cache-corruption", d, scale=args.scale)
        print(f"generated {d} in {time.perf_counter() - t:.0f}s", file=sys.stderr)
    size = sum(p.stat().st_size for p in d.rglob("*") if p.is_file())
    from forensics import analyze

    t = time.perf_counter()
    report = analyze(d)
    dt = time.perf_counter() - t
    rc = report.incidents[0].verdict.top if report.incidents else None
    print(f"{size / 1e9:.2f} GB: root cause {rc.category if rc else None}", file=sys.stderr)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"analyze seconds={dt:.1f} lines={report.ingest.lines} peak_rss_mb={peak:.0f}")


if __name__ == "__main__":
    main()
