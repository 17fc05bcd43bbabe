"""What every wrapper layer starts from: the capture-free probes that tell each layer (checked over
every row before any capture runs), the RFC3339 reader, and the JSON helpers the record layers share."""

from __future__ import annotations

import polars as pl

from parsers.jsonutil import load_json

RFC3339_PROBE = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2}) "


COMPOSE_PROBE = r"^[A-Za-z0-9][\w.\-]*\s+\| "


CI_PIPE_PROBE = r"^\s+\| "


MPI_PROBE = r"^\[\d+,\d+\]<(?:stdout|stderr)>: ?"


PROCESS_NAME = r"[A-Za-z][\w.:\-]*"
"""The name in a process prefix: vLLM's (`APIServer`, `EngineCore_DP0`, `Worker_TP1`), Ray's
actors' (`RayWorkerWrapper`), and Ray Serve's replicas' (`ServeReplica:default:VLLMDeployment`,
the application and deployment after colons; names may hold `-` and `.`)."""


PRODUCER_START = rf"(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d{{2}}-\d{{2}} |\({PROCESS_NAME}(?: rank=\d+)? pid=|\[\d{{4}}-\d{{2}}-\d{{2}} |[IWEF]\d{{4}} |\[?rank\d+\]:)"


KUBECTL_PREFIX_PROBE = r"^\[pod/[^/\]\s]+/[^\]\s]+\] "
"""`kubectl logs -l app=x --prefix`: `[pod/<pod>/<container>] ` before everything else (even
`--timestamps`), so many pods' lines interleave in one file."""


_ANSI_OPT = r"(?:\x1b\[[0-9;]*m)*"


STERN_NAMES = (
    rf"^{_ANSI_OPT}(?P<pod>[a-z0-9][a-z0-9.\-]*){_ANSI_OPT} {_ANSI_OPT}(?P<cont>[a-z0-9][a-z0-9\-]*){_ANSI_OPT} "
)


STERN = (
    STERN_NAMES + r"(?:\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d{2}-\d{2} "
    rf"|\({PROCESS_NAME}(?: rank=\d+)? pid=|\[?rank\d+\]:|(?:INFO|WARNING|ERROR):  )"
)
"""`stern <query>` (optionally `--timestamps`): `<pod> <container> <line>`, the names coloured on a
TTY; only taken when a known producer or a timestamp follows, so a plain line is never mistaken."""


COLLECTOR_PROBE = r'^(?:\[pod/|\{")|' + STERN


LOKI_LABELS_PROBE = r'^\{[A-Za-z_]\w*="[^"]*"(?:, ?[A-Za-z_]\w*="[^"]*")*\} '
"""`logcli query` output after its time: `{container="vllm", pod="llama-0"} <line>`."""


ANSI = r"\x1b\[[0-9;?]*[A-Za-z]"


ANSI_RESIDUE = r"(^|[^\w\]])\[[0-9]{1,2}(?:;[0-9]{1,2})*m"


PROC_PROBE = rf"^\s*\({PROCESS_NAME}(?: rank=\d+)? pid=\d+(?:, ip=[\d.]+)?\)"


NESTED_PROCESSES = 4
"""The most process prefixes read off one line: a worker forked from vLLM's engine core
inherits its prefix and adds its own (`(EngineCore_DP0 pid=1026745) (Worker_TP0 pid=1026751)
ERROR ...`; on Ray, `(EngineCore pid=676) (RayWorkerProc pid=918) (Worker_TP0 pid=918)`).
More are left in the message (no writer nests deeper; a line of nothing but prefixes is junk)."""


RAY_DAEMON = (
    r"^\s*\((?:(?P<name>raylet|gcs_server|autoscaler|monitor|log_monitor|dashboard|dashboard_agent|"
    r"runtime_env_agent)|pid=(?P<pid>\d+))(?:, ip=[\d.]+)?\) ?"
)
"""Ray's driver output names where a line came from: a daemon, `(raylet)` (its OOM killer's
`Workers (tasks / actors) killed due to memory pressure`), or a worker without an actor name,
`(pid=4711)`, the ip after a comma on another node. `PROC_PROBE` takes `(Name pid=N)`."""


