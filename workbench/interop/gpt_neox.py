"""GPT-NeoX (transformers' GPTNeoXForCausalLM) <-> a workbench attention model with rotary positions.

GPT-NeoX rotates queries and keys as the workbench's `rope` does: the first and second halves of
the rotated channels paired (Su et al., in GPT-NeoX's "rotate_half" layout), base 10000. With
`use_parallel_residual=False` its block is the workbench's sequential pre-LN block, with biases,
an MLP of any width and activation, eps 1e-5 and an untied unembedding. The workbench rotates
2 * (head_dim // 2) channels (all of an even head); `partial_rotary_factor` says the same.

Its fused query_key_value projection interleaves by head (per head: q, k, v), where the
workbench's stacks all queries, then all keys, then all values: the rows are permuted.
Pythia and most published GPT-NeoX checkpoints use the parallel residual and rotate a quarter of
each head; those are refused on import with that reason.
"""
from __future__ import annotations

import torch
from torch import Tensor

from .common import ACTIVATIONS, LAYER_NORM_EPS, activation_from_hf, mlp_hidden, mlp_ratio_for, require

MODEL_TYPE = "gpt_neox"
CONFIG_CLASS = "GPTNeoXConfig"
HF_CLASS = "GPTNeoXForCausalLM"
POSITIONS = ("rope",)
ROPE_BASE = 10000.0  # models/positions.py: Rope's base


def rotary_fraction(head_dim: int) -> float:
    """partial_rotary_factor that makes transformers rotate 2 * (head_dim // 2) channels: it takes
    int(head_dim * factor), so an odd head asks for half a channel less than the whole
    ((head_dim - 1) / head_dim could round down one channel too far)."""
    return 1.0 if head_dim % 2 == 0 else (head_dim - 0.5) / head_dim


def check(model_config) -> None:
    from .refusal import refuse

    head_dim = model_config.d_model // model_config.n_heads
    if int(head_dim * rotary_fraction(head_dim)) != 2 * (head_dim // 2):  # what GPTNeoXAttention computes
        raise refuse("model.n_heads", model_config.n_heads,
                     f"GPT-NeoX cannot rotate {2 * (head_dim // 2)} of {head_dim} channels per head")


def hf_config(model_config, vocab_size: int) -> dict:
    m = model_config
    head_dim = m.d_model // m.n_heads
    return dict(vocab_size=vocab_size, hidden_size=m.d_model, num_hidden_layers=m.n_layers,
                num_attention_heads=m.n_heads, intermediate_size=mlp_hidden(m), hidden_act=ACTIVATIONS[m.activation],
                max_position_embeddings=m.max_positions, layer_norm_eps=LAYER_NORM_EPS,
                rope_parameters={"rope_type": "default", "rope_theta": ROPE_BASE,
                                 "partial_rotary_factor": rotary_fraction(head_dim)},
                use_parallel_residual=False, attention_bias=True, tie_word_embeddings=False,
                hidden_dropout=0.0, attention_dropout=0.0)


def pairs(n_layers: int):
    """(Hugging Face name, workbench name) for every weight; the qkv rows are permuted apart."""
    yield "gpt_neox.embed_in.weight", "embed.weight"
    for i in range(n_layers):
        hf, wb = f"gpt_neox.layers.{i}", f"blocks.{i}"
        for hf_part, wb_part in (("input_layernorm", "norm_mixer"), ("post_attention_layernorm", "norm_mlp"),
                                 ("attention.query_key_value", "mixer.qkv"), ("attention.dense", "mixer.out"),
                                 ("mlp.dense_h_to_4h", "mlp.fc_in"), ("mlp.dense_4h_to_h", "mlp.fc_out")):
            yield f"{hf}.{hf_part}.weight", f"{wb}.{wb_part}.weight"
            yield f"{hf}.{hf_part}.bias", f"{wb}.{wb_part}.bias"
    yield "gpt_neox.final_layer_norm.weight", "norm_final.weight"
    yield "gpt_neox.final_layer_norm.bias", "norm_final.bias"
    yield "lm_head.weight", "unembed.weight"


def _by_head(rows: Tensor, n_heads: int) -> Tensor:
    """Workbench qkv rows (q heads, k heads, v heads) -> GPT-NeoX's (per head: q, k, v)."""
    return rows.reshape(3, n_heads, -1, *rows.shape[1:]).transpose(0, 1).reshape(rows.shape)


def _by_kind(rows: Tensor, n_heads: int) -> Tensor:
    """GPT-NeoX's qkv rows (per head: q, k, v) -> the workbench's (q heads, k heads, v heads)."""
    return rows.reshape(n_heads, 3, -1, *rows.shape[1:]).transpose(0, 1).reshape(rows.shape)


def to_hf(state: dict[str, Tensor], model_config) -> dict[str, Tensor]:
    weights = {hf: state[wb] for hf, wb in pairs(model_config.n_layers)}
    for name in weights:
        if ".query_key_value." in name:
            weights[name] = _by_head(weights[name], model_config.n_heads)
    return {name: value.contiguous() for name, value in weights.items()}


def model_fields(hf, hf_state: dict[str, Tensor]) -> dict:
    """The workbench model section for this GPT-NeoX config, or a ConfigError naming what differs."""
    rope = hf.rope_parameters or {}
    head_dim = hf.hidden_size // hf.num_attention_heads
    rotated = int(head_dim * rope.get("partial_rotary_factor", 1.0))
    require(not hf.use_parallel_residual, "use_parallel_residual", True,
            "the workbench's block adds attention, then the MLP of the updated stream (set it to false)")
    require(rope.get("rope_type", "default") == "default", "rope_parameters.rope_type", rope.get("rope_type"),
            "the workbench's rope has no scaling (default)")
    require(rope.get("rope_theta") == ROPE_BASE, "rope_parameters.rope_theta", rope.get("rope_theta"),
            f"the workbench's rope uses base {ROPE_BASE:g}")
    require(rotated == 2 * (head_dim // 2), "rope_parameters.partial_rotary_factor",
            rope.get("partial_rotary_factor", 1.0),
            f"the workbench rotates {2 * (head_dim // 2)} of the {head_dim} channels of each head")
    require(hf.layer_norm_eps == LAYER_NORM_EPS, "layer_norm_eps", hf.layer_norm_eps,
            f"the workbench's LayerNorm uses eps {LAYER_NORM_EPS}")
    return dict(mixer="attention", n_layers=hf.num_hidden_layers, d_model=hf.hidden_size,
                n_heads=hf.num_attention_heads,
                mlp_ratio=mlp_ratio_for(hf.hidden_size, hf.intermediate_size, "intermediate_size"),
                activation=activation_from_hf(hf.hidden_act, "hidden_act"), pos="rope",
                max_positions=hf.max_position_embeddings)


def from_hf(hf_state: dict[str, Tensor], hf, model_config) -> dict[str, Tensor]:
    state = {}
    for hf_name, wb in pairs(model_config.n_layers):
        # attention_bias=False: no attention biases, which the workbench's zero biases compute exactly
        value = hf_state.get(hf_name)
        if value is None and hf_name.endswith(".bias"):
            value = torch.zeros(hf_state[hf_name[:-len("bias")] + "weight"].shape[0])
        if ".query_key_value." in hf_name:
            value = _by_kind(value, model_config.n_heads)
        state[wb] = value.contiguous()
    return state
