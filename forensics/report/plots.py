"""Plots for the postmortem: cluster throughput with the incident marked, KV cache usage.

Headless (Agg) and deterministic: fixed figure size, no timestamps or software version
in the files' metadata, a fixed SVG hash salt, series drawn in sorted order. Drawn from
`analysis.json` alone.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

METADATA_PNG = {"Software": None}
METADATA_SVG = {"Creator": None, "Date": None, "Format": None, "Type": None}


def _mpl():
    import matplotlib

    matplotlib.use("Agg", force=True)
    matplotlib.rcParams["svg.hashsalt"] = "forensics"
    matplotlib.rcParams["svg.fonttype"] = "none"
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt

    return plt, mdates


def _t(x: str) -> datetime:
    return datetime.fromisoformat(x.replace("Z", "+00:00"))


class _Window:
    """The time axis of a plot: the series' span, and the marks (incident spans, first sightings)
    near enough to it to draw.

    A mark far from the series (a line of a badly set clock in 1970, or in year 9999, a symptom a
    fortnight later) would stretch the axis until the series is a sliver, or past the years
    matplotlib can draw; an incident the logs could not time has no place on it at all. Those are
    left out of the plot (the report and analysis.json still give them). Near is within the
    series' span (10 minutes at least) of either end.
    """

    def __init__(self, t: list[datetime]) -> None:
        pad = max(t[-1] - t[0], timedelta(minutes=10))
        self.last, self._near = t[-1], (t[0] - pad, t[-1] + pad)

    def has(self, x: datetime) -> bool:
        return self._near[0] <= x <= self._near[1]

    def span(self, start: str | None, end: str | None) -> tuple[datetime, datetime] | None:
        """An incident's (start, end) on the axis (an open end: the series' last point); None
        when it was not timed or lies beyond the marks drawn."""
        if not start:
            return None
        a, b = _t(start), _t(end) if end else self.last
        return (a, b) if self.has(a) and self.has(b) else None


def throughput(analysis: dict, out: Path) -> list[Path]:
    """throughput.png and .svg: cluster line, per-pod lines, incident shaded, root cause and symptoms marked."""
    th = analysis["throughput"]
    if not th.get("measured") or not th["t"]:
        return []
    plt, mdates = _mpl()
    t = [_t(x) for x in th["t"]]
    window = _Window(t)
    fig, ax = plt.subplots(figsize=(13, 4.2), dpi=110)
    for name, ys in th["per_pod"].items():
        ax.plot(t, [float("nan") if y is None else y for y in ys], lw=0.8, alpha=0.55, label=name[-24:])
    ax.plot(t, [float("nan") if y is None else y for y in th["total"]], color="black", lw=2.0, label="cluster")
    drawn, labelled = 0, set()

    def label(text: str) -> str | None:
        """One legend entry per kind of mark, not one rotated label per line (they overlapped)."""
        if text in labelled:
            return None
        labelled.add(text)
        return text

    for inc in analysis["incidents"]:
        span = window.span(inc["start"], inc["end"])
        if span is None:
            continue
        drawn += 1
        ax.axvspan(*span, color="tab:red", alpha=0.10, label=label("incident"))
        rc = inc["root_cause"]
        if rc.get("first_seen") and window.has(x := _t(rc["first_seen"])):
            ax.axvline(x, color="tab:red", lw=1.4, ls="--", label=label(f"root cause: {rc['category']}"))
        seen = set()
        for h in inc["hypotheses"]:
            if h["role"] == "symptom" and h["first_seen"] and h["category"] not in seen and len(seen) < 3:
                if not window.has(x := _t(h["first_seen"])):
                    continue
                seen.add(h["category"])
                ax.axvline(x, color="tab:orange", lw=0.9, ls=":", label=label(f"symptom: {h['category']}"))
    ax.set_ylabel(th["unit"])
    ax.set_title("Cluster throughput (UTC)")
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M"))
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if len(labels) > 12:  # (pods beyond a dozen: the marks and the cluster line only)
        keep = [i for i, lab in enumerate(labels) if lab in ("cluster", "incident") or ": " in lab]
        handles, labels = [handles[i] for i in keep], [labels[i] for i in keep]
    # Outside the axes, on the right: over the plot it hid the data it explains.
    ax.legend(handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    paths = [out / "throughput.png", out / "throughput.svg"]
    fig.savefig(paths[0], metadata=METADATA_PNG)
    fig.savefig(paths[1], metadata=METADATA_SVG)
    plt.close(fig)
    return paths


def kv_usage(analysis: dict, out: Path) -> list[Path]:
    """kv_usage.png: mean GPU KV cache usage and the waiting queue, where the logs have them."""
    th = analysis["throughput"]
    kv = th.get("kv_usage")
    if not th.get("measured") or not kv or all(v is None for v in kv):
        return []
    plt, mdates = _mpl()
    t = [_t(x) for x in th["t"]]
    window = _Window(t)
    fig, ax = plt.subplots(figsize=(11, 3.2), dpi=110)
    ax.plot(
        t,
        [float("nan") if v is None else 100 * v for v in kv],
        color="tab:purple",
        lw=1.6,
        label="GPU KV cache usage %",
    )
    ax.set_ylim(0, 105)
    ax.set_ylabel("KV cache usage %")
    ax2 = ax.twinx()
    w = th.get("waiting") or []
    ax2.plot(t, [float("nan") if v is None else v for v in w], color="tab:green", lw=1.0, label="waiting requests")
    ax2.set_ylabel("waiting requests")
    for inc in analysis["incidents"]:
        span = window.span(inc["start"], inc["end"])
        if span is None:
            continue
        ax.axvspan(*span, color="tab:red", alpha=0.10)
        tell = inc.get("tell") and window.span(inc["tell"]["start"], inc["tell"]["end"])
        if tell:
            ax.axvspan(*tell, color="tab:purple", alpha=0.12)
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M"))
    ax.set_title("KV cache usage and queue (UTC)")
    ax.grid(alpha=0.3)
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], fontsize=7, loc="upper left")
    fig.tight_layout()
    path = out / "kv_usage.png"
    fig.savefig(path, metadata=METADATA_PNG)
    plt.close(fig)
    return [path]
