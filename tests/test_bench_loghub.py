"""The Loghub accuracy benchmark's loading and scoring, on invented label files laid out as Loghub-2.0's
full-size sets are (`<DS>/<DS>_full.log_structured.csv`), so the numbers it reports on data we never
see here are computed the way Loghub-2.0 defines them."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import polars as pl
import pytest

from tests.conftest import REPO

BENCH = REPO / "bench" / "loghub_accuracy.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("loghub_accuracy", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HEADER = "LineId,Date,Time,Level,Component,Content,EventId,EventTemplate\n"


def _write_full_set(root, name: str, rows: list[tuple[str, str, str]], *, raw: bytes = b"") -> None:
    folder = root / name
    folder.mkdir(parents=True)
    body = "".join(
        f'{i},2026-11-30,03:12:{i % 60:02d},INFO,pool,"{content}",{eid},"{template}"\n'
        for i, (content, eid, template) in enumerate(rows, 1)
    )
    (folder / f"{name}_full.log_structured.csv").write_bytes((HEADER + body).encode() + raw)


def test_loads_content_and_labels_from_a_full_size_set_and_survives_bad_bytes(bench, tmp_path):
    rows = [("evicted block 17 from gpu 3", "E1", "evicted block <*> from gpu <*>"), ("", "E2", "")]
    _write_full_set(tmp_path, "Toy", rows, raw=b'3,2026-11-30,03:12:03,INFO,pool,"bad \xff byte",E3,"bad <*> byte"\n')

    content, truth, truth_text = bench.load(tmp_path / "Toy", "full")

    assert content.to_list() == ["evicted block 17 from gpu 3", "", "bad \ufffd byte"]
    assert truth.to_list() == ["E1", "E2", "E3"]
    assert truth_text[0] == "evicted block <*> from gpu <*>"
    assert bench.load(tmp_path / "Toy", "corrected") is None


def test_grouping_counts_a_line_only_when_its_whole_group_is_recovered(bench):
    # a = {0, 1} is exactly true group x; b and c split true group y.
    ga, fga = bench.grouping_scores(["a", "a", "b", "c"], ["x", "x", "y", "y"])

    assert ga == pytest.approx(0.5)
    assert fga == pytest.approx(0.4)  # precision 1/3, recall 1/2


def test_template_accuracy_reads_named_masks_as_wildcards_and_needs_the_group_right(bench):
    pred = ["a", "a", "b", "b"]
    pred_text = ["open <NUM> port <*><*>", "open <NUM> port <*><*>", "close <*>", "close <*>"]
    truth = ["x", "x", "y", "z"]
    truth_text = ["open <*> port <*>", "open <*> port <*>", "close <*>", "close <*>"]

    pa, fta = bench.template_scores(pred, pred_text, truth, truth_text)

    assert pa == pytest.approx(1.0)  # every line's text is right ...
    assert fta == pytest.approx(0.4)  # ... but group b merges y and z: 1 of 2 predicted, 1 of 3 true


def test_reports_the_full_set_and_leaves_the_baseline_out_above_its_line_limit(tmp_path):
    users = ["ana", "bo", "chen", "dara", "eli", "fay"]
    rows = [
        (
            f"Accepted publickey for {u} from 10.4.0.{i} port {40000 + i}",
            "E1",
            "Accepted publickey for <*> from <*> port <*>",
        )
        for i, u in enumerate(users)
    ]
    rows += [(f"session closed for user {u}", "E2", "session closed for user <*>") for u in users]
    _write_full_set(tmp_path, "Toy", rows)

    run = subprocess.run(
        [sys.executable, str(BENCH), "--data", str(tmp_path), "--baseline-max-lines", "5"],
        capture_output=True,
        text=True,
        check=True,
    )

    last = run.stdout.strip().splitlines()[-1]
    assert last.startswith("loghub labels=full GA ours=1.000 drain3=- ")
    assert last.endswith("drain3_datasets=0/1")


def test_says_what_it_looked_for_when_no_label_set_is_present(tmp_path):
    (tmp_path / "Toy").mkdir()

    run = subprocess.run([sys.executable, str(BENCH), "--data", str(tmp_path)], capture_output=True, text=True)

    assert run.returncode == 0
    assert "skipped: no <DS>_2k.log_structured.csv or" in run.stdout
    assert "<DS>_full.log_structured.csv" in run.stdout


def test_grow_gives_variables_fresh_digits_and_keeps_words_labels_and_unmatched_lines(bench):
    content = pl.Series(["evicted block 17 from gpu 3 (0x7f3a)", "worker rank 2 joined", "stale label 9"])
    truth = pl.Series(["E1", "E2", "E3"])
    truth_text = pl.Series(["evicted block <*> from gpu <*> (<*>)", "worker <*> joined", "never matches <*>"])

    grown, grown_truth, grown_text = bench.grow(content, truth, truth_text, factor=40, seed=7)

    assert grown.len() == 120
    assert grown_truth.to_list() == ["E1", "E2", "E3"] * 40
    assert grown_text.to_list() == truth_text.to_list() * 40
    evicted = grown.filter(grown_truth == "E1")
    assert evicted.str.contains(r"^evicted block \d{2} from gpu \d \(0x[0-9a-f]{4}\)$").all()
    assert evicted.n_unique() > 30  # values are fresh, not the sample's one
    assert grown.filter(grown_truth == "E2").str.contains(r"^worker rank \d joined$").all()  # the word stays
    assert set(grown.filter(grown_truth == "E3")) == {"stale label 9"}  # label noise repeated as is
    assert bench.grow(content, truth, truth_text, factor=40, seed=7)[0].equals(grown)


def test_mixed_judges_each_set_on_its_own_lines(bench):
    # g1 takes A's statement x and B's y (the same statement logged by two systems): right for both.
    dataset = ["A", "A", "B", "B"]
    truth = ["x", "x", "y", "z"]
    text = ["pool drained on <*>", "pool drained on <*>", "pool drained on <*>", "node <*> rebooted"]
    got = bench.mixed_scores(dataset, ["g1", "g1", "g1", "g2"], text, truth, text)
    assert got["A"] == pytest.approx((1.0, 1.0, 1.0, 1.0))
    assert got["B"] == pytest.approx((1.0, 1.0, 1.0, 1.0))
    # two of B's statements in one group still show in B, and only there
    got = bench.mixed_scores(dataset, ["g1", "g1", "g2", "g2"], text, truth, text)
    assert got["A"][0] == 1.0 and got["B"][0] == 0.0


def test_mixed_mines_all_sets_as_one_source_and_reports_each(tmp_path):
    hosts = ["ana", "bo", "chen", "dara", "eli"]
    _write_full_set(
        tmp_path,
        "Relay",
        [
            (f"relay to {h} refused after {i} tries", "E1", "relay to <*> refused after <*> tries")
            for i, h in enumerate(hosts)
        ],
    )
    _write_full_set(
        tmp_path,
        "Pool",
        [(f"pool shard {i} drained in {i * 7} ms", "E1", "pool shard <*> drained in <*> ms") for i in range(4)],
    )

    run = subprocess.run(
        [sys.executable, str(BENCH), "--data", str(tmp_path), "--mixed"], capture_output=True, text=True, check=True
    )

    out = run.stdout.splitlines()
    assert "(mined 9 lines as one source" in run.stdout
    assert any(line.startswith("Relay ") for line in out) and any(line.startswith("Pool ") for line in out)
    assert out[-1].startswith("loghub labels=full mixed GA ours=1.000 ")


def test_shots_scores_sampled_lines_by_their_labels_weighted_by_the_lines_their_template_takes(tmp_path):
    # Invented: a set's 2k lines (the corrected labels) beside LILAC-style samples of its full-size
    # set, one `{"query", "answer"}` a line, variables as `{variables}`.
    rows = [(f"queue {k} drained after {k * 7} ms", "E1", "queue <*> drained after <*> ms") for k in range(20)]
    rows += [(f"peer 10.0.0.{k} said bye", "E2", "peer <*> said bye") for k in range(6)]
    folder = tmp_path / "data" / "Toy"
    folder.mkdir(parents=True)
    body = "".join(f'{i},"{c}",{e},"{t}"\n' for i, (c, e, t) in enumerate(rows, 1))
    (folder / "Toy_2k.log_structured_corrected.csv").write_text("LineId,Content,EventId,EventTemplate\n" + body)
    shots = tmp_path / "shots" / "Toy"
    shots.mkdir(parents=True)
    (shots / "64shot.json").write_text(
        '{"query": "queue 99 drained after 3 ms", "answer": "queue {variables} drained after {variables} ms"}\n'
        '{"query": "peer 10.0.0.9 said bye", "answer": "{variables} said bye"}\n'
        '{"query": "queue 99 drained after 3 ms", "answer": "queue {variables} drained after {variables} ms"}\n'
    )

    run = subprocess.run(
        [sys.executable, str(BENCH), "--data", str(tmp_path / "data"), "--shots", str(tmp_path / "shots")],
        capture_output=True,
        text=True,
        check=True,
    )

    # Two distinct lines: the queue line's text matches (it weighs 1 + its 20 lines), the peer's
    # does not (`peer <*> said bye` against a label that makes `peer` a variable too; 1 + 6 lines).
    assert run.stdout.strip().splitlines()[-1] == "loghub labels=full-sampled PA ours=0.500 weighted=0.750 (1 sets)"
