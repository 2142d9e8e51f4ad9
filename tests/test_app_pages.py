"""Every dashboard page through Streamlit's AppTest: with tiny demo runs, with an empty store, a bad
Train form (the command line's message, no exception), a run trained in the background, delete
with confirmation. The demo runs are trained here (WORKBENCH_DEMO), not read from data/demo."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from workbench import background
from workbench.app_support import SELECTED_RUNS, filter_runs, runs_table
from workbench.forms import HYBRID as HYBRID_MIXER
from workbench.config import RunConfig
from workbench.train import train

REPO = Path(__file__).resolve().parent.parent
PAGES = REPO / "app" / "pages"
TIMEOUT = 120
TINY = ["model.d_model=16", "model.n_heads=2", "train.steps=20", "train.batch_size=16", "train.warmup=5",
        "probes.every=10", "train.eval_samples=32", "train.eval_every=10", "train.threads=1"]
ADDITION = ["task.name=addition", "task.max_digits=3", "task.eval_lengths=2,3,5", "model.n_layers=1",
            "model.pos=coupling", "probes.extra=memorization"] + TINY
HYBRID = ["task.name=copy", "task.max_length=4", "task.eval_lengths=2,4,6", "model.layers=attention,mamba",
          "model.pos=rope", "probes.extra=max_logit"] + TINY


def page(name: str) -> str:
    return str(next(PAGES.glob(f"*_{name}.py")))


@pytest.fixture(scope="session")
def tiny_demo(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """Two tiny finished runs: attention on addition, and an attention + Mamba hybrid on copy."""
    root = tmp_path_factory.mktemp("demo")
    ids = {}
    for name, overrides in (("addition", ADDITION), ("hybrid", HYBRID)):
        ids[name] = train(RunConfig.load(None, overrides), progress=False, label=f"demo: {name}", root=root).run_id
    return root, ids


@pytest.fixture
def demo(tiny_demo, data_dir, monkeypatch):
    root, ids = tiny_demo
    monkeypatch.setenv("WORKBENCH_DEMO", str(root))
    return ids


@pytest.fixture
def empty(data_dir, monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBENCH_DEMO", str(tmp_path / "no-demo"))


def run_page(name: str, selected: list[str] | None = None) -> AppTest:
    app = AppTest.from_file(page(name), default_timeout=TIMEOUT)
    if selected is not None:
        app.session_state[SELECTED_RUNS] = selected
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def charts(app) -> list:
    return app.get("plotly_chart")


def own_copy(demo_root: Path, run_id: str, data_dir: Path, status: dict | None = None) -> str:
    """A demo run copied into the user's store (deletable), optionally with a changed status."""
    shutil.copytree(demo_root / run_id, data_dir / run_id)
    if status:
        path = data_dir / run_id / "status.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), **status}))
    return run_id


# --- every page with the demo runs ---------------------------------------------------------------
def test_runs_page_filters_selects_and_compares(demo):
    app = run_page("Runs")
    assert set(app.dataframe[0].value.run_id) == set(demo.values())
    app.multiselect(key="runs_task").select("copy").run()
    assert list(app.dataframe[0].value.run_id) == [demo["hybrid"]]
    app.multiselect(key="runs_compare").set_value([o for o in app.multiselect(key="runs_compare").options]).run()
    assert not app.exception
    assert set(app.session_state[SELECTED_RUNS]) == set(demo.values())
    assert len(charts(app)) == 2  # loss of both runs, and their length curves


def test_filter_and_sort_the_run_table(demo):
    table = runs_table(columns=None)
    assert list(filter_runs(table, sort_by="d_model").run_id) == list(table.sort_values("d_model").run_id)
    assert filter_runs(table, text="COPY").task.tolist() == ["copy"]
    assert filter_runs(table, statuses=["failed"]).empty


