"""The 27 real excerpts in ../shared/data/reallogs, each against what a careful SRE would read in it.

Each excerpt is a paste from a public issue: a few lines, often cut mid-traceback, never
tuned on. `EXPECT` says per excerpt what the verdict should be and why; the analysis agrees
when its first incident has that status and category (or, for `None`, when it finds no
incident). Where an excerpt holds only the symptoms (watchdog timeouts with no rank's own
error), the careful reading is "inconclusive", whatever category the symptoms are in.

Usage: python bench/reallogs.py [--data ../shared/data/reallogs]
Last line: `reallogs agree=N total=M rate=R`. Skips (exit 0) when the data is absent.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from forensics import _malloc  # noqa: E402

_malloc.tune()  # as the CLI does, before polars loads

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "reallogs"

NONE = None
"""No incident: the excerpt shows a healthy or starting service."""
INCONCLUSIVE = ("inconclusive", None)
"""Symptoms only: the verdict must say so and ask for the log that decides."""

EXPECT: dict[str, tuple[tuple[str, str | None] | None, str]] = {
    "aibrix-issue-1054.log": (
        INCONCLUSIVE,
        "CrashLoopBackOff from `kubectl get` and `describe` with no Last State reason; the crashed container's log is "
        "not in the paste",
    ),
    "eks-workshop-v2-issue-447.log": (("supported", "node"), "the node went NotReady (kubelet stopped posting status)"),
    "gardener-mcm-issue-208.log": (("supported", "node"), "machine-controller-manager reports the node unhealthy"),
    "hami-issue-1069.log": (("supported", "capacity"), "the scheduler: 0/4 nodes available, insufficient GPUs"),
    "k3s-issue-8575.log": (("supported", "capacity"), "FailedScheduling: Insufficient amd.com/gpu"),
    "kubernetes-issue-61117.log": (("supported", "node"), "the node's status went Unknown / NotReady"),
    "llm-d-inference-sim-issue-45.log": (
        ("supported", "pod-lifecycle"),
        "the liveness probe gets 404: the probe's path is not served, a misconfigured probe kills a working pod",
    ),
    "nccl-issue-1235.log": (
        ("supported", "gpu-memory"),
        "NCCL's `Cuda failure 'out of memory'` on rank 3; the peers' closed sockets follow from it",
    ),
    "nccl-issue-1241.log": (NONE, "NCCL and c10d debug output of a start-up, no error"),
    "nccl-issue-1684.log": (
        INCONCLUSIVE,
        "the watchdog got stuck; an IPC-registration WARN is no fault by itself, and no rank's error is shown",
    ),
    "nccl-issue-2076.log": (
        ("supported", "network"),
        "ncclRemoteError with `Connection reset by peer`: the transport failed, as this rank saw it",
    ),
    "nccl-issue-795.log": (("supported", "network"), "NCCL socket errors: broken pipe, connection closed by peer"),
    "nccl-issue-928.log": (("supported", "network"), "NET/IB completions with error 4 on several hosts"),
    "vllm-issue-10156.log": (INCONCLUSIVE, "only the first ALLREDUCE's watchdog timeouts, on every rank"),
    "vllm-issue-10453.log": (
        ("supported", "other"),
        "ncclInternalError from the p2p transport (`internal error - please report this issue`): NCCL's own fault",
    ),
    "vllm-issue-11366.log": (("supported", "gpu-fault"), "CUDA illegal memory access in the model runner"),
    "vllm-issue-16766.log": (NONE, "a server start and health checks answered 200"),
    "vllm-issue-23448.log": (
        INCONCLUSIVE,
        "BROADCAST watchdog timeouts with one rank a collective behind, nothing else",
    ),
    "vllm-issue-25032.log": (
        INCONCLUSIVE,
        "the middle of an EngineCore traceback (waiting on a worker's response), cut before its exception",
    ),
    "vllm-issue-2734.log": (INCONCLUSIVE, "an idle engine, then an ALLREDUCE watchdog timeout on one Ray worker"),
    "vllm-issue-6042.log": (
        INCONCLUSIVE,
        "a worker died with SIGABRT (exit -6) before the timeouts; its own output, which says why, is not pasted",
    ),
    "vllm-issue-6732.log": (("supported", "gpu-fault"), "NCCL's NVLS set-up: `Cuda failure 1 'invalid argument'`"),
    "vllm-issue-7539.log": (
        INCONCLUSIVE,
        "`Engine background task failed` with the traceback cut after its first frame",
    ),
    "vllm-issue-8978.log": (INCONCLUSIVE, "the first ALLREDUCE times out on every rank right after init"),
    "vllm-issue-9321.log": (
        INCONCLUSIVE,
        "workers wait on the shared-memory broadcast, then a GATHER times out: a hung rank, not named",
    ),
    "vllm-omni-issue-2928.log": (INCONCLUSIVE, "two ranks' dump-on-timeout notices"),
    "vllm-pr-37307.log": (NONE, "a prefill-heavy benchmark ramping up: queue draining, KV usage rising, no error"),
}


def _verdict(path: Path) -> tuple[str, str] | None:
    from forensics import analyze

    incs = analyze(path).to_json()["incidents"]
    if not incs:
        return None
    rc = incs[0]["root_cause"]
    return rc["status"], rc["category"]


def _agrees(want, got) -> bool:
    if want is None or got is None:
        return want is got
    return got[0] == want[0] and (want[1] is None or got[1] == want[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args()
    if not args.data.is_dir():
        print(f"reallogs: {args.data} is absent; skipped")
        return
    agree = 0
    names = sorted(p.name for p in args.data.glob("*.log"))
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            want, why = EXPECT.get(name, (INCONCLUSIVE, "not in the table"))
            d = Path(tmp) / name
            d.mkdir()
            (d / name).write_bytes((args.data / name).read_bytes())
            got = _verdict(d)
            ok = _agrees(want, got)
            agree += ok
            w = "no incident" if want is None else f"{want[0]} {want[1] or '*'}"
            g = "no incident" if got is None else f"{got[0]} {got[1]}"
            print(f"{name:<34} want {w:<28} got {g:<28} {'ok' if ok else 'MISS'}  ({why})")
    print(f"reallogs agree={agree} total={len(names)} rate={agree / max(len(names), 1):.2f}")


if __name__ == "__main__":
    main()
