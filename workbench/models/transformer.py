"""A decoder-only stack: embeddings, pre-norm blocks (mixer + MLP), final norm, unembedding.

model.looped=true makes it a looped model: one block applied n_layers times with shared weights;
`model.loops` can be set to another count after training (depth chosen at test time). With
model.loop_injection every loop re-reads the input (Yang et al. 2023); `readouts` gives the read-out
after each of the last few loops in one pass (their window loss trains on them).

The norms are LayerNorms, or RMSNorms with model.norm=rmsnorm; model.mlp_ratio=0 leaves the MLP
(and its norm) out, so a block is x + mixer(norm(x)) alone: with rmsnorm, Mamba's own block
(Gu and Dao 2023, arXiv 2312.00752), which transformers' MambaForCausalLM computes.

Hook points, by name: `blocks.{i}.hook_resid_pre`, `blocks.{i}.mixer.hook_pattern`,
`blocks.{i}.mixer.hook_units` (the mixer's output per head or channel, before its output
projection), `blocks.{i}.mixer.hook_scores`, `hook_q`, `hook_k`, `hook_v` (attention),
`blocks.{i}.hook_mixer_out` (what the mixer adds to the residual stream), `blocks.{i}.mlp.hook_post`
(activations after the nonlinearity), `blocks.{i}.hook_mlp_out` (what the MLP adds; blocks with an
MLP), `blocks.{i}.hook_resid_post`, and `blocks.{i}.mixer.hook_state` for the mixers with a recurrent
state (the state after every token; a listener can patch it, see mixers/state.py).
"""
from __future__ import annotations

from functools import partial

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .embedding import Embedding
from .hooks import HookedModule, HookPoint
from .linear import effective_weight, make_linear
from .mixers import MIXERS, MixerContext
from .positions import POSITIONS
from .relu_mlp import relu_mlp


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        hidden = max(1, int(round(config.d_model * config.mlp_ratio)))
        self.config = config
        self.fc_in = make_linear(config.d_model, hidden, sigma_reparam=config.sigma_reparam)
        self.fc_out = make_linear(hidden, config.d_model, sigma_reparam=config.sigma_reparam)
        self.hook_post = HookPoint()

    def activate(self, h: Tensor) -> Tensor:
        name = self.config.activation
        if name == "gelu":
            return F.gelu(h)
        if name == "gelu_tanh":  # GPT-2's tanh approximation ("gelu_new" in Hugging Face configs)
            return F.gelu(h, approximate="tanh")
        if name == "silu":
            return F.silu(h)
        # Without autograd (evaluation, probes, hooked forwards) h is fc_in's fresh output and can be
        # overwritten: no second activation-sized buffer. Under autograd in place measured slower.
        h = F.relu(h, inplace=not torch.is_grad_enabled())
        if name == "topk" and self.config.topk < h.shape[-1]:
            # ours (the lazy-neuron paper gives no operator): keep each token's k largest activations
            threshold = h.topk(self.config.topk, dim=-1).values[..., -1:]
            h = torch.where(h >= threshold, h, torch.zeros_like(h))
        return h

    def forward(self, x: Tensor) -> Tensor:
        if self.config.activation == "relu" and torch.is_grad_enabled() and not self.hook_post.active:
            return relu_mlp(x, effective_weight(self.fc_in), self.fc_in.bias, effective_weight(self.fc_out),
                            self.fc_out.bias)
        return self.fc_out(self.hook_post(self.activate(self.fc_in(x))))


NORM_EPS = 1e-5  # torch.nn.LayerNorm's default; RMSNorm is given it too (its own default is dtype-dependent)


def make_norm(config) -> nn.Module:
    if config.norm == "none":
        return nn.Identity()
    if config.norm == "rmsnorm":
        return nn.RMSNorm(config.d_model, eps=NORM_EPS)
    return nn.LayerNorm(config.d_model, eps=NORM_EPS)


def has_mlp(config) -> bool:
    return config.mlp_ratio > 0


class Block(nn.Module):
    def __init__(self, config, mixer_name: str, layer_index: int):
        super().__init__()
        self.norm_mixer = make_norm(config)
        self.mixer = MIXERS.get(mixer_name)(config, layer_index)
        # without an MLP neither module exists, so the state dict holds no unused weights
        self.norm_mlp = make_norm(config) if has_mlp(config) else None
        self.mlp = MLP(config) if has_mlp(config) else None
        self.hook_resid_pre = HookPoint()
        self.hook_mixer_out = HookPoint()
        self.hook_mlp_out = HookPoint()
        self.hook_resid_post = HookPoint()

    def forward(self, x: Tensor, context: MixerContext) -> Tensor:
        x = self.hook_resid_pre(x)
        x = x + self.hook_mixer_out(self.mixer(self.norm_mixer(x), context))
        if self.mlp is not None:
            x = x + self.hook_mlp_out(self.mlp(self.norm_mlp(x)))
        return self.hook_resid_post(x)


