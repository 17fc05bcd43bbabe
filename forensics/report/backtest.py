"""The written alert rules, evaluated on the incident's own series by Prometheus itself.

Why: a rule file that parses says nothing about whether it would have caught this outage,
nor how early. Here the incident's measured series (the engines' log lines and any pulled or
exported samples: the metrics table) become the Prometheus series the rules read, on a
regular scrape grid (`INTERVAL`, coarser for a long incident): gauges as they are, counters rebuilt by integrating the
logged rates (`vllm:generation_tokens_total` from `Avg generation throughput`). Those samples
are backfilled into a real Prometheus (`promtool tsdb create-blocks-from openmetrics`), which
evaluates every rule's expression over the window with its own engine (`query_range` on the
grid); the rule's `for` is applied as the rule manager does (pending from the first true
evaluation, firing once it held `for`). The same samples are written as `alerts_test.yaml`,
whose cases assert what was found, so `promtool test rules` replays the verdicts with
promtool's own rule evaluation: a second, independent check, run here as well.

A rule whose metrics are not among the series is "not collected": that is a finding too
(the signal was not there to alert on), never a silent pass.
"""

from __future__ import annotations

import contextlib
import math
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import yaml

from forensics import schema as s
from forensics.report.alerts import Rule

INTERVAL = timedelta(seconds=30)
"""The scrape grid and the evaluation interval: a common Prometheus setting."""
MAX_VALUES = 400_000
"""The most grid values (series x steps) a backtest writes: past that the grid coarsens by
whole multiples of `INTERVAL` (a day of 50 pods' 7 series is 2.5M values at 30 s), so that
`alerts_test.yaml` stays a file promtool reads in seconds."""
READY_S = 30.0
"""How long to wait for the local Prometheus to answer before giving up."""

GAUGES: dict[str, str] = {
    "running": "vllm:num_requests_running",
    "waiting": "vllm:num_requests_waiting",
    "swapped": "vllm:num_requests_swapped",
    "gpu_kv_cache_usage": "vllm:kv_cache_usage_perc",
    "cpu_kv_cache_usage": "vllm:cpu_cache_usage_perc",
}
"""Metrics-table gauges and the vLLM series they are (vllm/v1/metrics/loggers.py,
`PrometheusStatLogger`)."""
RATES: dict[str, str] = {
    "generation_tokens_per_s": "vllm:generation_tokens_total",
    "prompt_tokens_per_s": "vllm:prompt_tokens_total",
}
"""Per-second rates whose counter is rebuilt by integrating them over time."""
COUNTS: dict[str, str] = {
    "preemptions": "vllm:num_preemptions_total",
    "corrupted": "vllm:corrupted_requests_total",
    "http_requests": "http_requests_total",
}
"""Counts per interval whose counter is their running sum."""
SERIES: dict[str, str] = {**GAUGES, **RATES, **COUNTS}

_METRIC = re.compile(
    r"\b([a-zA-Z_][a-zA-Z0-9_]*:[a-zA-Z0-9_:]+|DCGM_FI_[A-Z0-9_]+|kube_[a-z_]+|nccl_[a-z_]+|process_[a-z_]+)\b"
)


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """What one rule would have done during the incident."""

    alert: str
    severity: str
    fired: bool
    pending_at: datetime | None = None
    """The first evaluation where its expression held (the alert went pending)."""
    fired_at: datetime | None = None
    """The first evaluation where it had held for its `for` (the alert fired)."""
    labels: dict[str, str] | None = None
    """The first firing series' labels."""
    lead_s: float | None = None
    """Seconds from firing to the outage's start (positive: before it)."""
    lead_user_s: float | None = None
    """Seconds from firing to the first user-visible error (positive: before users saw it)."""
    why_not: str | None = None
    firing: tuple[tuple[dict, float], ...] = ()
    """Every series firing at `fired_at`, with the expression's value then (the alerts
    Prometheus would have sent at that evaluation)."""

    def as_dict(self) -> dict:
        return {
            "alert": self.alert,
            "severity": self.severity,
            "fired": self.fired,
            "pending_at": _iso(self.pending_at),
            "fired_at": _iso(self.fired_at),
            "labels": self.labels,
            "lead_minutes": None if self.lead_s is None else round(self.lead_s / 60, 1),
            "why_not": self.why_not,
            "lead_user_minutes": None if self.lead_user_s is None else round(self.lead_user_s / 60, 1),
        }


