"""Shared fixtures: paths to test data and the optional shared evaluation data."""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).parent.parent
SHARED = REPO.parent / "shared" / "data"


@pytest.fixture
def incident_dir() -> Path:
    """A small multi-source incident written in the real formats (tests/data/incident)."""
    return DATA / "incident"


def write(path: Path, text: str | bytes) -> Path:
    """Write `text` to `path`, creating parents."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path
