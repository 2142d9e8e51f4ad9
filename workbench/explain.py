"""Words that belong next to a run's numbers: what an exact match was measured on, and when a number
depends on something a reader would not guess (a run that never fit its own task, coupled position
ids read from their rarest start, a smoke-test budget). The dashboard shows them where the number is;
they are plain strings so the notebooks and tests read the same ones.
"""
from __future__ import annotations

from .reports import final_values

NEVER_FIT = 0.5  # exact match on its own training lengths below this: the run has not learned the task
LOW_LOSS = 0.05  # a training loss this low with exact match below NEVER_FIT points at the evaluation
SMOKE_TEST_STEPS = 300  # budgets below this (fast mode's) check the pipeline, not the method


def task_class(config):
    from .tasks import TASKS

    return TASKS.get(config.task.name)


def training_lengths(config) -> tuple[int, int]:
    from .tasks import build_task

    return build_task(config.task.name, config.task.params).train_lengths()


def exact_match_meaning(config) -> str:
    """What "exact match" over training is: the whole answer right, on fresh samples of which lengths."""
    low, high = training_lengths(config)
    lengths = f"length {low}" if low == high else f"lengths {low}-{high}"
    return (f"Exact match: the share of {config.train.eval_samples} fresh samples whose whole answer is right, "
            f"at the training {lengths} (the task's own unit).")


def run_notes(run) -> list[str]:
    """Warnings for the numbers of one finished (or running) run; empty when they mean what they seem."""
    from .probes.id_offset import default_offset, sweepable

    config = run.config()
    final = final_values(run.metrics())
    notes = []
    exact, loss = final.get("exact_match"), final.get("loss")
    if exact is not None and exact < NEVER_FIT and task_class(config).exact_match_reachable:
        low, high = training_lengths(config)
        if sweepable(config) and loss is not None and loss < LOW_LOSS:
            notes.append(f"Training loss {loss:.3f} but exact match {exact:.0%} at its training lengths: the "
                         f"evaluation starts the coupled position ids at {default_offset(config)}, where training "
                         "rarely puts them. The run may have learned every id but the smallest: the Length "
                         "generalization page reads it with the ids starting elsewhere.")
        else:
            notes.append(f"This run never fit its own training lengths ({low}-{high}): exact match "
                         f"{exact:.0%} there. Its numbers at other lengths say nothing about generalization.")
    if config.train.steps < SMOKE_TEST_STEPS:
        notes.append(f"Trained only {config.train.steps} steps, a smoke-test budget: near-zero curves are expected "
                     "and say nothing about the method.")
    return notes


def budget_note(steps: int, fast: bool) -> str | None:
    """For an experiment's result on a short budget (fast mode, or fewer steps than the recipe)."""
    if steps >= SMOKE_TEST_STEPS and not fast:
        return None
    return (f"{'Fast mode: ' if fast else ''}{steps} training steps per run, a smoke test of the pipeline. "
            "Curves near zero are expected and say nothing about the method; the shipped result above is "
            "the recipe's.")
