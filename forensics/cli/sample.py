"""`forensics sample SCENARIO OUTDIR`: write a generated incident (logs + trace + ground truth)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def sample(
    scenario: Annotated[
        str, typer.Argument(help="cache-corruption, nccl-network, gpu-oom, node-failure, kv-pressure or healthy.")
    ],
    outdir: Annotated[Path, typer.Argument(help="Directory to write the incident into.")],
    seed: Annotated[int, typer.Option(help="Random seed; the same seed gives byte-identical output.")] = 1,
    scale: Annotated[float, typer.Option(help="Multiply the baseline traffic lines (about 2800 for ~1 GB).")] = 1.0,
) -> None:
    """Generate a sample incident directory laid out as people collect it after an outage."""
    from forensics.errors import ForensicsError
    from samples.generate import SCENARIOS, generate

    if scenario not in SCENARIOS:
        raise ForensicsError(f"unknown scenario {scenario!r}", hint="choose one of: " + ", ".join(sorted(SCENARIOS)))
    truth = generate(scenario, outdir, seed=seed, scale=scale)
    n = sum(1 for p in outdir.rglob("*") if p.is_file())
    size = sum(p.stat().st_size for p in outdir.rglob("*") if p.is_file())
    rc = truth.get("root_cause") or {}
    typer.echo(
        f"wrote {n} files ({size / 1e6:.1f} MB) to {outdir}; root cause: {rc.get('category', 'none')} on {rc.get('host') or '-'}"
    )
