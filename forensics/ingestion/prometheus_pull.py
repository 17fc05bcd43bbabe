"""Metrics from a live Prometheus: `forensics analyze --prometheus URL`.

Why: after an outage the series people trust are in Prometheus, often at a finer grain and a
longer reach than the engines' log lines. The pull asks the HTTP API for the raw series the
Prometheus export parser reads (`parsers.documents.prometheus`: vLLM's `vllm:*`, DCGM's
`DCGM_FI_*`, kube-state-metrics' `kube_*`, NCCL Inspector's `nccl_*`), range queries per
metric name, and keeps each name's samples as a `promtool tsdb dump` document. Those documents
are ingested like an export saved beside the logs, so pulled and parsed series get the same
names and units by one code path, and each row cites its line of the document
(`prometheus/<metric>.txt:<line>`); the report's output keeps the documents, so a run can be repeated offline.

The samples are pulled raw, as scraped (`CHUNK` says why), so a counter's rate is read between
its true sample times exactly as from a `promtool tsdb dump` saved beside the logs.
"""

from __future__ import annotations

import math
import re
import ssl
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from forensics.errors import ForensicsError
from parsers.documents import prometheus as export

CHUNK = timedelta(hours=1)
"""The window of one query. Raw samples (`name[1h]` at the chunk's end), not `query_range`'s
resampling: on a grid other than the scrape's, a counter's consecutive values alternate
between repeats and double steps, and the rates read from them with it. An hour of one series
scraped every 15 s is 240 samples; a chunk the server refuses as too large (its
`--query.max-samples`) is split in halves down to `MIN_CHUNK`."""
MIN_CHUNK = timedelta(minutes=1)
BEFORE = timedelta(hours=1)
"""Pulled before the logs' first line: the baseline a rule compares against (`offset 1h`)."""
AFTER = timedelta(minutes=30)
"""Pulled after the logs' last line: the recovery, when the logs were collected mid-incident."""
MAX_SAMPLES = 20_000_000
"""The most samples one pull keeps (about 2 GB held while they are joined): past it the names
not yet pulled are left out with a note, as a cut input is. A day of 200 series scraped every
15 s is 1.2M."""
TIMEOUT_S = 30.0
DIR = "prometheus"
"""Where the pulled documents go: the staging directory's subdirectory, and the report's."""

NAMES: tuple[str, ...] = tuple(sorted(export.READ))
"""The metric names pulled: what the export parser reads (counters with or without `_total`)."""


@dataclass(frozen=True, kw_only=True)
class Server:
    """How to reach one Prometheus (or a Thanos / Mimir query frontend with the same API)."""

    url: str
    token: str | None = None
    """Sent as `Authorization: Bearer ...` (a service-account token, Grafana Cloud's key)."""
    ca: Path | None = None
    """A CA bundle for a server whose certificate a private CA signed."""
    insecure: bool = False
    """Skip TLS verification (a port-forward to a self-signed endpoint)."""
    timeout_s: float = TIMEOUT_S


@dataclass
class Pulled:
    """What a pull brought back: document name -> its text (`_dump`), and what to tell."""

    documents: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    start: datetime | None = None
    end: datetime | None = None
    url: str = ""
    """The server, without any user:password in it."""
    names: list[str] = field(default_factory=list)
    """The metric names that had series in the window."""

    def describe(self) -> str:
        """How the report names this input: the server and the window."""
        span = f"{_iso(self.start)} to {_iso(self.end)}" if self.start and self.end else "no window"
        return f"Prometheus {self.url} ({span}, {len(self.names)} metrics)"

    def series(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], list[tuple[datetime, float]]]:
        """The documents' samples by series, (name, sorted labels) -> (time, value) in time
        order, finite values only: what the alert backtest reads as the server's own series."""
        out: dict = {}
        for text in self.documents.values():
            for line in text.splitlines():
                m = _DUMP_LINE.match(line)
                if m is None:
                    continue
                labels = {k: _unescape(v) for k, v in _LABEL.findall(m["labels"])}
                name = labels.pop("__name__", "")
                try:
                    value = float(m["value"].replace("Inf", "inf"))
                except ValueError:
                    continue
                if name and math.isfinite(value):
                    ts = datetime.fromtimestamp(int(m["ms"]) / 1000, UTC)
                    out.setdefault((name, tuple(sorted(labels.items()))), []).append((ts, value))
        return {k: sorted(v) for k, v in out.items()}

    def write(self, into: Path) -> Path:
        """The documents as files under `into/prometheus/`, which ingest reads like an export."""
        root = into / DIR
        root.mkdir(parents=True, exist_ok=True)
        for name, text in sorted(self.documents.items()):
            (root / name).write_text(text)
        return root