def test_attention_page_grid_slider_and_two_runs(demo):
    app = run_page("Attention", selected=[demo["addition"]])
    grid, single = charts(app)
    assert "heatmap" in grid.proto.spec and "query %{y}" in single.proto.spec
    slider = app.select_slider(key=f"attention_step_left_{demo['addition']}")
    assert slider.options == ["0", "10", "20"]
    slider.set_value(10).run()
    assert not app.exception
    app.toggle(key="attention_compare").set_value(True).run()
    assert not app.exception
    assert len(charts(app)) == 4  # grid and enlarged map for each side
    assert len(app.get("download_button")) == 12


def test_attention_page_reads_a_fresh_sample_beyond_the_training_length(demo):
    app = run_page("Attention", selected=[demo["addition"]])
    app.radio(key="attention_source_left").set_value("a fresh sample").run()
    assert not app.exception
    length = app.number_input(key=f"attention_length_left_{demo['addition']}")
    assert length.value == 3  # the longest addition it trained on
    length.set_value(6).run()
    assert not app.exception and "2.0x the longest trained" in app.caption[0].value
    answer = app.markdown[0].value
    assert answer.startswith("answer `") and ("right" in answer or "wrong" in answer)
    grid, single = charts(app)
    tokens = app.caption[0].value.split(": ", 1)[1].split()
    assert len(tokens) == 1 + 6 + 1 + 6 + 1 + 7  # ^, two 6-digit operands, + and =, the 7-digit sum (its end is a target)
    assert f'"{len(tokens) - 1}:{tokens[-1]}"' in single.proto.spec  # every token is on the enlarged map's axes
    app.number_input(key=f"attention_length_left_{demo['addition']}").set_value(200).run()
    assert any("more than a browser draws well" in info.value for info in app.info) and not charts(app)


def test_attention_page_moves_a_coupled_samples_ids(demo):
    app = run_page("Attention", selected=[demo["addition"]])
    app.radio(key="attention_source_left").set_value("a fresh sample").run()
    offset = app.number_input(key=f"attention_offset_left_{demo['addition']}")
    assert offset.value == 1  # addition's evaluation starts its coupled ids at 1
    tokens, ids = app.caption[0].value.split(": ", 1)[1], app.caption[1].value.split(": ", 1)[1].split()
    offset.set_value(9).run()
    assert not app.exception and app.caption[0].value.split(": ", 1)[1] == tokens  # the same sample
    moved = app.caption[1].value.split(": ", 1)[1].split()
    assert [int(b) - int(a) for a, b in zip(ids, moved) if a != "0"] == [8] * sum(a != "0" for a in ids)


def test_attention_page_has_no_offset_for_a_model_that_ignores_the_ids(demo):
    app = run_page("Attention", selected=[demo["hybrid"]])  # rope on copy: the task's ids are not read
    app.radio(key="attention_source_left").set_value("a fresh sample").run()
    assert not app.exception and not [n for n in app.number_input if "offset" in n.key]


def test_attention_page_shows_ssm_maps_of_a_hybrid(demo):
    app = run_page("Attention", selected=[demo["hybrid"]])
    assert "mamba" in app.caption[0].value
    app.selectbox(key="attention_layer_left").select(1).run()  # the Mamba layer's implicit map
    assert not app.exception and len(charts(app)) == 2


def test_dynamics_page_plots_every_recorded_probe(demo):
    app = run_page("Dynamics", selected=[demo["hybrid"]])
    shown = {c.proto.spec for c in charts(app) if "share of tokens it fires on" not in c.proto.spec}
    assert len(shown) == len(app.multiselect(key="dynamics_probes").value) >= 5
    assert "max_logit" in app.multiselect(key="dynamics_probes").value
    assert not app.error
    assert not any("coupled position ids" in c.value for c in app.caption)  # rope reads no coupled ids


def test_dynamics_page_says_where_a_coupled_runs_exact_match_starts_its_ids(demo):
    app = run_page("Dynamics", selected=[demo["addition"]])
    assert any("coupled position ids starting at 1" in c.value for c in app.caption)


