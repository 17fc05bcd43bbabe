"""Template mining: masks, grouping of real messages, stable ids, persistence, baseline diff."""

from __future__ import annotations

import json
import types

import polars as pl
import pytest

from forensics import ingest, mining
from forensics import schema as s
from forensics.errors import ParseError
from tests.conftest import SAMPLES


def _mask(text: str) -> str:
    return pl.DataFrame({"m": [text]}).select(mining.mask_expr(pl.col("m")))["m"][0]


@pytest.mark.parametrize(
    ("raw", "masked"),
    [
        ("Received request chatcmpl-6f1c0e1e2d8b4f7aa3c59d0b9a6e7f10: params", "Received request <REQ_ID>: params"),
        ("Finished request cmpl-77758764-541a-458f-b0cd-7a498d7d9725-0.", "Finished request <REQ_ID>."),
        ("pod 3f0c2a9e-1111-2222-3333-444455556666 died", "pod <UUID> died"),
        ("peer 10.0.4.13<44413> with status=12", "peer <IP> with status=<NUM>"),
        ("fe80::966d:ae03:8b:df78%ib0<53249> closed", "<IP> closed"),
        ("connect 10.244.1.7:8000 refused", "connect <IP> refused"),
        ('File "/usr/local/lib/python3.12/site.py", line 3', 'File "<PATH>", line <NUM>'),
        # a relative path is one value with its first segment (not `lmcache<PATH>`); with a line
        # number it is a source location
        ("loading lmcache/integration/vllm/config.yaml", "loading <PATH>"),
        ("raised at lmcache/integration/vllm/vllm_v1_adapter.py:1174", "raised at <SRC>"),
        ("[../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error", "[<SRC>] no error"),
        ("/opt/venv/lib/python3.12/site-packages/torch/cuda/__init__.py:734: UserWarning", "<SRC>: UserWarning"),
        # a source location is one value, file and line
        ("transport/net.cc:1302 -> 6", "<SRC> -> <NUM>"),
        ("[kv_sweep.c:412]: No block to reclaim", "[<SRC>]: No block to reclaim"),
        # an HTTP request line with a variable target: its protocol is a value too; a constant
        # target (a probe's) keeps its line
        (
            '10.0.0.7 "GET /v1/3f9a0c1e/models/detail HTTP/1.1" status: 200 len: 1893',
            '<IP> "GET <PATH> <PROTO>" status: <NUM> len: <NUM>',
        ),
        ('<IP> - "POST /v1/chat/completions HTTP/1.1" 200 OK', '<IP> - "POST <PATH> <PROTO>" <NUM> OK'),
        ('"GET /healthz HTTP/1.1" 200', '"GET /healthz HTTP/<NUM>" <NUM>'),
        ("comm 0x55fb6f3ce680 commId 0x795520212f433144", "comm <HEX> commId <HEX>"),
        ("killing llama-70b-7d9c5b8f6-t2q8j now", "killing <POD> now"),
        ("killing llama-2-70b-chat-6c8d9f7b54-x2kqp now", "killing <POD> now"),  # `-chat-` is no request id
        (
            "pleg was last seen active 3m5.30015447s ago; threshold is 3m0s",
            "pleg was last seen active <DUR> ago; threshold is <DUR>",
        ),
        ("GPU KV cache size: 1,843,200 tokens", "GPU KV cache size: <NUM> tokens"),
        # a list written as one word is one value; written as words, it keeps its values
        ("devices=0,1,2,3 peers 10.0.0.1,10.0.0.2", "devices=<NUM> peers <IP>"),
        ("KV pool: retries, 0, 3, 250, pending", "KV pool: retries, <NUM>, <NUM>, <NUM>, pending"),
        (
            "Initializing a V1 LLM engine (v0.8.5) with image vllm-openai:v0.9.1-evictfix",
            "Initializing a V1 LLM engine (<NUM>) with image vllm-openai:<NUM>-evictfix",
        ),
        ("Tried to allocate 2.50 GiB on gpu-node-3", "Tried to allocate <NUM> GiB on gpu-node-<NUM>"),
        ("added entries to the cafe", "added entries to the cafe"),
        ("ready=true,bootcompleted=false setLightsOn(true)", "ready=<BOOL>,bootcompleted=<BOOL> setLightsOn(<BOOL>)"),
        ("enable_prefix_caching: True", "enable_prefix_caching: <BOOL>"),
        ("it is true that it failed", "it is true that it failed"),  # a word in prose stays a word
        # a decimal is one number: its 8+ digit fraction is not a hex id
        ("KV transfer progress is : 0.047113092", "KV transfer progress is : <NUM>"),
        # a host with its port is one value; a key and its value stay apart
        ("Retrying connect to server: gpu-node-3:29500.", "Retrying connect to server: <HOST>."),
        ("headroom=<memory:10240>", "headroom=<memory:<NUM>>"),
        # an id of words and a long number joined by `_`, even one that never varies
        ("renew lease for [KVClient_PREFILL_8812930441_3]", "renew lease for [<ID>]"),
        ("Receiving block blk_-4402917730165538211", "Receiving block <ID>"),
        # a socket address as Java prints it: the slash and a name before it are the value's
        ("src: /10.0.7.21:41522 dest: /10.0.7.22:50010", "src: <IP> dest: <IP>"),
        ("Old: gpu-node-7/10.0.7.27:9000", "Old: <IP>"),
        # a URL is one value, whether its host is a name or an address
        ("GET http://10.0.0.1:8000/v1/models", "GET <PATH>"),
        ("split hdfs://10.0.0.1:9000/logs/a.log:0+512", "split <PATH>:<NUM>+<NUM>"),
        (
            "Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
            "Uvicorn running on <PATH> (Press CTRL+C to quit)",
        ),
        (
            "completion error localGid ::ffff:10.0.2.18 remoteGids ::ffff:10.0.4.20",
            "completion error localGid <IP> remoteGids <IP>",
        ),
        # a date and time however written is one value, the zone and year with it
        ("clock set: Thu Nov 10 18:21:22 MST 2005 ok", "clock set: <TS> ok"),
        ("built on 06/10/2013 17:26 GMT", "built on <TS> GMT"),
        ("maintenance 2025/7/2 19:42:40, sleep 2025/7/2 19:29:59", "maintenance <TS>, sleep <TS>"),
        ("[06/Dec/2025:04:47:44 +0000] GET", "[<TS>] GET"),
        # a NIC or a disk is a value: the template must not print the first one seen
        ("NET/IB : Using [0]mlx5_1:1/IB ; OOB eth0", "NET/IB : Using [<NUM>]<DEV>:<NUM>/IB ; OOB <DEV>"),
        ("ib0: link down, en0: channel changed", "<DEV>: link down, <DEV>: channel changed"),
        ("EXT4-fs (nvme0n1p1): mounted; sda: 512-byte sectors", "EXT4-fs (<DEV>): mounted; <DEV>: <NUM>-byte sectors"),
        ("the sdk and hdf5 writers", "the sdk and hdf5 writers"),
        ("fetching https://huggingface.co/acme/llama-9b/resolve/main", "fetching <PATH>"),  # not `https:/<PATH>`
        ("rank 0 failed to register buffSize 73400320", "rank <NUM> failed to register buffSize <NUM>"),
        # a hex value too short for HEX where a value starts; a GPU model is no hex
        ("a2=7b1e0c token=Token{c93f4d1 mgr=c@5e0b7a2 gpu=a100", "a2=<HEX> token=Token{<HEX> mgr=c@<HEX> gpu=a100"),
        # ... wherever its digit falls, after a colon too; a word of its own from seven long (a short
        # commit), so a driver's name stays a word
        ("window=Popup:dcab3e a3=ecfd1e", "window=Popup:<HEX> a3=<HEX>"),
        ("deployed 4be1b2d to pool; e1000e link up", "deployed <HEX> to pool; e1000e link up"),
        # a prompt or output as `%r` prints it is free text, numbers and quotes in it too, to its
        # closing quote or the end of the capped line; `output="..."` (a probe's error) is no prompt
        (
            "Received request cmpl-7f3a9c2e1b-0: prompt: 'Is 10.0.0.1 \\'up\\'?', params: SamplingParams(n=1)",
            "Received request <REQ_ID>: prompt: <TEXT>, params: SamplingParams(n=<NUM>)",
        ),
        ("Generated response chatcmpl-x: output: \"it's 42", "Generated response chatcmpl-x: output: <TEXT>"),
        (
            "Receive: obj=GenerateReqInput(text='Why is 2+2 4?', stream=True)",
            "Receive: obj=GenerateReqInput(text=<TEXT>, stream=<BOOL>)",
        ),
        ('Probe failed output="dial tcp: connection refused"', 'Probe failed output="dial tcp: connection refused"'),
        # a sign where a value starts is the number's; inside a name it is a dash
        ("auto=-1, index:-1 offset -24.0 on gpu-node-3", "auto=<NUM>, index:<NUM> offset <NUM> on gpu-node-<NUM>"),
    ],
)
def test_named_masks_turn_variables_into_named_tokens(raw, masked):
    assert _mask(raw) == masked


