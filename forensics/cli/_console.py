"""Rich rendering shared by the commands: progress bars and summaries."""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

PIPED_WIDTH = 240
"""The width tables are laid out for when stdout is not a terminal (and `COLUMNS` does not say)."""
_PIPED = not sys.stdout.isatty()


def _width() -> int | None:
    """rich's own choice on a terminal; piped, `COLUMNS` when set, else `PIPED_WIDTH`."""
    if not _PIPED:
        return None
    cols = os.environ.get("COLUMNS", "")
    return int(cols) if cols.isdigit() and int(cols) > 0 else PIPED_WIDTH


console = Console(stderr=False, highlight=False, soft_wrap=_PIPED, width=_width())
"""Piped to a file or another tool, lines are not wrapped at 80 columns (mid-sentence, mid-path),
and tables are laid out `PIPED_WIDTH` wide, not squeezed into rich's default 80 (a template
column four characters wide)."""
err_console = Console(stderr=True, highlight=False)


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: object) -> str:
    """Text from the logs as the console may print it: control characters (a terminal's escape
    sequences, which retitle or reset the terminal or hide a link) shown as `\\x1b`, not sent."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def safe(text: object) -> str:
    """`visible`, and rich's markup escaped: a path, host or log line holding `[/]` or
    `[link=...]` is printed as it is, never read as markup (which fails, or makes a link)."""
    return escape(visible(text))


@contextlib.contextmanager
def progress(quiet: bool) -> Iterator:
    """A byte-based progress bar on stderr; yields a `(done, total, name)` callback."""
    if quiet or not err_console.is_terminal:
        yield None
        return
    with Progress(
        TextColumn("[bold]reading[/]"),
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[name]}", style="dim"),
        console=err_console,
        transient=True,
    ) as bar:
        task = bar.add_task("ingest", total=None, name="")

        def report(done: int, total: int, name: str) -> None:
            bar.update(task, completed=done, total=total, name=name[-60:])

        yield report


STAGES = ("ingest", "templates", "timeline", "root cause", "replay", "report")


@contextlib.contextmanager
def stages(quiet: bool) -> Iterator:
    """A bar across the analysis stages plus the byte progress of reading; yields (bytes_cb, stage_cb)."""
    if quiet or not err_console.is_terminal:
        yield None, None
        return
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TextColumn("{task.fields[name]}", style="dim"),
        console=err_console,
        transient=True,
    ) as bar:
        st = bar.add_task("stages", total=len(STAGES), name="")
        rd = bar.add_task("reading", total=None, name="")

        def on_bytes(done: int, total: int, name: str) -> None:
            bar.update(rd, completed=done, total=total, name=name[-50:])

        def on_stage(name: str) -> None:
            idx = STAGES.index(name) if name in STAGES else 0
            bar.update(st, completed=idx, name=name)

        yield on_bytes, on_stage
        bar.update(st, completed=len(STAGES))


def print_ingest_summary(result, written: dict[str, Path]) -> None:
    """Files by format, line accounting, time span, hosts and pods, skipped files."""
    by_format: Counter[str] = Counter()
    lines_by_format: Counter[str] = Counter()
    for f in result.files:
        key = f.formats[0] if f.formats else "-"
        if f.wrapper:
            key = f"{key} ({f.wrapper})"
        by_format[key] += 1
        lines_by_format[key] += f.lines
    t = Table(title="Files by detected format", title_justify="left")
    t.add_column("format")
    t.add_column("files", justify="right")
    t.add_column("lines", justify="right")
    for k in sorted(by_format):
        t.add_row(safe(k), str(by_format[k]), f"{lines_by_format[k]:,}")
    console.print(t)
    lo, hi = result.time_span()
    pct = (100.0 * result.unparsed / result.lines) if result.lines else 0.0
    console.print(
        f"[bold]{result.lines:,}[/] lines in {len(result.files)} files: "
        f"{result.parsed:,} parsed, {result.folded:,} folded into multi-line events, "
        f"{result.unparsed:,} unparsed ({pct:.1f}%) -> {result.n_events:,} events, {result.n_metrics:,} metric samples"
    )
    if lo is not None:
        console.print(f"time span: {lo:%Y-%m-%d %H:%M:%S} -> {hi:%Y-%m-%d %H:%M:%S} UTC")
    hosts = sorted(h for h in result.column("host").drop_nulls().unique().to_list())
    pods = sorted(p for p in result.column("pod").drop_nulls().unique().to_list())
    if hosts:
        console.print(f"hosts ({len(hosts)}): " + safe(", ".join(hosts[:12])) + (" ..." if len(hosts) > 12 else ""))
    if pods:
        console.print(f"pods ({len(pods)}): " + safe(", ".join(pods[:12])) + (" ..." if len(pods) > 12 else ""))
    for f in result.files:
        for n in f.notes:
            console.print(f"[yellow]note[/] {safe(f.file)}: {safe(n)}")
    for k in result.skipped:
        console.print(f"[yellow]skipped[/] {safe(k.file)}: {safe(k.reason)}")
    for w in result.warnings:
        console.print(f"[yellow]warning[/] {safe(w)}")
    console.print("wrote " + safe(", ".join(str(p) for p in written.values())))


def print_templates(table, changes, top: int) -> None:
    """The templates table (or the baseline diff when one was given), most significant first."""
    import polars as pl

    if changes is not None:
        t = Table(title="Templates against the baseline", title_justify="left")
        for c in ("status", "id", "now", "before", "ratio", "score", "template"):
            t.add_column(c, justify="right" if c in ("now", "before", "ratio", "score") else "left", overflow="fold")
        for r in changes.filter(pl.col("status") != "SAME").head(top).iter_rows(named=True):
            style = {"NEW": "bold red", "GONE": "dim", "CHANGED": "yellow"}.get(r["status"], "")
            ratio = "-" if r["rate_ratio"] is None else f"{r['rate_ratio']:.1f}x"
            t.add_row(
                f"[{style}]{r['status']}[/]",
                safe(r["template_id"]),
                str(r["count_current"]),
                str(r["count_baseline"]),
                ratio,
                f"{r['score']:.1f}",
                safe(r["template"][:110]),
            )
        console.print(t)
        return
    t = Table(title=f"{table.height} templates", title_justify="left")
    for c in ("id", "count", "first seen", "last seen", "source", "level", "hosts/pods", "template"):
        t.add_column(c, justify="right" if c == "count" else "left", overflow="fold")
    for r in table.head(top).iter_rows(named=True):
        where = ", ".join((r["hosts"] or []) + (r["pods"] or []))
        first = r["first_seen"].strftime("%m-%d %H:%M:%S") if r["first_seen"] else "-"
        last = r["last_seen"].strftime("%m-%d %H:%M:%S") if r["last_seen"] else "-"
        t.add_row(
            safe(r["template_id"]),
            f"{r['count']:,}",
            first,
            last,
            safe(r["source"]),
            safe(r["level"] or "-"),
            safe(where[:40]),
            safe(r["template"][:110]),
        )
    console.print(t)


def print_verdict(analysis: dict, written: dict[str, Path]) -> None:
    """The short verdict after `forensics analyze`: window, root cause with evidence, top symptoms."""
    inp = analysis["input"]
    console.print(
        f"{inp['files']} files, {inp['lines']:,} lines ({inp['unparsed']:,} unparsed), "
        f"{len(inp['skipped'])} skipped, {inp['templates']} templates"
    )
    for d in analysis.get("load_declines", []):
        console.print(
            f"Throughput fell with the load from {d['start']}: {d['from_per_s']:,.0f} -> {d['to_per_s']:,.0f} "
            f"{d['unit']} (prompt throughput alike, no queue building, nothing failed): not an incident."
        )
    if not analysis["incidents"]:
        quiet = analysis.get("quiet_faults") or []
        if quiet:
            why = "throughput steady and no replica went dark, [yellow]but faults were logged[/]"
        elif analysis.get("load_declines"):
            why = "no fault bursts"
        elif (analysis.get("throughput") or {}).get("measured"):
            why = "throughput steady and no fault bursts"
        else:  # (as the postmortem says it: no series, so no drop could be looked for)
            why = "no fault bursts, and no throughput series in these logs to look for a drop in"
        console.print(f"[green]No incident found[/]: {why}.")
        for f in quiet:
            console.print(f"  fault: {safe(f['label'])} (x{f['count']}), first at {safe(f['file'])}:{f['line']}")
        errors = analysis.get("unexplained_errors") or []
        if errors:
            console.print(
                f"[yellow]{sum(e['count'] for e in errors):,} error-level message(s)[/] match no known fault or "
                f"symptom ({len(errors)} template(s), first at {safe(errors[0]['file'])}:{errors[0]['line']}): "
                "read them in the postmortem before closing the ticket."
            )
    for n, inc in enumerate(analysis["incidents"], 1):
        rc = inc["root_cause"]
        imp = inc["impact"]
        end = inc["end"] or "not recovered"
        head = f"[bold]Incident {n}[/]: {inc['start']} -> {end}"
        if not inc["start"]:
            head = f"[bold]Incident {n}[/]: untimed (no timestamps in these logs; ordered by position)"
        if imp["measured"] and imp["min_per_s"] is not None:
            head += f"  throughput {imp['baseline_per_s']:,.0f} -> {imp['min_per_s']:,.0f} {imp['unit']}"
        elif imp["detector"] == "startup-failure":
            head += "  (the service failed during start-up and never served)"
        elif imp.get("series_ended"):
            head += f"  (impact not measurable: the throughput series ends at {imp['series_ended']}, before it)"
        elif not imp["measured"]:
            head += "  (impact not measurable: no throughput series in these logs)"
        console.print(head)
        style = "bold green" if rc["status"] == "supported" else "bold yellow"
        console.print(
            f"  root cause [{style}]{rc['status']}[/] ({rc['confidence']:.2f}): "
            f"[bold]{rc['category']}[/] {safe(rc.get('label', ''))}"
            + (f" on {safe(', '.join(rc['hosts'][:2]))}" if rc["hosts"] else "")
            + (f" from {rc['first_seen']}" if rc["first_seen"] else "")
        )
        if rc.get("template"):
            console.print(f"    {visible(rc['template'][:140])}", markup=False)
        for ev in rc.get("evidence", [])[:1]:
            console.print(f"    evidence {visible(ev['file'])}:{ev['line']}", markup=False)
        if rc.get("missing"):
            console.print(f"  [yellow]missing:[/] {safe(rc['missing'])}")
        symptoms = [h for h in inc["hypotheses"] if h["role"] == "symptom"][:4]
        for h in symptoms:
            console.print(
                f"  symptom: {h['category']} {visible(h['template'][:100]) if h['template'] else ''} (x{h['count']})",
                markup=False,
            )
    console.print("wrote " + safe(", ".join(str(p) for p in written.values())))
