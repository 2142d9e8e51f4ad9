"""The logit lens and direct logit attribution: what the residual stream says about the answer
after each layer, and how much each part of the model writes of it directly.

logit_lens reads the answer's logit (and its lead over a wrong token) from the residual stream at
every stage, through the final norm and the unembedding, as if the model stopped there.

direct_logit_attribution splits the final logit difference into what each piece adds to the
residual stream: the embeddings, every mixer (attention and linear attention also head by head,
via hook_units times the head's slice of the output projection) and every MLP. The final norm is
not linear; its scale (the standard deviation, or the root mean square for RMSNorm, of the final
residual at the answer position) is frozen from the full forward, which makes it linear, so the
pieces plus the norm's bias term sum to the final logit difference exactly (up to rounding).
"""
from __future__ import annotations

import pandas as pd
import torch
from torch import Tensor, nn

from ..evaluate import eval_mode
from ..models.linear import effective_weight


def logit_lens(model, tokens: Tensor, answer_position: Tensor, answer: Tensor, wrong: Tensor | None = None,
               position_ids: Tensor | None = None) -> pd.DataFrame:
    """DataFrame(layer, stage, logit, logit_diff, rank), averaged over the batch. Stages per layer:
    resid_pre, resid_mid (after the mixer, before the MLP; blocks with an MLP), and resid_post for
    the last layer (the final logits). rank 0: the answer is the top token. logit_diff is NaN
    without `wrong`."""
    with eval_mode(model), torch.no_grad():
        streams = residual_streams(model, tokens, answer_position, position_ids)
        rows = []
        for layer, stage, resid in streams:
            logits = model.unembed(model.norm_final(resid))
            answer_logit = logits.gather(1, answer[:, None])[:, 0]
            difference = answer_logit - logits.gather(1, wrong[:, None])[:, 0] if wrong is not None else None
            rank = (logits > answer_logit[:, None]).sum(dim=1).float()
            rows.append({"layer": layer, "stage": stage, "logit": float(answer_logit.mean()),
                         "logit_diff": float(difference.mean()) if difference is not None else float("nan"),
                         "rank": float(rank.mean())})
    return pd.DataFrame(rows, columns=["layer", "stage", "logit", "logit_diff", "rank"])


def residual_streams(model, tokens, answer_position, position_ids) -> list[tuple[int, str, Tensor]]:
    """[(layer, stage, (B, D) residual at the answer position)] in the order the model builds them."""
    n = len(model.blocks)
    names = [f"blocks.{i}.{hook}" for i in range(n) for hook in ("hook_resid_pre", "hook_mixer_out")]
    _, cache = model.run_with_cache(tokens, position_ids, names=names + [f"blocks.{n - 1}.hook_resid_post"])
    rows = torch.arange(tokens.shape[0])
    at = lambda name: cache[name][rows, answer_position]  # noqa: E731
    streams = []
    for i, block in enumerate(model.blocks):
        pre = at(f"blocks.{i}.hook_resid_pre")
        streams.append((i, "resid_pre", pre))
        if block.mlp is not None:
            streams.append((i, "resid_mid", pre + at(f"blocks.{i}.hook_mixer_out")))
    streams.append((n - 1, "resid_post", at(f"blocks.{n - 1}.hook_resid_post")))
    return streams


def direct_logit_attribution(model, tokens: Tensor, answer_position: Tensor, answer: Tensor,
                             wrong: Tensor | None = None, position_ids: Tensor | None = None) -> pd.DataFrame:
    """DataFrame(layer, component, unit, contribution): each piece's direct effect on the answer's
    logit (minus the wrong token's, when given), averaged over the batch.

    Components: "embed" (layer -1: token and added position embeddings), per layer "mixer" and
    "mlp" (unit -1), "head" (unit h, attention and linear attention: the head's part of the mixer
    row; the output projection's bias is in the mixer row and in no head), and "norm_bias" (layer
    -1: the final norm's bias). embed + mixers + MLPs + norm_bias = the final logit difference."""
    n = len(model.blocks)
    with eval_mode(model), torch.no_grad():
        names = ["blocks.0.hook_resid_pre", f"blocks.{n - 1}.hook_resid_post"]
        names += [f"blocks.{i}.{hook}" for i in range(n) for hook in ("hook_mixer_out", "hook_mlp_out")
                  if not (hook == "hook_mlp_out" and model.blocks[i].mlp is None)]
        names += [f"blocks.{i}.mixer.hook_units" for i in range(n) if has_heads(model.blocks[i].mixer)]
        _, cache = model.run_with_cache(tokens, position_ids, names=names)
        rows_ = torch.arange(tokens.shape[0])
        at = lambda name: cache[name][rows_, answer_position]  # noqa: E731
        W_U = effective_weight(model.unembed)
        direction = W_U[answer] - (W_U[wrong] if wrong is not None else 0.0)  # (B, D)
        readout = FrozenNorm(model.norm_final, at(f"blocks.{n - 1}.hook_resid_post"))
        contribution = lambda piece: float((readout(piece) * direction).sum(-1).mean())  # noqa: E731
        rows = [(-1, "embed", -1, contribution(at("blocks.0.hook_resid_pre")))]
        for i, block in enumerate(model.blocks):
            rows.append((i, "mixer", -1, contribution(at(f"blocks.{i}.hook_mixer_out"))))
            if has_heads(block.mixer):
                units = at(f"blocks.{i}.mixer.hook_units")  # (B, H, head_dim)
                W_O = effective_weight(block.mixer.out)  # (D, H * head_dim)
                for h in range(units.shape[1]):
                    width = units.shape[2]
                    written = units[:, h] @ W_O[:, h * width:(h + 1) * width].T
                    rows.append((i, "head", h, contribution(written)))
            if block.mlp is not None:
                rows.append((i, "mlp", -1, contribution(at(f"blocks.{i}.hook_mlp_out"))))
        rows.append((-1, "norm_bias", -1, float((readout.bias_term() * direction).sum(-1).mean())))
    return pd.DataFrame(rows, columns=["layer", "component", "unit", "contribution"])


def has_heads(mixer) -> bool:
    return hasattr(mixer, "n_heads") and isinstance(getattr(mixer, "out", None), nn.Linear)


class FrozenNorm:
    """The final norm as a linear map, its scale taken from the full residual `final` (B, D)."""

    def __init__(self, norm: nn.Module, final: Tensor):
        self.norm, self.centred = norm, isinstance(norm, nn.LayerNorm)
        eps = norm.eps if norm.eps is not None else torch.finfo(final.dtype).eps
        if self.centred:
            self.scale = (final.var(dim=-1, unbiased=False, keepdim=True) + eps).sqrt()
        else:
            self.scale = (final.pow(2).mean(dim=-1, keepdim=True) + eps).sqrt()

    def __call__(self, piece: Tensor) -> Tensor:
        if self.centred:
            piece = piece - piece.mean(dim=-1, keepdim=True)
        piece = piece / self.scale
        return piece * self.norm.weight if self.norm.weight is not None else piece

    def bias_term(self) -> Tensor:
        bias = getattr(self.norm, "bias", None)
        return bias if bias is not None else torch.zeros_like(self.scale)