@dataclass(frozen=True)
class Samples:
    """The incident's series on the scrape grid: (name, labels) -> value per grid step (None: no scrape)."""

    start: datetime
    steps: int
    series: dict[tuple[str, tuple[tuple[str, str], ...]], list[float | None]]
    interval: timedelta = INTERVAL

    @property
    def names(self) -> set[str]:
        return {name for name, _ in self.series}

    def at(self, i: int) -> datetime:
        return self.start + i * self.interval

    def openmetrics(self) -> str:
        """The samples as OpenMetrics text, for `promtool tsdb create-blocks-from openmetrics`."""
        out = []
        for (name, labels), values in sorted(self.series.items()):
            sel = _selector(name, labels)
            for i, v in enumerate(values):
                if v is not None:
                    out.append(f"{sel} {_num(v)} {self.at(i).timestamp():.0f}")
        return "\n".join([*out, "# EOF", ""])


def available() -> str | None:
    """None when `prometheus` and `promtool` are on the PATH, else why the backtest cannot run."""
    missing = [b for b in ("prometheus", "promtool") if shutil.which(b) is None]
    if missing:
        return f"{' and '.join(missing)} not found (install the Debian package `prometheus`)"
    return None


Series = dict[tuple[str, tuple[tuple[str, str], ...]], list[tuple[datetime, float]]]
"""(metric name, sorted labels) -> its samples in time order."""


def samples(metrics: pl.DataFrame, pulled: Series | None = None) -> Samples | None:
    """The incident's series on a regular grid, or None without any.

    From the metrics table (`rebuilt`) and, when a server was pulled, its raw series
    (`prometheus_pull.Pulled.series`), which replace what the logs rebuilt for the same metric names: the
    server's own counters and labels beat a reconstruction. A grid step holds the last sample
    of the step before it (what a scrape every `INTERVAL` would have read) and nothing when
    there was none: a gap stays a gap. The grid is `INTERVAL`, or a multiple of it that keeps
    the values under `MAX_VALUES`.
    """
    raw = pulled or {}
    taken = {name for name, _labels in raw}
    points = {**{k: v for k, v in rebuilt(metrics).items() if k[0] not in taken}, **raw}
    points = {k: v for k, v in points.items() if v}
    if not points:
        return None
    lo = min(v[0][0] for v in points.values())
    hi = max(v[-1][0] for v in points.values())
    steps_at_30s = (hi - lo) / INTERVAL + 2
    interval = INTERVAL * max(1, math.ceil(len(points) * steps_at_30s / MAX_VALUES))
    secs = interval.total_seconds()
    start = datetime.fromtimestamp(math.floor(lo.timestamp() / secs) * secs, UTC)
    steps = math.ceil((hi - start) / interval) + 1
    out: dict = {}
    for key, series in sorted(points.items()):
        grid: list[float | None] = [None] * steps
        for ts, v in series:
            # the grid step a sample is read at: the first at or after it
            i = math.ceil((ts - start) / interval - 1e-9)
            grid[i] = float(f"{v:.6g}")  # (the test fixture and the backfill read the same digits)
        out[key] = grid
    return Samples(start, steps, out, interval)


def rebuilt(metrics: pl.DataFrame) -> Series:
    """The metrics table's rows as vLLM's Prometheus series (`SERIES`), keyed by `pod` (the
    pod, else the host, else the file) and `engine`; counters rebuilt (`_counter`)."""
    m = metrics.filter(pl.col(s.METRIC).is_in(list(SERIES)) & pl.col(s.TS).is_not_null() & pl.col(s.VALUE).is_finite())
    m = m.with_columns(pl.coalesce(s.POD, s.HOST, s.FILE).alias("_pod"), pl.col(s.ENGINE).fill_null(""))
    m = m.sort("_pod", s.ENGINE, s.METRIC, s.TS, s.FILE, s.LINE)
    out: Series = {}
    for (pod, engine, metric), g in m.group_by(["_pod", s.ENGINE, s.METRIC], maintain_order=True):
        values = _counter(g, metric) if metric not in GAUGES else g[s.VALUE].to_list()
        labels = (("engine", engine), ("pod", pod)) if engine else (("pod", pod),)
        out[(SERIES[metric], labels)] = list(zip(g[s.TS].to_list(), values, strict=True))
    return out


