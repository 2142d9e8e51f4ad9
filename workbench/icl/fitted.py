"""The task-specific learners Garg et al. 2022 (arXiv 2208.01066, sec. 5) set beside a Transformer on
their richer function classes, fitted afresh on every prefix of every context:

- `two_layer_network`: for 2-layer ReLU networks, a network of the same shape (one hidden ReLU layer of
  100 units, biases, PyTorch's default init) trained by Adam (lr 5e-3, 100 steps, batches of 100
  examples: all of them here, where contexts are shorter) on the examples before each query, as the
  paper's code does.
- `greedy_tree`: for decision trees, CART grown greedily to depth 4 (the depth of the trees drawn), each
  split the (coordinate, threshold) that most lowers the squared error, thresholds halfway between two
  neighbouring values, a leaf predicting its examples' mean, as scikit-learn's DecisionTreeRegressor
  (max_depth=4) that the paper uses. Ties (common: leaf values repeat) go to the first coordinate and
  the earliest example's value, where scikit-learn draws the order of the coordinates at random.

Both take xs (B, k, d) and ys (B, k) and answer (B, k) like icl.baselines: entry i predicts y_i from the
examples before it, position 0 predicts 0. Both are batched over the B contexts (one network per
context, trained on its own loss); contexts are split into chunks to bound memory.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor

from .checks import context, count, positive

NETWORK_HIDDEN, NETWORK_STEPS, NETWORK_LR = 100, 100, 5e-3
GREEDY_TREE_DEPTH = 4
TIE = 1e-9  # relative: split scores this close count as equal
NETWORK_SEED = 0  # the networks' initialization: the same predictions for the same contexts


def two_layer_network(xs: Tensor, ys: Tensor, hidden: int = NETWORK_HIDDEN, steps: int = NETWORK_STEPS,
                      lr: float = NETWORK_LR) -> Tensor:
    """A fresh relu network x -> relu(x W1 + b1) w2 + b2 per context and prefix, `steps` full-batch Adam
    steps on the mean squared error of the examples before the query; trained in float32."""
    xs, ys, dtype = context(xs, ys)
    hidden, steps, lr = count(hidden, "hidden", 1), count(steps, "steps", 0), positive(lr, "lr")
    xs, ys = xs.float(), ys.float()
    generator = torch.Generator().manual_seed(NETWORK_SEED)
    preds = ys.new_zeros(ys.shape)
    for i in range(1, xs.shape[1]):
        parameters = _fresh_networks(xs.shape[0], xs.shape[2], hidden, generator)
        optimizer = torch.optim.Adam(parameters, lr=lr)
        with torch.enable_grad():
            for _ in range(steps):
                optimizer.zero_grad()
                loss = ((_network(parameters, xs[:, :i]) - ys[:, :i]) ** 2).mean(1).sum()
                loss.backward()
                optimizer.step()
        with torch.no_grad():
            preds[:, i] = _network(parameters, xs[:, i:i + 1])[:, 0]
    return preds.to(dtype)


def _fresh_networks(B: int, d: int, hidden: int, generator) -> list[Tensor]:
    """B networks initialized as torch.nn.Linear is: uniform in +-1/sqrt(fan_in), biases too."""
    def uniform(shape, fan_in):
        bound = 1 / math.sqrt(fan_in)
        return ((torch.rand(shape, generator=generator) * 2 - 1) * bound).requires_grad_()
    return [uniform((B, d, hidden), d), uniform((B, 1, hidden), d), uniform((B, hidden, 1), hidden),
            uniform((B, 1, 1), hidden)]


def _network(parameters: list[Tensor], xs: Tensor) -> Tensor:
    W1, b1, W2, b2 = parameters
    return (torch.relu(xs @ W1 + b1) @ W2 + b2).squeeze(-1)


def greedy_tree(xs: Tensor, ys: Tensor, depth: int = GREEDY_TREE_DEPTH, chunk: int = 512) -> Tensor:
    """CART of at most `depth` levels grown on the examples before each query, read at the query."""
    xs, ys, dtype = context(xs, ys)
    depth, chunk = count(depth, "depth", 1), count(chunk, "chunk", 1)
    preds = ys.new_zeros(ys.shape)
    for i in range(1, xs.shape[1]):
        for start in range(0, xs.shape[0], chunk):
            part = slice(start, start + chunk)
            preds[part, i] = _grow_and_read(xs[part, :i], ys[part, :i], xs[part, i], depth)
    return preds.to(dtype)


def _grow_and_read(X: Tensor, Y: Tensor, query: Tensor, depth: int) -> Tensor:
    """(B,) the prediction at `query` (B, d) of trees grown on X (B, n, d), Y (B, n). Nodes are numbered
    as in a heap; a node that cannot split sends everything left (threshold +inf)."""
    B, n, d = X.shape
    inner = 2 ** depth - 1
    feature = torch.zeros(B, inner, dtype=torch.long)
    threshold = torch.full((B, inner), math.inf, dtype=X.dtype)
    node = torch.zeros(B, n, dtype=torch.long)
    by_feature = X.transpose(1, 2)  # (B, d, n)
    left_of = (by_feature[:, :, None, :] <= by_feature[:, :, :, None]).to(X.dtype)  # (B, d, candidate, point)
    for level in range(depth):
        first, width = 2 ** level - 1, 2 ** level
        member = (node[:, None, :] == first + torch.arange(width)[None, :, None]).to(X.dtype)  # (B, node, point)
        left_count = torch.einsum("bcp,bdtp->bcdt", member, left_of)
        left_sum = torch.einsum("bcp,bdtp->bcdt", member * Y[:, None, :], left_of)
        total_count = member.sum(-1)[:, :, None, None]
        total_sum = (member * Y[:, None, :]).sum(-1)[:, :, None, None]
        right_count, right_sum = total_count - left_count, total_sum - left_sum
        # Minimizing the children's squared error is maximizing sum^2 / count over the two children.
        score = left_sum ** 2 / left_count.clamp_min(1) + right_sum ** 2 / right_count.clamp_min(1)
        valid = (left_count > 0) & (right_count > 0) & (member[:, :, None, :] > 0)  # thresholds at own points
        score = score.masked_fill(~valid, -math.inf).flatten(2)
        # Scores equal up to rounding (one partition reached by two coordinates, say) are ties: the first wins.
        top = score.max(-1, keepdim=True).values
        best = (score >= top - TIE * (1 + top.abs())).to(torch.uint8).argmax(-1)  # (B, node): d * n + t
        splits = valid.flatten(2).any(-1)
        f, t = best // n, best % n
        value = X[torch.arange(B)[:, None], t, f]  # (B, node): the candidate's own value
        values = by_feature.gather(1, f[:, :, None].expand(B, width, n))  # (B, node, point) on f
        above = values.masked_fill((member == 0) | (values <= value[:, :, None]), math.inf).min(-1).values
        cut = torch.where(splits, (value + above) / 2, math.inf)
        feature[:, first:first + width], threshold[:, first:first + width] = f, cut
        mine_f, mine_cut = feature.gather(1, node), threshold.gather(1, node)
        right = X.gather(2, mine_f[:, :, None]).squeeze(-1) > mine_cut
        node = 2 * node + 1 + right.long()
    at = torch.zeros(B, 1, dtype=torch.long)
    for _ in range(depth):
        right = query.gather(1, feature.gather(1, at)) > threshold.gather(1, at)
        at = 2 * at + 1 + right.long()
    in_leaf = (node == at).to(X.dtype)
    return (in_leaf * Y).sum(-1) / in_leaf.sum(-1).clamp_min(1)
