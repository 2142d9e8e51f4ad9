"""Interventions at a model's hook points: zero, mean-ablate, replace or patch any hooked activation.

    logits = run_with_interventions(model, corrupted, [
        patch("blocks.1.hook_resid_pre", clean_cache, positions=answer_positions),
        zero("blocks.0.mixer.hook_units", units=[2]),
        patch("blocks.0.mixer.hook_state", clean_cache, positions=5),
    ])

Each intervention names a hook point and what to write there, at the chosen positions (the time
axis: axis 1, or axis 2 for attention's q, k, v, scores, pattern and entropy, which are
(B, H, T, ...)) and, on `hook_units` only, the chosen units (heads or channels, axis 2). Everything
not chosen keeps its value, bit for bit. An intervention is a listener on its hook point, so hooks
nobody intervenes on stay unlistened and cost nothing. On `mixer.hook_state` (a mixer's recurrent
state, see workbench/models/mixers/state.py) a patched state is taken up and the recurrence
continues from it.

positions: None (all), an int (negative counts from the end), a list of ints, a slice, or a (B,)
integer tensor with one position per example (answers sit at different positions).
units: None (all), an int, a list of ints or a slice.
"""
from __future__ import annotations

import contextlib
import difflib
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import torch
from torch import Tensor, nn

from ..errors import ConfigError, check

Positions = int | Sequence[int] | slice | Tensor | None
Units = int | Sequence[int] | slice | None

# hook points whose values are (B, H, T, ...): their positions are on axis 2
HEAD_FIRST = ("hook_q", "hook_k", "hook_v", "hook_scores", "hook_pattern", "hook_entropy")
KINDS = ("zero", "mean", "replace", "patch")


def time_axis(hook: str) -> int:
    return 2 if hook.rsplit(".", 1)[-1] in HEAD_FIRST else 1


def has_units(hook: str) -> bool:
    return hook.rsplit(".", 1)[-1] == "hook_units"


@dataclass(frozen=True, eq=False)
class Intervention:
    """Write `kind`'s value into hook point `hook` at `positions` (and `units`). Build one with
    zero, mean_ablate, replace or patch."""

    hook: str
    kind: str
    source: Tensor | Mapping[str, Tensor] | None = None
    positions: Positions = None
    units: Units = None

    def __post_init__(self):
        check(self.kind in KINDS, "kind", self.kind, "choose one of: " + ", ".join(KINDS))
        if self.units is not None and not has_units(self.hook):
            raise ConfigError("units", self.units, f"hook {self.hook!r} has no unit axis; units select heads or "
                                                   "channels on a mixer's hook_units (blocks.{i}.mixer.hook_units)")
        if self.kind == "patch" and isinstance(self.source, Mapping) and self.hook not in self.source:
            held = ", ".join(sorted(self.source)) or "nothing"
            raise ConfigError("patch source", self.hook, f"the cache has no value for this hook (it holds: {held}); "
                                                         "run the source with run_with_cache(names=[...]) naming it")
        if self.kind in ("mean", "replace", "patch"):
            check(isinstance(self.source, (Tensor, Mapping)), f"{self.kind} value", type(self.source).__name__,
                  "a tensor" + (" or a cache (hook name -> tensor)" if self.kind == "patch" else ""))

    def apply(self, value: Tensor) -> Tensor:
        """The hooked value with this intervention written in."""
        chosen = self.mask(value)
        if self.kind == "zero":
            new = torch.zeros((), dtype=value.dtype, device=value.device)
        else:
            new = self.source[self.hook] if isinstance(self.source, Mapping) else self.source
            new = new.to(device=value.device, dtype=value.dtype)
            if not broadcasts(new.shape, value.shape):
                what = "a per-position slice" if self.kind in ("mean", "replace") else "the hooked value"
                raise ConfigError(f"{self.kind} value shape", tuple(new.shape),
                                  f"{what} that broadcasts to the value at {self.hook!r}, {tuple(value.shape)}")
        # written in the value's own memory layout: downstream kernels can round differently on a
        # different layout, and what was not chosen must stay bit for bit
        return torch.empty_like(value).copy_(torch.where(chosen, new, value))  # copy_: differentiable

    def mask(self, value: Tensor) -> Tensor:
        """A bool tensor that broadcasts to value: True at the chosen positions and units."""
        axis = time_axis(self.hook)
        check(value.dim() > axis, "hook", self.hook, f"a hook whose value has a time axis {axis} "
                                                     f"(this one's shape is {tuple(value.shape)})")
        batch, length = value.shape[0], value.shape[axis]
        chosen = position_mask(self.positions, batch, length, value.device)  # (B, T)
        shape = [batch] + [1] * (value.dim() - 1)
        shape[axis] = length
        chosen = chosen.view(shape)
        if self.units is not None:
            count = value.shape[2]
            unit_shape = [1] * value.dim()
            unit_shape[2] = count
            chosen = chosen & index_mask(self.units, count, "units", "heads or channels",
                                         value.device).view(unit_shape)
        return chosen

    def listener(self, value: Tensor, hook) -> Tensor:
        return self.apply(value)


def zero(hook: str, positions: Positions = None, units: Units = None) -> Intervention:
    """Set the hooked value to zero at the chosen positions (and units)."""
    return Intervention(hook, "zero", None, positions, units)


def mean_ablate(hook: str, mean: Tensor, positions: Positions = None, units: Units = None) -> Intervention:
    """Set the hooked value to `mean` (e.g. mean_activation(...): a per-position slice, which
    broadcasts over batch and positions) at the chosen positions (and units)."""
    return Intervention(hook, "mean", mean, positions, units)


