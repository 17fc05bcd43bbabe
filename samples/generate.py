"""Generate sample incidents: log directories laid out as people collect them after an outage.

Each scenario is a story on a small vLLM deployment (Kubernetes, tensor-parallel workers,
an LMCache-style KV store): healthy traffic, the fault, the cascade, the recovery, plus
noise that is not the cause (startup warnings, health checks, unrelated pods, clock skew
between nodes, lines without timestamps). Every line is in a real format (shared docs,
log-formats.md). Output is deterministic for a seed; `--scale` multiplies the baseline
traffic lines (access and request logs) to grow a scenario for benchmarks.

Layout written under OUTDIR::

    kubectl-logs/<pod>.log, <pod>.previous-N.log   `kubectl logs --timestamps` (some pods)
    nodes/<node>/var/log/pods/<ns>_<pod>_<uid>/vllm/N.log   CRI files (other pods)
    nodes/<node>/kubelet.journal                   `journalctl -u kubelet`
    kv-store/lmcache-server.log                    the KV store's own log
    events.json                                    `kubectl get events -A -o json`
    trace.jsonl                                    captured requests (Mooncake JSONL)
    ground_truth.json                              what happened, for tests and evaluation
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

SCENARIOS: dict[str, Callable[[World], dict]] = {}
NS = "serving"
DAY = datetime(2025, 3, 2, tzinfo=UTC)


def scenario(name: str):
    def deco(fn):
        SCENARIOS[name] = fn
        return fn

    return deco


def at(hms: str) -> datetime:
    h, m, *sec = hms.split(":")
    s = float(sec[0]) if sec else 0.0
    return DAY + timedelta(hours=int(h), minutes=int(m), seconds=s)


def iso(t: datetime) -> str:
    return t.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# --- the world ----------------------------------------------------------------------


@dataclass
class Pod:
    name: str
    node: str
    uid: str
    collect: str  # "kubectl" or "cri"
    ip: str
    tp: int = 2
    style: str = "v1"
    """v1: V1 process prefixes; v0: V0 engine (`VllmWorkerProcess`, `metrics.py:396]`); ray: V0 on Ray actors."""
    instance: int = 0
    pids: dict[str, int] = field(default_factory=dict)
    alive: bool = True
    seq: int = 1000


@dataclass
class World:
    """Buffers lines per output file with their true times; skew is applied when printing."""

    seed: int
    scale: float
    rng: random.Random = field(init=False)
    files: dict[str, list[tuple[datetime, int, str]]] = field(default_factory=dict)
    events: list[dict] = field(default_factory=list)
    pods: dict[str, Pod] = field(default_factory=dict)
    skew: dict[str, float] = field(default_factory=dict)
    trace: list[dict] = field(default_factory=list)
    _n: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    # -- low-level writers
    def emit(self, path: str, t: datetime, text: str) -> None:
        self._n += 1
        self.files.setdefault(path, []).append((t, self._n, text))

    def node_time(self, node: str, t: datetime) -> datetime:
        return t + timedelta(seconds=self.skew.get(node, 0.0))

    def pod_file(self, pod: Pod) -> str:
        if pod.collect == "cri":
            return f"nodes/{pod.node}/var/log/pods/{NS}_{pod.name}_{pod.uid}/vllm/{pod.instance}.log"
        return f"kubectl-logs/{pod.name}.instance-{pod.instance}.log"

    def pod_line(self, pod: Pod, t: datetime, text: str, stream: str = "stdout") -> None:
        """A container line as the collector saw it: CRI file or `kubectl logs --timestamps`."""
        nt = self.node_time(pod.node, t)
        if pod.collect == "cri":
            stamp = nt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{nt.microsecond:06d}{self.rng.randrange(1000):03d}Z"
            self.emit(self.pod_file(pod), t, f"{stamp} {stream} F {text}")
        else:
            stamp = nt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{nt.microsecond:06d}{self.rng.randrange(1000):03d}Z"
            self.emit(self.pod_file(pod), t, f"{stamp} {text}")

    # -- producers
    def prefix(self, pod: Pod, proc: str | None) -> str:
        """The process prefix a line of `proc` carries in this pod's vLLM generation."""
        if proc is None:
            return ""
        if pod.style == "v1":
            return f"({proc} pid={pod.pids[proc]}) "
        if proc.startswith("Worker_TP") and proc != "Worker_TP0":
            name = "VllmWorkerProcess" if pod.style == "v0" else "RayWorkerWrapper"
            ip = f", ip={pod.ip}" if pod.style == "ray" else ""
            return f"({name} pid={pod.pids[proc]}{ip}) "
        return ""

    def vllm(self, pod: Pod, t: datetime, proc: str, level: str, where: str, msg: str) -> None:
        nt = self.node_time(pod.node, t)
        if pod.style == "v1":
            head = f"{level} {nt:%m-%d %H:%M:%S} [{where}]"
        else:
            head = f"{level} {nt:%m-%d %H:%M:%S} {where.split('/')[-1]}]"
        for i, line in enumerate(msg.split("\n")):
            self.pod_line(pod, t + timedelta(microseconds=i), f"{self.prefix(pod, proc)}{head} {line}")

    def raw(self, pod: Pod, t: datetime, proc: str | None, text: str, stream: str = "stderr") -> None:
        for i, line in enumerate(text.split("\n")):
            self.pod_line(pod, t + timedelta(microseconds=i), self.prefix(pod, proc) + line, stream)

    def access(
        self, pod: Pod, t: datetime, status: int, path: str = "/v1/chat/completions", method: str = "POST"
    ) -> None:
        phrase = {
            200: "OK",
            400: "Bad Request",
            404: "Not Found",
            500: "Internal Server Error",
            503: "Service Unavailable",
        }[status]
        client = f"10.0.{self.rng.randrange(1, 9)}.{self.rng.randrange(2, 250)}:{self.rng.randrange(30000, 65000)}"
        self.pod_line(
            pod,
            t,
            f'{self.prefix(pod, "APIServer")}INFO:     {client} - "{method} {path} HTTP/1.1" {status} {phrase}',
        )

    def nccl(
        self, pod: Pod, t: datetime, rank_dev: int, level: str, msg: str, where: str | None = None, stamp: bool = False
    ) -> None:
        pid = pod.pids[f"Worker_TP{rank_dev}"]
        head = f"{pod.name}:{pid}:{pid + 31 + rank_dev} [{rank_dev}]"
        if level == "WARN":
            self.pod_line(pod, t - timedelta(microseconds=1), "")
            ts = f"[{self.node_time(pod.node, t):%Y-%m-%d %H:%M:%S}] " if stamp else ""
            self.pod_line(pod, t, f"{ts}{head} {where} NCCL WARN {msg}")
        else:
            self.pod_line(pod, t, f"{head} NCCL INFO {msg}")

    def c10(self, pod: Pod, t: datetime, rank: int, sev: str, where: str, msg: str) -> None:
        nt = self.node_time(pod.node, t)
        if pod.style == "ray":  # torch <= 2.1 inside Ray actors: no rank prefix, no time
            self.pod_line(pod, t, f"{self.prefix(pod, f'Worker_TP{pod.tp - 1}')}[{sev} {where}] {msg}", "stderr")
            return
        mmdd = nt.month * 100 + nt.day
        ns = self.rng.randrange(10**9)
        self.pod_line(pod, t, f"[rank{rank}]:[{sev}{mmdd} {nt:%H:%M:%S}.{ns:09d} {where}] {msg}", "stderr")

    def lmcache(self, pod: Pod | None, t: datetime, level: str, msg: str, where: str, proc: str = "Worker_TP0") -> None:
        if pod is None:
            nt = self.node_time("kv-store-0", t)
            self.emit(
                "kv-store/lmcache-server.log",
                t,
                f"[{nt:%Y-%m-%d %H:%M:%S},{nt.microsecond // 1000:03d}] LMCache {level}: {msg} ({where})",
            )
            return
        nt = self.node_time(pod.node, t)
        self.pod_line(
            pod,
            t,
            f"({proc} pid={pod.pids[proc]}) [{nt:%Y-%m-%d %H:%M:%S},{nt.microsecond // 1000:03d}] LMCache {level}: {msg} ({where})",
        )

    def kubelet(self, node: str, t: datetime, sev: str, where: str, msg: str) -> None:
        nt = self.node_time(node, t)
        self.emit(
            f"nodes/{node}/kubelet.journal",
            t,
            f"{nt:%b %d %H:%M:%S} {node} kubelet[1452]: {sev}{nt:%m%d %H:%M:%S}.{nt.microsecond:06d}    1452 {where}] {msg}",
        )

    def event(
        self,
        t: datetime,
        etype: str,
        reason: str,
        kind: str,
        name: str,
        msg: str,
        node: str | None = None,
        count: int = 1,
        first: datetime | None = None,
        component: str = "kubelet",
        field_path: str | None = None,
        ns: str = NS,
    ) -> None:
        self._n += 1
        h = hashlib.sha1(f"{name}{reason}{self._n}".encode()).hexdigest()[:16]
        ev = {
            "apiVersion": "v1",
            "count": count,
            "eventTime": None,
            "firstTimestamp": iso(first or t)[:19] + "Z",
            "involvedObject": {"apiVersion": "v1", "kind": kind, "name": name, "namespace": ns, "uid": _uid(name)},
            "kind": "Event",
            "lastTimestamp": iso(t)[:19] + "Z",
            "message": msg,
            "metadata": {"creationTimestamp": iso(first or t)[:19] + "Z", "name": f"{name}.{h}", "namespace": ns},
            "reason": reason,
            "reportingComponent": component if component != "kubelet" else "",
            "reportingInstance": node or "",
            "source": {"component": component, "host": node} if node else {"component": component},
            "type": etype,
        }
        if field_path:
            ev["involvedObject"]["fieldPath"] = field_path
        self.events.append(ev)

    # -- the deployment
    def add_pod(self, name: str, node: str, collect: str, ip: str, tp: int = 2, style: str = "v1") -> Pod:
        p = Pod(name, node, _uid(name), collect, ip, tp, style)
        self.pods[name] = p
        self._new_pids(p)
        return p

    def _new_pids(self, p: Pod) -> None:
        base = 60 + 7 * p.instance
        p.pids = {"APIServer": base, "EngineCore_DP0": base + 54}
        for r in range(p.tp):
            p.pids[f"Worker_TP{r}"] = base + 180 + r * 3

    def restart(self, p: Pod) -> None:
        p.instance += 1
        p.alive = True
        self._new_pids(p)

    def write(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        for rel, lines in sorted(self.files.items()):
            rel = self._final_name(rel)
            path = out / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            lines.sort(key=lambda x: (x[0], x[1]))
            path.write_text("".join(text + "\n" for _, _, text in lines))
        self.events.sort(key=lambda e: (e["lastTimestamp"], e["metadata"]["name"]))
        doc = {"apiVersion": "v1", "items": self.events, "kind": "List", "metadata": {"resourceVersion": ""}}
        (out / "events.json").write_text(json.dumps(doc, indent=4) + "\n")
        if self.trace:
            t0 = self.trace[0]["timestamp"]
            with open(out / "trace.jsonl", "w") as fh:
                for r in self.trace:
                    fh.write(json.dumps(r | {"timestamp": r["timestamp"] - t0}, separators=(", ", ": ")) + "\n")

    def _final_name(self, rel: str) -> str:
        """kubectl pods: the current instance is `<pod>.log`, earlier ones `<pod>.previous-N.log`."""
        if not rel.startswith("kubectl-logs/"):
            return rel
        name, inst = rel.removeprefix("kubectl-logs/").removesuffix(".log").rsplit(".instance-", 1)
        if int(inst) == self.pods[name].instance:
            return f"kubectl-logs/{name}.log"
        return f"kubectl-logs/{name}.previous-{inst}.log"


def _uid(name: str) -> str:
    h = hashlib.md5(name.encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


# --- reusable story pieces ---------------------------------------------------------------

MODEL = "meta-llama/Llama-3.1-70B-Instruct"
KV_TOKENS = 1_843_200


def start_all(w: World, pods: list[Pod], start: datetime, **kw) -> None:
    """Every pod starts within 20 s after `start`, jitter drawn in pod order."""
    for p in pods:
        startup(w, p, start + timedelta(seconds=w.rng.uniform(0, 20)), **kw)


def startup(
    w: World,
    p: Pod,
    t: datetime,
    version: str = "0.10.2",
    image: str = "vllm/vllm-openai:v0.10.2",
    gpu_util: float = 0.92,
    kv_tokens: int = KV_TOKENS,
    concurrency: float = 112.5,
) -> datetime:
    """A V1 engine starting: API server, engine core, TP workers, NCCL init, KV sizing, compile."""
    w.vllm(p, t, "APIServer", "INFO", "api_server.py:1885", f"vLLM API server version {version}")
    w.vllm(
        p,
        t + timedelta(seconds=0.2),
        "APIServer",
        "INFO",
        "utils.py:328",
        f"non-default args: {{'model': '{MODEL}', 'tensor_parallel_size': {p.tp}, 'gpu_memory_utilization': {gpu_util}, 'kv_transfer_config': {{'kv_connector': 'LMCacheConnectorV1', 'kv_role': 'kv_both'}}}}",
    )
    w.vllm(
        p,
        t + timedelta(seconds=6),
        "APIServer",
        "WARNING",
        "config.py:1012",
        "max_num_batched_tokens (8192) exceeds max_num_seqs (256) * 16; using chunked prefill",
    )
    w.vllm(
        p,
        t + timedelta(seconds=8),
        "EngineCore_DP0",
        "INFO",
        "core.py:93",
        f"Initializing a V1 LLM engine (v{version}) with config: model='{MODEL}', tensor_parallel_size={p.tp}, enable_prefix_caching=True",
    )
    for r in range(p.tp):
        w.vllm(
            p,
            t + timedelta(seconds=10 + r * 0.01),
            f"Worker_TP{r}",
            "INFO",
            "parallel_state.py:1165",
            f"rank {r} in world size {p.tp} is assigned as DP rank 0, PP rank 0, TP rank {r}, EP rank {r}",
        )
    w.nccl(p, t + timedelta(seconds=10.5), 0, "INFO", "NCCL version 2.26.2+cuda12.8")
    for r in range(p.tp):
        w.nccl(p, t + timedelta(seconds=10.6 + r * 0.01), r, "INFO", f"Bootstrap : Using eth0:{p.ip}<0>")
        w.nccl(
            p,
            t + timedelta(seconds=10.7 + r * 0.01),
            r,
            "INFO",
            f"comm 0x55fb6f3ce{680 + r} rank {r} nranks {p.tp} cudaDev {r} nvmlDev {r} busId {41000 + r * 1000} commId 0x795520212f433144 - Init COMPLETE",
        )
    for r in range(p.tp):
        w.vllm(
            p,
            t + timedelta(seconds=40 + r * 0.02),
            f"Worker_TP{r}",
            "INFO",
            "gpu_model_runner.py:2007",
            "Model loading took 65.9 GiB and 28.31 seconds",
        )
    w.vllm(
        p,
        t + timedelta(seconds=52),
        f"Worker_TP{p.tp - 1}",
        "WARNING",
        "shm_broadcast.py:466",
        "No available shared memory broadcast block found in 60 seconds. This typically happens when some processes are hanging or doing some time-consuming work (e.g. compilation, weight/kv cache quantization).",
    )
    w.vllm(
        p,
        t + timedelta(seconds=71),
        "EngineCore_DP0",
        "INFO",
        "kv_cache_utils.py:864",
        f"GPU KV cache size: {kv_tokens:,} tokens",
    )
    w.vllm(
        p,
        t + timedelta(seconds=71.1),
        "EngineCore_DP0",
        "INFO",
        "kv_cache_utils.py:868",
        f"Maximum concurrency for 16,384 tokens per request: {concurrency:.2f}x",
    )
    w.vllm(
        p,
        t + timedelta(seconds=72),
        "EngineCore_DP0",
        "INFO",
        "core.py:216",
        "init engine (profile, create kv cache, warmup model) took 31.08 seconds",
    )
    w.lmcache(
        p,
        t + timedelta(seconds=72.5),
        "INFO",
        "LMCache engine initialized: chunk_size=256, remote_url=lm://kv-store-0.serving:65432",
        "cache_engine.py:102:lmcache.v1.cache_engine",
    )
    w.vllm(
        p,
        t + timedelta(seconds=73),
        "APIServer",
        "INFO",
        "api_server.py:1971",
        "Starting vLLM API server 0 on http://0.0.0.0:8000",
    )
    w.raw(p, t + timedelta(seconds=73.1), "APIServer", "INFO:     Started server process [60]", "stderr")
    w.raw(p, t + timedelta(seconds=73.2), "APIServer", "INFO:     Waiting for application startup.", "stderr")
    w.raw(p, t + timedelta(seconds=73.3), "APIServer", "INFO:     Application startup complete.", "stderr")
    w.event(
        t - timedelta(seconds=3),
        "Normal",
        "Pulled",
        "Pod",
        p.name,
        f'Container image "{image}" already present on machine',
        p.node,
        field_path="spec.containers{vllm}",
    )
    w.event(
        t - timedelta(seconds=2),
        "Normal",
        "Created",
        "Pod",
        p.name,
        "Created container: vllm",
        p.node,
        field_path="spec.containers{vllm}",
    )
    w.event(
        t - timedelta(seconds=1),
        "Normal",
        "Started",
        "Pod",
        p.name,
        "Started container vllm",
        p.node,
        field_path="spec.containers{vllm}",
    )
    return t + timedelta(seconds=75)


@dataclass
class Load:
    """Per-pod serving state over time; `metrics` prints V1 metrics lines every 10 s."""

    rate: Callable[[datetime], float]  # cluster req/s
    kv: Callable[[Pod, datetime], float]  # GPU KV usage %
    waiting: Callable[[Pod, datetime], int] = lambda p, t: 0
    preempt: Callable[[Pod, datetime], int] = lambda p, t: 0
    gen_per_req: float = 2.4
    share: Callable[[Pod, datetime], float] | None = None
    """A pod's throughput against an even split of `rate` (a slowed GPU serves less); None: 1."""


def serve(
    w: World, pods: list[Pod], load: Load, t0: datetime, t1: datetime, up: Callable[[Pod, datetime], bool]
) -> None:
    """Healthy-path traffic for `pods` between t0 and t1 where `up(pod, t)` holds."""
    step = timedelta(seconds=10)
    t = t0
    while t < t1:
        live = [p for p in pods if up(p, t)]
        for p in live:
            rate = load.rate(t) / max(len(pods), 1)
            if load.share is not None:
                rate *= load.share(p, t)
            jitter = w.rng.uniform(0.93, 1.07)
            gen = rate * load.gen_per_req * jitter
            prompt = rate * 9.7 * w.rng.uniform(0.9, 1.1)
            kv = min(100.0, load.kv(p, t))
            parts = [
                f"Avg prompt throughput: {prompt:.1f} tokens/s",
                f"Avg generation throughput: {gen:.1f} tokens/s",
                f"Running: {min(256, int(rate / 14) + w.rng.randrange(5))} reqs",
                f"Waiting: {load.waiting(p, t)} reqs",
            ]
            pre = load.preempt(p, t)
            if pre:
                parts.append(f"Preemptions: {pre}")
            parts += [f"GPU KV cache usage: {kv:.1f}%", f"Prefix cache hit rate: {w.rng.uniform(38, 46):.1f}%"]
            at_t = t + timedelta(seconds=w.rng.uniform(0, 0.4))
            if p.style == "v1":
                w.vllm(p, at_t, "APIServer", "INFO", "loggers.py:123", "Engine 000: " + ", ".join(parts))
            else:
                v0 = (
                    f"Avg prompt throughput: {prompt:.1f} tokens/s, Avg generation throughput: {gen:.1f} tokens/s, "
                    f"Running: {min(256, int(rate / 14) + w.rng.randrange(5))} reqs, Swapped: 0 reqs, "
                    f"Pending: {load.waiting(p, t)} reqs, GPU KV cache usage: {kv:.1f}%, CPU KV cache usage: 0.0%."
                )
                w.vllm(p, at_t, "APIServer", "INFO", "metrics.py:396", v0)
            # A sample of the request flow: access lines and request logs.
            n_access = _poisson(w.rng, 1.0 * w.scale)
            for _ in range(n_access):
                ta = t + timedelta(seconds=w.rng.uniform(0, 10))
                status = 200 if w.rng.random() > 0.004 else w.rng.choice([400, 404])
                if w.rng.random() < 0.3:
                    rid = f"chatcmpl-{w.rng.getrandbits(128):032x}"
                    w.vllm(
                        p,
                        ta,
                        "APIServer",
                        "INFO",
                        "logger.py:41",
                        f"Received request {rid}: params: SamplingParams(n=1, temperature=0.7, top_p=0.95, max_tokens=512), lora_request: None.",
                    )
                w.access(p, ta, status)
            w.access(p, t + timedelta(seconds=5.1), 200, "/health", "GET")
        t += step


def _poisson(rng: random.Random, lam: float) -> int:
    if lam > 30:
        return max(0, int(rng.gauss(lam, math.sqrt(lam))))
    L, k, prod = math.exp(-lam), 0, rng.random()
    while prod > L:
        k += 1
        prod *= rng.random()
    return k


def capture_trace(w: World, t0: datetime, t1: datetime, rate: Callable[[datetime], float], n_max: int = 2500) -> None:
    """Captured requests (Mooncake JSONL: ms timestamps, 512-token chained `hash_ids`), sampled.

    Conversations share prefixes: a request extends an earlier one's hash chain, which is
    what makes prefix caching (and its eviction bugs) matter in replay.
    """
    span = (t1 - t0).total_seconds()
    total = sum(rate(t0 + timedelta(seconds=s)) for s in range(int(span)))
    keep = min(1.0, n_max / max(total, 1))
    convs: list[list[int]] = []
    next_id = 1
    for s in range(int(span)):
        t = t0 + timedelta(seconds=s)
        for _ in range(_poisson(w.rng, rate(t) * keep)):
            ms = int((t - DAY).total_seconds() * 1000) + w.rng.randrange(1000)
            if convs and w.rng.random() < 0.6:
                base = list(w.rng.choice(convs))
            else:
                base = []
            n_new = w.rng.randint(1, 6)
            ids = base + list(range(next_id, next_id + n_new))
            next_id += n_new
            convs.append(ids)
            if len(convs) > 400:
                convs.pop(0)
            w.trace.append(
                {
                    "timestamp": ms,
                    "input_length": len(ids) * 512 - w.rng.randrange(0, 400),
                    "output_length": w.rng.randint(16, 700),
                    "hash_ids": ids,
                }
            )
    w.trace.sort(key=lambda r: r["timestamp"])


def crash_engine(w: World, p: Pod, t: datetime, exc: str, trace_tail: list[str]) -> None:
    """V1 engine death: EngineCore traceback (logger.exception), APIServer EngineDeadError, 500s."""
    lines = [
        "EngineCore encountered a fatal error.",
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 711, in run_engine_core',
        "    engine_core.run_busy_loop()",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 738, in run_busy_loop',
        "    self._process_engine_step()",
        *trace_tail,
        exc,
    ]
    w.vllm(p, t, "EngineCore_DP0", "ERROR", "core.py:720", "\n".join(lines))
    w.vllm(p, t + timedelta(seconds=0.3), "APIServer", "ERROR", "async_llm.py:480", "AsyncLLM output_handler failed.")
    w.raw(
        p,
        t + timedelta(seconds=0.31),
        "APIServer",
        "\n".join(
            [
                "Traceback (most recent call last):",
                '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/async_llm.py", line 439, in output_handler',
                "    outputs = await engine_core.get_output_async()",
                "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.",
            ]
        ),
    )
    for i in range(int(6 * max(1.0, w.scale**0.5))):
        w.access(p, t + timedelta(seconds=0.5 + i * 0.4), 500)
    p.alive = False


def watchdog_timeout(
    w: World, p: Pod, t: datetime, rank: int, seq: int, op: str = "ALLREDUCE", timeout_ms: int = 60000
) -> None:
    ran = timeout_ms + w.rng.randrange(3, 40)
    w.c10(
        p,
        t,
        rank,
        "E",
        "ProcessGroupNCCL.cpp:632",
        f"[Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=8388608, NumelOut=8388608, Timeout(ms)={timeout_ms}) ran for {ran} milliseconds before timing out.",
    )
    w.c10(
        p,
        t + timedelta(milliseconds=1),
        rank,
        "E",
        "ProcessGroupNCCL.cpp:2271",
        f"[PG ID 2 PG GUID 3 Rank {rank}]  failure detected by watchdog at work sequence id: {seq} PG status: last enqueued work: {seq + 3}, last completed work: {seq - 1}",
    )
    w.c10(
        p,
        t + timedelta(milliseconds=2),
        rank,
        "E",
        "ProcessGroupNCCL.cpp:670",
        "Stack trace of the failed collective not found, potentially because FlightRecorder is disabled. You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.",
    )
    w.c10(
        p,
        t + timedelta(milliseconds=3),
        rank,
        "E",
        "ProcessGroupNCCL.cpp:1896",
        f"[PG ID 2 PG GUID 3 Rank {rank}] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
    )
    w.c10(
        p,
        t + timedelta(milliseconds=4),
        rank,
        "E",
        "ProcessGroupNCCL.cpp:1902",
        f"[PG ID 2 PG GUID 3 Rank {rank}] To avoid data inconsistency, we are taking the entire process down.",
    )
    w.raw(
        p,
        t + timedelta(milliseconds=5),
        None,
        "\n".join(
            [
                "terminate called after throwing an instance of 'c10::DistBackendError'",
                f"  what():  [PG ID 2 PG GUID 3 Rank {rank}] Process group watchdog thread terminated with exception: [Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=8388608, NumelOut=8388608, Timeout(ms)={timeout_ms}) ran for {ran} milliseconds before timing out.",
                "Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:635 (most recent call first):",
                "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7f3f5e2b9446 in /usr/local/lib/python3.12/dist-packages/torch/lib/libc10.so)",
                "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, std::ratio<1l, 1000l> > >) + 0x23d (0x7f3f1a2c0b4d in /usr/local/lib/python3.12/dist-packages/torch/lib/libtorch_cuda.so)",
            ]
        ),
    )


def kill_and_restart(w: World, p: Pod, t: datetime, reason: str = "liveness") -> datetime:
    """Probe failures, kill, back-off, restart (events + kubelet journal). Returns the restart time."""
    for i in range(3):
        w.event(
            t + timedelta(seconds=10 * i),
            "Warning",
            "Unhealthy",
            "Pod",
            p.name,
            f'Liveness probe failed: Get "http://{p.ip}:8000/health": context deadline exceeded (Client.Timeout exceeded while awaiting headers)',
            p.node,
            count=i + 1,
            first=t,
            field_path="spec.containers{vllm}",
        )
        w.kubelet(
            p.node,
            t + timedelta(seconds=10 * i),
            "I",
            "prober.go:107",
            f'"Probe failed" probeType="Liveness" pod="{NS}/{p.name}" podUID="{p.uid}" containerName="vllm" probeResult="failure" output="Get \\"http://{p.ip}:8000/health\\": context deadline exceeded"',
        )
    tk = t + timedelta(seconds=21)
    w.event(
        tk,
        "Normal",
        "Killing",
        "Pod",
        p.name,
        "Container vllm failed liveness probe, will be restarted",
        p.node,
        field_path="spec.containers{vllm}",
    )
    w.kubelet(
        p.node,
        tk,
        "I",
        "kuberuntime_container.go:808",
        f'"Killing container with a grace period" pod="{NS}/{p.name}" podUID="{p.uid}" containerName="vllm" containerID="containerd://{hashlib.sha1(p.name.encode()).hexdigest()}" gracePeriod=30',
    )
    w.kubelet(
        p.node,
        tk + timedelta(seconds=31),
        "I",
        "kubelet.go:2455",
        f'"SyncLoop (PLEG): event for pod" pod="{NS}/{p.name}" event={{"ID":"{p.uid}","Type":"ContainerDied"}}',
    )
    back_off(w, p, tk + timedelta(seconds=32), count=2 + p.instance, first=tk + timedelta(seconds=32), seconds=10)
    w.restart(p)
    return tk + timedelta(seconds=45)


def back_off(w: World, p: Pod, t: datetime, *, count: int, first: datetime, seconds: int) -> None:
    """A crash-looping container: the kubelet's `BackOff` event at `t`, and its journal's line a second later."""
    w.event(
        t,
        "Warning",
        "BackOff",
        "Pod",
        p.name,
        f"Back-off restarting failed container vllm in pod {p.name}_{NS}({p.uid})",
        p.node,
        count=count,
        first=first,
        field_path="spec.containers{vllm}",
    )
    w.kubelet(
        p.node,
        t + timedelta(seconds=1),
        "E",
        "pod_workers.go:1301",
        f'"Error syncing pod, skipping" err="failed to \\"StartContainer\\" for \\"vllm\\" with CrashLoopBackOff: '
        f'\\"back-off {seconds}s restarting failed container=vllm pod={p.name}_{NS}({p.uid})\\"" pod="{NS}/{p.name}" '
        f'podUID="{p.uid}"',
    )


def stop_pod(w: World, p: Pod, t: datetime) -> None:
    """The kubelet stopping a pod on purpose (a rollout's old replica, a scale-down): its `Killing` event."""
    w.event(
        t, "Normal", "Killing", "Pod", p.name, "Stopping container vllm", p.node, field_path="spec.containers{vllm}"
    )


def noise(w: World, t0: datetime, t1: datetime) -> None:
    """Unrelated cluster chatter: monitoring pods, image GC, a cron job."""
    w.event(
        t0 + timedelta(minutes=3),
        "Normal",
        "Pulled",
        "Pod",
        "prometheus-k8s-0",
        'Container image "quay.io/prometheus/prometheus:v2.53.0" already present on machine',
        "cpu-node-1",
        ns="monitoring",
        field_path="spec.containers{prometheus}",
    )
    w.event(
        t0 + timedelta(minutes=3, seconds=1),
        "Normal",
        "Started",
        "Pod",
        "prometheus-k8s-0",
        "Started container prometheus",
        "cpu-node-1",
        ns="monitoring",
        field_path="spec.containers{prometheus}",
    )
    t = t0 + timedelta(minutes=17)
    while t < t1:
        w.event(
            t,
            "Normal",
            "SuccessfulCreate",
            "Job",
            f"log-rotate-{int(t.timestamp()) // 60}",
            f"Created pod: log-rotate-{int(t.timestamp()) // 60}-x7k2p",
            None,
            component="job-controller",
            ns="ops",
        )
        t += timedelta(minutes=30)
    w.event(
        t0 + timedelta(minutes=41),
        "Warning",
        "FailedMount",
        "Pod",
        "grafana-6c9d8f7b5-hx2lq",
        'MountVolume.SetUp failed for volume "dashboards" : configmap "grafana-dashboards" not found',
        "cpu-node-1",
        ns="monitoring",
    )


def deployment(w: World, prefix: str, n: int, hash_: str, nodes: list[str], tp: int = 2) -> list[Pod]:
    pods = []
    for i in range(n):
        suffix = "".join(w.rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
        collect = "kubectl" if i % 2 == 0 else "cri"
        pods.append(
            w.add_pod(f"{prefix}-{hash_}-{suffix}", nodes[i % len(nodes)], collect, f"10.0.{i + 1}.{17 + i}", tp)
        )
    return pods


def skewed_nodes(w: World, n: int) -> list[str]:
    nodes = [f"gpu-node-{i + 1}" for i in range(n)]
    for i, node in enumerate(nodes):
        w.skew[node] = [0.0, 2.3, -1.7, 3.1, -2.4, 1.2][i % 6]
    return nodes


def ramp(t0: datetime, t1: datetime, a: float, b: float) -> Callable[[datetime], float]:
    def f(t: datetime) -> float:
        if t <= t0:
            return a
        if t >= t1:
            return b
        return a + (b - a) * (t - t0).total_seconds() / (t1 - t0).total_seconds()

    return f


# --- scenarios ----------------------------------------------------------------------------


@scenario("cache-corruption")
def cache_corruption(w: World) -> dict:
    """The motivating outage: an eviction off-by-one frees live KV blocks under full load."""
    nodes = skewed_nodes(w, 4)
    pods = deployment(w, "llama-70b", 4, "7d9c5b8f6", nodes)
    start, ramp0, ramp1, fault, fix, end = (
        at("07:40"),
        at("07:56"),
        at("08:04"),
        at("08:06:41.118"),
        at("08:51:30"),
        at("09:12"),
    )
    start_all(w, pods, start)
    rate = ramp(ramp0, ramp1, 9800.0, 14720.0)

    def kv(p: Pod, t: datetime) -> float:
        return 42.0 + 58.0 * min(1.0, max(0.0, (t - ramp0).total_seconds() / 420.0)) + w.rng.uniform(-2, 2)

    down: dict[str, list[tuple[datetime, datetime]]] = {p.name: [] for p in pods}
    first = pods[2]
    crash_times = [(first, fault)] + [
        (p, fault + timedelta(seconds=9 + 14 * i)) for i, p in enumerate(q for q in pods if q is not first)
    ]
    recur = []
    for p, tc in crash_times:
        block = 88123 if p is first else w.rng.randrange(10000, 99999)
        stale = w.rng.getrandbits(32)
        rid = f"chatcmpl-{w.rng.getrandbits(128):032x}"
        w.lmcache(
            p,
            tc - timedelta(seconds=0.4),
            "ERROR",
            f"Cache corruption detected in block {block}: stored hash 0x{stale:08x} does not match the chunk hash; block was evicted while still referenced by request {rid}",
            "storage_backend.py:412:lmcache.v1.storage_backend",
        )
        w.lmcache(
            None,
            tc - timedelta(seconds=0.5),
            "WARNING",
            f"Evicted block {block} (ref_cnt=1) to make room: LRU free queue empty",
            "lru_policy.py:88:lmcache.server.eviction",
        )
        crash_engine(
            w,
            p,
            tc,
            f"RuntimeError: Cache corruption detected in block {block}",
            [
                '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 1544, in execute_model',
                "    self.maybe_wait_for_kv_save()",
                '  File "/usr/local/lib/python3.12/dist-packages/lmcache/integration/vllm/vllm_v1_adapter.py", line 702, in wait_for_save',
                '    raise RuntimeError(f"Cache corruption detected in block {block_id}")',
            ],
        )
        # The TP peer blocks in its all-reduce until the watchdog fires.
        watchdog_timeout(w, p, tc + timedelta(seconds=60.2), 1, p.seq + 48211)
        back = kill_and_restart(w, p, tc + timedelta(seconds=8))
        up_at = startup(w, p, back)
        # Same fault again once the cache fills after the restart (until the fix).
        tr = up_at + timedelta(seconds=310 + w.rng.uniform(-20, 20))
        down[p.name].append((tc, up_at))
        if tr < fix - timedelta(minutes=10):
            recur.append((p, tr))
    while recur:
        p, tr = recur.pop(0)
        block = w.rng.randrange(10000, 99999)
        w.lmcache(
            p,
            tr - timedelta(seconds=0.4),
            "ERROR",
            f"Cache corruption detected in block {block}: stored hash 0x{w.rng.getrandbits(32):08x} does not match the chunk hash; block was evicted while still referenced by request chatcmpl-{w.rng.getrandbits(128):032x}",
            "storage_backend.py:412:lmcache.v1.storage_backend",
        )
        crash_engine(
            w,
            p,
            tr,
            f"RuntimeError: Cache corruption detected in block {block}",
            [
                '  File "/usr/local/lib/python3.12/dist-packages/lmcache/integration/vllm/vllm_v1_adapter.py", line 702, in wait_for_save',
                '    raise RuntimeError(f"Cache corruption detected in block {block_id}")',
            ],
        )
        watchdog_timeout(w, p, tr + timedelta(seconds=60.2), 1, p.seq + 51877 + 97 * p.instance)
        back = kill_and_restart(w, p, tr + timedelta(seconds=8))
        up_at = startup(w, p, back)
        down[p.name].append((tr, up_at))
        # Each time the cache fills again, the fault fires again: until the fix.
        nxt = up_at + timedelta(seconds=290 + w.rng.uniform(-30, 30))
        if nxt < fix - timedelta(minutes=4):
            recur.append((p, nxt))
            recur.sort(key=lambda x: x[1])
    # The fix: a one-line config change rolled out as a new ReplicaSet.
    w.event(
        fix,
        "Normal",
        "ScalingReplicaSet",
        "Deployment",
        "llama-70b",
        "Scaled up replica set llama-70b-5f8d9c7b4 from 0 to 4",
        None,
        component="deployment-controller",
    )
    new = deployment(w, "llama-70b", 4, "5f8d9c7b4", nodes)
    for p in new:
        w.event(
            fix + timedelta(seconds=2),
            "Normal",
            "Scheduled",
            "Pod",
            p.name,
            f"Successfully assigned {NS}/{p.name} to {p.node}",
            None,
            component="default-scheduler",
        )
        w.event(
            fix + timedelta(seconds=4),
            "Normal",
            "Pulling",
            "Pod",
            p.name,
            'Pulling image "registry.internal/vllm-openai:v0.10.2-evictfix"',
            p.node,
            field_path="spec.containers{vllm}",
        )
        startup(
            w,
            p,
            fix + timedelta(seconds=30 + w.rng.uniform(0, 10)),
            image="registry.internal/vllm-openai:v0.10.2-evictfix",
        )
    for p in pods:
        stop_pod(w, p, fix + timedelta(seconds=95))

    def up_old(p: Pod, t: datetime) -> bool:
        return t < fix + timedelta(seconds=90) and not any(a <= t < b for a, b in down[p.name])

    serve(w, pods, Load(rate, kv), at("07:42"), fix + timedelta(seconds=90), up_old)
    healthy_kv = Load(
        lambda t: 14720.0, lambda p, t: 88.0 + w.rng.uniform(-6, 6), waiting=lambda p, t: w.rng.randrange(0, 40)
    )
    serve(w, new, healthy_kv, fix + timedelta(seconds=110), end, lambda p, t: True)
    capture_trace(w, ramp0, fault, rate, n_max=1500)
    noise(w, start, end)
    return {
        "root_cause": {
            "category": "kv-cache",
            "template": "Cache corruption detected in block <*>",
            "host": first.node,
            "pod": first.name,
            "first_time": iso(w.node_time(first.node, fault - timedelta(seconds=0.4))),
            "fault_class": "evict-live-block",
        },
        "trigger": {
            "kind": "traffic ramp",
            "from_req_per_s": 9800,
            "to_req_per_s": 14720,
            "start": iso(ramp0),
            "end": iso(ramp1),
        },
        "symptoms": [
            {"category": "engine", "template": "EngineCore encountered a fatal error."},
            {"category": "request-errors", "template": "HTTP 500"},
            {"category": "collective-timeout", "template": "Watchdog caught collective operation timeout"},
            {"category": "pod-lifecycle", "template": "Back-off restarting failed container"},
        ],
        "impact": {"start": iso(fault), "end": iso(fix + timedelta(seconds=110))},
        "resolution": {
            "kind": "image change",
            "image": "registry.internal/vllm-openai:v0.10.2-evictfix",
            "time": iso(fix),
        },
    }


@scenario("nccl-network")
def nccl_network(w: World) -> dict:
    """An InfiniBand link fails on one node; every rank of that replica times out in ALLREDUCE."""
    nodes = skewed_nodes(w, 4)
    pods = deployment(w, "llama-405b", 4, "6b8f9d7c5", nodes, tp=2)
    start, fault, end = at("09:00"), at("09:31:07.402"), at("10:05")
    start_all(w, pods, start)
    bad = pods[1]
    peer = pods[3]  # the other half of the replica, over IB
    rate = lambda t: 8200.0  # noqa: E731
    kv = lambda p, t: 55.0 + w.rng.uniform(-5, 5)  # noqa: E731
    # IB completion errors on the bad node, error propagation, then the peer loses the connection.
    for r in range(2):
        w.nccl(
            bad,
            fault + timedelta(milliseconds=3 * r),
            r,
            "WARN",
            f"NET/IB : Got completion from peer {peer.ip}<{51230 + r}> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:{bad.ip} remoteGids ::ffff:{peer.ip}",
            "transport/net_ib.cc:1695",
            stamp=True,
        )
        for where in ("transport/net.cc:1302", "proxy.cc:679", "proxy.cc:858"):
            w.nccl(
                bad,
                fault + timedelta(milliseconds=3 * r + 1),
                r,
                "INFO",
                f"{where} -> 6" + (" [Proxy Thread]" if where == "proxy.cc:858" else ""),
            )
    w.nccl(
        peer,
        fault + timedelta(seconds=0.8),
        0,
        "WARN",
        f"socketProgress: Connection closed by remote peer {bad.ip}<43117>",
        "misc/socket.cc:49",
        stamp=True,
    )
    w.nccl(peer, fault + timedelta(seconds=0.81), 0, "INFO", "misc/socket.cc:849 -> 6")
    down = {}
    for i, p in enumerate([bad, peer]):
        for r in range(2):
            watchdog_timeout(
                w, p, fault + timedelta(seconds=60.1 + 0.01 * (2 * i + r)), 2 * i + r, 731402, timeout_ms=60000
            )
        crash_engine(
            w,
            p,
            fault + timedelta(seconds=61),
            "RuntimeError: NCCL error: remote process exited or there was a network error",
            [
                '  File "/usr/local/lib/python3.12/dist-packages/vllm/distributed/device_communicators/pynccl.py", line 127, in all_reduce',
                "    self.nccl.ncclAllReduce(buffer_type(in_tensor.data_ptr()), ...",
            ],
        )
        back = kill_and_restart(w, p, fault + timedelta(seconds=62))
        up = startup(w, p, back + timedelta(seconds=240 if p is bad else 0))
        down[p.name] = (fault, up)
    w.event(
        fault + timedelta(minutes=9),
        "Warning",
        "NodeHasNetworkUnavailable",
        "Node",
        bad.node,
        f"Node {bad.node} status is now: ib0 link down (mlx5_0 port 1)",
        bad.node,
        component="node-problem-detector",
        ns="default",
    )

    def up(p: Pod, t: datetime) -> bool:
        return not (p.name in down and down[p.name][0] <= t < down[p.name][1])

    serve(w, pods, Load(rate, kv), at("09:02"), end, up)
    capture_trace(w, fault - timedelta(minutes=5), fault, rate, n_max=1200)
    noise(w, start, end)
    return {
        "root_cause": {
            "category": "network",
            "template": "NET/IB : Got completion from peer <*> with status=12 opcode=0 len=0 vendor err 129 (Recv)",
            "host": bad.node,
            "pod": bad.name,
            "first_time": iso(w.node_time(bad.node, fault).replace(microsecond=0)),
        },
        "symptoms": [
            {"category": "collective-timeout", "template": "Watchdog caught collective operation timeout"},
            {"category": "engine", "template": "EngineCore encountered a fatal error."},
            {"category": "pod-lifecycle", "template": "Liveness probe failed"},
        ],
        "impact": {"start": iso(fault + timedelta(seconds=61)), "end": iso(max(v[1] for v in down.values()))},
    }


@scenario("pd-transfer")
def pd_transfer(w: World) -> dict:
    """Disaggregated prefill/decode: one decode node's RDMA path fails. Its NIXL reads of the
    prefill instances' KV fail and are recomputed, the prefill instances' leases expire unread
    (the loud part, on pods that are fine), and the decode pod stops generating until a probe
    restarts it. The first sign is UCX's completion error on the decode node."""
    nodes = skewed_nodes(w, 4)
    prefill = deployment(w, "llama-70b-prefill", 2, "7c9d5f8b4", nodes[:2])
    decode = deployment(w, "llama-70b-decode", 2, "5f8b47c9d", nodes[2:])
    pods = prefill + decode
    start, fault, end = at("09:00"), at("09:27:41.118"), at("10:00")
    start_all(w, pods, start)
    bad = decode[0]
    epoch = w.node_time(bad.node, fault).timestamp()
    w.raw(  # (UCX writes from C, under no process prefix)
        bad,
        fault,
        None,
        f"[{epoch:.6f}] [{bad.name}:{bad.pids['Worker_TP0']}:1]   ib_mlx5_log.c:171  UCX  ERROR   Transport retry "
        "count exceeded on mlx5_0:1/IB (synd 0x15 vend 0x81 hw_synd 0/0)",
    )
    t = fault + timedelta(seconds=0.4)
    while t < fault + timedelta(minutes=4):
        rid = f"cmpl-{w.rng.getrandbits(64):016x}-0"
        w.vllm(
            bad,
            t,
            f"Worker_TP{w.rng.randrange(2)}",
            "ERROR",
            "nixl_connector.py:1422",
            f"NIXL transfer failed for request {rid} with state ERR. Marking blocks as invalid.",
        )
        w.vllm(
            bad,
            t + timedelta(milliseconds=40),
            "EngineCore_DP0",
            "WARNING",
            "scheduler.py:1538",
            f"Recovered from KV load failure: 1 request(s) rescheduled ({w.rng.randrange(2048, 16384)} tokens affected).",
        )
        if w.rng.random() < 0.3:
            w.access(bad, t + timedelta(seconds=1.5), 500)
        t += timedelta(seconds=w.rng.uniform(2.0, 6.0))
    for p in prefill:  # decode never read the blocks it failed to fetch: the prefill side gives them up
        t = fault + timedelta(seconds=120 + w.rng.uniform(0, 2))
        while t < fault + timedelta(minutes=6):
            w.vllm(
                p,
                t,
                "EngineCore_DP0",
                "WARNING",
                "nixl_connector.py:1218",
                f"Releasing expired KV blocks for request cmpl-{w.rng.getrandbits(64):016x}-0 which were retrieved "
                "by 0 decode worker(s) within 120 seconds.",
            )
            t += timedelta(seconds=w.rng.uniform(1.0, 4.0))
    back = kill_and_restart(w, bad, fault + timedelta(minutes=4, seconds=3))
    up_again = startup(w, bad, back)

    def up(p: Pod, t: datetime) -> bool:
        return not (p is bad and fault + timedelta(seconds=5) <= t < up_again)

    rate = lambda t: 6400.0  # noqa: E731
    serve(w, pods, Load(rate, lambda p, t: 47.0 + w.rng.uniform(-5, 5)), at("09:02"), end, up)
    capture_trace(w, fault - timedelta(minutes=5), fault, rate, n_max=1200)
    noise(w, start, end)
    return {
        "root_cause": {
            "category": "network",
            "template": "Transport retry count exceeded on mlx5_0:<*>/IB (synd <*> vend <*> hw_synd <*>/<*>)",
            "host": bad.node,
            "pod": bad.name,
            "first_time": iso(w.node_time(bad.node, fault).replace(microsecond=0)),
        },
        "symptoms": [
            {"category": "kv-cache", "template": "Releasing expired KV blocks for request"},
            {"category": "pod-lifecycle", "template": "Liveness probe failed"},
        ],
        "impact": {"start": iso(fault + timedelta(seconds=5)), "end": iso(up_again)},
    }


@scenario("gpu-oom")
def gpu_oom(w: World) -> dict:
    """A burst of long prompts: CUDA OOM in one worker, engine death, 500s, restart."""
    nodes = skewed_nodes(w, 2)
    pods = deployment(w, "qwen-32b", 2, "59c7d6b8f", nodes)
    start, fault, end = at("13:10"), at("13:37:52.610"), at("14:05")
    start_all(w, pods, start)
    victim = pods[0]
    w.vllm(
        victim,
        fault - timedelta(seconds=40),
        "APIServer",
        "WARNING",
        "serving_chat.py:212",
        "Input prompt (15872 tokens) is close to max_model_len (16384); consider a larger max_model_len",
    )
    crash_engine(
        w,
        victim,
        fault,
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 1 has a total capacity of 79.25 GiB of which 1.12 GiB is free. Including non-PyTorch memory, this process has 78.11 GiB memory in use. Of the allocated memory 74.02 GiB is allocated by PyTorch, and 2.91 GiB is reserved by PyTorch but unallocated.",
        [
            '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 1544, in execute_model',
            "    hidden_states = self.model(input_ids=input_ids, positions=positions)",
            '  File "/usr/local/lib/python3.12/dist-packages/torch/nn/modules/module.py", line 1773, in _wrapped_call_impl',
            "    return self._call_impl(*args, **kwargs)",
        ],
    )
    back = kill_and_restart(w, victim, fault + timedelta(seconds=5))
    up_at = startup(w, victim, back)
    rate = lambda t: 3100.0 if not (fault - timedelta(minutes=2) <= t < fault) else 3900.0  # noqa: E731
    kv = lambda p, t: 61.0 + w.rng.uniform(-4, 4) + (30.0 if fault - timedelta(minutes=2) <= t < fault else 0.0)  # noqa: E731
    serve(w, pods, Load(rate, kv), at("13:12"), end, lambda p, t: not (p is victim and fault <= t < up_at))
    capture_trace(w, fault - timedelta(minutes=4), fault, rate, n_max=800)
    noise(w, start, end)
    return {
        "root_cause": {
            "category": "gpu-memory",
            "template": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate <*>",
            "host": victim.node,
            "pod": victim.name,
            "first_time": iso(w.node_time(victim.node, fault)),
        },
        "symptoms": [
            {"category": "engine", "template": "EngineCore encountered a fatal error."},
            {"category": "request-errors", "template": "HTTP 500"},
            {"category": "pod-lifecycle", "template": "Back-off restarting failed container"},
        ],
        "impact": {"start": iso(fault), "end": iso(up_at)},
    }


@scenario("node-failure")
def node_failure(w: World) -> dict:
    """The kubelet on one node stops (PLEG), the node goes NotReady, its pod is evicted and rescheduled."""
    nodes = skewed_nodes(w, 3)
    pods = deployment(w, "mixtral-8x7b", 3, "84d6c9f7b", nodes)
    start, fault, end = at("21:00"), at("21:24:13.500"), at("22:00")
    start_all(w, pods, start)
    victim = pods[2]
    node = victim.node
    for i in range(14):
        t = fault + timedelta(seconds=5 * i)
        w.kubelet(
            node,
            t,
            "E",
            "kubelet.go:2412",
            f'"Skipping pod synchronization" err="PLEG is not healthy: pleg was last seen active {3 + i * 5 // 60}m{(i * 5) % 60}.{w.rng.randrange(10**9):09d}s ago; threshold is 3m0s"',
        )
    w.event(
        fault + timedelta(seconds=40),
        "Normal",
        "NodeNotReady",
        "Node",
        node,
        f"Node {node} status is now: NodeNotReady",
        node,
        component="node-controller",
        ns="default",
    )
    w.event(
        fault + timedelta(seconds=41),
        "Warning",
        "NodeNotReady",
        "Pod",
        victim.name,
        "Node is not ready",
        None,
        component="node-controller",
    )
    w.event(
        fault + timedelta(seconds=341),
        "Normal",
        "TaintManagerEviction",
        "Pod",
        victim.name,
        f"Marking for deletion Pod {NS}/{victim.name}",
        None,
        component="taint-eviction-controller",
    )
    repl = w.add_pod(victim.name.rsplit("-", 1)[0] + "-q7x9m", nodes[0], "kubectl", "10.0.9.41")
    w.event(
        fault + timedelta(seconds=342),
        "Warning",
        "FailedScheduling",
        "Pod",
        repl.name,
        "0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }, 2 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.",
        None,
        component="default-scheduler",
    )
    rate = lambda t: 4800.0  # noqa: E731
    kv = lambda p, t: 47.0 + w.rng.uniform(-5, 5)  # noqa: E731
    serve(w, pods, Load(rate, kv), at("21:02"), end, lambda p, t: not (p is victim and t >= fault))
    capture_trace(w, fault - timedelta(minutes=4), fault, rate, n_max=800)
    noise(w, start, end)
    return {
        "root_cause": {
            "category": "node",
            "template": "Skipping pod synchronization err=PLEG is not healthy",
            "host": node,
            "pod": victim.name,
            "first_time": iso(w.node_time(node, fault)),
        },
        "symptoms": [
            {"category": "pod-lifecycle", "template": "Node is not ready"},
            {"category": "pod-lifecycle", "template": "FailedScheduling"},
        ],
        "impact": {"start": iso(fault), "end": None},
    }


@scenario("kv-pressure")
def kv_pressure(w: World) -> dict:
    """No crash: traffic outgrows capacity; KV full, preemptions, a long waiting queue, slow requests."""
    nodes = skewed_nodes(w, 2)
    pods = deployment(w, "llama-8b", 2, "7c5d9b6f8", nodes, tp=1)
    start, grow0, grow1, end = at("16:00"), at("16:20"), at("16:35"), at("17:05")
    start_all(w, pods, start)
    rate = ramp(grow0, grow1, 2100.0, 5200.0)

    def over(t: datetime) -> float:
        return max(0.0, min(1.0, (t - grow0).total_seconds() / (grow1 - grow0).total_seconds()))

    load = Load(
        rate,
        lambda p, t: 52.0 + 48.0 * min(1.0, over(t) * 1.6) + w.rng.uniform(-1.5, 0),
        waiting=lambda p, t: int(max(0.0, over(t) - 0.55) * 900 + w.rng.randrange(5)),
        preempt=lambda p, t: int(max(0.0, over(t) - 0.6) * 80 + (w.rng.randrange(3) if over(t) > 0.6 else 0)),
        gen_per_req=2.4,
    )
    # Throughput per request degrades: cap generation by capacity.
    base_serve_rate = load.rate
    load.rate = lambda t: min(base_serve_rate(t), 3300.0 - 600.0 * max(0.0, over(t) - 0.6))
    serve(w, pods, load, at("16:02"), end, lambda p, t: True)
    capture_trace(w, grow0, grow1, rate, n_max=1500)
    noise(w, start, end)
    return {
        "root_cause": {
            "category": "capacity",
            "template": "GPU KV cache usage: 100.0%, waiting queue growing, preemptions",
            "host": None,
            "pod": None,
            "first_time": iso(grow0 + (grow1 - grow0) * 0.6),
        },
        "symptoms": [{"category": "capacity", "template": "Waiting: <*> reqs"}],
        "impact": {"start": iso(grow0 + (grow1 - grow0) * 0.6), "end": iso(end)},
    }


@scenario("healthy")
def healthy(w: World) -> dict:
    """A normal day: health checks, a benign startup warning, a few 4xx, unrelated pods. No incident."""
    nodes = skewed_nodes(w, 2)
    pods = deployment(w, "llama-70b", 2, "7d9c5b8f6", nodes)
    start, end = at("10:00"), at("11:00")
    start_all(w, pods, start)
    daily = lambda t: 6000.0 + 900.0 * math.sin((t - start).total_seconds() / 1800.0)  # noqa: E731
    serve(w, pods, Load(daily, lambda p, t: 48.0 + w.rng.uniform(-6, 6)), at("10:02"), end, lambda p, t: True)
    capture_trace(w, at("10:20"), at("10:25"), daily, n_max=600)
    noise(w, start, end)
    return {"root_cause": None, "symptoms": [], "impact": None}


@scenario("config-rollout")
def config_rollout(w: World) -> dict:
    """A rollout lowers `gpu_memory_utilization`: the new engines get a third of the KV cache, and
    under the same load their cache fills, requests queue and throughput falls. No error anywhere."""
    nodes = skewed_nodes(w, 2)
    old = deployment(w, "llama-70b", 2, "7d9c5b8f6", nodes)
    new = deployment(w, "llama-70b", 2, "5f8d7c9b4", nodes)
    start, roll, end = at("09:00"), at("09:40"), at("10:25")
    start_all(w, old, start)
    w.event(
        roll - timedelta(seconds=95),
        "Normal",
        "ScalingReplicaSet",
        "Deployment",
        "llama-70b",
        "Scaled up replica set llama-70b-5f8d7c9b4 to 2",
        component="deployment-controller",
    )
    began = {}
    for p in new:
        began[p.name] = roll - timedelta(seconds=90 - w.rng.uniform(0, 20))
        startup(w, p, began[p.name], gpu_util=0.6, kv_tokens=614_400, concurrency=37.5)
    w.event(
        roll,
        "Normal",
        "ScalingReplicaSet",
        "Deployment",
        "llama-70b",
        "Scaled down replica set llama-70b-7d9c5b8f6 to 0 from 2",
        component="deployment-controller",
    )
    for p in old:
        stop_pod(w, p, roll + timedelta(seconds=1))
        w.vllm(
            p, roll + timedelta(seconds=2), "APIServer", "INFO", "launcher.py:80", "Shutting down FastAPI HTTP server."
        )
    rate = lambda t: 6200.0 + 300.0 * math.sin((t - start).total_seconds() / 1500.0)  # noqa: E731
    serve(w, old, Load(rate, lambda p, t: 52.0 + w.rng.uniform(-6, 6)), at("09:02"), roll, lambda p, t: True)
    filled = roll + timedelta(minutes=2)
    load = Load(
        rate,
        lambda p, t: 100.0 if t >= filled else 88.0 + w.rng.uniform(-3, 3),
        waiting=lambda p, t: int(min(240, max(0.0, (t - filled).total_seconds()) / 4)) + w.rng.randrange(4),
        share=lambda p, t: 0.55 if t >= filled else 0.9,
    )
    serve(w, new, load, roll, end, lambda p, t: True)
    capture_trace(w, roll - timedelta(minutes=5), roll + timedelta(minutes=5), rate, n_max=800)
    noise(w, start, end)
    first = min(new, key=lambda p: (began[p.name], p.name))
    return {
        "root_cause": {
            "category": "config-change",
            "template": "engine configuration changed in a rollout: gpu_memory_utilization 0.92 → 0.6",
            "host": first.name,
            "pod": first.name,
            "first_time": iso(began[first.name]),
        },
        "symptoms": [{"category": "capacity", "template": "GPU KV cache usage: 100%, Waiting: <*> reqs"}],
        "impact": {"start": iso(filled), "end": iso(end)},
    }


SM_CLOCK_MHZ = 1980
"""An H100 SXM's boost clock, what DCGM's `DCGM_FI_DEV_SM_CLOCK` reads on a busy healthy GPU."""


@scenario("gpu-throttle")
def gpu_throttle(w: World) -> dict:
    """Slow, not dead: one node's GPUs overheat (a failed fan) and hold their clocks down; that
    replica serves at 40 % while its queue grows. Nothing crashes; DCGM's exporter, saved as a
    `promtool tsdb dump` beside the logs, has the clock-event reasons, SM clocks and temperatures."""
    nodes = skewed_nodes(w, 3)
    pods = deployment(w, "qwen-72b", 3, "6c8f9d7b5", nodes)
    start, hot, end = at("14:00"), at("14:31:10"), at("15:10")
    start_all(w, pods, start)
    victim = pods[1]
    rate = lambda t: 5400.0 + 250.0 * math.sin((t - start).total_seconds() / 1300.0)  # noqa: E731
    load = Load(
        rate,
        lambda p, t: 55.0 + w.rng.uniform(-5, 5) + (35.0 if p is victim and t >= hot else 0.0),
        waiting=lambda p, t: (
            (int(min(180, (t - hot).total_seconds() / 6)) if p is victim and t >= hot else 0) + w.rng.randrange(3)
        ),
        share=lambda p, t: 0.4 if p is victim and t >= hot + timedelta(seconds=40) else 1.0,
    )
    serve(w, pods, load, at("14:02"), end, lambda p, t: True)
    dump = "metrics/dcgm-tsdb-dump.txt"
    t = start
    while t < end:
        ms = int(t.timestamp() * 1000)
        for p in pods:
            for gpu in range(p.tp):
                throttled = p is victim and t >= hot
                labels = f'gpu="{gpu}", UUID="GPU-{_uid(p.node + str(gpu))[:8]}", Hostname="{p.node}"'
                temp = (91 + w.rng.randrange(4)) if throttled else (63 + w.rng.randrange(6))
                clock = (1095 + 15 * w.rng.randrange(5)) if throttled else (SM_CLOCK_MHZ - 15 * w.rng.randrange(3))
                for name, value in (
                    ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", 72 if throttled else 0),
                    ("DCGM_FI_DEV_SM_CLOCK", clock),
                    ("DCGM_FI_DEV_GPU_TEMP", temp),
                ):
                    w.emit(dump, t, f'{{__name__="{name}", {labels}}} {value} {ms}')
        t += timedelta(seconds=30)
    capture_trace(w, hot - timedelta(minutes=3), hot + timedelta(minutes=3), rate, n_max=600)
    noise(w, start, end)
    return {
        "root_cause": {
            "category": "gpu-fault",
            "template": "clocks held down by the hardware (HW Slowdown, HW Thermal Slowdown)",
            "host": victim.node,
            "pod": victim.name,
            "first_time": iso(hot),
        },
        "symptoms": [{"category": "capacity", "template": "Waiting: <*> reqs"}],
        "impact": {"start": iso(hot + timedelta(seconds=40)), "end": iso(end)},
    }


@scenario("silent-kv")
def silent_kv(w: World) -> dict:
    """The motivating fault without its message: the store that would say "Cache corruption
    detected" is not there. Only the tell (KV cache at 100 % with nothing waiting and nothing
    preempted) comes before the engines read stale blocks: NaN probabilities in the sampler,
    engine death, 500s, restarts."""
    nodes = skewed_nodes(w, 2)
    pods = deployment(w, "llama-70b", 2, "4b7d8c6f9", nodes)
    start, tell, fault, end = at("11:00"), at("11:20"), at("11:27:14.310"), at("11:55")
    start_all(w, pods, start)
    down: dict[str, tuple[datetime, datetime]] = {}
    for k, p in enumerate(pods):
        t = fault + timedelta(seconds=41 * k)
        crash_engine(
            w,
            p,
            t,
            "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0",
            [
                '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 1623, in execute_model',
                "    sampler_output = self.sampler(logits=logits, sampling_metadata=sampling_metadata)",
                '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/sample/sampler.py", line 86, in forward',
                "    sampled = self.sample(logits, sampling_metadata)",
                '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/sample/ops/topk_topp_sampler.py", line 291, in random_sample',
                "    return probs.div_(q).argmax(dim=-1).view(-1)",
            ],
        )
        back = kill_and_restart(w, p, t + timedelta(seconds=6))
        down[p.name] = (t, startup(w, p, back))
    rate = lambda t: 6100.0 + 200.0 * math.sin((t - start).total_seconds() / 1100.0)  # noqa: E731
    load = Load(rate, lambda p, t: 100.0 if tell <= t < down[p.name][0] else 58.0 + w.rng.uniform(-6, 6))
    serve(w, pods, load, at("11:02"), end, lambda p, t: not (down[p.name][0] <= t < down[p.name][1]))
    capture_trace(w, tell - timedelta(minutes=3), fault, rate, n_max=900)
    noise(w, start, end)
    return {
        "root_cause": {
            "category": "kv-cache",
            "template": "GPU KV cache usage: 100%, Waiting: 0 reqs, no preemptions",
            "host": None,
            "pod": None,
            "first_time": iso(tell),
        },
        "symptoms": [
            {"category": "engine", "template": "RuntimeError raised in the sampler"},
            {"category": "request-errors", "template": "HTTP 500"},
        ],
        "impact": {"start": iso(fault), "end": iso(max(up for _, up in down.values()))},
    }


@scenario("startup-failure")
def startup_failure(w: World) -> dict:
    """A new two-node deployment never serves: vLLM finds no routable address in the pods
    (`Failed to get the IP address, using 0.0.0.0`), the ranks advertise one the others cannot
    reach, Gloo's mesh fails to connect, and the containers crash-loop for forty minutes."""
    nodes = skewed_nodes(w, 2)
    pods = deployment(w, "deepseek-v3", 2, "8d6f5c7b9", nodes)
    start, end = at("13:00"), at("13:45")
    for p in pods:
        t = start + timedelta(seconds=w.rng.uniform(0, 15))
        attempt = 0
        while t < end:
            w.vllm(p, t, "APIServer", "INFO", "api_server.py:1885", "vLLM API server version 0.10.2")
            w.vllm(
                p,
                t + timedelta(seconds=0.2),
                "APIServer",
                "INFO",
                "utils.py:328",
                "non-default args: {'model': 'deepseek-ai/DeepSeek-V3', 'tensor_parallel_size': 8, "
                "'pipeline_parallel_size': 2, 'distributed_executor_backend': 'mp'}",
            )
            w.vllm(
                p,
                t + timedelta(seconds=8),
                "EngineCore_DP0",
                "INFO",
                "core.py:93",
                "Initializing a V1 LLM engine (v0.10.2) with config: model='deepseek-ai/DeepSeek-V3', "
                "tensor_parallel_size=8, pipeline_parallel_size=2",
            )
            w.raw(
                p,
                t + timedelta(seconds=8.5),
                "EngineCore_DP0",
                "/usr/local/lib/python3.12/dist-packages/vllm/utils/__init__.py:752: UserWarning: Failed to get the "
                "IP address, using 0.0.0.0 by default.The value can be set by the environment variable VLLM_HOST_IP "
                "or HOST_IP.\n  warnings.warn(",
            )
            for r in range(16):
                w.vllm(
                    p,
                    t + timedelta(seconds=10 + r * 0.01),
                    f"Worker_TP{r % p.tp}",
                    "INFO",
                    "parallel_state.py:1165",
                    f"world_size=16 rank={r} local_rank={r % 8} distributed_init_method=tcp://0.0.0.0:29500 backend=nccl",
                )
                w.nccl(p, t + timedelta(seconds=11 + r * 0.01), r % p.tp, "INFO", "Bootstrap : Using lo:127.0.0.1<0>")
            fail = t + timedelta(seconds=40)
            w.vllm(
                p,
                fail,
                "EngineCore_DP0",
                "ERROR",
                "core.py:708",
                "\n".join(
                    [
                        "EngineCore failed to start.",
                        "Traceback (most recent call last):",
                        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 699, in run_engine_core',
                        "    engine_core = EngineCoreProc(*args, **kwargs)",
                        '  File "/usr/local/lib/python3.12/dist-packages/vllm/distributed/parallel_state.py", line 1011, in init_distributed_environment',
                        "    torch.distributed.init_process_group(",
                        "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
                    ]
                ),
            )
            w.vllm(
                p,
                fail + timedelta(seconds=0.5),
                "APIServer",
                "ERROR",
                "core_client.py:441",
                "Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}",
            )
            attempt += 1
            wait = min(300, 10 * 2**attempt)
            back_off(
                w, p, fail + timedelta(seconds=2), count=attempt, first=start + timedelta(seconds=45), seconds=wait
            )
            w.restart(p)
            t = fail + timedelta(seconds=wait + 5)
    rate = lambda t: 4000.0  # noqa: E731  (what the clients sent, captured at the load generator)
    capture_trace(w, start + timedelta(minutes=5), start + timedelta(minutes=8), rate, n_max=500)
    noise(w, start - timedelta(hours=6), end)
    return {
        "root_cause": {
            "category": "network",
            "template": "RuntimeError: Gloo connectFullMesh failed with <*>",
            "host": None,
            "pod": None,
            "first_time": iso(start + timedelta(seconds=40)),
        },
        "symptoms": [{"category": "pod-lifecycle", "template": "Back-off restarting failed container"}],
        "impact": {"start": iso(start + timedelta(seconds=40)), "end": iso(end)},
    }


def sglang(w: World, p: Pod, t: datetime, text: str, ranks: str = " TP0") -> None:
    """An SGLang server line: `[date time ranks] message` in the node's local clock (no level)."""
    nt = w.node_time(p.node, t)
    for i, line in enumerate(text.split("\n")):
        w.pod_line(p, t + timedelta(microseconds=i), (f"[{nt:%Y-%m-%d %H:%M:%S}{ranks}] " if i == 0 else "") + line)


SGL_TOKENS = 412_816
"""The KV pool SGLang sizes for Qwen2.5-32B on two 80 GB GPUs at `mem_fraction_static=0.88`."""


def sglang_start(w: World, p: Pod, t: datetime) -> datetime:
    """An SGLang server starting: its arguments, weights, the KV pool, CUDA graphs, uvicorn."""
    sglang(
        w,
        p,
        t,
        "server_args=ServerArgs(model_path='Qwen/Qwen2.5-32B-Instruct', tp_size=2, mem_fraction_static=0.88, "
        "max_running_requests=256, chunked_prefill_size=8192, context_length=32768, page_size=1, host='0.0.0.0', "
        "port=30000, enable_metrics=True)",
        ranks="",
    )
    for r in range(p.tp):
        sglang(w, p, t + timedelta(seconds=6 + r * 0.01), "Load weight begin. avail mem=78.62 GB", ranks=f" TP{r}")
        sglang(
            w,
            p,
            t + timedelta(seconds=48 + r * 0.01),
            "Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=47.81 GB",
            ranks=f" TP{r}",
        )
        sglang(
            w,
            p,
            t + timedelta(seconds=49 + r * 0.01),
            f"KV Cache is allocated. #tokens: {SGL_TOKENS}, K size: 19.70 GB, V size: 19.70 GB",
            ranks=f" TP{r}",
        )
    sglang(
        w,
        p,
        t + timedelta(seconds=70),
        f"max_total_num_tokens={SGL_TOKENS}, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=256, context_len=32768",
    )
    sglang(
        w,
        p,
        t + timedelta(seconds=72),
        "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
        ranks="",
    )
    sglang(w, p, t + timedelta(seconds=75), "The server is fired up and ready to roll!", ranks="")
    return t + timedelta(seconds=75)


@scenario("sglang-kv-leak")
def sglang_kv_leak(w: World) -> dict:
    """SGLang, not vLLM: a radix-cache bug leaks KV slots; the scheduler's idle check finds them
    (`token_to_kv_pool_allocator memory leak detected!`) and raises, the server dies, requests fail
    and the pod restarts; the other replica leaks nine minutes later."""
    nodes = skewed_nodes(w, 2)
    pods = deployment(w, "qwen-32b-sgl", 2, "6f9c8d7b4", nodes)
    start, fault, end = at("15:00"), at("15:22:37"), at("16:10")
    for p in pods:
        sglang_start(w, p, start + timedelta(seconds=w.rng.uniform(0, 15)))
    down: dict[str, tuple[datetime, datetime]] = {}
    for k, p in enumerate(pods):
        t = fault + timedelta(minutes=9 * k, seconds=13 * k)
        avail = 412_816 - 1837 - 611 * k
        sglang(
            w,
            p,
            t,
            "\n".join(
                [
                    "Scheduler hit an exception: Traceback (most recent call last):",
                    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2641, in run_scheduler_process',
                    "    scheduler.event_loop_overlap()",
                    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 804, in event_loop_overlap',
                    "    self.self_check_during_idle()",
                    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1466, in check_memory',
                    "    raise ValueError(msg)",
                    f"ValueError: token_to_kv_pool_allocator memory leak detected! available_size={avail}, "
                    f"protected_size=0, self.max_total_num_tokens={SGL_TOKENS}",
                ]
            ),
        )
        sglang(
            w,
            p,
            t + timedelta(seconds=0.4),
            "Received sigquit from a child process. It usually means the child failed.",
            ranks="",
        )
        for i in range(5):
            w.pod_line(
                p,
                t + timedelta(seconds=0.6 + i * 0.3),
                f'[{w.node_time(p.node, t):%Y-%m-%d %H:%M:%S}] INFO:     10.0.{i + 1}.9:4{i}112 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
            )
        back = kill_and_restart(w, p, t + timedelta(seconds=4))
        down[p.name] = (t, sglang_start(w, p, back))
    rate = lambda t: 3600.0 + 200.0 * math.sin((t - start).total_seconds() / 1200.0)  # noqa: E731
    t = at("15:02")
    while t < end:
        for p in pods:
            if down[p.name][0] <= t < down[p.name][1]:
                continue
            per = rate(t) / len(pods)
            usage = 0.52 + w.rng.uniform(-0.05, 0.05)
            sglang(
                w,
                p,
                t + timedelta(seconds=w.rng.uniform(0, 0.4)),
                f"Decode batch. #running-req: {int(per / 14) + w.rng.randrange(5)}, #token: {int(usage * SGL_TOKENS)}, "
                f"token usage: {usage:.2f}, cuda graph: True, gen throughput (token/s): {per * 2.4 * w.rng.uniform(0.93, 1.07):.2f}, "
                f"#queue-req: {w.rng.randrange(3)}",
            )
            for _ in range(_poisson(w.rng, 1.0 * w.scale)):
                ta = t + timedelta(seconds=w.rng.uniform(0, 10))
                status = 200 if w.rng.random() > 0.004 else 400
                phrase = "OK" if status == 200 else "Bad Request"
                client = f"10.0.{w.rng.randrange(1, 9)}.{w.rng.randrange(2, 250)}:{w.rng.randrange(30000, 65000)}"
                w.pod_line(
                    p,
                    ta,
                    f'[{w.node_time(p.node, ta):%Y-%m-%d %H:%M:%S}] INFO:     {client} - "POST /v1/chat/completions HTTP/1.1" {status} {phrase}',
                )
            w.pod_line(
                p,
                t + timedelta(seconds=5.1),
                f'[{w.node_time(p.node, t + timedelta(seconds=5.1)):%Y-%m-%d %H:%M:%S}] INFO:     10.0.0.1:51000 - "GET /health HTTP/1.1" 200 OK',
            )
        t += timedelta(seconds=10)
    capture_trace(w, fault - timedelta(minutes=4), fault, rate, n_max=800)
    noise(w, start, end)
    victim = pods[0]
    return {
        "root_cause": {
            "category": "kv-cache",
            "template": "ValueError: token_to_kv_pool_allocator memory leak detected! <*>",
            "host": victim.node,
            "pod": victim.name,
            "first_time": iso(w.node_time(victim.node, fault)),
        },
        "symptoms": [
            {"category": "engine", "template": "Received sigquit from a child process"},
            {"category": "pod-lifecycle", "template": "Back-off restarting failed container"},
        ],
        "impact": {"start": iso(fault), "end": iso(max(up for _, up in down.values()))},
    }


HOLDOUT = ("holdout-gpu-xid", "holdout-ray-socket", "holdout-node-memory")
"""Scenarios written after the analysis was tuned on the six above, to measure how it
generalises (other pod naming, vLLM generations and failure kinds). Not shipped."""


@scenario("holdout-gpu-xid")
def holdout_gpu_xid(w: World) -> dict:
    """StatefulSet pods on the V0 engine; a GPU falls off the bus (Xid 79) under one worker."""
    nodes = skewed_nodes(w, 3)
    pods = [w.add_pod(f"vllm-{i}", nodes[i], "kubectl", f"10.0.{i + 1}.30", tp=2, style="v0") for i in range(3)]
    start, fault, end = at("14:00"), at("14:20:11.250"), at("14:50")
    start_all(w, pods, start, version="0.6.3")
    victim = pods[1]
    nt = w.node_time(victim.node, fault)
    kpid = victim.pids["Worker_TP1"]
    w.emit(
        f"nodes/{victim.node}/kernel.journal",
        fault,
        f"{nt:%b %d %H:%M:%S} {victim.node} kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid={kpid}, name=python3, GPU has fallen off the bus.",
    )
    w.emit(
        f"nodes/{victim.node}/kernel.journal",
        fault + timedelta(seconds=0.2),
        f"{nt:%b %d %H:%M:%S} {victim.node} kernel: NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.",
    )
    w.vllm(
        victim,
        fault + timedelta(seconds=0.9),
        "Worker_TP1",
        "ERROR",
        "multiproc_worker_utils.py:233",
        "\n".join(
            [
                "Exception in worker VllmWorkerProcess while processing method execute_model.",
                "Traceback (most recent call last):",
                '  File "/usr/local/lib/python3.12/dist-packages/vllm/worker/model_runner.py", line 1703, in execute_model',
                "RuntimeError: CUDA error: an illegal memory access was encountered",
            ]
        ),
    )
    w.vllm(
        victim,
        fault + timedelta(seconds=1.2),
        "APIServer",
        "ERROR",
        "async_llm_engine.py:56",
        "\n".join(
            [
                "Engine background task failed",
                "Traceback (most recent call last):",
                '  File "/usr/local/lib/python3.12/dist-packages/vllm/engine/async_llm_engine.py", line 46, in _log_task_completion',
                "vllm.engine.async_llm_engine.AsyncEngineDeadError: Background loop has errored already.",
            ]
        ),
    )
    for i in range(6):
        w.access(victim, fault + timedelta(seconds=1.5 + i), 500)
    back = kill_and_restart(w, victim, fault + timedelta(seconds=10))
    up_at = startup(w, victim, back + timedelta(minutes=4), version="0.6.3")
    rate = lambda t: 5400.0  # noqa: E731
    serve(
        w,
        pods,
        Load(rate, lambda p, t: 44.0 + w.rng.uniform(-4, 4)),
        at("14:02"),
        end,
        lambda p, t: not (p is victim and fault <= t < up_at),
    )
    noise(w, start, end)
    return {
        "root_cause": {
            "category": "gpu-fault",
            "template": "NVRM: Xid <*>: 79 ... GPU has fallen off the bus.",
            "host": victim.node,
            "pod": victim.name,
            "first_time": iso(nt),
        },
        "symptoms": [{"category": "engine"}],
        "impact": {"start": iso(fault), "end": iso(up_at)},
    }


@scenario("holdout-ray-socket")
def holdout_ray_socket(w: World) -> dict:
    """vLLM on Ray across nodes (V0, torch 2.1): one worker node's socket transport drops."""
    nodes = skewed_nodes(w, 4)
    pods = [
        w.add_pod(
            f"llama-ray-{i}-head-{s}",
            nodes[i],
            "kubectl" if i % 2 == 0 else "cri",
            f"10.0.{5 + i}.11",
            tp=2,
            style="ray",
        )
        for i, s in enumerate(("x7k2p", "b9q4w", "m3n8r", "t5v6z"))
    ]
    start, fault, end = at("03:00"), at("03:31:44.020"), at("04:20")
    start_all(w, pods, start, version="0.5.4")
    bad = pods[2]
    w.nccl(bad, fault, 1, "WARN", f"Net : Connection closed by remote peer {pods[3].ip}<34552>", "misc/socket.cc:538")
    for where in ("misc/socket.cc:549", "transport/net_socket.cc:368", "transport/net.cc:1008", "proxy.cc:858"):
        w.nccl(
            bad,
            fault + timedelta(milliseconds=1),
            1,
            "INFO",
            f"{where} -> 6" + (" [Proxy Thread]" if where == "proxy.cc:858" else ""),
        )
    for i, p in enumerate(pods):
        w.c10(
            p,
            fault + timedelta(seconds=1800.4 + 0.01 * i),
            1,
            "E",
            "ProcessGroupNCCL.cpp:475",
            f"[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=8817, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 180{i}412 milliseconds before timing out.",
        )
    rate = lambda t: 6600.0  # noqa: E731
    serve(
        w,
        pods,
        Load(rate, lambda p, t: 51.0 + w.rng.uniform(-4, 4)),
        at("03:02"),
        end,
        lambda p, t: not (p is bad and t >= fault),
    )
    noise(w, start, end)
    return {
        "root_cause": {
            "category": "network",
            "template": "Net : Connection closed by remote peer <*>",
            "host": bad.node,
            "pod": bad.name,
            "first_time": iso(w.node_time(bad.node, fault)),
        },
        "symptoms": [{"category": "collective-timeout"}],
        "impact": {"start": iso(fault), "end": None},
    }


@scenario("holdout-node-memory")
def holdout_node_memory(w: World) -> dict:
    """Host memory pressure on one node: the kubelet evicts the vLLM pod there."""
    nodes = skewed_nodes(w, 2)
    pods = deployment(w, "gemma-27b", 2, "6d4f8b9c7", nodes)
    start, fault, end = at("18:00"), at("18:27:30.000"), at("19:00")
    start_all(w, pods, start)
    victim = pods[1]
    node = victim.node
    for i in range(3):
        w.kubelet(
            node,
            fault + timedelta(seconds=10 * i),
            "W",
            "eviction_manager.go:366",
            '"Eviction manager: attempting to reclaim" resourceName="memory"',
        )
    w.event(
        fault + timedelta(seconds=1),
        "Warning",
        "EvictionThresholdMet",
        "Node",
        node,
        "Attempting to reclaim memory",
        node,
        ns="default",
    )
    w.event(
        fault + timedelta(seconds=12),
        "Warning",
        "Evicted",
        "Pod",
        victim.name,
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 61432Ki. Container vllm was using 187Gi, request is 64Gi, has larger consumption of memory. ",
        node,
    )
    w.event(
        fault + timedelta(seconds=13),
        "Normal",
        "Killing",
        "Pod",
        victim.name,
        "Stopping container vllm",
        node,
        field_path="spec.containers{vllm}",
    )
    rate = lambda t: 4100.0  # noqa: E731
    serve(
        w,
        pods,
        Load(rate, lambda p, t: 49.0 + w.rng.uniform(-5, 5)),
        at("18:02"),
        end,
        lambda p, t: not (p is victim and t >= fault + timedelta(seconds=13)),
    )
    noise(w, start, end)
    return {
        "root_cause": {
            "category": "node",
            "template": "EvictionThresholdMet: Attempting to reclaim memory",
            "host": node,
            "pod": victim.name,
            "first_time": iso(w.node_time(node, fault)),
        },
        "symptoms": [{"category": "pod-lifecycle"}],
        "impact": {"start": iso(fault), "end": None},
    }


def generate(name: str, out: Path, seed: int = 1, scale: float = 1.0) -> dict:
    """Write scenario `name` to `out` and return its ground truth (also written as ground_truth.json)."""
    if name not in SCENARIOS:
        raise KeyError(f"unknown scenario {name!r}; choose one of: {', '.join(sorted(SCENARIOS))}")
    w = World(seed=seed, scale=scale)
    truth = SCENARIOS[name](w)
    truth = {
        "scenario": name,
        "seed": seed,
        "scale": scale,
        "generator": "forensics samples/generate.py",
        **truth,
        "clock_skew_s": dict(sorted(w.skew.items())),
    }
    w.write(out)
    (out / "ground_truth.json").write_text(json.dumps(truth, indent=2, sort_keys=False) + "\n")
    return truth


def main(argv: list[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(description="Generate a sample incident directory.")
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scale", type=float, default=1.0)
    a = ap.parse_args(argv)
    generate(a.scenario, a.outdir, a.seed, a.scale)


if __name__ == "__main__":
    main()
