"""What a log's path says about whose it is: the node of a node-level log.

A node's own logs (dmesg, kubelet journals, nvidia-smi snapshots) rarely name their host; the
layouts people collect them in (`nodes/<node>/`, sos reports, `<node>-dmesg.txt`) do.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

NODE_LOG_WORDS = re.compile(
    r"(?i)(?:^|[._-])(?:(?:nvidia[._-]?)?smi(?:[._-]q)?|dmesg(?:[._-]T)?|kern|kernel|messages|syslog"
    r"|journal(?:ctl)?|kubelet|containerd|crio|boot)(?:_--?[\w=-]*)*(?=$|[._-])"
)
"""The words naming a node's own log in a file name (`gpu-b-dmesg.txt`, `kubelet.log`,
`nvidia-smi-q.txt`), with the command's options where sos names a file for the command that
wrote it (`dmesg_-T`, `journalctl_--no-pager_--unit_kubelet`): what is left once they are cut
is the node."""
SOSREPORT_DIR = re.compile(r"^sosreport-(?P<host>.+?)(?:[.-]\d{5,})?-(?:\d{4}-\d{2}-\d{2}(?:-\w+)?|\d{14})$")
"""An unpacked sos report, named for its host (`sosreport-<host>[-<case id>]-<YYYY-MM-DD>-<random>`;
sos 3: `sosreport-<host>[.<case id>]-<YYYYMMDDhhmmss>`): every file under it is that node's."""
NODE_DIRS = frozenset({"nodes", "node", "hosts", "host"})
"""Directories whose children are named for nodes (`nodes/<node>/...`, must-gather's layout)."""
_NOT_A_NODE = frozenset(
    {
        "log",
        "logs",
        "var",
        "kernel",
        "dmesg",
        "journal",
        "journals",
        "syslog",
        "kubelet",
        "system",
        "node-logs",
        "node_logs",
        "nodelogs",
        "k8s",
        "kubernetes",
        "cluster",
        "incident",
        "collected",
        "artifacts",
        "debug",
        "tmp",
    }
)
"""Directory names that say what the files are, not whose."""


def node_of(rel: str) -> str | None:
    """The node a node-level log (dmesg, a kubelet journal, an nvidia-smi snapshot) belongs to,
    from its path: the child of a `nodes/` directory, else the host of the sos report it is in,
    else the file name without the words that say what it is (`gpu-b.dmesg`, `dmesg-gpu-b.log`),
    else its directory (`gpu-b/dmesg.txt`).

    Such lines rarely name their host (`dmesg -T` never does); without one a GPU's Xid or a
    link going down could not be put on the node whose pods then failed."""
    path = PurePosixPath(rel)
    dirs = path.parts[:-1]
    for i, d in enumerate(dirs[:-1]):
        if d.lower() in NODE_DIRS:
            return dirs[i + 1]
    for d in dirs:
        if m := SOSREPORT_DIR.match(d):
            return m["host"]
    name = NODE_LOG_WORDS.sub("-", path.name.split(".")[0]).strip("-_. ")
    if name:
        return name
    parent = dirs[-1] if dirs else ""
    return parent if parent and parent.lower() not in _NOT_A_NODE else None
