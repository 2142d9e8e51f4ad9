"""How wide an attention head is: one rule for the attention layer and for the encodings that rotate
or bias its heads (RoPE rotates pairs of a head's channels).

By default the heads split d_model evenly (d_model / n_heads channels each), as in GPT-2. With
model.attention_head_dim set, each head gets queries, keys and values of that width whatever the
number of heads, so the layer's parameters grow with n_heads at a fixed d_model: the multi-head
layer of Mahdavi et al. 2024 ("Memorization Capacity of Multi-Head Attention in Transformers",
arXiv 2306.02010), H heads of their own d x d projections."""
from __future__ import annotations


def attention_head_dim(config) -> int:
    """Width of each attention head of a model config: model.attention_head_dim, or d_model / n_heads
    when it is 0 (the default)."""
    return getattr(config, "mixer_options", {}).get("attention_head_dim", 0) or config.d_model // config.n_heads
