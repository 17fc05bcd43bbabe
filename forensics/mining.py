"""Template mining: group event messages into templates such as `Cache corruption detected in block <NUM>`.

Structure, not tuning, makes it fast (shared docs, template-mining.md §0):

1. Only the first line of a message is mined (a traceback is folded under its header),
   capped at `MAX_CHARS` characters and `MAX_TOKENS` tokens, as Loki does, so one huge
   line cannot stall Drain.
2. Messages are keyed by their digit-collapsed text (`block 88123` -> `block 0`; hex ids
   too), hashed in one compiled pass over the Arrow buffers (`forensics.dedup`). Keys
   repeat massively in logs, so the named masks and Drain only see one representative
   per (source, key), and the template id is gathered back to every row.
3. One Drain3 instance per source (vLLM lines never share a tree with NCCL lines), fed
   in a deterministic order (most frequent key first, ties by the key's hash), so the same logs
   give the same templates on every run and machine.
4. A template id is a hash of (source, template text), not Drain's cluster counter:
   stable across runs, so incidents can be compared and reports can link templates.
5. Where Drain made a variable of a position that only ever holds two or three words
   (`Started container vllm` / `prometheus`), the template is split per word
   (`_split_enums`): such words are states and names the code chose, not data.

Persistence is plain JSON (`save_templates` / `load_templates`). Drain3's own state is
jsonpickle, and loading jsonpickle from a user-supplied file can execute code: never done.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import polars as pl

from forensics import dedup
from forensics import schema as s

MAX_CHARS = 2000
MAX_TOKENS = 100
TEMPLATE_ID: str = "template_id"
TEMPLATE: str = "template"
PARAMS: str = "params"
COUNT: str = "count"
FIRST_SEEN: str = "first_seen"
LAST_SEEN: str = "last_seen"
TEMPLATES_FILE_VERSION = 1
TEMPLATES_COLUMNS: tuple[str, ...] = (
    TEMPLATE_ID,
    TEMPLATE,
    s.SOURCE,
    COUNT,
    FIRST_SEEN,
    LAST_SEEN,
    "hosts",
    "pods",
    s.LEVEL,
    "example",
    "example_file",
    "example_line",
)
"""The templates table (`summarise`, and a sharded run's reduce of its shards' tables), in order."""

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

_PARAM_PATTERN = "|".join(f"(?:{rx})" for _, rx in MASKS)


@dataclass(frozen=True)
class MinerConfig:
    """Drain settings: Drain3's similarity threshold, one level deeper than its tree.

    Measured on Loghub-2k with our masks and enum splitting (bench/loghub_accuracy.py):
    depth 5 gives mean GA 0.933 (4: 0.933, 6: 0.914); sim_th 0.3-0.4 give 0.933-0.934,
    0.45 and 0.5 give 0.907 (words that should split start to merge in the tree first).
    """

    sim_th: float = 0.4
    depth: int = 5
    max_children: int = 100
    max_clusters: int | None = 50_000
    enum_max: int = 3
    """A `<*>` position with at most this many distinct word values splits its template (`_split_enums`)."""
    explode_warning: int = 20_000
    """Warn when one source yields more templates than this (a noisy source or a missing mask)."""


@dataclass
class MiningResult:
    """Every event's template id (aligned with the input rows) and the templates table."""

    template_ids: pl.Series
    templates: pl.DataFrame
    warnings: list[str]


def template_id(source: str | None, template: str) -> str:
    """The stable id of a template: 12 hex chars of BLAKE2b over source and text.

    >>> template_id("kv-store", "Cache corruption detected in block <NUM>")
    'a27d03ab5852'
    """
    h = hashlib.blake2b(f"{source or ''}\x00{template}".encode(), digest_size=6)
    return h.hexdigest()


def mask_expr(expr: pl.Expr) -> pl.Expr:
    """Apply the named masks to a string expression (vectorised); `<IP>,<IP>` lists become one `<IP>`."""
    for name, rx in MASKS:
        expr = expr.str.replace_all(rx, f"<{name}>")
        expr = expr.str.replace_all(f"<{name}>(?:[,;] ?<{name}>)+", f"<{name}>")
    return expr


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


