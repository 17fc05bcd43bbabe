"""Options shared by `analyze`, `ingest` and `templates`: where the work runs."""

from __future__ import annotations

from pathlib import Path
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

_CAPS = "Caps on hostile input"
MaxDecompressed = Annotated[
    str,
    typer.Option(
        help="The most read from one compressed file (32G); past it the rest is cut, with a note.",
        rich_help_panel=_CAPS,
    ),
]
MaxRatio = Annotated[
    int,
    typer.Option(
        help="A compressed file expanding past this ratio (after 256 MiB) is a compression bomb and is cut.",
        rich_help_panel=_CAPS,
    ),
]
MaxLine = Annotated[
    str, typer.Option(help="Longer lines are cut here, with a marker (1M characters).", rich_help_panel=_CAPS)
]
MaxDepth = Annotated[
    int, typer.Option(help="Directories deeper than this below a given path are not read.", rich_help_panel=_CAPS)
]


def limits(max_decompressed: str, max_ratio: int, max_line: str, max_depth: int):
    """The cap options as `forensics.ingestion.limits.Limits`; a bad value is a `ForensicsError`."""
    from forensics.errors import ForensicsError
    from forensics.ingestion.limits import Limits, size

    try:
        return Limits(
            decompressed_bytes=size(max_decompressed),
            bomb_ratio=max_ratio,
            line_chars=size(max_line),
            dir_depth=max_depth,
        )
    except ValueError as e:
        raise ForensicsError(f"bad cap: {e}", hint="e.g. --max-decompressed 32G --max-line 1M --max-depth 64") from e


def at_least(option: str, value: float | None, low: float) -> None:
    """Refuse `value` under `low` (NaN included) before any work starts; None is the default."""
    from forensics.errors import ForensicsError

    if value is not None and not value >= low:
        raise ForensicsError(f"{option} {value} is out of range", hint=f"pass {option} {low:g} or more")


def positive(option: str, value: float | None) -> None:
    """Refuse a non-positive or non-finite `value` (a rate multiple, a scale); None is the default."""
    import math

    from forensics.errors import ForensicsError

    if value is not None and not (math.isfinite(value) and value > 0):
        raise ForensicsError(f"{option} {value} is out of range", hint=f"pass a number above 0, e.g. {option} 1.5")


def out_dir(option: str, path: Path | None) -> None:
    """Refuse an output directory that is an existing file (it is created when missing)."""
    from forensics.errors import ForensicsError
    from forensics.ingestion.files import printable

    if path is not None and path.exists() and not path.is_dir():
        raise ForensicsError(
            f"{option} {printable(str(path))} is a file, not a directory",
            hint="pass a new or existing directory (it is created when missing)",
        )
