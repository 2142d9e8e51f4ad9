"""Length-generalization experiments: positional encodings x seeds trained on short inputs and
evaluated on a grid of longer ones (seeds 000 #3, #1, #7; 004 #45, #103, #163, #203)."""
from __future__ import annotations

import pandas as pd

from ..config import RunConfig
from ..figures.builders import length_curve
from ..reports import length_table
from .base import Experiment, ExperimentResult, Variant, register_experiment


FITS = 0.5  # exact match at the longest trained length below which a baseline has not learned the task


def _variants(task_overrides, encodings, seeds, lengths, model, steps, fast_steps, fast_encodings=None):
    def make(fast: bool) -> list[Variant]:
        chosen = (fast_encodings or encodings) if fast else encodings
        budget = fast_steps if fast else steps
        out = []
        for pos in chosen:
            for seed in (seeds[:1] if fast else seeds):
                overrides = [*task_overrides, f"task.eval_lengths={','.join(map(str, lengths))}", *model,
                             f"model.pos={pos}", f"train.steps={budget}", f"train.seed={seed}",
                             f"probes.every={max(budget // 4, 1)}", "train.eval_samples=256"]
                out.append(Variant(RunConfig.load(None, overrides), {"pos": pos, "seed": seed}))
        return out

    return make


def _analyze(train_max: int, check_length: int, target_pos: str, target: float, baseline_max: float,
             baseline_beyond: int, baselines: tuple[str, ...], also_report: tuple[str, ...]):
    def analyze(finished, fast):
        rows = []
        for variant, run in finished:
            for length, value in length_table(run.metrics()).items():
                rows.append({**variant.labels, "length": length, "exact_match": value})
        table = pd.DataFrame(rows)
        medians = table.groupby(["pos", "length"])["exact_match"].median().unstack("pos")
        summary = {"train_max": train_max, "medians": {str(k): {p: round(float(v), 4) for p, v in row.items()}
                                                        for k, row in medians.iterrows()}}
        parts = []
        for name in (target_pos, *also_report):  # the whole curve past the training range, not only one point
            if name in medians:
                beyond_training = medians[name][medians.index > train_max]
                parts.append(f"{name}: " + ", ".join(f"{v:.0%} at {k}" for k, v in beyond_training.items()))
                if check_length in medians.index:
                    summary[f"{name}_at_{check_length}"] = float(medians.loc[check_length, name])
        if f"{target_pos}_at_{check_length}" in summary:
            summary["target_met"] = bool(summary[f"{target_pos}_at_{check_length}"] >= target)
        if "target_met" in summary and also_report:  # the verdict names the encoding it judged
            beside = [f"{name} {summary[f'{name}_at_{check_length}']:.0%}" for name in also_report
                      if f"{name}_at_{check_length}" in summary]
            summary["verdict_note"] = f"judged on {target_pos}" + (f"; at {check_length}: " + ", ".join(beside)
                                                                   if beside else "")
        for name in baselines:
            if name in medians:
                beyond = medians[name][medians.index > baseline_beyond]
                best = float(beyond.max()) if len(beyond) else None
                summary[f"{name}_max_beyond_{baseline_beyond}"] = best
                summary[f"{name}_below_{baseline_max}"] = bool(best is None or best <= baseline_max)
                if best is not None:
                    parts.append(f"{name} at most {best:.0%} beyond {baseline_beyond}")
        if train_max in medians.index:  # a baseline that never fit the trained lengths proves nothing beyond them
            fit = {name: float(medians.loc[train_max, name]) for name in medians.columns}
            summary[f"at_{train_max}"] = {name: round(value, 4) for name, value in fit.items()}
            unfit = [name for name in baselines if name in fit and fit[name] < FITS]
            if unfit:
                note = ("not fitted in training: " + ", ".join(f"{name} {fit[name]:.0%}" for name in unfit)
                        + f" at {train_max}")
                parts.append(note)
                summary["verdict_note"] = "; ".join(filter(None, [summary.get("verdict_note"), note]))
        seeds = table.groupby("pos")["seed"].nunique().min()
        summary["headline"] = "; ".join(p for p in parts if p) + f" (median of {seeds} seed{'s' if seeds > 1 else ''})"
        return table, summary

    return analyze


def _figure(result: ExperimentResult):
    table = result.table.rename(columns={"pos": "label", "exact_match": "value"})
    return length_curve(table, result.summary.get("train_max"))


def lengthgen(name, description, task_overrides, train_max, lengths, encodings, model, steps, fast_steps,
              claim, source, paper_number, target_text, check_length, target_pos="coupling", target=0.9,
              baselines=("learned", "nope"), baseline_max=0.1, baseline_beyond=None, seeds=(0, 1),
              fast_encodings=None, notes="", also_report=()):
    """also_report: encodings whose curve the headline gives beside the target's (not judged)."""
    return register_experiment(Experiment(
        name=name, description=description, claim=claim, source=source, paper_number=paper_number,
        target=target_text, notes=notes,
        variants=_variants(task_overrides, encodings, list(seeds), lengths, model, steps, fast_steps, fast_encodings),
        analyze=_analyze(train_max, check_length, target_pos, target, baseline_max,
                         baseline_beyond or int(train_max * 1.5), baselines, tuple(also_report)),
        figure=_figure))