def _counter(g: pl.DataFrame, metric: str) -> list[float]:
    """A counter's value at each sample: the running sum of counts, or of rate x interval.

    A rate covers the time since the series' previous line; after a gap longer than twice
    the usual interval (an engine that stopped logging) it is taken over the usual interval
    only: what it did in the gap is unknown, and is not made up.
    """
    v = g[s.VALUE].fill_nan(0.0)
    if metric in COUNTS:
        return v.cum_sum().to_list()
    dt = g[s.TS].diff().dt.total_microseconds() / 1e6
    usual = dt.drop_nulls().median() if dt.drop_nulls().len() else 0.0
    usual = usual or 0.0
    dt = dt.fill_null(usual).clip(upper_bound=2 * usual if usual else None)
    return (v * dt).cum_sum().to_list()


def evaluate(
    rules: list[Rule], data: Samples, prometheus_url: str, outage: datetime | None, seen: datetime | None = None
) -> list[Verdict]:
    """Each rule's verdict, its expression evaluated by the Prometheus at `prometheus_url`, its
    lead times counted to the `outage` and to the first error users `seen`."""
    out = []
    for rule in rules:
        missing = sorted(metrics_of(rule.expr) - data.names)
        try:
            result = query_range(prometheus_url, rule.expr, data.start, data.at(data.steps - 1), data.interval)
        except BacktestError as e:
            out.append(Verdict(alert=rule.alert, severity=rule.severity, fired=False, why_not=f"not evaluated: {e}"))
            continue
        pending, fired, firing = _alerting(result, _duration(rule.for_), data.interval)
        if fired is not None:
            out.append(
                Verdict(
                    alert=rule.alert,
                    severity=rule.severity,
                    fired=True,
                    pending_at=pending,
                    fired_at=fired,
                    labels=firing[0][0],
                    lead_s=(outage - fired).total_seconds() if outage is not None else None,
                    lead_user_s=(seen - fired).total_seconds() if seen is not None else None,
                    firing=tuple(firing),
                )
            )
            continue
        if missing:
            verb = "is" if len(missing) == 1 else "are"
            why = f"not collected: {', '.join(missing)} {verb} in neither the logs nor the pulled series"
        elif pending is not None:
            why = f"its condition held from {_iso(pending)}, but never for {rule.for_}"
        else:
            why = "its condition never held"
        out.append(Verdict(alert=rule.alert, severity=rule.severity, fired=False, pending_at=pending, why_not=why))
    return out


def query_range(url: str, expr: str, start: datetime, end: datetime, step: timedelta) -> list[dict]:
    """The `matrix` of `expr` evaluated every `step` from `start` to `end`."""
    import httpx

    params = {
        "query": expr,
        "start": f"{start.timestamp():.3f}",
        "end": f"{end.timestamp():.3f}",
        "step": f"{step.total_seconds():g}",
    }
    try:
        r = httpx.get(f"{url}/api/v1/query_range", params=params, timeout=60.0)
        doc = r.json()
    except (httpx.HTTPError, ValueError) as e:
        raise BacktestError(f"query failed: {e}") from e
    if doc.get("status") != "success":
        raise BacktestError(str(doc.get("error", doc))[:300])
    return doc["data"]["result"]


def metrics_of(expr: str) -> set[str]:
    """The metric names a PromQL expression reads (label names and functions are not metrics)."""
    body = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    return set(_METRIC.findall(body))


def _alerting(
    result: list[dict], hold: timedelta, interval: timedelta = INTERVAL
) -> tuple[datetime | None, datetime | None, list[tuple[dict, float]]]:
    """(first pending, first firing, the series firing then with their values) from a
    `query_range` matrix: a series goes pending at the first evaluation of a run of
    consecutive true ones, and fires once the run lasted `hold` (the rule manager's `for`)."""
    step = interval.total_seconds()
    pending: float | None = None
    fires: list[tuple[float, dict, float]] = []
    for series in result:
        run_start = prev = None
        for t, v in series["values"]:
            t = float(t)
            if prev is None or t - prev > step * 1.5:
                run_start = t
            prev = t
            pending = run_start if pending is None else min(pending, run_start)
            if t - run_start >= hold.total_seconds():
                fires.append((t, dict(sorted(series["metric"].items())), float(v)))
                break
    if not fires:
        return _time(pending), None, []
    first = min(t for t, _, _ in fires)
    firing = sorted(((labels, v) for t, labels, v in fires if t == first), key=lambda lv: sorted(lv[0].items()))
    return _time(pending), _time(first), firing