def replace(hook: str, value: Tensor, positions: Positions = None, units: Units = None) -> Intervention:
    """Set the hooked value to `value` (anything that broadcasts to the hooked value: a per-position
    slice, a steering vector, a whole tensor) at the chosen positions (and units). With units, a
    per-position slice holds every unit; the chosen ones are taken from it."""
    return Intervention(hook, "replace", value, positions, units)


def patch(hook: str, source: Mapping[str, Tensor] | Tensor, positions: Positions = None,
          units: Units = None) -> Intervention:
    """Take the value at the chosen positions (and units) from another run: its cache from
    run_with_cache (hook name -> tensor) or the tensor itself, shaped as this run's value (a batch
    of one broadcasts over the batch)."""
    return Intervention(hook, "patch", source, positions, units)


def broadcasts(shape: Sequence[int], target: Sequence[int]) -> bool:
    try:
        return torch.broadcast_shapes(tuple(shape), tuple(target)) == tuple(target)
    except RuntimeError:
        return False


def index_mask(index: int | Sequence[int] | slice, count: int, field: str, what: str, device) -> Tensor:
    """(count,) bool, True at the indices chosen (ints may count from the end, as in Python)."""
    chosen = torch.zeros(count, dtype=torch.bool)
    if isinstance(index, slice):
        chosen[index] = True
        return chosen.to(device)
    check(isinstance(index, (int, list, tuple, range)), field, index, f"an int, a list of ints or a slice of {what}")
    indices = [index] if isinstance(index, int) else list(index)
    for i in indices:
        check(isinstance(i, int) and not isinstance(i, bool), field, i, f"integer {what}")
        check(-count <= i < count, field, i, f"{what} in [{-count}, {count}) ({count} of them here)")
        chosen[i] = True
    return chosen.to(device)


def position_mask(positions: Positions, batch: int, length: int, device) -> Tensor:
    """(B, T) bool: the positions chosen in each example."""
    if positions is None:
        return torch.ones(batch, length, dtype=torch.bool, device=device)
    if not isinstance(positions, Tensor):
        return index_mask(positions, length, "positions", "positions", device).expand(batch, length)
    check(positions.dim() == 1 and positions.shape[0] == batch and not positions.is_floating_point(),
          "positions", f"tensor of shape {tuple(positions.shape)} and dtype {positions.dtype}",
          f"one integer position per example, shape ({batch},), or an int, a list or a slice")
    bad = (positions < -length) | (positions >= length)
    if bool(bad.any()):
        example = int(bad.int().argmax())
        raise ConfigError("positions", int(positions[example]),
                          f"positions in [{-length}, {length}) (sequence length {length}; example {example})")
    positions = positions.to(device) % length
    return torch.arange(length, device=device)[None] == positions[:, None]


def check_hooks(model: nn.Module, interventions: Iterable[Intervention]) -> None:
    """A ConfigError for a hook name the model does not have, listing close matches first."""
    points = model.hook_points()
    for intervention in interventions:
        if intervention.hook not in points:
            close = difflib.get_close_matches(intervention.hook, list(points), n=5, cutoff=0.5)
            rest = [name for name in points if name not in close]
            raise ConfigError("hook", intervention.hook, "hook points of this model: " + ", ".join(close + rest))


@contextlib.contextmanager
def intervened(model: nn.Module, interventions: Iterable[Intervention]):
    """A context in which every forward of the model carries the interventions; they are removed on
    exit, exceptions included. Several on one hook point apply in the order given."""
    interventions = list(interventions)
    for intervention in interventions:
        check(isinstance(intervention, Intervention), "interventions", intervention,
              "Intervention objects (from zero, mean_ablate, replace or patch)")
    check_hooks(model, interventions)
    with model.hooks([(i.hook, i.listener) for i in interventions]):
        yield model


def run_with_interventions(model: nn.Module, tokens: Tensor, interventions: Iterable[Intervention],
                           position_ids: Tensor | None = None, grad: bool = False) -> Tensor:
    """The logits of one forward with the interventions, in eval mode and (unless grad) without
    gradients; the model's training mode is restored afterwards."""
    training = model.training
    model.eval()
    try:
        with intervened(model, interventions), torch.set_grad_enabled(grad):
            return model(tokens, position_ids=position_ids)
    finally:
        model.train(training)


def mean_activation(model: nn.Module, tokens: Tensor, hook: str, position_ids: Tensor | None = None,
                    keep: Tensor | None = None) -> Tensor:
    """The hooked value's mean over the batch and the positions, for mean_ablate: the per-position
    slice (value.shape[2:]), or (H, 1, ...) for the head-first hooks, in eval mode without grad.
    keep: (B, T) bool, the positions to average over (e.g. tokens != PAD in a padded batch)."""
    check_hooks(model, [Intervention(hook, "zero")])
    training = model.training
    model.eval()
    try:
        with torch.no_grad():
            _, cache = model.run_with_cache(tokens, position_ids=position_ids, names=[hook])
    finally:
        model.train(training)
    axis = time_axis(hook)
    value = cache[hook]
    if keep is not None:
        check(axis == 1, "keep", "a position mask", f"only for hooks whose positions are axis 1, not {hook}")
        return value[keep].mean(dim=0)
    mean = value.mean(dim=(0, axis), keepdim=True)[0]
    return mean[0] if axis == 1 else mean
