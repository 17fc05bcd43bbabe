"""The compiled twins: passes that exist only for speed, each held by tests to the module it mirrors.

`fastlane` parses the common line shapes in one numba pass (twin of `lines` over `vllm`,
`uvicorn`, `nccl`, `pylog`, `torch`, `wrappers`, `k8s`); `folding` runs the fold rules as one
scan (twin of `lines`' folding and `continuation`); `metric_scan` finds the metrics lines'
numbers (twin of `vllm.metrics`' regexes). Private to `parsers/`: ingest reaches them only
through `lines.parse_lines`.
"""
