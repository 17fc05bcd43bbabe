"""Template mining: group event messages into templates such as `Cache corruption detected in block <NUM>`.

Structure, not tuning, makes it fast:

1. Messages are keyed by their digit-collapsed text (`block 88123` -> `block 0`; hex ids
   too), hashed in one compiled pass over the Arrow buffers (`forensics.mining.dedup`). Keys
   repeat massively in logs, so the named masks and Drain only see one representative
   per (source, key), and the template id is gathered back to every row.
2. One Drain3 instance per source (vLLM lines never share a tree with NCCL lines), fed
   in a deterministic order (most frequent key first, ties by the key's hash), so the same logs
   give the same templates on every run and machine.
3. A template id is a hash of (source, template text), not Drain's cluster counter:
   stable across runs, so incidents can be compared and reports can link templates.
4. Where Drain made a variable of a position that only ever holds two to four words
   (`Started container vllm` / `prometheus`), the template is split per word
   (`_split_enums`): such words are states and names the code chose, not data.
5. The text is then written as Loghub-2.0's labels of the full-size sets write values
   (`as_values`: `tty=<*>`, `node <*>`), without changing which lines share a template."""

from __future__ import annotations

import bisect
import hashlib
import re
from collections import Counter
from dataclasses import dataclass

import numpy as np
import polars as pl

from forensics import schema as s
from forensics.mining import dedup
from forensics.mining.masks import MAX_CHARS, MAX_TOKENS, elide_free_text, first_line, has_free_text, mask_expr
from forensics.mining.table import COUNT, FIRST_SEEN, LAST_SEEN, TEMPLATE, TEMPLATE_ID, TEMPLATES_COLUMNS


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
    enum_max: int = 4
    """A `<*>` position with at most this many distinct word values splits its template (`_split_enums`).
    4, not 3: a lifecycle of four states (`VM Started/Stopped/Paused/Resumed`) is four statements, as
    the labels of both Loghub sets read it (2k OpenStack GA 0.946 -> 1.000, FGA mean 0.927 -> 0.930);
    a 2k set's four user names split too (Linux GA 0.879 -> 0.819), which a full-size set, with its
    many users, does not; mean 2k GA unchanged at 0.944."""
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


def mine(events: pl.DataFrame, config: MinerConfig | None = None, *, shard: bool = False) -> MiningResult:
    """Mine templates over `events` (the ingest schema); see the module docstring. `shard`: these
    are one shard's events, whose templates `merge_shards` will mine again (`cluster`).

    >>> r = mine(ingest("samples/cache-corruption").events)  # doctest: +SKIP
    >>> r.templates.filter(pl.col("template").str.contains("Cache corruption")).height  # doctest: +SKIP
    1
    """
    ids, names, warnings = cluster(events[s.SOURCE], events[s.MESSAGE], config, shard=shard)
    templates = summarise(events.with_columns(ids.alias(TEMPLATE_ID)), names)
    return MiningResult(ids, templates, warnings)


