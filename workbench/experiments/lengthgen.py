"""Length-generalization experiments: positional encodings x seeds trained on short inputs and evaluated
on a grid of longer ones, and the claims their runs test.

Every claim is judged per seed on exact match at fixed test lengths. A baseline (learned positions,
NoPE) counts only where it fits its training lengths (>= 95% exact match at the longest trained length):
failing beyond them says nothing about length generalization if it never learned the task.
"""
from __future__ import annotations

import pandas as pd

from ..config import RunConfig
from ..figures.builders import length_curve
from ..reports import recipe_length_table
from .base import Experiment, ExperimentResult, Variant, register_experiment
from .verdicts import FITS, Claim, Outcome, by_seeds, percent


def run_config(task_overrides, lengths, model, own, steps: int, seed: int) -> RunConfig:
    """One run of a length recipe: the task tested at `lengths`, the model, the variant's own overrides,
    then steps, seed, a probe every quarter of the run and 256 test samples per length."""
    return RunConfig.load(None, [*task_overrides, f"task.eval_lengths={','.join(map(str, lengths))}", *model, *own,
                                 f"train.steps={steps}", f"train.seed={seed}", f"probes.every={max(steps // 4, 1)}",
                                 "train.eval_samples=256"])


def every_encoding(task_name: str, first: list[str]) -> list[str]:
    """Every positional encoding that applies to the task (the ones that read task ids only where the
    task writes them), `first` in its order, then the rest in registry order: a new encoding joins
    every length curve it can run on, and the recipe's own order keeps its colours and its fast runs."""
    from ..config import ids_for_encoding
    from ..errors import ConfigError
    from ..models import POSITIONS

    def applies(pos: str) -> bool:
        try:
            ids_for_encoding(pos, task_name, {})
        except ConfigError:
            return False
        return True

    return [*first, *(pos for pos in POSITIONS.names() if pos not in first and applies(pos))]


def _variants(task_overrides, encodings, seeds, lengths, model, steps, fast_steps, fast_encodings=None):
    """encodings: positional encodings by name, or {label: overrides} for variants that differ in more
    than model.pos (e.g. with and without a hint task); the label is the table's `pos` column."""
    def as_dict(names) -> dict[str, list[str]]:
        return dict(names) if isinstance(names, dict) else {pos: [f"model.pos={pos}"] for pos in names}

    def make(fast: bool) -> list[Variant]:
        chosen = as_dict((fast_encodings or encodings) if fast else encodings)
        budget = fast_steps if fast else steps
        out = []
        for pos, own in chosen.items():
            for seed in (seeds[:1] if fast else seeds):
                out.append(Variant(run_config(task_overrides, lengths, model, own, budget, seed),
                                   {"pos": pos, "seed": seed}))
        return out

    return make


def _analyze(train_max: int, headline_length: int):
    def analyze(finished, fast):
        rows = [{**variant.labels, "length": length, "exact_match": value}
                for variant, run in finished for length, value in recipe_length_table(run).items()]
        table = pd.DataFrame(rows)
        curves: dict[str, dict[str, dict[str, float]]] = {}  # pos -> seed -> length -> exact match
        for row in rows:
            curves.setdefault(row["pos"], {}).setdefault(str(row["seed"]), {})[str(row["length"])] = round(
                float(row["exact_match"]), 4)
        summary = {"train_max": train_max, "exact_match": curves, "headline": _headline(curves, train_max,
                                                                                           headline_length)}
        return table, summary

    return analyze


def _headline(curves: dict, train_max: int, length: int) -> str:
    """Each encoding's exact match at the training length and at `length`, every seed."""
    parts = []
    for pos, seeds in curves.items():
        at = lambda n: "/".join(percent(seeds[s].get(str(n))) for s in sorted(seeds))  # noqa: E731
        parts.append(f"{pos} {at(train_max)} at {train_max}, {at(length)} at {length}")
    return "; ".join(parts) + " (seeds " + ",".join(sorted({s for seeds in curves.values() for s in seeds})) + ")"


