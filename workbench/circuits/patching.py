"""Activation patching: how much of the clean answer comes back when one clean activation is
copied into the corrupted run, at every (layer, position, component, unit).

    effect = (patched_ld - corrupted_ld) / (clean_ld - corrupted_ld)

where ld is the logit difference logit[answer] - logit[wrong] at the answer position, averaged over
the pairs: 1 means the patched activation carries everything that tells the two answers apart,
0 nothing.

Why it is fast: one forward per (layer, component, unit) covers every position at once (the batch
is positions x pairs, each copy patched at its own position), and it starts at the patched layer
from the corrupted run's cached residual stream, since nothing below that layer changes. Positions
after the last answer position cannot change an answer in a causal model: the runs stop there and
their rows read effect 0 (the corrupted logit difference) without a forward. In the last block
only the answer rows go through the MLP. The clean and corrupted runs are themselves made at the
batch shape of the patched runs (positions x pairs): some kernels (S4D's FFT convolution, the GRU)
round differently at another batch size, and patching clean into clean must give the logits of the
forward that listens to the same hook, bit for bit. When the clean and corrupted logit differences
are equal the effect is undefined (NaN).

Components: resid_pre, mixer_out, mlp_out, resid_post (unit -1, the whole stream) and units (the
mixer's output per unit before its output projection: heads for attention and linear attention,
channels for the others). Channels come in at most `unit_groups` contiguous groups by default
(Mamba has 2 x d_model of them); `unit` is then the group's index, and `result.attrs["unit_groups"]`
holds each layer's [start, stop) channel ranges. unit_groups=None patches every channel.
"""
from __future__ import annotations

import pandas as pd
import torch
from torch import Tensor

from ..errors import ConfigError
from ..evaluate import eval_mode
from .pairs import Pairs

COMPONENTS = ("resid_pre", "mixer_out", "mlp_out", "resid_post", "units")
COLUMNS = ["layer", "position", "component", "unit", "effect", "logit_diff"]
HOOKS = {"resid_pre": "blocks.{}.hook_resid_pre", "mixer_out": "blocks.{}.hook_mixer_out",
         "mlp_out": "blocks.{}.hook_mlp_out", "resid_post": "blocks.{}.hook_resid_post",
         "units": "blocks.{}.mixer.hook_units"}


def patching_sweep(model, pairs: Pairs, components=("resid_pre", "mixer_out", "mlp_out", "units"),
                   unit_groups: int | None = 8) -> pd.DataFrame:
    """A DataFrame with COLUMNS: one row per (layer, component, unit, position)."""
    for component in components:
        if component not in COMPONENTS:
            raise ConfigError("components", component, "choose from: " + ", ".join(COMPONENTS))
    with eval_mode(model), torch.no_grad():
        patcher = Patcher(model, pairs, components)
        clean_ld, corrupted_ld = patcher.clean_ld, patcher.corrupted_ld
        frames, ranges = [], {}
        for layer in range(len(model.blocks)):
            for component in components:
                if component == "mlp_out" and model.blocks[layer].mlp is None:
                    continue
                units = [(-1, None)]
                if component == "units":
                    spans = patcher.unit_spans(layer, unit_groups)
                    ranges[layer] = [(s.start, s.stop) for s in spans]
                    units = list(enumerate(spans))
                for unit, span in units:
                    ld = patcher.logit_diffs(layer, component, span).mean(dim=1)  # (positions,)
                    frames.append(sweep_rows(layer, component, unit, ld, corrupted_ld, clean_ld, patcher.T_full))
    result = pd.concat(frames, ignore_index=True)[COLUMNS]
    result.attrs.update(clean_logit_diff=clean_ld, corrupted_logit_diff=corrupted_ld, unit_groups=ranges)
    return result


def sweep_rows(layer, component, unit, ld: Tensor, corrupted_ld: float, clean_ld: float, T_full: int) -> pd.DataFrame:
    values = torch.full((T_full,), corrupted_ld, dtype=torch.float64)
    values[: ld.shape[0]] = ld.double()
    denominator = clean_ld - corrupted_ld
    effect = (values - corrupted_ld) / denominator if denominator != 0 else torch.full_like(values, float("nan"))
    return pd.DataFrame({"layer": layer, "position": range(T_full), "component": component, "unit": unit,
                         "effect": effect.numpy(), "logit_diff": values.numpy()})


