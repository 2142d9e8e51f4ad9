"""Experiments that look inside the model (RESEARCH.md, "Inside the model"): entropy collapse,
lazy neurons, memorization capacity and activation outliers. Each has a fast mode (tiny budget, the
same code path) for tests and notebooks.
"""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..config import RunConfig
from ..figures.style import color, paper_style
from ..probes.memorization import memorization_capacity, table_bits, table_exact_match
from .base import Experiment, ExperimentResult, Variant, register_experiment

COLLAPSE_FRACTION = 0.1  # collapse: mean entropy below this share of its value at step 0 (the rule)


def _config(overrides: list[str]) -> RunConfig:
    return RunConfig.load(None, ["train.eval_every=0", "train.checkpoint_every=0", "probes.snapshots=false",
                                 *overrides])


def _layer_mean(metrics: pd.DataFrame, probe: str) -> pd.Series:
    """step -> the probe's value averaged over layers (the layer rows, head -1)."""
    rows = metrics[(metrics.probe == probe) & (metrics.layer >= 0) & (metrics["head"] == -1) & (metrics.length == -1)]
    return rows.groupby("step")["value"].mean().sort_index()


def _steps(metrics: pd.DataFrame, probe: str) -> pd.Series:
    rows = metrics[(metrics.probe == probe) & (metrics.layer == -1) & (metrics.length == -1)]
    return rows.set_index("step")["value"].sort_index()


def _series_rows(labels: dict, metric: str, series: pd.Series) -> list[dict]:
    return [{**labels, "metric": metric, "step": int(s), "value": float(v)} for s, v in series.items()]


def _lines(result: ExperimentResult, metrics: list[tuple[str, str]], series_key, markers=None) -> go.Figure:
    """One panel per (metric, axis title); one line per series; optional vertical markers per series."""
    table = result.table
    fig = make_subplots(rows=1, cols=len(metrics), horizontal_spacing=0.12)
    names = sorted(table.apply(series_key, axis=1).unique()) if len(table) else []
    for col, (metric, title) in enumerate(metrics, start=1):
        rows = table[table.metric == metric]
        for i, name in enumerate(names):
            part = rows[rows.apply(series_key, axis=1) == name].sort_values("step")
            fig.add_trace(go.Scatter(x=part.step, y=part.value, mode="lines", name=name, legendgroup=name,
                                     showlegend=col == 1, line=dict(color=color(i))), row=1, col=col)
            step = (markers or {}).get(name)
            if step is not None:
                fig.add_vline(x=step, line=dict(dash="dot", color=color(i), width=1.5), opacity=1, row=1, col=col)
        fig.update_xaxes(title_text="step", row=1, col=col)
        fig.update_yaxes(title_text=title, row=1, col=col)
    return paper_style(fig, width="double", height=300)


# --- entropy collapse (seed 002 #108) ---------------------------------------------------------------
COLLAPSE_MODEL = ["task.name=markov_icl", "model.n_layers=2", "model.d_model=64", "model.n_heads=2",
                  "train.lr=3e-2", "train.warmup=0", "train.batch_size=32", "train.threads=1",
                  "probes.sparsity=false", "probes.extra=max_logit,spectral_norm"]


