"""GPT-2 (transformers' GPT2LMHeadModel) <-> a workbench attention model with added positions.

GPT-2 computes the workbench block exactly when its config says so: pre-LN blocks with biases,
attention scaled by 1/sqrt(head_dim), an MLP of any width (n_inner) and activation, eps 1e-5,
an untied lm_head without bias and no dropout. Its position table `wpe` carries the workbench's
learned table, zeros for `nope`, or the sinusoidal table written out for `sinusoidal` (the same
numbers the workbench computes on the fly, up to n_positions = model.max_positions).

GPT-2 stores its linear layers as Conv1D, weight (in, out): the transpose of nn.Linear's.
"""
from __future__ import annotations

import torch
from torch import Tensor

from ..config import ModelConfig
from ..models.positions import POSITIONS as ENCODINGS
from .common import ACTIVATIONS, LAYER_NORM_EPS, activation_from_hf, mlp_hidden, mlp_ratio_for, require

MODEL_TYPE = "gpt2"
CONFIG_CLASS = "GPT2Config"
HF_CLASS = "GPT2LMHeadModel"
POSITIONS = ("learned", "nope", "sinusoidal")
TABLE = "transformer.wpe.weight"


def check(model_config) -> None:
    """Nothing beyond what architectures.architecture_for already refused."""


def hf_config(model_config, vocab_size: int) -> dict:
    m = model_config
    return dict(vocab_size=vocab_size, n_positions=m.max_positions, n_embd=m.d_model, n_layer=m.n_layers,
                n_head=m.n_heads, n_inner=mlp_hidden(m), activation_function=ACTIVATIONS[m.activation],
                layer_norm_epsilon=LAYER_NORM_EPS, tie_word_embeddings=False, scale_attn_weights=True,
                scale_attn_by_inverse_layer_idx=False, reorder_and_upcast_attn=False,
                resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)


def pairs(n_layers: int):
    """(Hugging Face name, workbench name, transposed) for every weight but the position table."""
    yield "transformer.wte.weight", "embed.weight", False
    for i in range(n_layers):
        hf, wb = f"transformer.h.{i}", f"blocks.{i}"
        for hf_norm, wb_norm in (("ln_1", "norm_mixer"), ("ln_2", "norm_mlp")):
            yield f"{hf}.{hf_norm}.weight", f"{wb}.{wb_norm}.weight", False
            yield f"{hf}.{hf_norm}.bias", f"{wb}.{wb_norm}.bias", False
        for hf_linear, wb_linear in (("attn.c_attn", "mixer.qkv"), ("attn.c_proj", "mixer.out"),
                                     ("mlp.c_fc", "mlp.fc_in"), ("mlp.c_proj", "mlp.fc_out")):
            yield f"{hf}.{hf_linear}.weight", f"{wb}.{wb_linear}.weight", True
            yield f"{hf}.{hf_linear}.bias", f"{wb}.{wb_linear}.bias", False
    yield "transformer.ln_f.weight", "norm_final.weight", False
    yield "transformer.ln_f.bias", "norm_final.bias", False
    yield "lm_head.weight", "unembed.weight", False


def position_table(model_config, n_layers: int) -> Tensor:
    """The (max_positions, d_model) table GPT-2 adds for `nope` or `sinusoidal`, computed by the
    workbench's own encoding so the numbers are the ones its forward adds."""
    encoding = ENCODINGS.get(model_config.pos)(model_config, n_layers)
    positions = torch.arange(model_config.max_positions)[None]
    added = encoding.embed(positions)
    return torch.zeros(model_config.max_positions, model_config.d_model) if added is None else added[0]


def to_hf(state: dict[str, Tensor], model_config) -> dict[str, Tensor]:
    weights = {hf: (state[wb].t() if transposed else state[wb]).contiguous()
               for hf, wb, transposed in pairs(model_config.n_layers)}
    if model_config.pos == "learned":
        weights[TABLE] = state["encoding.table.weight"].contiguous()
    else:
        weights[TABLE] = position_table(model_config, model_config.n_layers).contiguous()
    return weights


def model_fields(hf, hf_state: dict[str, Tensor]) -> dict:
    """The workbench model section for this GPT-2 config, or a ConfigError naming what differs."""
    require(hf.layer_norm_epsilon == LAYER_NORM_EPS, "layer_norm_epsilon", hf.layer_norm_epsilon,
            f"the workbench's LayerNorm uses eps {LAYER_NORM_EPS}")
    require(hf.scale_attn_weights, "scale_attn_weights", hf.scale_attn_weights,
            "the workbench always scales attention by 1/sqrt(head_dim)")
    require(not hf.scale_attn_by_inverse_layer_idx, "scale_attn_by_inverse_layer_idx",
            hf.scale_attn_by_inverse_layer_idx, "the workbench scales every layer alike")
    require(not getattr(hf, "add_cross_attention", False), "add_cross_attention", True,
            "the workbench's blocks have no cross-attention")
    hidden = hf.n_inner or 4 * hf.n_embd
    fields = dict(mixer="attention", n_layers=hf.n_layer, d_model=hf.n_embd, n_heads=hf.n_head,
                  mlp_ratio=mlp_ratio_for(hf.n_embd, hidden, "n_inner"),
                  activation=activation_from_hf(hf.activation_function, "activation_function"),
                  pos="learned", max_positions=hf.n_positions)
    fields["pos"] = _restored_position(hf, hf_state, fields)
    return fields


def _restored_position(hf, hf_state: dict[str, Tensor], fields: dict) -> str:
    """`nope` or `sinusoidal` when a workbench export says the run had it and the table is exactly
    that encoding's; else `learned` (the table as it is)."""
    exported = ((getattr(hf, "workbench", None) or {}).get("config") or {}).get("model", {}).get("pos")
    if exported not in ("nope", "sinusoidal"):
        return "learned"
    candidate = ModelConfig(**{**fields, "pos": exported})
    table = hf_state[TABLE]
    return exported if torch.equal(table, position_table(candidate, hf.n_layer).to(table.dtype)) else "learned"


def from_hf(hf_state: dict[str, Tensor], hf, model_config) -> dict[str, Tensor]:
    state = {wb: (hf_state[hf_name].t() if transposed else hf_state[hf_name]).contiguous()
             for hf_name, wb, transposed in pairs(model_config.n_layers)}
    if model_config.pos == "learned":
        state["encoding.table.weight"] = hf_state[TABLE].contiguous()
    return state