def write_events(events: pl.DataFrame, template_ids: pl.Series | None, path: Path) -> None:
    """Write the events table with its `template_id` and `params` (the masked values) columns.

    The params are computed here, at write time, on the streaming engine: nothing in the
    analysis reads them, and at millions of rows a list column is worth not holding.
    """
    lf = events.lazy()
    if template_ids is not None and TEMPLATE_ID not in events.columns:
        lf = lf.with_columns(template_ids.alias(TEMPLATE_ID))
    lf.with_columns(params_expr(pl.col(s.MESSAGE)).alias(PARAMS)).sink_parquet(path, statistics=False)


def mine(events: pl.DataFrame, config: MinerConfig | None = None) -> MiningResult:
    """Mine templates over `events` (the ingest schema); see the module docstring.

    >>> r = mine(ingest("samples/cache-corruption").events)  # doctest: +SKIP
    >>> r.templates.filter(pl.col("template").str.contains("Cache corruption")).height  # doctest: +SKIP
    1
    """
    ids, names, warnings = cluster(events[s.SOURCE], events[s.MESSAGE], config)
    templates = summarise(events.with_columns(ids.alias(TEMPLATE_ID)), names)
    return MiningResult(ids, templates, warnings)


def cluster(
    sources: pl.Series, messages: pl.Series, config: MinerConfig | None = None, weights: pl.Series | None = None
) -> tuple[pl.Series, pl.DataFrame, list[str]]:
    """Template id of every message, and the (template_id, template, source) table.

    The core of `mine`, on bare columns (the Loghub benchmark calls it directly).
    `weights` makes a row count as that many lines when ordering what Drain sees (most
    frequent first): `merge_shards` feeds templates weighted by their line counts.
    """
    from drain3.template_miner_config import TemplateMinerConfig

    config = config or MinerConfig()
    warnings: list[str] = []
    sources = sources.fill_null("unknown").cast(pl.String)
    messages = messages.fill_null("").cast(pl.String)
    # The per-row work is one compiled pass (`dedup.key_groups`: the key of every row, and
    # its first row as the representative); everything after it is per key, not per row.
    groups = dedup.key_groups(sources, messages, MAX_CHARS)
    first = pl.Series(groups.first_row)
    if weights is None:
        counts = groups.count
    else:  # only `merge_shards` weighs rows; plain mining counts them
        w = weights.cast(pl.Int64).fill_null(0).to_numpy()
        counts = np.bincount(groups.row_key, weights=w, minlength=len(groups.first_row)).round().astype(np.int64)
    keys = (
        pl.DataFrame(
            {
                s.SOURCE: sources.gather(first),
                "_rep": messages.gather(first),
                "_n": counts,
                "_h1": groups.hash_hi,
                "_h2": groups.hash_lo,
                "_k": np.arange(len(groups.first_row), dtype=np.int64),
            }
        )
        .with_columns(first_line(pl.col("_rep")).alias("_rep"))
        .with_columns(mask_expr(pl.col("_rep")).alias("_masked"))
        .sort(s.SOURCE, "_n", "_h1", "_h2", descending=[False, True, False, False])
    )
    drain_cfg = TemplateMinerConfig()
    drain_cfg.drain_sim_th = config.sim_th
    drain_cfg.drain_depth = config.depth
    drain_cfg.drain_max_children = config.max_children
    drain_cfg.drain_max_clusters = config.max_clusters
    drain_cfg.parametrize_numeric_tokens = True
    cluster_of: list[tuple[str, int]] = []
    finals: dict[tuple[str, int], str] = {}
    fed: list[list[str]] = []
    for (source,), part in keys.group_by(s.SOURCE, maintain_order=True):
        drain = _new_drain(drain_cfg)
        for masked in part["_masked"]:
            tokens = masked.split()[:MAX_TOKENS] or ["<EMPTY>"]
            fed.append(tokens)
            # A masked token reaches Drain as MASKED, which never counts as a shared word
            # when Drain measures similarity: otherwise every `[instance: <UUID>] ...` line
            # looks alike. The names are put back from the members below.
            cl, _change = drain.add_log_message(
                " ".join(MASKED if "<" in t and PLACEHOLDER.search(t) else t for t in tokens)
            )
            cluster_of.append((source, cl.cluster_id))
        created = drain.clusters_counter
        if created > config.explode_warning:
            kept = f", {len(drain.clusters)} kept (max_clusters)" if created > len(drain.clusters) else ""
            warnings.append(
                f"source {source!r} produced {created} templates{kept}: a noisy source or an unmasked "
                "variable (ids, hashes); consider a mask for it"
            )
        for c in drain.clusters:
            finals[(source, c.cluster_id)] = c.get_template()
    cluster_of, finals = _split_enums(cluster_of, fed, finals, config.enum_max)
    finals = _restore_names(finals, cluster_of, fed)
    # A cluster evicted by max_clusters has no final template: fall back to its masked text.
    masked_list = keys["_masked"].to_list()
    tmpl = [finals.get(k, m) for k, m in zip(cluster_of, masked_list, strict=True)]
    merged = merge_by_shape([(src, t) for (src, _), t in zip(cluster_of, tmpl, strict=True)])
    tmpl = [merged[(src, t)] for (src, _), t in zip(cluster_of, tmpl, strict=True)]
    keys = keys.with_columns(
        pl.Series(TEMPLATE, tmpl, dtype=pl.String),
        pl.Series(
            TEMPLATE_ID, [template_id(src, t) for (src, _), t in zip(cluster_of, tmpl, strict=True)], dtype=pl.String
        ),
    )
    ids = keys.sort("_k")[TEMPLATE_ID].gather(pl.Series(groups.row_key))
    names = keys.select(TEMPLATE_ID, TEMPLATE, s.SOURCE).unique(TEMPLATE_ID, keep="first").sort(TEMPLATE_ID)
    return ids, names, warnings


