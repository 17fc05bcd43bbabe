"""The one entry point of a simulation: the compiled scheduler where it has the policy, else the reference.

Kept apart from both simulators so that neither imports the other: `replay.scheduler` is the
reference only, `replay.fastsim` its compiled twin only, and tests hold them to one another.
"""

from __future__ import annotations

from . import fastsim
from .result import Result
from .scheduler import Config, simulate_reference
from .traces import Request


def simulate(requests: list[Request], policy, cfg: Config) -> Result:
    """Replay `requests` under `policy`: compiled for the built-in policies, the reference otherwise."""
    if requests and fastsim.supports(policy):
        return fastsim.simulate(requests, policy, cfg)
    return simulate_reference(requests, policy, cfg)
