"""Recurrent mixers: LSTM and GRU (torch.nn, one layer, hidden size d_model).

An RNN has no explicit map, so its attention-like map is input-gradient saliency:
    saliency[t, s] = sum_i | d (sum_c y_t[c]) / d x_s[i] |
the L1 norm over input channels of the gradient of output t's channel sum with respect to input s
(one batched backward pass over output positions, not the full D x D Jacobian). It is zero above the
diagonal because the RNN is causal. Computed with autograd, on a detached copy of the input, only
when `hook_pattern` listens or `attention_like` is called; it works under torch.no_grad too.

`hook_state` (only while listened to) receives the state after each token: for the GRU h_t,
(B, T, d_model); for the LSTM h_t and c_t stacked, (B, T, 2, d_model) with [:, :, 0] = h_t and
[:, :, 1] = c_t. A listener that changes it at a position patches the state there and the RNN
continues from it, one torch.nn step at a time (mixers/state.py); the output at t is h_t.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from .base import Mixer, MixerContext, register_mixer
from .state import through_state_hook


class RecurrentMixer(Mixer):
    cell: type[nn.RNNBase]
    states_per_channel = 1
    has_state = True

    def __init__(self, config, layer_index):
        super().__init__(config, layer_index)
        self.rnn = self.cell(config.d_model, config.d_model, batch_first=True)

    def forward(self, x: Tensor, context: MixerContext) -> Tensor:
        if self.hook_pattern.active:
            self.hook_pattern(self.attention_like(x, context))
        y = self.rnn(x)[0]
        if self.hook_state.active:
            y = self.listened_state(y, x)
        return self.units(y, x.shape[-1])

    def listened_state(self, y: Tensor, x: Tensor) -> Tensor:
        """y (B, T, d_model) after `hook_state` saw (and perhaps patched) the states."""
        lstm = self.states_per_channel == 2

        def step(h: Tensor, t: int) -> Tensor:
            carried = (h[:, 0][None].contiguous(), h[:, 1][None].contiguous()) if lstm else h[None]
            _, carried = self.rnn(x[:, t:t + 1], carried)
            return torch.stack([carried[0][0], carried[1][0]], dim=1) if lstm else carried[0]

        def readout(h: Tensor, t: int) -> Tensor:
            return h[:, 0] if lstm else h

        shape = (x.shape[0], 2, x.shape[-1]) if lstm else (x.shape[0], x.shape[-1])
        return through_state_hook(self.hook_state, y, x.new_zeros(shape), step, readout)

    def attention_like(self, x: Tensor, context: MixerContext) -> Tensor:
        """(B, 1, T, T) input-gradient saliency."""
        # cuDNN refuses RNN backward in eval mode (probes run in eval): use the native kernels here
        with torch.enable_grad(), torch.backends.cudnn.flags(enabled=False):
            inputs = x.detach().requires_grad_(True)
            outputs = self.rnn(inputs)[0].sum(dim=-1)  # (B, T)
            grads = output_gradients(outputs, inputs)  # (T, B, T, D): row t is d outputs[:, t] / d x
        return grads.abs().sum(dim=-1).transpose(0, 1)[:, None].detach()

    def state_size(self, length: int) -> int:
        return self.states_per_channel * self.config.d_model


@register_mixer("lstm")
class LSTM(RecurrentMixer):
    cell = nn.LSTM
    states_per_channel = 2  # hidden and cell state


@register_mixer("gru")
class GRU(RecurrentMixer):
    cell = nn.GRU


def output_gradients(outputs: Tensor, inputs: Tensor) -> Tensor:
    """For each position t, the gradient of outputs[:, t] (summed over the batch: sample b's
    output depends on sample b only) with respect to inputs: (T, B, T, D). One batched backward
    pass; backends without batched gradients (some fused RNN kernels) fall back to a loop."""
    T = outputs.shape[1]
    selectors = torch.eye(T, dtype=outputs.dtype, device=outputs.device)[:, None, :].expand(T, *outputs.shape)
    try:
        (grads,) = torch.autograd.grad(outputs, inputs, grad_outputs=selectors, is_grads_batched=True,
                                       retain_graph=True)
        return grads
    except RuntimeError:
        rows = [torch.autograd.grad(outputs, inputs, grad_outputs=selectors[t], retain_graph=True)[0]
                for t in range(T)]
        return torch.stack(rows)
