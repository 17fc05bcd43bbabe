"""Prometheus alert rules derived from what an incident showed.

Only rules relevant to the diagnosis are emitted (shared docs, prior-art §9.3), with real
metric names: vLLM `vllm:*`, DCGM `DCGM_FI_*`, NCCL Inspector `nccl_*`, kube-state-metrics.
Thresholds are relative where a baseline is needed (throughput against itself an hour
earlier) so they carry over to other deployments. Output: a `PrometheusRule`
(monitoring.coreos.com/v1) or a plain rules file, plus a `promtool test rules` fixture
that replays the incident's shape and asserts the key alerts fire.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from forensics.diagnosis import signatures
from forensics.diagnosis.signatures import Trait

RUNBOOK = "https://runbooks.example.internal/gpu-serving/{alert}"
"""Placeholder base for runbook_url: replace with your team's runbooks."""

VLLM = "vllm-project/vllm vllm/v1/metrics/loggers.py (PrometheusStatLogger)"
INSPECTOR = (
    "NVIDIA/nccl ext-profiler/inspector/inspector_prom.cc (inspectorPromWriteCollInfo)",
    frozenset(
        {"comm_id", "hostname", "rank", "slurm_job", "slurm_job_id", "nranks", "n_nodes", "gpu_device_id"}
        | {"collective", "coll_sn", "timestamp", "message_size"}
    ),
)
"""NCCL Inspector's Prometheus textfile: its cached per-communicator labels, then the collective's."""
METRICS: dict[str, tuple[str, frozenset[str]]] = {
    "vllm:generation_tokens_total": (VLLM, frozenset({"model_name", "engine"})),
    "vllm:num_requests_waiting": (VLLM, frozenset({"model_name", "engine"})),
    "vllm:num_requests_running": (VLLM, frozenset({"model_name", "engine"})),
    "vllm:kv_cache_usage_perc": (VLLM, frozenset({"model_name", "engine"})),
    "vllm:num_preemptions_total": (VLLM, frozenset({"model_name", "engine"})),
    "vllm:e2e_request_latency_seconds_bucket": (VLLM, frozenset({"model_name", "engine", "le"})),
    "vllm:nixl_num_failed_transfers_total": (
        "vllm-project/vllm vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py (NixlPromMetrics)",
        frozenset({"model_name", "engine"}),
    ),
    "vllm:nixl_num_kv_expired_reqs_total": (
        "vllm-project/vllm vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py (NixlPromMetrics)",
        frozenset({"model_name", "engine"}),
    ),
    "process_open_fds": ("prometheus/client_python prometheus_client/process_collector.py", frozenset()),
    "process_max_fds": ("prometheus/client_python prometheus_client/process_collector.py", frozenset()),
    "nccl_bus_bandwidth_gbs": INSPECTOR,
    "nccl_collective_exec_time_microseconds": INSPECTOR,
    "DCGM_FI_DEV_XID_ERRORS": (
        "NVIDIA/dcgm-exporter etc/default-counters.csv",
        frozenset({"gpu", "UUID", "device", "modelName", "Hostname", "err_code", "err_msg"}),
    ),
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": (
        "NVIDIA DCGM dcgm_fields.h field 112 (bitmask of DCGM_CLOCKS_THROTTLE_REASON_*), exported by "
        "NVIDIA/dcgm-exporter when listed in its counters CSV",
        frozenset({"gpu", "UUID", "device", "modelName", "Hostname"}),
    ),
    "DCGM_FI_DEV_FB_FREE": (
        "NVIDIA/dcgm-exporter etc/default-counters.csv",
        frozenset({"gpu", "UUID", "device", "modelName", "Hostname"}),
    ),
    "DCGM_FI_DEV_FB_USED": (
        "NVIDIA/dcgm-exporter etc/default-counters.csv",
        frozenset({"gpu", "UUID", "device", "modelName", "Hostname"}),
    ),
    "kube_node_status_condition": (
        "kubernetes/kube-state-metrics docs/metrics/cluster/node-metrics.md",
        frozenset({"node", "condition", "status"}),
    ),
    "kube_pod_container_status_restarts_total": (
        "kubernetes/kube-state-metrics docs/metrics/workload/pod-metrics.md",
        frozenset({"namespace", "pod", "uid", "container"}),
    ),
}
"""Every metric a rule reads: where the exporter that emits it defines it, and the labels it
carries there. `TARGET_LABELS` are added by the scrape (a ServiceMonitor / PodMonitor's
Kubernetes service discovery), not by the exporter."""
TARGET_LABELS = frozenset({"pod", "namespace", "container", "instance", "job", "service"})