# --- what a claim tests -------------------------------------------------------------------------------
def _at(summary: dict, pos: str, seed: str, length: int):
    return summary.get("exact_match", {}).get(pos, {}).get(seed, {}).get(str(length))


def _beyond(summary: dict, pos: str, seed: str, beyond: int) -> float | None:
    curve = summary.get("exact_match", {}).get(pos, {}).get(seed, {})
    values = [v for k, v in curve.items() if int(k) > beyond]
    return max(values) if values else None


def _baseline(summary: dict, baseline: str, seed: str, beyond: int, at_most: float) -> tuple[bool | None, str]:
    """(True: fits and fails beyond / False: generalizes / None: never fit, cannot tell), and its numbers."""
    train_max = summary["train_max"]
    fit, best = _at(summary, baseline, seed, train_max), _beyond(summary, baseline, seed, beyond)
    if fit is None or best is None:
        return None, f"{baseline} not measured"
    text = f"{baseline} {percent(fit)} at {train_max}, at most {percent(best)} beyond {beyond}"
    if fit < FITS:
        return None, text + " (did not fit)"
    return best <= at_most, text


def reaches(pos: str, length: int, at_least: float, text: str, references: tuple[str, ...], paper_number: str,
            method: str = "paper", key: str | None = None, offset_note: str = "") -> Claim:
    """Per seed: `pos` reaches `at_least` exact match at `length`."""
    def decide(summary: dict) -> Outcome:
        seeds = summary.get("exact_match", {}).get(pos, {})
        values = {seed: _at(summary, pos, seed, length) for seed in seeds}
        values = {int(seed): v for seed, v in values.items() if v is not None}
        return by_seeds({seed: v >= at_least for seed, v in values.items()},
                        {seed: f"{pos} {percent(v)} at {length}" for seed, v in values.items()})

    rule = (f"per seed: `{pos}` reaches >= {at_least:.0%} exact match at length {length}{offset_note}; then the "
            "shared rule over >= 3 seeds")
    return Claim(key or pos.replace("_", "-"), text, references, paper_number, method, rule, decide)


def beats(pos: str, length: int, at_least: float, baseline: str, beyond: int, at_most: float, text: str,
          references: tuple[str, ...], paper_number: str, method: str = "paper", key: str | None = None) -> Claim:
    """Per seed: `pos` reaches `at_least` at `length` while `baseline`, fitted to the training lengths,
    stays at or below `at_most` beyond `beyond`. A seed whose baseline never fit cannot tell."""
    def decide(summary: dict) -> Outcome:
        passed, numbers = {}, {}
        for seed in summary.get("exact_match", {}).get(pos, {}):
            value = _at(summary, pos, seed, length)
            if value is None:
                continue
            baseline_ok, baseline_text = _baseline(summary, baseline, seed, beyond, at_most)
            numbers[int(seed)] = f"{pos} {percent(value)} at {length}; {baseline_text}"
            passed[int(seed)] = False if value < at_least else baseline_ok
        return by_seeds(passed, numbers, undecided=f"{baseline} did not fit the training lengths (>= {FITS:.0%})")

    rule = (f"per seed: `{pos}` reaches >= {at_least:.0%} exact match at length {length}, and `{baseline}` fits the "
            f"training lengths (>= {FITS:.0%} at the longest) and stays <= {at_most:.0%} beyond {beyond}; a seed "
            f"where `{pos}` reaches it but `{baseline}` never fit cannot tell; then the shared rule over >= 3 seeds")
    return Claim(key or f"{pos}-beats-{baseline}".replace("_", "-"), text, references, paper_number, method, rule, decide)