def cluster(
    sources: pl.Series,
    messages: pl.Series,
    config: MinerConfig | None = None,
    weights: pl.Series | None = None,
    *,
    shard: bool = False,
) -> tuple[pl.Series, pl.DataFrame, list[str]]:
    """Template id of every message, and the (template_id, template, source) table.

    The core of `mine`, on bare columns (the Loghub benchmark calls it directly).
    `weights` makes a row count as that many lines when ordering what Drain sees (most
    frequent first): `merge_shards` feeds templates weighted by their line counts.
    `shard` leaves the templates as Drain and the merges wrote them, without `as_values`: it
    reads a template beside the others (which would read the same), and a shard sees only
    some of them; the second pass (`merge_shards`) applies it once, over all of them.
    """
    from drain3.template_miner_config import TemplateMinerConfig

    config = config or MinerConfig()
    warnings: list[str] = []
    sources = sources.fill_null("unknown").cast(pl.String)
    messages = messages.fill_null("").cast(pl.String)
    # The per-row work is one compiled pass (`dedup.key_groups`: the key of every row, and
    # its first row as the representative); everything after it is per key, not per row.
    groups = dedup.key_groups(sources, messages, MAX_CHARS)
    if has_free_text(messages.gather(groups.first_row)):  # (keys, not rows: most logs have none)
        messages = elide_free_text(messages)
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
        .pipe(_with_unpinned, _unpinned(messages, groups))
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
        tokens = [masked.split()[:MAX_TOKENS] or ["<EMPTY>"] for masked in part["_masked"]]
        # A masked token reaches Drain as MASKED, which never counts as a shared word
        # when Drain measures similarity: otherwise every `[instance: <UUID>] ...` line
        # looks alike; a keyed one as its key and MASKED (`_as_word`). The names are put
        # back from the members below.
        words = [[_as_word(t) for t in toks] for toks in tokens]
        alone = _alone(words, config.sim_th)
        dropped = 0
        for toks, line, by_itself in zip(tokens, words, alone, strict=True):
            fed.append(toks)
            cl, change = drain.add_log_message(" ".join(line))
            cluster_of.append((source, cl.cluster_id))
            if by_itself and change == "cluster_created":
                finals[(source, cl.cluster_id)] = cl.get_template()
                del drain.id_to_cluster[cl.cluster_id]  # (no line will join it: its leaf drops it)
                dropped += 1
        created = drain.clusters_counter
        if created > config.explode_warning:
            kept = len(drain.clusters) + dropped
            evicted = f", {kept} kept (max_clusters)" if created > kept else ""
            warnings.append(
                f"source {source!r} produced {created} templates{evicted}: a noisy source or an unmasked "
                "variable (ids, hashes); consider a mask for it"
            )
        for c in drain.clusters:
            finals[(source, c.cluster_id)] = c.get_template()
    cluster_of, finals = _split_enums(cluster_of, fed, finals, config.enum_max)
    finals = _restore_names(finals, cluster_of, fed)
    # A cluster evicted by max_clusters has no final template: fall back to its masked text.
    masked_list = keys["_masked"].to_list()
    tmpl = [finals.get(k, m) for k, m in zip(cluster_of, masked_list, strict=True)]
    # Drain's clusters of one statement, joined: by which mask took a value, by how many tokens the
    # values took, and by a varying first word (each merge reads the texts the one before wrote).
    for merge in (merge_by_shape, merge_by_words, lambda ts: merge_leading_word(ts, config.enum_max)):
        pairs = [(src, t) for (src, _), t in zip(cluster_of, tmpl, strict=True)]
        merged = merge(pairs)
        tmpl = [merged[p] for p in pairs]
    tmpl = [JOINED.sub("<*>", t) for t in tmpl]
    if not shard:
        pairs = [(src, t) for (src, _), t in zip(cluster_of, tmpl, strict=True)]
        written = as_values(pairs)
        tmpl = [written[p] for p in pairs]
    keys = keys.with_columns(
        pl.Series(TEMPLATE, tmpl, dtype=pl.String),
        pl.Series(
            TEMPLATE_ID, [template_id(src, t) for (src, _), t in zip(cluster_of, tmpl, strict=True)], dtype=pl.String
        ),
    )
    ids = keys.sort("_k")[TEMPLATE_ID].gather(pl.Series(groups.row_key))
    names = keys.select(TEMPLATE_ID, TEMPLATE, s.SOURCE).unique(TEMPLATE_ID, keep="first").sort(TEMPLATE_ID)
    return ids, names, warnings


def _unpinned(messages: pl.Series, groups: dedup.KeyGroups) -> dict[int, str] | None:
    """Each key's representative, with the digits its members do not share made a variable.

    The dedup key collapses digits, so `[rank0]: watchdog fired` and `[rank5]: watchdog fired` are
    one key and Drain sees only the first: its template would print `rank0`, and a report would
    name the wrong rank (NICs and disks have a mask of their own, `masks.DEVICE`). Where the key's
    digit variants (`KeyGroups.others`) differ from the representative at a token the masks leave
    literal, that token becomes `<*>` inside the punctuation they share (`[<*>]:`); the members'
    own values stay in their messages. Returns key -> its new representative, for the keys that
    change (None: none does)."""
    varied = np.flatnonzero(groups.others[:, 0] >= 0) if len(groups.others) else np.array([], np.int64)
    if not len(varied):
        return None
    # Most variants differ only where a mask names the value anyway (`block <NUM>`): compare
    # the masked texts in one vectorised pass, and look at tokens only where they differ.
    rows = groups.others[varied]
    keys = np.repeat(varied, (rows >= 0).sum(axis=1))
    frame = pl.DataFrame(
        {
            "k": keys,
            "rep": messages.gather(pl.Series(groups.first_row[keys])).fill_null(""),
            "text": messages.gather(pl.Series(rows[rows >= 0])).fill_null(""),
        }
    ).with_columns(first_line(pl.col("rep")).alias("rep"), first_line(pl.col("text")).alias("text"))
    differ = frame.filter(mask_expr(pl.col("rep")) != mask_expr(pl.col("text")))
    if differ.is_empty():
        return None
    variants_of: dict[int, list[str]] = {}
    rep_of: dict[int, str] = {}
    for k, rep, text in frame.filter(pl.col("k").is_in(differ["k"].unique().implode())).iter_rows():
        variants_of.setdefault(k, []).append(text.split())
        rep_of[k] = rep
    cands = []
    for k, variants in variants_of.items():
        tokens = rep_of[k].split()
        if any(len(v) != len(tokens) for v in variants):
            continue  # (a variable-length statement: Drain aligns those)
        for pos, tok in enumerate(tokens):
            if any(v[pos] != tok for v in variants):
                cands.append((k, pos, tok, [v[pos] for v in variants]))
    if not cands:
        return None
    literal = pl.Series([tok for _, _, tok, _ in cands]).to_frame("t").select(mask_expr(pl.col("t")) == pl.col("t"))
    split: dict[int, list[str]] = {}
    for (k, pos, tok, others), keep in zip(cands, literal.to_series(), strict=True):
        if keep:
            tokens = split.setdefault(k, rep_of[k].split())
            tokens[pos] = _vary(tok, others)
    return {k: " ".join(tokens) for k, tokens in split.items()} or None


