"""attention-flattening: attention spreads out as inputs grow past the training length, and scaling
the logits by the log of the context length keeps it sharp (Chi et al. 2023, arXiv 2311.00684; Wang
et al. 2024, arXiv 2404.12224; Chiang & Cholak 2022, arXiv 2202.12172; Nakanishi 2025, arXiv 2501.19399).

Passkey retrieval needs one sharp look back at any length: the query '?' has to find the digits after
'K', however much filler surrounds them. Models are trained on 8-32 filler tokens and tested up to 32x
that. Each is measured where it matters, at the first answer prediction: the entropy of each head's
attention row there (in nats; log 2 more means the attention is spread over twice as many keys) and the
exact match of the whole passkey. The last layer is the one that reads the passkey: in a NoPE model
the first layer's heads average over the whole prefix (that is how it learns positions), so their
entropy grows as log(length) by design and says nothing about flattening.
"""
from __future__ import annotations

import math

import pandas as pd

from ..analysis import load_model
from ..evaluate import eval_generator, exact_match
from ..probes.entropy_length import entropy_at_length
from .base import Experiment, ExperimentResult, Variant, register_experiment
from .mixers import common
from .verdicts import FITS, Claim, Outcome, UntestedClaim, by_seeds, not_tested

TRAIN_FILLER = 32
FLAT_TASK = ["task.name=passkey", "task.min_length=8", f"task.max_length={TRAIN_FILLER}", "task.digits=3"]
# GPT-2's init (the default): with fan-in init the scaled NoPE model settled on copying digits by content
# and missed repeated digits (84% at the training lengths after 3000 steps; notes).
FLAT_MODEL = ["model.n_layers=2", "model.d_model=64", "model.n_heads=4", "train.batch_size=64", "train.lr=3e-3",
              "train.warmup=100", "probes.every=0"]
ENCODINGS = ("nope", "rope")  # NoPE is Wang et al.'s setting; RoPE is ours
FLAT_STEPS, FAST_STEPS = 2000, 1000
FLAT_SEEDS = (0, 1, 2)
TEST_FILLER, FAST_TEST_FILLER = (32, 64, 128, 256, 512, 1024), (32, 512)
EXACT_SAMPLES, ENTROPY_SAMPLES = 256, 64
# Fixed before the runs: flattening is the answer's attention spread over at least twice as many keys
# (entropy up by >= log 2 nats) at 32x the training filler; "kept sharp" is a rise below that. Scaling
# "buys accuracy" when exact match at 32x is at least 10 points higher than without it, same seed.
SPREAD = math.log(2)
GAIN = 0.10


# How each model scales its logits: not at all, by the fixed log(i + 2) / log 2 (model.logit_scaling), or
# by Scalable-Softmax's learned s times log(i + 1) (model.scalable_softmax, Nakanishi 2025; added
# 2026-12-07, after the first three had shipped). The fast budget trains the first two.
SCALINGS = {"none": [], "scaled": ["model.logit_scaling=true"], "ssmax": ["model.scalable_softmax=true"]}


def model_name(pos: str, scaling: str) -> str:
    return pos if scaling == "none" else f"{pos}-{scaling}"


def flattening_config(pos: str, overrides: list[str], seed: int, fast: bool):
    """The recipe's passkey model with this encoding and these settings (attention-temperature reads the
    same runs)."""
    steps = FAST_STEPS if fast else FLAT_STEPS
    return common.config(*FLAT_TASK, *FLAT_MODEL, f"model.pos={pos}", *overrides, f"train.steps={steps}",
                         f"train.eval_every={steps // 4}", "train.eval_samples=256", f"train.seed={seed}")


def flattening_variants(fast: bool) -> list[Variant]:
    out = []
    for pos in ENCODINGS[:1] if fast else ENCODINGS:
        for scaling, overrides in list(SCALINGS.items())[:2] if fast else SCALINGS.items():
            for seed in FLAT_SEEDS[:1] if fast else FLAT_SEEDS:
                out.append(Variant(flattening_config(pos, overrides, seed, fast),
                                   {"model": model_name(pos, scaling), "pos": pos, "scaling": scaling, "seed": seed}))
    return out