def gains(label: str, baseline: str, length: int, by: float, text: str, references: tuple[str, ...],
          paper_number: str, method: str = "paper", key: str | None = None) -> Claim:
    """Per seed: `label`'s exact match at `length` is at least `by` above `baseline`'s, the same model
    trained without the change; a seed whose baseline never fit the training lengths cannot tell."""
    def decide(summary: dict) -> Outcome:
        passed, numbers = {}, {}
        train_max = summary["train_max"]
        for seed in summary.get("exact_match", {}).get(label, {}):
            value, base, fit = (_at(summary, label, seed, length), _at(summary, baseline, seed, length),
                                _at(summary, baseline, seed, train_max))
            if value is None or base is None or fit is None:
                continue
            numbers[int(seed)] = (f"{label} {percent(value)}, {baseline} {percent(base)} at {length} "
                                  f"({baseline} {percent(fit)} at {train_max})")
            passed[int(seed)] = None if fit < FITS else value - base >= by
        return by_seeds(passed, numbers, undecided=f"{baseline} did not fit the training lengths (>= {FITS:.0%})")

    decide.baseline = baseline  # the label the gain is measured against, for whoever reads the claim
    rule = (f"per seed: `{label}` reaches at least {by:.0%} (points) more exact match than `{baseline}` at length "
            f"{length}, where `{baseline}` fits the training lengths (>= {FITS:.0%} at the longest); then the "
            "shared rule over >= 3 seeds")
    return Claim(key or f"{label}-gains".replace("_", "-").replace(" ", ""), text, references, paper_number, method,
                 rule, decide)


def fits_where(label: str, baseline: str, text: str, references: tuple[str, ...], paper_number: str,
               method: str, key: str) -> Claim:
    """Per seed: `label` fits the training lengths and `baseline`, the same model with one thing changed,
    does not: the change is what makes the task learnable in the budget."""
    def decide(summary: dict) -> Outcome:
        train_max, passed, numbers = summary["train_max"], {}, {}
        for seed in summary.get("exact_match", {}).get(label, {}):
            fit, base = _at(summary, label, seed, train_max), _at(summary, baseline, seed, train_max)
            if fit is None or base is None:
                continue
            numbers[int(seed)] = f"{label} {percent(fit)}, {baseline} {percent(base)} at {train_max}"
            passed[int(seed)] = fit >= FITS > base
        return by_seeds(passed, numbers)

    rule = (f"per seed: `{label}` fits the training lengths (>= {FITS:.0%} exact match at the longest) and "
            f"`{baseline}` does not; then the shared rule over >= 3 seeds")
    return Claim(key, text, references, paper_number, method, rule, decide)


def baselines_fail(baselines: tuple[str, ...], beyond: int, at_most: float, text: str, references: tuple[str, ...],
                   paper_number: str, key: str = "baselines") -> Claim:
    """Per seed: every baseline fits the training lengths and stays at or below `at_most` beyond `beyond`."""
    def decide(summary: dict) -> Outcome:
        seeds = sorted({seed for b in baselines for seed in summary.get("exact_match", {}).get(b, {})}, key=int)
        passed, numbers = {}, {}
        for seed in seeds:
            results = [_baseline(summary, b, seed, beyond, at_most) for b in baselines]
            verdicts = [ok for ok, _ in results]
            passed[int(seed)] = None if None in verdicts else all(verdicts)
            numbers[int(seed)] = "; ".join(text for _, text in results)
        return by_seeds(passed, numbers, undecided="a baseline did not fit the training lengths")

    rule = (f"per seed: each of {', '.join(f'`{b}`' for b in baselines)} fits the training lengths (>= {FITS:.0%} "
            f"at the longest) and stays <= {at_most:.0%} beyond {beyond}; a seed with a baseline that never fit "
            "cannot tell; then the shared rule over >= 3 seeds")
    return Claim(key, text, references, paper_number, "paper", rule, decide)


def drawn_with(draw):
    """A result's figure: `draw(table, train_max)` on its table, renamed to the figures' label and value."""
    def figure(result: ExperimentResult):
        table = result.table.rename(columns={"pos": "label", "exact_match": "value"})
        return draw(table, result.summary.get("train_max"))

    return figure


_figure = drawn_with(length_curve)


def zoo_figure(result: ExperimentResult):
    """Every encoding's curve beside a grid of medians: which encoding generalizes on this task."""
    from ..figures.lengthgen import encoding_zoo
    return drawn_with(encoding_zoo)(result)


