"""Envoy access lines: the gateway in front of the vLLM pods (Istio sidecars and ingress,
Envoy Gateway, the Gateway API inference extension), in Envoy's and Istio's default formats.

    [2025-08-01T10:00:05.123Z] "POST /v1/completions HTTP/1.1" 503 UH no_healthy_upstream - "-" 0 19 0 - ...
    [2016-04-15T20:17:00.310Z] "POST /api/v1/locations HTTP/2" 204 - 154 0 226 100 "10.0.35.28" ...

The stamp is peeled as an outer time (`wrappers.CI_TS_PROBE`), leaving the request, the
status and Envoy's response flags (`UH` no healthy upstream, `UF` connection failure, `UT`
timeout, `UC` upstream reset, `NR` no route, `DC` client gone). Why read them: the gateway
answers what the pods cannot, so an outage whose pods are gone shows as 503s only here;
`forensics.diagnosis.series.served` prefers these lines over the servers' own when both are there.
"""

from __future__ import annotations

import polars as pl

from parsers import schema as s
from parsers._common import extract_head, no_time

DETECT = r'^"[A-Z]+ \S+ HTTP/[\d.]+" \d{3} [A-Z,\-]+ '
PATTERN = r'^"(?P<method>[A-Z]+) (?P<path>\S+) HTTP/[\d.]+" (?P<status>\d{3}) (?P<flags>[A-Z,\-]+) (?P<rest>.*)$'
COMPONENT = "gateway-access"


def parse(df: pl.DataFrame) -> pl.DataFrame:
    """Parse access lines: method, path and status as uvicorn's, the whole record as the message."""
    m = pl.col("_m").struct.field
    df = extract_head(df, PATTERN, "_m")
    return df.with_columns(
        pl.when(m("status").is_not_null()).then(pl.lit("envoy")).alias(s.SOURCE),
        pl.lit("INFO").alias(s.LEVEL),
        m("method").alias(s.HTTP_METHOD),
        m("path").alias(s.HTTP_PATH),
        m("status").cast(pl.Int32, strict=False).alias(s.HTTP_STATUS),
        pl.lit(COMPONENT).alias(s.COMPONENT),
        pl.col("body").alias(s.MESSAGE),
        *no_time(),
    ).drop("_m")
