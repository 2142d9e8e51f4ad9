"""The one-line refusal of a configuration no transformers architecture computes exactly: why, and
what would export. A leaf, so that architectures.py and each architecture module can raise it."""
from __future__ import annotations

from ..errors import ConfigError

ATTENTION = ("model.mixer=attention with model.pos learned, nope or sinusoidal (as GPT-2) or rope (as GPT-NeoX), "
             "model.activation relu, gelu, gelu_tanh or silu, model.softmax=standard, model.norm=layernorm, an MLP, "
             "no logit_scaling or scalable_softmax, no gated_attention, not bidirectional, model.attention_head_dim 0")
MAMBA = "model.mixer=mamba with model.pos=nope, model.norm=rmsnorm and model.mlp_ratio=0 (as MambaForCausalLM)"
EXPORTABLE = f"exportable: {ATTENTION}; or {MAMBA}"


def refuse(field: str, value, why: str) -> ConfigError:
    return ConfigError(field, value, f"cannot export to Hugging Face: {why}; {EXPORTABLE}")
