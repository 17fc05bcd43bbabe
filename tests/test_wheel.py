"""The built wheel, installed (not editable) into a fresh environment beside the unrelated
`replay` and `templates` packages of the public index: it must work there and leave them whole.

The fresh environment borrows this one's dependencies through a `.pth` line (so the test does
not download polars and torch again); the project itself comes only from the wheel, and the
commands run outside the checkout, so nothing is found there by accident.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO

UNRELATED = ("replay==0.1.2", "templates==0.0.5")
"""Packages of the public index with the names of two of our folders."""


def _pip(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, cwd=cwd, timeout=600)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    p = _pip("wheel", str(REPO), "--no-deps", "-q", "-w", str(out))
    if p.returncode != 0 and ("No matching distribution" in p.stderr or "Could not find" in p.stderr):
        pytest.skip(f"cannot fetch the build backend (no package index here): {p.stderr.strip()[-200:]}")
    assert p.returncode == 0, p.stderr
    (whl,) = out.glob("*.whl")
    return whl


@pytest.fixture(scope="module")
def fresh(tmp_path_factory, wheel) -> Path:
    env = tmp_path_factory.mktemp("env") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, timeout=120)
    python = env / "bin" / "python"
    p = _pip("--python", str(python), "install", "-q", "--no-deps", *UNRELATED, str(wheel))
    if p.returncode != 0 and ("No matching distribution" in p.stderr or "Could not find" in p.stderr):
        pytest.skip(f"cannot fetch {', '.join(UNRELATED)} (no package index here)")
    assert p.returncode == 0, p.stderr
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(site) / "zz_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def test_the_wheel_names_itself_uniquely_and_ships_replay_and_templates_inside_forensics(wheel):
    assert wheel.name.startswith("gpu_serving_forensics-")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.endswith(".dist-info") and "dist-info" not in n.split("/")[0]}
    assert tops == {"forensics", "parsers", "samples"}
    assert "forensics/_replay/scheduler.py" in names
    assert "forensics/templates/postmortem.md.j2" in names
    assert "samples/generate.py" in names
    assert not [n for n in names if "__pycache__" in n]


def test_the_installed_wheel_runs_the_sample_beside_the_unrelated_packages(fresh, tmp_path):
    run = tmp_path / "run"
    run.mkdir()

    def forensics(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(fresh), "-m", "forensics", *args], capture_output=True, text=True, cwd=run, timeout=600
        )

    p = forensics("sample", "cache-corruption", "logs")
    assert p.returncode == 0, p.stderr
    p = forensics("analyze", "logs", "--out", "report", "-q", "--no-backtest")
    assert p.returncode == 0, p.stderr
    md = (run / "report/postmortem.md").read_text()
    assert "KV cache corruption" in md and "## Action items" in md
    # the unrelated packages are still theirs, and ours are found inside forensics
    where = subprocess.run(
        [
            str(fresh),
            "-c",
            "import replay, templates, forensics._bundled as b, forensics.report.render as r; "
            "print(replay.__file__); print(templates.__file__); print(b.replay('scheduler').__name__); print(r.TEMPLATES)",
        ],
        capture_output=True,
        text=True,
        cwd=run,
        check=True,
    ).stdout.split()
    assert "/site-packages/replay/" in where[0] and "/site-packages/templates/" in where[1]
    assert where[2] == "forensics._replay.scheduler"
    assert where[3].endswith("site-packages/forensics/templates")
