"""Named experiments: a list of RunConfigs plus the analysis that turns their runs into a table,
a summary and a figure.

Runs are cached by the run store (an identical config is never retrained), and the analysed
result is cached under <store>/.experiments/<name>/ (a dot-folder the run listing skips) so the report and the dashboard can read it
without touching the models. `fast=True` is the smaller budget the tests and notebooks use;
it runs the same code path.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from ..config import RunConfig
from ..errors import ConfigError
from ..store import Run, atomic_save, atomic_write_json, data_root


@dataclass
class Variant:
    """One run of an experiment: its config and the labels that place it in the table."""

    config: RunConfig
    labels: dict  # e.g. {"pos": "coupling", "seed": 0}


@dataclass
class ExperimentResult:
    name: str
    table: pd.DataFrame  # one row per (variant, measurement): tidy
    summary: dict  # the headline numbers and verdicts, JSON-serializable
    run_ids: list[str] = field(default_factory=list)
    runtime_s: float = 0.0  # the runs' training time summed (one core's work) plus the analysis
    fast: bool = False
    wall_s: float | None = None  # wall time of the call that last trained runs (None: all came cached)
    workers: int = 1  # runs trained side by side in that call
    budget: str = ""  # "" for the recipe's own budget, else e.g. "1500 steps, seeds 0" (see Budget)

    def figure(self):
        return EXPERIMENTS[self.name].figure(self)


@dataclass
class Experiment:
    name: str
    description: str
    claim: str  # the paper's claim, quoted or paraphrased, with its source
    source: str  # e.g. "seed 000 #3 (Cho et al. 2024)"
    paper_number: str
    variants: Callable[[bool], list[Variant]]  # fast -> variants
    analyze: Callable[[list[tuple[Variant, Run]], bool], tuple[pd.DataFrame, dict]]
    figure: Callable[[ExperimentResult], object]
    target: str = ""  # the CPU-scale target from RESEARCH.md
    notes: str = ""  # markdown: pilots and diagnostics beside the recipe, printed in REPRODUCTIONS.md


EXPERIMENTS: dict[str, Experiment] = {}


def register_experiment(experiment: Experiment) -> Experiment:
    if experiment.name in EXPERIMENTS:
        raise KeyError(f"experiment {experiment.name!r} registered twice")
    EXPERIMENTS[experiment.name] = experiment
    return experiment


def get_experiment(name: str) -> Experiment:
    if name not in EXPERIMENTS:
        raise ConfigError("experiment", name, choices=sorted(EXPERIMENTS))
    return EXPERIMENTS[name]


def results_root() -> Path:
    return data_root() / ".experiments"


@dataclass(frozen=True)
class Budget:
    """Another budget for a recipe: more or fewer training steps and/or a subset of its seeds. The
    same analysis runs on it; its result is cached apart from the recipe's, and REPRODUCTIONS.md never
    reads it. Notebooks use it to fit their full mode into minutes; `--steps`/`--seeds` in the CLI, the
    budget fields on the dashboard's Experiments page."""

    steps: int | None = None
    seeds: tuple[int, ...] | None = None

    def __post_init__(self):
        if self.steps is not None and self.steps < 1:
            raise ConfigError("steps", self.steps, "expected a whole number >= 1")
        if self.seeds is not None and not self.seeds:
            raise ConfigError("seeds", "", "expected at least one seed, e.g. 0 or 0,1")

    @property
    def label(self) -> str:
        parts = ([f"{self.steps} steps"] if self.steps else []) + \
                ([f"seeds {','.join(map(str, self.seeds))}"] if self.seeds is not None else [])
        return ", ".join(parts)

    @property
    def slug(self) -> str:
        """The label as part of a file name: "1500steps-seeds0_1"."""
        return self.label.replace(", ", "-").replace(" ", "").replace(",", "_")

    @property
    def cli_args(self) -> list[str]:
        """The same budget as `workbench experiment run` flags."""
        return ((["--steps", str(self.steps)] if self.steps else [])
                + (["--seeds", ",".join(map(str, self.seeds))] if self.seeds is not None else []))

    def apply(self, variants: list[Variant]) -> list[Variant]:
        if self.seeds is not None:
            known = sorted({_seed(v) for v in variants})
            for seed in self.seeds:
                if seed not in known:
                    raise ConfigError("seeds", seed, choices=[str(k) for k in known])
            variants = [v for v in variants if _seed(v) in self.seeds]
        if self.steps is not None:
            variants = [Variant(self._with_steps(v.config), v.labels) for v in variants]
        return variants

    def _with_steps(self, config: RunConfig) -> RunConfig:
        # probes and evaluations keep their cadence, capped at the new length so each still runs
        return config.replace(**{"train.steps": self.steps,
                                 "probes.every": min(config.probes.every, self.steps),
                                 "train.eval_every": min(config.train.eval_every, self.steps)})


