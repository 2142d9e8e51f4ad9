"""The sequence-mixer contract: every mixer sits in the same block and shows an attention-like map.

A mixer maps (B, T, D) -> (B, T, D) causally (attention alone may see later tokens, with
model.bidirectional). It owns `hook_pattern`, fed a (B, H, T, T) query x key map only while someone
listens, so the map costs nothing in ordinary training, and `hook_units`,
its output split into units before the output projection, (B, T, U, width): heads for attention,
linear attention and multi-head H3 (width = head dimension), channels for Mamba, S4D, H3, Hyena, LSTM
and GRU (width 1).
A listener that returns a tensor from `hook_units` changes the mixer's output (zero a head, patch a
channel), which is what the circuits tools (workbench.circuits) build on.

A mixer with a recurrent state (has_state: Mamba, S4D, H3, LSTM, GRU, linear attention) also owns
`hook_state`: only while someone listens, it steps its recurrence and hands the trajectory
(B, T, *state) to the hook; a listener that returns a changed trajectory patches the state there and
the recurrence continues from it (state.py). Each mixer's docstring gives its state's layout.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ...registry import Registry
from ..hooks import HookPoint

MIXERS: Registry[type["Mixer"]] = Registry("mixer", "model.mixer")


@dataclass
class MixerContext:
    positions: Tensor  # (B, T) integer positions chosen by the positional encoding
    encoding: nn.Module  # the model's PositionalEncoding (rotations, biases)
    # (B, T) bool, the real (non-PAD) tokens. Bidirectional attention hides the others as keys: a
    # causal model never sees the padding on the right, a bidirectional one would without this.
    real: Tensor | None = None


class Mixer(nn.Module):
    name = "mixer"
    # The model settings (ModelConfig fields) only this kind of mixer reads; the Train form shows them
    # for this mixer alone. Every other model setting applies to any mixer.
    settings: tuple[str, ...] = ()
    # Settings this mixer alone has and ModelConfig does not: a dataclass whose fields carry their
    # defaults and help (`typed.setting`), as a task's Params do. They are given as model.NAME=value,
    # checked by the config, shown by the Train form, and read here as self.options.NAME, so a new
    # mixer with new settings is one file and one registry line.
    Options: type | None = None
    # Whether the mixer carries a recurrent state and so owns `hook_state` (see state.py)
    has_state = False

    def __init__(self, config, layer_index: int):
        super().__init__()
        self.config, self.layer_index = config, layer_index
        self.options = self.options_of(config)
        self.hook_pattern = HookPoint()
        self.hook_units = HookPoint()
        if self.has_state:
            self.hook_state = HookPoint()

    @classmethod
    def check_options(cls, config, options) -> None:
        """Refuse (ConfigError) Options that do not fit the rest of the model config (a head dimension
        that does not divide d_model); each field's own range is checked by Options itself."""

    @classmethod
    def options_of(cls, config):
        """This mixer's Options from the model config (None when it declares none)."""
        if cls.Options is None:
            return None
        own = {f.name for f in dataclasses.fields(cls.Options)}
        return cls.Options(**{k: v for k, v in getattr(config, "mixer_options", {}).items() if k in own})

    def init_weights(self) -> None:
        """Mixer-specific initialization (Mamba's A and delta, mimetic init). The model calls it
        after its generic init, which resets every plain nn.Linear to N(0, 0.02)."""

    def forward(self, x: Tensor, context: MixerContext) -> Tensor:
        raise NotImplementedError

    def attention_like(self, x: Tensor, context: MixerContext) -> Tensor:
        """The (B, H, T, T) query x key map this mixer applies (or mimics) on input x."""
        raise NotImplementedError

    def units(self, y: Tensor, count: int) -> Tensor:
        """y (B, T, count * width) through `hook_units` as (B, T, count, width); unchanged (no view,
        no copy) while nobody listens."""
        if not self.hook_units.active:
            return y
        B, T, width = y.shape
        result = self.hook_units(y.reshape(B, T, count, width // count)).reshape(B, T, width)
        if result.stride() != y.stride():
            # y's own memory layout (S4D and H3 hand on a transposed view): the layers after it then
            # round exactly as in an unlistened forward, so listening changes no number
            result = torch.empty_strided(y.shape, y.stride(), dtype=result.dtype, device=result.device).copy_(result)
        return result

    def state_size(self, length: int) -> int:
        """Numbers a recurrent form of this mixer carries after `length` tokens (per sequence)."""
        raise NotImplementedError


register_mixer = MIXERS.register_class
