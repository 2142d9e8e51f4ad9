"""The causal half of induction-heads: mean-ablate the units the answer-induction detector flags on
a trained model, and as many random other units, and measure exact match each time.

A unit is flagged when its answer-induction score is at least DETECTED (a third of its weight on the
answer's source, where a uniform map over ~30 tokens puts ~3%); with none flagged, the best unit
is. The random control draws as many unflagged units from the flagged units' own layers: units of
other layers are not a control, since the circuit needs them too (in a 2-layer model the first
layer's previous-token heads feed the induction heads, and ablating them breaks it as surely).
Where a layer has no unflagged unit left, or the flagged unit is a whole layer (LSTM and GRU have
one map per layer), the control reads None: there is nothing to compare with.
"""
from __future__ import annotations

import torch

from ...analysis import load_model
from ...circuits.detectors import answer_induction_scores
from ...circuits.interventions import intervened, mean_ablate, mean_activation
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
    """As many (layer, unit) pairs as flagged, drawn from the unflagged units of the flagged units'
    layers; None when a flagged unit is a whole layer (RNNs) or too few others exist there."""
    if any(unit < 0 for _, unit in flagged):
        return None
    layers = sorted({layer for layer, _ in flagged})
    pool = [(layer, unit) for layer in layers for unit in range(unit_count(model, layer))
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
    reference samples' real (non-padding) positions; a unit -1 is its layer's whole mixer output."""
    reference = task.sample(REFERENCE_SAMPLES, eval_generator(seed + 1), train=False)
    edits = []
    for layer in sorted({layer for layer, _ in units}):
        chosen = [unit for l, unit in units if l == layer]
        hook = f"blocks.{layer}.hook_mixer_out" if -1 in chosen else f"blocks.{layer}.mixer.hook_units"
        mean = mean_activation(model, reference.tokens, hook, reference.position_ids, keep=reference.tokens != 0)
        edits.append(mean_ablate(hook, mean, units=None if -1 in chosen else chosen))
    with intervened(model, edits):
        return exact_match(model, task, samples, eval_generator(seed))[0]


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