def flattening_analyze(finished, fast):
    lengths = FAST_TEST_FILLER if fast else TEST_FILLER
    exact_n, entropy_n = (64, 16) if fast else (EXACT_SAMPLES, ENTROPY_SAMPLES)
    rows = []
    for variant, run in finished:
        model, task = load_model(run)
        seed = variant.labels["seed"]
        for filler in lengths:
            exact, _ = exact_match(model, task, exact_n, eval_generator(seed, filler), length=filler)
            entropy = entropy_at_length(model, task, filler, entropy_n, seed, at_answer=True)
            first, last = min(entropy), max(entropy)
            rows.append({**variant.labels, "filler": filler, "exact_match": exact,
                         "answer_entropy": float(entropy[last][0].mean()),
                         "first_layer_entropy": float(entropy[first][0].mean())})
    table = pd.DataFrame(rows)
    return table, flattening_summary(table, fast)


def flattening_summary(table: pd.DataFrame, fast: bool) -> dict:
    longest = int(table.filler.max())
    models: dict = {}
    for (name, seed), part in table.groupby(["model", "seed"], sort=False):
        at = part.set_index("filler")
        models.setdefault(name, {})[str(int(seed))] = {
            "exact_train": round(float(at.exact_match[TRAIN_FILLER]), 4),
            "exact_longest": round(float(at.exact_match[longest]), 4),
            "entropy_train": round(float(at.answer_entropy[TRAIN_FILLER]), 4),
            "entropy_longest": round(float(at.answer_entropy[longest]), 4),
            "rise": round(float(at.answer_entropy[longest] - at.answer_entropy[TRAIN_FILLER]), 4)}
    headline = "; ".join(f"{name}: " + "/".join(f"{s['exact_longest']:.0%}" for _, s in sorted(seeds.items()))
                         + " exact, entropy " + "/".join(f"{s['rise']:+.2f}" for _, s in sorted(seeds.items()))
                         for name, seeds in models.items())
    return {"fast": fast, "train_filler": TRAIN_FILLER, "longest": longest, "models": models,
            "headline": f"at {longest} filler tokens ({longest // TRAIN_FILLER}x training; each seed), "
                        f"last layer's answer entropy rise from {TRAIN_FILLER}: {headline}"}


def _fits(seed_numbers: dict) -> bool:
    return seed_numbers["exact_train"] >= FITS


def decide_rise(name: str, flattens: bool):
    def decide(summary: dict) -> Outcome:
        """Per seed (a model that fits its training lengths): the last layer's answer entropy rises by
        >= log 2 nats from the longest training filler to 32x (flattens), or by less (kept sharp)."""
        if summary.get("fast"):
            return not_tested("the fast budget tests 16x on one seed, not the recipe")
        seeds = summary.get("models", {}).get(name, {})
        passed = {int(s): ((v["rise"] >= SPREAD) == flattens) if _fits(v) else None for s, v in seeds.items()}
        numbers = {int(s): f"{v['entropy_train']:.2f} -> {v['entropy_longest']:.2f} nats ({v['rise']:+.2f}), "
                           f"fits {v['exact_train']:.0%}" for s, v in seeds.items()}
        return by_seeds(passed, numbers, undecided=f"did not fit its training lengths (< {FITS:.0%})")
    return decide


def decide_gain(pos: str, scaling: str = "scaled"):
    def decide(summary: dict) -> Outcome:
        """Per seed: with the scaling, exact match at 32x the training filler is >= 10 points higher
        than without it; a seed where either model misses its training lengths cannot tell."""
        if summary.get("fast"):
            return not_tested("the fast budget tests 16x on one seed, not the recipe")
        models = summary.get("models", {})
        plain, scaled = models.get(pos, {}), models.get(model_name(pos, scaling), {})
        passed, numbers = {}, {}
        for seed in sorted(set(plain) & set(scaled), key=int):
            a, b = plain[seed], scaled[seed]
            passed[int(seed)] = (b["exact_longest"] >= a["exact_longest"] + GAIN) if _fits(a) and _fits(b) else None
            numbers[int(seed)] = f"{b['exact_longest']:.0%} {scaling} vs {a['exact_longest']:.0%} plain"
        return by_seeds(passed, numbers, undecided=f"a model did not fit its training lengths (< {FITS:.0%})")
    return decide


def flattening_figure(result: ExperimentResult):
    from ..figures.lengthgen import flattening_curves
    return flattening_curves(result.table, TRAIN_FILLER)


