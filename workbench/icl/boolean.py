"""Learning algorithms for in-context Boolean functions, the references a model's accuracy per query
is read against (Bhattamishra et al. 2023, arXiv 2310.03016, compare with the same kinds).

Every learner takes bits (B, k, n) in {0, 1} and labels (B, k) in {0, 1} and returns (B, k) predicted
labels: entry i is predicted from x_i and the examples before it only.
"""
from __future__ import annotations

import itertools

import torch
from torch import Tensor


def elimination(bits: Tensor, labels: Tensor) -> Tensor:
    """The classic PAC learner of conjunctions: start from the conjunction of all 2n literals and drop
    every literal a positive example falsifies; predict 1 where every remaining literal holds. With
    no positive example yet it predicts 0 (the empty-consistent hypothesis says nothing is positive)."""
    B, k, n = bits.shape
    literals = torch.cat([bits, 1 - bits], -1).bool()  # x_j and not x_j, per example
    alive = torch.ones(B, 2 * n, dtype=torch.bool)
    out = torch.zeros(B, k, dtype=torch.long)
    for i in range(k):
        out[:, i] = (literals[:, i] | ~alive).all(-1).long()
        positive = labels[:, i].bool().unsqueeze(-1)
        alive &= ~positive | literals[:, i]
    return out


def disjunction_elimination(bits: Tensor, labels: Tensor) -> Tensor:
    """The mirror image for disjunctions: not(OR of literals) is a conjunction of negated literals,
    learned by elimination on the flipped labels."""
    return 1 - elimination(bits, 1 - labels)


def sparse_parity_vote(bits: Tensor, labels: Tensor, relevant: int) -> Tensor:
    """Bayes-optimal for a parity of `relevant` bits drawn uniformly: the majority vote of every such
    parity consistent with the examples so far (ties and no information: 0)."""
    B, k, n = bits.shape
    subsets = torch.zeros(n, 0, dtype=torch.long)
    columns = [torch.zeros(n, dtype=torch.long).index_fill_(0, torch.tensor(c), 1)
               for c in itertools.combinations(range(n), relevant)]
    subsets = torch.stack(columns, 1) if columns else subsets  # (n, H) membership
    predicted = (bits @ subsets) % 2  # (B, k, H): each hypothesis's label of each example
    consistent = torch.ones(B, subsets.shape[1], dtype=torch.bool)
    out = torch.zeros(B, k, dtype=torch.long)
    for i in range(k):
        ones = (predicted[:, i] * consistent).sum(-1)
        out[:, i] = (2 * ones > consistent.sum(-1)).long()
        consistent &= predicted[:, i] == labels[:, i:i + 1]
    return out


def nearest_neighbour(bits: Tensor, labels: Tensor) -> Tensor:
    """The label of the closest earlier example in Hamming distance (the earliest among ties); 0
    before any example."""
    B, k, n = bits.shape
    x = bits.float()
    distance = torch.cdist(x, x, p=1)  # (B, k, k)
    earlier = torch.ones(k, k, dtype=torch.bool).tril(-1)
    distance = distance.masked_fill(~earlier, float("inf"))
    # ties go to the earliest: add a tiny position term smaller than one bit
    distance = distance + torch.arange(k).float() * 1e-3
    nearest = distance.argmin(-1)
    out = labels.gather(1, nearest)
    out[:, 0] = 0
    return out


def learners(function: str, relevant: int) -> dict:
    """{display name: learner(bits, labels)} that apply to a function class."""
    chosen = {"nearest neighbour": nearest_neighbour}
    if function == "conjunction":
        chosen["elimination (optimal)"] = elimination
    elif function == "disjunction":
        chosen["elimination (optimal)"] = disjunction_elimination
    elif function == "parity":
        chosen["consistent-parity vote (optimal)"] = lambda bits, labels: sparse_parity_vote(bits, labels, relevant)
    return chosen
