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