def _ids(messages: list[str], source: str = "x") -> list[str]:
    ids, _, _ = mining.cluster(pl.Series([source] * len(messages)), pl.Series(messages))
    return ids.to_list()


def test_cache_corruption_messages_with_different_blocks_share_a_template():
    a, b, c = _ids(
        [
            "Cache corruption detected in block 88123: stored hash 0x9f3a1c77 does not match the chunk hash",
            "Cache corruption detected in block 12: stored hash 0x1b22e0c4 does not match the chunk hash",
            "Storing KV cache for 512 out of 2048 tokens",
        ]
    )
    assert a == b != c


def test_logged_requests_with_different_prompts_share_one_template():
    prompts = ["Summarise the incident", "Write a haiku about GPUs", "What is 2+2? Answer: 'four'", "hi"]
    lines = [
        f"Received request chatcmpl-{i:x}e1a: prompt: {p!r}, params: SamplingParams(n=1, temperature=0.7), "
        "prompt_token_ids: None, lora_request: None."
        for i, p in enumerate(prompts * 3)
    ]
    ids = _ids([*lines, "Added request chatcmpl-9e1a."])

    assert len(set(ids[:-1])) == 1
    assert ids[-1] != ids[0]


def test_watchdog_timeouts_of_all_ranks_and_versions_group_together_apart_from_other_c10d_lines():
    ids = _ids(
        [
            "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5730, OpType=ALLREDUCE, NumelIn=128, NumelOut=128, Timeout(ms)=600000) ran for 600009 milliseconds before timing out.",
            "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=203441, OpType=ALLREDUCE, NumelIn=32064, NumelOut=0, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.",
            "[PG ID 2 PG GUID 3 Rank 1] To avoid data inconsistency, we are taking the entire process down.",
        ],
        source="torch",
    )
    assert ids[0] == ids[1] != ids[2]


