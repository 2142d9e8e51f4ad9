"""Named experiments: a list of RunConfigs plus the analysis that turns their runs into a table, a
summary, a verdict for each claim and a figure.

Runs are cached by the run store (an identical config is never retrained). The recipe's own result is
written to data/results/NAME.json (shipped; REPRODUCTIONS.md is rendered from those files), other
budgets' results to the run store's cache (results.py). `fast=True` is the smaller budget the tests
and notebooks use; it runs the same code path.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from ..config import RunConfig
from ..errors import ConfigError
from ..store import Run
from . import results
from .registry import EXPERIMENTS, get_experiment, register_experiment  # noqa: F401  (recipes register here)
from .results import ExperimentResult
from .verdicts import Claim, Outcome, UntestedClaim


@dataclass
class Variant:
    """One run of an experiment: its config and the labels that place it in the table."""

    config: RunConfig
    labels: dict  # e.g. {"pos": "coupling", "seed": 0}


@dataclass
class Experiment:
    """A named recipe. Its claims are the rows of REPRODUCTIONS.md: each names the exact claim the
    runs test and the rule, written before the runs, that decides its verdict from the summary.
    Its notes (pilots, diagnostics) live in notes/NAME.md beside this file."""

    name: str
    description: str
    variants: Callable[[bool], list[Variant]]  # fast -> variants
    analyze: Callable[[list[tuple[Variant, Run]], bool], tuple[pd.DataFrame, dict]]
    figure: Callable[[ExperimentResult], object]
    claims: list[Claim]
    untested: list[UntestedClaim] = field(default_factory=list)  # the papers' claims these runs do not test
    # An adaptive recipe (e.g. a bisection): called with every (variant, run) finished so far and the
    # fast flag after each round; the variants it returns are the next round, until it returns none.
    # `variants` is then the first round. None: the variants are the whole recipe.
    next_round: Callable[[list[tuple[Variant, Run]], bool], list[Variant]] | None = None
    # A measurement trains nothing (its variants are []; analyze measures): it fingerprints its own
    # arithmetic instead of a first run's, with numbers this callable computes the same way every time.
    canary: Callable[[], dict] | None = None

    def __post_init__(self):
        keys = [claim.key for claim in self.claims]
        if not keys or len(set(keys)) != len(keys) or not all(re.fullmatch(r"[a-z0-9-]+", key) for key in keys):
            raise ValueError(f"experiment {self.name!r} needs claims with distinct keys, got {keys}")

    @property
    def notes(self) -> str:
        path = NOTES / f"{self.name}.md"
        return path.read_text() if path.exists() else ""

    @property
    def references(self) -> list[str]:
        keys = [key for claim in self.claims for key in claim.references]
        keys += [key for claim in self.untested for key in claim.references]
        return list(dict.fromkeys(keys))

    def decide(self, summary: dict) -> dict[str, Outcome]:
        return {claim.key: claim.decide(summary) for claim in self.claims}


NOTES = Path(__file__).parent / "notes"


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
            # a recipe whose runs differ in length (a budget curve) keeps their ratios: the longest gets `steps`
            longest = max((v.config.train.steps for v in variants), default=self.steps)
            variants = [Variant(self._with_steps(v.config, max(1, round(v.config.train.steps * self.steps / longest))),
                                v.labels) for v in variants]
        return variants

    @staticmethod
    def _with_steps(config: RunConfig, steps: int) -> RunConfig:
        # probes and evaluations keep their cadence, capped at the new length so each still runs
        return config.replace(**{"train.steps": steps, "probes.every": min(config.probes.every, steps),
                                 "train.eval_every": min(config.train.eval_every, steps)})


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


def run_command(name: str, fast: bool = False, budget: Budget | None = None, backend: str = "local",
                ray_address: str = "") -> list[str]:
    """The `workbench` arguments that run this experiment on this budget and backend."""
    where = (["--backend", backend] if backend != "local" else []) + (["--ray-address", ray_address] if ray_address else [])
    return ["experiment", "run", name] + (["--fast"] if fast else []) + (budget.cli_args if budget else []) + where


def result_path(name: str, fast: bool, budget: Budget | None = None) -> Path:
    """The recipe's own result is shipped in data/results/; fast and other-budget results are cached
    in the run store."""
    if not fast and (budget is None or not budget.label):
        return results.shipped_path(name)
    folder = f"{name}-fast" if fast else name
    if budget is not None and budget.label:
        folder += "-" + budget.slug
    return results.cache_root() / folder / "result.json"


MAX_ROUNDS = 100  # a next_round that never ends is a bug in the recipe, not a longer run


def run_experiment(name: str, fast: bool = False, progress: bool = True, workers: int | None = None,
                   on_done: Callable[[int, int, Variant], None] | None = None,
                   budget: Budget | None = None, backend: str | None = None,
                   ray_address: str | None = None) -> ExperimentResult:
    """Train (or fetch) every variant, analyse, decide each claim's verdict, save and return the result.

    The variants train side by side, one process per core (workbench.parallel); workers=1 trains
    them one after another in this process. The fast mode always uses one local worker: its runs
    are shorter than a process takes to start. backend="ray" (or WORKBENCH_BACKEND=ray) trains them
    as Ray tasks instead, on the cluster at ray_address or a local Ray instance (workbench.ray_backend).
    on_done(index, total, variant) follows each run. An adaptive recipe (Experiment.next_round) trains
    round after round, each round's variants side by side; all rounds' runs make the result. The
    recipe's own result (not fast, no budget) also gets its provenance and canary, and is written to
    data/results/ for REPRODUCTIONS.md."""
    from ..parallel import choose_backend, train_many

    backend = choose_backend(backend)
    experiment = get_experiment(name)
    variants = budget.apply(experiment.variants(fast)) if budget else experiment.variants(fast)
    # Later rounds follow from the runs of the (seed-filtered) first one, so only the steps apply to them.
    later = Budget(steps=budget.steps) if budget else Budget()
    finished, trained, runs = [], 0.0, None
    rounds = MAX_ROUNDS if variants else 0  # a measurement has nothing to train
    for _ in range(rounds):
        done = len(finished)
        jobs = [(v.config, f"{name}: " + ", ".join(f"{k}={v}" for k, v in v.labels.items())) for v in variants]
        started = time.time()
        runs = train_many(jobs, workers=1 if fast and backend == "local" else workers, progress=progress,
                          on_done=(lambda i, run, done=done, variants=variants:
                                   on_done(done + i, done + len(variants), variants[i])) if on_done else None,
                          backend=backend, ray_address=ray_address)
        trained += time.time() - started
        finished += list(zip(variants, runs))
        variants = later.apply(experiment.next_round(finished, fast)) if experiment.next_round else []
        seen = {variant.config.run_id for variant, _ in finished}
        variants = [v for v in variants if v.config.run_id not in seen]  # a round never retrains a run
        if not variants:
            break
    else:
        if rounds:
            raise ConfigError("experiment", name, f"its rounds did not end after {MAX_ROUNDS}")
    begun = time.time()
    table, summary = experiment.analyze(finished, fast)
    analysis = time.time() - begun
    # The cost of the phenomenon: the runs' own training time (also when they came from the cache)
    # plus the analysis, not the seconds this call happened to take; the wall time is kept beside
    # it when this call trained something.
    statuses = [run.status() for _, run in finished]
    training = sum(float(status.get("elapsed_s") or 0.0) for status in statuses)
    path = result_path(name, fast, budget)
    previous = results.read(path)
    trained_now = trained > 0.05 * training
    result = ExperimentResult(
        name, table, summary, [run.run_id for _, run in finished], runtime_s=round(training + analysis, 1), fast=fast,
        wall_s=round(trained + analysis, 1) if trained_now else previous and previous.wall_s,
        workers=runs.workers if trained_now and runs is not None else previous.workers if previous else 1,
        budget=budget.label if budget else "", outcomes=experiment.decide(summary),
        runs=[{"run_id": run.run_id, "labels": variant.labels, "status": status.get("status"),
               "elapsed_s": status.get("elapsed_s"), "config": variant.config.to_dict()}
              for (variant, run), status in zip(finished, statuses)])
    if path.parent == results.shipped_root():
        result.provenance, result.canary = _provenance(experiment, result, finished, training, analysis)
    results.write(path, result)
    return result


def _provenance(experiment: Experiment, result: ExperimentResult, finished, training: float,
                analysis: float) -> tuple[dict, dict]:
    """Where and how the shipped result was made, and its canary, checked against the stored first run:
    a stored run made by other arithmetic (an older version of the code) is refused, not reused. A
    measurement (no runs) takes its experiment's own canary."""
    import os

    from .canary import compute_canary, machine, matches_stored_run

    if not finished:
        canary = {**experiment.canary(), "kind": "measurement", "machine": machine()}
        seeds = sorted(int(seed) for seed in result.summary.get("seeds", []))
    else:
        variant, run = finished[0]
        canary = compute_canary(variant.config)
        agrees, detail = matches_stored_run(canary, run)
        if not agrees:
            raise ConfigError("run store", str(run.path),
                              f"its first run was trained by other arithmetic than this code ({detail}); "
                              "train the recipe in a fresh store (WORKBENCH_DATA) to make a shipped result")
        seeds = _seeds_of(finished)
    provenance = {**results.git_commit(), "machine": machine(), "cores": os.cpu_count(),
                  "cpu_s": round(training, 1), "analysis_s": round(analysis, 1), "seeds": seeds,
                  "created": time.strftime("%Y-%m-%d")}
    return provenance, canary


def _seeds_of(finished) -> list[int]:
    return sorted({_seed(variant) for variant, _ in finished})


def load_result(name: str, fast: bool = False, budget: Budget | None = None) -> ExperimentResult | None:
    return results.read(result_path(name, fast, budget))


def save_result(result: ExperimentResult, budget: Budget | None = None) -> None:
    """Write a result where load_result finds it (tests and tools that make results by hand)."""
    results.write(result_path(result.name, result.fast, budget), result)