def merge_shards(shard_templates: pl.DataFrame, config: MinerConfig | None = None) -> pl.DataFrame:
    """The second Drain pass of a sharded run: shard templates -> global templates.

    Each shard mined its own lines, so one statement can come out as a few shard
    templates (`block <NUM>` in one shard, `block <*>` in another, or split differently
    where a shard saw few variants). A fresh Drain, with the same settings, over the
    distinct shard templates brings them back together, as Loki's pattern querier does;
    measured on Loghub-2k it restores single-instance grouping to within 0.003
    (shared docs, scale-out.md §2b). The input is sorted here (most lines first, then by
    text, the order one Drain over all lines would see), so the result does not depend
    on which shard finished first.

    `shard_templates` has `source`, `template` and `count` (lines); rows with the same
    (source, template) are summed. Returns `source`, `shard_template`, `template_id`,
    `template`: one row per distinct shard template.
    """
    st = (
        shard_templates.group_by(s.SOURCE, TEMPLATE)
        .agg(pl.col(COUNT).sum())
        .sort(COUNT, s.SOURCE, TEMPLATE, descending=[True, False, False])
    )
    ids, names, _warnings = cluster(st[s.SOURCE], st[TEMPLATE], config, weights=st[COUNT])
    return (
        st.select(s.SOURCE, pl.col(TEMPLATE).alias("shard_template"))
        .with_columns(ids.alias(TEMPLATE_ID))
        .join(names.select(TEMPLATE_ID, TEMPLATE), on=TEMPLATE_ID, how="left")
        .sort(s.SOURCE, "shard_template")
    )


PLACEHOLDER = re.compile(r"<(?:\*|[A-Z_]+)>")
MASKED = "<#>"
"""What Drain sees for a masked token: a word that never counts as shared when Drain
measures similarity (`_new_drain`). Giving it plain Drain3's full credit made masked ids
make unrelated lines look alike (Loghub-2k OpenStack GA 0.30, mean 0.765); no credit
measured best (mean 0.825 with the TS mask, depth 4), and partial credit lost on both
sides (0.3: 0.769, 0.5: 0.754): a line's variables neither join nor split it, its words decide."""


WORD_VALUE = re.compile(r"[^\d<>]*[A-Za-z][^\d<>]*\d?")
"""A value that reads as a word of the program, not data: it has a letter, no masked part,
and no digit but an optional last one (`HTTPS`, `SOCKS5`, `'Inactive'`, `WWEN[enable]`),
so ids such as `attempt_1445144423722_0020_m_000000_0` never count as words."""