def test_dynamics_page_shows_per_neuron_activity_at_chosen_steps(demo):
    app = run_page("Dynamics", selected=[demo["addition"]])
    steps = app.multiselect(key=f"dynamics_activity_steps_{demo['addition']}")
    assert steps.value == [0, 10, 20]  # every snapshot: fewer than the default number of lines

    def activity_lines() -> list[str]:
        [chart] = [c for c in charts(app) if "share of tokens it fires on" in c.proto.spec]
        return [trace["name"] for trace in json.loads(chart.proto.spec)["data"]]

    assert activity_lines() == ["step 0", "step 10", "step 20"]
    steps.set_value([20]).run()
    assert not app.exception and activity_lines() == ["step 20"]


def test_dynamics_page_marks_divergence(demo, tiny_demo, data_dir):
    run_id = own_copy(tiny_demo[0], demo["addition"], data_dir, {"status": "diverged", "diverged_step": 10})
    app = run_page("Dynamics", selected=[run_id])
    assert "diverged at step 10" in app.error[0].value
    assert '"diverged"' in charts(app)[0].proto.spec  # the marker's label on the loss plot


def test_dynamics_page_marks_entropy_collapse(demo, tiny_demo, data_dir):
    from workbench.events import COLLAPSE_FRACTION, collapse_step
    from workbench.store import Run

    run = Run(data_dir / own_copy(tiny_demo[0], demo["addition"], data_dir))
    metrics = run.metrics()
    entropy = (metrics.probe == "entropy") & (metrics["head"] == -1) & (metrics.layer >= 0)
    first = metrics[entropy].value.iloc[0]
    metrics.loc[entropy & (metrics.step >= 10), "value"] = first * COLLAPSE_FRACTION / 2
    run.write_metrics(metrics)
    assert collapse_step(metrics) == 10
    app = run_page("Dynamics", selected=[run.run_id])
    assert "collapsed at step 10" in app.warning[0].value
    assert '"entropy collapse"' in charts(app)[0].proto.spec


def test_length_page_runs_and_experiment(demo, data_dir):
    app = run_page("Length_generalization", selected=list(demo.values()))
    assert len(charts(app)) == 1 and "longest trained" in charts(app)[0].proto.spec
    app.radio(key="length_source").set_value("an experiment").run()
    assert any("No experiment" in info.value for info in app.info)
    save_fake_lengthgen_result(demo)
    app.run()
    assert not app.exception and len(charts(app)) == 1 and len(app.dataframe) == 1


def test_length_page_starts_on_runs_of_one_task(demo):
    app = run_page("Length_generalization")
    chosen = app.multiselect(key="length_runs").value
    assert len(chosen) == 1  # one task has one run here: its copy or addition sibling has another length axis
    assert len(app.multiselect(key="length_runs").options) == 2


def evaluate_on_length_page(app: AppTest, lengths: str) -> AppTest:
    app.text_input(key="length_eval_lengths").input(lengths)
    app.number_input(key="length_eval_n").set_value(8)
    app.number_input(key="length_eval_entropy_n").set_value(2)
    next(button for button in app.button if button.label == "Evaluate").click().run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def test_length_page_evaluates_a_run_and_draws_entropy_against_length(demo, tiny_demo, data_dir):
    from workbench.store import open_run

    run_id = own_copy(tiny_demo[0], demo["hybrid"], data_dir)
    app = run_page("Length_generalization", selected=[demo["addition"]])
    assert "Attention entropy by test length" in [h.value for h in app.subheader]
    assert len(charts(app)) == 1  # no run was evaluated with entropy yet
    app.selectbox(key="length_eval_run").select(next(o for o in app.selectbox(key="length_eval_run").options
                                                      if o.startswith(run_id) and "demo" not in o)).run()
    evaluate_on_length_page(app, "2,8")
    assert any(run_id in s.value for s in app.success)
    assert list(app.dataframe[0].value.columns) == ["length", "exact_match", "entropy layer 0"]  # one attention layer
    assert any(o.startswith(run_id) for o in app.multiselect(key="length_runs").value)  # added to the curves
    assert len(charts(app)) == 2 and "longest trained" in charts(app)[1].proto.spec
    stored = open_run(run_id).metrics()
    assert {2, 8} <= set(stored[(stored.probe == "entropy") & (stored.length > 0)].length)
    app.toggle(key="length_entropy_normalized").set_value(True).run()
    assert "normalized attention entropy" in charts(app)[1].proto.spec