class Patcher:
    """The clean and corrupted runs of some pairs, cached once, and patched forwards from them."""

    def __init__(self, model, pairs: Pairs, components):
        self.model, self.pairs = model, pairs
        self.T_full = pairs.clean.shape[1]
        self.T = int(pairs.answer_position.max()) + 1  # later positions cannot reach any answer
        cut = lambda t: None if t is None else t[:, : self.T]  # noqa: E731
        self.clean, self.corrupted, self.position_ids = cut(pairs.clean), cut(pairs.corrupted), cut(pairs.position_ids)
        # every run at the batch shape of the patched runs (see the module's docstring)
        P, N = self.T, len(pairs)
        self.copies = torch.arange(P)
        self.answer_position = pairs.answer_position.repeat(P)
        self.answer, self.wrong = pairs.answer.repeat(P), pairs.wrong.repeat(P)
        self.expanded_ids = None if self.position_ids is None else self.position_ids.repeat(P, 1)
        n_layers = len(model.blocks)
        names = [HOOKS[c].format(i) for c in components for i in range(n_layers)
                 if not (c == "mlp_out" and model.blocks[i].mlp is None)]
        self.clean_at_position: dict[str, Tensor] = {}
        logits = self.expanded_run(self.clean, {name: self.keep_own_position for name in names})
        self.clean_ld = float(self.answer_ld(logits[:N]).mean())
        self.starts: dict[str, Tensor] = {}
        keep = lambda value, hook: self.starts.__setitem__(hook.name, value)  # noqa: E731
        logits = self.expanded_run(self.corrupted, {HOOKS["resid_pre"].format(i): keep for i in range(n_layers)})
        self.corrupted_ld = float(self.answer_ld(logits[:N]).mean())
        self.expanded_tokens = self.corrupted.repeat(P, 1)
        self.context = model.mixer_context(self.expanded_tokens, self.expanded_ids)

    def expanded_run(self, tokens: Tensor, listeners: dict) -> Tensor:
        """The answer position's logits of the batch repeated once per position, (P * N, vocab)."""
        with self.model.hooks(listeners):
            logits = self.model(tokens.repeat(self.T, 1), self.expanded_ids)
        return logits[torch.arange(logits.shape[0]), self.answer_position]

    def keep_own_position(self, value: Tensor, hook) -> None:
        """Of the repeated clean run, keep what copy p holds at position p: (P, N, ...)."""
        view = value.view(self.T, len(self.pairs), *value.shape[1:])
        self.clean_at_position[hook.name] = view[self.copies, :, self.copies].clone()

    def answer_ld(self, logits: Tensor, answer: Tensor | None = None, wrong: Tensor | None = None) -> Tensor:
        answer = self.pairs.answer if answer is None else answer
        wrong = self.pairs.wrong if wrong is None else wrong
        rows_ = torch.arange(logits.shape[0])
        return logits[rows_, answer] - logits[rows_, wrong]

    def unit_spans(self, layer: int, unit_groups: int | None) -> list[slice]:
        _, _, U, width = self.clean_at_position[HOOKS["units"].format(layer)].shape
        if width > 1 or unit_groups is None or U <= unit_groups:
            return [slice(u, u + 1) for u in range(U)]
        return [slice(int(c[0]), int(c[-1]) + 1) for c in torch.arange(U).chunk(unit_groups)]

    def answer_logits(self, layer: int, component: str, span: slice | None) -> Tensor:
        """(positions, pairs, vocab): the answer position's logits with the clean activation patched
        in at each position; copy p of the batch is patched at position p."""
        name = HOOKS[component].format(layer)
        clean = self.clean_at_position[name]  # (P, N, ...)
        P, N = self.T, len(self.pairs)
        copies = self.copies

        def patch(value: Tensor, hook) -> Tensor:
            value = value.clone(memory_format=torch.contiguous_format)
            view = value.view(P, N, *value.shape[1:])
            if span is None:
                view[copies, :, copies] = clean
            else:
                view[copies, :, copies, span] = clean[:, :, span]
            return value

        x = self.starts[HOOKS["resid_pre"].format(layer)]
        blocks = self.model.blocks[layer:]
        last_whole = component in ("mlp_out", "resid_post") and layer == len(self.model.blocks) - 1
        with self.model.hooks({name: patch}):
            for block in blocks if last_whole else blocks[:-1]:
                x = block(x, self.context)
            final = x[torch.arange(P * N), self.answer_position] if last_whole else self.last_block(blocks[-1], x)
        return self.model.unembed(self.model.norm_final(final)).view(P, N, -1)

    def last_block(self, block, x: Tensor) -> Tensor:
        """The last block's output at the answer positions only (B, D): Block.forward, with its MLP
        (a quarter of the work) run on the one row per copy that reaches the answer."""
        rows = torch.arange(x.shape[0])
        x = block.hook_resid_pre(x)
        x = (x + block.hook_mixer_out(block.mixer(block.norm_mixer(x), self.context)))[rows, self.answer_position]
        return x if block.mlp is None else x + block.mlp(block.norm_mlp(x))

    def logit_diffs(self, layer: int, component: str, span: slice | None) -> Tensor:
        logits = self.answer_logits(layer, component, span).flatten(0, 1)
        return self.answer_ld(logits, self.answer, self.wrong).view(self.T, len(self.pairs))
