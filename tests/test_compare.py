"""The table of config fields in which compared runs differ."""
from workbench.compare import config_differences, flat_config
from workbench.config import RunConfig


def config(*overrides) -> dict:
    return RunConfig.load(None, list(overrides)).to_dict()


def test_fields_are_named_as_overrides_spell_them():
    flat = flat_config(config())
    assert flat["model.d_model"] == 64 and "task.params.max_digits" in flat


def test_only_the_fields_that_differ_are_listed_with_one_column_per_run():
    table = config_differences([config("model.pos=learned", "train.seed=0"),
                                config("model.pos=rope", "train.seed=0"),
                                config("model.pos=rope", "train.seed=1")], ["a", "b", "c"])
    assert list(table.columns) == ["field", "a", "b", "c"]
    assert list(table.field) == ["model.pos", "train.seed"]
    assert table.set_index("field").loc["model.pos"].tolist() == ["learned", "rope", "rope"]


def test_a_field_only_one_task_has_reads_not_set_for_the_other():
    table = config_differences([config("task.name=addition"), config("task.name=copy")], ["add", "copy"])
    rows = table.set_index("field")
    assert rows.loc["task.name"].tolist() == ["addition", "copy"]
    assert "(not set)" in rows.loc["task.params.max_digits"].tolist()


def test_identical_configs_give_an_empty_table():
    assert config_differences([config(), config()], ["x", "y"]).empty


def test_a_shared_step_shows_each_run_at_its_latest_snapshot_not_after_it():
    from workbench.compare import nearest_step, shared_steps

    assert shared_steps([[0, 10, 20], [0, 15]]) == [0, 10, 15, 20]
    assert nearest_step([0, 10, 20], 15) == 10 and nearest_step([0, 15], 15) == 15
    assert nearest_step([5, 10], 0) == 5 and nearest_step([], 3) is None
