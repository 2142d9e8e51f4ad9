"""String tasks and parity against plain-loop oracles: copy, reverse, sort (+ hint), selective
copy, parity with and without scratchpad."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.errors import ConfigError
from workbench.tasks import build_task

from task_samples import unpadded_samples

FAST = settings(max_examples=25, deadline=None)


def rows(task, batch):
    """Per sample: token ids of the prompt, masked answer ids, position ids (unpadded)."""
    out = []
    for sequence, mask, positions in unpadded_samples(batch):
        first = mask.index(True)
        assert all(mask[first:]) and not any(mask[:first])
        out.append((sequence[: first + 1], sequence[first + 1:], positions))
    return out


def gen(seed):
    return torch.Generator().manual_seed(seed)


lengths = st.one_of(st.none(), st.integers(1, 60))


@FAST
@given(seed=st.integers(0, 10**6), length=lengths, train=st.booleans())
def test_copy_and_reverse(seed, length, train):
    for name in ("copy", "reverse"):
        task = build_task(name, {"max_length": 8, "max_position": 20})
        eos, eq = task.vocab["$"], task.vocab["="]
        for prompt, answer, positions in rows(task, task.sample(16, gen(seed), length=length, train=train)):
            body = prompt[1:-1]
            assert prompt[-1] == eq and answer[-1] == eos
            assert answer[:-1] == (body if name == "copy" else body[::-1])
            assert length is None and 1 <= len(body) <= 8 or len(body) == length
            L = len(body)
            if name == "reverse":  # each symbol and its mirror in the answer share an id
                ids_in, ids_out = positions[1:L + 1], positions[L + 2:2 * L + 2]
                assert ids_out == ids_in[::-1]
                assert ids_in == list(range(ids_in[0], ids_in[0] + L)) and positions[L + 1] == ids_in[0] + L
                assert positions[0] == 0 and (train or ids_in[0] == 1)


@FAST
@given(seed=st.integers(0, 10**6), length=st.one_of(st.none(), st.integers(1, 30)), train=st.booleans())
def test_a_coupled_end_gives_bos_the_id_the_last_answer_symbol_looks_up(seed, length, train):
    """Copy predicts each next symbol from the id one above the current one, reverse from the id one
    below; with couple_end BOS holds that id after the answer's last symbol, and nothing else moves."""
    for name, step in (("copy", 1), ("reverse", -1)):
        plain = build_task(name, {"max_length": 8, "max_position": 20})
        coupled = build_task(name, {"max_length": 8, "max_position": 20, "couple_end": True})
        batch = coupled.sample(16, gen(seed), length=length, train=train)
        assert batch.tokens.equal(plain.sample(16, gen(seed), length=length, train=train).tokens)
        for prompt, answer, positions in rows(coupled, batch):
            L = len(prompt) - 2
            last_answer_symbol = positions[2 * L + 1] if L else None
            assert positions[0] == last_answer_symbol + step, "BOS holds the id looked up after the last symbol"
            assert train or length is None or max(positions) <= max(20, length + 1 + (name == "copy"))
            if train and (length or 0) <= 8:
                assert max(positions) <= 20, "every id of a training length stays inside the trained table"


@FAST
@given(seed=st.integers(0, 10**6), length=lengths, alphabet=st.sampled_from([3, 26, 40]), hint=st.sampled_from([0.0, 0.5]),
       train=st.booleans(), form=st.sampled_from(["successors", "pairs"]))
def test_sort_and_successor_hint(seed, length, alphabet, hint, train, form):
    task = build_task("sort", {"max_length": 12, "alphabet": alphabet, "hint": hint, "hint_form": form})
    batch = task.sample(16, gen(seed), length=length, train=train)
    assert batch.tokens.shape[1] <= task.sequence_length(length or 12)
    for (prompt, answer, _), is_hint in zip(rows(task, batch), batch.meta["hint"]):
        values, marker = prompt[1:-1], task.vocab.symbols[prompt[-1]]
        assert marker == (">" if is_hint else "=")
        if is_hint:
            order = sorted(range(len(values)), key=lambda i: (values[i], i))
            successor = {}
            for rank, i in enumerate(order):
                successor[i] = values[order[rank + 1]] if rank + 1 < len(order) else task.vocab["#"]
            expected = [successor[i] for i in range(len(values))]
            if form == "pairs":  # each element, then its successor
                expected = [t for i in range(len(values)) for t in (values[i], successor[i])]
            assert answer[:-1] == expected
        else:
            assert answer[:-1] == sorted(values)
    if not train or hint == 0.0:
        assert not batch.meta["hint"].any()


def test_sort_hint_fraction():
    batch = build_task("sort", {"hint": 0.3}).sample(2000, gen(0))
    assert 0.25 < batch.meta["hint"].float().mean() < 0.35


@FAST
@given(seed=st.integers(0, 10**6), length=st.one_of(st.none(), st.integers(4, 80)))
def test_selective_copy(seed, length):
    task = build_task("selective_copy", {"min_length": 4, "max_length": 10, "n_tokens": 4})
    blank = task.vocab["_"]
    for prompt, answer, _ in rows(task, task.sample(16, gen(seed), length=length)):
        region = prompt[1:-1]
        assert length is None and 4 <= len(region) <= 10 or len(region) == length
        data = [t for t in region if t != blank]
        assert len(data) == 4 and answer[:-1] == data


@FAST
@given(seed=st.integers(0, 10**6), length=lengths, scratchpad=st.booleans())
def test_parity(seed, length, scratchpad):
    task = build_task("parity", {"scratchpad": scratchpad})
    for prompt, answer, _ in rows(task, task.sample(16, gen(seed), length=length)):
        bits = [int(task.vocab.symbols[t]) for t in prompt[1:-1]]
        running, parities = 0, []
        for bit in bits:
            running ^= bit
            parities.append(running)
        expected = parities if scratchpad else parities[-1:]
        assert [int(task.vocab.symbols[t]) for t in answer[:-1]] == expected


@pytest.mark.parametrize("name,bad", [
    ("reverse", {"min_length": 0}), ("reverse", {"max_position": 3}), ("sort", {"hint": 1.5}), ("sort", {"hint_form": "both"}),
    ("sort", {"alphabet": 1}), ("selective_copy", {"n_tokens": 20}), ("selective_copy", {"n_tokens": 0}),
    ("parity", {"min_length": 5, "max_length": 2}), ("copy", {"alphabet": 40}),
    ("copy", {"max_length": 10, "max_position": 11, "couple_end": True}),
])
def test_bad_params(name, bad):
    with pytest.raises(ConfigError):
        build_task(name, bad)


def test_selective_copy_rejects_a_region_too_small():
    task = build_task("selective_copy", {"n_tokens": 4, "min_length": 4})
    with pytest.raises(ConfigError):
        task.sample(2, gen(0), length=3)
