"""Allocator tuning: set before polars loads, never over a setting the user chose."""

from __future__ import annotations

import os
import subprocess
import sys

from forensics import _malloc

CLI_RUN = "import sys, forensics.cli\nsys.argv = ['forensics', '--version']\ntry:\n    forensics.cli.main()\nexcept SystemExit:\n    pass"


def _conf_seen_by_polars(env: dict[str, str], code: str) -> str:
    code += "\nimport os, polars\nprint(os.environ.get('_RJEM_MALLOC_CONF', ''))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def test_the_cli_sets_the_jemalloc_conf_before_polars_loads_and_polars_then_appends():
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    conf = _conf_seen_by_polars(env, CLI_RUN)
    # polars puts its own defaults first and the override last: the last setting wins.
    assert conf.endswith("," + _malloc.JEMALLOC_CONF)


def test_importing_the_library_changes_no_process_state():
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    conf = _conf_seen_by_polars(env, "import forensics, forensics.ingestion")
    assert _malloc.JEMALLOC_CONF not in conf


def test_a_users_jemalloc_conf_is_kept():
    env = {**os.environ, "_RJEM_MALLOC_CONF": "dirty_decay_ms:0"}
    assert _conf_seen_by_polars(env, CLI_RUN).endswith(",dirty_decay_ms:0")


def test_release_free_memory_says_whether_it_could():
    assert _malloc.release_free_memory() is bool(os.confstr("CS_GNU_LIBC_VERSION"))
