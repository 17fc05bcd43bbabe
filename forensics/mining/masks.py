"""What a message's variables look like (numbers, hex ids, IPs, paths...), masked before Drain
sees the message and read back as a template's parameters.

Only the first line of a message is mined, capped at `MAX_CHARS` characters and `MAX_TOKENS`
tokens, as Loki does, so one huge line cannot stall Drain."""

from __future__ import annotations

import polars as pl

MAX_CHARS = 2000


MAX_TOKENS = 100


MASKS: tuple[tuple[str, str], ...] = (
    (
        "TS",
        r"\b(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun),? +)?(?:\d{1,2} +)?(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,4}"
        r"(?: +\d{1,2})?(?: +\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)(?: +\d{4})?(?: [+-]\d{4}| [A-Z]{3})?\b"
        r"|\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?",
    ),
    ("POD", r"\b[a-z][a-z0-9]*(?:-[a-z0-9]+)*-[a-f0-9]{8,10}-[a-z0-9]{5}\b"),
    ("REQ_ID", r"\b(?:chatcmpl|cmpl|chat|req|request|embd|tokn)-[0-9A-Za-z][0-9A-Za-z\-]{7,}"),
    ("UUID", r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"),
    (
        "IP",
        r"(?:\b\d{1,3}(?:\.\d{1,3}){3}|\bfe80::[0-9a-fA-F:]+(?:%\w+)?|\b(?:[0-9a-fA-F]{1,4}:){3,7}[0-9a-fA-F]{1,4})(?:<\d+>|:\d{1,5}\b)?",
    ),
    ("PATH", r"(?:\b[A-Za-z]:)?(?:/[\w.\-@+~]+){2,}/?"),
    ("SRC", r"\b[\w./\-]+\.(?:cc|cpp|cu|h|hpp|c|py|go|rs):\d+\b"),
    (
        "HOST",
        r"\b(?:[A-Za-z0-9][A-Za-z0-9\-]*\.){2,}(?:com|net|org|edu|io|ai|local|internal|cluster|svc|hk|cn|de|uk|jp|us|[a-z]{2})(?::\d{1,5})?\b",
    ),
    ("HEX", r"\b0x[0-9a-fA-F]+\b|\b[0-9a-fA-F]{8,}\b"),
    ("DUR", r"\b\d+(?:\.\d+)?(?:h\d+m|m\d+(?:\.\d+)?s|ns|us|µs|ms|s|m|h)\b"),
    ("NUM", r"\b\d{1,3}(?:,\d{3})+\b|\b\d+(?:\.\d+)*(?:[eE][+-]?\d+)?(?:[A-Za-z]{1,3})?\b"),
)
"""Named masks, applied in order. Each turns a variable part into `<NAME>`; the template
then reads `block <NUM>` or `peer <IP>`. HEX needs a 0x prefix or 8+ hex digits, so short
words (`added`, `70B`) stay; pod names are masked first, before their hash can look like HEX
and before a model name's `-chat-` can look like a request id; NUM
takes thousands separators (`1,843,200`), versions (`0.10.2`) and unit suffixes (`112.5x`)
whole, and no sign, so `gpu-node-3` reads `gpu-node-<NUM>`."""


BOOL = r"([=(\[,:] ?)(?:true|false|True|False)\b"
"""A boolean given as a value (`ready=true`, `setLightsOn(false)`, `enabled: True`) is a
variable, `<BOOL>`: two values would otherwise split one statement into an enum of two
templates. A bare `true` in prose stays a word. (Not among the parameters `params_expr`
extracts: it is matched with the character before it.)"""

_PARAM_PATTERN = "|".join(f"(?:{rx})" for _, rx in MASKS)


def mask_expr(expr: pl.Expr) -> pl.Expr:
    """Apply the named masks to a string expression (vectorised); `<IP>,<IP>` lists become one `<IP>`."""
    for name, rx in MASKS:
        expr = expr.str.replace_all(rx, f"<{name}>")
        expr = expr.str.replace_all(f"<{name}>(?:[,;] ?<{name}>)+", f"<{name}>")
    return expr.str.replace_all(BOOL, "${1}<BOOL>")


def first_line(expr: pl.Expr) -> pl.Expr:
    """The first line of a message, capped at `MAX_CHARS` characters.

    Split, not `str.find` + `str.slice`: find counts bytes and slice characters, so a first
    line with any non-ASCII text would run on into the next one.
    """
    head = expr.str.splitn("\n", 2).struct.field("field_0")
    return pl.when(expr.str.contains("\n", literal=True)).then(head).otherwise(expr).str.slice(0, MAX_CHARS)


def params_expr(expr: pl.Expr) -> pl.Expr:
    """The masked values of each message, in order, as a list column (`[88123]`, `[10.0.4.13:44413]`)."""
    return first_line(expr).str.extract_all(_PARAM_PATTERN)
