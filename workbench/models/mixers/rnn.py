"""Recurrent mixers: LSTM and GRU (torch.nn, one layer, hidden size d_model).

An RNN has no explicit map, so its attention-like map is input-gradient saliency:
    saliency[t, s] = sum_i | d (sum_c y_t[c]) / d x_s[i] |
the L1 norm over input channels of the gradient of output t's channel sum with respect to input s
(one batched backward pass over output positions, not the full D x D Jacobian). It is zero above the
diagonal because the RNN is causal. Computed with autograd, on a detached copy of the input, only
when `hook_pattern` listens or `attention_like` is called; it works under torch.no_grad too.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from .base import Mixer, MixerContext, register_mixer


class RecurrentMixer(Mixer):
    cell: type[nn.RNNBase]
    states_per_channel = 1

    def __init__(self, config, layer_index):
        super().__init__(config, layer_index)
        self.rnn = self.cell(config.d_model, config.d_model, batch_first=True)

    def forward(self, x: Tensor, context: MixerContext) -> Tensor:
        if self.hook_pattern.active:
            self.hook_pattern(self.attention_like(x, context))
        return self.units(self.rnn(x)[0], x.shape[-1])

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
