"""A serving process's own resources: file descriptors and ports. Said before the transports
that report their failure (asyncio, NCCL's sockets, ZMQ, the TCPStore)."""

from __future__ import annotations

from forensics.diagnosis.catalog.entry import Layer, Signature, Trait
from forensics.diagnosis.catalog.labels import FD_EXHAUSTED

ENTRIES: tuple[Signature, ...] = (
    # A process out of file descriptors fails every socket it opens: said before the transports
    # that report it (asyncio's accept loop, NCCL's sockets, ZMQ). Under load it is the API
    # server's open connections over its `ulimit -n`.
    Signature(
        id="engine.process-ran-out-file",
        source="Linux EMFILE (errno 24) as Python and ZeroMQ report it",
        category="engine",
        kind="fault",
        layer=Layer.ENGINE,
        pattern=r"\[Errno 24\] Too many open files|Too many open files \(|socket\.accept\(\) out of system resource"
        r"|: Too many open files$",
        label=FD_EXHAUSTED,
        action="Raise the container's open-file limit (`LimitNOFILE` of the container runtime, or `ulimit -n` in the "
        "entrypoint, to 65536 or more), cap concurrent connections per pod at the gateway, and alert on "
        "`process_open_fds` against `process_max_fds`.",
        traits=frozenset({Trait.FD_LIMIT}),
    ),
    # sshd logs a failed bind on every start where two ListenAddress entries (or its IPv4 and IPv6
    # wildcards) cover one port, and serves on the rest: a node's routine notice, not a port taken
    # from a server. Before the port-taken entry, whose words it shares.
    Signature(
        id="node.sshd-bind-notice",
        source="OpenSSH sshd.c ('Bind to port %s on %s failed: %.200s.')",
        category="node",
        kind="symptom",
        layer=Layer.NODE,
        pattern=r"\bsshd(?:\[\d+\])?: error: Bind to port \d+ on \S+ failed",
        label="sshd could not bind one of its listen addresses (it serves on the others)",
        traits=frozenset({Trait.NO_ACTION}),
    ),
    # The API server's port (uvicorn's bind, vLLM's own socket), the TCPStore's master port or a
    # ZMQ endpoint taken: a leftover server from the previous start, or two hostNetwork pods. Before
    # the rendezvous signature, which would read torch's `DistNetworkError: ... EADDRINUSE` as a
    # connection failing.
    Signature(
        id="engine.server-port-already-taken",
        source="Linux EADDRINUSE (errno 98) as uvicorn and vLLM's API server report it",
        category="engine",
        kind="fault",
        layer=Layer.ENGINE,
        pattern=r"(?i:address already in use)|\bEADDRINUSE\b",
        label="the server's port is already taken (a leftover vLLM process, or two hostNetwork pods on one node; engine "
        "start)",
        action="Find what holds the port on {host} (`ss -ltnp | grep PORT`): a vLLM from an earlier start still "
        "running (kill it, or make the entrypoint `exec` vLLM so it dies with the container), or a second pod with "
        "`hostNetwork: true` (give each its own port, or an anti-affinity).",
        traits=frozenset({Trait.AT_START}),
    ),
)
