"""Replay: traces, the V1 block pool, each fault variant's detection, invariants, attention numerics, CLI."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay import fastsim, policies, traces
from replay.block_pool import BlockPool
from replay.scheduler import Config, simulate_reference
from replay.simulate import simulate
from tests.conftest import REPO, SHARED, write


def _trace(tmp_path: Path, n: int = 120, rate: float = 40.0, seed: int = 3) -> Path:
    """Conversation-like requests: 60% extend an earlier prompt's 512-token block chain."""
    rng = random.Random(seed)
    convs, next_id, rows, t = [], 1, [], 0.0
    for _ in range(n):
        t += rng.expovariate(rate)
        base = list(rng.choice(convs)) if convs and rng.random() < 0.6 else []
        ids = base + list(range(next_id, next_id + rng.randint(1, 2)))
        next_id += len(ids) - len(base)
        convs.append(ids)
        rows.append(
            {
                "timestamp": int(t * 1000),
                "input_length": len(ids) * 512 - rng.randrange(300),
                "output_length": rng.randint(20, 120),
                "hash_ids": ids,
            }
        )
    p = tmp_path / "trace.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def _run(path: Path, policy: str, blocks: int, scale: float = 1.0):
    tr = traces.scale(traces.load(path), scale)
    return simulate(
        tr.requests,
        policies.load_policy(policy),
        Config(num_blocks=blocks, max_num_seqs=64, max_batched_tokens=4096, check_every=25),
    )


# --- traces ---------------------------------------------------------------------------


def test_jsonl_reader_validates_rows_with_named_reasons(tmp_path):
    p = write(
        tmp_path / "t.jsonl",
        '{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}\n'
        '{"timestamp": 5, "input_length": 0, "output_length": 5, "hash_ids": [3]}\nnot json\n'
        '{"timestamp": 9, "input_length": 5000, "output_length": 5, "hash_ids": [4]}\n',
    )
    tr = traces.load(p)
    assert len(tr.requests) == 1 and tr.requests[0].prefix_ids == (1, 2)
    assert tr.rejected == {"zero prompt tokens": 1, "bad json": 1, "hash_ids shorter than the prompt": 1}


def test_a_trace_line_of_the_wrong_shape_is_rejected_not_a_crash(tmp_path):
    # A list, text or a list where a number goes, a non-number hash id, an infinite time,
    # brackets nested past the stack: each a named rejection, the good lines kept.
    good = '{"timestamp": 0, "input_length": 100, "output_length": 10}\n'
    p = write(
        tmp_path / "t.jsonl",
        good + "[1, 2]\n"
        '{"timestamp": 5, "input_length": "abc", "output_length": 10}\n'
        '{"timestamp": 5, "input_length": [1], "output_length": 10}\n'
        '{"timestamp": 9, "input_length": 50, "output_length": 5, "hash_ids": ["x"]}\n'
        '{"timestamp": Infinity, "input_length": 50, "output_length": 5}\n'
        '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}\n" + good.replace("0,", "10,", 1),
    )
    tr = traces.load(p)
    assert [r.arrival_s for r in tr.requests] == [0.0, 0.01]
    assert tr.rejected == {"not a JSON object": 1, "not a number": 4, "bad json": 1}


def test_an_azure_row_short_of_its_cells_is_rejected_not_a_crash(tmp_path):
    p = write(
        tmp_path / "a.csv",
        "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:47\n"
        "2023-11-16 18:15:50.9951690,1200,3\n",
    )
    tr = traces.load(p)
    assert [r.prompt_tokens for r in tr.requests] == [374, 1200]
    assert tr.rejected == {"unparsable row": 1}


def test_azure_csv_reader_gives_private_prefixes(tmp_path):
    p = write(
        tmp_path / "a.csv",
        "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,1200,3\n",
    )
    tr = traces.load(p)
    assert [r.prompt_tokens for r in tr.requests] == [374, 1200]
    assert tr.requests[1].arrival_s == pytest.approx(4.3146, abs=1e-3)
    assert not set(tr.requests[0].prefix_ids) & set(tr.requests[1].prefix_ids)


def test_rate_scaling_compresses_time_and_superposes_with_separate_namespaces(tmp_path):
    tr = traces.load(_trace(tmp_path, n=50))
    x4 = traces.scale(tr, 4)
    assert len(x4.requests) == 200
    assert x4.rate == pytest.approx(4 * tr.rate, rel=0.05)
    ids = [set(r.prefix_ids) for r in x4.requests]
    firsts = {r.prefix_ids[0] >> 40 for r in x4.requests}
    assert firsts == {0, 1, 2, 3} and len(ids) == 200


