"""attention-temperature: a temperature chosen after training, with the weights left as trained, against
the flattening of attention at lengths never trained on (Wang et al. 2024, arXiv 2404.12224; Chi et al.
2023, arXiv 2311.00684).

The models are attention-flattening's: 2-layer Transformers trained on passkey retrieval with 8-32
filler tokens, here NoPE (Wang et al.'s setting) and T5's bucketed relative bias (Chi et al.'s). At each
test length every model is read four ways, the T5 models a fifth (workbench.circuits.temperature):

- plain: as trained;
- uniform: one factor on every head's logits, the grid's best by answer loss on validation samples of
  that length (Wang et al.'s UniformScale);
- head: a factor per head, trained once at the longest length with the weights frozen, from the uniform
  factor found there, never below 1 (Wang et al.'s HeadScale), then used at every length;
- aligned: one factor at which the mean answer entropy over every head matches the model's own at the
  training length, no labels read (our reading of Chi et al.'s entropy alignment);
- maxprob (T5 only): the same with the answer's mean largest attention weight in place of the entropy (our
  reading of Chi et al.'s other alignment).

Exact match is reported on the same evaluation samples as attention-flattening's, the factors are chosen
on others. The last layer's answer entropy is measured as there.
"""
from __future__ import annotations

import pandas as pd
import torch
from tqdm.auto import tqdm

from ..analysis import load_model
from ..circuits.temperature import HEAD_STEPS, attention_temperature, choose_factors, scaled_exact_match
from ..evaluate import eval_generator
from ..probes.entropy_length import entropy_at_length
from .base import Experiment, ExperimentResult, Variant, register_experiment
from .lengthgen_flattening import (ENTROPY_SAMPLES, EXACT_SAMPLES, FAST_TEST_FILLER, FLAT_SEEDS, GAIN, RISE_RULE,
                                   TEST_FILLER, TRAIN_FILLER, decide_rise, flattening_config, flattening_summary)
from .verdicts import FITS, Claim, Outcome, UntestedClaim, by_seeds, not_tested

ENCODINGS = ("nope", "t5_bias")
# How each model is read (workbench.circuits.temperature's readings; 1.0, the plain model, first). HeadScale
# is Wang et al.'s method for NoPE; with T5's bias its T x T logits make it the recipe's slowest step
# (about 400 s a run on one core), so the T5 models are read the other ways, both alignments included.
METHODS = {"nope": (1.0, "uniform", "aligned", "head"), "t5_bias": (1.0, "uniform", "aligned", "maxprob")}
VALIDATION_SAMPLES, ALIGN_SAMPLES = 64, 32
FAST_HEAD_STEPS = 40
# Fixed before the runs: a way of choosing the temperature "buys accuracy" when exact match at 32x the
# training filler is at least 10 points above the plain model's (the bar attention-flattening's scalings
# meet), on a seed whose plain model fits its training lengths. HeadScale "goes further" than the uniform
# factor by the same 10 points; a seed whose uniform factor already reaches 90% leaves no room to tell.
ROOM = 0.90


def model_name(pos: str, method: str) -> str:
    return pos if method == "plain" else f"{pos}-{method}"


def temperature_variants(fast: bool) -> list[Variant]:
    return [Variant(flattening_config(pos, [], seed, fast), {"model": pos, "pos": pos, "seed": seed})
            for pos in (ENCODINGS[:1] if fast else ENCODINGS) for seed in (FLAT_SEEDS[:1] if fast else FLAT_SEEDS)]


def temperature_analyze(finished, fast):
    lengths = FAST_TEST_FILLER if fast else TEST_FILLER
    sizes = dict(exact=64, entropy=16, validation=32, align=16) if fast else dict(
        exact=EXACT_SAMPLES, entropy=ENTROPY_SAMPLES, validation=VALIDATION_SAMPLES, align=ALIGN_SAMPLES)
    rows, head_scales = [], {}
    for variant, run in tqdm(finished, desc="temperatures", disable=len(finished) < 2):
        model, task = load_model(run)
        pos, seed = variant.labels["pos"], variant.labels["seed"]
        chosen = choose_factors(model, task, METHODS[pos], lengths, seed, TRAIN_FILLER, sizes["validation"],
                                sizes["align"], FAST_HEAD_STEPS if fast else HEAD_STEPS)
        if "head" in METHODS[pos]:
            head_scales.setdefault(pos, {})[str(seed)] = chosen[max(lengths)]["head"].tolist()
        for filler in lengths:
            for reading, factors in chosen[filler].items():  # each on the same evaluation samples
                method = "plain" if reading == 1.0 else reading
                samples = eval_generator(seed, filler)
                exact = scaled_exact_match(model, task, factors, sizes["exact"], samples, filler)[0]
                with attention_temperature(model, factors):
                    entropy = entropy_at_length(model, task, filler, sizes["entropy"], seed, at_answer=True)
                rows.append({"model": model_name(pos, method), "pos": pos, "method": method, "seed": seed,
                             "filler": filler, "exact_match": exact,
                             "answer_entropy": float(entropy[max(entropy)][0].mean()),
                             "scale": float(torch.as_tensor(factors).mean())})
    table = pd.DataFrame(rows)
    return table, temperature_summary(table, head_scales, fast)