@dataclass(frozen=True)
class Rule:
    alert: str
    expr: str
    for_: str
    severity: str
    summary: str
    description: str
    finding: str
    """Which finding of the postmortem asked for this rule."""

    def as_dict(self) -> dict:
        return {
            "alert": self.alert,
            "expr": self.expr,
            "for": self.for_,
            "labels": {"severity": self.severity, "source": "forensics"},
            "annotations": {
                "summary": self.summary,
                "description": self.description,
                "runbook_url": RUNBOOK.format(alert=self.alert),
            },
        }


@dataclass(frozen=True, kw_only=True)
class When:
    """Which findings call for a group of rules: any of these root-cause or symptom categories,
    any hypothesis with one of these catalog traits, or the KV-full-with-empty-queue tell."""

    categories: frozenset[str] = frozenset()
    traits: frozenset[Trait] = frozenset()
    tell: bool = False

    def holds(self, categories: set[str], traits: frozenset[Trait], tell: bool) -> bool:
        return bool(self.categories & categories or self.traits & traits or (self.tell and tell))


WATCHES: tuple[tuple[When, tuple[Rule, ...]], ...] = (
    (
        When(categories=frozenset({"kv-cache"}), tell=True),
        (
            Rule(
                alert="VLLMKVCacheFullWithoutQueueing",
                # `unless` (not `and ... == 0`): a pod whose preemption counter is not scraped still alerts.
                expr="(max by (pod) (vllm:kv_cache_usage_perc) > 0.99) and on (pod) (max by (pod) (vllm:num_requests_waiting) == 0) "
                "unless on (pod) (sum by (pod) (increase(vllm:num_preemptions_total[5m])) > 0)",
                for_="3m",
                severity="critical",
                summary="KV cache full while nothing queues and nothing is preempted",
                description="Pod {{ $labels.pod }} has its KV cache at 100% with an empty waiting queue and no preemptions: a correct "
                "allocator would queue or preempt. This preceded the cache corruption in the postmortem; check the eviction policy.",
                finding="root cause (kv-cache tell)",
            ),
        ),
    ),
    (
        When(categories=frozenset({"capacity"})),
        (
            Rule(
                alert="VLLMKVCacheSaturated",
                expr="max by (pod) (vllm:kv_cache_usage_perc) > 0.95",
                for_="10m",
                severity="warning",
                summary="KV cache above 95%",
                description="Pod {{ $labels.pod }} KV cache usage {{ $value | humanizePercentage }}.",
                finding="root cause (capacity)",
            ),
            Rule(
                alert="VLLMPreemptionStorm",
                expr="sum by (pod) (rate(vllm:num_preemptions_total[5m])) > 1",
                for_="5m",
                severity="warning",
                summary="Requests are being preempted",
                description="Pod {{ $labels.pod }} preempts {{ $value | humanize }} requests/s: add capacity.",
                finding="root cause (capacity)",
            ),
            Rule(
                alert="VLLMQueueBacklog",
                expr="sum by (model_name) (vllm:num_requests_waiting) > 100",
                for_="5m",
                severity="warning",
                summary="Waiting queue above 100 requests",
                description="{{ $value }} requests waiting for {{ $labels.model_name }}.",
                finding="root cause (capacity)",
            ),
        ),
    ),
    (
        When(traits=frozenset({Trait.KV_TRANSFER})),
        (
            Rule(
                alert="VLLMKVTransferFailures",
                expr="sum by (pod) (increase(vllm:nixl_num_failed_transfers_total[5m])) > 0",
                for_="0m",
                severity="critical",
                summary="KV transfers between prefill and decode are failing",
                description="Pod {{ $labels.pod }} failed NIXL KV transfers in the last 5 min: decode recomputes or fails those "
                "requests. Check the RDMA path between the instances (UCX errors) and the prefill instance.",
                finding="root cause (P/D KV transfer)",
            ),
            Rule(
                alert="VLLMKVLeaseExpired",
                expr="sum by (pod) (increase(vllm:nixl_num_kv_expired_reqs_total[5m])) > 0",
                for_="5m",
                severity="warning",
                summary="Prefill KV blocks released before decode read them",
                description="Pod {{ $labels.pod }} released KV blocks decode never read within the lease: decode is behind or "
                "cannot reach it, and a read after the lease may get another request's KV.",
                finding="symptoms (P/D KV transfer)",
            ),
        ),
    ),
    (
        When(traits=frozenset({Trait.FD_LIMIT})),
        (
            Rule(
                alert="ProcessOpenFilesNearLimit",
                expr="max by (namespace, pod) (process_open_fds / process_max_fds) > 0.8",
                for_="5m",
                severity="warning",
                summary="A server's open files are above 80% of its limit",
                description="{{ $labels.namespace }}/{{ $labels.pod }} uses {{ $value | humanizePercentage }} of its open-file limit: "
                "new connections and sockets fail at 100% (the postmortem's root cause). Raise the limit or cap "
                "connections per pod.",
                finding="root cause (file descriptors)",
            ),
        ),
    ),
    (
        When(categories=frozenset({"network", "collective-timeout"})),
        (
            Rule(
                alert="NCCLCommunicationFailure",
                expr='max by (hostname) (nccl_bus_bandwidth_gbs{collective="AllReduce"}) < 1 and on (hostname) '
                'max by (hostname) (max_over_time(nccl_bus_bandwidth_gbs{collective="AllReduce"}[1h] offset 10m)) > 10',
                for_="2m",
                severity="critical",
                summary="NCCL AllReduce bus bandwidth collapsed on a node",
                description="AllReduce bus bandwidth on {{ $labels.hostname }} is {{ $value | humanize }} GB/s after being healthy: collectives are "
                "failing or hung (NCCL Inspector). Watchdog timeouts follow within the collective timeout.",
                finding="symptoms (NCCL)",
            ),
            Rule(
                alert="NCCLAllReduceLatencySpike",
                expr='max by (hostname) (nccl_collective_exec_time_microseconds{collective="AllReduce"}) > 3 * '
                'max by (hostname) (avg_over_time(nccl_collective_exec_time_microseconds{collective="AllReduce"}[1d]))',
                for_="5m",
                severity="warning",
                summary="AllReduce latency 3x above its daily average",
                description="AllReduce on {{ $labels.hostname }} takes {{ $value | humanize }} us.",
                finding="symptoms (NCCL)",
            ),
        ),
    ),
    (
        When(categories=frozenset({"gpu-fault"})),
        (
            Rule(
                alert="GPUXidErrorChanged",
                expr="changes(DCGM_FI_DEV_XID_ERRORS[10m]) > 0",
                for_="0m",
                severity="critical",
                summary="GPU reported a new XID error",
                description="GPU {{ $labels.gpu }} on {{ $labels.Hostname }} reported XID {{ $value }}.",
                finding="root cause (gpu-fault)",
            ),
            Rule(
                alert="GPUClocksHeldDownByHardware",
                # PromQL has no bitwise AND: each reason's bit is floor(x / bit) % 2.
                expr="max by (Hostname, gpu) ("
                + " + ".join(f"(floor(DCGM_FI_DEV_CLOCK_THROTTLE_REASONS / {bit}) % 2)" for bit in (8, 32, 64, 128))
                + ") > 0",
                for_="5m",
                severity="warning",
                summary="A GPU's clocks are held down by heat, power or the board's slowdown signal",
                description="GPU {{ $labels.gpu }} on {{ $labels.Hostname }} runs below its clocks for a hardware reason "
                "(HW slowdown, thermal or power-brake slowdown): its tensor-parallel group serves at its pace. Check "
                "cooling and power; drain the node if it persists.",
                finding="root cause (gpu-fault: a slow GPU)",
            ),
        ),
    ),
    (
        When(categories=frozenset({"gpu-memory"})),
        (
            Rule(
                alert="GPUFramebufferNearlyFull",
                expr="DCGM_FI_DEV_FB_FREE / (DCGM_FI_DEV_FB_FREE + DCGM_FI_DEV_FB_USED) < 0.02",
                for_="5m",
                severity="warning",
                summary="GPU memory almost exhausted",
                description="GPU {{ $labels.gpu }} on {{ $labels.Hostname }} has under 2% memory free.",
                finding="root cause (gpu-memory)",
            ),
        ),
    ),
    (
        When(categories=frozenset({"node"})),
        (
            Rule(
                alert="KubeNodeNotReady",
                expr='kube_node_status_condition{condition="Ready",status="true"} == 0',
                for_="2m",
                severity="critical",
                summary="Kubernetes node not ready",
                description="Node {{ $labels.node }} is NotReady: its GPU pods stop serving.",
                finding="root cause (node)",
            ),
        ),
    ),
    (
        When(categories=frozenset({"pod-lifecycle"})),
        (
            Rule(
                alert="VLLMPodRestarting",
                expr='increase(kube_pod_container_status_restarts_total{container=~"vllm.*"}[15m]) > 2',
                for_="0m",
                severity="warning",
                summary="vLLM container restarting repeatedly",
                description="{{ $labels.namespace }}/{{ $labels.pod }} restarted {{ $value }} times in 15 min.",
                finding="symptoms (restarts)",
            ),
        ),
    ),
)
"""What each finding asks to watch, in the order the rules are written."""


