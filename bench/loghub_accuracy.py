"""Grouping and template accuracy of our miner vs plain drain3 on Loghub's labelled log sets.

Usage: python bench/loghub_accuracy.py [--data DIR] [--labels auto|original|corrected|full|both]
                                       [--shards 16] [--grow N] [--mixed] [--baseline-max-lines 1000000]
       python bench/loghub_accuracy.py --shots <LILAC>/full_dataset/sampled_examples [--show-misses N]

`--data` holds one folder per dataset (`HDFS/`, `BGL/`, ...); by default the Loghub-2k samples in
`../shared/data/loghub2k`. Each folder may hold any of three label sets, each read where present:
  original   `<DS>_2k.log_structured.csv`            (Loghub-2k, the 2019 labels)
  corrected  `<DS>_2k.log_structured_corrected.csv`  (Loghub-2k, Khan et al. 2022; where its conventions
                                                      and the full-size sets' differ, we follow the latter)
  full       `<DS>_full.log_structured.csv`          (Loghub-2.0's full-size sets: point `--data` at its
                                                      `full_dataset/`; millions of lines per set)
Loghub data is for research/evaluation only: it is read where it lies and never copied into the
project. Input per dataset is the `Content` column (header already split off, as our parsers do for
logs); ground truth is its `EventId` and `EventTemplate`. Metrics (Loghub-2.0 definitions):
GA  = share of lines whose predicted group equals their true group;
FGA = F1 of group-level precision/recall (a predicted group is correct if it equals a true group);
PA  = share of lines whose template text equals their true template (`normalise`d: our named
      masks `<NUM>`, `<IP>`... read as `<*>`, runs of `<*>` as one);
FTA = F1 of template-level precision/recall (a predicted template is correct if its group
      equals a true group and its text that group's template).
`--grow N` mines N times each set's lines with every labelled variable given fresh digits (`grow`):
where no full-size set is at hand, it shows whether grouping holds as values grow numerous.
`--mixed` mines every set's lines together, as one source, and scores each set on its own lines
(`mixed_scores`): the statements of all the systems in one tree, a stand-in for the many more
statements a full-size set holds (does a statement merge with one it never met in its sample?).
`--shots DIR` scores template text against Loghub-2.0's labels of the full-size sets where only a
sample of them is at hand: LILAC's `full_dataset/sampled_examples/<DS>/<N>shot.json` (github.com/
logpai/LILAC; one `{"query": line, "answer": template}` a line, variables written `{variables}`).
Each set's sampled lines are mined together with its 2k lines from `--data` (so a statement has
siblings to vary against) and each sampled line's template compared (`shot_scores`); `weighted`
counts a sampled line as the 2k lines its template took, a stand-in for the full-size set's mix.
Plain drain3 (the baseline) runs at ~50k lines/s, so it is left out (`-`) on sets larger than
`--baseline-max-lines`; its mean is then over the sets it ran on, and the last line says how many.
Last lines: `loghub labels=corrected GA ours=... drain3=... FGA ... PA ours=... FTA ours=...`.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "loghub2k"
LABEL_FILES = {
    "original": "{name}_2k.log_structured.csv",
    "corrected": "{name}_2k.log_structured_corrected.csv",
    "full": "{name}_full.log_structured.csv",
}
"""Where each label set lies in a dataset's folder (Loghub-2k's and Loghub-2.0's own file names)."""


def load_path(ds_dir: Path, labels: str) -> Path:
    return ds_dir / LABEL_FILES[labels].format(name=ds_dir.name)


def load(ds_dir: Path, labels: str = "original") -> tuple[pl.Series, pl.Series, pl.Series] | None:
    """(content, true group, true template) per line; None when that label set is absent."""
    path = load_path(ds_dir, labels)
    if not path.is_file():
        return None
    frame = pl.read_csv(
        path, columns=["Content", "EventId", "EventTemplate"], infer_schema=False, encoding="utf8-lossy"
    ).with_columns(pl.all().fill_null(""))
    return frame["Content"], frame["EventId"], frame["EventTemplate"]