def collapse_variants(fast: bool) -> list[Variant]:
    steps, every, seeds = (24, 8, [0]) if fast else (300, 10, [0, 1])
    out = []
    for sigma in (False, True):
        for seed in seeds:
            config = _config([*COLLAPSE_MODEL, f"train.steps={steps}", f"probes.every={every}", f"train.seed={seed}",
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
        entropy, loss = _layer_mean(metrics, "entropy"), _steps(metrics, "loss")
        labels = variant.labels
        rows += _series_rows(labels, "entropy", entropy) + _series_rows(labels, "loss", loss)
        rows += _series_rows(labels, "qk_spectral_norm", _layer_mean(metrics, "qk_spectral_norm"))
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
    return _lines(result, [("entropy", "mean attention entropy (nats)"), ("loss", "training loss"),
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


# --- lazy neurons (seeds 000 #9, 004 #95) -----------------------------------------------------------
LAZY_MODEL = ["task.name=addition", "task.max_digits=4", "model.n_layers=2", "model.d_model=32", "model.n_heads=2",
              "train.lr=3e-3", "train.warmup=20", "train.batch_size=64", "train.threads=1", "probes.entropy=false"]
LAZY_RATIOS = (1, 4, 16)


def lazy_variants(fast: bool) -> list[Variant]:
    steps, every = (16, 8) if fast else (600, 50)
    ratios = LAZY_RATIOS[::2] if fast else LAZY_RATIOS
    out = []
    for ratio, random in [(r, False) for r in ratios] + [(LAZY_RATIOS[1], True)]:
        config = _config([*LAZY_MODEL, f"model.mlp_ratio={ratio}", f"task.random_labels={str(random).lower()}",
                          f"train.steps={steps}", f"probes.every={every}"])
        out.append(Variant(config, {"mlp_width": int(32 * ratio), "labels": "random" if random else "true"}))
    return out


def lazy_analyze(finished, fast):
    rows, runs = [], []
    for variant, run in finished:
        metrics = run.metrics()
        density = _layer_mean(metrics, "mlp_nonzero_fraction")
        rows += _series_rows(variant.labels, "mlp_nonzero_fraction", density)
        per_layer = metrics[(metrics.probe == "mlp_nonzero_fraction") & (metrics.step == metrics.step.max())]
        runs.append({**variant.labels, "first": float(density.iloc[0]), "last": float(density.iloc[-1]),
                     "last_per_layer": {str(r.layer): float(r.value) for r in per_layer.itertuples()}})
    true_labels = sorted([r for r in runs if r["labels"] == "true"], key=lambda r: r["mlp_width"])
    falls = all(r["last"] < r["first"] for r in runs)
    wider_sparser = all(a["last"] > b["last"] for a, b in zip(true_labels, true_labels[1:]))
    densities = ", ".join(f"width {r['mlp_width']}: {r['first']:.2f} -> {r['last']:.2f}" for r in true_labels)
    random = [r for r in runs if r["labels"] == "random"]
    summary = {"runs": runs, "density_falls": falls, "wider_is_sparser": wider_sparser,
               "target_met": bool(falls and wider_sparser),
               "verdict": "reproduced" if falls and wider_sparser else
                          "not reproduced at this scale: " + ", ".join(
                              k for k, ok in [("density did not fall in every run", falls),
                                              ("density is not lower for every wider MLP", wider_sparser)] if not ok),
               "headline": f"MLP density (nonzero fraction) {densities}"
                           + (f"; random labels {random[0]['first']:.2f} -> {random[0]['last']:.2f}" if random else "")}
    return pd.DataFrame(rows), summary


def lazy_figure(result: ExperimentResult):
    return _lines(result, [("mlp_nonzero_fraction", "nonzero MLP activations (share)")],
                  lambda r: f"width {r['mlp_width']}" + (" random labels" if r["labels"] == "random" else ""))


register_experiment(Experiment(
    name="lazy-neurons",
    description="Share of nonzero ReLU activations per layer over training for 3 MLP widths and with random labels.",
    claim="Few MLP activations are nonzero after training, fewer in larger models, also with random labels",
    source="seeds 000 #9, 004 #95 (Li et al. 2023)", paper_number="3.0% nonzero (T5-Base), 6.3% (ViT-B16)",
    target="density falls during training and is lower for wider MLPs",
    variants=lazy_variants, analyze=lazy_analyze, figure=lazy_figure, notes="""
Does a longer budget bring out the width order? The recipe's three widths trained 5000 steps instead
of 600 (true labels, pilots outside the cache), MLP density (nonzero share, mean over layers) at the end:

| seed | width 32 | width 128 | width 512 | in width order |
|---|---|---|---|---|
| 0 | 0.42 | 0.37 | 0.36 | yes |
| 1 | 0.33 | 0.28 | 0.34 | no |

Every density falls (from ~0.50 at init), and it keeps falling well past 600 steps, but the order
across widths flips between seeds: at this scale the width effect is smaller than the seed-to-seed
spread, so the recipe stays at 600 steps and the claim stays unreproduced rather than picked from
the seed that agrees.

Do other training settings bring it out? Pilots (outside the cache) changed one thing of the recipe
at a time and trained MLP ratios 1 / 4 / 16 (widths 32 / 128 / 512) for 1500 steps on seeds 0, 1, 2.
A seed counts when its final density falls strictly with width:

| change from the recipe | final density, width 32 / 128 / 512 (seeds 0; 1; 2) | seeds in width order |
|---|---|---|
| learning rate 1e-2 (from 3e-3) | 0.32 0.27 0.29; 0.33 0.33 0.27; 0.38 0.29 0.29 | 0 of 3 |
| batch 16 (from 64), noisier steps | 0.36 0.34 0.35; 0.38 0.32 0.36; 0.37 0.37 0.38 | 0 of 3 |
| weight decay 0.1 (from 0) | 0.37 0.35 0.35; 0.36 0.33 0.35; 0.37 0.35 0.37 | 1 of 3 |
| random labels (loss never reaches zero, so the gradient noise stays) | 0.31 0.28 0.30; 0.28 0.38 0.29; 0.35 0.26 0.29 | 0 of 3 |
| d_model 32 / 64 / 128 at ratio 4, as the paper's model sizes scale (2000 steps) | 0.37 0.34 0.37; 0.32 0.37 0.28; 0.35 0.38 0.34 | 0 of 3 |

Density falls from ~0.50 in every run, which is the first half of the claim. The width order never
shows up beyond the seed-to-seed spread (about 0.05). The paper's models are 100-1000x wider and
train for far longer, so this is a disagreement at our scale, not a refutation.
"""))


# --- memorization capacity (seeds 004 #147, #48) ----------------------------------------------------
CAPACITY_SHAPES = [(32, 1), (32, 4), (64, 4)]  # (d_model, heads)
CAPACITY_TABLES = [64, 256, 1024]


def capacity_variants(fast: bool) -> list[Variant]:
    shapes, tables, steps = (CAPACITY_SHAPES[:1], [16, 64], 30) if fast else (CAPACITY_SHAPES, CAPACITY_TABLES, 1500)
    out = []
    for d_model, heads in shapes:
        for size in tables:
            config = _config(["task.name=memorize", f"task.table_size={size}", "task.key_length=3", "task.n_keys=16",
                              "model.n_layers=1", f"model.d_model={d_model}", f"model.n_heads={heads}",
                              "train.lr=3e-3", "train.warmup=50", "train.batch_size=128", "train.threads=1",
                              "train.weight_decay=0", f"train.steps={steps}", "probes.every=0"])
            out.append(Variant(config, {"d_model": d_model, "heads": heads, "table_size": size}))
    return out


def capacity_analyze(finished, fast):
    rows = []
    for variant, run in finished:
        model, task = run.load_model()
        rows.append({**variant.labels, "accuracy": table_exact_match(model, task), "bits": table_bits(task.params),
                     "n_parameters": sum(p.numel() for p in model.parameters())})
    table = pd.DataFrame(rows)
    shapes = []
    for (d_model, heads), part in table.groupby(["d_model", "heads"]):
        capacity = memorization_capacity(part.to_dict("records"))
        shapes.append({"d_model": int(d_model), "heads": int(heads), "n_parameters": int(part.n_parameters.iloc[0]),
                       **capacity})
    shapes.sort(key=lambda s: s["n_parameters"])
    sizes = [s["largest_perfect_table"] for s in shapes]
    # "Grows" needs a real increase somewhere; equal capacities (e.g. all at the largest table
    # tried) say nothing about growth.
    grows = all(a <= b for a, b in zip(sizes, sizes[1:])) and sizes[-1] > sizes[0]
    ceiling = max(table.table_size)
    verdict = ("capacity grows with parameters" if grows else
               f"not shown: every shape memorized the largest table tried ({ceiling} rows); the grid needs larger tables"
               if all(size == ceiling for size in sizes) else "capacity does not grow with parameters here")
    headline = "; ".join(f"d={s['d_model']} h={s['heads']} ({s['n_parameters']} params): largest perfect table "
                         f"{s['largest_perfect_table']}, {s['bits_per_parameter']:.3f} bits/param" for s in shapes)
    summary = {"shapes": shapes, "capacity_grows_with_parameters": grows, "headline": headline,
               "verdict": verdict}
    return table, summary


def capacity_figure(result: ExperimentResult):
    fig = go.Figure()
    for i, ((d_model, heads), part) in enumerate(result.table.groupby(["d_model", "heads"])):
        part = part.sort_values("table_size")
        fig.add_trace(go.Scatter(x=part.table_size, y=part.accuracy, mode="lines+markers", line=dict(color=color(i)),
                                 name=f"d={d_model}, heads={heads} ({int(part.n_parameters.iloc[0])} params)"))
    fig.update_xaxes(title="table size (rows)", type="log")
    fig.update_yaxes(title="share of the table recalled exactly", range=[0, 1.05])
    return paper_style(fig, width="single", height=300)


register_experiment(Experiment(
    name="memorization-capacity",
    description="1-layer Transformers memorizing random key->value tables of growing size, for 3 shapes.",
    claim="H heads with Theta(H d^2) parameters memorize Omega(H n) examples",
    source="seeds 004 #147, #48", paper_number="Omega(H n) examples",
    target="largest perfectly memorized table vs parameters and heads; bits per parameter",
    variants=capacity_variants, analyze=capacity_analyze, figure=capacity_figure))


# --- outliers (seed 004 #198) -----------------------------------------------------------------------
OUTLIER_MODEL = ["task.name=copy", "task.max_length=12", "model.n_layers=2", "model.d_model=64", "model.n_heads=4",
                 "train.lr=3e-3", "train.warmup=50", "train.batch_size=64", "train.threads=1",
                 "probes.sparsity=false", "probes.extra=outliers"]
OUTLIER_OPTIONS = {"vanilla": [], "clipped_softmax": ["model.softmax=clipped"],
                   "gated_attention": ["model.gated_attention=true"]}


def outlier_variants(fast: bool) -> list[Variant]:
    steps, every = (16, 8) if fast else (800, 100)
    return [Variant(_config([*OUTLIER_MODEL, *options, f"train.steps={steps}", f"probes.every={every}"]),
                    {"attention": name}) for name, options in OUTLIER_OPTIONS.items()]


def outlier_analyze(finished, fast):
    rows, final = [], {}
    for variant, run in finished:
        metrics = run.metrics()
        name = variant.labels["attention"]
        for probe in ("max_abs_activation", "kurtosis", "noop_head_fraction", "attention_delimiters"):
            series = _layer_mean(metrics, probe)
            rows += _series_rows(variant.labels, probe, series)
            final.setdefault(name, {})[probe] = float(series.iloc[-1]) if len(series) else None
        final[name]["exact_match"] = float(_steps(metrics, "exact_match").iloc[-1])
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
    return _lines(result, [("max_abs_activation", "max |activation|"), ("kurtosis", "kurtosis"),
                           ("attention_delimiters", "attention on delimiters")], lambda r: r["attention"])


register_experiment(Experiment(
    name="outliers",
    description="Residual-stream outliers (max |activation|, kurtosis) and attention parked on delimiters, for "
                "vanilla softmax, clipped softmax and gated attention.",
    claim="No-op heads park attention on delimiters and cause activation outliers; clipped softmax and gated "
          "attention remove them", source="seed 004 #198 (Bondarenko et al. 2023)", paper_number="qualitative",
    target="max |activation| and kurtosis per layer for the three attention variants",
    variants=outlier_variants, analyze=outlier_analyze, figure=outlier_figure))