def rules_for(analysis: dict) -> list[Rule]:
    """The rules the incidents in `analysis` call for (always the throughput and latency SLO pair)."""
    cats, labels, tell, baseline = _findings(analysis)
    traits = frozenset().union(*(signatures.traits_of(label) for label in labels))
    rules = _slo_rules(baseline)
    for when, watch in WATCHES:
        if when.holds(cats, traits, tell):
            rules += watch
    return rules


def _findings(analysis: dict) -> tuple[set[str], set[str], bool, float | None]:
    """What the incidents found: the root-cause and symptom categories, every hypothesis'
    label, whether the KV-full-with-empty-queue tell was seen, the first throughput baseline."""
    cats: set[str] = set()
    labels: set[str] = set()
    tell = False
    baseline = None
    for inc in analysis["incidents"]:
        cats.add(inc["root_cause"]["category"])
        cats.update(h["category"] for h in inc["hypotheses"] if h["role"] in ("symptom", "root_cause"))
        labels.update(h["label"] for h in inc["hypotheses"])
        tell = tell or bool(inc.get("tell"))
        baseline = baseline or inc.get("baseline_tokens_per_s")
    return cats, labels, tell, baseline


def _slo_rules(baseline: float | None) -> list[Rule]:
    """The throughput and latency pair every service gets, the baseline said where it was measured."""
    base_txt = f" (baseline before the incident: {baseline:,.0f} tokens/s)" if baseline else ""
    return [
        Rule(
            alert="VLLMThroughputCollapse",
            # Against the last hour's average (a subquery), not the same minute an hour ago: it
            # holds from the first hour of history, and a pod gone keeps counting in the baseline.
            expr="sum by (model_name) (rate(vllm:generation_tokens_total[5m])) < 0.5 * "
            "sum by (model_name) (avg_over_time(rate(vllm:generation_tokens_total[5m])[1h:1m] offset 5m))",
            for_="5m",
            severity="critical",
            summary="vLLM generation throughput fell below half of the last hour's average",
            description="Generation tokens/s of {{ $labels.model_name }} is {{ $value | humanize }}, under 50% of its average over the hour before"
            + base_txt
            + ".",
            finding="impact",
        ),
        Rule(
            alert="VLLMRequestLatencyP99High",
            expr="histogram_quantile(0.99, sum by (le, model_name) (rate(vllm:e2e_request_latency_seconds_bucket[5m]))) > 30",
            for_="10m",
            severity="warning",
            summary="p99 end-to-end request latency above 30 s",
            description="p99 e2e latency of {{ $labels.model_name }} is {{ $value | humanize }}s (SLO placeholder: 30 s; set yours).",
            finding="impact",
        ),
    ]