@pytest.mark.parametrize(("factor", "n"), [(1.0, 30), (2.5, 70), (4.0, 199), (16.0, 5), (0.5, 10), (3.0, 10_000)])
def test_the_head_of_a_scaled_trace_is_the_same_as_scaling_it_all_and_cutting(tmp_path, factor, n):
    tr = traces.load(_trace(tmp_path, n=50))
    assert traces.scaled_head(tr, factor, n).requests == traces.scale(tr, factor).requests[:n]


def test_incident_load_is_the_first_doubling_that_fills_the_pool_as_the_logs_did(tmp_path):
    from replay.run import incident_load

    tr = traces.load(_trace(tmp_path, n=120, rate=2.0))
    cfg = Config(num_blocks=1200, max_num_seqs=64, max_batched_tokens=4096)
    scale, peak = incident_load(tr, cfg, 0.9)
    assert scale > 1 and peak >= 0.9
    below = simulate(traces.scaled_head(tr, scale / 2, 8000).requests, policies.Policy(), cfg)
    assert below.peak_kv_usage < 0.9
    assert incident_load(tr, cfg, 2.0, max_scale=8.0)[0] == 8.0  # never reached: stops at the cap


@pytest.mark.skipif(not (SHARED / "traces").is_dir(), reason="shared traces absent")
def test_public_traces_load():
    d = SHARED / "traces"
    assert len(traces.load(d / "mooncake_fast25_synthetic_trace.jsonl").requests) > 3000
    assert len(traces.load(d / "azure2023_AzureLLMInferenceTrace_code.csv").requests) > 1000


# --- policies ---------------------------------------------------------------------------


def test_correct_policy_never_corrupts_even_when_the_pool_saturates(tmp_path):
    r = _run(_trace(tmp_path), "lru", blocks=400, scale=4)
    assert r.peak_kv_usage == 1.0 and (r.preemptions > 0 or r.max_waiting > 0)
    assert r.corrupted_requests == 0 and r.invariant_violations == 0 and r.finished == r.requests


def test_evict_live_is_silent_below_saturation_and_corrupts_at_it(tmp_path):
    path = _trace(tmp_path)
    calm = _run(path, "lru-evict-live", blocks=20000)
    assert calm.peak_kv_usage < 1.0 and calm.corrupted_requests == 0
    hot = _run(path, "lru-evict-live", blocks=400, scale=4)
    assert hot.corrupted_requests > 0 and hot.first_corruption["how"].startswith("its block was overwritten")
    # The tell: a full cache with nothing preempted.
    assert hot.peak_kv_usage == 1.0 and hot.preemptions == 0


@pytest.mark.parametrize("name", ["stale-hash", "double-free", "floor-blocks", "slot-off-by-one"])
def test_each_fault_variant_is_detected(tmp_path, name):
    r = _run(_trace(tmp_path, n=200), name, blocks=300, scale=4)
    assert r.corrupted_requests > 0 or r.invariant_violations > 0
    if r.corrupted_requests:
        assert {"step", "time_s", "request", "block", "how"} <= set(r.first_corruption)


class _ShortSighted(policies.Policy):
    """A user policy (here: the correct one under another class) runs on the reference simulator."""

    name = "short-sighted"


@pytest.mark.parametrize("name", list(policies.BUILTIN))
def test_compiled_simulator_gives_the_reference_result_for_every_built_in_policy(tmp_path, name):
    # Saturated, chunked, preempting, with sampled numerics and frequent full checks: every
    # counter, percentile, first corruption, first violation and attention error must agree.
    tr = traces.scale(traces.load(_trace(tmp_path, n=160, seed=11)), 4)
    for cfg in (
        Config(
            num_blocks=300, max_num_seqs=48, max_batched_tokens=2048, check_every=7, numerics_every=13, stall_steps=2000
        ),
        Config(num_blocks=5000, max_num_seqs=16, max_batched_tokens=8192, check_every=50, numerics_every=40),
    ):
        fast = dataclasses.asdict(fastsim.simulate(tr.requests, policies.load_policy(name), cfg))
        ref = dataclasses.asdict(simulate_reference(tr.requests, policies.load_policy(name), cfg))
        assert (fast.pop("engine"), ref.pop("engine")) == ("compiled", "reference")
        assert fast == ref


