"""`forensics replay TRACE`: replay captured requests through a paged KV cache under a policy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from forensics.cli import _options
from forensics.cli._console import console


def replay(
    trace: Annotated[
        Path | None,
        typer.Argument(
            help="trace.jsonl (Mooncake format), an Azure LLM inference CSV, or vLLM logs with request lines "
            "(a file or directory: the trace is captured from them)."
        ),
    ] = None,
    policy: Annotated[str, typer.Option(help="Built-in policy name or package.module:Class.")] = "lru",
    compare: Annotated[
        tuple[str, str] | None, typer.Option(help="Replay two policies on the same trace and compare.")
    ] = None,
    list_policies: Annotated[
        bool, typer.Option("--list-policies", help="List the built-in policies and exit.")
    ] = False,
    rate_scale: Annotated[float, typer.Option(help="Replay at this multiple of the captured rate.")] = 1.0,
    blocks: Annotated[int, typer.Option(help="KV blocks in the pool (vLLM: GPU KV cache size / block size).")] = 2048,
    block_size: Annotated[int, typer.Option(help="Tokens per KV block.")] = 16,
    max_requests: Annotated[int | None, typer.Option(help="Replay only the first N requests.")] = None,
    device: Annotated[str, typer.Option(help="auto, cpu or cuda: where the attention numerics run.")] = "auto",
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write replay.json here.")] = None,
) -> None:
    """Reproduce a KV-cache fault: replay the trace and report corrupted requests and invariant violations."""
    from forensics._bundled import replay
    from forensics.errors import ForensicsError

    pol, rr, Config = replay("policies"), replay("run"), replay("scheduler").Config
    _options.positive("--rate-scale", rate_scale)
    _options.at_least("--blocks", blocks, 1)
    _options.at_least("--block-size", block_size, 1)
    _options.at_least("--max-requests", max_requests, 1)
    _options.out_dir("--out", out)
    if device not in ("auto", "cpu", "cuda"):
        raise ForensicsError(f"unknown --device {device!r}", hint="use auto, cpu or cuda")

    if list_policies:
        for name, cls in pol.BUILTIN.items():
            console.print(f"{name:<18} {'FAULT ' if cls.fault else 'correct'}  {cls.description}")
        return
    if trace is None:
        raise ForensicsError(
            "no trace given", hint="forensics replay samples/cache-corruption/trace.jsonl --compare lru-evict-live lru"
        )
    from forensics.replay_bridge import load_or_capture

    Trace = replay("traces").Trace

    captured = load_or_capture(trace)
    if isinstance(captured, Trace):
        console.print(
            f"captured {len(captured.requests)} requests from {captured.source}"
            + (f"; set aside: {captured.rejected}" if captured.rejected else "")
        )
    cfg = Config(block_size=block_size, num_blocks=blocks, numerics_every=200)
    names = list(compare) if compare else [policy]
    runs = [
        rr.run(captured, n, rate_scale=rate_scale, cfg=cfg, device=device, max_requests=max_requests) for n in names
    ]
    for r in runs:
        fc = r["first_corruption"]
        first = f"request {fc['request']}, block {fc['block']}, t={fc['time_s']:.2f} s ({fc['how']})" if fc else "none"
        err = r["attention_max_rel_error"]
        attn = "not sampled" if err is None else f"{err:.1e}"
        ttft = r["ttft_s"]["p99"]
        style = "bold red" if r["corrupted_requests"] else "bold green"
        console.print(
            f"[bold]{r['policy']}[/] ({'fault variant' if r['fault'] else 'correct'}): [{style}]{r['corrupted_requests']:,} of "
            f"{r['requests']:,} requests corrupted[/]; first corruption: {first}; invariant violations: {r['invariant_violations']:,}; "
            f"peak KV {100 * r['peak_kv_usage']:.0f}%, max waiting {r['max_waiting']:,}, preemptions {r['preemptions']:,}; "
            f"TTFT p99 {'-' if ttft is None else f'{ttft:.3f}'} s; attention on sampled steps: max rel. error {attn}"
        )
    if len(runs) == 2:
        a, b = runs
        console.print(
            f"difference: {a['corrupted_requests'] - b['corrupted_requests']:+,d} corrupted requests ({a['policy']} vs {b['policy']})"
        )
        console.print(rr.verdict(runs))
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        doc = {"trace": str(trace), "rate_scale": rate_scale, "runs": runs, "verdict": rr.verdict(runs)}
        (out / "replay.json").write_text(json.dumps(doc, indent=2) + "\n")
        console.print(f"wrote {out / 'replay.json'}")
