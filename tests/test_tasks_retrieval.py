"""Retrieval, memorization and in-context Markov tasks against plain-loop oracles."""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.errors import ConfigError
from workbench.tasks import build_task

from task_samples import unpadded_samples

FAST = settings(max_examples=25, deadline=None)


def gen(seed):
    return torch.Generator().manual_seed(seed)


def rows(batch):
    """Per sample: the full unpadded token-id sequence and the loss mask over its predictions."""
    return [(sequence, mask) for sequence, mask, _ in unpadded_samples(batch)]


def prompt_answer(sequence, mask):
    first = mask.index(True)
    assert all(mask[first:])
    return sequence[: first + 1], sequence[first + 1:]


@FAST
@given(seed=st.integers(0, 10**6), length=st.one_of(st.none(), st.integers(1, 200)))
def test_passkey(seed, length):
    task = build_task("passkey", {"digits": 4})
    v = task.vocab
    for sequence, mask in rows(task.sample(12, gen(seed), length=length)):
        prompt, answer = prompt_answer(sequence, mask)
        assert prompt.count(v["K"]) == 1 and prompt[-1] == v["?"]
        where = prompt.index(v["K"])
        assert answer[:-1] == prompt[where + 1: where + 5]
        assert length is None or prompt.count(v["~"]) == length


@FAST
@given(seed=st.integers(0, 10**6), length=st.one_of(st.none(), st.integers(1, 16)))
def test_associative_recall(seed, length):
    task = build_task("associative_recall", {"n_keys": 16, "max_pairs": 6})
    for sequence, mask in rows(task.sample(12, gen(seed), length=length)):
        prompt, answer = prompt_answer(sequence, mask)
        context, query = prompt[1:-2], prompt[-1]
        pairs = dict(zip(context[0::2], context[1::2]))
        assert len(pairs) == len(context) // 2, "keys are distinct"
        assert answer[:-1] == [pairs[query]]


@FAST
@given(seed=st.integers(0, 10**6), length=st.one_of(st.none(), st.integers(1, 30)), seq_len=st.sampled_from([16, 64]))
def test_mqar(seed, length, seq_len):
    task = build_task("mqar", {"n_keys": 32, "max_pairs": 6, "seq_len": seq_len})
    batch = task.sample(12, gen(seed), length=length)
    for (sequence, mask), L in zip(rows(batch), batch.meta["length"]):
        L = int(L)
        context = sequence[1:1 + 2 * L]
        pairs = dict(zip(context[0::2], context[1::2]))
        assert len(pairs) == L
        asked = [sequence[t] for t, m in enumerate(mask) if m]
        assert sorted(asked) == sorted(pairs), "every key is asked once"
        for t, m in enumerate(mask):
            if m:
                assert t >= 1 + 2 * L and sequence[t + 1] == pairs[sequence[t]]
        assert sum(mask) == L


@FAST
@given(seed=st.integers(0, 10**6), length=st.one_of(st.none(), st.integers(1, 30)))
def test_mqar_with_hidden_answers_asks_the_same_and_shows_no_value_in_the_query_region(seed, length):
    shown = build_task("mqar", {"n_keys": 32, "max_pairs": 6, "seq_len": 32}).sample(12, gen(seed), length=length)
    hidden_task = build_task("mqar", {"n_keys": 32, "max_pairs": 6, "seq_len": 32, "show_answers": False})
    hidden = hidden_task.sample(12, gen(seed), length=length)
    assert torch.equal(hidden.targets, shown.targets) and torch.equal(hidden.loss_mask, shown.loss_mask)
    answered = hidden.loss_mask[:, :-1]  # the input after each answered position holds '_', not the value
    assert (hidden.tokens[:, 1:][answered] == hidden_task.vocab["_"]).all()
    unchanged = ~torch.cat([torch.zeros_like(answered[:, :1]), answered], 1)
    assert torch.equal(hidden.tokens[unchanged], shown.tokens[unchanged])


ZOOLOGY = {"n_keys": 32, "n_values": 32, "max_pairs": 6, "seq_len": 32, "show_answers": False,
           "filler": "random", "distinct_values": True}


@FAST
@given(seed=st.integers(0, 10**6), length=st.integers(1, 6))  # one length: one draw of slots, then the filler
def test_mqar_in_zoologys_variant_has_distinct_values_random_filler_and_the_same_queries(seed, length):
    """Zoology's generator: values without replacement; every empty slot and hidden answer a random
    key or value symbol (so distractor keys appear), where the marker variant has '_'."""
    task = build_task("mqar", ZOOLOGY)
    batch = task.sample(64, gen(seed), length=length)
    hidden = build_task("mqar", {**ZOOLOGY, "filler": "marker"}).sample(64, gen(seed), length=length)
    assert torch.equal(batch.loss_mask, hidden.loss_mask) and torch.equal(batch.targets, hidden.targets)
    assert (batch.tokens != task.vocab["_"]).all(), "no marker is left in Zoology's variant"
    for targets, mask in zip(batch.targets, batch.loss_mask):
        values = targets[mask].tolist()
        assert len(set(values)) == len(values), "a sample's values are distinct"
    filled = batch.tokens[hidden.tokens == task.vocab["_"]]
    keys_and_values = torch.tensor([task.vocab[s] for s in task.vocab.symbols[3:] if s != "_"])
    assert torch.isin(filled, keys_and_values).all() and len(filled.unique()) > 10, \
        "the filler is drawn from all the key and value symbols"