def test_a_variable_that_takes_two_to_four_words_splits_into_one_template_per_word():
    ids, names, _ = mining.cluster(
        pl.Series(["k8s-event"] * 5),
        pl.Series(["Started container vllm"] * 3 + ["Started container prometheus"] * 2),
    )
    assert ids[0] == ids[2] != ids[3] == ids[4]
    assert sorted(names[mining.TEMPLATE]) == ["Started container prometheus", "Started container vllm"]


def test_a_variable_with_many_words_or_with_ids_stays_one_template():
    many = _ids([f"Pulling image for container {w}" for w in ("vllm", "router", "prometheus", "sidecar", "init")])
    ids = _ids(["Preempted sequence seq1f2e3d4c", "Preempted sequence seq9a8b7c6d"])
    assert len(set(many)) == 1 and len(set(ids)) == 1


def test_a_literal_after_masked_values_in_an_early_position_joins_their_template():
    routes = [
        "Route: /v1/rerank, Methods: POST",
        "Route: /v2/rerank, Methods: POST",
        "Route: /invocations, Methods: POST",
    ]
    assert len(set(_ids(routes, source="vllm"))) == 1


def test_only_the_first_line_of_a_multiline_event_is_mined():
    a, b = _ids(
        [
            "EngineCore encountered a fatal error.\nTraceback (most recent call last):\n  File x",
            "EngineCore encountered a fatal error.\nother stack",
        ]
    )
    assert a == b


def test_a_non_ascii_first_line_is_mined_without_the_next_line():
    # polars' str.find counts bytes and str.slice characters: a cut at a found offset ran
    # past a first line holding Cyrillic, CJK or an ellipsis into the traceback below it.
    messages = [
        "Ошибка KV-кэша: блок 7 повреждён\nTraceback (most recent call last):",
        "Ошибка KV-кэша: блок 9 повреждён\nz",
    ]
    ids, names, _ = mining.cluster(pl.Series(["vllm", "vllm"]), pl.Series(messages))
    assert ids[0] == ids[1]
    assert "\n" not in names[mining.TEMPLATE][0] and "Traceback" not in names[mining.TEMPLATE][0]


def test_the_same_text_from_two_sources_gets_two_templates():
    ids, names, _ = mining.cluster(pl.Series(["vllm", "nccl"]), pl.Series(["connection closed", "connection closed"]))
    assert ids[0] != ids[1] and names.height == 2


def test_template_ids_do_not_depend_on_row_order_or_run():
    ev = ingest(SAMPLES / "gpu-oom").events
    one = mining.mine(ev)
    shuffled = ev.sample(fraction=1.0, shuffle=True, seed=3)
    two = mining.mine(shuffled)
    assert (
        one.templates.select(mining.TEMPLATE_ID, mining.TEMPLATE)
        .sort(mining.TEMPLATE_ID)
        .equals(two.templates.select(mining.TEMPLATE_ID, mining.TEMPLATE).sort(mining.TEMPLATE_ID))
    )
    back = dict(zip(shuffled[s.FILE] + ":" + shuffled[s.LINE].cast(pl.String), two.template_ids, strict=True))
    fwd = dict(zip(ev[s.FILE] + ":" + ev[s.LINE].cast(pl.String), one.template_ids, strict=True))
    assert back == fwd


def test_mined_sample_has_the_templates_the_story_needs():
    r = mining.mine(ingest(SAMPLES / "cache-corruption").events)
    t = r.templates
    corrupt = t.filter(pl.col(mining.TEMPLATE).str.starts_with("Cache corruption detected in block <NUM>"))
    assert corrupt.height == 1 and corrupt[s.SOURCE][0] == "kv-store" and corrupt[s.LEVEL][0] == "ERROR"
    raw = [p.read_text() for p in (SAMPLES / "cache-corruption").rglob("*.log")]
    n_store = sum(x.count("LMCache ERROR: Cache corruption detected in block") for x in raw)
    n_watchdog = sum(x.count("] Watchdog caught collective operation timeout") - x.count("what():") for x in raw)
    assert corrupt[mining.COUNT][0] == n_store and corrupt["example_file"][0] and corrupt["example_line"][0] > 0
    watchdog = t.filter(pl.col(mining.TEMPLATE).str.contains("Watchdog caught collective operation timeout"))
    assert watchdog.height == 1 and watchdog[mining.COUNT][0] == n_watchdog
    assert r.template_ids.null_count() == 0


