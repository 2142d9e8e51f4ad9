"""Sorting attention by significance on addition: the layout, a hand-made pattern, a real model."""
from __future__ import annotations

import torch

from workbench.config import RunConfig
from workbench.models import build_model
from workbench.probes.addition_attention import (GROUPS, addition_attention, attention_by_significance, key_groups,
                                                 reads_same_and_below, significance_summary)
from workbench.tasks import build_task

# ^ a3 a2 a1 + b3 b2 b1 = c1 c2 c3 c4 $   (n = 3)
SYMBOLS = list("^123+456=9753$")


def test_key_groups_follow_significance_in_both_operands():
    groups = key_groups(SYMBOLS, predicted=2)
    # a: '1' sig 3, '2' sig 2, '3' sig 1; b: '4' sig 3, '5' sig 2, '6' sig 1
    assert groups[1:4] == ["other digits", "same", "below"]
    assert groups[5:8] == ["other digits", "same", "below"]
    assert {groups[i] for i in (0, 4, 8, 9, 10)} == {"other tokens"}


def pattern_reading(offset: int, heads: int = 2) -> torch.Tensor:
    """Every answer query of head 0 looks only at operand a's digit of significance predicted - offset."""
    T = len(SYMBOLS)
    pattern = torch.zeros(heads, T, T)
    pattern[:, :, 0] = 1.0  # default: everything on BOS
    equals, n = SYMBOLS.index("="), 3
    for predicted in range(1, n + 2):
        query = equals + predicted - 1
        significance = predicted - offset
        if 1 <= significance <= n:
            pattern[0, query] = 0.0
            pattern[0, query, n - significance + 1] = 1.0
    return pattern


def test_a_head_reading_the_same_significance_is_found():
    table = attention_by_significance(pattern_reading(offset=0), SYMBOLS)
    assert set(table.group) == set(GROUPS)
    summary = significance_summary(table)
    head0 = summary[summary["head"] == 0].set_index("group")
    assert head0.loc["same", "mass"] == 1.0 and head0.loc["same", "top"] == 1.0
    head1 = summary[summary["head"] == 1].set_index("group")
    assert head1.loc["other tokens", "mass"] == 1.0
    numbers = reads_same_and_below(table)
    assert numbers["best_head_mass"] == 1.0 and numbers["top_key_same_or_below"] == 1.0
    assert numbers["mass_same_or_below"] == 0.5  # one of two heads


def test_a_head_reading_two_digits_up_counts_as_other_digits():
    # predicting significance 1..3 from the digit two above: only predicted 1 has one (sig 3)
    table = attention_by_significance(pattern_reading(offset=-2), SYMBOLS)
    numbers = reads_same_and_below(table)
    assert numbers["best_head_mass"] == 0.0 and numbers["top_key_same_or_below"] == 0.0


def test_addition_attention_on_a_model_gives_one_row_per_head_digit_group_example():
    config = RunConfig.load(None, ["task.name=addition", "task.max_digits=4", "model.n_layers=1", "model.n_heads=2",
                                   "model.d_model=16", "model.pos=coupling"])
    task = build_task(config.task.name, config.task.params)
    model = build_model(config.model, len(task.vocab), seed=0)
    table = addition_attention(model, task, length=5, n=3)
    assert len(table) == 3 * 2 * (5 + 1) * len(GROUPS)
    masses = table.groupby(["example", "head", "predicted"])["mass"].sum()
    assert ((masses - 1).abs() < 1e-5).all()  # each query row of a softmax sums to 1
    assert model.training  # restored


def test_significance_bars_stack_one_bar_per_head_and_group():
    from workbench.figures.addition import significance_bars

    figure = significance_bars(significance_summary(attention_by_significance(pattern_reading(0), SYMBOLS)))
    assert [trace.name for trace in figure.data] == list(GROUPS)
    assert list(figure.data[0].y) == [1.0, 0.0]  # "same": head 0 reads it, head 1 does not
