"""Where a sharded run's tasks execute: in this process, a local process pool, or a Ray cluster.

All engine-specific code lives here, behind one small protocol (`Executor.map`), so the
sharded pipeline (`forensics.shards.pipeline`) is the same plain functions on every engine.
Ray is an optional extra (`pip install -e ".[ray]"` from the checkout); nothing imports it unless
`--engine ray` is asked for.

Rules that keep the engines interchangeable (shared docs, scale-out.md §4):

* task functions are module-level and take/return picklable values; tables cross task
  boundaries as `pyarrow.Table` only (a polars frame pickles 3x slower and Ray copies it);
* results come back in submission order, whatever order tasks finish in, so the
  driver's reduce is deterministic;
* a process pool starts workers with `spawn`: polars and Ray hold threads, and a forked
  copy of a threaded process can deadlock.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Protocol

from forensics.errors import ForensicsError

ENGINES = ("local", "pool", "ray")
"""`local`: the single-process pipeline (no shards). `pool` and `ray`: the sharded pipeline,
its tasks on a local process pool or on Ray."""

RAY_OBJECT_STORE_BYTES = 1 << 30
"""Object store of a Ray instance we start ourselves. Ray's default is 30% of RAM; the
results of our tasks are small partials, and 1 GiB leaves the memory to the parsers."""


class Executor(Protocol):
    workers: int

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        """`fn` over `items`, results in the order of `items`."""
        ...

    def close(self) -> None: ...


class SerialExecutor:
    """Every task in this process, one after another (the baseline of `bench/scaleout.py`)."""

    workers = 1

    def map(self, fn, items):
        return (fn(x) for x in items)

    def close(self) -> None:
        pass


class PoolExecutor:
    """Tasks on a local process pool (spawned workers)."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or os.cpu_count() or 1
        self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"))

    def map(self, fn, items):
        from concurrent.futures.process import BrokenProcessPool

        try:
            yield from self._pool.map(fn, items)
        except BrokenProcessPool as e:
            raise ForensicsError(
                "a worker process of --engine pool died (killed for memory, or started from a script without a main guard)",
                hint="check `dmesg` for the OOM killer and lower --workers; when calling forensics.analyze(engine='pool') "
                "from a script, put the call under `if __name__ == '__main__':` (workers are spawned)",
            ) from e

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class RayExecutor:
    """Tasks as Ray Core tasks, one CPU each.

    Ray Core rather than Ray Data: a shard's task already returns a small partial, so
    there is nothing to stream, and plain tasks measured fastest (scale-out.md §1b).
    With `address=None` and no Ray running, a local instance is started (and shut down
    by `close`); `"auto"` or `"ray://head:10001"` joins an existing cluster, whose
    workers need `forensics` installed and the log paths mounted at the same place.
    """

    def __init__(self, address: str | None = None, workers: int | None = None) -> None:
        try:
            import ray
        except ImportError as e:
            raise ForensicsError(
                "--engine ray needs Ray, which is not installed",
                hint='pip install -e ".[ray]" in the checkout (or use --engine pool on one machine)',
            ) from e
        self._ray = ray
        self._started = False
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if address is None:
                kwargs |= {"num_cpus": workers or os.cpu_count() or 1, "object_store_memory": RAY_OBJECT_STORE_BYTES}
            try:
                ray.init(address=address, **kwargs)
            except Exception as e:  # noqa: BLE001 - ConnectionError, RuntimeError, ValueError: Ray's own, by version
                raise ForensicsError(
                    f"cannot start or reach Ray at {address or 'a new local instance'}: "
                    f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                    hint="start a cluster first (`ray start --head`), leave out --ray-address to start a local one, "
                    "or use --engine pool on one machine",
                ) from e
            self._started = True
        self.workers = int(ray.cluster_resources().get("CPU", 1))
        self._remotes: dict[Callable, Any] = {}

    def map(self, fn, items):
        remote = self._remotes.get(fn)
        if remote is None:
            remote = self._remotes[fn] = self._ray.remote(num_cpus=1, max_retries=2)(fn)
        refs = [remote.remote(x) for x in items]
        return (self._ray.get(r) for r in refs)

    def close(self) -> None:
        if self._started:
            self._ray.shutdown()


def check(engine: str, allowed: tuple[str, ...] = ENGINES) -> None:
    """Refuse an unknown engine name before any work starts."""
    if engine not in allowed:
        raise ForensicsError(f"unknown --engine {engine!r}", hint="use one of: " + ", ".join(ENGINES))


def executor(engine: str, *, workers: int | None = None, address: str | None = None) -> Executor:
    """The executor for `--engine` (`serial`: the benchmarks' baseline); `local` has none."""
    check(engine, ("pool", "ray", "serial"))
    if engine == "pool":
        return PoolExecutor(workers)
    if engine == "ray":
        return RayExecutor(address, workers)
    return SerialExecutor()
