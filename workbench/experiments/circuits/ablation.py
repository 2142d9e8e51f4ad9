"""The causal half of induction-heads: mean-ablate the units the answer-induction detector flags on
a trained model, and as many random other units, and measure exact match each time.

A unit is flagged when its answer-induction score is at least DETECTED (a third of its weight on the
answer's source, where a uniform map over ~30 tokens puts ~3%); with none flagged, the best unit
is. LSTM and GRU have one map per layer, so their unit is the whole layer and no other unit of the
same kind is left to ablate at random (the random control then reads None).
"""
from __future__ import annotations

import torch

from ...analysis import load_model
from ...circuits.detectors import answer_induction_scores
from ...evaluate import eval_generator, exact_match

DETECTED = 0.3
REFERENCE_SAMPLES = 256  # the samples the unit means are taken over (a separate stream from the evaluation's)


def chance(finished) -> float:
    """Exact match of a uniform guess among the alphabet's symbols (the answer's EOS is free)."""
    config = finished[0][1].config() if finished else None
    return 1.0 / config.task.params["alphabet"] if config else 0.0


def flagged_units(scores) -> list[tuple[int, int]]:
    """(layer, unit) pairs scoring >= DETECTED, else the single best one."""
    chosen = scores[scores.score >= DETECTED]
    if chosen.empty:
        chosen = scores.nlargest(1, "score")
    return [(int(layer), int(unit)) for layer, unit in zip(chosen.layer, chosen.unit)]


def random_units(model, flagged: list[tuple[int, int]], seed: int) -> list[tuple[int, int]] | None:
    """As many (layer, unit) pairs as flagged, drawn from the units not flagged; None when a flagged
    unit is a whole layer (RNNs) or too few others exist."""
    if any(unit < 0 for _, unit in flagged):
        return None
    pool = [(layer, unit) for layer in range(len(model.blocks)) for unit in range(unit_count(model, layer))
            if (layer, unit) not in flagged]
    if len(pool) < len(flagged):
        return None
    order = torch.randperm(len(pool), generator=torch.Generator().manual_seed(seed))[:len(flagged)]
    return sorted(pool[i] for i in order.tolist())


def unit_count(model, layer: int) -> int:
    """How many units the layer's hook_units splits its mixer's output into."""
    tokens = torch.zeros(1, 2, dtype=torch.long)
    _, cache = model.run_with_cache(tokens, names=[f"blocks.{layer}.mixer.hook_units"])
    return cache[f"blocks.{layer}.mixer.hook_units"].shape[2]


def ablated_accuracy(model, task, units: list[tuple[int, int]], samples: int, seed: int) -> float:
    """Exact match with these units mean-ablated at every position: each replaced by its mean over the
    reference samples' positions (a unit -1 is its layer's whole mixer output)."""
    reference = task.sample(REFERENCE_SAMPLES, eval_generator(seed + 1), train=False)
    hooks = {}
    for layer in sorted({layer for layer, _ in units}):
        chosen = [unit for l, unit in units if l == layer]
        name = f"blocks.{layer}.hook_mixer_out" if -1 in chosen else f"blocks.{layer}.mixer.hook_units"
        with torch.no_grad():
            _, cache = model.run_with_cache(reference.tokens, reference.position_ids, names=[name])
        keep = reference.tokens != 0  # PAD positions would pull the mean toward padding
        mean = cache[name][keep].mean(dim=0)  # (D,) or (U, width)
        hooks[name] = _replacer(mean, None if -1 in chosen else chosen)
    with model.hooks(hooks):
        return exact_match(model, task, samples, eval_generator(seed))[0]


def _replacer(mean, units):
    def replace(value, hook):
        value = value.clone()
        if units is None:
            value[:] = mean
        else:
            value[:, :, units] = mean[units]
        return value
    return replace


def ablate_detected(run, seed: int, samples: int) -> dict:
    """Intact, flagged-ablated and random-ablated exact match of the run's final model."""
    model, task = load_model(run)
    probe = task.sample(REFERENCE_SAMPLES, eval_generator(seed + 2), train=False)
    flagged = flagged_units(answer_induction_scores(model, probe))
    control = random_units(model, flagged, seed)
    return {"intact_accuracy": exact_match(model, task, samples, eval_generator(seed))[0],
            "detected": [list(u) for u in flagged], "random": None if control is None else [list(u) for u in control],
            "ablated_accuracy": ablated_accuracy(model, task, flagged, samples, seed),
            "random_ablated_accuracy": None if control is None else ablated_accuracy(model, task, control, samples, seed)}
