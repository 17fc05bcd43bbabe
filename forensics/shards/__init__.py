"""The same parse and mining, on one process, a local pool or a Ray cluster.

`pipeline` cuts the files into shards, parses and mines each on an `engines` executor, and
merges their templates; the local engine runs the same path in this process.
"""

from forensics.shards.engines import ENGINES, executor
from forensics.shards.pipeline import ingest_and_mine, prepare

__all__ = ["ENGINES", "executor", "ingest_and_mine", "prepare"]