def _time(t: float | None) -> datetime | None:
    return None if t is None else datetime.fromtimestamp(t, UTC)


@contextlib.contextmanager
def local_prometheus(openmetrics: str, interval: timedelta = INTERVAL) -> Iterator[str]:
    """A throwaway Prometheus on 127.0.0.1 serving the samples of `openmetrics` (text ending
    in `# EOF`, e.g. `Samples.openmetrics()`); yields its base URL.

    The samples are backfilled as TSDB blocks with promtool, the server starts on a free
    port with a retention long enough for any incident's dates, and is stopped (and its
    directory removed) on exit.
    """
    with tempfile.TemporaryDirectory(prefix="forensics-backtest-") as d:
        root = Path(d)
        (root / "series.om").write_text(openmetrics)
        _run(["promtool", "tsdb", "create-blocks-from", "openmetrics", str(root / "series.om"), str(root / "tsdb")])
        (root / "prometheus.yml").write_text(f"global:\n  evaluation_interval: {_go(interval)}\n")
        port = _free_port()
        log = (root / "prometheus.log").open("wb")
        proc = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={root / 'prometheus.yml'}",
                f"--storage.tsdb.path={root / 'tsdb'}",
                "--storage.tsdb.retention.time=100y",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_ready(url, proc, root / "prometheus.log")
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()


def backtest(
    rules: list[Rule],
    metrics: pl.DataFrame,
    outage: datetime | None,
    seen: datetime | None = None,
    pulled: Series | None = None,
) -> tuple[list[Verdict], Samples | None, str | None]:
    """(verdicts, the samples they were computed on, why not) for `rules` on `metrics` and
    the `pulled` series (`samples`); lead times to the `outage` and the first error `seen`."""
    why = available()
    if why is not None:
        return [], None, why
    data = samples(metrics, pulled)
    if data is None:
        return [], None, "no measured series (no engine metrics lines, no exported or pulled samples)"
    with local_prometheus(data.openmetrics(), data.interval) as url:
        return evaluate(rules, data, url, outage, seen), data, None


def promtool_test(rules_file: str, rules: list[Rule], data: Samples, verdicts: list[Verdict]) -> str:
    """`alerts_test.yaml` on the incident's own series: each rule that fired is expected to fire
    at the evaluation where it did (with its labels and rendered annotations), and no rule is
    expected to fire one evaluation earlier than it did (or at the end, when it never did)."""
    by_name = {r.alert: r for r in rules}
    series = [
        {"series": _selector(name, labels), "values": _values(values)}
        for (name, labels), values in sorted(data.series.items())
    ]
    tests = []
    for v in verdicts:
        rule = by_name[v.alert]
        if v.fired and v.fired_at is not None:
            i = round((v.fired_at - data.start) / data.interval)
            if i > 0:
                tests.append({"eval_time": _go(data.interval * (i - 1)), "alertname": v.alert, "exp_alerts": []})
            tests.append(
                {
                    "eval_time": _go(data.interval * i),
                    "alertname": v.alert,
                    "exp_alerts": [_expected(rule, s_labels, value) for s_labels, value in v.firing],
                }
            )
        elif v.why_not is not None and not v.why_not.startswith("not evaluated"):
            tests.append({"eval_time": _go(data.interval * (data.steps - 1)), "alertname": v.alert, "exp_alerts": []})
    doc = {
        "rule_files": [rules_file],
        "evaluation_interval": _go(data.interval),
        "tests": [{"interval": _go(data.interval), "input_series": series, "alert_rule_test": tests}],
    }
    return yaml.safe_dump(doc, sort_keys=False, width=200)


def check(rules_text: str, test_text: str) -> str:
    """`passed`, or `failed: ...` with promtool's words: `promtool test rules` on the fixture."""
    with tempfile.TemporaryDirectory(prefix="forensics-promtool-") as d:
        (Path(d) / "alerts.rules.yaml").write_text(rules_text)
        (Path(d) / "alerts_test.yaml").write_text(test_text)
        r = subprocess.run(
            ["promtool", "test", "rules", "alerts_test.yaml"], cwd=d, capture_output=True, text=True, timeout=300
        )
    if r.returncode == 0:
        return "passed"
    return "failed: " + " ".join((r.stdout + r.stderr).split())[-600:]


