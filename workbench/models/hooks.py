"""Named hook points in the TransformerLens manner, with near-zero cost when nobody listens.

A HookPoint is an identity module. Listeners are plain functions `fn(value, hook) -> value | None`;
returning a tensor replaces the value. Modules check `hook.active` before computing anything that
exists only for listeners (a full T x T attention map, say).
"""
from __future__ import annotations

import contextlib
from typing import Callable, Iterable

from torch import Tensor, nn

Listener = Callable[[Tensor, "HookPoint"], Tensor | None]


class HookPoint(nn.Module):
    def __init__(self):
        super().__init__()
        self.listeners: list[Listener] = []
        self.name = ""

    @property
    def active(self) -> bool:
        return bool(self.listeners)

    def forward(self, value: Tensor) -> Tensor:
        for listener in self.listeners:
            result = listener(value, self)
            if result is not None:
                value = result
        return value


class HookedModule(nn.Module):
    """Gives a model `hook_points()`, `hooks({...})` and `run_with_cache(...)`."""

    def name_hooks(self) -> None:
        """Name every hook point and remember them: a HookPoint learns its name here once, so the
        set of hook points is fixed at construction anyway, and walking named_modules on every
        hooks() or run_with_cache() call cost ~0.15 ms a call on a 2-layer model."""
        points = {name: m for name, m in self.named_modules() if isinstance(m, HookPoint)}
        for name, module in points.items():
            module.name = name
        self._hook_points = points

    def hook_points(self) -> dict[str, HookPoint]:
        if "_hook_points" not in self.__dict__:  # a subclass that never called name_hooks()
            self.name_hooks()
        return dict(self._hook_points)

    @contextlib.contextmanager
    def hooks(self, listeners: dict[str, Listener] | Iterable[tuple[str, Listener]]):
        points = self.hook_points()
        items = list(listeners.items() if isinstance(listeners, dict) else listeners)
        for name, _ in items:
            if name not in points:
                raise KeyError(f"no hook point {name!r}; available: {', '.join(points)}")
        try:
            for name, fn in items:
                points[name].listeners.append(fn)
            yield self
        finally:
            for name, fn in items:
                points[name].listeners.remove(fn)

    def expose(self, names: Iterable[str]):
        """A context in which these hook points compute their values though no workbench listener
        asks, for tools that read the HookPoint modules from outside (nnsight, torch forward hooks):
        a hook point nobody listens to is skipped, e.g. attention then never builds its T x T map."""
        return self.hooks([(name, _no_op) for name in names])

    def run_with_cache(self, *args, names: Iterable[str] | Callable[[str], bool] | None = None,
                       detach: bool = True, **kwargs) -> tuple[Tensor, dict[str, Tensor]]:
        """Run the model and return (output, {hook name: value}) for the chosen hook points."""
        points = self.hook_points()
        if names is None:
            chosen = list(points)
        elif callable(names):
            chosen = [n for n in points if names(n)]
        else:
            chosen = list(names)
        cache: dict[str, Tensor] = {}

        def store(value: Tensor, hook: HookPoint) -> None:
            cache[hook.name] = value.detach() if detach else value

        with self.hooks({name: store for name in chosen}):
            output = self(*args, **kwargs)
        return output, cache


def _no_op(value: Tensor, hook: HookPoint) -> None:
    return None
