"""Where a model's heads look while it writes an addition answer (position coupling: Cho et al.
2024a, arXiv 2405.20671).

To write answer digit i (significance i, units = 1) a model must read the operand digits of
significance i and, for the carry, i - 1. With coupled positions a 1-layer Transformer learns
exactly that: each head's query puts its weight on operand digits of the same significance as the
digit it is predicting, or one below. This module measures it on the addition task's layout

    ^ a_n .. a_1 + b_n .. b_1 = c_1 c_2 .. c_{n+1} $      (answer reversed: least significant first)

where the query at '=' predicts c_1 and the query at c_k predicts c_{k+1}. Every key is sorted into
one group relative to the predicted significance i:
    "same"   operand digits of significance i,
    "below"  operand digits of significance i - 1 (the carry),
    "other digits"  operand digits of any other significance,
    "other tokens"  everything else (BOS, '+', '=', answer digits already written).
"""
from __future__ import annotations

import pandas as pd
import torch

from ..evaluate import eval_mode

GROUPS = ("same", "below", "other digits", "other tokens")


def key_groups(symbols: list[str], predicted: int) -> list[str]:
    """The group of every key position for a query predicting the digit of significance `predicted`."""
    plus, equals = symbols.index("+"), symbols.index("=")
    n = plus - 1
    groups = []
    for position in range(len(symbols)):
        if 1 <= position <= n:
            significance = n - position + 1
        elif plus < position < equals:
            significance = n - (position - plus - 1)
        else:
            groups.append("other tokens")
            continue
        groups.append("same" if significance == predicted else
                      "below" if significance == predicted - 1 else "other digits")
    return groups


def attention_by_significance(pattern: torch.Tensor, symbols: list[str]) -> pd.DataFrame:
    """One example's attention, (H, T, T), sorted by the significance of what each key holds.

    Returns tidy rows (head, predicted, group, mass, top): for every head and every answer digit
    predicted (significance 1..n+1), the attention mass on each key group, and whether the
    group holds the key with the largest weight."""
    equals = symbols.index("=")
    n = symbols.index("+") - 1
    rows = []
    for predicted in range(1, n + 2):
        query = equals + predicted - 1
        groups = key_groups(symbols[: query + 1], predicted)  # causal: keys up to the query
        for head in range(pattern.shape[0]):
            weights = pattern[head, query, : query + 1].float()
            top = groups[int(weights.argmax())]
            for group in GROUPS:
                chosen = torch.tensor([g == group for g in groups])
                rows.append({"head": head, "predicted": predicted, "group": group,
                             "mass": float(weights[chosen].sum()), "top": group == top})
    return pd.DataFrame(rows, columns=["head", "predicted", "group", "mass", "top"])


@torch.no_grad()
def addition_attention(model, task, length: int, n: int = 16, seed: int = 0, layer: int = 0) -> pd.DataFrame:
    """attention_by_significance over n fresh test examples of `length` digits per operand, for
    one attention layer of a trained model; an `example` column tells them apart."""
    with eval_mode(model):
        batch = task.sample(n, torch.Generator().manual_seed(seed), length=length, train=False)
        name = f"blocks.{layer}.mixer.hook_pattern"
        _, cache = model.run_with_cache(batch.tokens, position_ids=batch.position_ids, names=[name])
    frames = []
    for example in range(n):
        symbols = [task.vocab.symbols[int(t)] for t in batch.tokens[example]]
        frames.append(attention_by_significance(cache[name][example], symbols).assign(example=example))
    return pd.concat(frames, ignore_index=True)


def significance_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per head and key group: the mean attention mass, and how often the group holds the top key.

    The last answer digit (the overflow, significance n+1) has no operand digit of its own
    significance, so it is left out: it would count against "same" for a reason of layout."""
    longest = table.groupby("example")["predicted"].transform("max") if "example" in table else table.predicted.max()
    rows = table[table.predicted < longest]
    summary = rows.groupby(["head", "group"]).agg(mass=("mass", "mean"), top=("top", "mean")).reset_index()
    summary["group"] = pd.Categorical(summary["group"], GROUPS, ordered=True)
    return summary.sort_values(["head", "group"]).reset_index(drop=True)


def reads_same_and_below(table: pd.DataFrame) -> dict[str, float]:
    """The headline numbers: averaged over answer digits (and examples), the share of the heads'
    attention on operand digits of the same significance or one below, and the share of answer
    digits for which some head's strongest key is one of those digits."""
    summary = significance_summary(table)
    on_digits = summary[summary.group.isin(["same", "below"])].groupby("head")["mass"].sum()
    longest = table.groupby("example")["predicted"].transform("max") if "example" in table else table.predicted.max()
    rows = table[(table.predicted < longest) & table.group.isin(["same", "below"])]
    keys = ["example", "predicted"] if "example" in rows else ["predicted"]
    covered = rows.groupby(keys)["top"].any()
    return {"mass_same_or_below": float(on_digits.mean()), "best_head_mass": float(on_digits.max()),
            "top_key_same_or_below": float(covered.mean()) if len(covered) else 0.0}