def test_length_page_evaluating_a_demo_run_stores_nothing_and_bad_lengths_are_named(demo, tiny_demo):
    from workbench.store import open_run

    before = len(open_run(demo["addition"]).metrics())
    app = run_page("Length_generalization", selected=[demo["addition"]])
    evaluate_on_length_page(app, "2,7")
    assert any("read-only" in info.value for info in app.info) and len(app.dataframe) == 1
    assert len(open_run(demo["addition"]).metrics()) == before
    evaluate_on_length_page(app, "2,x")
    assert any("--lengths: invalid value 'x'" in w.value for w in app.warning)


def test_length_page_without_any_curve_evaluates_the_first_one(empty):
    overrides = [o for o in ADDITION if not o.startswith("task.eval_lengths")]
    run_id = train(RunConfig.load(None, overrides), progress=False).run_id
    app = run_page("Length_generalization")
    assert any("No run has a length curve yet" in info.value for info in app.info) and not charts(app)
    evaluate_on_length_page(app, "2,5")
    assert app.multiselect(key="length_runs").value[0].startswith(run_id)
    assert len(charts(app)) == 2  # exact match and entropy against length


def test_length_page_reads_a_coupled_run_at_other_id_offsets(demo):
    from workbench.store import open_run

    before = len(open_run(demo["addition"]).metrics())
    app = run_page("Length_generalization", selected=[demo["addition"]])
    options = app.selectbox(key="length_offset_run").options
    assert len(options) == 1 and options[0].startswith(demo["addition"])  # the rope hybrid reads no coupled ids
    app.text_input(key="length_offset_lengths").input("2,3")
    app.text_input(key="length_offset_offsets").input("1,4")
    app.number_input(key="length_offset_n").set_value(8)
    next(button for button in app.button if button.label == "Evaluate by offset").click().run()
    assert not app.exception, [e.value for e in app.exception]
    result = next(frame.value for frame in app.dataframe if "offset 1" in frame.value.columns)
    assert list(result.columns) == ["length", "offset 1", "offset 4"] and list(result.length) == [2, 3]
    assert any("evaluation default" in chart.proto.spec for chart in charts(app))
    assert len(open_run(demo["addition"]).metrics()) == before  # a question asked of the run, not stored
    app.text_input(key="length_offset_offsets").input("0,4")
    next(button for button in app.button if button.label == "Evaluate by offset").click().run()
    assert any("--offsets: invalid value 0" in w.value for w in app.warning)


def test_length_page_reads_an_attention_run_with_temperatures(demo):
    from workbench.store import open_run

    before = len(open_run(demo["hybrid"]).metrics())
    app = run_page("Length_generalization", selected=[demo["hybrid"]])
    options = app.selectbox(key="length_temperature_run").options
    assert len(options) == 2  # both demo runs have attention (the hybrid's first layer)
    app.selectbox(key="length_temperature_run").select(next(o for o in options if o.startswith(demo["hybrid"]))).run()
    app.text_input(key="length_temperature_lengths").input("4,6")
    app.text_input(key="length_temperature_factors").input("1,2,uniform")
    app.number_input(key="length_temperature_n").set_value(8)
    next(button for button in app.button if button.label == "Evaluate with temperatures").click().run()
    assert not app.exception, [e.value for e in app.exception]
    result = next(frame.value for frame in app.dataframe if "x2 factor" in frame.value.columns)
    assert list(result.length) == [4, 6] and list(result["x2 factor"]) == [2.0, 2.0]
    assert len(open_run(demo["hybrid"]).metrics()) == before  # a question asked of the run, not stored
    app.text_input(key="length_temperature_factors").input("0")
    next(button for button in app.button if button.label == "Evaluate with temperatures").click().run()
    assert any("--temperature: invalid value 0.0" in w.value for w in app.warning)