def prometheus_rule(rules: list[Rule], name: str = "forensics-incident-alerts", namespace: str = "monitoring") -> str:
    """A `PrometheusRule` custom resource (kube-prometheus-stack picks it up by label)."""
    doc = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"release": "kube-prometheus-stack", "app.kubernetes.io/part-of": "forensics"},
        },
        "spec": {"groups": [{"name": "gpu-serving-incident", "rules": [r.as_dict() for r in rules]}]},
    }
    return yaml.safe_dump(doc, sort_keys=False, width=200)


def plain_rules(rules: list[Rule]) -> str:
    """The same rules as a plain Prometheus rules file (`rule_files:`), checkable by promtool."""
    return yaml.safe_dump(
        {"groups": [{"name": "gpu-serving-incident", "rules": [r.as_dict() for r in rules]}]},
        sort_keys=False,
        width=200,
    )


def promtool_test(rules_file: str, analysis: dict) -> str:
    """A `promtool test rules` fixture: the incident's shape as input series, the key alerts expected to fire."""
    inc = analysis["incidents"][0] if analysis["incidents"] else None
    base = (inc or {}).get("baseline_tokens_per_s") or 20000.0
    per_min = int(base * 60)
    series = [
        # 2h of healthy throughput, then the counter stops: throughput collapses.
        {
            "series": 'vllm:generation_tokens_total{model_name="served-model"}',
            "values": f"0+{per_min}x120 {per_min * 120}+0x30",
        },
    ]
    by_name = {r.alert: r for r in rules_for(analysis)}

    def expect(alert: str, labels: dict, value: str) -> dict:
        r = by_name[alert]
        ann = {k: _render(v, labels, value) for k, v in r.as_dict()["annotations"].items()}
        return {"exp_labels": {**labels, "severity": r.severity, "source": "forensics"}, "exp_annotations": ann}

    tests = [
        {
            "eval_time": "130m",
            "alertname": "VLLMThroughputCollapse",
            "exp_alerts": [expect("VLLMThroughputCollapse", {"model_name": "served-model"}, "0")],
        }
    ]
    # (each test for a rule that `rules_for` wrote: whether it wrote one is its decision alone)
    if "VLLMKVCacheFullWithoutQueueing" in by_name:
        series += [
            {"series": 'vllm:kv_cache_usage_perc{pod="vllm-0"}', "values": "0.4+0.02x30 1x30"},
            {"series": 'vllm:num_requests_waiting{pod="vllm-0"}', "values": "0x60"},
            {"series": 'vllm:num_preemptions_total{pod="vllm-0"}', "values": "0x60"},
        ]
        tests.append(
            {
                "eval_time": "45m",
                "alertname": "VLLMKVCacheFullWithoutQueueing",
                "exp_alerts": [expect("VLLMKVCacheFullWithoutQueueing", {"pod": "vllm-0"}, "1")],
            }
        )
    if "ProcessOpenFilesNearLimit" in by_name:
        fds = {"namespace": "serving", "pod": "vllm-0"}
        series += [
            {"series": 'process_open_fds{namespace="serving",pod="vllm-0"}', "values": "100+30x30 1024x30"},
            {"series": 'process_max_fds{namespace="serving",pod="vllm-0"}', "values": "1024x60"},
        ]
        tests.append(
            {
                "eval_time": "45m",
                "alertname": "ProcessOpenFilesNearLimit",
                "exp_alerts": [expect("ProcessOpenFilesNearLimit", fds, "100%")],
            }
        )
    if "VLLMKVTransferFailures" in by_name:
        series.append({"series": 'vllm:nixl_num_failed_transfers_total{pod="vllm-decode-0"}', "values": "0x30 0+3x30"})
        tests.append(
            {
                "eval_time": "45m",
                "alertname": "VLLMKVTransferFailures",
                "exp_alerts": [expect("VLLMKVTransferFailures", {"pod": "vllm-decode-0"}, "0")],
            }
        )
    doc = {
        "rule_files": [rules_file],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series, "alert_rule_test": tests}],
    }
    return yaml.safe_dump(doc, sort_keys=False, width=200)