def _groups(lines: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(predicted groups, true groups) of `lines` (columns `p`, `t`, and optionally a text for
    each, `p_text`, `t_text`, kept per group); a predicted group is `ok` when it equals a true group."""
    text = [c for c in ("p_text", "t_text") if c in lines.columns]
    true = lines.group_by("t").agg(pl.len().alias("tn"), *[pl.col(c).first() for c in text if c == "t_text"])
    pred_groups = (
        lines.group_by("p")
        .agg(
            pl.len().alias("n"),
            pl.col("t").n_unique().alias("k"),
            pl.col("t").first(),
            *[pl.col(c).first() for c in text if c == "p_text"],
        )
        .join(true, on="t", how="left")
        .with_columns(((pl.col("k") == 1) & (pl.col("n") == pl.col("tn"))).alias("ok"))
    )
    return pred_groups, true


def _f1(correct: int, predicted: int, actual: int) -> float:
    p, r = correct / predicted, correct / actual
    return 2 * p * r / (p + r) if p + r else 0.0


def grouping_scores(pred, truth) -> tuple[float, float]:
    """(GA, FGA) of predicted group labels against true labels, line-aligned."""
    lines = pl.DataFrame({"p": pl.Series(pred), "t": pl.Series(truth)})
    pred_groups, true = _groups(lines)
    ok = pred_groups.filter("ok")
    return ok["n"].sum() / lines.height, _f1(ok.height, pred_groups.height, true.height)


_NAMED = re.compile(r"<(?:\*|[A-Z][A-Z0-9_]*)>")


def normalise(template: str) -> str:
    """A template as compared: every placeholder `<*>`, adjacent placeholders one, spaces single."""
    t = _NAMED.sub("<*>", template)
    t = re.sub(r"(?:<\*>)+", "<*>", t)
    return " ".join(t.split())


def _normalised(texts: pl.Series) -> pl.Series:
    """`normalise` of every line's template, computed once per distinct template."""
    distinct = texts.unique().to_list()
    return texts.replace_strict(distinct, [normalise(t) for t in distinct], return_dtype=pl.String)


def template_scores(pred, pred_text, truth, truth_text) -> tuple[float, float]:
    """(PA, FTA): line-level template text accuracy, and template-level F1 (group and text right)."""
    pred_n = _normalised(pl.Series(pred_text, dtype=pl.String))
    true_n = _normalised(pl.Series(truth_text, dtype=pl.String))
    pa = (pred_n == true_n).mean()
    lines = pl.DataFrame({"p": pl.Series(pred), "t": pl.Series(truth), "p_text": pred_n, "t_text": true_n})
    pred_groups, true = _groups(lines)
    correct = pred_groups.filter(pl.col("ok") & (pl.col("p_text") == pl.col("t_text"))).height
    return pa, _f1(correct, pred_groups.height, true.height)


def mixed_scores(dataset, pred, pred_text, truth, truth_text) -> dict[str, tuple[float, float, float, float]]:
    """(GA, FGA, PA, FTA) of each dataset, its lines mined together with every other's, each judged
    on its own lines: a group that also takes lines of another set is right for this one when its
    lines here are one true group. The same statement logged by two systems (pam_unix's `session
    opened for user ...` in Linux and in Thunderbird) is one template, rightly; a merge of two of
    this set's statements still shows here."""
    lines = pl.DataFrame(
        {"d": pl.Series(dataset, dtype=pl.String), "p": pred, "pt": pred_text, "t": truth, "tt": truth_text}
    )
    out = {}
    for (name,), part in lines.group_by("d", maintain_order=True):
        out[name] = (
            *grouping_scores(part["p"], part["t"]),
            *template_scores(part["p"], part["pt"], part["t"], part["tt"]),
        )
    return out


_HOLE = re.compile(r"<\*>")


def _pattern(template: str) -> re.Pattern | None:
    """A labelled template as a regex whose groups are its variables (None: no variable)."""
    parts = _HOLE.split(template)
    if len(parts) == 1:
        return None
    return re.compile("(.*?)".join(re.escape(p) for p in parts), re.DOTALL)


_RUN = re.compile(r"[0-9A-Za-z]+")


def _revalue(value: str, rng: random.Random) -> str:
    """`value` with fresh digits (as many) and fresh hex digits in a run that reads as hex;
    its words kept.

    Full-size logs differ from the 2k samples first in how many values each variable takes:
    numbers, addresses, ids and counters take thousands where the sample shows a few. Words
    are kept: made-up words also land in what is closed in a real log (`blk_`, weekdays,
    `java.vendor=` keys, states), so they measure the stand-in, not the miner."""
    return _RUN.sub(lambda run: _revalue_run(run[0], rng), value)


def _revalue_run(run: str, rng: random.Random) -> str:
    head = 2 if run[:2] in ("0x", "0X") else 0
    body = run[head:]
    if re.fullmatch(r"[0-9a-fA-F]+", body) and (head or (len(body) >= 6 and re.search(r"[a-fA-F]", body))):
        return run[:head] + "".join(rng.choice("0123456789abcdef") for _ in body)
    return re.sub(r"\d", lambda _: rng.choice("0123456789"), run)


def grow(content: pl.Series, truth: pl.Series, truth_text: pl.Series, factor: int, seed: int = 0):
    """`factor` times the lines, each variable (where its label's template marks one) given a
    fresh value (`_revalue`).

    A stand-in for a full-size set where there is none: the same statements in the same
    proportions, labels carried over, with values as numerous as in a long log. It does not
    stand in for what else a full-size set brings (statements the sample never shows). A line
    its label's template does not match (label noise) is repeated as is."""
    rng = random.Random(seed)
    patterns: dict[str, re.Pattern | None] = {}
    matched = []
    for line, group, template in zip(content.to_list(), truth.to_list(), truth_text.to_list(), strict=True):
        if template not in patterns:
            patterns[template] = _pattern(template)
        match = patterns[template] and patterns[template].fullmatch(line)
        matched.append((line, group, template, [match.span(i) for i in range(1, match.re.groups + 1)] if match else []))
    out_content, out_truth, out_text = [], [], []
    for _ in range(factor):
        for line, group, template, spans in matched:
            pieces, last = [], 0
            for a, b in spans:
                pieces += [line[last:a], _revalue(line[a:b], rng)]
                last = b
            out_content.append("".join(pieces) + line[last:])
            out_truth.append(group)
            out_text.append(template)
    return pl.Series(out_content), pl.Series(out_truth), pl.Series(out_text)


def ours(name: str, content: pl.Series, *, shard: bool = False) -> tuple[pl.Series, pl.Series]:
    """Our template id and template text per line (`shard`: as one shard of a sharded run mines them)."""
    from forensics import mining

    ids, names, _ = mining.cluster(pl.repeat(name, len(content), eager=True), content, shard=shard)
    text = ids.to_frame(mining.TEMPLATE_ID).join(
        names.select(mining.TEMPLATE_ID, mining.TEMPLATE), on=mining.TEMPLATE_ID, how="left", maintain_order="left"
    )
    return ids, text[mining.TEMPLATE]


def ours_sharded(name: str, content: pl.Series, shards: int) -> pl.Series:
    """Contiguous shards, one miner each, then the second Drain pass (`mining.merge_shards`),
    as `--engine ray` mines: per-shard templates mapped to global ids, rows untouched."""
    from forensics import mining

    size = -(-len(content) // shards)
    per_line = pl.concat([ours(name, content.slice(k, size), shard=True)[1] for k in range(0, len(content), size)])
    counts = per_line.to_frame(mining.TEMPLATE).group_by(mining.TEMPLATE).len(mining.COUNT)
    merged = mining.merge_shards(counts.with_columns(pl.lit(name).alias("source")))
    return per_line.replace_strict(merged["shard_template"], merged[mining.TEMPLATE_ID])


def plain_drain3(content: pl.Series) -> list[int]:
    from drain3 import TemplateMiner
    from drain3.template_miner_config import TemplateMinerConfig

    miner = TemplateMiner(config=TemplateMinerConfig())  # (drain3's defaults, without looking for drain3.ini)
    return [miner.add_log_message(line)["cluster_id"] for line in content]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument(
        "--shards", type=int, default=0, help="also mine in N contiguous shards + a second pass, as --engine ray does"
    )
    ap.add_argument(
        "--labels",
        choices=("auto", *LABEL_FILES, "both"),
        default="auto",
        help="auto: every label set present; both: original and corrected",
    )
    ap.add_argument(
        "--grow", type=int, default=1, help="mine N times each set's lines, variables given fresh values (`grow`)"
    )
    ap.add_argument(
        "--mixed", action="store_true", help="mine all sets' lines as one source, score each set (`mixed_scores`)"
    )
    ap.add_argument("--baseline-max-lines", type=int, default=1_000_000, help="skip plain drain3 on larger sets")
    ap.add_argument("--shots", type=Path, help="LILAC's sampled_examples of the full-size sets (`shot_scores`)")
    ap.add_argument("--shot-file", default="64shot.json", help="which sample of each set --shots reads")
    ap.add_argument("--show-misses", type=int, default=0, help="with --shots: the N heaviest misses of each set")
    args = ap.parse_args()
    if args.shots is not None:
        shots(args)
        return
    if not args.data.is_dir():
        print(f"skipped: {args.data} not present (Loghub data is evaluation data kept outside the project)")
        return
    import logging

    logging.disable(logging.INFO)
    sets = {"auto": tuple(LABEL_FILES), "both": ("original", "corrected")}.get(args.labels, (args.labels,))
    datasets = sorted(p for p in args.data.iterdir() if p.is_dir())
    found = [labels for labels in sets if any(load_path(ds, labels).is_file() for ds in datasets)]
    if not found:
        print(f"skipped: no {' or '.join(LABEL_FILES[x].format(name='<DS>') for x in sets)} under {args.data}")
        return
    for labels in found:
        run(args, labels, datasets)


def run(args, labels: str, datasets: list[Path]) -> None:
    rows = []
    sharded = []
    extra = f" {'GA ' + str(args.shards) + ' shards':>12}" if args.shards else ""
    print(
        f"labels: {labels}"
        + (f", each set grown {args.grow}x with fresh values (`grow`)" if args.grow > 1 else "")
        + (", all sets mined as one source (`mixed_scores`)" if args.mixed else "")
    )
    print(
        f"{'dataset':<12} {'lines':>10} {'GA ours':>8} {'GA drain3':>10} {'FGA ours':>9} {'FGA drain3':>11} "
        f"{'PA ours':>8} {'FTA ours':>9} {'mine s':>7}{extra}"
    )
    # One set at a time (the full-size sets run to millions of lines each); `--mixed` needs them all.
    loaded = ((ds.name, load(ds, labels)) for ds in datasets)
    loaded = ((name, grow(*one, args.grow) if args.grow > 1 else one) for name, one in loaded if one is not None)
    scores = None
    if args.mixed:
        loaded = list(loaded)
        scores = _scored_together(dict(loaded), args)
    for name, (content, truth, truth_text) in loaded:
        if scores is None:
            started = time.perf_counter()
            pred, pred_text = ours(name, content)
            took = f"{time.perf_counter() - started:>7.1f}"
            ga_o, fga_o = grouping_scores(pred, truth)
            pa_o, fta_o = template_scores(pred, pred_text, truth, truth_text)
            ga_d = fga_d = None
            if len(content) <= args.baseline_max_lines:
                ga_d, fga_d = grouping_scores(plain_drain3(content), truth)
        else:
            (ga_o, fga_o, pa_o, fta_o), (ga_d, fga_d) = scores[name]
            took = f"{'':>7}"
        rows.append((ga_o, ga_d, fga_o, fga_d, pa_o, fta_o))
        cell = ""
        if args.shards:
            ga_s, _ = grouping_scores(ours_sharded(name, content, args.shards), truth)
            sharded.append(ga_s)
            cell = f" {ga_s:>12.3f}"
        print(
            f"{name:<12} {len(content):>10} {ga_o:>8.3f} {_cell(ga_d, 10)} {fga_o:>9.3f} {_cell(fga_d, 11)} "
            f"{pa_o:>8.3f} {fta_o:>9.3f} {took}{cell}",
            flush=True,
        )
    n = len(rows)
    mean = [_mean([r[i] for r in rows]) for i in range(6)]
    baseline_n = sum(r[1] is not None for r in rows)
    cell = f" {sum(sharded) / n:>12.3f}" if sharded else ""
    print(
        f"{'mean':<12} {'':>10} {mean[0]:>8.3f} {_cell(mean[1], 10)} {mean[2]:>9.3f} {_cell(mean[3], 11)} "
        f"{mean[4]:>8.3f} {mean[5]:>9.3f} {'':>7}{cell}"
    )
    if sharded:
        worst = max(abs(a - r[0]) for a, r in zip(sharded, rows, strict=True))
        print(
            f"loghub shards={args.shards} GA single={mean[0]:.3f} sharded={sum(sharded) / n:.3f} "
            f"diff={sum(sharded) / n - mean[0]:+.3f} worst_dataset_diff={worst:.3f}"
        )
    partial = f" drain3_datasets={baseline_n}/{n}" if baseline_n < n else ""
    grown = (f" grow={args.grow}" if args.grow > 1 else "") + (" mixed" if args.mixed else "")
    print(
        f"loghub labels={labels}{grown} GA ours={mean[0]:.3f} drain3={_cell(mean[1], 0)} FGA ours={mean[2]:.3f} "
        f"drain3={_cell(mean[3], 0)} PA ours={mean[4]:.3f} FTA ours={mean[5]:.3f}{partial}"
    )


def _scored_together(loaded: dict[str, tuple[pl.Series, pl.Series, pl.Series]], args) -> dict:
    """`--mixed`: every set's lines mined as one source, ours and (within its line limit) plain
    drain3's; per set, ((GA, FGA, PA, FTA) ours, (GA, FGA) drain3's) by `mixed_scores`."""
    dataset = pl.concat([pl.repeat(name, len(c), dtype=pl.String, eager=True) for name, (c, _, _) in loaded.items()])
    content, truth, truth_text = (pl.concat([one[i] for one in loaded.values()]) for i in range(3))
    started = time.perf_counter()
    pred, pred_text = ours("mixed", content)
    print(f"(mined {len(content)} lines as one source in {time.perf_counter() - started:.1f} s)", flush=True)
    mine = mixed_scores(dataset, pred, pred_text, truth, truth_text)
    base = {}
    if len(content) <= args.baseline_max_lines:
        base = mixed_scores(dataset, plain_drain3(content), truth_text, truth, truth_text)
    return {name: (mine[name], base.get(name, (None, None))[:2]) for name in loaded}


def shot_scores(name: str, base: pl.Series, lines: list[str], answers: list[str]) -> tuple[float, float, list]:
    """(PA, weighted PA, misses) of sampled lines mined together with a set's 2k `base` lines.

    A sampled line is right when its template, `normalise`d, equals its label. Weighted, a line counts
    as one plus the 2k lines its template took: a frequent statement weighs as it does in the set."""
    ids, text = ours(name, pl.concat([base, pl.Series(lines, dtype=pl.String)]))
    base_ids, shot_ids = ids[: len(base)], ids[len(base) :].to_list()
    counts = dict(base_ids.value_counts().iter_rows())
    got = _normalised(text[len(base) :]).to_list()
    want = _normalised(
        pl.Series(answers, dtype=pl.String).str.replace_all("{variables}", "<*>", literal=True)
    ).to_list()
    weights = [counts.get(i, 0) + 1 for i in shot_ids]
    ok = [g == w for g, w in zip(got, want, strict=True)]
    misses = [(weights[k], lines[k], got[k], want[k]) for k in range(len(ok)) if not ok[k]]
    return sum(ok) / len(ok), sum(w for w, o in zip(weights, ok, strict=True) if o) / sum(weights), misses


def shots(args) -> None:
    import json

    rows = []
    print(f"labels: Loghub-2.0 full-size sets, sampled ({args.shot_file} under {args.shots})")
    print(f"{'dataset':<12} {'sampled':>8} {'PA ours':>8} {'weighted':>9}")
    for path in sorted(args.shots.glob(f"*/{args.shot_file}")):
        name = path.parent.name
        base = load(args.data / name, "corrected") or load(args.data / name, "original")
        pairs = {}
        for row in path.read_text(encoding="utf-8").splitlines():
            if row.strip():
                one = json.loads(row)
                pairs.setdefault(one["query"], one["answer"])
        if base is None or not pairs:
            continue
        pa, weighted, misses = shot_scores(name, base[0], list(pairs), list(pairs.values()))
        rows.append((pa, weighted))
        print(f"{name:<12} {len(pairs):>8} {pa:>8.3f} {weighted:>9.3f}")
        for weight, line, got, want in sorted(misses, reverse=True)[: args.show_misses]:
            print(f"    [{weight}] {line[:100]}\n      ours  {got[:100]}\n      label {want[:100]}")
    if not rows:
        print(f"skipped: no */{args.shot_file} under {args.shots} with its set's 2k lines under {args.data}")
        return
    pa, weighted = (_mean([r[k] for r in rows]) for k in (0, 1))
    print(f"loghub labels=full-sampled PA ours={pa:.3f} weighted={weighted:.3f} ({len(rows)} sets)")


def _mean(values: list) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _cell(value: float | None, width: int) -> str:
    return f"{value:>{width}.3f}" if value is not None else f"{'-':>{width}}"


if __name__ == "__main__":
    main()
