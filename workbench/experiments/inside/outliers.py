"""outliers (seed 004 #198): residual-stream outliers and attention parked on delimiters, for vanilla
softmax, clipped softmax and gated attention.
"""
from __future__ import annotations

import pandas as pd

from ...reports import layer_mean, model_series
from ..base import Experiment, ExperimentResult, Variant, register_experiment
from . import common


OUTLIER_MODEL = ["task.name=copy", "task.max_length=12", "model.n_layers=2", "model.d_model=64", "model.n_heads=4",
                 "train.lr=3e-3", "train.warmup=50", "train.batch_size=64", "train.threads=1",
                 "probes.sparsity=false", "probes.extra=outliers"]
OUTLIER_OPTIONS = {"vanilla": [], "clipped_softmax": ["model.softmax=clipped"],
                   "gated_attention": ["model.gated_attention=true"]}


def outlier_variants(fast: bool) -> list[Variant]:
    steps, every = (16, 8) if fast else (800, 100)
    return [Variant(common.config([*OUTLIER_MODEL, *options, f"train.steps={steps}", f"probes.every={every}"]),
                    {"attention": name}) for name, options in OUTLIER_OPTIONS.items()]


def outlier_analyze(finished, fast):
    rows, final = [], {}
    for variant, run in finished:
        metrics = run.metrics()
        name = variant.labels["attention"]
        for probe in ("max_abs_activation", "kurtosis", "noop_head_fraction", "attention_delimiters"):
            series = layer_mean(metrics, probe)
            rows += common.series_rows(variant.labels, probe, series)
            final.setdefault(name, {})[probe] = float(series.iloc[-1]) if len(series) else None
        final[name]["exact_match"] = float(model_series(metrics, "exact_match").iloc[-1])
    vanilla = final.get("vanilla", {})
    lower = {name: (values["kurtosis"] < vanilla["kurtosis"] and values["max_abs_activation"] < vanilla["max_abs_activation"])
             for name, values in final.items() if name != "vanilla" and vanilla}
    verdict = ("both fixes lower kurtosis and max |activation|" if lower and all(lower.values()) else
               "not every fix lowers outliers at this scale: " + ", ".join(f"{k}: {'lower' if v else 'not lower'}"
                                                                            for k, v in lower.items()))
    headline = "; ".join(f"{name}: kurtosis {v['kurtosis']:.1f}, max|x| {v['max_abs_activation']:.1f}"
                         for name, v in final.items())
    return pd.DataFrame(rows), {"final": final, "lower_than_vanilla": lower, "verdict": verdict, "headline": headline}


def outlier_figure(result: ExperimentResult):
    return common.lines(result, [("max_abs_activation", "max |activation|"), ("kurtosis", "kurtosis"),
                           ("attention_delimiters", "attention on delimiters")], lambda r: r["attention"])


register_experiment(Experiment(
    name="outliers",
    description="Residual-stream outliers (max |activation|, kurtosis) and attention parked on delimiters, for "
                "vanilla softmax, clipped softmax and gated attention.",
    claim="No-op heads park attention on delimiters and cause activation outliers; clipped softmax and gated "
          "attention remove them", source="seed 004 #198 (Bondarenko et al. 2023)", paper_number="qualitative",
    target="max |activation| and kurtosis per layer for the three attention variants",
    variants=outlier_variants, analyze=outlier_analyze, figure=outlier_figure))
