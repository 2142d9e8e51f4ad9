"""Which workbench models a Hugging Face architecture computes exactly, and the ones none does.

A workbench model is one block repeated: x + mixer(norm(x)), then x + MLP(norm(x)), with biases in
every linear layer of attention and the MLP (not the unembedding), a final norm (eps 1e-5
throughout) and an unembedding of its own, not tied to the embedding. The norm is a LayerNorm
unless model.norm=rmsnorm; model.mlp_ratio=0 leaves the MLP out. Three transformers architectures
compute such a model exactly, given the right config:

    GPT-2     (gpt2.py)      softmax attention with positions added to the embeddings: model.pos
                             learned, nope (a zero table) or sinusoidal (its table written out)
    GPT-NeoX  (gpt_neox.py)  softmax attention with rotary positions, sequential residual: model.pos rope
    Mamba     (mamba.py)     the Mamba mixer in Mamba's own block: no positions, RMSNorm, no MLP

Everything else is refused with the reason, in one line (REFUSALS). Each architecture module
holds MODEL_TYPE, HF_CLASS and MIXER (and the attention ones POSITIONS), and five functions:
`check`, `hf_config` and `to_hf` (export), `model_fields` and `from_hf` (import). Weights cross in
"plain" form, as a model without sigmaReparam holds them, so a sigmaReparam model exports its
effective weights (common.py).
"""
from __future__ import annotations

from ..models.heads import attention_head_dim
from . import gpt2, gpt_neox, mamba
from .refusal import refuse

ARCHITECTURES = {module.MODEL_TYPE: module for module in (gpt2, gpt_neox, mamba)}
ATTENTION = (gpt2, gpt_neox)
BY_POSITION = {pos: module for module in ATTENTION for pos in module.POSITIONS}


# (field, value or None for any value) -> why no transformers architecture computes it
REFUSALS = {
    ("model.layers", None): "per-layer mixers (hybrids) exist in no transformers architecture",
    ("model.looped", True): "a looped model applies one block's weights again and again (and may re-read its "
                            "input every loop); transformers' causal LMs hold their own weights per layer",
    ("model.mixer", None): "no transformers causal LM has this sequence mixer in the workbench's block",
    ("model.pos", "alibi"): "no transformers architecture computes this ALiBi block exactly: MPT has no biases and "
                            "a fixed 4x GELU MLP, Bloom normalizes the embeddings, Falcon divides the bias by "
                            "sqrt(head_dim) and builds it in bfloat16",
    ("model.pos", "coupling"): "positions come from the task's own ids, not 0..T-1: a model given token ids alone "
                               "would compute another function",
    ("model.pos", "coupling_relative"): "positions come from the task's own ids, as a learned relative bias no "
                                        "transformers architecture has",
    ("model.pos", "abacus"): "positions come from the task's own digit-run ids, not 0..T-1: a model given token "
                             "ids alone would compute another function",
    ("model.pos", "randomized"): "positions are drawn at random at every forward: no fixed function of the tokens",
    ("model.pos", "fire"): "FIRE's learned bias network exists in no transformers architecture",
    ("model.pos", "t5_bias"): "no decoder-only transformers architecture takes T5's bucketed relative bias",
    ("model.activation", "topk"): "the top-k MLP activation exists in no transformers architecture",
    ("model.softmax", "clipped"): "the clipped softmax exists in no transformers architecture",
    ("model.logit_scaling", True): "log-length logit scaling exists in no transformers architecture",
    ("model.scalable_softmax", True): "Scalable-Softmax exists in no transformers architecture",
    ("model.gated_attention", True): "per-head output gates exist in no transformers architecture",
    ("model.bidirectional", True): "GPT-2's and GPT-NeoX's attention is causal: a bidirectional model would compute "
                                   "another function",
    ("model.norm", "rmsnorm"): "GPT-2 and GPT-NeoX normalize with LayerNorm; the attention architectures with "
                               "RMSNorm (Llama and its kin) have no biases and a gated MLP",
    ("model.mlp_ratio", 0.0): "every block of GPT-2 and GPT-NeoX has an MLP",
}


def architecture_for(model_config):
    """The architecture module that computes this workbench model exactly, or a ConfigError saying why none does."""
    m = model_config
    if m.looped:
        raise refuse("model.looped", m.looped, REFUSALS[("model.looped", True)])
    mixers = set(m.layer_mixers())
    if len(mixers) > 1:
        raise refuse("model.layers", m.layers, REFUSALS[("model.layers", None)])
    (mixer,) = mixers
    if mixer == mamba.MIXER:
        mamba.check(m)  # its block, positions and norms; the attention and MLP options do nothing in it
        return mamba
    if mixer != "attention":
        field = "model.layers" if m.layers else "model.mixer"
        raise refuse(field, m.layers or mixer, REFUSALS.get(("model.mixer", mixer), REFUSALS[("model.mixer", None)]))
    for field, value in (("model.pos", m.pos), ("model.activation", m.activation), ("model.softmax", m.softmax),
                         ("model.logit_scaling", m.logit_scaling), ("model.scalable_softmax", m.scalable_softmax),
                         ("model.gated_attention", m.gated_attention),
                         ("model.bidirectional", m.bidirectional), ("model.norm", m.norm),
                         ("model.mlp_ratio", m.mlp_ratio)):
        if (field, value) in REFUSALS:
            raise refuse(field, value, REFUSALS[(field, value)])
    even = m.d_model // m.n_heads
    if attention_head_dim(m) != even:
        raise refuse("model.attention_head_dim", attention_head_dim(m), "GPT-2 and GPT-NeoX split d_model evenly "
                                                                        f"into the heads (d_model / n_heads = {even} here)")
    if m.pos not in BY_POSITION:  # a positional encoding added after this table was written
        raise refuse("model.pos", m.pos, "no transformers architecture is mapped to it")
    architecture = BY_POSITION[m.pos]
    architecture.check(m)
    return architecture