def test_templates_round_trip_through_plain_json(tmp_path):
    t = mining.mine(ingest(SAMPLES / "healthy").events).templates
    path = tmp_path / "known.json"
    mining.save_templates(t, path)
    doc = json.loads(path.read_text())
    assert doc["version"] == mining.TEMPLATES_FILE_VERSION and doc["window"]["seconds"] > 3000
    back, span = mining.load_templates(path)
    assert span == doc["window"]["seconds"]
    assert back.sort(mining.TEMPLATE_ID).equals(
        t.select(mining.TEMPLATE_ID, mining.TEMPLATE, s.SOURCE, pl.col(mining.COUNT).cast(pl.Int64)).sort(
            mining.TEMPLATE_ID
        )
    )


def test_a_drain3_jsonpickle_state_is_rejected_not_executed(tmp_path):
    bad = tmp_path / "state.json"
    bad.write_text(
        '{"py/object": "os.system", "py/reduce": [{"py/function": "os.system"}, {"py/tuple": ["touch pwned"]}]}'
    )
    with pytest.raises(ParseError) as e:
        mining.load_templates(bad)
    assert "forensics templates" in e.value.hint
    assert not (tmp_path / "pwned").exists()


def _counts(rows):
    return pl.DataFrame(
        rows,
        schema={mining.TEMPLATE_ID: pl.String, mining.TEMPLATE: pl.String, s.SOURCE: pl.String, mining.COUNT: pl.Int64},
        orient="row",
    )


def test_baseline_diff_marks_new_gone_changed_and_same():
    base = _counts(
        [("a", "steady <NUM>", "vllm", 1000), ("b", "went away", "vllm", 50), ("c", "health ok", "uvicorn", 100)]
    )
    cur = _counts(
        [
            ("a", "steady <NUM>", "vllm", 1010),
            ("c", "health ok", "uvicorn", 900),
            ("d", "Cache corruption detected in block <NUM>", "kv-store", 8),
        ]
    )
    d = {r["template_id"]: r for r in mining.diff(cur, 3600.0, base, 3600.0).iter_rows(named=True)}
    assert d["d"]["status"] == "NEW" and d["d"]["score"] > 2
    assert d["b"]["status"] == "GONE"
    assert d["c"]["status"] == "CHANGED" and d["c"]["rate_ratio"] == pytest.approx(9.0)
    assert d["a"]["status"] == "SAME" and d["a"]["p_value"] > 0.5


def test_diff_accounts_for_unequal_window_lengths():
    base = _counts([("a", "x", "vllm", 100)])
    cur = _counts([("a", "x", "vllm", 10)])
    row = mining.diff(cur, 360.0, base, 3600.0).row(0, named=True)
    assert row["status"] == "SAME" and row["rate_ratio"] == pytest.approx(1.0)


# --- bad input ---------------------------------------------------------------------------


def test_empty_huge_variable_only_and_non_ascii_messages_are_mined():
    msgs = [
        "",
        "x" * 1_000_000,
        "0x1f 12 10.0.0.1 88 7",
        "Ошибка кэша в блоке 17",
        "キャッシュ破損 ブロック 18",
        " ".join(f"w{i}" for i in range(5000)),
    ]
    ids, names, _ = mining.cluster(pl.Series(["x"] * len(msgs)), pl.Series(msgs))
    assert ids.null_count() == 0 and names[mining.TEMPLATE].str.len_chars().max() <= mining.MAX_CHARS + 10


def test_a_template_explosion_is_bounded_and_warned_about():
    import random

    rng = random.Random(5)
    word = lambda: "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9)))  # noqa: E731
    msgs = [" ".join(word() for _ in range(rng.randint(3, 6))) for _ in range(3000)]
    cfg = mining.MinerConfig(explode_warning=100, max_clusters=500)
    ids, names, warnings = mining.cluster(pl.Series(["noisy"] * len(msgs)), pl.Series(msgs), cfg)
    assert ids.null_count() == 0
    assert warnings and "noisy" in warnings[0]


def _free_text_and_statements(n: int, seed: int) -> list[str]:
    """Chat-like free text (a few common words, many rare ones), lines that join now and then, and a
    statement."""
    import random

    rng = random.Random(seed)
    common = ["the", "a", "is", "to", "gpu", "cache"]
    rare = ["".join(rng.choice("klmnopqrstuvwxyz") for _ in range(5)) for _ in range(400)]
    lines = []
    ids = ["v1x", "v2y", "v3z", "r4s", "t5u", "w6k", "q7p", "j8m"]  # (digits: Drain routes them to `<*>`)
    for i in range(n):
        words = [rng.choice(common if rng.random() < 0.4 else rare) for _ in range(rng.randint(3, 9))]
        lines.append(" ".join(words))
        # one big leaf of lines that now and then share enough words in place to join
        lines.append(" ".join([rng.choice(ids) for _ in range(3)] + [rng.choice(common[:5]) for _ in range(5)]))
        lines.append(
            f"Evicted block {i} from pool {rng.choice(['gpu', 'cpu', 'disk', 'remote', 'nvme'])} after {i % 7} ms"
        )
    return lines


