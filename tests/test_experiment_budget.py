"""Another budget for a named recipe (other steps, a subset of seeds): the same analysis, a
result cached apart from the recipe's, clear errors for impossible budgets."""
import pytest

from workbench.cli import main
from workbench.errors import ConfigError
from workbench.experiments import Budget, budget_for, get_experiment, load_result, recipe_budget, run_experiment


def test_a_budget_changes_steps_and_seeds_and_is_cached_apart(data_dir):
    recipe = get_experiment("lengthgen-addition").variants(False)
    chosen = Budget(steps=30, seeds=(1,)).apply(recipe)
    assert len(chosen) == len(recipe) // 3 and {v.labels["seed"] for v in chosen} == {1}
    assert all(v.config.train.steps == 30 and v.config.probes.every <= 30 for v in chosen)
    assert {v.labels["pos"] for v in chosen} == {v.labels["pos"] for v in recipe}

    result = run_experiment("lengthgen-addition", fast=True, progress=False, budget=Budget(steps=12))
    assert result.budget == "12 steps" and set(result.table.pos) == {"coupling", "coupling_relative", "learned"}
    assert load_result("lengthgen-addition", fast=True) is None, "the recipe's own result is untouched"
    cached = load_result("lengthgen-addition", fast=True, budget=Budget(steps=12))
    assert cached.run_ids == result.run_ids and cached.budget == "12 steps"


@pytest.mark.parametrize("budget, field", [(dict(steps=0), "steps"), (dict(seeds=()), "seeds")])
def test_impossible_budgets_name_the_field(budget, field):
    with pytest.raises(ConfigError, match=field):
        Budget(**budget)


def test_unknown_seed_names_the_recipes_seeds(data_dir):
    with pytest.raises(ConfigError, match="seeds.*choose one of: 0, 1"):
        Budget(seeds=(7,)).apply(get_experiment("lengthgen-addition").variants(False))


def test_cli_budget_flags_give_one_clear_line(capsys):
    assert main(["experiment", "run", "lengthgen-addition", "--seeds", "zero"]) == 2
    err = capsys.readouterr().err
    assert "--seeds" in err and "zero" in err and "Traceback" not in err


def test_budget_for_keeps_only_what_differs_from_the_recipe():
    recipe = recipe_budget("lazy-neurons")
    assert recipe == Budget(20000, (0, 1, 2))
    assert budget_for(recipe, 20000, (2, 0, 1)) is None, "the recipe itself"
    assert budget_for(recipe, 4000, (0, 1, 2)) == Budget(steps=4000)
    assert budget_for(recipe, 20000, (2,)) == Budget(seeds=(2,))
    assert budget_for(recipe_budget("lazy-neurons", True), 16, None) is None, "fast mode has its own budget"
    assert Budget(20000, (0, 2)).cli_args == ["--steps", "20000", "--seeds", "0,2"]
    with pytest.raises(ConfigError, match="seeds"):
        budget_for(recipe, 20000, ())


def test_an_experiment_runs_in_the_background_on_another_budget(data_dir):
    from workbench import background

    budget = budget_for(recipe_budget("lazy-neurons", True), 4, None)
    job = background.start_experiment("lazy-neurons", fast=True, budget=budget)
    assert job.command[-2:] == ["--steps", "4"] and job.key.endswith("-fast-4steps")
    assert background.find_job("experiment", "lazy-neurons", True) is None, "the recipe's own job is another"
    for _ in range(1200):  # bounded polling: a busy machine may take a while to import torch
        if not job.alive:
            break
        __import__("time").sleep(0.25)
    found = background.find_job("experiment", "lazy-neurons", True, budget)
    assert found is not None and background.job_outcome(found) == "completed", found and found.log_tail()
    assert background.experiment_progress("lazy-neurons", True, budget)["done"] == 3
    assert load_result("lazy-neurons", fast=True, budget=budget).budget == "4 steps"
    assert load_result("lazy-neurons", fast=True) is None


def test_a_seed_the_recipe_lacks_is_refused_before_anything_starts(data_dir):
    from workbench import background

    with pytest.raises(ConfigError, match="seeds.*choose one of: 0"):
        background.start_experiment("lazy-neurons", fast=True, budget=Budget(seeds=(5,)))
    assert background.jobs() == []


def test_the_progress_of_a_bisection_counts_the_runs_of_its_later_rounds(data_dir):
    """An adaptive recipe knows its first round only; the runs its later rounds trained since the job
    began are counted beside it (the Experiments page shows both)."""
    import time

    from workbench import background
    from workbench.experiments import run_experiment

    began = time.time() - 1  # a file's ctime may be a little behind this clock
    result = run_experiment("memorization-capacity", fast=True, progress=False, workers=1)
    progress = background.experiment_progress("memorization-capacity", True, since=began)
    first = background.experiment_run_ids("memorization-capacity", True)
    assert progress["adaptive"] and progress["done"] == progress["total"] == len(first)
    assert progress["later"] == len(set(result.run_ids) - set(first)) > 0
    assert not background.experiment_progress("lazy-neurons", True, since=began)["adaptive"]