RAY_DAEMON_PROBE = RAY_DAEMON.replace("(?P<name>", "(?:").replace("(?P<pid>", "(?:")


RAY_REPEAT = r"\s*\[repeated \d+x across cluster\]\s*$"


VLLM_LEVEL_HEAD = (
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d{2}-\d{2} \d{2}:\d{2}(?::\d{2})?(?:\.\d{3})? \[?[\w./\-]+\.py:\d+\] "
)


LOGGING_PREFIX = r"^(?P<prefix>\S.{0,38}?) " + VLLM_LEVEL_HEAD


LOGGING_PREFIX_PROBE = LOGGING_PREFIX.replace("(?P<prefix>", "(?:")
"""`VLLM_LOGGING_PREFIX` (log-formats 1.1): any text the operator set, before vLLM's level
(`(VLLM) INFO 03-14 ...`, `[prefill-0] INFO ...`); a space ends it (a glued record has none)."""


RANK = r"^\s?\[?rank(?P<rank>\d+)\]: ?"


RANK_PROBE = RANK.replace("(?P<rank>", "(?:")


def any_of(*probes: str) -> str:
    """One anchored regex matching where any of the `^`-anchored probes matches."""
    return "^(?:" + "|".join(f"(?:{p.removeprefix('^')})" for p in probes) + ")"


STR, TS = pl.String, pl.Datetime("us", "UTC")


def parse_rfc3339(expr: pl.Expr) -> pl.Expr:
    """RFC3339 / RFC3339Nano with `Z`, `+hh:mm` or `+hhmm` to UTC microseconds, positionally.

    `2024-08-30T15:30:57.763092820+08:00` -> 2024-08-30 07:30:57.763092 UTC: the first
    19 characters have a fixed layout; the fraction runs from `.` to the zone.
    """
    i32 = pl.Int32
    n = expr.str.len_chars()
    zulu = expr.str.ends_with("Z")
    off_len = pl.when(zulu).then(1).when(expr.str.slice(-3, 1) == ":").then(6).otherwise(5)
    frac_len = (n - 20 - off_len).clip(0, 6)
    has_frac = expr.str.slice(19, 1) == "."
    us = pl.when(has_frac).then(
        expr.str.slice(20, frac_len).cast(pl.Int64, strict=False) * (10 ** (6 - frac_len)).cast(pl.Int64)
    )
    off = expr.str.slice(n - off_len, off_len)
    off_min = (
        pl.when(zulu)
        .then(0)
        .otherwise(
            pl.when(off.str.starts_with("-")).then(-1).otherwise(1)
            * (off.str.slice(1, 2).cast(i32, strict=False) * 60 + off.str.slice(-2).cast(i32, strict=False))
        )
    )
    base = expr.str.slice(0, 19).str.strptime(pl.Datetime("us"), "%Y-%m-%dT%H:%M:%S", strict=False)
    return (
        base + pl.duration(microseconds=us.fill_null(0)) - pl.duration(minutes=off_min.cast(pl.Int64))
    ).dt.replace_time_zone("UTC")


EPOCH_MAX_S = 4e9
"""Epoch seconds past this (year 2096) are not a log time: a field that only looks like one."""


def json_text(v: object) -> str | None:
    """A JSON field as text: strings as they are, numbers written out, anything else None."""
    if isinstance(v, str):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v)
    return None


def json_objects(bodies: pl.Series) -> list[dict | None]:
    """Each line decoded as a JSON object, or None (not JSON, or JSON but not an object)."""
    out: list[dict | None] = []
    for body in bodies:
        try:
            obj = load_json(body)
        except ValueError:
            obj = None
        out.append(obj if isinstance(obj, dict) else None)
    return out