def test_free_text_gets_the_templates_drain_alone_would_give_it(monkeypatch):
    from forensics.mining import drain

    lines = pl.Series(_free_text_and_statements(3000, seed=11))
    sources = pl.Series(["app"] * len(lines))
    fast, names, _ = mining.cluster(sources, lines)

    monkeypatch.setattr(drain, "LEAF_SCAN", 10**9)  # every leaf scanned as Drain3 does
    monkeypatch.setattr(drain, "_alone", lambda lines, sim_th: [False] * len(lines))  # every line through Drain
    ours = drain._new_drain

    def drain3_routing(cfg):  # Drain3's own routing and leaf clean-up
        from drain3.drain import Drain

        miner = ours(cfg)
        miner.add_seq_to_prefix_tree = types.MethodType(Drain.add_seq_to_prefix_tree, miner)
        return miner

    monkeypatch.setattr(drain, "_new_drain", drain3_routing)
    plain, _, _ = mining.cluster(sources, lines)

    assert fast.equals(plain)
    assert 1000 < names.height < 6000  # (most free text alone, some joined: the index had work to do)
    evicted = names.filter(pl.col(mining.TEMPLATE).str.starts_with("Evicted block"))[mining.TEMPLATE]
    assert evicted.to_list() == ["Evicted block <NUM> from pool <*> after <NUM> ms"]  # the statement among it


def test_a_line_that_shares_too_few_words_in_place_is_alone():
    from forensics.mining.drain import MASKED, _alone

    lines = [
        ["worker", "3", "joined", "the", "ring"],
        ["worker", "4", "joined", "the", "ring"],
        ["zebra", "quartz", "joined", "violet", "ember"],  # one word in place shared: 1 < 0.4 * 5
        ["worker", MASKED, "left", "early", "today"],  # `worker` shared; MASKED never counts
        ["the", "ring", "joined", "worker", "3"],  # the same words, none in place
    ]

    assert _alone(lines, 0.4) == [False, False, True, True, True]


def test_cli_templates_saves_and_diffs_against_a_baseline(tmp_path):
    import subprocess
    import sys

    known = tmp_path / "known.json"
    p = subprocess.run(
        [sys.executable, "-m", "forensics", "templates", str(SAMPLES / "healthy"), "--save", str(known), "-q"],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    out = tmp_path / "out"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "forensics",
            "templates",
            str(SAMPLES / "cache-corruption"),
            "--baseline",
            str(known),
            "--out",
            str(out),
            "--top",
            "100",
        ],
        capture_output=True,
        text=True,
        env={"COLUMNS": "250", "PATH": ""},
    )
    assert p.returncode == 0, p.stderr
    assert "NEW" in p.stdout and "Cache corruption detected in block <NUM>" in p.stdout
    changes = pl.read_parquet(out / "template_changes.parquet")
    assert changes.filter(pl.col("template").str.starts_with("Cache corruption"))["status"][0] == "NEW"
    events = pl.read_parquet(out / "events.parquet")
    assert "template_id" in events.columns
    # The masked values travel with each row: the corrupted block numbers, in order.
    corrupt = events.filter(pl.col("message").str.starts_with("Cache corruption detected in block"))
    assert corrupt.height > 0
    for msg, params in corrupt.select("message", "params").iter_rows():
        assert params[0] == msg.split("block ")[1].split()[0].rstrip(":,."), (msg, params)
        assert [p for p in params if p.startswith("chatcmpl-")] == [w for w in msg.split() if w.startswith("chatcmpl-")]


def _templates(messages: list[str], source: str = "kernel") -> list[str]:
    ids, names, _ = mining.cluster(pl.Series([source] * len(messages)), pl.Series(messages))
    text = dict(zip(names[mining.TEMPLATE_ID], names[mining.TEMPLATE], strict=True))
    return [text[i] for i in ids]


def test_a_device_number_that_differs_between_members_is_a_variable_not_the_first_ones_literal():
    # The dedup key collapses digits, so these were one key shown by its first member: a
    # report named mlx5_0 for a flap of mlx5_1.
    msgs = [
        "mlx5_0: Port module event: module 0, Cable plugged",
        "mlx5_1: Port module event: module 0, Cable plugged",
        "eth0: Link is Down",
        "eth1: Link is Down",
        "eth1: Link is Down",
        "[rank0]: watchdog caught collective operation timeout",
        "[rank5]: watchdog caught collective operation timeout",
    ]
    got = _templates(msgs)
    # a NIC is a value wherever it is (`<DEV>`), and a parameter: the report shows which one
    assert got[0] == got[1] and got[0].startswith("<DEV>: Port module event")
    assert got[2] == got[3] == got[4] == "<DEV>: Link is Down"
    assert pl.select(mining.params_expr(pl.lit(msgs[1]))).item().to_list()[0] == "mlx5_1"
    # any other name with a number in it varies inside the punctuation its members share
    assert got[5] == got[6] == "[<*>]: watchdog caught collective operation timeout"
    # each member's own value is still in its message (the event), not lost