def _split_enums(
    cluster_of: list[tuple[str, object]], fed: list[list[str]], finals: dict[tuple[str, object], str], enum_max: int
) -> tuple[list[tuple[str, object]], dict[tuple[str, object], str]]:
    """Split a cluster where a `<*>` position takes at most `enum_max` distinct word values.

    Drain merges lines that differ in a few words (`Starting TrustedInstaller
    initialization.` / `... finalization.`, `open through proxy <HOST> HTTPS` / `SOCKS5`,
    `Started container vllm` / `prometheus`): to its similarity they are one line with a
    variable. A variable that takes only two or three word values is almost always a
    constant chosen by the code (a state, a mode, a flag), and an incident reads better
    with each as its own template. Numbers, ids and masked values never split a cluster.
    Measured on Loghub-2k (bench/loghub_accuracy.py): mean GA 0.832 without splitting,
    0.933 with up to 3 or 4 values, 0.916 with 2, 0.910 with 6 (user and host names split).

    Returns the key of every fed line (split ones get `(source, (cluster, values))`) and
    the template of every key.
    """
    members: dict[tuple[str, object], list[int]] = {}
    for i, key in enumerate(cluster_of):
        members.setdefault(key, []).append(i)
    keys, templates = list(cluster_of), dict(finals)
    for key, idx in members.items():
        template = finals.get(key)
        if template is None or len(idx) < 2:
            continue
        toks = template.split(" ")
        if any(len(fed[i]) != len(toks) for i in idx):
            continue
        positions = [
            p
            for p, tok in enumerate(toks)
            if tok == "<*>"
            and len(values := {fed[i][p] for i in idx}) <= enum_max
            and all(WORD_VALUE.fullmatch(v) for v in values)
        ]
        for i in idx if positions else ():
            values = tuple(fed[i][p] for p in positions)
            keys[i] = split = (key[0], (key[1], values))
            text = list(toks)
            for p, v in zip(positions, values, strict=True):
                text[p] = v
            templates[split] = " ".join(text)
    return keys, templates


def _restore_names(
    finals: dict[tuple[str, int], str], cluster_of: list[tuple[str, int]], fed: list[list[str]]
) -> dict[tuple[str, int], str]:
    """Put the mask names back where Drain saw `<*>`: a position keeps its token when every
    member of the cluster has the same one there (`<UUID>]`, `peer=<IP>`), else stays `<*>`."""
    seen: dict[tuple[str, int], list[set[str]]] = {}
    for key, toks in zip(cluster_of, fed, strict=True):
        cols = seen.get(key)
        if cols is None:
            seen[key] = [{t} for t in toks]
        elif len(cols) == len(toks):
            for c, t in zip(cols, toks, strict=True):
                c.add(t)
    out = {}
    for key, t in finals.items():
        toks, cols = t.split(" "), seen.get(key)
        if cols is not None and len(cols) == len(toks):
            toks = [
                (next(iter(c)) if len(c) == 1 else "<*>") if x in ("<*>", MASKED) else x
                for x, c in zip(toks, cols, strict=True)
            ]
        out[key] = " ".join(toks)
    return out


