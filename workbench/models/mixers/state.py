"""A mixer's recurrent state through `hook_state`: observed, and patched at any position.

A mixer with a recurrence h_t = step(h_{t-1}, t), y_t = readout(h_t, t) computes its outputs on a
fast path (a scan kernel, a convolution, a fused RNN). Only while someone listens to `hook_state`
does it also step the recurrence in Python to get the whole trajectory (B, T, *state) and hand it
to the hook. If the listener gives back a trajectory that differs somewhere, the recurrence is run
again from the earliest changed position: at every changed position the returned state is taken,
at every other one the state is stepped from the one before, and the outputs from each example's
first change on are read out of these new states. Everything before an example's first change,
and the whole output when nothing changed, is the fast path's own tensor: bit for bit what an
unlistened forward gives.
"""
from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor

from ...errors import check
from ..hooks import HookPoint

Step = Callable[[Tensor, int], Tensor]  # (h_{t-1} (B, *state), t) -> h_t
Readout = Callable[[Tensor, int], Tensor]  # (h_t, t) -> y_t (B, *out)


def trajectory(initial: Tensor, step: Step, length: int) -> Tensor:
    """(B, T, *state): h_0 ... h_{T-1}, stepped from `initial` (the state before the first token)."""
    states, h = [], initial
    for t in range(length):
        h = step(h, t)
        states.append(h)
    return torch.stack(states, dim=1)


def through_state_hook(hook: HookPoint, outputs: Tensor, initial: Tensor, step: Step, readout: Readout) -> Tensor:
    """The mixer's outputs (B, T, *out) from the fast path, after a listener to `hook` had its say.

    Call only while `hook.active`: it steps the whole sequence in Python (analysis speed)."""
    length = outputs.shape[1]
    states = trajectory(initial, step, length)
    returned = hook(states)
    if returned is states:
        return outputs
    check(returned.shape == states.shape, hook.name or "hook_state", tuple(returned.shape),
          f"a state trajectory of the shape the mixer gave, {tuple(states.shape)}")
    returned = returned.to(states.dtype)
    changed = (returned != states).flatten(2).any(dim=-1)  # (B, T)
    if not bool(changed.any()):
        return outputs
    batch = changed.shape[0]
    # each example's first changed position (T where none): its outputs before that stay as they are
    first = torch.where(changed.any(dim=1), changed.int().argmax(dim=1), length)
    start = int(first.min())
    h = states[:, start - 1] if start > 0 else initial
    rerun = []
    for t in range(start, length):
        h = step(h, t)
        take = changed[:, t].view(batch, *[1] * (h.dim() - 1))
        h = torch.where(take, returned[:, t], h)
        rerun.append(readout(h, t))
    rerun = torch.stack(rerun, dim=1)
    later = torch.arange(start, length, device=first.device)[None] >= first[:, None]  # (B, T - start)
    later = later.view(*later.shape, *[1] * (outputs.dim() - 2))
    patched = outputs.clone()  # the same memory layout: later layers then compute bit for bit alike
    patched[:, start:] = torch.where(later, rerun.to(outputs.dtype), outputs[:, start:])
    return patched