def test_a_literal_every_member_shares_stays_literal_and_named_masks_stay_named():
    got = _templates([f"cpu7: completion error on qp {n}" for n in (17, 4242, 99)])
    assert set(got) == {"cpu7: completion error on qp <NUM>"}
    got = _templates(["GPU 0 fell off the bus", "GPU 3 fell off the bus"], source="nvidia")
    assert len(set(got)) == 1 and "GPU 0" not in got[0]


def test_a_source_location_is_one_value_and_an_error_unwinding_through_several_files_is_one_template():
    # File and line are one value, as the full-size Loghub-2.0 labels read it; the words after it
    # name the statement. NCCL's unwinding (`file:line -> code`, one line a frame) is one template
    # across its frames, not a template a file.
    got = _templates([f"[kv_sweep.c:{n}]: No block to reclaim" for n in (412, 431)], source="kvd")
    assert set(got) == {"[<SRC>]: No block to reclaim"}
    got = _templates(["misc/socket.cc:538 -> 6", "transport/net.cc:1302 -> 6", "proxy.cc:1487 -> 6"], source="nccl")
    assert set(got) == {"<SRC> -> <NUM>"}


def test_a_variable_keeps_the_punctuation_all_its_values_share():
    # The corrected Loghub labels' convention, and a better read: `rhost=<*>`, `(<*>)`. (Five
    # values each: two to four would be an enum, split into one template per value.) A key's
    # value is a value even where it never varies (`tty=ssh`), as the full-size labels read it.
    names = ["alpha", "beta", "gamma", "delta", "omega"]
    got = _templates(
        [f"session opened for user {n} by (uid={n}) on the login node" for n in names]
        + [f"authentication failure for the login service; rhost={n} user={n} tty=ssh" for n in names]
        + [f"Back-off restarting failed container vllm in pod llama-{n}_serving({n})" for n in names]
    )
    assert set(got[:5]) == {"session opened for user <*> by (uid=<*>) on the login node"}
    assert set(got[5:10]) == {"authentication failure for the login service; rhost=<*> user=<*> tty=<*>"}
    # a closing bracket is kept only with its opener
    assert set(got[10:]) == {"Back-off restarting failed container vllm in pod <*>"}
    # ... and a package the values share (not a dotted id's first part)
    plugins = ["lora", "tensorizer", "fp8", "spec_decode", "prefix_cache"]
    got = _templates([f"Loaded plugin io.vllm.plugins.{p} for worker {i}" for i, p in enumerate(plugins)])
    assert set(got) == {"Loaded plugin io.vllm.plugins.<*> for worker <NUM>"}
    got = _templates([f"Routing table [BUS0.{p.upper()}] loaded" for p in plugins])
    assert set(got) == {"Routing table [<*>] loaded"}


def test_a_statement_whose_values_take_more_or_fewer_tokens_is_one_template():
    # Drain compares lines of one length: `4096 bytes (4.00 KB)` and `2097152 bytes (2.00 MB)`,
    # `12 ms` and `<1 ms`, would each be a template. The statement's words decide; each value is
    # one `<*>`, inside the punctuation it is written in. `bytes` is a word of the statement, so a
    # count without its size in units (`0 bytes sent`) is a statement of its own.
    got = _templates(
        [
            "NIXL transfer to decode-0 done, 4096 bytes (4.00 KB) sent, 0 bytes received, took 12 ms",
            "NIXL transfer to decode-0 done, 2097152 bytes (2.00 MB) sent, 512 bytes received, took 00:02",
            "NIXL transfer to decode-0 done, 0 bytes sent, 0 bytes received, took <1 ms",
            "NIXL transfer to decode-0 done, 16 bytes sent, 8 bytes received, took 00:01",
        ],
        source="nixl",
    )
    # (`decode-0`, a name with its number, is one value: `<*>`)
    sized = "NIXL transfer to <*> done, <*> bytes (<*>) sent, <*> bytes received, took <*>"
    counted = "NIXL transfer to <*> done, <*> bytes sent, <*> bytes received, took <*>"
    assert got == [sized, sized, counted, counted]
    got = _templates(
        [
            f"KV block kv_{k} offloaded to host memory (estimated size {size}, free {free})"
            for k, (size, free) in enumerate([("93.0 B", "317.5 KB"), ("5.2 KB", "14.0 KB"), ("1.1 MB", "2.2 GB")] * 3)
        ],
        source="lmcache",
    )
    assert set(got) == {"KV block <*> offloaded to host memory (estimated size <*>, free <*>)"}


