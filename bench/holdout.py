"""Root-cause hit rate on scenarios the analysis was not tuned on (samples/generate.py HOLDOUT).

Usage: python bench/holdout.py
A hit: one incident, `supported`, the ground-truth category, and the ground-truth host first.
Last line: `holdout hits=2 total=3 rate=0.67`.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from forensics import _malloc  # noqa: E402

_malloc.tune()  # as the CLI does, before polars loads


def main() -> None:
    from forensics import analyze
    from samples.generate import HOLDOUT, generate

    hits = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in HOLDOUT:
            d = Path(tmp) / name
            truth = generate(name, d)["root_cause"]
            incs = analyze(d).to_json()["incidents"]
            rc = incs[0]["root_cause"] if incs else None
            ok = (
                bool(rc)
                and rc["status"] == "supported"
                and rc["category"] == truth["category"]
                and rc["hosts"][:1] == [truth["host"]]
            )
            hits += ok
            got = f"{rc['status']} {rc['category']} {rc['hosts'][:1]}" if rc else "no incident"
            print(f"{name:<22} want {truth['category']} on {truth['host']:<12} got {got:<40} {'HIT' if ok else 'MISS'}")
    print(f"holdout hits={hits} total={len(HOLDOUT)} rate={hits / len(HOLDOUT):.2f}")


if __name__ == "__main__":
    main()
