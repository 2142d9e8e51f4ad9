"""What the architecture mappings share: activation names, MLP widths, weights in plain form, and
the check that a converted model computes what the original does."""
from __future__ import annotations

import torch
from torch import Tensor

from ..errors import ConfigError
from ..models.linear import SigmaReparamLinear

# The MLP activations both architectures take, by workbench name -> Hugging Face `ACT2FN` name.
ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "gelu_tanh": "gelu_pytorch_tanh", "silu": "silu"}
# ... and back. "gelu_new" is GPT-2's tanh approximation written out in Python: the same formula
# as PyTorch's, equal to about 1e-7 (tests measure the logits).
HF_ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "gelu_pytorch_tanh": "gelu_tanh", "gelu_new": "gelu_tanh",
                  "silu": "silu", "swish": "silu"}
LAYER_NORM_EPS = 1e-5  # torch.nn.LayerNorm's default, which every workbench norm uses
# float32 logits: the same arithmetic in other kernels (sdpa, explicit matmuls) and rotary
# frequencies computed by another formula differ by ~1e-5 at most on these models
TOLERANCE = 1e-4


def plain_state(model) -> dict[str, Tensor]:
    """The model's weights as a model without sigmaReparam holds them (each linear's effective weight).

    The model must be in eval mode: a training forward would move sigmaReparam's power iteration."""
    state = {name: value.detach() for name, value in model.state_dict().items()}
    for name, module in model.named_modules():
        if isinstance(module, SigmaReparamLinear):
            state[f"{name}.weight"] = module.effective_weight().detach()
            del state[f"{name}.gamma"], state[f"{name}.u"]
    return state


def mlp_hidden(model_config) -> int:
    """The MLP width the workbench builds (models/transformer.py)."""
    return max(1, int(round(model_config.d_model * model_config.mlp_ratio)))


def mlp_ratio_for(d_model: int, hidden: int, field: str) -> float:
    """model.mlp_ratio giving exactly this MLP width, or a ConfigError naming the Hugging Face field."""
    ratio = hidden / d_model
    if max(1, int(round(d_model * ratio))) != hidden:
        raise ConfigError(field, hidden, f"no model.mlp_ratio gives this MLP width at d_model {d_model}")
    return ratio


def activation_from_hf(name: str, field: str) -> str:
    if name not in HF_ACTIVATIONS:
        raise ConfigError(field, name, f"the workbench's MLP has no such activation; choose one of: "
                                       f"{', '.join(HF_ACTIVATIONS)}")
    return HF_ACTIVATIONS[name]


def require(condition: bool, field: str, value, why: str) -> None:
    """Refuse an import whose Hugging Face config computes something the workbench's block does not."""
    if not condition:
        raise ConfigError(field, value, f"cannot import: {why}")


@torch.no_grad()
def max_logit_difference(model, hf_model, vocab_size: int, length: int, batch: int = 8, seed: int = 0) -> float:
    """max |workbench logits - transformers logits| on random token ids, both models in eval mode."""
    tokens = torch.randint(0, vocab_size, (batch, length), generator=torch.Generator().manual_seed(seed))
    ours = model.eval()(tokens)
    theirs = hf_model.eval()(input_ids=tokens, attention_mask=torch.ones_like(tokens)).logits
    return float((ours - theirs).abs().max())