def pull(server: Server, start: datetime, end: datetime, *, names: tuple[str, ...] = NAMES) -> Pulled:
    """The raw samples of `names` between `start` and `end`, read a name at a time in `CHUNK`s,
    as one document per exporter (`EXPORTERS`: a GPU's clock reasons are read beside its SM
    clock and temperature, as in a dump of that exporter).

    Raises `ForensicsError` when the server cannot be used at all (unreachable, TLS, refused
    credentials, not a Prometheus API); a query that fails alone becomes a note.
    """
    if end <= start:
        raise ForensicsError(
            f"the Prometheus window is empty ({start.isoformat()} to {end.isoformat()})",
            hint="pass --since before --until",
        )
    out = Pulled(start=start, end=end, url=_redacted(server.url))
    kept = 0
    by_doc: dict[str, dict[tuple, dict]] = {}
    with _client(server) as client:
        _check(client, server)
        for n, name in enumerate(names):
            if kept > MAX_SAMPLES:
                out.notes.append(
                    f"the pull stopped after {kept:,} samples (MAX_SAMPLES): {', '.join(names[n:])} left out; "
                    "narrow --since/--until"
                )
                break
            series: dict[tuple, dict] = {}
            try:
                for lo, hi in _chunks(start, end, CHUNK):
                    for s in _range(client, name, lo, hi):
                        key = tuple(sorted(s["metric"].items()))
                        series.setdefault(key, {"metric": s["metric"], "values": {}})["values"].update(
                            {float(t): v for t, v in s["values"]}
                        )
            except _Refused as e:
                out.notes.append(f"Prometheus refused the query for {name}: {e}")
                continue
            if series:
                kept += sum(len(s["values"]) for s in series.values())
                by_doc.setdefault(_file_name(name), {}).update(series)
                out.names.append(name)
    out.documents = {doc: _dump(series) for doc, series in sorted(by_doc.items())}
    if not out.documents:
        out.notes.append(
            f"Prometheus at {server.url} has none of the series forensics reads between {start.isoformat()} and "
            f"{end.isoformat()} (vllm:*, DCGM_FI_*, kube_*, nccl_*): check the window (--since/--until) and that "
            "those exporters are scraped"
        )
    return out


class _Refused(Exception):
    pass


def _range(client, name: str, lo: datetime, hi: datetime) -> list[dict]:
    """The raw samples of `name` (with or without `_total`) in (lo, hi]; a chunk the server
    finds too large is asked for in halves."""
    import httpx

    secs = max(int((hi - lo).total_seconds()), 1)
    query = f'{{__name__=~"{re.escape(name)}(_total)?"}}[{secs}s]'
    try:
        r = client.get("/api/v1/query", params={"query": query, "time": _unix(hi)})
    except httpx.HTTPError as e:
        raise _Refused(str(e)) from e
    if r.status_code == 200:
        return r.json()["data"]["result"]
    error = _error_of(r)
    if r.status_code in (422, 503) and "too many samples" in error and hi - lo > MIN_CHUNK:
        mid = lo + (hi - lo) / 2
        return _range(client, name, lo, mid) + _range(client, name, mid, hi)
    raise _Refused(f"HTTP {r.status_code} {error}")


def _chunks(start: datetime, end: datetime, size: timedelta) -> list[tuple[datetime, datetime]]:
    out, lo = [], start
    while lo < end:
        hi = min(lo + size, end)
        out.append((lo, hi))
        lo = hi
    return out