def test_requests_in_any_order_replay_as_in_arrival_order(tmp_path):
    # Captured requests need not come sorted (a merged capture, a user's list): both simulators
    # admit by (arrival, id), and tokens/s counts from the earliest arrival, not the list's first.
    tr = traces.scale(traces.load(_trace(tmp_path, n=160, seed=5)), 4)
    shuffled = list(tr.requests)
    random.Random(1).shuffle(shuffled)
    cfg = Config(num_blocks=400, max_num_seqs=32, max_batched_tokens=2048, check_every=11)
    for name in ("lru", "lru-evict-live"):
        ordered = dataclasses.asdict(fastsim.simulate(tr.requests, policies.load_policy(name), cfg))
        fast = dataclasses.asdict(fastsim.simulate(shuffled, policies.load_policy(name), cfg))
        ref = dataclasses.asdict(simulate_reference(shuffled, policies.load_policy(name), cfg))
        ref["engine"] = "compiled"
        assert fast == ordered == ref
        assert fast["tokens_per_s"] > 0 and fast["finished"] == len(shuffled)


def test_a_policy_that_leaks_blocks_stops_as_stalled_instead_of_spinning_forever(tmp_path):
    # double-free hands out blocks that stay referenced: at this load the pool ends up too small
    # for the requests left, which then preempt each other without ever finishing.
    tr = traces.scale(traces.load(_trace(tmp_path, n=160, seed=11)), 4)
    cfg = Config(num_blocks=300, max_num_seqs=48, max_batched_tokens=2048, stall_steps=1000)
    leaky = simulate(tr.requests, policies.DoubleFree(), cfg)
    assert leaky.stalled and leaky.finished < leaky.requests
    correct = simulate(tr.requests, policies.Policy(), cfg)
    assert not correct.stalled and correct.finished > leaky.finished


def test_built_in_policies_run_compiled_and_user_policies_on_the_reference(tmp_path):
    tr = traces.load(_trace(tmp_path, n=40))
    cfg = Config(num_blocks=400, max_num_seqs=16)
    assert simulate(tr.requests, policies.Policy(), cfg).engine == "compiled"
    mine = simulate(tr.requests, _ShortSighted(), cfg)
    assert mine.engine == "reference" and mine.finished == 40 and mine.corrupted_requests == 0


def test_a_user_policy_can_be_plugged_as_module_and_class(tmp_path):
    p = policies.load_policy("replay.policies:StaleHash")
    assert p.name == "stale-hash" and p.fault
    from replay.errors import PolicyError

    with pytest.raises(PolicyError, match="unknown policy 'nope'") as e:
        policies.load_policy("nope")
    assert "lru" in e.value.hint


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["alloc", "free", "touch"]), st.integers(1, 6)), min_size=1, max_size=60))
def test_random_operation_sequences_keep_the_invariants_under_the_correct_policy(ops):
    pool = BlockPool(24, policies.Policy())
    held: list[list] = []
    refs: dict[int, int] = {}
    for i, (op, n) in enumerate(ops):
        if op == "alloc":
            got = pool.get_new_blocks(n)
            if got is not None:
                for b in got:
                    pool.cache(b, hash((i, b.block_id)))
                    refs[b.block_id] = refs.get(b.block_id, 0) + 1
                held.append(got)
        elif op == "touch" and held:
            blocks = held[n % len(held)]
            pool.touch(blocks)
            for b in blocks:
                refs[b.block_id] += 1
            held.append(list(blocks))
        elif op == "free" and held:
            blocks = held.pop(n % len(held))
            pool.free_blocks(blocks)
            for b in blocks:
                refs[b.block_id] -= 1
        pool.check({k: v for k, v in refs.items() if v > 0})
        assert pool.num_violations == 0, pool.violations


# --- attention ------------------------------------------------------------------------


