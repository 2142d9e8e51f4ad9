"""Mamba (transformers' MambaForCausalLM) <-> a workbench Mamba model with Mamba's own block.

MambaForCausalLM (Gu and Dao 2023, "Mamba: Linear-Time Sequence Modeling with Selective State
Spaces", arXiv 2312.00752) repeats x + MambaMixer(RMSNorm(x)), with no MLP and no positions, then
a final RMSNorm (norm_f) and lm_head. The workbench computes that block with model.norm=rmsnorm,
model.mlp_ratio=0 and model.pos=nope; every other Mamba run is refused (`check`).

The mixer needs no option: transformers' slow path (the one it runs without the CUDA kernels, and
always on a CPU) and the workbench's compute the same function with the same parameters under
the same names. in_proj without bias, then a causal depthwise conv1d with bias and SiLU; x_proj
without bias into dt (rank ceil(d_model / 16)), B and C; delta = softplus(dt_proj(dt)) with
dt_proj's bias; A = -exp(A_log); the scan h_t = exp(delta A) h_{t-1} + delta B u_t,
y_t = C_t . h_t + D u_t; y gated by SiLU(z); out_proj without bias. So weights are copied as they
are, and the config says use_bias=false, use_conv_bias=true, hidden_act=silu, time_step_rank =
ceil(d_model / 16), eps 1e-5 and an untied lm_head. residual_in_fp32 changes nothing in float32.

Import also takes a tied lm_head (the embedding copied into the workbench's own unembedding) and
a convolution without bias (zeros in the workbench's).
"""
from __future__ import annotations

import math

import torch
from torch import Tensor

from .common import LAYER_NORM_EPS, require

MODEL_TYPE = "mamba"
CONFIG_CLASS = "MambaConfig"
HF_CLASS = "MambaForCausalLM"
MIXER = "mamba"
# what MambaForCausalLM's block is, as workbench settings: (field, value, why it must be so)
BLOCK = (("model.pos", "nope", "it adds no positions"),
         ("model.norm", "rmsnorm", "it normalizes with RMSNorm"),
         ("model.mlp_ratio", 0.0, "its blocks have no MLP"))
MIXER_WEIGHTS = ("A_log", "D", "in_proj.weight", "conv1d.weight", "conv1d.bias", "x_proj.weight", "dt_proj.weight",
                 "dt_proj.bias", "out_proj.weight")


def dt_rank(d_model: int) -> int:
    """The workbench's rank of dt (models/mixers/mamba.py), transformers' time_step_rank="auto"."""
    return math.ceil(d_model / 16)


def check(model_config) -> None:
    """Refuse a workbench Mamba model whose block is not MambaForCausalLM's, naming what would export."""
    from .refusal import refuse

    for field, value, why in BLOCK:
        actual = getattr(model_config, field.split(".")[1])
        if actual != value:
            raise refuse(field, actual, f"MambaForCausalLM's block is x + mixer(RMSNorm(x)): {why}")


def hf_config(model_config, vocab_size: int) -> dict:
    m = model_config
    return dict(vocab_size=vocab_size, hidden_size=m.d_model, state_size=m.d_state, num_hidden_layers=m.n_layers,
                expand=m.expand, conv_kernel=m.d_conv, time_step_rank=dt_rank(m.d_model),
                layer_norm_epsilon=LAYER_NORM_EPS, use_bias=False, use_conv_bias=True, hidden_act="silu",
                tie_word_embeddings=False)


def pairs(n_layers: int):
    """(Hugging Face name, workbench name) for every weight."""
    yield "backbone.embeddings.weight", "embed.weight"
    for i in range(n_layers):
        hf, wb = f"backbone.layers.{i}", f"blocks.{i}"
        yield f"{hf}.norm.weight", f"{wb}.norm_mixer.weight"
        for name in MIXER_WEIGHTS:
            yield f"{hf}.mixer.{name}", f"{wb}.mixer.{name}"
    yield "backbone.norm_f.weight", "norm_final.weight"
    yield "lm_head.weight", "unembed.weight"


def to_hf(state: dict[str, Tensor], model_config) -> dict[str, Tensor]:
    return {hf: state[wb].contiguous() for hf, wb in pairs(model_config.n_layers)}


def model_fields(hf, hf_state: dict[str, Tensor]) -> dict:
    """The workbench model section for this Mamba config, or a ConfigError naming what differs."""
    require(hf.layer_norm_epsilon == LAYER_NORM_EPS, "layer_norm_epsilon", hf.layer_norm_epsilon,
            f"the workbench's RMSNorm uses eps {LAYER_NORM_EPS}")
    require(not hf.use_bias, "use_bias", hf.use_bias, "the workbench's in_proj and out_proj have no bias")
    require(hf.hidden_act == "silu", "hidden_act", hf.hidden_act,
            "the workbench's Mamba applies SiLU after the convolution")
    require(hf.time_step_rank == dt_rank(hf.hidden_size), "time_step_rank", hf.time_step_rank,
            f"the workbench's dt has rank ceil(hidden_size / 16) = {dt_rank(hf.hidden_size)}")
    require(hf.intermediate_size == hf.expand * hf.hidden_size, "expand", hf.expand,
            "the workbench's inner width is a whole multiple of hidden_size")
    # no max_positions: nothing in this model reads a position table
    return dict(mixer="mamba", n_layers=hf.num_hidden_layers, d_model=hf.hidden_size, n_heads=1, mlp_ratio=0.0,
                pos="nope", norm="rmsnorm", d_state=hf.state_size, d_conv=hf.conv_kernel, expand=hf.expand)


def from_hf(hf_state: dict[str, Tensor], hf, model_config) -> dict[str, Tensor]:
    state = {}
    for hf_name, wb in pairs(model_config.n_layers):
        value = hf_state.get(hf_name)
        if value is None and hf_name == "lm_head.weight":  # tied: the embedding is the unembedding
            value = hf_state["backbone.embeddings.weight"]
        if value is None and hf_name.endswith("conv1d.bias"):  # use_conv_bias=False: a zero bias computes it
            value = torch.zeros(hf_state[hf_name[:-len("bias")] + "weight"].shape[0])
        state[wb] = value.contiguous()
    return state