def _dump(series: dict[tuple, dict]) -> str:
    """The joined series as `promtool tsdb dump` writes them, a sample a line
    (`{__name__="x", a="b"} value unix_ms`), series by labels and samples by time: each
    metrics row then cites its own line, and the same server data gives the same document."""
    lines = []
    for _key, s in sorted(series.items()):
        labels = dict(s["metric"])
        name = labels.pop("__name__", "")
        esc = export.escape_label
        body = ", ".join([f'__name__="{esc(name)}"', *(f'{k}="{esc(v)}"' for k, v in sorted(labels.items()))])
        lines += [f"{{{body}}} {v} {round(t * 1000)}" for t, v in sorted(s["values"].items())]
    return "\n".join(lines) + "\n"


def _client(server: Server):
    import httpx

    verify: bool | ssl.SSLContext = True
    if server.insecure:
        verify = False
    elif server.ca is not None:
        if not server.ca.is_file():
            raise ForensicsError(f"--prometheus-ca {server.ca} is not a file", hint="pass the CA bundle (PEM)")
        verify = ssl.create_default_context(cafile=str(server.ca))
    headers = {"Accept": "application/json"}
    if server.token:
        headers["Authorization"] = f"Bearer {server.token}"
    if not re.match(r"^https?://", server.url):
        raise ForensicsError(
            f"--prometheus {server.url!r} is not an http(s) URL", hint="e.g. --prometheus http://prometheus:9090"
        )
    return httpx.Client(
        base_url=server.url.rstrip("/"), headers=headers, verify=verify, timeout=server.timeout_s, trust_env=True
    )


def _check(client, server: Server) -> None:
    """Fail early, with what to do, when the server cannot be queried at all."""
    import httpx

    try:
        r = client.get("/api/v1/query", params={"query": "1"})
    except httpx.ConnectError as e:
        raise ForensicsError(
            f"cannot reach Prometheus at {server.url}: {e}",
            hint="check the URL and that it is reachable from here (e.g. kubectl port-forward svc/prometheus 9090)",
        ) from e
    except httpx.TimeoutException as e:
        raise ForensicsError(
            f"Prometheus at {server.url} did not answer within {server.timeout_s:g} s", hint="check the URL"
        ) from e
    except httpx.HTTPError as e:
        raise ForensicsError(
            f"cannot query Prometheus at {server.url}: {e}", hint="check the URL and TLS options"
        ) from e
    if r.status_code in (401, 403):
        raise ForensicsError(
            f"Prometheus at {server.url} refused the credentials (HTTP {r.status_code})",
            hint="pass a valid token with --prometheus-token-file (sent as a Bearer token)",
        )
    if r.status_code != 200 or '"status"' not in r.text:
        raise ForensicsError(
            f"{server.url} did not answer as the Prometheus HTTP API (HTTP {r.status_code} on /api/v1/query)",
            hint="pass the server's base URL, e.g. http://prometheus:9090 (not a Grafana or /graph page)",
        )


def _error_of(r) -> str:
    try:
        return str(r.json().get("error", ""))[:300]
    except ValueError:
        return r.text[:300]


EXPORTERS = {"vllm:": "vllm", "DCGM_": "dcgm-exporter", "kube_": "kube-state-metrics", "nccl_": "nccl-inspector"}
"""Metric name prefix -> the document its series are kept in (others: one of their own)."""


def _file_name(name: str) -> str:
    for prefix, doc in EXPORTERS.items():
        if name.startswith(prefix):
            return f"{doc}.txt"
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) + ".txt"


_DUMP_LINE = re.compile(r"^\{(?P<labels>.*)\} (?P<value>\S+) (?P<ms>-?\d+)$")
"""A line `_dump` writes."""
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def _unescape(v: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m[1] == "n" else m[1], v)


def _redacted(url: str) -> str:
    return re.sub(r"^(https?://)[^/@]*@", r"\1", url)


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _unix(t: datetime) -> str:
    return f"{t.timestamp():.3f}"