torch = pytest.importorskip("torch")


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 4),
    st.integers(1, 4),
    st.sampled_from([8, 16, 32]),
    st.sampled_from([4, 16]),
    st.integers(0, 2**31 - 1),
)
def test_paged_attention_matches_dense_on_random_shapes_with_partial_blocks(seqs, heads, dim, bs, seed):
    from replay.attention import dense_attention, paged_attention

    g = torch.Generator().manual_seed(seed)
    lens = torch.randint(1, 4 * bs + 3, (seqs,), generator=g)
    nblk = int(((lens + bs - 1) // bs).sum()) + 1
    kc, vc = torch.randn(nblk, bs, heads, dim, generator=g), torch.randn(nblk, bs, heads, dim, generator=g)
    perm, tables, used = (torch.randperm(nblk - 1, generator=g) + 1).tolist(), [], 0
    for L in lens.tolist():
        k = (L + bs - 1) // bs
        tables.append(perm[used : used + k])
        used += k
    width = max(map(len, tables))
    bt = torch.tensor([t + [0] * (width - len(t)) for t in tables])
    q = torch.randn(seqs, heads, dim, generator=g)
    out = paged_attention(q, kc, vc, bt, lens)
    for i, L in enumerate(lens.tolist()):
        pos = torch.arange(L)
        ref = dense_attention(q[i], kc[bt[i, pos // bs], pos % bs], vc[bt[i, pos // bs], pos % bs])
        assert float((out[i] - ref).norm() / ref.norm()) < 1e-5


def test_a_wrong_block_table_entry_shows_up_as_attention_error():
    from replay.attention import dense_attention, paged_attention

    g = torch.Generator().manual_seed(1)
    kc, vc = torch.randn(6, 4, 2, 8, generator=g), torch.randn(6, 4, 2, 8, generator=g)
    q = torch.randn(1, 2, 8, generator=g)
    true = torch.tensor([[1, 2, 3]])
    stale = torch.tensor([[1, 5, 3]])  # block 2 was reused: the table points at foreign KV
    pos = torch.arange(11)
    ref = dense_attention(q[0], kc[true[0, pos // 4], pos % 4], vc[true[0, pos // 4], pos % 4])
    bad = paged_attention(q, kc, vc, stale, torch.tensor([11]))[0]
    assert float((bad - ref).norm() / ref.norm()) > 1e-2


_TRITON_CHECK = """
import json, torch
from replay.attention import numerics_check, paged_attention
from replay.triton_attention import paged_decode
res = numerics_check(device="cpu", kernel="triton")
# Split-K: few sequences, long contexts, partials merged by log-sum-exp; a stale table entry.
g = torch.Generator().manual_seed(7)
kc, vc = torch.randn(40, 8, 2, 32, generator=g), torch.randn(40, 8, 2, 32, generator=g)
bt = (torch.randperm(39, generator=g) + 1)[:36].view(2, 18).to(torch.int32)
lens = torch.tensor([141, 9])
q = torch.randn(2, 8, 32, generator=g)
ref = paged_attention(q, kc, vc, bt, lens)
res["split_errors"] = [float((paged_decode(q, kc, vc, bt, lens, splits=n) - ref).norm() / ref.norm()) for n in (2, 3, 5)]
stale = bt.clone(); stale[0, 4] = bt[1, 0]
res["stale_error"] = float((paged_decode(q, kc, vc, stale, lens) - ref).norm() / ref.norm())
print(json.dumps(res))
"""


def test_triton_paged_decode_kernel_matches_dense_attention_under_the_cpu_interpreter():
    """The GPU kernel's logic, checked on any machine: TRITON_INTERPRET=1 runs it with NumPy."""
    pytest.importorskip("triton")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    out = subprocess.run(
        [sys.executable, "-c", _TRITON_CHECK], env=env, cwd=REPO, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["kernel"] == "torch+triton"
    assert res["triton_max_rel_error"] < 1e-5
    assert max(res["split_errors"]) < 1e-5
    assert res["stale_error"] > 1e-2


# --- CLI ---------------------------------------------------------------------------------


def test_cli_compare_reproduces_with_the_fault_and_not_with_the_fix(tmp_path):
    path = _trace(tmp_path, n=150, rate=200.0)
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "forensics",
            "replay",
            str(path),
            "--compare",
            "lru-evict-live",
            "lru",
            "--blocks",
            "300",
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        env={"COLUMNS": "250", "PATH": ""},
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "o" / "replay.json").read_text())
    by = {r["policy"]: r for r in doc["runs"]}
    assert by["lru-evict-live"]["corrupted_requests"] > 0 and by["lru"]["corrupted_requests"] == 0
    assert "first corruption: request " in p.stdout and "first corruption: none" in p.stdout
    assert {r["trace"] for r in doc["runs"]} == {str(path)}  # a trace file is named by its path


def test_cli_lists_policies_marking_the_fault_variants():
    p = subprocess.run(
        [sys.executable, "-m", "forensics", "replay", "--list-policies"],
        capture_output=True,
        text=True,
        env={"COLUMNS": "250", "PATH": ""},
    )
    assert p.returncode == 0
    lines = {line.split()[0]: line for line in p.stdout.splitlines() if line.strip()}
    assert "correct" in lines["lru"] and "FAULT" in lines["lru-evict-live"] and len(lines) == 6


def test_sampled_replay_steps_show_corruption_as_attention_error(tmp_path):
    path = _trace(tmp_path)
    tr = traces.scale(traces.load(path), 4)
    cfg = Config(num_blocks=400, max_num_seqs=64, max_batched_tokens=4096, numerics_every=20)
    good = simulate(tr.requests, policies.Policy(), cfg)
    bad = simulate(tr.requests, policies.EvictLive(), cfg)
    assert good.attention_max_rel_error is not None and good.attention_max_rel_error < 1e-6
    assert bad.attention_max_rel_error > 1e-3
