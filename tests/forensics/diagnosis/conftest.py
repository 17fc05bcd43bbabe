"""Helpers the diagnosis tests share: pods scheduled on nodes, vLLM metrics lines, Kubernetes events."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from tests.conftest import write as write_file


def scheduled_on(tmp_path: Path, nodes: dict[str, str]) -> None:
    """`kubectl get events -o json` with each pod's Scheduled event (pod -> node)."""
    items = [
        {
            "kind": "Event",
            "metadata": {"name": f"{pod}.1", "namespace": "serving"},
            "involvedObject": {"kind": "Pod", "name": pod, "namespace": "serving"},
            "reason": "Scheduled",
            "message": f"Successfully assigned serving/{pod} to {node}",
            "type": "Normal",
            "firstTimestamp": "2025-03-02T07:40:00Z",
            "lastTimestamp": "2025-03-02T07:40:00Z",
            "count": 1,
            "source": {"component": "default-scheduler"},
        }
        for pod, node in nodes.items()
    ]
    write_file(tmp_path / "events.json", json.dumps({"kind": "List", "items": items}))


def metrics_lines(start, minutes: int, drop_at: int | None, every_s: int = 10) -> str:
    """A V1 engine's metrics lines under `kubectl logs --timestamps`, one every `every_s` seconds;
    from minute `drop_at` on, generation falls to zero while requests stay running."""

    out = []
    for i in range(minutes * 60 // every_s):
        t = start + timedelta(seconds=i * every_s)
        down = drop_at is not None and i * every_s >= drop_at * 60
        gen = 0.0 if down else 2400.0 + (i % 7) * 10
        out.append(
            f"{t:%Y-%m-%dT%H:%M:%S}.000000000Z (APIServer pid=7) INFO {t:%m-%d %H:%M:%S} [loggers.py:123] Engine 000: "
            f"Avg prompt throughput: 1800.0 tokens/s, Avg generation throughput: {gen:.1f} tokens/s, Running: 12 reqs, "
            f"Waiting: 0 reqs, GPU KV cache usage: 40.0%, Prefix cache hit rate: 20.0%\n"
        )
    return "".join(out)


def k8s_event(t, reason, pod, message, kind="Pod", count=1, first=None):
    stamp = f"{t:%Y-%m-%dT%H:%M:%SZ}"
    return {
        "kind": "Event",
        "type": "Warning" if reason in ("Unhealthy", "BackOff") else "Normal",
        "reason": reason,
        "message": message,
        "count": count,
        "firstTimestamp": f"{first:%Y-%m-%dT%H:%M:%SZ}" if first else stamp,
        "lastTimestamp": stamp,
        "involvedObject": {"kind": kind, "name": pod, "namespace": "serving"},
        "source": {"component": "kubelet", "host": "gpu-node-1"},
        "metadata": {"name": f"{pod}.{reason}.{stamp}", "namespace": "serving"},
    }