def temperature_summary(table: pd.DataFrame, head_scales: dict, fast: bool) -> dict:
    summary = flattening_summary(table, fast)
    longest = summary["longest"]
    for (name, seed), part in table.groupby(["model", "seed"], sort=False):
        summary["models"][name][str(int(seed))]["scale_longest"] = round(
            float(part.set_index("filler").scale[longest]), 4)
    summary["head_scales"] = head_scales
    return summary


def decide_gain(better: str, worse: str, room: float | None = None):
    def decide(summary: dict) -> Outcome:
        """Per seed whose plain model fits its training lengths: `better`'s exact match at 32x the training
        filler is >= 10 points above `worse`'s; with `room`, a seed where `worse` already reaches it
        cannot tell."""
        if summary.get("fast"):
            return not_tested("the fast budget tests 16x on one seed, not the recipe")
        models = summary.get("models", {})
        plain = models.get(better.split("-")[0], {})
        high, low = models.get(better, {}), models.get(worse, {})
        passed, numbers = {}, {}
        for seed in sorted(set(high) & set(low) & set(plain), key=int):
            a, b = low[seed], high[seed]
            can_tell = plain[seed]["exact_train"] >= FITS and (room is None or a["exact_longest"] < room)
            passed[int(seed)] = b["exact_longest"] >= a["exact_longest"] + GAIN if can_tell else None
            numbers[int(seed)] = (f"{b['exact_longest']:.0%} {label(better)} (x{b['scale_longest']:.2f}) vs "
                                  f"{a['exact_longest']:.0%} {label(worse)}; {b['exact_train']:.0%} at {TRAIN_FILLER}")
        why = f"the plain model did not fit its training lengths (< {FITS:.0%})"
        return by_seeds(passed, numbers, undecided=why + (f", or {label(worse)} already reached {room:.0%}"
                                                          if room else ""))
    return decide


def label(name: str) -> str:
    method = name.split("-")[1] if "-" in name else "plain"
    return {"plain": "plain", "uniform": "uniform factor", "head": "head factors", "aligned": "aligned factor",
            "maxprob": "factor aligned by largest weight"}[method]


def temperature_figure(result: ExperimentResult):
    from ..figures.lengthgen import flattening_curves
    return flattening_curves(result.table, TRAIN_FILLER, by="pos")


WANG, CHI = ("2404.12224",), ("2311.00684",)
PASSKEY_SCALE = "a 2-layer model trained on passkey with 8-32 filler tokens (the paper: a 1.1B NoPE language model)"
UNIFORM_FORM = ("one factor on every head's logits, the best of a grid (1-4) by answer loss on 64 held-out passkey "
                "samples of the test length, as the paper's by validation perplexity")
HEAD_FORM = ("a factor per head and layer trained on passkey samples of the test length with every weight frozen, "
             "from the uniform factor, clamped at 1, 200 steps of batch 8 at lr 5e-2 with 10% warmup as in the "
             "paper's code (which tunes on language-model text)")
ALIGN_FORM = ("one factor on every head's logits, chosen so that the mean answer entropy over every head at the test "
              "length equals the model's own at 32 filler tokens (our reading of the paper's entropy alignment; no "
              "labels read)")
MAX_PROB_FORM = ("one factor on every head's logits, chosen so that the answer's largest attention weight, averaged "
                 "over every head, at the test length equals the model's own at 32 filler tokens (our reading of the "
                 "paper's maximum-probability alignment; no labels read)")
GAIN_RULE = ("per seed whose plain model fits its training lengths (>= 95% at 32 filler tokens): exact match at 1024 "
             "filler tokens with {} >= 10 points above {}; then the shared rule over >= 3 seeds")

