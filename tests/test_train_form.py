"""The Train page's form: presets, only the settings that apply, help from the config's own docs, a
first status line without a NaN loss, and a stored config reused (and said so) instead of retrained."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from workbench import background
from workbench.config import SECTIONS
from workbench.forms import (HYBRID, config_from_form, form_fields, form_values, mixer_of,
                             model_fields)
from workbench.models import MIXERS
from workbench.presets import PRESETS, preset_runs, run_labels
from workbench.selection import SELECTED_RUNS
from workbench.train import train
from workbench.typed import describe

TRAIN_PAGE = str(Path(__file__).resolve().parent.parent / "app" / "pages" / "2_Train.py")
SSM_ONLY = {"d_state", "d_conv", "expand", "ssm_init"}
TINY_FORM = {"task.max_digits": "3", "model.n_layers": "1", "model.d_model": "16", "train.steps": "6",
             "train.batch_size": "8", "train.eval_samples": "8", "train.threads": "1", "probes.every": "0"}


def shown(mixer: str) -> set[str]:
    return {field.key.split(".", 1)[1] for field in model_fields(mixer)}


def test_every_mixer_says_which_settings_it_reads():
    from dataclasses import fields

    from workbench.config import ModelConfig
    from workbench.forms import mixer_settings

    model_fields_ = {field.name for field in fields(ModelConfig)}
    assert set(mixer_settings()) == set(MIXERS.names())
    for name, settings in mixer_settings().items():
        assert set(settings) <= model_fields_, f"{name} names a setting ModelConfig does not have"


def test_the_form_shows_only_the_settings_a_mixer_reads():
    attention, mamba, lstm, hybrid = shown("attention"), shown("mamba"), shown("lstm"), shown(HYBRID)
    assert not attention & (SSM_ONLY | {"feature_map", "layers", "mixer"})
    assert {"n_heads", "softmax", "n_layers", "pos", "d_model"} <= attention
    assert SSM_ONLY <= mamba and not mamba & {"n_heads", "softmax", "feature_map"}
    assert not lstm & (SSM_ONLY | {"n_heads", "feature_map"})
    assert "layers" in hybrid and "n_layers" not in hybrid and SSM_ONLY <= hybrid


def test_the_evaluation_start_is_a_choice_for_coupled_id_tasks_only():
    from workbench.forms import task_fields

    fields = {field.key: field for field in task_fields("addition")}
    assert fields["task.eval_start"].kind == "choice" and fields["task.eval_start"].choices == ("first", "random")
    assert "task.eval_start" not in {field.key for field in task_fields("parity")}
    config = config_from_form("addition", {**TINY_FORM, "task.eval_start": "random"})
    assert config.task.eval_start == "random"


def test_every_setting_has_help_from_the_config_itself():
    for section, cls in SECTIONS.items():
        missing = [row["name"] for row in describe(cls) if not row["help"]]
        assert not missing, f"{section}: {missing}"
    fields = form_fields("addition", "attention")
    assert all(field.help for section in ("model", "train", "probes") for field in fields[section])


@pytest.mark.parametrize("title", list(PRESETS))
def test_a_preset_fills_the_form_with_exactly_its_runs(title):
    """Through the form and back, each preset trains the runs it names (for the phenomena: the recipes'
    own runs, so the experiment reuses them)."""
    configs = PRESETS[title].configs()
    first = configs[0]
    values = form_values(first)
    assert config_from_form(first.task.name, values, mixer_of(first)).run_id == first.run_id
    assert [c.run_id for c in preset_runs(PRESETS[title], first)] == [c.run_id for c in configs]
    labels = run_labels(configs, PRESETS[title].short)
    assert len(set(labels)) == len(labels)  # legends tell a pair apart


def test_choosing_a_preset_fills_the_page(data_dir):
    app = AppTest.from_file(TRAIN_PAGE, default_timeout=120).run()
    app.selectbox(key="train_preset").select("MQAR: attention vs Mamba (2 runs)").run()
    assert not app.exception and not app.warning
    assert app.selectbox(key="train_task").value == "mqar" and app.selectbox(key="train_mixer").value == "attention"
    assert app.text_input(key="train_mqar_model.d_model").value == "64"
    assert app.selectbox(key="train_mqar_model.init").value == "fan_in"
    assert not [t for t in app.text_input if t.key == "train_mqar_model.d_state"]  # attention reads no SSM state
    assert [b.label for b in app.get("form_submit_button")] == ["Train both"]


def test_the_first_status_line_has_no_nan_loss(data_dir):
    folder = data_dir / "abc"
    folder.mkdir()
    (folder / "status.json").write_text(json.dumps({"status": "running", "step": 0, "steps": 10,
                                                    "last_loss": float("nan")}))
    assert background.run_progress("abc")["last_loss"] is None
    (folder / "status.json").write_text(json.dumps({"status": "diverged", "step": 3, "last_loss": float("nan")}))
    loss = background.run_progress("abc", alive=False)["last_loss"]
    assert loss is not None and math.isnan(loss)  # a diverged run's NaN is the news, so it stays


def test_submitting_a_stored_config_reuses_the_run_and_says_so(data_dir):
    stored = train(config_from_form("addition", TINY_FORM), progress=False)
    app = AppTest.from_file(TRAIN_PAGE, default_timeout=120).run()
    for key, value in TINY_FORM.items():
        app.text_input(key=f"train_addition_{key}").input(value)
    app.button[0].click().run()
    assert not app.exception and not app.error
    assert background.jobs() == []  # nothing was started
    assert any(stored.run_id in info.value and "reused, not trained again" in info.value for info in app.info)
    assert app.session_state[SELECTED_RUNS] == [stored.run_id]