def _with_unpinned(keys: pl.DataFrame, changed: dict[int, str] | None) -> pl.DataFrame:
    """`keys` (in key order) with the representatives `_unpinned` changed."""
    if not changed:
        return keys
    new = pl.DataFrame(
        {"_k": list(changed), "_new": list(changed.values())}, schema={"_k": pl.Int64, "_new": pl.String}
    )
    return (
        keys.join(new, on="_k", how="left", maintain_order="left")
        .with_columns(pl.coalesce("_new", "_rep").alias("_rep"))
        .drop("_new")
    )


def _vary(token: str, others: list[str]) -> str:
    """`token` as a variable where it differs from `others` (`eth0`, `eth1` -> `<*>`;
    `mlx5_0:`, `mlx5_1:` -> `<*>:`), inside the punctuation they share (`_edges`)."""
    return _edges([token, *others])


PREFIX_ENDS = frozenset("=:([{\"'/@")
"""Where a shared prefix may end and still be structure, not part of the value (`rhost=`, `(`)."""
SUFFIX_STARTS = frozenset(")]}:,;\"'")
"""Where a shared suffix may start (`)`, `,`, `:`)."""
_CLOSES = {")": "(", "]": "[", "}": "{"}
PACKAGE = re.compile(r"(?:.*[=:(\[{\"'/@])?[a-z][a-z0-9]*(?:\.[a-z][a-z0-9]*)+\.")
"""A shared prefix that names a package or a reverse-DNS family (`io.vllm.plugins.`, `org.example.`,
after a key: `name=org.example.`): it may end at its dot and still be structure (`io.vllm.plugins.<*>`)."""


def _edges(words: list[str]) -> str:
    """`<*>` for a position whose words differ, keeping the punctuation all of them open and
    close it with: `rhost=1.2.3.4` / `rhost=5.6.7.8` -> `rhost=<*>`, `(a)` / `(b)` -> `(<*>)`,
    `eth0` / `eth1` -> `<*>` (a shared `eth` is part of the value: the parsing benchmarks'
    labels, and a reader, take the whole name as the variable), and the package they share
    (`io.vllm.plugins.lora` / `io.vllm.plugins.fp8` -> `io.vllm.plugins.<*>`, `PACKAGE`: the labels
    keep it too; Loghub-2k Mac PA 0.609 -> 0.692, no other set changed)."""
    first = words[0]
    head = 0
    while all(len(w) > head and w[head] == first[head] for w in words):
        head += 1
    while head and first[head - 1] not in PREFIX_ENDS and not PACKAGE.fullmatch(first[:head]):
        head -= 1
    tail = 0
    while all(len(w) - tail > head and w[len(w) - 1 - tail] == first[len(first) - 1 - tail] for w in words):
        tail += 1
    while tail and first[len(first) - tail] not in SUFFIX_STARTS:
        tail -= 1
    prefix, suffix = first[:head], first[len(first) - tail :] if tail else ""
    # (a closing bracket stays only with its opener: `name_ns(uid)` -> `<*>`, not `<*>)`)
    while suffix and suffix[0] in _CLOSES and _CLOSES[suffix[0]] not in prefix:
        suffix = suffix[1:]
    return prefix + "<*>" + suffix


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


