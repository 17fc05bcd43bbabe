"""Grouping accuracy of our miner vs plain drain3 on the Loghub-2k labelled samples.

Usage: python bench/loghub_accuracy.py [--data ../shared/data/loghub2k] [--shards 16] [--labels original|corrected|both]

Loghub data is for research/evaluation only: it is read from shared/ when present and
never copied into the project. Input per dataset is the `Content` column of
`<DS>_2k.log_structured.csv` (header already split off, as our parsers do for logs);
ground truth is its `EventId` and `EventTemplate`, from the original labels or the corrected
ones (`*_structured_corrected.csv`, beside them). Metrics (Loghub-2.0 definitions):
GA  = share of lines whose predicted group equals their true group;
FGA = F1 of group-level precision/recall (a predicted group is correct if it equals a true group);
PA  = share of lines whose template text equals their true template (`normalise`d: our named
      masks `<NUM>`, `<IP>`... read as `<*>`, runs of `<*>` as one);
FTA = F1 of template-level precision/recall (a predicted template is correct if its group
      equals a true group and its text that group's template).
Last lines: `loghub labels=original GA ours=... drain3=... FGA ... PA ours=... FTA ours=...`.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "loghub2k"


def grouping_scores(pred: list, truth: list) -> tuple[float, float]:
    """(GA, FGA) of predicted group labels against true labels, line-aligned."""
    true_size = Counter(truth)
    groups: dict = defaultdict(list)
    for i, p in enumerate(pred):
        groups[p].append(i)
    correct_lines = correct_groups = 0
    for members in groups.values():
        labels = {truth[i] for i in members}
        if len(labels) == 1 and true_size[next(iter(labels))] == len(members):
            correct_lines += len(members)
            correct_groups += 1
    ga = correct_lines / len(truth)
    p, r = correct_groups / len(groups), correct_groups / len(true_size)
    return ga, (2 * p * r / (p + r) if p + r else 0.0)


def load(ds_dir: Path, labels: str = "original") -> tuple[list[str], list[str], list[str]] | None:
    """(content, true group, true template) per line; None when that label set is absent."""
    name = ds_dir.name
    suffix = "_corrected" if labels == "corrected" else ""
    path = ds_dir / f"{name}_2k.log_structured{suffix}.csv"
    if not path.is_file():
        return None
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return [r["Content"] for r in rows], [r["EventId"] for r in rows], [r["EventTemplate"] for r in rows]


_NAMED = re.compile(r"<(?:\*|[A-Z][A-Z0-9_]*)>")


def normalise(template: str) -> str:
    """A template as compared: every placeholder `<*>`, adjacent placeholders one, spaces single."""
    t = _NAMED.sub("<*>", template)
    t = re.sub(r"(?:<\*>)+", "<*>", t)
    return " ".join(t.split())


def template_scores(pred: list, pred_text: list[str], truth: list, truth_text: list[str]) -> tuple[float, float]:
    """(PA, FTA): line-level template text accuracy, and template-level F1 (group and text right)."""
    pa = sum(normalise(p) == normalise(t) for p, t in zip(pred_text, truth_text, strict=True)) / len(truth)
    true_members: dict = defaultdict(set)
    true_text: dict = {}
    for i, (g, tt) in enumerate(zip(truth, truth_text, strict=True)):
        true_members[g].add(i)
        true_text.setdefault(g, normalise(tt))
    groups: dict = defaultdict(set)
    text: dict = {}
    for i, (p, pt) in enumerate(zip(pred, pred_text, strict=True)):
        groups[p].add(i)
        text.setdefault(p, normalise(pt))
    correct = 0
    for p, members in groups.items():
        g = truth[next(iter(members))]
        if true_members[g] == members and text[p] == true_text[g]:
            correct += 1
    prec, rec = correct / len(groups), correct / len(true_members)
    return pa, (2 * prec * rec / (prec + rec) if prec + rec else 0.0)


def ours(name: str, content: list[str]) -> tuple[list[str], list[str]]:
    """Our template id and template text per line."""
    import polars as pl

    from forensics import mining

    ids, names, _ = mining.cluster(pl.Series([name] * len(content)), pl.Series(content))
    text = dict(zip(names[mining.TEMPLATE_ID], names[mining.TEMPLATE], strict=True))
    ids = ids.to_list()
    return ids, [text[i] for i in ids]


def ours_sharded(name: str, content: list[str], shards: int) -> list[str]:
    """Contiguous shards, one miner each, then the second Drain pass (`mining.merge_shards`),
    as `--engine ray` mines: per-shard templates mapped to global ids, rows untouched."""
    import polars as pl

    from forensics import mining

    size = -(-len(content) // shards)
    per_line: list[str] = []
    tables = []
    for k in range(0, len(content), size):
        part = content[k : k + size]
        ids, names, _ = mining.cluster(pl.Series([name] * len(part)), pl.Series(part))
        text = dict(zip(names[mining.TEMPLATE_ID], names[mining.TEMPLATE], strict=True))
        per_line += [text[i] for i in ids]
        tables.append(
            pl.DataFrame({"source": name, mining.TEMPLATE: [text[i] for i in ids]})
            .group_by("source", mining.TEMPLATE)
            .len(mining.COUNT)
        )
    merged = mining.merge_shards(pl.concat(tables))
    to_global = dict(zip(merged["shard_template"], merged[mining.TEMPLATE_ID], strict=True))
    return [to_global[t] for t in per_line]


def plain_drain3(content: list[str]) -> list[int]:
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
    ap.add_argument("--labels", choices=("original", "corrected", "both"), default="both")
    args = ap.parse_args()
    if not args.data.is_dir():
        print(f"skipped: {args.data} not present (Loghub-2k is evaluation data kept outside the project)")
        return
    import logging

    logging.disable(logging.INFO)
    for labels in ("original", "corrected") if args.labels == "both" else (args.labels,):
        run(args, labels)


def run(args, labels: str) -> None:
    rows = []
    sharded = []
    extra = f" {'GA ' + str(args.shards) + ' shards':>12}" if args.shards else ""
    print(f"labels: {labels}")
    print(
        f"{'dataset':<12} {'GA ours':>8} {'GA drain3':>10} {'FGA ours':>9} {'FGA drain3':>11} {'PA ours':>8} "
        f"{'FTA ours':>9}{extra}"
    )
    for ds in sorted(p for p in args.data.iterdir() if p.is_dir()):
        loaded = load(ds, labels)
        if loaded is None:
            continue
        content, truth, truth_text = loaded
        pred, pred_text = ours(ds.name, content)
        ga_o, fga_o = grouping_scores(pred, truth)
        pa_o, fta_o = template_scores(pred, pred_text, truth, truth_text)
        ga_d, fga_d = grouping_scores(plain_drain3(content), truth)
        rows.append((ga_o, ga_d, fga_o, fga_d, pa_o, fta_o))
        cell = ""
        if args.shards:
            ga_s, _ = grouping_scores(ours_sharded(ds.name, content, args.shards), truth)
            sharded.append(ga_s)
            cell = f" {ga_s:>12.3f}"
        print(f"{ds.name:<12} {ga_o:>8.3f} {ga_d:>10.3f} {fga_o:>9.3f} {fga_d:>11.3f} {pa_o:>8.3f} {fta_o:>9.3f}{cell}")
    n = len(rows)
    if not n:
        print(f"skipped: no {labels} labels under {args.data}")
        return
    mean = [sum(r[i] for r in rows) / n for i in range(6)]
    cell = f" {sum(sharded) / n:>12.3f}" if sharded else ""
    print(
        f"{'mean':<12} {mean[0]:>8.3f} {mean[1]:>10.3f} {mean[2]:>9.3f} {mean[3]:>11.3f} {mean[4]:>8.3f} "
        f"{mean[5]:>9.3f}{cell}"
    )
    if sharded:
        worst = max(abs(a - r[0]) for a, r in zip(sharded, rows, strict=True))
        print(
            f"loghub shards={args.shards} GA single={mean[0]:.3f} sharded={sum(sharded) / n:.3f} "
            f"diff={sum(sharded) / n - mean[0]:+.3f} worst_dataset_diff={worst:.3f}"
        )
    print(
        f"loghub labels={labels} GA ours={mean[0]:.3f} drain3={mean[1]:.3f} FGA ours={mean[2]:.3f} "
        f"drain3={mean[3]:.3f} PA ours={mean[4]:.3f} FTA ours={mean[5]:.3f}"
    )


if __name__ == "__main__":
    main()