def test_a_list_written_as_words_is_one_value_whatever_its_length():
    got = _templates(
        [
            "Ray worker got GPU IDs: [0, 1] on node gpu-node-3",
            "Ray worker got GPU IDs: [0, 1, 2, 3] on node gpu-node-4",
            "Ray worker got GPU IDs: [4] on node gpu-node-2",
        ],
        source="ray",
    )
    assert set(got) == {"Ray worker got GPU IDs: [<*>] on node <*>"}


def test_a_template_alone_keeps_its_units_and_a_keyed_value_stays_a_word():
    # Nothing to merge with: the unit is the statement's to say. And `rhost=<*> user=<*>` is not
    # `rhost=<*>` with a longer value: a key names a word of its own.
    assert set(_templates([f"Total memory: {n} MB, used: {n // 2} MB" for n in (64172, 96258, 2048)])) == {
        "Total memory: <NUM> MB, used: <NUM> MB"
    }
    names = ["alpha", "beta", "gamma", "delta", "omega"]
    got = _templates(
        [f"authentication failure; logname= uid=0 tty=ssh rhost={n}.example.net user={n}" for n in names]
        + [f"authentication failure; logname= uid=0 tty=ssh rhost={n}.example.net" for n in names]
    )
    assert len(set(got)) == 2 and got[0].endswith("user=<*>") and not got[-1].endswith("user=<*>")


def test_a_keyed_value_is_a_value_even_where_it_never_varies():
    # `tty=sshd` in every line is still the value of `tty`: `tty=<*>`, as the full-size labels read it.
    got = _templates([f"login refused; tty=sshd uid={n} filter (class=org.example.Gate)" for n in (0, 7)])
    assert set(got) == {"login refused; tty=<*> uid=<NUM> filter (class=<*>)"}
    # a quoted value (klog, logfmt) names the statement as much as it varies: it stays, but for
    # a name glued to a value (`serving/<POD>`)
    got = _templates(
        [f'"Probe failed" probeType="Liveness" pod="serving/vllm-{n}" err="context deadline exceeded"' for n in (0, 7)]
    )
    assert set(got) == {'"Probe failed" probeType="Liveness" pod="<*>" err="context deadline exceeded"'}


def test_a_keyed_enum_that_splits_a_statement_keeps_its_words():
    # Two probe results are two statements (`_split_enums`); writing both as `status=<*>` would
    # make them one again, so both keep their words.
    got = _templates(
        [f"probe result for worker: status=healthy pod=w{n}" for n in range(5)]
        + [f"probe result for worker: status=failing pod=w{n}" for n in range(5)]
    )
    assert set(got) == {
        "probe result for worker: status=healthy pod=<*>",
        "probe result for worker: status=failing pod=<*>",
    }


def test_a_name_glued_to_a_number_is_one_value_and_a_file_or_key_is_not():
    got = _templates([f"lease lost by node {h}-{n} after {n} s" for h in ("edge", "gpu-node") for n in (3, 11)])
    assert set(got) == {"lease lost by node <*> after <NUM> s"}
    got = _templates([f"dumping core.{n} for rank:{n} and 512-byte sectors" for n in (41, 97)])
    assert set(got) == {"dumping core.<NUM> for rank:<NUM> and <NUM>-byte sectors"}


def test_quoted_and_marked_values_and_long_runs_of_values_read_as_one_value():
    got = _templates([f"mount of share '{w}' failed on {n}" for w, n in (("nfs1", 1), ("scratch", 2))] * 3)
    assert set(got) == {"mount of share <*> failed on <NUM>"}
    # a `#`-marked value (`#57#`: an anonymised user) is the value, and joins what it is written with
    got = _templates([f"ticket accepted for user #{n}# (#{n}#@#{n + 1}#)." for n in (12, 40)])
    assert set(got) == {"ticket accepted for user <*> (<*>)."}
    # three or more values in a row are one; two stay two (`GET <*> <*>`-like pairs)
    got = _templates([f"ring 0 : {' '.join(str(r) for r in range(k))} done" for k in (4, 8)])
    assert set(got) == {"ring <*> : <*> done"}
    assert set(_templates([f"child init {n} {-n}" for n in (1, 2)])) == {"child init <NUM> <NUM>"}


def test_punctuation_alone_is_a_word_of_the_statement_not_a_value():
    got = _templates(
        [
            "<<<< ByteStream >>>> read of 476 bytes took 1.8 secs. to complete",
            "<<<< ByteStream >>>> read of 21 bytes took 0.5 sec. to complete",
        ]
    )
    assert set(got) == {"<<<< ByteStream >>>> read of <*> bytes took <*>. to complete"}