def save_fake_lengthgen_result(demo) -> None:
    """A cached experiment result made from the tiny runs (the page only reads it)."""
    from workbench.experiments import ExperimentResult
    from workbench.experiments.base import save_result

    rows = [{"pos": pos, "seed": seed, "length": length, "exact_match": value}
            for pos in ("coupling", "learned") for seed in (0, 1) for length, value in ((3, 0.9 - seed / 10), (6, 0.2))]
    save_result(ExperimentResult("lengthgen-addition", pd.DataFrame(rows), {"train_max": 3},
                                 list(demo.values()), runtime_s=1.0, fast=True))


def test_memorization_page_train_vs_fresh(demo):
    app = run_page("Memorization", selected=[demo["addition"]])
    (chart,) = charts(app)
    assert "training samples" in chart.proto.spec and "fresh samples" in chart.proto.spec
    assert any("memorization-capacity" in info.value for info in app.info)  # no capacity result yet
    app.selectbox(key="memorization_capacity_recipe").select("memorization-context").run()
    assert any("`memorization-context`" in info.value for info in app.info)


def test_memorization_page_without_the_probe_says_so(demo):
    app = run_page("Memorization", selected=[demo["hybrid"]])
    assert any("probes.extra=memorization" in info.value for info in app.info)
    assert len(charts(app)) == 1  # exact match over training instead


def test_experiments_page_shows_a_cached_result(demo):
    app = AppTest.from_file(page("Experiments"), default_timeout=TIMEOUT)
    app.session_state["experiments_name"] = "lengthgen-addition"
    app.run()
    assert not app.exception and any("No result yet" in info.value for info in app.info)
    save_fake_lengthgen_result(demo)
    app.run()
    assert not app.exception
    assert len(charts(app)) == 1 and len(app.dataframe) == 1
    # the claims with the shipped verdicts ("not tested": none shipped here), then this budget's verdicts
    claims = [m.value for m in app.markdown if "**Claim**" in m.value]
    from workbench.experiments import EXPERIMENTS

    every_claim = len(EXPERIMENTS["lengthgen-addition"].claims)
    assert len(claims) == 2 and claims[0].count("**not tested**: no shipped result") == every_claim


def test_experiments_page_offers_another_budget(demo):
    from workbench.experiments import Budget, ExperimentResult, recipe_budget
    from workbench.experiments.base import save_result

    app = AppTest.from_file(page("Experiments"), default_timeout=TIMEOUT)
    app.session_state["experiments_name"] = "lengthgen-addition"
    app.run()
    steps, seeds = app.number_input(key="experiments_steps_lengthgen-addition_True"), \
        app.multiselect(key="experiments_seeds_lengthgen-addition_True")
    fast_budget = recipe_budget("lengthgen-addition", fast=True)
    assert (steps.value, tuple(seeds.value)) == (fast_budget.steps, fast_budget.seeds) == (150, (0,))
    steps.set_value(12).run()
    assert not app.exception
    assert any("on 12 steps" in info.value and "--fast --steps 12" in info.value for info in app.info)
    save_result(ExperimentResult("lengthgen-addition", pd.DataFrame(
        [{"pos": "coupling", "seed": 0, "length": 3, "exact_match": 0.5}]), {"train_max": 3}, list(demo.values()),
        runtime_s=1.0, fast=True, budget="12 steps"), Budget(steps=12))
    app.run()
    assert not app.exception and len(charts(app)) == 1
    assert any("budget: 12 steps, not the recipe's" in caption.value for caption in app.caption)
    app.multiselect(key="experiments_seeds_lengthgen-addition_True").set_value([]).run()
    assert any("seeds" in warning.value for warning in app.warning) and not charts(app)


# --- the Train form ------------------------------------------------------------------------------
def cli_message(overrides: list[str]) -> str:
    from workbench.errors import ConfigError

    with pytest.raises(ConfigError) as error:
        RunConfig.load(None, overrides)
    return str(error.value)


@pytest.mark.parametrize("key, value, override", [
    ("model.n_heads", "3", "model.n_heads=3"),
    ("train.lr", "fast", "train.lr=fast"),
    ("task.max_digits", "0", "task.max_digits=0"),
])
def test_train_form_bad_input_shows_the_command_line_message(empty, key, value, override):
    app = run_page("Train")
    app.text_input(key=f"train_addition_{key}").input(value)
    app.button[0].click().run()  # the form's Train button
    assert not app.exception
    assert [e.value for e in app.error] == [cli_message(["task.name=addition", override])]
    assert background.jobs() == []