def _expected(rule: Rule, labels: dict, value: float) -> dict:
    ann = {k: render(v, labels, value) for k, v in rule.as_dict()["annotations"].items()}
    return {"exp_labels": {**labels, "severity": rule.severity, "source": "forensics"}, "exp_annotations": ann}


def render(text: str, labels: dict, value: float) -> str:
    """Expand an annotation's `{{ $labels.x }}` and `{{ $value [| humanize|humanizePercentage] }}`
    as Prometheus' template engine does (Go's formatting of floats included)."""
    out = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), ""), text)

    def value_of(m: re.Match) -> str:
        fn = m.group(1)
        if fn == "humanizePercentage":
            return _g4(value * 100) + "%"
        if fn == "humanize":
            return humanize(value)
        return go_float(value)

    return re.sub(r"\{\{ \$value(?: \| (\w+))? \}\}", value_of, out)


def humanize(v: float) -> str:
    """Prometheus' `humanize`: 4 significant digits with an SI prefix."""
    if v == 0 or math.isnan(v) or math.isinf(v):
        return _g4(v)
    prefix = ""
    if abs(v) >= 1:
        for p in ("k", "M", "G", "T", "P", "E", "Z", "Y"):
            if abs(v) < 1000:
                break
            prefix, v = p, v / 1000
    else:
        for p in ("m", "u", "n", "p", "f", "a", "z", "y"):
            if abs(v) >= 1:
                break
            prefix, v = p, v * 1000
    return _g4(v) + prefix


def go_float(v: float) -> str:
    """A float as Go's `fmt` prints it with `%v`: shortest digits, an exponent only below 1e-4 or
    from 1e21 (Python's `repr` switches at 1e16)."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v == 0:
        return "0"
    exp = math.floor(math.log10(abs(v)))
    r = repr(v)
    if exp < -4 or exp >= 21:
        mant, _, e = r.partition("e")
        if not e:
            mant, _, e = f"{v:e}".partition("e")
            mant = repr(float(mant))
        n = int(e)
        return f"{mant.removesuffix('.0')}e{'-' if n < 0 else '+'}{abs(n):02d}"
    if "e" in r:
        import numpy as np

        return np.format_float_positional(v, unique=True, trim="-")
    return r.removesuffix(".0")


def _g4(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return f"{v:.4g}"


def _values(values: list[float | None]) -> str:
    """promtool's values notation: `_` a missing sample, `_xN` N of them in a row."""
    out: list[str] = []
    run = 0
    for v in [*values, 0.0]:
        if v is None:
            run += 1
            continue
        if run:
            out.append("_" if run == 1 else f"_x{run}")
            run = 0
        out.append(_num(v))
    return " ".join(out[:-1])


def _num(v: float) -> str:
    return repr(float(v)).removesuffix(".0") if v == v else "NaN"


def _selector(name: str, labels: tuple[tuple[str, str], ...]) -> str:
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
    return f"{name}{{{inner}}}"


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _duration(text: str) -> timedelta:
    """A Prometheus duration (`5m`, `1h30m`, `0m`)."""
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
    total = sum(float(n) * units[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)", text))
    return timedelta(seconds=total)


def _go(d: timedelta) -> str:
    """A duration as Prometheus writes it (`1h2m30s`, `0s`)."""
    total = int(d.total_seconds())
    if total == 0:
        return "0s"
    h, rest = divmod(total, 3600)
    m, sec = divmod(rest, 60)
    return "".join(f"{n}{u}" for n, u in ((h, "h"), (m, "m"), (sec, "s")) if n)


def _iso(t: datetime | None) -> str | None:
    return None if t is None else t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run(cmd: list[str]) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise BacktestError(f"{' '.join(cmd[:4])} failed: {(r.stderr or r.stdout).strip()[-500:]}")


def _wait_ready(url: str, proc: subprocess.Popen, log: Path) -> None:
    import httpx

    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BacktestError(f"prometheus exited with {proc.returncode}: {log.read_text()[-500:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/-/ready", timeout=1.0).status_code == 200:
                return
        time.sleep(0.05)
    raise BacktestError(f"prometheus did not get ready within {READY_S:g} s")


class BacktestError(RuntimeError):
    """The local Prometheus could not be set up: the backtest is then reported as not run."""