def test_a_statement_whose_subject_comes_first_is_one_template_across_many_subjects():
    # Drain routes by first tokens, so `<job>: scheduler ...` never meets its siblings. Many
    # subjects and a long statement: one template. Two subjects are an enum; `<key> set to <NUM>`
    # says too little to be one statement.
    jobs = ["kv-evictor", "weights-sync", "metrics-push", "lora-refresh", "cache-gc"]
    got = _templates(
        [f"{j}: scheduler told me to run this job; the start time is {n} seconds away" for j in jobs for n in (3, 14)]
    )
    assert set(got) == {"<*>: scheduler told me to run this job; the start time is <NUM> seconds away"}
    # a subject with a value in it joins them: where the subject is a value, it is no enum
    # (whichever of them Drain met first, and however few the words)
    odd = "weights.s3://3f0c2a9e-1111-2222-3333-444455556666/job/7: scheduler told me to run this job; the start time is 9 seconds away"
    for source in ("kernel", "cron", "x"):
        got = _templates(
            [odd] + [f"{j}: scheduler told me to run this job; the start time is 5 seconds away" for j in jobs], source
        )
        assert set(got) == {"<*>: scheduler told me to run this job; the start time is <NUM> seconds away"}
    one = f"{jobs[0]}: scheduler told me to run this job; the start time is 5 seconds away"
    assert len(set(_templates([odd, one]))) == 1
    got = _templates(
        [
            f"{j}: scheduler told me to run this job; the start time is {n} seconds away"
            for j in jobs[:2]
            for n in (3, 14)
        ]
    )
    assert len(set(got)) == 2
    keys = ["maxSessionTimeout", "minSessionTimeout", "tickTime", "initLimit", "syncLimit"]
    assert len(set(_templates([f"{k} set to {n}" for k in keys for n in (10, 20)]))) == len(keys)


_WORDS = [
    "sent",
    "received",
    "took",
    "transfer",
    "done,",
    "lifetime",
    "bytes",
    "KB)",
    "(<NUM>",
    "<NUM>",
    "<IP>",
    "ms",
    "uid=<NUM>",
]


def test_the_template_merges_do_not_depend_on_the_order_templates_come_in():
    # Shards finish in any order and Drain's clusters come out in any order: the merged text of
    # a template must be the same whichever came first.
    import random

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from forensics.mining.drain import merge_by_words, merge_leading_word

    template = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=9).map(" ".join)

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.tuples(st.sampled_from(["a", "b"]), template), min_size=1, max_size=12), st.integers(0, 99))
    def check(templates, seed):
        shuffled = list(templates)
        random.Random(seed).shuffle(shuffled)
        assert merge_by_words(templates) == merge_by_words(shuffled)
        assert merge_leading_word(templates, 3) == merge_leading_word(shuffled, 3)
        # merging is idempotent: the merged texts, merged again, stay as they are
        once = merge_by_words(templates)
        assert set(once) == set(templates)
        outputs = sorted({(src, t) for (src, _), t in once.items()})
        assert all(k[1] == v for k, v in merge_by_words(outputs).items())

    check()


def test_lines_of_keyed_values_are_one_template_by_their_keys():
    # A mail relay's line is its keys and their values: masked, the values say nothing, but the
    # keys are the statement's words (here the queue id and the host in the message id vary too).
    lines = [
        f"{qid}: from=root, size={size}, class=0, nrcpts=1, msgid=<{size}.{qid}@{host}>, relay=root@localhost"
        for qid, size, host in [
            ("kQ3vXbR2041871", 1838, "headnode-a"),
            ("kQ3vYcT7119020", 960, "headnode-b"),
            ("kQ3wAdU1230447", 2210, "login-3"),
            ("kQ3wBeV5302981", 743, "headnode-a"),
        ]
    ]
    assert len(set(_templates(lines, source="sendmail"))) == 1


def test_new_clusters_reach_the_leaves_drain3_would_put_them_in():
    # Our routing cleans a leaf up lazily, not on every new cluster; the tree must be Drain3's.
    from drain3.drain import Drain
    from drain3.template_miner_config import TemplateMinerConfig

    from forensics.mining import drain

    cfg = TemplateMinerConfig()
    cfg.drain_depth, cfg.drain_max_children, cfg.drain_sim_th = 5, 4, 0.4  # (routes by the first two tokens)
    ours, theirs = drain._new_drain(cfg), drain._new_drain(cfg)
    theirs.add_seq_to_prefix_tree = types.MethodType(Drain.add_seq_to_prefix_tree, theirs)
    words = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"]
    lines = [
        f"{words[i % 8]} {'n' + str(i % 5) if i % 3 else words[(i * 3) % 7]} {words[i % 5]} x{i % 4} tail"
        for i in range(300)
    ] + ["", "one", "two words"]
    for line in lines:
        assert ours.add_log_message(line)[0].cluster_id == theirs.add_log_message(line)[0].cluster_id

    def tree(miner, node):
        live = [c for c in node.cluster_ids if c in miner.id_to_cluster]
        return live, {k: tree(miner, child) for k, child in sorted(node.key_to_child_node.items())}

    assert tree(ours, ours.root_node) == tree(theirs, theirs.root_node)
    assert len(ours.root_node.key_to_child_node["5"].key_to_child_node) == 4  # (max_children reached)
