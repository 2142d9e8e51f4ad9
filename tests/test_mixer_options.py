"""A mixer with settings of its own is one file and one registry line: its Options dataclass is
checked by the config, written model.NAME on the command line, shown by the Train form and read by
the mixer, with no edit to config.py or forms.py; existing run ids do not move."""
from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from torch import Tensor

from workbench.config import RunConfig
from workbench.errors import ConfigError
from workbench.forms import model_fields
from workbench.models import MIXERS, build_model
from workbench.models.mixers.base import Mixer, MixerContext, register_mixer
from workbench.typed import setting


@pytest.fixture
def shift_mixer():
    """A toy mixer, as a new file would define it: mixes each token with the one `shift` steps back."""

    @register_mixer("toy_shift")
    class Shift(Mixer):
        @dataclass
        class Options:
            shift: int = setting(1, "how many steps back the mixed-in token is")
            weight: float = setting(0.5, "the share of the earlier token")

        def forward(self, x: Tensor, context: MixerContext) -> Tensor:
            earlier = torch.roll(x, self.options.shift, dims=1)
            earlier[:, : self.options.shift] = 0
            return (1 - self.options.weight) * x + self.options.weight * earlier

    yield Shift
    MIXERS._items.pop("toy_shift")


def test_a_mixer_declares_its_own_settings(shift_mixer):
    config = RunConfig.load(None, ["model.mixer=toy_shift", "model.shift=3"])
    assert config.model.mixer_options == {"shift": 3, "weight": 0.5}  # checked, defaults filled in
    model = build_model(config.model, vocab_size=12)
    assert model.blocks[0].mixer.options.shift == 3
    assert model(torch.randint(0, 12, (2, 7))).shape == (2, 7, 12)
    same = RunConfig.load(None, ["model.mixer=toy_shift", "model.mixer_options.shift=3", "model.weight=0.5"])
    assert same.run_id == config.run_id  # both spellings, and a default given explicitly, are one run


def test_bad_settings_name_the_field_and_the_allowed_ones(shift_mixer):
    with pytest.raises(ConfigError, match=r"model\.shift: invalid value 'two'; expected an integer"):
        RunConfig.load(None, ["model.mixer=toy_shift", "model.shift=two"])
    with pytest.raises(ConfigError, match=r"model\.shfit.*unknown setting; choose one of: shift, weight, "):
        RunConfig.load(None, ["model.mixer=toy_shift", "model.shfit=2"])
    with pytest.raises(ConfigError, match=r"model\.shift.*unknown setting"):
        RunConfig.load(None, ["model.mixer=attention", "model.shift=2"])  # attention has no such setting


def test_the_train_form_shows_them_with_their_help(shift_mixer):
    fields = {field.key: field for field in model_fields("toy_shift")}
    assert fields["model.shift"].default in (1, "1") and "steps back" in fields["model.shift"].help
    assert "model.mixer_options" not in fields
    assert "model.shift" not in {field.key for field in model_fields("attention")}


def test_existing_run_ids_do_not_move():
    assert RunConfig.load(None, []).run_id == "d3f0ec239136"
    default = RunConfig.load(None, [])
    assert default.model.mixer_options == {"attention_head_dim": 0}  # attention's own setting, at its default
    assert "mixer_options" not in default.canonical_json()  # ... which the run id leaves out


def test_the_form_fills_in_and_reads_back_a_mixers_own_settings(shift_mixer):
    from workbench.forms import config_from_form, form_values

    config = RunConfig.load(None, ["model.mixer=toy_shift", "model.shift=3"])
    values = form_values(config)
    assert values["model.shift"] == "3"
    assert config_from_form(config.task.name, values, mixer="toy_shift").run_id == config.run_id