def _seed(variant: Variant) -> int:
    return variant.labels.get("seed", variant.config.train.seed)


def recipe_budget(name: str, fast: bool = False) -> Budget:
    """The recipe's own budget: its longest run's steps and all of its seeds."""
    variants = get_experiment(name).variants(fast)
    return Budget(max(v.config.train.steps for v in variants), tuple(sorted({_seed(v) for v in variants})))


def budget_for(recipe: Budget, steps: int | None, seeds: tuple[int, ...] | None) -> Budget | None:
    """The budget that asks for these steps and seeds, keeping only what differs from `recipe` (the
    recipe's own, from recipe_budget); None: the recipe itself, whose result REPRODUCTIONS.md reads."""
    asked = Budget(steps, tuple(sorted(seeds)) if seeds is not None else None)  # refuses 0 steps, no seeds
    changed = Budget(asked.steps if asked.steps != recipe.steps else None,
                     asked.seeds if asked.seeds != recipe.seeds else None)
    return changed if changed.label else None


def run_command(name: str, fast: bool = False, budget: Budget | None = None) -> list[str]:
    """The `workbench` arguments that run this experiment on this budget."""
    return ["experiment", "run", name] + (["--fast"] if fast else []) + (budget.cli_args if budget else [])


def result_folder(name: str, fast: bool, budget: Budget | None = None) -> Path:
    folder = f"{name}-fast" if fast else name
    if budget is not None and budget.label:
        folder += "-" + budget.slug
    return results_root() / folder


def run_experiment(name: str, fast: bool = False, progress: bool = True, workers: int | None = None,
                   on_done: Callable[[int, int, Variant], None] | None = None,
                   budget: Budget | None = None) -> ExperimentResult:
    """Train (or fetch) every variant, analyse, cache and return the result.

    The variants train side by side, one process per core (workbench.parallel); workers=1 trains
    them one after another in this process. The fast mode always uses one worker: its runs are
    shorter than a process takes to start. on_done(index, total, variant) follows each run."""
    from ..parallel import train_many

    experiment = get_experiment(name)
    variants = budget.apply(experiment.variants(fast)) if budget else experiment.variants(fast)
    jobs = [(v.config, f"{name}: " + ", ".join(f"{k}={v}" for k, v in v.labels.items())) for v in variants]
    started = time.time()
    runs = train_many(jobs, workers=1 if fast else workers, progress=progress,
                      on_done=(lambda i, run: on_done(i, len(variants), variants[i])) if on_done else None)
    trained = time.time() - started
    finished = list(zip(variants, runs))
    begun = time.time()
    table, summary = experiment.analyze(finished, fast)
    analysis = time.time() - begun
    # The cost of the phenomenon: the runs' own training time (also when they came from the cache)
    # plus the analysis, not the seconds this call happened to take; the wall time is kept beside
    # it when this call trained something.
    training = sum(float(run.status().get("elapsed_s") or 0.0) for _, run in finished)
    previous = load_result(name, fast, budget)
    trained_now = trained > 0.05 * training
    result = ExperimentResult(name, table, summary, [run.run_id for _, run in finished],
                              runtime_s=round(training + analysis, 1), fast=fast,
                              wall_s=round(trained + analysis, 1) if trained_now else previous and previous.wall_s,
                              workers=runs.workers if trained_now else previous.workers if previous else 1,
                              budget=budget.label if budget else "")
    save_result(result, budget)
    return result


def save_result(result: ExperimentResult, budget: Budget | None = None) -> None:
    folder = result_folder(result.name, result.fast, budget)
    runtime = result.runtime_s
    atomic_save(folder / "table.parquet", lambda tmp: result.table.to_parquet(tmp, index=False))
    atomic_write_json(folder / "result.json", {"name": result.name, "summary": result.summary, "run_ids": result.run_ids,
                                               "runtime_s": runtime, "fast": result.fast,
                                               "wall_s": result.wall_s, "workers": result.workers,
                                               "budget": result.budget})


def load_result(name: str, fast: bool = False, budget: Budget | None = None) -> ExperimentResult | None:
    folder = result_folder(name, fast, budget)
    if not (folder / "result.json").exists():
        return None
    meta = json.loads((folder / "result.json").read_text())
    return ExperimentResult(name, pd.read_parquet(folder / "table.parquet"), meta["summary"], meta["run_ids"],
                            meta["runtime_s"], meta["fast"], meta.get("wall_s"), meta.get("workers", 1),
                            meta.get("budget", ""))