def test_mqar_zoology_options_are_checked():
    with pytest.raises(ConfigError, match="task.filler"):
        build_task("mqar", {"filler": "noise"})
    with pytest.raises(ConfigError, match="task.max_pairs"):
        build_task("mqar", {"n_keys": 32, "n_values": 4, "max_pairs": 6, "distinct_values": True})


def test_mqar_queries_follow_a_power_law():
    """Most queries come soon after the context, a few far away."""
    task = build_task("mqar", {"min_pairs": 4, "max_pairs": 4, "seq_len": 200})
    batch = task.sample(400, gen(0))
    where = batch.loss_mask.nonzero()[:, 1].float() - 9
    assert (where < 40).float().mean() > 0.5 and (where > 100).float().mean() > 0.05


@FAST
@given(seed=st.integers(0, 10**6), length=st.one_of(st.none(), st.integers(2, 100)))
def test_induction(seed, length):
    task = build_task("induction")
    at = task.vocab["@"]
    for sequence, mask in rows(task.sample(12, gen(seed), length=length)):
        prompt, answer = prompt_answer(sequence, mask)
        assert prompt.count(at) == 2 and prompt[-1] == at
        assert answer[:-1] == [prompt[prompt.index(at) + 1]]
        assert length is None or len(prompt) == length + 2


def test_memorize_the_training_set_is_the_table():
    task = build_task("memorize", {"table_size": 50, "key_length": 2, "n_keys": 8, "table_seed": 3})
    table = task.table()
    keys = [tuple(row[1:3]) for row, _ in rows(table)]
    assert len(keys) == 50 and len(set(keys)) == 50
    lookup = {tuple(seq[1:3]): seq[4] for seq, _ in rows(table)}
    for sequence, mask in rows(task.sample(500, gen(0))):
        assert lookup[tuple(sequence[1:3])] == sequence[4]
        assert mask == [False, False, False, True, True]
    same = build_task("memorize", {"table_size": 50, "key_length": 2, "n_keys": 8, "table_seed": 3}).table()
    other = build_task("memorize", {"table_size": 50, "key_length": 2, "n_keys": 8, "table_seed": 4}).table()
    assert torch.equal(same.tokens, table.tokens) and not torch.equal(other.tokens, table.tokens)


def test_memorize_huge_key_space():
    task = build_task("memorize", {"table_size": 100, "key_length": 12, "n_keys": 26})
    assert len({tuple(k) for k in task.keys.tolist()}) == 100


def markov_oracle(symbols, states, order, beta):
    """Plain-dict add-beta predictive loss per symbol."""
    counts, losses = {}, []
    for t, s in enumerate(symbols):
        if t < order:
            losses.append(math.log(states))
            continue
        context = tuple(symbols[t - order:t])
        row = counts.setdefault(context, [0] * states)
        losses.append(-math.log((row[s] + beta) / (sum(row) + states * beta)))
        row[s] += 1
    return losses


@FAST
@given(seed=st.integers(0, 10**6), length=st.one_of(st.none(), st.integers(1, 80)),
       states=st.integers(2, 5), order=st.integers(0, 2), beta=st.sampled_from([0.5, 1.0]))
def test_markov_bayes_loss_matches_a_counting_oracle(seed, length, states, order, beta):
    task = build_task("markov_icl", {"min_length": 4, "max_length": 30, "states": states, "order": order, "beta": beta})
    batch = task.sample(6, gen(seed), length=length)
    reference = task.bayes_loss(batch)
    first = task.vocab.symbols.index(task.vocab.symbols[3])
    for i, (sequence, mask) in enumerate(rows(batch)):
        assert all(mask)
        symbols = [t - first for t in sequence[1:]]
        assert all(0 <= s < states for s in symbols)
        expected = markov_oracle(symbols, states, order, beta)
        assert torch.allclose(reference[i, :len(expected)], torch.tensor(expected, dtype=torch.float64))
        assert (reference[i, len(expected):] == 0).all()


def test_markov_in_context_learning_beats_the_uniform_guess():
    task = build_task("markov_icl", {"min_length": 200, "max_length": 200, "states": 3, "order": 1})
    loss = task.bayes_loss(task.sample(64, gen(0)))
    assert loss[:, 150:].mean() < math.log(3) - 0.1


@pytest.mark.parametrize("name,bad", [
    ("associative_recall", {"max_pairs": 20, "n_keys": 10}), ("mqar", {"max_pairs": 40, "n_keys": 32}),
    ("mqar", {"power_a": 0.0}), ("passkey", {"digits": 0}), ("passkey", {"min_length": 0}),
    ("induction", {"min_length": 1}), ("memorize", {"table_size": 300, "n_keys": 4, "key_length": 4}),
    ("memorize", {"table_size": 0}), ("markov_icl", {"order": 9, "states": 8}), ("markov_icl", {"beta": 0}),
    ("markov_icl", {"states": 1}), ("mqar", {"unknown": 1}),
])
def test_bad_params(name, bad):
    with pytest.raises(ConfigError):
        build_task(name, bad)


def test_recall_rejects_more_pairs_than_keys_at_test_time():
    with pytest.raises(ConfigError):
        build_task("associative_recall", {"n_keys": 8, "max_pairs": 4}).sample(2, gen(0), length=9)