JOINED = re.compile(rf"{PLACEHOLDER.pattern}(?:(?:--|[-:./#@]){PLACEHOLDER.pattern})+")
"""Values written together, joined by punctuation and no space (`0000:3b:00.1`, `0x3c00-0x3c0f`,
`7/16`, `10.0.0.1#53`, `node-[16-31]`'s range), are one value: `<*>`, not `<NUM>:<NUM>:<NUM>.<NUM>`;
one mark between them (or `--`), so that `count <NUM>...<NUM>` keeps its dots.
Their parts are not words of the statement, and a part count that varies (a PCI address, a range or
a lone number) would otherwise read as different statements. Loghub-2.0's labels of the full-size
sets read them so (its `post_process` joins `<*>:<*>`, `<*>.<*>`, `<*>/<*>`, `<*>#<*>`, `<*>@<*>`).
Applied to the text last, once Drain and the merges have grouped the lines."""


KEYED_WORD = re.compile(r"([(\[{]*)([A-Za-z_][\w.\-]*=)(?![\s=])(\S+)")
"""A token that gives a key a value (`tty=ssh`, `(class=org.example.Filter)`, `USER=root ;`)."""
_ENDS = ",;:."
QUOTED = re.compile(rf"(?<= )(?:'{PLACEHOLDER.pattern}'|\"{PLACEHOLDER.pattern}\"|#{PLACEHOLDER.pattern})(?= )")
"""A value in quotes, or after a `#`, as a word of its own amid the line (` '<*>' `, ` #<NUM> `)."""
QUOTED_WORD = re.compile(r"(?<!\S)'[^'\s<>]*'(?=[\s,.:;)\]]|$)")
"""A word in single quotes (`Checking 'hlt' instruction`, `mount to NFS server 'nfs1' failed`)."""
RUN = re.compile(rf"(?<!\S){PLACEHOLDER.pattern}(?: {PLACEHOLDER.pattern}){{2,}}(?!\S)")
"""Three or more values in a row, each a word (`Fan speeds ( <NUM> <NUM> <NUM> <NUM> )`, a ring's ranks)."""
_PIECES = re.compile(r"([\s,;:=()\[\]{}\"'])")
_NAME = r"[A-Za-z0-9_]+(?:[-@/][A-Za-z0-9_]+)*"
GLUED = re.compile(rf"(/*){_NAME}[-@/]?{PLACEHOLDER.pattern}(?:[-@/](?:[A-Za-z0-9_]+|{PLACEHOLDER.pattern}))*")


def _glued(template: str) -> str:
    """`template` with each name glued to a value written as one value: `gpu-node-<NUM>`, `blk_<NUM>`,
    `Filter@<HEX>`, `PS/<NUM>` -> `<*>`, between the marks that part a key from its
    value or a value from the next (`nodes:node-<NUM>` -> `nodes:<*>`, `spark://Tracker@<IP>` ->
    `spark://<*>`). Joined by one `-`, `@` or `/` (or none, `v<NUM>`): a dot is a file's or a
    field's (`generating core.<NUM>`, `error..<NUM>`); a value first stays (`<NUM>-byte`, `<NUM>.<NUM>`:
    `JOINED`'s), so does a key (`AttemptID:<*>`)."""
    if "<" not in template:
        return template
    out = []
    for piece in _PIECES.split(template):
        m = GLUED.fullmatch(piece)
        out.append(m.group(1) + "<*>" if m else piece)
    return "".join(out)


MARKED = re.compile(rf"(?<![#\w>])#{PLACEHOLDER.pattern}#(?![#\w<])")
"""A value between `#` marks (`#57#`, as Loghub anonymised its users and hosts), wherever it is."""


def _keyed_word(token: str) -> str:
    """`token` with a key's bare literal value as `<*>` (`tty=ssh` -> `tty=<*>`, `(class=a.B)` ->
    `(class=<*>)`). A value with a placeholder in it is the masks' and stays; so does a quoted one
    (`probeType="Liveness"`): a structured logger (klog, logfmt) quotes every value, and its fields
    name the statement as much as they vary (`Readiness`, `vllm`: the values a reader looks for)."""
    m = KEYED_WORD.fullmatch(token)
    if m is None:
        return token
    opened, key, value = m.groups()
    tail = ""
    while value and (value[-1] in _ENDS or (value[-1] in _CLOSES and _CLOSES[value[-1]] in opened)):
        value, tail = value[:-1], value[-1] + tail
    if not value or value[0] in "\"'" or "<" in value and PLACEHOLDER.search(value):
        return token
    return f"{opened}{key}<*>{tail}"