def test_train_form_offers_every_task_parameter_and_registry_choice(empty):
    from workbench.config import NORMS
    from workbench.models import MIXERS, POSITIONS
    from workbench.tasks import TASKS

    app = run_page("Train")
    assert app.selectbox(key="train_task").options == TASKS.names()
    assert app.selectbox(key="train_mixer").options == [*MIXERS.names(), HYBRID_MIXER]
    assert app.selectbox(key="train_mixer").value == "attention"
    assert app.selectbox(key="train_addition_model.pos").options == POSITIONS.names()
    norm = app.selectbox(key="train_addition_model.norm")
    assert norm.options == list(NORMS) and norm.value == "layernorm" and "Mamba" in norm.help
    app.selectbox(key="train_task").select("mqar").run()
    assert app.text_input(key="train_mqar_task.power_a").value == "0.01"
    app.selectbox(key="train_task").select("multiplication").run()
    scratchpad = app.selectbox(key="train_multiplication_task.scratchpad")
    assert scratchpad.options == ["running", "partial_products"] and scratchpad.value == "running"
    app.selectbox(key="train_task").select("multi_operand_addition").run()
    scratchpad = app.selectbox(key="train_multi_operand_addition_task.scratchpad")
    assert scratchpad.options == ["running", "padded"] and scratchpad.value == "running"
    assert app.text_input(key="train_multi_operand_addition_task.equal_lengths").value == "0.0"
    app.selectbox(key="train_task").select("bigram_backcopy").run()
    objective = app.selectbox(key="train_bigram_backcopy_task.objective")
    assert objective.options == ["next", "masked"] and objective.value == "next"
    assert app.checkbox(key="train_bigram_backcopy_model.bidirectional").value is False  # attention's own
    app.selectbox(key="train_task").select("sort").run()
    hint_form = app.selectbox(key="train_sort_task.hint_form")
    assert hint_form.options == ["successors", "pairs"] and hint_form.value == "successors"
    assert app.checkbox(key="train_sort_model.logit_scaling").value is False


def test_train_form_shows_a_mixers_own_settings_when_it_is_chosen(empty):
    app = run_page("Train")
    app.selectbox(key="train_mixer").select("hyena").run()
    assert not app.exception, [e.value for e in app.exception]
    keys = {widget.key for widget in app.text_input}
    assert {"train_addition_model.order", "train_addition_model.filter_width"} <= keys
    assert app.text_input(key="train_addition_model.order").value == "2"
    assert "train_addition_model.head_dim" not in keys  # H3's own setting
    assert "train_addition_model.bidirectional" not in {widget.key for widget in app.checkbox}  # attention's


def test_train_page_runs_in_the_background_and_the_run_appears(empty, data_dir):
    app = run_page("Train")
    for key, value in {"task.max_digits": "3", "model.n_layers": "1", "model.d_model": "16", "train.steps": "10",
                       "train.batch_size": "8", "train.eval_samples": "8", "train.threads": "1"}.items():
        app.text_input(key=f"train_addition_{key}").input(value)
    app.button[0].click().run()
    assert not app.exception and not app.error
    (job,) = background.jobs("train")
    wait_for_exit(job)
    app = run_page("Train")
    assert any(": completed" in s.value for s in app.success)
    assert app.session_state[SELECTED_RUNS] == [job.name]
    assert runs_table().run_id.tolist() == [job.name]


def wait_for_exit(job, polls: int = 1200) -> None:
    """Bounded polling on the process (a busy machine may take a while to import torch)."""
    import time

    for _ in range(polls):
        if not job.alive:
            return
        time.sleep(0.25)
    pytest.fail(f"background job {job.key} still running; log:\n{job.log_tail()}")


