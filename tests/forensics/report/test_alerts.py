"""Which alert rules a diagnosis asks for: the table of findings to watches (`forensics.report.alerts`)."""

from __future__ import annotations

import pytest

from forensics.diagnosis import signatures
from forensics.report import alerts


def _analysis(category: str, label: str, *, role: str = "root_cause", tell: bool = False) -> dict:
    hyp = {"category": category, "label": label, "role": role}
    return {
        "incidents": [
            {
                "root_cause": {"category": category},
                "hypotheses": [hyp],
                "tell": {"kind": "kv-full-empty-queue"} if tell else None,
                "baseline_tokens_per_s": 14720.0,
            }
        ]
    }


def _alerts(analysis: dict) -> list[str]:
    return [r.alert for r in alerts.rules_for(analysis)]


def test_every_diagnosis_gets_the_throughput_and_latency_pair_first():
    names = _alerts(_analysis("other", "not determined"))
    assert names == ["VLLMThroughputCollapse", "VLLMRequestLatencyP99High"]
    assert "14,720 tokens/s" in alerts.rules_for(_analysis("other", "x"))[0].description


def test_a_process_out_of_file_descriptors_asks_to_watch_open_files_by_its_trait():
    names = _alerts(_analysis("engine", signatures.FD_EXHAUSTED))
    assert "ProcessOpenFilesNearLimit" in names
    assert "ProcessOpenFilesNearLimit" not in _alerts(_analysis("engine", "engine died"))


def test_a_kv_transfer_fault_asks_for_nixls_counters():
    label = next(sig.label for sig in signatures.SIGNATURES if signatures.Trait.KV_TRANSFER in sig.traits)
    assert {"VLLMKVTransferFailures", "VLLMKVLeaseExpired"} <= set(_alerts(_analysis("network", label)))


def test_the_kv_tell_alone_asks_for_the_kv_full_without_queueing_rule():
    assert "VLLMKVCacheFullWithoutQueueing" in _alerts(_analysis("other", "x", tell=True))
    assert "VLLMKVCacheFullWithoutQueueing" not in _alerts(_analysis("other", "x"))


@pytest.mark.parametrize(
    "category, alert",
    [
        ("capacity", "VLLMQueueBacklog"),
        ("collective-timeout", "NCCLCommunicationFailure"),
        ("gpu-fault", "GPUXidErrorChanged"),
        ("gpu-memory", "GPUFramebufferNearlyFull"),
        ("node", "KubeNodeNotReady"),
        ("pod-lifecycle", "VLLMPodRestarting"),
    ],
)
def test_each_category_found_asks_for_its_watch(category, alert):
    assert alert in _alerts(_analysis(category, "x"))


def test_an_unrelated_hypothesis_category_asks_for_nothing():
    analysis = _analysis("other", "x")
    analysis["incidents"][0]["hypotheses"].append({"category": "node", "label": "x", "role": "unrelated"})
    assert "KubeNodeNotReady" not in _alerts(analysis)
