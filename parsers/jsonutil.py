"""JSON that a damaged or hostile log cannot make fail a run: lone surrogates, deep nesting.

Every parser and every reader above `parsers/` decodes JSON through `load_json`.
"""

from __future__ import annotations

import json
import re

import orjson

SURROGATE_ESCAPE = r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}"
_ESCAPES = (re.compile(SURROGATE_ESCAPE), re.compile(SURROGATE_ESCAPE.encode()))
_SURROGATE = re.compile("[\ud800-\udfff]")


def load_json(text: str | bytes) -> object:
    """`json.loads`, with each lone surrogate (an escape like `\\ud83d` cut from its pair: a line
    cut short, a shipper's bug) replaced by U+FFFD, as invalid UTF-8 is everywhere else: no
    UTF-8 holds a lone surrogate, so a column of strings with one in it cannot be built, and
    a whole run failed on one such line. Nesting too deep for the standard library (a line of
    junk brackets) is a ValueError like any text that is no JSON, not a crash.

    orjson reads a line ~10x faster and takes what it reads as `json` does, but for integers
    beyond 64 bits (a float for it); what it refuses (a lone surrogate, `NaN`, `1e400`, nesting
    over 1,024) the standard library reads."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    try:
        doc = json.loads(text)
        escape = _ESCAPES[isinstance(text, bytes)]
        return without_surrogates(doc) if escape.search(text) else doc
    except RecursionError:  # (`without_surrogates` recurses too: a frame or two a level)
        raise ValueError("JSON nested too deep to read") from None


def without_surrogates(doc: object) -> object:
    """`doc` (decoded JSON or YAML) with every lone surrogate in its strings and keys made U+FFFD."""
    if isinstance(doc, str):
        return _SURROGATE.sub("\ufffd", doc)
    if isinstance(doc, dict):
        return {without_surrogates(k): without_surrogates(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [without_surrogates(v) for v in doc]
    return doc