def as_values(templates: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Templates with the values that their words only name written as values (`_as_value`).

    Text only, applied once Drain and the merges have grouped the lines: where two templates of a
    source would read the same (`status=ready` / `status=failed`, split as an enum by
    `_split_enums`), both keep their words. Order-independent."""
    written = {(src, t): _as_value(t) for src, t in set(templates)}
    readers: Counter[tuple[str, str]] = Counter((src, w) for (src, _), w in written.items())
    return {(src, t): w if readers[(src, w)] == 1 else t for (src, t), w in written.items()}


def _as_value(template: str) -> str:
    """`template` as Loghub-2.0's labels of the full-size sets read its values, where their
    labelled samples (LILAC's; bench/loghub_accuracy.py --shots) read them one way, or nearly;
    the 2k labels read several of them the other way (bench/HISTORY.md):

    * a key's bare value, though it never varies (`tty=ssh` -> `tty=<*>`: `_keyed_word`);
    * a value between `#` marks, wherever it is (`#57#`: `MARKED`), then `JOINED` again;
    * a name glued to a value (`gpu-node-<NUM>`, `spark://Tracker@<IP>`: `_glued`);
    * a word in single quotes (`QUOTED_WORD`), a quoted or `#`-led value amid the line (`QUOTED`);
    * three or more values in a row, each a word (`RUN`)."""
    text = " ".join(map(_keyed_word, template.split(" ")))
    text = JOINED.sub("<*>", _glued(MARKED.sub("<*>", text)))
    return QUOTED.sub("<*>", RUN.sub("<*>", QUOTED_WORD.sub("<*>", text)))


MASKED = "<#>"
"""What Drain sees for a masked token: a word that never counts as shared when Drain
measures similarity (`_new_drain`). Giving it plain Drain3's full credit made masked ids
make unrelated lines look alike (Loghub-2k OpenStack GA 0.30, mean 0.765); no credit
measured best (mean 0.825 with the TS mask, depth 4), and partial credit lost on both
sides (0.3: 0.769, 0.5: 0.754): a line's variables neither join nor split it, its words decide."""


KEYED = re.compile(r"([A-Za-z_][\w.\-]*[=:])[^=:]*<")
"""A masked value given under a key (`size=<NUM>,`, `pod="serving/<POD>"`): the key, to its `=` or `:`."""


def _as_word(token: str) -> str:
    """The token as Drain sees it: a masked one as MASKED, with its key if it has one
    (`size=<NUM>,` -> `size=<#>`).

    The key is a word of the statement, not of the value: `from=<*>, size=<*>, class=<*>` lines
    are alike by their keys, which bare MASKED hid (a sendmail or kubelet line of keyed values
    had no words left to match on). Measured on Loghub-2k (bench/loghub_accuracy.py): FGA
    0.941 -> 0.944, Android GA 0.920 -> 0.927, Thunderbird 0.962 -> 0.967, no set's GA or FGA lower."""
    if "<" not in token or not PLACEHOLDER.search(token):
        return token
    m = KEYED.match(token)
    return m.group(1) + MASKED if m else MASKED


WORD_VALUE = re.compile(r"[^\d<>]*[A-Za-z][^\d<>]*\d?")
"""A value that reads as a word of the program, not data: it has a letter, no masked part,
and no digit but an optional last one (`HTTPS`, `SOCKS5`, `'Inactive'`, `WWEN[enable]`),
so ids such as `attempt_1733318220417_0042_m_000003_0` never count as words."""


def _alone(lines: list[list[str]], sim_th: float) -> list[bool]:
    """Which lines Drain can only ever give a cluster of their own.

    Drain joins a line to a cluster when they share, word for word at the same places, at
    least `sim_th` of the cluster's tokens (bare masked tokens never count), and a cluster's
    words are words all its members share. So a line whose words at their places are shared
    with no other line of its length, or too few of them to reach `sim_th`, can neither join a
    cluster nor be joined: free text (a model's output, a dump) is such lines. Drain3 keeps
    every cluster in its leaf and compares each line with all of them: quadratic in free text
    (20k lines: 23 s). `cluster` still gives these lines to Drain (the prefix tree grows as it
    would), then drops their clusters, so leaves hold only clusters that can match (and the
    leaf's clean-up, amortised in `_new_drain`, lets them go). The templates are Drain's, but
    for `max_clusters`, which these no longer fill."""
    shared = Counter((len(line), p, w) for line in lines for p, w in enumerate(line) if w != MASKED)
    return [
        sum(shared[(len(line), p, w)] > 1 for p, w in enumerate(line) if w != MASKED) < sim_th * len(line)
        for line in lines
    ]


def _split_enums(
    cluster_of: list[tuple[str, object]], fed: list[list[str]], finals: dict[tuple[str, object], str], enum_max: int
) -> tuple[list[tuple[str, object]], dict[tuple[str, object], str]]:
    """Split a cluster where a `<*>` position takes at most `enum_max` distinct word values.

    Drain merges lines that differ in a few words (`Starting TrustedInstaller
    initialization.` / `... finalization.`, `open through proxy <HOST> HTTPS` / `SOCKS5`,
    `Started container vllm` / `prometheus`): to its similarity they are one line with a
    variable. A variable that takes only a few word values is almost always a
    constant chosen by the code (a state, a mode, a flag), and an incident reads better
    with each as its own template. Numbers, ids and masked values never split a cluster.
    Measured on Loghub-2k (bench/loghub_accuracy.py): mean GA 0.832 without splitting,
    0.933 with up to 3 or 4 values, 0.916 with 2, 0.910 with 6 (user and host names split);
    `MinerConfig.enum_max` says why 4.

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
    member of the cluster has the same one there (`<UUID>]`, `peer=<IP>`), else becomes `<*>`
    inside the punctuation every member shares (`rhost=<*>`, `(<*>)`: `_edges`)."""
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
                (next(iter(c)) if len(c) == 1 else _edges(sorted(c))) if x == "<*>" or x.endswith(MASKED) else x
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
    statement: positions where they differ become `<*>` inside the punctuation and key they
    share (`vis=<NUM>` / `vis=<HEX>` -> `vis=<*>`: `_edges`), the rest stays (a position that is
    `<HOST>` in all of them keeps its name). A bare `<*>` there lost the key, and the second
    pass of a sharded run (`merge_shards`) could no longer tell `vis=<*>` from any other value.
    Order-independent, so the result does not depend on the order clusters were found.
    """
    groups: dict[tuple[str, tuple[str, ...]], list[list[str]]] = {}
    for src, t in set(templates):
        toks = t.split(" ")
        shape = tuple(PLACEHOLDER.sub("<*>", x) for x in toks)
        groups.setdefault((src, shape), []).append(toks)
    out: dict[tuple[str, str], str] = {}
    for (src, _), members in groups.items():
        merged = " ".join(
            col[0] if all(c == col[0] for c in col) else _edges(sorted(set(col))) for col in zip(*members, strict=True)
        )
        for m in members:
            out[(src, " ".join(m))] = merged
    return out


UNITS = frozenset(
    "B KB MB GB TB kB KiB MiB GiB TiB b s sec secs second seconds ms msec us ns min mins h hr hrs".split()
)
"""Words that belong to the number before them: part of a value, not of the statement. Not `bytes`:
`<NUM> bytes sent` and `<NUM> bytes (<NUM> KB) sent` say what is counted, and Loghub-2.0's labels of
the full-size sets keep them two statements (`<*> bytes sent`, `<*> bytes (<*>) sent`)."""
MIN_WORDS = 3
"""How many words of the statement (not values) templates must share to merge as one (`merge_by_words`)."""


_NOT_WORD = re.compile(PLACEHOLDER.pattern + r"|[\d()\[\]{},;:.<>=%/+\-]")


def _is_value(token: str, after_value: bool) -> bool:
    """A token that is (part of) a value: placeholders, digits and the punctuation between them
    (`<NUM>`, `(<NUM>`, `00:02`, `<<NUM>`), or, right after one, a unit (`<NUM> KB)`, `<1 sec`; not
    `bytes`, `UNITS`). A word with a value in it stays a word of the statement: `uid=<NUM>`,
    `node-<NUM>`, `eth0` are not values alone; punctuation alone (`<<<<`, `>=`, `--`) is the statement's."""
    rest = _NOT_WORD.sub("", token)
    if not rest:
        return any(c.isdigit() for c in token) or PLACEHOLDER.search(token) is not None
    return after_value and rest in UNITS


def _words(template: str) -> tuple[str, ...] | None:
    """The statement's words with each run of value tokens as one `<*>`, kept inside the punctuation
    the run is written in (`size <NUM> B, free` -> `size <*>, free`; a bracket the run opens and
    closes itself is the value's: `took <NUM> ms (<NUM> s) in` -> `took <*> in`; one it is written in
    stays: `[<NUM>, <NUM>]` -> `[<*>]`, `bytes (<NUM> KB) sent` -> `bytes (<*>) sent`). None when fewer than
    `MIN_WORDS` words remain: too little to tell one statement from another."""
    out: list[str] = []
    run: list[str] = []

    def close() -> None:
        if not run:
            return
        head = run[0][: len(run[0]) - len(run[0].lstrip("([{"))]
        tail = run[-1][len(run[-1].rstrip(")]},;:.")) :]
        opened = "".join(t for t in "".join(run)[len(head) :] if t in "([{")
        tail = "".join(c for c in tail if c not in _CLOSES or _CLOSES[c] not in opened)
        out.append(f"{head}<*>{tail}")
        run.clear()

    for tok in template.split(" "):
        if _is_value(tok, bool(run)):
            run.append(tok)
        else:
            close()
            out.append(tok)
    close()
    return tuple(out) if sum(not w.startswith(("<*>", "(<*>", "[<*>", "{<*>")) for w in out) >= MIN_WORDS else None


LEADING_REST = 3
"""How many words (not values) must follow a varying first word for templates to merge (`merge_leading_word`)."""


def merge_leading_word(templates: list[tuple[str, str]], enum_max: int) -> dict[tuple[str, str], str]:
    """Merge templates of a source that differ only in their first word, when it takes more
    than `enum_max` values and `LEADING_REST` words or more follow it.

    Drain's tree routes a line by its first tokens before it measures similarity, so a
    statement whose subject comes first (`kv-evictor.daily: the scheduler told
    me to run this job...`, one per job) is never compared with its siblings. A few values
    are an enum, as `_split_enums` reads a position inside a line; a short rest (`<key> set to
    <NUM>`) is too little to tell one statement from another. Where the subject is a value in
    one template (`weights.s3://<UUID><PATH>:`, or Drain's own `<*>:` when it met some of the
    siblings), it is a variable, not an enum: the word-led siblings join it however few they are.
    Order-independent.
    """
    words: dict[tuple[str, tuple[str, ...]], set[str]] = {}
    valued: dict[tuple[str, tuple[str, ...]], set[str]] = {}
    for src, t in set(templates):
        toks = t.split(" ")
        rest = tuple(toks[1:])
        if sum(not _is_value(x, False) for x in rest) < LEADING_REST:
            continue
        if WORD_VALUE.fullmatch(toks[0]):
            words.setdefault((src, rest), set()).add(toks[0])
        elif PLACEHOLDER.search(toks[0]):
            valued.setdefault((src, rest), set()).add(toks[0])
    out: dict[tuple[str, str], str] = {}
    for src, t in set(templates):
        toks = t.split(" ")
        key = (src, tuple(toks[1:]))
        firsts, others = words.get(key, set()), valued.get(key, set())
        out[(src, t)] = (
            " ".join([_edges(sorted(firsts | others)), *toks[1:]])
            if (len(firsts) > enum_max or (others and firsts)) and (toks[0] in firsts or toks[0] in others)
            else t
        )
    return out


def merge_by_words(templates: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Merge templates of a source whose statement words are the same, whatever their values look like.

    Drain compares lines of one length, so a statement whose values take a varying number of
    tokens (`1190 bytes (1.16 KB) sent` / `2097152 bytes (2.00 MB) sent`, `lifetime 00:02` /
    `lifetime <1 sec`, `size 93.0 B` / `size 5.2 KB`) gets one template per shape. Where two or more templates of a
    source read the same once each run of value tokens is one `<*>` (`_words`), they are one
    statement, written that way. A template no other shares keeps its text (`<NUM> MB`).
    Order-independent."""
    words = {(src, t): _words(t) for src, t in set(templates)}
    shapes: dict[tuple[str, tuple[str, ...]], int] = {}
    for (src, _), w in words.items():
        if w is not None:
            shapes[(src, w)] = shapes.get((src, w), 0) + 1
    return {(src, t): " ".join(w) if w is not None and shapes[(src, w)] > 1 else t for (src, t), w in words.items()}


LEAF_SCAN = 16
"""A leaf with up to this many clusters is scanned as Drain3 does; a larger one through the word
index (`_new_drain`): the same match either way."""


def _holds(ascending: list[int], item: int) -> bool:
    at = bisect.bisect_left(ascending, item)
    return at < len(ascending) and ascending[at] == item


def _new_drain(cfg):
    from drain3.drain import Drain, Node

    class _Drain(Drain):
        """Drain3 with our similarity, and a word index that spares its leaf scan.

        Drain3 compares a line with every cluster of its leaf, and a leaf of free text (lines
        that join nothing) grows by one cluster a line: quadratic, 70k such lines took
        minutes. `_words_at` lists, for each (length, place, word), the clusters of large
        leaves with that word there when indexed (lazily: small leaves never pay for it); a
        cluster's words only ever turn into `<*>` after that, so a cluster that shares too few
        of them with the line to reach `sim_th` cannot be Drain's match, and only the others
        are compared, in the leaf's order: the same match, found in a few lookups."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._words_at: dict[tuple[int, int, str], list[int]] = {}
            self._indexed: set[int] = set()
            self._live: dict[int, int] = {}  # id(leaf) -> its clusters at its last clean-up

        def add_seq_to_prefix_tree(self, root_node, cluster) -> None:
            """Drain3's routing of a new cluster to its leaf (by token count, then by its first
            tokens: a numbered token, or one past `max_children`, down the wildcard branch), with
            the leaf's clean-up amortised.

            Drain3 rebuilds the leaf's list on every new cluster to drop the clusters that are
            gone (evicted, or dropped because no line can join them: `_alone`): quadratic in a
            leaf that grows by one cluster a line, 40k lines of free text spent 37 s there. A
            leaf is cleaned when it has doubled since its last clean-up instead; `fast_match`
            skips a cluster that is gone either way, so matches are the same."""
            tokens = cluster.log_template_tokens
            node = root_node.key_to_child_node.setdefault(str(len(tokens)), Node())
            if not tokens:
                node.cluster_ids = [cluster.cluster_id]
                return
            for depth, token in enumerate(tokens, start=1):
                if depth >= self.max_node_depth or depth >= len(tokens):
                    break
                node = self._child(node, token)
            ids = node.cluster_ids
            ids.append(cluster.cluster_id)
            if len(ids) > 2 * self._live.get(id(node), 0) + LEAF_SCAN:
                node.cluster_ids = [cid for cid in ids if cid in self.id_to_cluster]
                self._live[id(node)] = len(node.cluster_ids)

        def _child(self, node, token: str):
            """The node `token` leads to from `node`, made where Drain3 makes it: its own
            child while `node` has room (`max_children`, the wildcard child counted), else,
            and for a token with a number, the wildcard child."""
            children = node.key_to_child_node
            if token in children:
                return children[token]
            wildcard = self.param_str
            if self.parametrize_numeric_tokens and self.has_numbers(token):
                return children.setdefault(wildcard, Node())
            room = len(children) + (0 if wildcard in children else 1) < self.max_children
            if room:
                return children.setdefault(token, Node())
            return children.setdefault(wildcard, Node())

        def _index(self, cluster_ids) -> None:
            """Index the leaf's clusters not indexed yet: the newest, at its end."""
            for cid in reversed(cluster_ids):
                if cid in self._indexed:
                    break
                self._indexed.add(cid)
                cluster = self.id_to_cluster.get(cid)
                for p, w in enumerate(cluster.log_template_tokens if cluster else ()):
                    if w != MASKED and w != self.param_str:
                        self._words_at.setdefault((len(cluster.log_template_tokens), p, w), []).append(cid)

        def fast_match(self, cluster_ids, tokens, sim_th: float, include_params: bool):
            if include_params or len(cluster_ids) <= LEAF_SCAN:
                return super().fast_match(cluster_ids, tokens, sim_th, include_params)
            self._index(cluster_ids)
            shared: dict[int, int] = {}
            n = len(tokens)
            for p, w in enumerate(tokens):
                for cid in self._words_at.get((n, p, w), ()) if w != MASKED else ():
                    shared[cid] = shared.get(cid, 0) + 1
            # (a leaf lists its clusters in the order they were made, ids ascending: drain3 appends)
            near = [cid for cid in sorted(c for c, k in shared.items() if k >= sim_th * n) if _holds(cluster_ids, cid)]
            return super().fast_match(near, tokens, sim_th, include_params) if near else None

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