def lengthgen(name, description, task_overrides, train_max, lengths, encodings, model, steps, fast_steps,
              claims: list[Claim], headline_length: int, seeds=(0, 1, 2), fast_encodings=None, untested=(),
              figure=None):
    return register_experiment(Experiment(
        name=name, description=description,
        variants=_variants(task_overrides, encodings, list(seeds), lengths, model, steps, fast_steps, fast_encodings),
        analyze=_analyze(train_max, headline_length), figure=figure or _figure, claims=list(claims),
        untested=list(untested)))


def spread(label: str, length: int, at_least: float, text: str, references: tuple[str, ...], paper_number: str,
           method: str = "paper", key: str | None = None) -> Claim:
    """Per seed: `label`'s exact match at `length` lies at least `at_least` away from another seed's,
    so the same recipe gives this seed a different outcome than some other seed. Every seed far from
    another (a wide spread) reproduces "not robust"; seeds that all agree do not."""
    def decide(summary: dict) -> Outcome:
        values = {int(seed): _at(summary, label, seed, length) for seed in summary.get("exact_match", {}).get(label, {})}
        values = {seed: v for seed, v in values.items() if v is not None}
        passed = {seed: max(abs(v - other) for other in values.values()) >= at_least for seed, v in values.items()}
        return by_seeds(passed, {seed: f"{label} {percent(v)} at {length}" for seed, v in values.items()})

    rule = (f"per seed: `{label}`'s exact match at length {length} differs by at least {at_least:.0%} (points) from "
            "another seed's; then the shared rule over >= 3 seeds")
    return Claim(key or f"{label}-spread".replace("_", "-").replace(" ", ""), text, references, paper_number, method,
                 rule, decide)


def outdoes(pos: str, others: tuple[str, ...], length: int, by: float, text: str, references: tuple[str, ...],
            paper_number: str, method: str, key: str | None = None) -> Claim:
    """Per seed: `pos`, fitted to the training lengths, reaches at least `by` (points) more exact match at
    `length` than each of `others`. A seed where `pos` never fit cannot tell: its failure beyond the
    training lengths would say nothing about generalizing."""
    def decide(summary: dict) -> Outcome:
        passed, numbers = {}, {}
        train_max = summary["train_max"]
        for seed in summary.get("exact_match", {}).get(pos, {}):
            value, fit = _at(summary, pos, seed, length), _at(summary, pos, seed, train_max)
            rivals = {other: _at(summary, other, seed, length) for other in others}
            if value is None or fit is None or None in rivals.values():
                continue
            numbers[int(seed)] = (f"{pos} {percent(value)} at {length} ({percent(fit)} at {train_max}); "
                                  + ", ".join(f"{other} {percent(v)}" for other, v in rivals.items()))
            passed[int(seed)] = None if fit < FITS else all(value - v >= by - 1e-9 for v in rivals.values())  # 0.5 - 0.4 < 0.1
        return by_seeds(passed, numbers, undecided=f"{pos} did not fit the training lengths (>= {FITS:.0%})")

    rule = (f"per seed: `{pos}` fits the training lengths (>= {FITS:.0%} at the longest) and reaches at least "
            f"{by:.0%} (points) more exact match at length {length} than each of "
            f"{', '.join(f'`{other}`' for other in others)}; a seed where `{pos}` never fit cannot tell; then the "
            "shared rule over >= 3 seeds")
    return Claim(key or f"{pos}-outdoes-{'-'.join(others)}".replace("_", "-"), text, references, paper_number,
                 method, rule, decide)


def encodings_at(results: dict[str, ExperimentResult], length: int) -> pd.DataFrame:
    """Median exact match (%) over seeds at `length`: a row per encoding, a column per result (e.g. a
    task), "-" where the result trains no such encoding. One table for "which encoding generalizes where"."""
    columns = {name: result.table[result.table.length == length].groupby("pos").exact_match.median()
               for name, result in results.items()}
    return (pd.DataFrame(columns) * 100).map(lambda v: "-" if pd.isna(v) else f"{v:.0f}")