def test_cancel_interrupts_a_background_run(data_dir):
    config = RunConfig.load(None, ["task.max_digits=3", "model.n_layers=1", "model.d_model=16", "train.steps=100000",
                                   "train.batch_size=8", "probes.every=0", "train.threads=1"])
    job = background.start_training(config)
    for _ in range(1200):  # until the loop has started (status written by the trainer)
        if background.run_progress(job.name)["state"] == "running" or not job.alive:
            break
        __import__("time").sleep(0.25)
    assert background.cancel(job)
    wait_for_exit(job)
    assert background.run_progress(job.name, alive=False)["state"] == "interrupted"
    assert (data_dir / job.name / "checkpoint.safetensors").exists()
    background.forget(job)
    assert background.jobs() == []


# --- deleting ------------------------------------------------------------------------------------
def test_delete_asks_for_confirmation_and_spares_demo_runs(demo, tiny_demo, data_dir):
    run_id = own_copy(tiny_demo[0], demo["hybrid"], data_dir)
    app = run_page("Runs")
    assert app.selectbox(key="runs_delete_choice").options == [run_id]  # demo runs are not offered
    app.button(key="runs_delete").click().run()
    assert "cannot be undone" in app.warning[0].value and (data_dir / run_id).exists()
    app.button(key="runs_delete_yes").click().run()
    assert not app.exception and not (data_dir / run_id).exists()


# --- an empty store ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["Runs", "Attention", "Dynamics", "Length_generalization", "Memorization", "In_context"])
def test_pages_with_an_empty_store_say_what_to_do(empty, name):
    app = run_page(name)
    assert any("Train" in info.value and "workbench" in info.value for info in app.info)
    assert not charts(app)


def test_train_and_experiments_pages_work_with_an_empty_store(empty):
    assert run_page("Train").get("form")
    app = run_page("Experiments")
    assert any("No result yet" in info.value for info in app.info)


def test_experiments_page_can_send_the_runs_to_ray(demo):
    pytest.importorskip("ray")
    app = AppTest.from_file(page("Experiments"), default_timeout=TIMEOUT)
    app.session_state["experiments_name"] = "lengthgen-addition"
    app.run()
    assert not any("--backend" in info.value for info in app.info)
    app.radio(key="experiments_backend").set_value("on Ray (one task per run)").run()
    app.text_input(key="experiments_ray").set_value("10.0.0.5:6379").run()
    assert not app.exception
    assert any("--fast --backend ray --ray-address 10.0.0.5:6379" in info.value for info in app.info)


def differences(app: AppTest) -> pd.DataFrame:
    """The table of config fields in which the compared runs differ."""
    return next(frame.value for frame in app.dataframe if "field" in frame.value.columns)


def test_dynamics_page_overlays_the_selected_runs_named_by_label(demo):
    app = run_page("Dynamics", selected=[demo["addition"], demo["hybrid"]])
    assert app.toggle(key="dynamics_compare").value and not app.exception
    probes = app.multiselect(key="dynamics_compare_probes").value
    assert "exact_match" in probes and len(charts(app)) == len(probes)
    assert all("demo: addition" in c.proto.spec and "demo: hybrid" in c.proto.spec for c in charts(app))
    table = differences(app)
    assert list(table.columns) == ["field", "demo: addition", "demo: hybrid"]
    assert {"task.name", "model.pos"} <= set(table.field) and "train.steps" not in set(table.field)


def test_attention_side_by_side_shows_both_runs_at_one_step(demo):
    app = run_page("Attention", selected=[demo["addition"], demo["hybrid"]])
    shared = app.select_slider(key="attention_step_shared")
    assert shared.options == ["0", "10", "20"]
    shared.set_value(10).run()
    assert not app.exception
    assert sum("at step 10" in c.value for c in app.caption) == 2  # each side says which snapshot it shows
    assert "model.pos" in set(differences(app).field)


def test_length_page_names_the_config_fields_its_runs_differ_in(demo):
    app = run_page("Length_generalization", selected=[demo["addition"], demo["hybrid"]])
    assert not app.exception and len(app.multiselect(key="length_runs").value) == 2
    assert "task.name" in set(differences(app).field)
