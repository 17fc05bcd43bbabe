"""Allocator tuning: set before polars loads, never over a setting the user chose."""

from __future__ import annotations

import os
import subprocess
import sys

from forensics import _malloc


def _conf_seen_by_polars(env: dict[str, str]) -> str:
    code = "import forensics, polars, os; print(os.environ['_RJEM_MALLOC_CONF'])"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_importing_forensics_sets_the_jemalloc_conf_polars_then_appends():
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    conf = _conf_seen_by_polars(env)
    # polars puts its own defaults first and the override last: the last setting wins.
    assert conf.endswith("," + _malloc.JEMALLOC_CONF)


def test_a_users_jemalloc_conf_is_kept():
    env = {**os.environ, "_RJEM_MALLOC_CONF": "dirty_decay_ms:0"}
    assert _conf_seen_by_polars(env).endswith(",dirty_decay_ms:0")


def test_release_free_memory_says_whether_it_could():
    assert _malloc.release_free_memory() is bool(os.confstr("CS_GNU_LIBC_VERSION"))
