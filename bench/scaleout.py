"""Wall time of `analyze` on the 1 GB scaled sample: local serial, local process pool, Ray on 2 CPUs.

Usage: python bench/scaleout.py [--scale 2800] [--workers 2] [--skip-ray]

`serial`, `pool` and `ray` are the sharded pipeline (`forensics.shards.pipeline`): its tasks
one after another in one process, on a spawned process pool, and on a local Ray instance
started before timing (its ~4 s start is printed apart: on a real cluster it is already
up). The default `--engine local` (no shards; batches parse on threads, so it already
uses both cores) is timed first and printed apart; "same incidents" compares each run's
incidents and verdicts with it. Each run is a fresh process, so none inherits another's
heap.

`lines_per_core_s` is lines / the sum of the shard tasks' own wall times on Ray (one CPU
per task): the rate one core parses and mines at, which predicts the sharded stage on N
cores as lines / (N x rate). The driver's merge and analysis are printed apart: they do
not shrink with more nodes.
Last line: `scaleout serial_s=60.0 pool_s=35.0 ray_s=36.0 lines_per_core_s=120000`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from forensics import _malloc  # noqa: E402

_malloc.tune()  # as the CLI does, before polars loads


def one(d: Path, mode: str, workers: int) -> dict:
    """Run one configuration in this process; return its timings as a dict."""
    from forensics import analyze

    kw: dict = {} if mode == "local" else {"engine": mode, "workers": workers}
    if mode == "ray":
        import ray

        t = time.perf_counter()
        ray.init(num_cpus=workers, object_store_memory=1 << 30, include_dashboard=False, log_to_driver=False)
        print(f"ray start: {time.perf_counter() - t:.1f} s (not counted)", file=sys.stderr)
    t = time.perf_counter()
    report = analyze(d, **kw)
    seconds = time.perf_counter() - t
    rc = report.incidents[0].verdict.top if report.incidents else None
    return {
        "seconds": seconds,
        "lines": report.ingest.lines,
        "root_cause": rc.category if rc else None,
        "incidents": json.dumps(report.to_json()["incidents"], sort_keys=True),
        "stats": report.run_stats,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=2800.0)
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--skip-ray", action="store_true")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    d = args.dir or Path(__file__).parent / "_data" / f"cc-scale-{int(args.scale)}"
    if args.one:
        print(json.dumps(one(d, args.one, args.workers)))
        return
    if not (d / "ground_truth.json").exists():
        from samples.generate import generate

        generate("cache-corruption", d, scale=args.scale)
    size = sum(p.stat().st_size for p in d.rglob("*") if p.is_file())
    print(f"input {d} {size / 1e9:.2f} GB", file=sys.stderr)
    runs: dict[str, dict] = {}
    for mode in ["local", "serial", "pool"] + ([] if args.skip_ray else ["ray"]):
        cmd = [sys.executable, __file__, "--dir", str(d), "--workers", str(args.workers), "--one", mode]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True)
        r = runs[mode] = json.loads(out.stdout.strip().splitlines()[-1])
        same = r["incidents"] == runs["local"]["incidents"]
        print(
            f"{mode:>6}: {r['seconds']:.1f} s, root cause {r['root_cause']}, same incidents as local: {same}, "
            f"{r['stats']}",
            file=sys.stderr,
        )
    last = runs["ray" if "ray" in runs else "pool"]
    st, lines = last["stats"], last["lines"]
    rate = lines / st["task_seconds"]
    driver_s = last["seconds"] - st["references_s"] - st["shards_s"]
    for cores in (16, 64, 256):
        stage = 100 * (lines / rate + st["references_s"]) / cores
        print(
            f"predicted for 100x this input (100 GB) on {cores} cores: {stage:.0f} s for the sharded stage, plus the "
            f"driver's merge and analysis ({driver_s:.0f} s here for 1 GB; it grows with the rows read back)",
            file=sys.stderr,
        )
    ray_s = runs["ray"]["seconds"] if "ray" in runs else float("nan")
    print(
        f"scaleout serial_s={runs['serial']['seconds']:.1f} pool_s={runs['pool']['seconds']:.1f} "
        f"ray_s={ray_s:.1f} lines_per_core_s={rate:.0f}"
    )


if __name__ == "__main__":
    main()