def _render(text: str, labels: dict, value: str) -> str:
    """Expand the `{{ $labels.x }}` / `{{ $value | fn }}` placeholders used above, as Prometheus would."""
    import re

    out = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), ""), text)
    return re.sub(r"\{\{ \$value(?: \| \w+)? \}\}", value, out)


@dataclass(frozen=True, kw_only=True)
class LogRule:
    """A Loki ruler alert on log lines, for a signal no exporter carries as a metric."""

    alert: str
    expr: str
    for_: str
    severity: str
    summary: str
    when: When


STREAMS = '{namespace=~".+"}'
"""The stream selector of the log rules: every namespace's pods as Promtail / Grafana Alloy's
Kubernetes discovery labels them. Narrow it to your serving namespace."""
NODE_STREAMS = '{job=~".*journal.*"}'
"""The nodes' journals (kernel messages) as Promtail's journal scrape labels them."""

LOG_RULES: tuple[LogRule, ...] = (
    LogRule(
        alert="NCCLWarnings",
        expr=f'sum by (namespace, pod) (count_over_time({STREAMS} |= "NCCL WARN" [5m])) > 0',
        for_="0m",
        severity="warning",
        summary="NCCL logged warnings (transport, IB or socket errors): collectives are failing on this pod",
        when=When(categories=frozenset({"network", "collective-timeout"})),
    ),
    LogRule(
        alert="NCCLWatchdogTimeout",
        expr=f'sum by (namespace, pod) (count_over_time({STREAMS} |= "Watchdog caught collective operation timeout" [5m])) > 0',
        for_="0m",
        severity="critical",
        summary="PyTorch's NCCL watchdog timed out a collective: a rank hung or its network failed (look for the first)",
        when=When(categories=frozenset({"network", "collective-timeout"})),
    ),
    LogRule(
        alert="GPUXidInKernelLog",
        expr=f'sum by (host) (count_over_time({NODE_STREAMS} |~ "NVRM: Xid" [10m])) > 0',
        for_="0m",
        severity="critical",
        summary="The GPU driver reported an Xid (where DCGM's exporter is not scraped)",
        when=When(categories=frozenset({"gpu-fault"})),
    ),
    LogRule(
        alert="KVCacheCorruptionLogged",
        expr=f'sum by (namespace, pod) (count_over_time({STREAMS} |~ "(?i)cache corruption|corrupted (kv|block)" [5m])) > 0',
        for_="0m",
        severity="critical",
        summary="A KV cache store or engine logged corrupted blocks: outputs may be wrong before throughput falls",
        when=When(categories=frozenset({"kv-cache"}), tell=True),
    ),
)
"""Log-based rules (LogQL) for what only log lines carry: NCCL's warnings and the watchdog
(no NCCL metric exists outside NCCL Inspector), the kernel's Xid lines, a KV store's
corruption messages."""


def loki_rules(analysis: dict) -> str | None:
    """A Loki ruler rules file (`alerts_loki.yaml`) for the incidents' findings, or None when
    no finding calls for one."""
    cats, _labels, tell, _baseline = _findings(analysis)
    chosen = [r for r in LOG_RULES if r.when.holds(cats, frozenset(), tell)]
    if not chosen:
        return None
    rules = [
        {
            "alert": r.alert,
            "expr": r.expr,
            "for": r.for_,
            "labels": {"severity": r.severity, "source": "forensics"},
            "annotations": {"summary": r.summary, "runbook_url": RUNBOOK.format(alert=r.alert)},
        }
        for r in chosen
    ]
    return yaml.safe_dump(
        {"groups": [{"name": "gpu-serving-incident-logs", "rules": rules}]}, sort_keys=False, width=200
    )