FLATTENING = ("2311.00684", "2404.12224")
SCALING = ("2202.12172", "2501.19399")
OURS_SCALE = ("fixed scale log(i + 2) / log 2 on query i's logits (model.logit_scaling); the papers' forms differ "
              "(log n, or a learned per-head factor times log n)")
SSMAX = ("2501.19399",)
SSMAX_FORM = ("Scalable-Softmax's form: query i's logits times s log(i + 1), s learned per head and layer "
              "(model.scalable_softmax, from 1 / log 2); trained on passkey, not in language-model pretraining")
RISE_RULE = ("per seed, a model that fits its training lengths (>= 95% at 32 filler tokens): the last layer's mean "
             "answer entropy at 1024 filler tokens minus at 32 is {} log 2 nats; then the shared rule over >= 3 seeds")
GAIN_RULE = ("per seed, both models fitting their training lengths: exact match at 1024 filler tokens with {} "
             ">= 10 points above without it; then the shared rule over >= 3 seeds")

register_experiment(Experiment(
    name="attention-flattening",
    description="2-layer Transformers (d_model 64, 4 heads) trained 2000 steps on passkey retrieval (3 digits in "
                "8-32 filler tokens), NoPE and RoPE, each without scaling, with log-length logit scaling and with "
                "Scalable-Softmax (a learned per-head factor times log n), seeds 0-2: "
                "the last layer's attention entropy at the answer and exact match, up to 1024 filler tokens (32x).",
    variants=flattening_variants, analyze=flattening_analyze, figure=flattening_figure,
    claims=[
        Claim("flattening", "Without scaling, attention at the answer flattens as inputs grow past the training "
              "length", FLATTENING, "qualitative (the longer the input, the flatter the attention)",
              "2-layer NoPE models trained on passkey (the papers observe it in pretrained language models)",
              RISE_RULE.format(">="), decide_rise("nope", flattens=True)),
        Claim("scaling-keeps-sharp", "With log-length logit scaling, attention at the answer stays sharp as inputs "
              "grow", SCALING, "qualitative (scaling by log n keeps attention from fading)", "NoPE; " + OURS_SCALE,
              RISE_RULE.format("<"), decide_rise("nope-scaled", flattens=False)),
        Claim("scaling-accuracy", "Log-length scaling buys passkey accuracy far beyond the training length", SCALING
              + ("2404.12224",), "qualitative (better long-context retrieval)", "NoPE; " + OURS_SCALE,
              GAIN_RULE.format("the scaling"), decide_gain("nope")),
        Claim("rope-scaling-accuracy", "The same gain with RoPE (our comparison, reported whatever it shows)",
              SCALING, "none: our variant", "RoPE; " + OURS_SCALE, GAIN_RULE.format("the scaling"),
              decide_gain("rope")),
        Claim("ssmax-keeps-sharp", "With Scalable-Softmax, attention at the answer stays sharp as inputs grow",
              SSMAX, "qualitative (SSMax keeps attention on key information in long contexts)",
              "NoPE; " + SSMAX_FORM, RISE_RULE.format("<"), decide_rise("nope-ssmax", flattens=False)),
        Claim("ssmax-accuracy", "Scalable-Softmax buys passkey accuracy far beyond the training length (NoPE)", SSMAX,
              "qualitative (significantly better key-information retrieval in long contexts)",
              "NoPE; " + SSMAX_FORM, GAIN_RULE.format("Scalable-Softmax"),
              decide_gain("nope", "ssmax")),
        Claim("rope-ssmax-accuracy", "Scalable-Softmax buys passkey accuracy far beyond the training length (RoPE)",
              SSMAX, "qualitative (significantly better key-information retrieval in long contexts)",
              "RoPE, as the paper's models; " + SSMAX_FORM, GAIN_RULE.format("Scalable-Softmax"),
              decide_gain("rope", "ssmax"))],
    untested=[
        UntestedClaim("Selective attention (a temperature per query and position) controls how much context each "
                      "query takes in", ("2411.12892",), "a learned per-query temperature, not a fixed log-length "
                      "scale"),
        UntestedClaim("Scalable-Softmax lowers the loss faster in language-model pretraining", SSMAX,
                      "language-model pretraining")]))
