"""Shared fixtures: paths to test data and the optional shared evaluation data."""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).parent.parent
SHARED = REPO.parent / "shared" / "data"


@pytest.fixture(scope="module")
def as_a_large_run():
    """Ingest through the compiled speed passes (fast lane, metrics scan) as a large run does.

    A run of a few KB, as every test's is, leaves all its lines to the general path and the
    metrics regexes (`forensics.ingestion.batches.SPEED_PASSES_MIN_CHARS`), which define what the
    passes must give; the format tests use this to cover the passes end to end too. (Module
    scope: hypothesis refuses function-scoped fixtures.)"""
    from forensics.ingestion import batches

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(batches, "SPEED_PASSES_MIN_CHARS", 0)
        yield


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
