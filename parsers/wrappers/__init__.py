"""Outer layers peeled off every physical line before the producer format is matched.

A line is an onion (see shared docs, log-formats §0)::

    2024-08-30T15:30:57.763092820+08:00 (APIServer pid=66) INFO 08-30 ... [loggers.py:118] ...
    ^ kubectl --timestamps / CRI        ^ vLLM process prefix ^ producer (vllm)

`peel()` takes the working frame (`_row`, `_fid`, `_seg`, `line`, `body`) and strips, in
order: `\\r` artefacts, docker json-file, CRI and `kubectl logs --timestamps` prefixes
(their RFC3339 time becomes `_outer_ts`, the only fully qualified time most logs have),
journald/syslog prefixes, docker-compose and CI `|` prefixes, ANSI colour codes and
their ESC-less residue, vLLM/Ray process prefixes and torchrun `[rankN]:` prefixes.
CRI partial lines (`P`) are reassembled with the `F` line that completes them.

`prefixes.peel` runs the layers in that order; `heads` holds the probes that tell each layer,
`host` the host-log wrappers, `records` the JSON records, `pastes` what pasting adds.
"""

from parsers.wrappers.heads import NESTED_PROCESSES, PROCESS_NAME, RANK, parse_rfc3339
from parsers.wrappers.host import DMESG_PROBE, MONTHS, SYSLOG, SYSLOG_AFTER_ISO, syslog_time_parts
from parsers.wrappers.pastes import CI_TS_PROBE
from parsers.wrappers.prefixes import WRAPPER_COLUMNS, peel
from parsers.wrappers.records import CLOUDWATCH_STREAM, LOGGER_SOURCES, RECORD_TIME_PARTS, log_entries_document

__all__ = [
    "CI_TS_PROBE",
    "CLOUDWATCH_STREAM",
    "DMESG_PROBE",
    "LOGGER_SOURCES",
    "MONTHS",
    "NESTED_PROCESSES",
    "PROCESS_NAME",
    "RANK",
    "RECORD_TIME_PARTS",
    "SYSLOG",
    "SYSLOG_AFTER_ISO",
    "WRAPPER_COLUMNS",
    "log_entries_document",
    "parse_rfc3339",
    "peel",
    "syslog_time_parts",
]
