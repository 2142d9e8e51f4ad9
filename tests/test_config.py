"""Config: typed overrides, validation that names field/value/choices, canonical identity."""
import json

import pytest

from workbench.config import RunConfig
from workbench.errors import ConfigError


def test_overrides_are_typed():
    config = RunConfig.load(None, ["model.d_model=32", "train.lr=3e-3", "model.sigma_reparam=true",
                                   "task.eval_lengths=5,10", "task.max_digits=7"])
    assert config.model.d_model == 32 and isinstance(config.model.d_model, int)
    assert config.train.lr == pytest.approx(3e-3)
    assert config.model.sigma_reparam is True
    assert config.task.eval_lengths == [5, 10]
    assert config.task.params["max_digits"] == 7


@pytest.mark.parametrize("override, field, fragment", [
    ("model.pos=rop", "model.pos", "rope"),
    ("model.mixer=transformerx", "model.mixer", "attention"),
    ("task.name=additon", "task.name", "addition"),
    ("model.d_model=abc", "model.d_model", "integer"),
    ("train.steps=0", "train.steps", ">= 1"),
    ("model.n_heads=3", "model.n_heads", "divisor"),
    ("task.max_digits=-1", "task.max_digits", ">="),
    ("model.colour=red", "model.colour", "choose one of"),
    ("optimizer.lr=1", "optimizer", "section"),
    ("model.init=xavier", "model.init", "fan_in"),
    ("model.norm=batchnorm", "model.norm", "rmsnorm"),
    ("model.mlp_ratio=-1", "model.mlp_ratio", "0 for no MLP"),
])
def test_bad_values_name_field_value_and_choices(override, field, fragment):
    with pytest.raises(ConfigError) as error:
        RunConfig.load(None, [override])
    message = str(error.value)
    assert message.startswith(field)
    assert repr(override.split("=", 1)[1]) in message or override.split("=", 1)[1] in message
    assert fragment in message


def test_run_id_is_a_hash_of_the_whole_config_including_seed():
    a = RunConfig.load(None, ["train.seed=0"])
    b = RunConfig.load(None, ["train.seed=0"])
    c = RunConfig.load(None, ["train.seed=1"])
    assert a.run_id == b.run_id != c.run_id
    assert len(a.run_id) == 12


def test_defaults_hash_the_same_as_explicit_values():
    implicit = RunConfig.load(None, [])
    explicit = RunConfig.load(None, ["task.max_digits=10", "model.pos=learned"])
    assert implicit.run_id == explicit.run_id


def test_settings_added_later_keep_the_ids_of_runs_stored_before_them():
    # The ids these configs had before model.init, model.norm, probes.weights and mqar's show_answers existed
    assert RunConfig.load(None, []).run_id == "d3f0ec239136"
    assert RunConfig.load(None, ["model.init=gpt2"]).run_id == "d3f0ec239136"
    assert RunConfig.load(None, ["model.norm=layernorm"]).run_id == "d3f0ec239136"
    assert RunConfig.load(None, ["model.norm=rmsnorm"]).run_id != "d3f0ec239136"
    assert RunConfig.load(None, ["probes.weights=false"]).run_id == "d3f0ec239136"
    assert RunConfig.load(None, ["probes.weights=true"]).run_id != "d3f0ec239136"
    assert RunConfig.load(None, ["task.name=mqar"]).run_id == "2cb994e6b2b2"
    assert RunConfig.load(None, ["model.init=fan_in"]).run_id != "d3f0ec239136"
    assert RunConfig.load(None, ["task.name=mqar", "task.show_answers=false"]).run_id != "2cb994e6b2b2"
    assert RunConfig.load(None, ["task.name=mqar", "task.filler=marker", "task.distinct_values=false"]).run_id \
        == "2cb994e6b2b2"
    assert RunConfig.load(None, ["task.name=mqar", "task.filler=random"]).run_id != "2cb994e6b2b2"


def test_canonical_json_round_trips():
    config = RunConfig.load(None, ["model.pos=coupling", "task.eval_lengths=3,4"])
    again = RunConfig.from_dict(json.loads(config.canonical_json()))
    assert again.canonical_json() == config.canonical_json()


def test_yaml_and_json_files(tmp_path):
    (tmp_path / "c.yaml").write_text("model:\n  pos: rope\n  d_model: 32\ntrain:\n  steps: 5\n")
    (tmp_path / "c.json").write_text(json.dumps({"model": {"pos": "rope", "d_model": 32}, "train": {"steps": 5}}))
    from_yaml = RunConfig.load(tmp_path / "c.yaml")
    assert from_yaml.run_id == RunConfig.load(tmp_path / "c.json").run_id
    assert RunConfig.load(tmp_path / "c.yaml", ["train.steps=6"]).train.steps == 6


def test_yaml_is_loaded_safely(tmp_path):
    (tmp_path / "evil.yaml").write_text("model: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(ConfigError, match="cannot parse"):
        RunConfig.load(tmp_path / "evil.yaml")


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "0", "-1e-3"])
def test_a_learning_rate_that_is_not_a_finite_positive_number_is_refused(value, capsys):
    from workbench.cli import main

    assert main(["train", f"train.lr={value}"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: train.lr: invalid value") and "finite number > 0" in line
    assert str(float(value)) in line


@pytest.mark.parametrize("override", ["model.mlp_ratio=inf", "train.grad_clip=nan", "train.beta2=1",
                                      "train.weight_decay=-0.1"])
def test_other_numbers_out_of_range_are_refused(override):
    with pytest.raises(ConfigError, match=override.split("=")[0]):
        RunConfig.load(None, [override])
