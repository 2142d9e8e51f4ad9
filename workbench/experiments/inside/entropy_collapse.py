"""entropy-collapse (seed 002 #108): a high learning rate with no warmup collapses attention entropy;
sigmaReparam keeps it up.
"""
from __future__ import annotations

import pandas as pd

from ...reports import layer_mean, model_series
from ..base import Experiment, ExperimentResult, Variant, register_experiment
from . import common

COLLAPSE_FRACTION = 0.1  # collapse: mean entropy below this share of its value at step 0 (the rule)


COLLAPSE_MODEL = ["task.name=markov_icl", "model.n_layers=2", "model.d_model=64", "model.n_heads=2",
                  "train.lr=3e-2", "train.warmup=0", "train.batch_size=32", "train.threads=1",
                  "probes.sparsity=false", "probes.extra=max_logit,spectral_norm"]


def collapse_variants(fast: bool) -> list[Variant]:
    steps, every, seeds = (24, 8, [0]) if fast else (300, 10, [0, 1])
    out = []
    for sigma in (False, True):
        for seed in seeds:
            config = common.config([*COLLAPSE_MODEL, f"train.steps={steps}", f"probes.every={every}", f"train.seed={seed}",
                              f"model.sigma_reparam={str(sigma).lower()}"])
            out.append(Variant(config, {"model": "sigma_reparam" if sigma else "baseline", "seed": seed}))
    return out


def collapse_step(entropy: pd.Series, fraction: float = COLLAPSE_FRACTION) -> int | None:
    """The first probe step where mean entropy is below `fraction` of its first value (None: never)."""
    if entropy.empty:
        return None
    below = entropy[entropy < fraction * entropy.iloc[0]]
    return int(below.index[0]) if len(below) else None


def collapse_analyze(finished, fast):
    rows, runs = [], []
    for variant, run in finished:
        metrics, status = run.metrics(), run.status()
        entropy, loss = layer_mean(metrics, "entropy"), model_series(metrics, "loss")
        labels = variant.labels
        rows += common.series_rows(labels, "entropy", entropy) + common.series_rows(labels, "loss", loss)
        rows += common.series_rows(labels, "qk_spectral_norm", layer_mean(metrics, "qk_spectral_norm"))
        tail = loss.dropna().iloc[-max(1, len(loss) // 10):]
        runs.append({**labels, "collapse_step": collapse_step(entropy), "diverged": status.get("status") == "diverged",
                     "first_entropy": float(entropy.iloc[0]) if len(entropy) else None,
                     "min_entropy": float(entropy.min()) if len(entropy) else None,
                     "final_loss": float(tail.mean()) if len(tail) else None})
    baseline = [r for r in runs if r["model"] == "baseline"]
    sigma = [r for r in runs if r["model"] == "sigma_reparam"]
    broke = all(r["collapse_step"] is not None or r["diverged"] for r in baseline)
    held = all(r["collapse_step"] is None and not r["diverged"] for r in sigma)
    trains = _trains_better(baseline, sigma)
    summary = {"runs": runs, "collapse_fraction": COLLAPSE_FRACTION, "baseline_collapsed": broke,
               "sigma_reparam_kept_entropy": held, "sigma_reparam_trains_better": trains,
               "target_met": bool(broke and held and trains),
               "headline": _collapse_headline(baseline, sigma, broke, held, trains),
               "verdict": "reproduced" if broke and held and trains else
                          "not reproduced at this scale: " + ", ".join(
                              k for k, ok in [("baseline did not collapse", broke), ("sigma_reparam collapsed", held),
                                              ("sigma_reparam did not reach lower loss", trains)] if not ok)}
    return pd.DataFrame(rows), summary


def _trains_better(baseline, sigma) -> bool:
    finals = [r["final_loss"] for r in baseline if not r["diverged"] and r["final_loss"] is not None]
    ours = [r["final_loss"] for r in sigma if r["final_loss"] is not None]
    if not ours:
        return False
    return not finals or max(ours) < min(finals)


def _collapse_headline(baseline, sigma, broke, held, trains) -> str:
    steps = ", ".join(str(r["collapse_step"]) for r in baseline)
    return (f"high LR, no warmup: baseline entropy {'collapsed' if broke else 'did not collapse'} "
            f"(< {COLLAPSE_FRACTION:.0%} of start; steps {steps}) on {len(baseline)} seed(s); sigma_reparam "
            f"{'kept entropy up' if held else 'collapsed too'} and {'reached lower' if trains else 'did not reach lower'}"
            " loss")


def collapse_figure(result: ExperimentResult):
    runs = result.summary.get("runs", [])
    markers = {f"{r['model']} seed {r['seed']}": r["collapse_step"] for r in runs if r["collapse_step"] is not None}
    return common.lines(result, [("entropy", "mean attention entropy (nats)"), ("loss", "training loss"),
                           ("qk_spectral_norm", "max ||W_Q^T W_K||_2")],
                  lambda r: f"{r['model']} seed {r['seed']}", markers)


register_experiment(Experiment(
    name="entropy-collapse",
    description="2-layer Transformers on in-context Markov chains at a high learning rate with no warmup, "
                "with and without sigmaReparam; collapse is marked where mean entropy falls below 10% of its start.",
    claim="Attention entropy collapse accompanies training instability; sigmaReparam prevents it",
    source="seed 002 #108 (Zhai et al. 2023)",
    paper_number="entropy lower bound falls exponentially with the spectral norm of the logits",
    target="baseline collapses on 2 seeds, sigma_reparam does not and reaches lower loss",
    variants=collapse_variants, analyze=collapse_analyze, figure=collapse_figure,
    notes="""
How fragile the collapse is at this scale. A speed-up that looked up the learned position table
once and broadcast it over the batch (mathematically the same model; only the summation order of
the table's gradient changes, by float rounding) changed the outcome of this recipe: seed 0 still
collapsed (step 200) but seed 1 did not within the budget, where the per-row lookup collapses
both seeds (steps 80 and 140). At high learning rate with no warmup, whether and when entropy
collapses on a given seed is chaotic in the last bits of the arithmetic; the sigmaReparam side
kept its entropy in both versions. We kept the per-row lookup, so the runs match the ones
measured before; read "2 seeds collapse" as "collapse is typical", not as a per-seed guarantee.
"""))
