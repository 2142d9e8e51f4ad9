"""A smaller budget for a named recipe (fewer steps, a subset of seeds): the same analysis, a
result cached apart from the recipe's, clear errors for impossible budgets."""
import pytest

from workbench.cli import main
from workbench.errors import ConfigError
from workbench.experiments import Budget, get_experiment, load_result, run_experiment


def test_a_budget_changes_steps_and_seeds_and_is_cached_apart(data_dir):
    recipe = get_experiment("lengthgen-addition").variants(False)
    chosen = Budget(steps=30, seeds=(1,)).apply(recipe)
    assert len(chosen) == len(recipe) // 2 and {v.labels["seed"] for v in chosen} == {1}
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
