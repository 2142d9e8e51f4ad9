"""Reading the gradient step a linear self-attention layer takes out of its weights.

Setting (Ahn et al. 2023; Gatmiry et al. 2024, arXiv 2410.08292): the task shows each example as one
token z_s = (x_s, y_s) and the query as (x_q, 0) (icl_linear_regression with task.pairs=true); the model
has no norms (model.norm=none), no MLP, and linear attention with the identity feature map, so one
block adds to the query's residual stream

    W_o (1/(t+1)) sum_{s<=t} (W_v h_s + b_v) ((W_k h_s + b_k) . (W_q h_q + b_q))          (one head)

with h = R z + (token embedding + read-in bias), R the read-in's weight. The model's prediction is
u . h (u the unembedding; no final norm). Keep only the part of the change in u . h_q that is
bilinear in y_s x_s and linear in x_q, which is the whole update when the layer takes one step of
preconditioned gradient descent from w = 0 (pred = x_q^T P (1/n) sum_s x_s y_s):

    a = u^T W_o W_v R[:, d]                  (how much of y_s the value carries into the prediction)
    M = R[:, :d]^T W_k^T W_q R[:, :d]        (the key-query form on x_s and x_q)
    change = (1/(t+1)) sum_s y_s x_s^T (a M) x_q = x_q^T (a M^T) (1/(t+1)) sum_s x_s y_s

so the layer's step matrix is P = a M^T (route 1: y_s in the value, x_s in the key), times n / (n + 1) at the query of a sequence of n examples
(the layer divides by t + 1 = n + 1 keys, the query itself among them, where gradient descent divides
by n). A second route gives the same y_s x_s x_q monomial: x_s in the value and y_s in the key,
    change += (1/(t+1)) sum_s y_s x_s^T (R[:, :d]^T g)(R[:, d]^T W_k^T W_q R[:, :d]) x_q,  g = W_v^T W_o^T u,
a matrix of rank 1 (one direction of x_s); P is the sum of both routes, transposed. With several heads,
their P's add. In the gradient-descent form (model.gd_form=true: value c_h (h . o)/|o| per
head, written along o, queries and keys reading Pi h with Pi = I - o o^T / |o|^2) the same reading gives
g = (u . o) c_h o / |o| in place of W_v^T W_o^T u, and Pi R in place of R in the key-query form. The other terms (x_s x_s^T, y_s^2, the biases) are not part
of P; a model that runs gradient descent keeps them small.
"""
from __future__ import annotations

import torch
from torch import Tensor

from ..models.linear import effective_weight


def step_matrix(model, block: int = 0, examples: int | None = None) -> Tensor:
    """(d, d) the preconditioner P that block `block`'s linear self-attention applies per loop (see
    the module's docstring), in float64. examples: n, the examples before the query; given, P is
    scaled by n / (n + 1) so that one step of preconditioned_gradient_descent with P matches the layer."""
    mixer = model.blocks[block].mixer
    if getattr(mixer.config, "feature_map", None) != "identity" or model.read_in is None:
        raise ValueError("step_matrix reads a linear attention layer with the identity feature map that reads "
                         "vectors (model.mixer=linear_attention, model.feature_map=identity)")
    R = model.read_in.weight.detach().double()  # (D, d + 1)
    d = R.shape[1] - 1
    Rx, Ry = R[:, :d], R[:, d]
    H, hd, qd = mixer.n_heads, mixer.head_dim, mixer.qk_dim
    qk = effective_weight(mixer.qk).detach().double().view(2, H, qd, -1)  # q rows, then k rows, per head
    u = effective_weight(model.unembed).detach().double()[0]  # (D,)
    seen_x, seen_y = Rx, Ry  # what queries and keys see of x and y
    if getattr(mixer, "gd_form", False):
        o = mixer.write.detach().double()
        seen_x = Rx - torch.outer(o, o @ Rx) / (o @ o)
        seen_y = Ry - o * (o @ Ry) / (o @ o)
        scale = mixer.value_scale.detach().double()
        values = [(u @ o) * scale[h] * o / o.norm() for h in range(H)]  # (D,): the prediction's change per unit input
    else:
        Wv = effective_weight(mixer.v).detach().double().view(H, hd, -1)
        Wo = effective_weight(mixer.out).detach().double().view(-1, H, hd)
        values = [Wv[h].T @ Wo[:, h].T @ u for h in range(H)]
    B = torch.zeros(d, d, dtype=torch.float64)  # change = (1/(t+1)) sum_s y_s x_s^T B x_q
    for h in range(H):
        form = qk[1, h].T @ qk[0, h]  # k^T q as a form on the stream
        B = B + (values[h] @ Ry) * (seen_x.T @ form @ seen_x)  # y_s in the value, x_s in the key
        B = B + torch.outer(Rx.T @ values[h], seen_y @ form @ seen_x)  # x_s in the value, y_s in the key
    P = B.T
    return P * (examples / (examples + 1)) if examples else P


def cosine(a: Tensor, b: Tensor) -> float:
    """Cosine similarity of two matrices as vectors (Frobenius inner product over the norms)."""
    a, b = a.double().flatten(), b.double().flatten()
    return float(a @ b / (a.norm() * b.norm()).clamp_min(1e-300))
