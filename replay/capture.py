"""Capture a request trace from vLLM's own request log lines, when no trace file was kept.

With request logging on, vLLM logs each request's prompt token ids and sampling params
(`Received request ID: prompt: …, params: SamplingParams(…, max_tokens=N, …),
prompt_token_ids: [...]` up to ~0.9; the newest versions move the ids to DEBUG
`Request ID details: prompt: …, prompt_token_ids: [...]`), and optionally the output
(`Generated response ID: output: …, output_token_ids: [...], finish_reason: …`). That is
enough to replay: arrival time, prompt length, output length, and real prefix identity —
the token ids are hashed per KV block (chained like vLLM's block hashes), so two requests
share cached blocks exactly where their prompts share tokens.

This module reads (timestamp, message) pairs and knows no log format: `forensics`
ingests the logs and hands the messages over (`forensics replay LOGDIR`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from .traces import Request, Trace, _finish, _reject

CAPTURE_BLOCK_TOKENS = 16
"""Prefix ids are per 16-token block, vLLM's default block size (a replay may use another)."""

_ID = r"(?P<rid>[^\s:]+?)(?: \(streaming (?:delta|complete)\))?:"
RECEIVED = re.compile(r"Received request " + _ID)
DETAILS = re.compile(r"Request (?P<rid>[^\s:]+) details: ")
GENERATED = re.compile(r"Generated response " + _ID)
MAX_TOKENS = re.compile(r"\bmax_tokens=(\d+)")
IDS_KEY = {"prompt": "prompt_token_ids: ", "output": "output_token_ids: "}


def _token_ids(msg: str, which: str) -> list[int] | None | str:
    """The token id list after `prompt_token_ids: ` / `output_token_ids: `.

    None when absent (or `None`); the string `"truncated"` when the list does not close (a
    `--max-log-len` cut or our own 1 MB line cap), since its length is then unknown.
    """
    key = IDS_KEY[which]
    at = msg.rfind(key)  # the ids come after the prompt text, which may itself contain the key
    if at < 0:
        return None
    rest = msg[at + len(key) :]
    if rest.startswith("None"):
        return None
    if not rest.startswith("["):
        return "truncated"
    end = rest.find("]")
    if end < 0:
        return "truncated"
    body = rest[1:end].strip()
    try:
        return [int(x) for x in body.split(",")] if body else []
    except ValueError:
        return "truncated"


def prefix_ids(token_ids: list[int], block_tokens: int = CAPTURE_BLOCK_TOKENS) -> tuple[int, ...]:
    """Chained content hashes of each block of token ids (the last partial block included)."""
    out, parent = [], b""
    for i in range(0, len(token_ids), block_tokens):
        chunk = ",".join(map(str, token_ids[i : i + block_tokens])).encode()
        parent = hashlib.blake2b(parent + b"|" + chunk, digest_size=7).digest()
        out.append(int.from_bytes(parent, "little"))
    return tuple(out)


def capture(rows: Iterable[tuple[float, str]], source: str = "vllm request logs") -> Trace:
    """A trace from (epoch seconds, message) pairs of vLLM request log lines.

    A request needs its prompt token ids; its output length comes from the logged output
    token ids when present, else from `max_tokens` (an upper bound: the request may have
    stopped earlier). Requests missing either are set aside with a named reason.
    """
    seen: dict[str, dict] = {}
    for t, msg in rows:
        if "equest " not in msg and "response " not in msg:
            continue
        m = RECEIVED.search(msg) or DETAILS.search(msg)
        if m:
            r = seen.setdefault(m.group("rid"), {"t": t})
            r["t"] = min(r["t"], t)
            ids = _token_ids(msg, "prompt")
            if ids is not None:
                r["prompt"] = ids
            mt = MAX_TOKENS.search(msg, msg.rfind("SamplingParams(") + 1) if "SamplingParams(" in msg else None
            if mt:
                r["max_tokens"] = int(mt.group(1))
            continue
        m = GENERATED.search(msg)
        if m and m.group("rid") in seen:
            ids = _token_ids(msg, "output")
            if isinstance(ids, list):
                r = seen[m.group("rid")]
                r["output"] = r.get("output", 0) + len(ids)  # streaming deltas add up
    reqs: list[Request] = []
    rej: dict[str, int] = {}
    for _, r in sorted(seen.items(), key=lambda kv: (kv[1]["t"], kv[0])):
        prompt = r.get("prompt")
        if prompt is None:
            _reject(rej, "no prompt token ids logged (vLLM needs request logging; newest versions log them at DEBUG)")
            continue
        if prompt == "truncated":
            _reject(rej, "prompt token ids truncated (--max-log-len)")
            continue
        if not prompt:
            _reject(rej, "zero prompt tokens")
            continue
        n_out = r.get("output") or r.get("max_tokens")
        if not n_out:
            _reject(rej, "no output length (neither output token ids nor max_tokens)")
            continue
        reqs.append(Request(len(reqs), r["t"], len(prompt), n_out, prefix_ids(prompt), CAPTURE_BLOCK_TOKENS))
    return _finish(reqs, source, rej)