class SequenceModel(HookedModule):
    """input_dim > 0: the model also reads a real vector per position through a linear read-in
    added to the token embedding (Garg et al. 2022, arXiv 2208.01066, read vectors this way; our
    tokens add a learned marker of each slot's kind). output="regression": the read-out is one real
    number per position (logits of shape (B, T, 1)) instead of a score per vocabulary symbol."""

    def __init__(self, config, vocab_size: int, input_dim: int = 0, output: str = "tokens"):
        super().__init__()
        self.config = config
        self.input_dim, self.output = input_dim, output
        mixers = config.layer_mixers()
        self.embed = Embedding(vocab_size, config.d_model)
        self.read_in = nn.Linear(input_dim, config.d_model) if input_dim else None
        self.encoding = POSITIONS.get(config.pos)(config, len(mixers))
        # a looped model holds one block and applies it `loops` times; `loops` may change after training
        self.loops = len(mixers) if config.looped else 1
        self.blocks = nn.ModuleList(Block(config, name, i) for i, name in enumerate(mixers[:1] if config.looped
                                                                                   else mixers))
        self.norm_final = make_norm(config)
        # sigma_reparam covers every linear layer, the unembedding too (Zhai et al. 2023)
        outputs = 1 if output == "regression" else vocab_size
        self.unembed = make_linear(config.d_model, outputs, bias=False, sigma_reparam=config.sigma_reparam)
        self.apply(partial(_init_weights, scheme=config.init))
        for block in self.blocks:
            block.mixer.init_weights()  # mixer-specific init on top of the generic one
        self.name_hooks()

    def forward(self, tokens: Tensor, position_ids: Tensor | None = None, vectors: Tensor | None = None) -> Tensor:
        return self.readouts(tokens, position_ids, vectors, last=1)[-1]

    def readouts(self, tokens: Tensor, position_ids: Tensor | None = None, vectors: Tensor | None = None,
                 last: int = 1, truncate: bool = False) -> list[Tensor]:
        """The read-outs (logits) after each of the last `last` blocks applied, the final one last.
        With model.loop_injection every loop starts from the normed read-out state plus the input
        embedding (Yang et al. 2023: h <- norm_final(block(h + e)) from h = 0), so a loop's read-out is
        unembed(h) and the logit lens reads it exactly. truncate: the blocks before the last `last`
        run without gradient, as the paper's truncated loss does."""
        context = self.mixer_context(tokens, position_ids)
        embedded = self.embedded(tokens, context, vectors)
        inject = self.config.loop_injection
        x = torch.zeros_like(embedded) if inject else embedded

        def read_out(state: Tensor) -> Tensor:  # an injected loop's state is already normed
            return self.unembed(state if inject else self.norm_final(state))

        blocks, outputs = self.applied_blocks(), []
        if len(blocks) < last:  # more read-outs than blocks (e.g. a looped model read at 0 loops): the start's too
            outputs.append(read_out(x))
        for i, block in enumerate(blocks):
            read = i >= len(blocks) - last
            with torch.set_grad_enabled(torch.is_grad_enabled() and (read or not truncate)):
                x = block(x + embedded if inject else x, context)
                if inject:
                    x = self.norm_final(x)
            if read:
                outputs.append(read_out(x))
        return outputs

    def training_readouts(self, *inputs: Tensor) -> list[Tensor]:
        """The read-outs the training loss averages: the final one, or with model.loop_loss_window = T
        the last T loops' (Yang et al. 2023)."""
        window = self.config.loop_loss_window
        return self.readouts(*inputs, last=window, truncate=True) if window else [self(*inputs)]

    def embedded(self, tokens: Tensor, context: MixerContext, vectors: Tensor | None = None) -> Tensor:
        """The input to the first block: token embeddings, the read-in vectors and added positions."""
        x = self.embed(tokens)
        if self.read_in is not None:
            if vectors is None:
                raise ValueError(f"this model reads a {self.input_dim}-dimensional vector per position; "
                                 "call it as model(*batch.inputs())")
            x = x + self.read_in(vectors)
        added = self.encoding.embed(context.positions)
        return x if added is None else x + added

    def mixer_context(self, tokens: Tensor, position_ids: Tensor | None = None) -> MixerContext:
        """What every mixer is called with beside its input, for these tokens (as forward builds it)."""
        real = (tokens != 0) if self.config.bidirectional else None  # only bidirectional attention reads it
        return MixerContext(self.encoding.positions(tokens, position_ids), self.encoding, real)

    def applied_blocks(self) -> list:
        """The blocks in the order the forward pass applies them: a looped model's one block `loops`
        times (its hook points then fire once per loop, the last loop's value is what a cache keeps)."""
        return list(self.blocks) * self.loops

    def n_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


def _init_weights(module: nn.Module, scheme: str) -> None:
    """model.init. "gpt2": N(0, 0.02) for every linear and embedding weight, GPT-2's scale (made
    for d ~ 768). "fan_in": N(0, 1/fan_in) for linear weights and N(0, 1) for embeddings, the
    scale of PyTorch's own layers. At the widths trained here (d 32-128) 0.02 starts the attention
    logits so near zero that the query/key gradients are ~100x smaller than the value gradients;
    on recall tasks a 2-layer model can settle on "one of the values in the context" and let its
    second attention layer fade out, where fan_in solves them (see mqar-vs-width's notes)."""
    if isinstance(module, nn.Linear) and type(module) is nn.Linear:
        std = 0.02 if scheme == "gpt2" else module.weight.shape[1] ** -0.5
        nn.init.normal_(module.weight, std=std)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, std=0.02 if scheme == "gpt2" else 1.0)


def build_model(config, vocab_size: int, seed: int | None = None, input_dim: int = 0,
                output: str = "tokens") -> SequenceModel:
    """A model for this config; with a seed its initial weights are reproducible."""
    if seed is not None:
        torch.manual_seed(seed)
    return SequenceModel(config, vocab_size, input_dim, output)


def model_for_task(config, task, seed: int | None = None) -> SequenceModel:
    """A model shaped for `task`: its vocabulary, and the read-in and read-out of real-valued tasks."""
    return build_model(config, len(task.vocab), seed, task.input_dim, task.output)