register_experiment(Experiment(
    name="attention-temperature",
    description="attention-flattening's passkey models (2-layer Transformers, d_model 64, 4 heads, 2000 steps on "
                "3 digits in 8-32 filler tokens), NoPE and T5's relative bias, seeds 0-2, read with a temperature "
                "chosen after training, the weights frozen: one factor searched on held-out samples (UniformScale), "
                "a factor per head trained at 1024 filler tokens (HeadScale, NoPE only), one factor aligning "
                "the attention entropy with the training length's, and (T5 only) one aligning the largest attention "
                "weight; exact match and the last layer's answer "
                "entropy up to 1024 filler tokens (32x).",
    variants=temperature_variants, analyze=temperature_analyze, figure=temperature_figure,
    claims=[
        Claim("uniform-scale", "One temperature for every head, searched after training on inputs of the test "
              "length, lifts NoPE's passkey accuracy far beyond the training length", WANG,
              "qualitative (NoPE extends to longer contexts by merely scaling the softmax: UniformScale)",
              f"{PASSKEY_SCALE}; {UNIFORM_FORM}", GAIN_RULE.format("the uniform factor", "the plain model"),
              decide_gain("nope-uniform", "nope")),
        Claim("head-scale", "A temperature per head, trained at the test length with the weights frozen, lifts "
              "NoPE's passkey accuracy far beyond the training length", WANG,
              "qualitative (HeadScale substantially expands NoPE's context)", f"{PASSKEY_SCALE}; {HEAD_FORM}",
              GAIN_RULE.format("the head factors", "the plain model"), decide_gain("nope-head", "nope")),
        Claim("head-beats-uniform", "Per-head temperatures go further than one for every head", WANG,
              "qualitative (HeadScale improves on UniformScale)", f"{PASSKEY_SCALE}; {HEAD_FORM}",
              GAIN_RULE.format("the head factors", "the uniform factor") + "; a seed whose uniform factor already "
              "reaches 90% cannot tell", decide_gain("nope-head", "nope-uniform", room=ROOM)),
        Claim("t5-flattening", "With T5's relative bias, attention at the answer flattens as inputs grow past the "
              "training length", CHI, "qualitative (T5's dispersed attention: the longer the input, the flatter)",
              "2-layer models with T5's bucketed bias (model.pos=t5_bias) trained on passkey (the paper: "
              "pretrained T5)", RISE_RULE.format(">="), decide_rise("t5_bias", flattens=True)),
        Claim("t5-alignment", "Aligning the attention temperature at inference, without fine-tuning, lifts a "
              "T5-bias model's passkey accuracy far beyond the training length", CHI,
              "qualitative (better retrieval, QA and language modelling from pretrained T5, no fine-tuning)",
              f"2-layer T5-bias models trained on passkey (the paper: pretrained T5); {ALIGN_FORM}",
              GAIN_RULE.format("the aligned factor", "the plain model"), decide_gain("t5_bias-aligned", "t5_bias")),
        Claim("t5-maxprob-alignment", "Aligning the largest attention weight instead (the paper's other strategy) "
              "also lifts a T5-bias model's passkey accuracy far beyond the training length", CHI,
              "qualitative (both alignments improve pretrained T5 without fine-tuning)",
              f"2-layer T5-bias models trained on passkey (the paper: pretrained T5); {MAX_PROB_FORM}",
              GAIN_RULE.format("the factor aligned by largest weight", "the plain model"),
              decide_gain("t5_bias-maxprob", "t5_bias")),
        Claim("nope-alignment", "The same alignment lifts NoPE's passkey accuracy (our comparison, reported "
              "whatever it shows)", CHI, "none: our comparison", f"NoPE; {ALIGN_FORM}",
              GAIN_RULE.format("the aligned factor", "the plain model"), decide_gain("nope-aligned", "nope")),
        Claim("t5-uniform", "A searched uniform temperature lifts a T5-bias model's passkey accuracy (our "
              "comparison, reported whatever it shows)", WANG + CHI, "none: our comparison",
              f"T5's bias; {UNIFORM_FORM}", GAIN_RULE.format("the uniform factor", "the plain model"),
              decide_gain("t5_bias-uniform", "t5_bias"))],
    untested=[
        UntestedClaim("Head temperatures tuned on language-model text extend a pretrained NoPE model's perplexity "
                      "and passkey retrieval to 8k-32k tokens", WANG,
                      "a NoPE language model pretrained on text (nothing is downloaded here)"),
        UntestedClaim("The alignment improves pretrained T5 on language modelling, retrieval, multi-document QA and "
                      "code completion", CHI, "pretrained T5 models (out of scope: nothing is downloaded)")]))
