"""Whole-file documents that are not line logs: a file read as one, by its own reader.

Prometheus exports (exposition text, HTTP API JSON), nvidia-smi snapshots, NCCL RAS JSON, the
PyTorch NCCL flight recorder's dumps, and log stores' CSV exports. Each has a `sniff` and a
`parse_document` (or `read`); `forensics.ingestion.documents.READERS` says in which order they
are tried. Kubernetes event and state lists stay with their family in `parsers.k8s`.
"""
