"""Bigram-Backcopy: the back-copy rule, one fixed bigram table per table_seed, and exact match that
scores the back-copies alone."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.errors import ConfigError
from workbench.tasks import build_task

FAST = settings(max_examples=25, deadline=None)


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@FAST
@given(seed=st.integers(0, 10**6), length=st.one_of(st.none(), st.integers(2, 90)),
       states=st.integers(2, 40), triggers=st.integers(1, 4))
def test_every_symbol_after_a_trigger_repeats_the_one_before_it(seed, length, states, triggers):
    task = build_task("bigram_backcopy", {"states": states, "triggers": triggers, "trigger_p": 0.4})
    batch = task.sample(16, gen(seed), length=length)
    tokens, targets, mask = batch.tokens, batch.targets, batch.loss_mask
    trigger = task.is_trigger(tokens) & mask
    rows, cols = trigger.nonzero(as_tuple=True)
    assert (cols >= 2).all()  # position 0 is BOS, position 1 the first symbol: never a trigger
    assert torch.equal(targets[rows, cols], tokens[rows, cols - 1])
    assert not (trigger[:, 1:] & trigger[:, :-1]).any()  # a copy is never a trigger
    assert not task.is_trigger(tokens[:, 1]).any()


def test_the_bigram_table_is_fixed_by_its_seed_and_drawn_from():
    task = build_task("bigram_backcopy", {"states": 4, "triggers": 2, "trigger_p": 0.3, "alpha": 1.0})
    assert torch.equal(task.table, build_task("bigram_backcopy", {"states": 4, "triggers": 2, "trigger_p": 0.3,
                                                                  "alpha": 1.0}).table)
    other = build_task("bigram_backcopy", {"states": 4, "triggers": 2, "trigger_p": 0.3, "alpha": 1.0, "table_seed": 1})
    assert not torch.equal(task.table, other.table)
    assert torch.allclose(task.table.sum(-1), torch.ones(4, dtype=torch.float64))
    assert torch.allclose(task.table[:, 4:], torch.full((4, 2), 0.15, dtype=torch.float64))
    # transitions out of ordinary symbols, counted over many sequences, follow the table
    batch = task.sample(4000, gen(0), length=40)
    first = task.vocab["a"]
    current, following = batch.tokens[:, 1:] - first, batch.targets[:, 1:] - first
    ordinary = current < 4
    counts = torch.zeros(4, 6, dtype=torch.float64)
    counts.index_put_((current[ordinary], following[ordinary]), torch.ones(int(ordinary.sum()), dtype=torch.float64),
                      accumulate=True)
    frequencies = counts / counts.sum(-1, keepdim=True)
    assert (frequencies - task.table).abs().max() < 0.02


def test_exact_match_scores_the_back_copies_alone():
    task = build_task("bigram_backcopy", {"trigger_p": 0.5})
    batch = task.sample(32, gen(3), length=30)
    copies = task.is_trigger(batch.tokens) & batch.loss_mask
    assert task.score(batch.targets, batch).all()
    # wrong everywhere but at the back-copies: still exact
    predictions = torch.where(copies, batch.targets, torch.zeros_like(batch.targets))
    assert task.score(predictions, batch).all()
    # one back-copy wrong: that sample fails, the others stand
    row, col = copies.nonzero()[0].tolist()
    predictions[row, col] = 0
    scores = task.score(predictions, batch)
    assert not scores[row] and scores.sum() == 31


@pytest.mark.parametrize("bad", [{"states": 1}, {"triggers": 0}, {"trigger_p": 1.0}, {"trigger_p": 0.0},
                                 {"alpha": 0}, {"min_length": 1}, {"min_length": 9, "max_length": 8}])
def test_bad_params_name_the_field(bad):
    with pytest.raises(ConfigError, match=f"task.{next(iter(bad))}|task.max_length"):
        build_task("bigram_backcopy", bad)


MASKED = {"objective": "masked", "trigger_p": 0.3}


@FAST
@given(seed=st.integers(0, 10**6), length=st.one_of(st.none(), st.integers(3, 70)), mask_p=st.floats(0.05, 0.5))
def test_masked_rows_hide_the_chosen_symbols_and_keep_the_chain(seed, length, mask_p):
    task = build_task("bigram_backcopy", {**MASKED, "mask_p": mask_p})
    batch = task.sample(16, gen(seed), length=length)
    original, shown, chosen = batch.targets, batch.tokens, batch.loss_mask
    lengths = batch.meta["length"]
    assert (original[:, 0] == task.vocab["^"]).all()
    assert (original[torch.arange(16), lengths + 1] == task.vocab["$"]).all()
    assert torch.equal(shown[~chosen], original[~chosen])  # what is not chosen is shown as it is
    assert (shown != task.vocab["MASK"])[~chosen].all()
    symbols = (original != 0) & (original != task.vocab["^"]) & (original != task.vocab["$"])
    assert not (chosen & ~symbols).any()  # BOS, EOS and PAD are never chosen
    # the chain is the next-symbol task's: after a trigger, the symbol before it again
    copies = task.copies(original)
    rows, cols = copies.nonzero(as_tuple=True)
    assert torch.equal(original[rows, cols], original[rows, cols - 2])
    # every row with a copy hides one behind MASK with its trigger and source shown, and scores it
    hidden = copies & chosen & (shown == task.vocab["MASK"])
    decided = hidden.clone()
    decided[:, 2:] &= ~chosen[:, 1:-1] & ~chosen[:, :-2]
    assert torch.equal(decided.any(1), copies.any(1))
    assert task.score(original, batch).all()


def test_masked_objective_chooses_mask_p_of_the_symbols_as_bert_does():
    task = build_task("bigram_backcopy", {**MASKED, "mask_p": 0.2})
    batch = task.sample(2000, gen(1), length=60)
    chosen = batch.loss_mask
    assert abs(chosen.float().sum() / (2000 * 60) - 0.2) < 0.02  # plus one copy a row, less its neighbours
    masked = (batch.tokens == task.vocab["MASK"])[chosen].float().mean()
    kept = (batch.tokens == batch.targets)[chosen].float().mean()
    assert 0.78 < masked < 0.86 and 0.08 < kept < 0.13  # 80% MASK (more with the forced copy), ~10% as is


def test_masked_exact_match_scores_the_decided_copies_alone():
    task = build_task("bigram_backcopy", MASKED)
    batch = task.sample(64, gen(5), length=40)
    scored = task.copies(batch.targets) & batch.loss_mask
    predictions = torch.where(scored, batch.targets, torch.zeros_like(batch.targets))
    assert task.score(predictions, batch).all()  # wrong at every other chosen symbol: still exact
    row, col = scored.nonzero()[0].tolist()
    if bool((batch.tokens[row, col - 2:col] == batch.targets[row, col - 2:col]).all()):
        predictions[row, col] = 0
        assert not task.score(predictions, batch)[row]


def test_the_next_symbol_task_is_unchanged_by_the_masked_option():
    task = build_task("bigram_backcopy", {})
    assert "MASK" not in task.vocab.symbols
    assert task.sequence_length(40) == 40 and build_task("bigram_backcopy", MASKED).sequence_length(40) == 42


@FAST
@given(seed=st.integers(0, 10**6), length=st.integers(3, 50), fillers=st.floats(0.05, 0.9))
def test_fillers_carry_nothing_and_keep_the_chain_and_its_copies(seed, length, fillers):
    task = build_task("bigram_backcopy", {**MASKED, "fillers": fillers})
    plain = build_task("bigram_backcopy", MASKED)
    batch = task.sample(16, gen(seed), length=length)
    filler = task.vocab[","]
    original, chosen = batch.targets, batch.loss_mask
    assert not (chosen & (original == filler)).any()  # a filler is never chosen
    assert torch.equal(batch.tokens[original == filler], original[original == filler])
    # without its fillers each row is a chain of `length` symbols with the plain task's rule
    for row in original:
        kept = row[(row != filler) & (row != 0)]
        assert len(kept) == length + 2 and kept[-1] == task.vocab["$"]
        symbols = kept[None, :]
        copies = plain.copies(symbols)
        cols = copies[0].nonzero().flatten()
        assert torch.equal(symbols[0, cols], symbols[0, cols - 2])
    # fillers never sit next to a trigger, so the copies and their decided scores read neighbours
    trigger = task.is_trigger(original)
    assert not ((original[:, 1:] == filler) & trigger[:, :-1]).any()
    assert not ((original[:, :-1] == filler) & trigger[:, 1:]).any()
    assert task.score(original, batch).all()
    assert batch.tokens.shape[1] <= task.sequence_length(length)


def test_fillers_are_a_delimiter_the_outlier_probe_counts():
    from workbench.probes.outliers import delimiter_ids

    task = build_task("bigram_backcopy", {**MASKED, "fillers": 0.2})
    assert task.vocab[","] in delimiter_ids(task.vocab)
    assert "," not in build_task("bigram_backcopy", MASKED).vocab.symbols


@pytest.mark.parametrize("bad", [{"objective": "bert"}, {"mask_p": 0.0}, {"mask_p": 1.0}, {"fillers": 1.0},
                                 {"fillers": 0.1, "objective": "next"}])
def test_bad_masked_params_name_the_field(bad):
    with pytest.raises(ConfigError, match=f"task.{next(iter(bad))}"):
        build_task("bigram_backcopy", bad)
