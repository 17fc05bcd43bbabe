"""Dedup keys: the compiled hash groups rows exactly as the key text would."""

from __future__ import annotations

import re

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.mining import dedup

_RUN = re.compile(r"[0-9][0-9a-fA-F]*")


def _key_text(source: str | None, message: str | None, max_chars: int) -> tuple[str, str]:
    """The key by its definition: first line, capped, digit-led hex runs read `0`."""
    line = (message or "").split("\n", 1)[0][:max_chars]
    return source or "", _RUN.sub("0", line)


def _same_partition(groups: dedup.KeyGroups, texts: list[tuple[str, str]]) -> bool:
    by_text: dict[tuple[str, str], int] = {}
    for key, text in zip(groups.row_key.tolist(), texts, strict=True):
        if by_text.setdefault(text, key) != key:
            return False
    return len(by_text) == len(groups.first_row)


def test_numbers_ids_and_addresses_share_a_key_and_words_do_not():
    msgs = [
        "Cache corruption detected in block 88123: stored hash 0x9f3a1c77",
        "Cache corruption detected in block 7: stored hash 0x00ab",
        "Cache corruption detected in cafe 7: stored hash 0x00ab",
        "Cache corruption detected in block 7: stored hash 0x00ab\nTraceback (most recent call last):",
    ]
    g = dedup.key_groups(pl.Series(["kv-store"] * 4), pl.Series(msgs), 2000)
    assert g.row_key.tolist() == [0, 0, 1, 0]
    assert g.first_row.tolist() == [0, 2] and g.count.tolist() == [3, 1]


def test_the_same_text_from_two_sources_gets_two_keys():
    g = dedup.key_groups(pl.Series(["ab", "a"]), pl.Series(["c", "bc"]), 2000)
    assert g.row_key.tolist() == [0, 1]


def test_the_cap_counts_characters_not_bytes():
    head = "é" * 5
    g = dedup.key_groups(pl.Series(["x", "x"]), pl.Series([head + "a", head + "b"]), 5)
    assert g.row_key.tolist() == [0, 0]
    g = dedup.key_groups(pl.Series(["x", "x"]), pl.Series([head + "a", head + "b"]), 6)
    assert g.row_key.tolist() == [0, 1]


def test_hashes_do_not_depend_on_row_order():
    msgs = pl.Series([f"worker {w} freed block {i}" for i in range(50) for w in ("alpha", "beta")])
    src = pl.Series(["vllm"] * len(msgs))
    one = dedup.key_groups(src, msgs, 2000)
    order = np.random.default_rng(1).permutation(len(msgs))
    two = dedup.key_groups(src, msgs.gather(order), 2000)
    assert sorted(zip(one.hash_hi.tolist(), one.hash_lo.tolist(), one.count.tolist(), strict=True)) == sorted(
        zip(two.hash_hi.tolist(), two.hash_lo.tolist(), two.count.tolist(), strict=True)
    )


_TEXT = st.text(alphabet=st.sampled_from(list("ab fF0129x:\n-é€") + ["\U0001f600"]), max_size=40)


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(st.tuples(st.sampled_from(["vllm", "nccl", None]), st.one_of(st.none(), _TEXT)), max_size=60),
    max_chars=st.integers(1, 30),
    skip=st.integers(0, 3),
    chunked=st.booleans(),
)
def test_rows_share_a_key_exactly_when_their_key_texts_are_equal(rows, max_chars, skip, chunked):
    """Inline (<= 12 bytes) and buffered strings, nulls, newlines, multibyte characters,
    sliced and multi-chunk columns: the hash partition equals the text partition."""
    src = pl.Series("s", [r[0] for r in rows], dtype=pl.String)
    msg = pl.Series("m", [r[1] for r in rows], dtype=pl.String)
    if chunked and len(rows) > 2:
        half = len(rows) // 2
        src = pl.concat([src[:half], src[half:]], rechunk=False)
        msg = pl.concat([msg[:half], msg[half:]], rechunk=False)
    src, msg = src[skip:], msg[skip:]
    groups = dedup.key_groups(src, msg, max_chars)
    texts = [_key_text(a, b, max_chars) for a, b in zip(src.to_list(), msg.to_list(), strict=True)]
    assert _same_partition(groups, texts)
    assert groups.count.sum() == len(texts)
    assert all(groups.row_key[f] == k for k, f in enumerate(groups.first_row.tolist()))
