"""Verification on public traces: the correct policy never corrupts, at 1x, 4x and 8x the captured rate.

Runs every trace in ../shared/data/traces (Azure LLM inference CSVs, Mooncake JSONL) through
the correct policy with the full-pool invariant check every 50 steps, and the incident's
fault variant (`lru-evict-live`) beside it: that one must corrupt where the pool saturates
and stay silent where it does not. Skips cleanly when the folder is absent.

Usage: python bench/replay_traces.py [--requests 1500] [--blocks 16384] [--policies lru,lru-evict-live]
Last line: `replay_traces runs=12 clean_correct=12 violations=0 fault_detected=8 fault_quiet_unsaturated=4`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TRACES = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "traces"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=1500, help="first N requests of each scaled trace (0: all)")
    ap.add_argument("--blocks", type=int, default=16384, help="KV blocks (16 tokens each): 262k tokens by default")
    ap.add_argument("--policies", default="lru,lru-evict-live")
    args = ap.parse_args()
    files = sorted(p for p in TRACES.glob("*") if p.suffix in (".csv", ".jsonl")) if TRACES.is_dir() else []
    if not files:
        print(f"replay_traces skipped: no traces under {TRACES}")
        return
    from replay import policies, traces
    from replay.scheduler import Config
    from replay.simulate import simulate

    runs = clean = violations = detected = quiet_ok = 0
    for path in files:
        tr = traces.load(path)
        print(f"{path.name}: {len(tr.requests)} requests, {tr.rate:.1f} req/s captured, rejected {tr.rejected}")
        for factor in (1, 4, 8):
            scaled = traces.scale(tr, factor)
            reqs = scaled.requests[: args.requests] if args.requests else scaled.requests
            for name in args.policies.split(","):
                p = policies.load_policy(name)
                t = time.perf_counter()
                r = simulate(reqs, p, Config(num_blocks=args.blocks, check_every=50))
                dt = time.perf_counter() - t
                print(
                    f"  x{factor} {name:16s} {len(reqs):6d} req  corrupted {r.corrupted_requests:5d}  "
                    f"violations {r.invariant_violations:4d}  peak KV {100 * r.peak_kv_usage:5.1f}%  "
                    f"preemptions {r.preemptions:6d}  max waiting {r.max_waiting:5d}  ({dt:.1f}s)"
                )
                if not p.fault:
                    runs += 1
                    clean += r.corrupted_requests == 0 and r.invariant_violations == 0
                    violations += r.invariant_violations
                elif r.corrupted_requests:
                    detected += 1
                elif r.peak_kv_usage < 0.99:
                    quiet_ok += 1  # silent, and rightly so: the pool never filled
                else:
                    print(f"    {name} saturated the pool without corrupting: not detected")
    print(
        f"replay_traces runs={runs} clean_correct={clean} violations={violations} "
        f"fault_detected={detected} fault_quiet_unsaturated={quiet_ok}"
    )


if __name__ == "__main__":
    main()
