"""Small conveniences for the teaching notebooks: fast mode and budgets.

`WORKBENCH_FAST=1` (set by `make test`) runs every notebook on the same code path with smaller
budgets, so the notebooks double as tests.
"""
from __future__ import annotations

import os


def fast_mode() -> bool:
    return os.environ.get("WORKBENCH_FAST", "") not in ("", "0", "false")


def budget(full, fast):
    """`full` normally, `fast` under WORKBENCH_FAST=1."""
    return fast if fast_mode() else full


def shipped_result(name: str, **expected: str):
    """The experiment's shipped result (data/results/NAME.json, what REPRODUCTIONS.md shows), checked: its
    verdicts must be what the rules decide from its stored numbers today, and each claim named in
    `expected` (claim key with '-' written '_') must have that verdict. Fast mode reads the same file,
    so a notebook asserts its phenomenon in every mode. Prints each claim's verdict and per-seed numbers."""
    from .experiments import get_experiment, load_result
    from .experiments.report import outcome_lines, rules_agree

    experiment, result = get_experiment(name), load_result(name)
    if result is None:
        raise AssertionError(f"no shipped result for {name}: run `workbench experiment run {name}`")
    if not rules_agree(experiment, result):
        raise AssertionError(f"{name}: the verdict rules now decide differently from the shipped result")
    print("\n".join(outcome_lines({claim.key: result.outcomes[claim.key] for claim in experiment.claims})))
    for key, verdict in expected.items():
        outcome = result.outcomes[key.replace("_", "-")]
        if outcome.verdict != verdict:
            raise AssertionError(f"{name}: {key} is {outcome.verdict!r}, expected {verdict!r}: {outcome.per_seed}")
    return result
