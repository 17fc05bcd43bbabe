"""Render the postmortem from `analysis.json` with Jinja templates (Markdown or HTML).

Teams can pass their own template (`--template FILE`); the context is `analysis` (the
JSON as is) plus a few derived, display-only values (`ctx`). Log text is hostile input:
every string that comes from a log goes through a filter that escapes it for where it
lands (`cell` for table cells, `code` for fenced blocks with a fence longer than any
backtick run inside, `inline` for inline code), and long text is cut with a marker.
The HTML template uses Jinja autoescaping.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

import jinja2

from forensics import __version__
from forensics.diagnosis import advice

_HERE = Path(__file__).resolve()
TEMPLATES = next(
    (d for d in (_HERE.parents[1] / "templates", _HERE.parents[2] / "templates") if d.is_dir()),
    _HERE.parents[2] / "templates",
)
"""The Jinja templates: `forensics/templates/` in the installed wheel (an unrelated `templates`
package exists on the public index, so the wheel puts them inside), `templates/` in a checkout."""
CUT = " …[truncated]"


def cell(value, limit: int = 160) -> str:
    """Text safe inside a Markdown table cell: one line, `|` and HTML escaped, cut at `limit`.

    A quote escaped inside a quoted value (klog's `err="failed to \\"StartContainer\\""`) is
    shown as the quote: its backslash would have to be doubled to survive Markdown, and
    `\\\\"` in every kubelet row reads as noise. The evidence blocks keep the exact text."""
    if value is None:
        return "-"
    text = " ".join(str(value).split()).replace('\\"', '"')
    if len(text) > limit:
        text = text[:limit] + "…"
    text = text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("`", "\\`").replace("*", "\\*").replace("_", "\\_") or "-"


def cell_with_code(value, limit: int = 200) -> str:
    """`cell`, where text between a pair of backticks is a code span (`inline`): the reasons this
    tool writes name commands (`forensics replay`), and `cell` alone shows them as \\`...\\`.
    Unpaired backticks are text, escaped as `cell` escapes them."""
    text = " ".join(str(value or "").split())
    parts = text.split("`")
    if len(parts) < 3 or len(parts) % 2 == 0:
        return cell(value, limit)
    out = []
    for i, p in enumerate(parts):
        if i % 2:
            out.append(inline(p).replace("|", "\\|"))  # (GFM ends a cell at `|` even in a code span)
        elif p.strip():
            out.append((" " if p[0] == " " else "") + cell(p, limit) + (" " if p[-1] == " " else ""))
        else:
            out.append(p)
    return "".join(out) or "-"


def inline(value, limit: int = 200) -> str:
    """Inline code for any text: a backtick fence longer than any run inside, padded if needed."""
    text = " ".join(str(value or "").split())
    if len(text) > limit:
        text = text[:limit] + "…"
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or longest else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def code(value, max_lines: int = 30, max_chars: int = 4000, lang: str = "text") -> str:
    """A fenced code block that no content can close early; long text is cut with a marker."""
    text = str(value or "")
    lines = text.split("\n")
    if len(lines) > max_lines:
        lines = lines[:max_lines] + [f"…[{len(text.split(chr(10))) - max_lines} more lines truncated]"]
    text = "\n".join(line if len(line) <= 500 else line[:500] + CUT for line in lines)
    if len(text) > max_chars:
        text = text[:max_chars] + CUT
    longest = max((len(m) for m in re.findall(r"`{3,}|~{3,}", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def md_text(value) -> str:
    """Free text from a log inside a paragraph: HTML and line-leading Markdown neutralised."""
    text = " ".join(str(value or "").split())
    return (
        text.replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("`", "\\`")
        .replace("*", "\\*")
        .replace("_", "\\_")
        .replace("#", "\\#")
    )


def our_markdown(value) -> str:
    """Text this tool wrote with its own Markdown (code spans around policy and command names,
    the replay's verdict): HTML neutralised, its backticks kept (`md_text` would show them as `\\``)."""
    return " ".join(str(value or "").split()).replace("<", "&lt;").replace(">", "&gt;")


def sentence(value) -> str:
    """A clause as a sentence of its own: capital first letter, closing stop."""
    text = str(value or "").strip()
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


def mermaid_text(value, limit: int = 60) -> str:
    """Text safe in a Mermaid gantt task name (no `:`, `#`, `;` or newlines)."""
    text = re.sub(r"[:#;\n\r`\"<>]", " ", str(value or ""))
    text = " ".join(text.split())
    return (text[:limit] + "…") if len(text) > limit else text or "event"


def hhmmss(iso: str | None) -> str:
    return iso[11:19] if iso else "-"


def lead(minutes: float | None) -> str:
    """A backtest's lead time: `1.0 min before`, `4.5 min after`, or `-`."""
    if minutes is None:
        return "-"
    return f"{abs(minutes):.1f} min {'before' if minutes >= 0 else 'after'}"


def window(inc: dict) -> str:
    """`(2025-03-02 08:07:00–08:45:30 UTC)`, or what stands in for time in untimed logs."""
    if not inc.get("start"):
        return "(no timestamps in these logs: ordered by position in each file)"
    end = hhmmss(inc["end"]) if inc.get("end") else "ongoing"
    return f"({inc['start'][:10]} {hhmmss(inc['start'])}–{end} UTC)"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "ongoing"
    s = int(seconds)
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return (f"{h} h {m} min" if h else f"{m} min {sec} s") if s >= 60 else f"{sec} s"


def environment(template_path: Path | None = None, html: bool = False) -> jinja2.Environment:
    loader = jinja2.FileSystemLoader([str(template_path.parent)] if template_path else [str(TEMPLATES)])
    env = jinja2.Environment(
        loader=loader,
        autoescape=html,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(
        cell=cell,
        cell_code=cell_with_code,
        inline=inline,
        code=code,
        md=md_text,
        ours=our_markdown,
        sentence=sentence,
        mermaid=mermaid_text,
        hhmmss=hhmmss,
        lead=lead,
        duration=duration,
        window=window,
    )
    return env


def context(
    analysis: dict, *, command: str | None = None, replay: dict | None = None, plots: list[str] | None = None
) -> dict:
    """Display-only values derived from the analysis: headline, summary sentences, actions."""
    incs = analysis["incidents"]
    ctx: dict = {"version": __version__, "command": command, "replay": replay, "plots": plots or [], "incidents": []}
    for inc in incs:
        rc = inc["root_cause"]
        # The node or pod the root cause was seen on; excerpts such as a bare `kubectl describe`
        # Events section name none, and then sentences leave the "on ..." out.
        host = (rc.get("hosts") or [None])[0]
        symptoms = [h for h in inc["hypotheses"] if h["role"] == "symptom" and h["category"] != rc["category"]]
        red = []
        seen = set()
        for h in symptoms:
            if h["category"] in seen:
                continue
            seen.add(h["category"])
            red.append(h)
        actions = []
        action = advice.action_for(rc["category"], rc.get("label"))
        if rc["status"] == "supported" and action:
            actions.append(("prevent", action.format(host=host or "the affected node"), "root cause"))
        elif rc["status"] != "supported":
            actions.append(
                (
                    "detect",
                    f"Collect what the verdict lacks: {rc.get('missing') or 'more logs'}",
                    "inconclusive verdict",
                )
            )
        if inc.get("tell"):
            actions.append(
                (
                    "detect",
                    "Alert on the tell that preceded the failure: KV cache full while nothing queues (`VLLMKVCacheFullWithoutQueueing`).",
                    "tell",
                )
            )
        if (inc.get("trigger") or {}).get("kind") == "rollout":
            actions.append(
                (
                    "prevent",
                    "Gate rollouts on new replicas serving: a readiness probe that passes only once the engine has started, `maxUnavailable: 0` so old replicas stay until then, and a canary that starts the new version with the production arguments first.",
                    "trigger: rollout",
                )
            )
        elif inc.get("trigger"):
            actions.append(
                (
                    "mitigate",
                    "Load-test at the peak rate seen here before the next traffic increase; keep headroom in KV cache.",
                    "trigger",
                )
            )
        for h in red:
            if h["category"] == "collective-timeout":
                actions.append(
                    (
                        "mitigate",
                        "Shorten the NCCL watchdog timeout for serving (fail fast) and dump flight-recorder traces on timeout (`TORCH_NCCL_TRACE_BUFFER_SIZE`).",
                        "symptom: NCCL timeouts",
                    )
                )
            if h["category"] == "pod-lifecycle":
                actions.append(
                    (
                        "mitigate",
                        "Make the liveness probe tolerate a busy engine (separate readiness from liveness) so restarts do not add to the outage.",
                        "symptom: restarts",
                    )
                )
        actions.append(
            (
                "detect",
                "Apply the recommended alert rules below (`alerts.yaml`) and check them with `promtool test rules alerts_test.yaml`.",
                "detection gap",
            )
        )
        imp = inc["impact"]
        headline = (
            f"{rc['label'] if rc.get('label') else rc['category']}" + (f" on {host}" if host else "")
            if rc["status"] == "supported"
            else "cause inconclusive"
        )
        ctx["incidents"].append(
            {
                "headline": headline,
                "red_herrings": red,
                "actions": actions,
                "impact": imp,
                "summary": _summary(inc, red),
            }
        )
    return ctx


def render(
    analysis: dict,
    *,
    fmt: str = "md",
    template: Path | None = None,
    command: str | None = None,
    replay: dict | None = None,
    plot_dir: Path | None = None,
) -> str:
    """The postmortem as Markdown (`fmt="md"`) or a self-contained HTML page (`fmt="html"`)."""
    html = fmt == "html"
    env = environment(template, html=html)
    name = template.name if template else ("postmortem.html.j2" if html else "postmortem.md.j2")
    plots = []
    if plot_dir is not None:
        plots = [p.name for p in (plot_dir / "throughput.png", plot_dir / "kv_usage.png") if p.exists()]
    ctx = context(analysis, command=command, replay=replay, plots=plots)
    if html and plot_dir is not None:
        ctx["inline_plots"] = {
            n: "data:image/png;base64," + base64.b64encode((plot_dir / n).read_bytes()).decode() for n in plots
        }
    return env.get_template(name).render(analysis=analysis, ctx=ctx)


def _summary(inc: dict, red: list[dict]) -> str:
    """The Summary paragraph, one sentence per finding, in Markdown (log text escaped)."""
    rc, imp = inc["root_cause"], inc["impact"]
    when = f"At {hhmmss(rc['first_seen'])} UTC" if inc["start"] else "First in these untimed logs,"
    if rc["status"] != "supported":
        start = f"starting {hhmmss(inc['start'])} UTC" if inc["start"] else "(the logs carry no timestamps)"
        return f"The logs show an incident {start} but do not decide its cause: {md_text(rc.get('missing'))}."
    what = inline(rc["template"], 120)
    logged = f"{md_text(rc['hosts'][0])} logged {what}" if rc["hosts"] else f"{what} was logged"
    # Symptoms logged before the root cause's own line: a snapshot taken after the fact (an
    # `nvidia-smi`, a RAS report) tells of a fault older than the line that records it.
    first = rc.get("first_seen")
    before = [h for h in red if first and h.get("first_seen") and h["first_seen"] < first]
    red = [h for h in red if h not in before]
    if before:
        cats = ", ".join(h["category"] for h in before)
        out = [
            f"{when} {logged} ({rc['category']}: {md_text(rc['label'])}). It explains what was logged before it from "
            f"{hhmmss(min(h['first_seen'] for h in before))} ({cats}): symptoms, not causes."
        ]
    elif rc["category"] == "config-change":  # (a change is no failure of its own)
        out = [f"{when} {logged} ({md_text(rc['label'])}), and no fault logged explains the drop better."]
    else:
        a = "an" if rc["category"][0] in "aeiou" else "a"
        out = [f"{when} {logged}, the first sign of {a} {rc['category']} failure ({md_text(rc['label'])})."]
    if imp["measured"] and imp["min_per_s"] is not None:
        s = f"Cluster {imp['unit']} fell from {imp['baseline_per_s']:,.0f} to {imp['min_per_s']:,.0f} at {hhmmss(inc['start'])}"
        if imp["partial_recoveries"]:
            n = len(imp["partial_recoveries"])
            again = "took it down again" + ("" if n == 1 else " each time")
            s += f"; restarts brought it back {'once' if n == 1 else f'{n} times'} and the same fault {again}"
        out.append(s + ".")
    elif imp["detector"] == "saturation":
        out.append(
            f"Nothing crashed: the waiting queue grew to {imp['peak_waiting'] or 0:,.0f} requests with the KV cache full."
        )
    elif imp["detector"] == "startup-failure":
        out.append("The service never started: it failed during start-up, before it served a request.")
    elif imp.get("series_ended"):
        out.append(
            f"The impact could not be measured: the throughput series ends at {hhmmss(imp['series_ended'])}, "
            "before it (an engine that dies stops logging its metrics)."
        )
    else:
        out.append("The impact could not be measured: these logs carry no throughput series.")
    trig = inc.get("trigger") or {}
    if trig.get("kind") == "rollout":
        out.append(f"A rollout had begun at {hhmmss(trig['ts'])}, {duration(trig['before_drop_s'])} before the drop.")
    if inc.get("tell"):
        out.append(
            f"The tell was visible from {hhmmss(inc['tell']['start'])}: KV cache usage at 100% while nothing waited and nothing was preempted."
        )
    if red:
        out.append(f"The loud signals ({', '.join(h['category'] for h in red)}) followed it: symptoms, not causes.")
    res = inc["resolution"]
    if res["kind"] == "rollout" and res.get("after_recovery"):
        out.append(f"Throughput was back at {hhmmss(res['recovered'])}; a rollout followed at {hhmmss(res['ts'])}.")
    elif res["kind"] == "rollout":
        out.append(f"A rollout at {hhmmss(res['ts'])} ended the incident.")
    elif not imp["measured"]:
        if inc["end"]:
            out.append(f"The burst of faults and symptoms ends at {hhmmss(inc['end'])} in these logs.")
    elif inc["end"]:
        out.append(f"Throughput recovered at {hhmmss(inc['end'])} without a logged change.")
    else:
        out.append("It had not recovered by the end of the logs.")
    return " ".join(out)
