"""Options shared by `analyze`, `ingest` and `templates`: where the work runs."""

from __future__ import annotations

from typing import Annotated

import typer

Engine = Annotated[
    str,
    typer.Option(
        help="local: one process. pool: shards of files on a local process pool. "
        "ray: shards as Ray tasks (pip install -e '.\\[ray]'); rows written under OUT/events/.",
    ),
]
RayAddress = Annotated[
    str | None,
    typer.Option(
        help="With --engine ray: 'auto' (the cluster this machine is in) or ray://head:10001; none = start a local Ray."
    ),
]
FollowOutside = Annotated[
    bool,
    typer.Option(
        "--follow-symlinks-outside",
        help="Also read what symlinks point at outside the given paths (never, by default: a bundle from a "
        "compromised host can link to /etc or /proc).",
    ),
]
Workers = Annotated[
    int | None, typer.Option(help="Processes for --engine pool, CPUs for a local Ray (default: all cores).")
]