def merge_by_shape(templates: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Merge templates of a source that differ only in which placeholder a position holds.

    Drain splits one statement into several clusters when a variable position is masked
    differently line to line (`peer <IP>` / `peer <HOST>` / `peer <*>`), since it compares
    tokens, not kinds. Templates equal once every placeholder reads `<*>` (literal text
    around it kept: `setSteps=<NUM>` never merges with `setMinute=<NUM>`) are one
    statement: positions where they differ become `<*>`, the rest stays (a position that is
    `<HOST>` in all of them keeps its name). Order-independent, so the result does not
    depend on the order clusters were found.
    """
    groups: dict[tuple[str, tuple[str, ...]], list[list[str]]] = {}
    for src, t in set(templates):
        toks = t.split(" ")
        shape = tuple(PLACEHOLDER.sub("<*>", x) for x in toks)
        groups.setdefault((src, shape), []).append(toks)
    out: dict[tuple[str, str], str] = {}
    for (src, _), members in groups.items():
        merged = " ".join(col[0] if all(c == col[0] for c in col) else "<*>" for col in zip(*members, strict=True))
        for m in members:
            out[(src, " ".join(m))] = merged
    return out


def _new_drain(cfg):
    from drain3.drain import Drain

    class _Drain(Drain):
        @staticmethod
        def has_numbers(s):
            """Drain3 sends tokens with digits down the wildcard branch of its prefix tree;
            a masked token goes there too, so a literal met later in that position (a
            one-segment `/invocations` after `<PATH>` routes) still finds the cluster."""
            return s == MASKED or any(c.isdigit() for c in s)

        def get_seq_distance(self, seq1, seq2, include_params: bool):
            """Drain3's similarity, except that MASKED tokens never count as shared words."""
            if not seq1:
                return 1.0, 0
            sim, params = 0.0, 0
            for t1, t2 in zip(seq1, seq2, strict=True):
                if t1 == self.param_str:
                    params += 1
                elif t1 == t2 and t1 != MASKED:
                    sim += 1.0
            if include_params:
                sim += params
            return sim / len(seq1), params

    return _Drain(
        sim_th=cfg.drain_sim_th,
        depth=cfg.drain_depth,
        max_children=cfg.drain_max_children,
        max_clusters=cfg.drain_max_clusters,
        param_str="<*>",
        parametrize_numeric_tokens=cfg.parametrize_numeric_tokens,
    )


def summarise(events: pl.DataFrame, names: pl.DataFrame) -> pl.DataFrame:
    """The templates table: id, text, source, count, first/last seen, hosts, pods, level, example."""
    rank = {lvl: i for i, lvl in enumerate(s.LEVELS)}
    sev = pl.col(s.LEVEL).replace_strict(rank, default=-1, return_dtype=pl.Int8)
    # The example is the template's first line in (file, line) order: found on the narrow
    # key columns, then its message fetched by row index (sorting messages inside every
    # group copied them all: ~2 s per GB).
    agg = (
        events.lazy()
        .select(TEMPLATE_ID, s.TS, s.HOST, s.POD, s.LEVEL, s.FILE, s.LINE)
        .with_row_index("_i")
        .group_by(TEMPLATE_ID)
        .agg(
            pl.len().alias(COUNT),
            pl.col(s.TS).min().alias(FIRST_SEEN),
            pl.col(s.TS).max().alias(LAST_SEEN),
            pl.col(s.HOST).drop_nulls().unique().sort().alias("hosts"),
            pl.col(s.POD).drop_nulls().unique().sort().alias("pods"),
            sev.max().alias("_sev"),
            pl.col("_i").sort_by(s.FILE, s.LINE).first().alias("_ex"),
        )
        .collect()
    )
    ex = agg["_ex"]
    agg = agg.with_columns(
        pl.col("_sev")
        .replace_strict({i: lvl for lvl, i in rank.items()}, default=None, return_dtype=pl.String)
        .alias(s.LEVEL),
        events[s.MESSAGE].gather(ex).str.slice(0, 500).alias("example"),
        events[s.FILE].gather(ex).alias("example_file"),
        events[s.LINE].gather(ex).alias("example_line"),
    ).drop("_sev", "_ex")
    return (
        agg.join(names, on=TEMPLATE_ID, how="left")
        .select(TEMPLATES_COLUMNS)
        .sort(COUNT, TEMPLATE_ID, descending=[True, False])
    )


# --- persistence --------------------------------------------------------------------------


def save_templates(
    templates: pl.DataFrame, path: Path, window: tuple[datetime | None, datetime | None] | None = None
) -> None:
    """Write the templates (id, text, source, count, rate) as plain JSON, usable as `--baseline`."""
    lo, hi = window or (templates[FIRST_SEEN].min(), templates[LAST_SEEN].max())
    span = (hi - lo).total_seconds() if lo is not None and hi is not None else None
    rows = []
    for r in templates.sort(TEMPLATE_ID).iter_rows(named=True):
        rows.append(
            {
                "id": r[TEMPLATE_ID],
                "template": r[TEMPLATE],
                "source": r[s.SOURCE],
                "count": r[COUNT],
                "rate_per_s": (r[COUNT] / span) if span else None,
            }
        )
    doc = {
        "version": TEMPLATES_FILE_VERSION,
        "window": {"start": lo.isoformat() if lo else None, "end": hi.isoformat() if hi else None, "seconds": span},
        "templates": rows,
    }
    path.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")


def load_templates(path: Path) -> tuple[pl.DataFrame, float | None]:
    """Read a templates JSON written by `save_templates`. Returns (templates, window seconds).

    Plain `json` only: nothing in the file can make code run.
    """
    from forensics.errors import ParseError

    try:
        doc = json.loads(Path(path).read_text())
        rows = doc["templates"]
        span = (doc.get("window") or {}).get("seconds")
        df = pl.DataFrame(
            {
                TEMPLATE_ID: [r["id"] for r in rows],
                TEMPLATE: [r["template"] for r in rows],
                s.SOURCE: [r.get("source") for r in rows],
                COUNT: [int(r["count"]) for r in rows],
            },
            schema={TEMPLATE_ID: pl.String, TEMPLATE: pl.String, s.SOURCE: pl.String, COUNT: pl.Int64},
        )
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ParseError(
            f"not a forensics templates file ({type(e).__name__}: {e})",
            path=str(path),
            hint="write one with `forensics templates LOGDIR --save known.json`",
        ) from e
    return df, span


# --- baseline diff ----------------------------------------------------------------------


def diff(
    current: pl.DataFrame, current_s: float, baseline: pl.DataFrame, baseline_s: float, alpha: float = 1e-3
) -> pl.DataFrame:
    """Mark each template NEW, GONE, CHANGED or SAME between a baseline and the current window.

    `current`/`baseline` have `template_id`, `template`, `source`, `count`; the `_s`
    arguments are the windows' lengths in seconds. Under "nothing changed", a template's
    occurrences fall in the two windows in proportion to their lengths, so the current
    count is Binomial(n = both counts, p = current_s / (current_s + baseline_s)); the
    two-sided binomial test gives `p_value`, and `score` = -log10(p). A template is
    CHANGED when p < `alpha`. This is log-rate analysis (LogCompare, Elastic) with an
    exact test instead of a threshold on the ratio.
    """
    from scipy.stats import binomtest

    cur = current.select(TEMPLATE_ID, TEMPLATE, s.SOURCE, pl.col(COUNT).alias("count_current"))
    base = baseline.select(
        TEMPLATE_ID, pl.col(TEMPLATE).alias("_bt"), pl.col(s.SOURCE).alias("_bs"), pl.col(COUNT).alias("count_baseline")
    )
    j = (
        cur.join(base, on=TEMPLATE_ID, how="full", coalesce=True)
        .with_columns(
            pl.coalesce(TEMPLATE, "_bt").alias(TEMPLATE),
            pl.coalesce(s.SOURCE, "_bs").alias(s.SOURCE),
            pl.col("count_current").fill_null(0),
            pl.col("count_baseline").fill_null(0),
        )
        .drop("_bt", "_bs")
    )
    p_cur = current_s / (current_s + baseline_s) if current_s + baseline_s > 0 else 0.5
    rows = []
    for r in j.iter_rows(named=True):
        c, b = r["count_current"], r["count_baseline"]
        p = binomtest(c, c + b, p_cur).pvalue if c + b > 0 else 1.0
        rate_c = c / current_s if current_s else None
        rate_b = b / baseline_s if baseline_s else None
        if b == 0 and c > 0:
            status = "NEW"
        elif c == 0 and b > 0:
            status = "GONE"
        elif p < alpha:
            status = "CHANGED"
        else:
            status = "SAME"
        ratio = (rate_c / rate_b) if rate_c is not None and rate_b else None
        rows.append(
            {
                **r,
                "rate_current": rate_c,
                "rate_baseline": rate_b,
                "rate_ratio": ratio,
                "p_value": p,
                "score": -math.log10(max(p, 1e-300)),
                "status": status,
            }
        )
    schema = {
        TEMPLATE_ID: pl.String,
        TEMPLATE: pl.String,
        s.SOURCE: pl.String,
        "count_current": pl.Int64,
        "count_baseline": pl.Int64,
        "rate_current": pl.Float64,
        "rate_baseline": pl.Float64,
        "rate_ratio": pl.Float64,
        "p_value": pl.Float64,
        "score": pl.Float64,
        "status": pl.String,
    }
    out = pl.DataFrame(rows, schema=schema)
    return out.sort("score", TEMPLATE_ID, descending=[True, False])


def window_counts(events: pl.DataFrame, ids: pl.Series, start: datetime, end: datetime) -> pl.DataFrame:
    """Template counts of events with `start <= ts < end` (for `diff`)."""
    ev = events.select(s.TS, s.SOURCE).with_columns(ids.alias(TEMPLATE_ID))
    return (
        ev.filter((pl.col(s.TS) >= start) & (pl.col(s.TS) < end))
        .group_by(TEMPLATE_ID)
        .agg(pl.len().alias(COUNT), pl.col(s.SOURCE).first())
    )
