"""The circuits tools reached as a user reaches them: `workbench patch / heads / lens`, figure export,
the Circuits page, and the induction-heads experiment in fast mode."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from workbench.cli import main
from workbench.config import RunConfig
from workbench.experiments import run_experiment
from workbench.figures.chromium import missing_browser
from workbench.selection import SELECTED_RUNS
from workbench.train import train

PAGE = str(Path(__file__).resolve().parent.parent / "app" / "pages" / "8_Circuits.py")
TINY = ["task.name=induction", "task.min_length=6", "task.max_length=10", "task.alphabet=8", "model.n_layers=2",
        "model.d_model=16", "model.n_heads=2", "model.mlp_ratio=0", "model.init=fan_in", "train.steps=20",
        "train.batch_size=16", "train.warmup=2", "train.eval_every=10", "train.eval_samples=32", "train.threads=1",
        "train.checkpoint_every=0", "probes.every=10", "probes.extra=heads", "probes.weights=true"]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return tmp_path_factory.mktemp("circuits-store")


@pytest.fixture(scope="module")
def runs(store):
    """Tiny attention, GRU and Hyena runs on induction, with detector scores and snapshot weights,
    and an attention run on parity (a task without patching pairs)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WORKBENCH_DATA", str(store))
        ids = {mixer: train(RunConfig.load(None, [*TINY, f"model.mixer={mixer}"]), progress=False).run_id
               for mixer in ("attention", "gru", "hyena")}
        ids["parity"] = train(RunConfig.load(None, ["task.name=parity", *TINY[4:]]), progress=False).run_id
    return ids


@pytest.fixture
def in_store(store, monkeypatch):
    monkeypatch.setenv("WORKBENCH_DATA", str(store))


def cli_json(capsys, *argv) -> object:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("mixer", ["attention", "gru"])
def test_patch_prints_every_layer_position_and_component(runs, in_store, capsys, mixer):
    out = cli_json(capsys, "patch", runs[mixer], "--json", "--n", "4")
    rows = out["rows"]
    assert set(rows[0]) == {"layer", "position", "component", "unit", "effect", "logit_diff"}
    assert {r["component"] for r in rows} == {"resid_pre", "mixer_out", "units"}  # no MLP: attention-only blocks
    assert {r["layer"] for r in rows} == {0, 1}
    assert len(out["clean"]) == len(out["corrupted"]) and out["answer"] != out["wrong"]
    spans = out["unit_groups"]["1"]  # attention: one head per unit; GRU: 16 channels in 8 groups of 2
    assert spans == ([[0, 1], [1, 2]] if mixer == "attention" else [[2 * g, 2 * g + 2] for g in range(8)])


def test_patch_at_a_snapshot_step_and_the_text_table(runs, in_store, capsys):
    assert main(["patch", runs["attention"], "--step", "10", "--n", "4", "--components", "resid_pre"]) == 0
    text = capsys.readouterr().out
    assert "resid_pre" in text and "fraction of the clean logit difference" in text


def test_heads_scores_every_unit_and_reads_them_over_training(runs, in_store, capsys):
    scores = cli_json(capsys, "heads", runs["attention"], "--json")
    assert {r["detector"] for r in scores} == {"previous_token", "duplicate_token", "induction", "answer_induction"}
    assert {(r["layer"], r["unit"]) for r in scores} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert all(0.0 <= r["score"] <= 1.0 for r in scores)
    history = cli_json(capsys, "heads", runs["attention"], "--over-training", "--json")
    assert {r["step"] for r in history} == {0, 10, 20}


def test_lens_reads_the_answer_after_every_stage(runs, in_store, capsys):
    out = cli_json(capsys, "lens", runs["gru"], "--json", "--n", "4")
    assert [r["stage"] for r in out["logit_lens"]] == ["resid_pre", "resid_pre", "resid_post"]
    assert {r["component"] for r in out["direct_logit_attribution"]} >= {"embed", "mixer"}


@pytest.mark.parametrize("argv, words", [
    (["patch", "RUN", "--components", "resid_pre,heads"], ["components", "heads", "resid_pre"]),
    (["patch", "RUN", "--step", "7"], ["step", "7", "0, 10, 20"]),
    (["patch", "PARITY"], ["task.name", "parity", "induction"]),
    (["heads", "PARITY", "--over-training"], ["probes.extra=heads"]),
])
def test_bad_input_is_one_clear_line(runs, in_store, capsys, argv, words):
    parity_without_heads = train(RunConfig.load(None, ["task.name=parity", *TINY[4:-2]]), progress=False).run_id
    argv = [{"RUN": runs["attention"], "PARITY": runs["parity"] if argv[0] == "patch" else parity_without_heads}
            .get(a, a) for a in argv]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert error.startswith("error:") and "Traceback" not in error
    assert all(word in error for word in words), error


@pytest.mark.skipif(missing_browser() is not None, reason=str(missing_browser()))
@pytest.mark.parametrize("figure", ["patching", "heads", "heads-over-training", "logit-lens"])
def test_every_circuits_view_exports(runs, in_store, tmp_path, figure):
    out = tmp_path / f"{figure}.svg"
    assert main(["export", runs["attention"], "--figure", figure, "--out", str(out)]) == 0
    assert out.read_text().lstrip().startswith(("<svg", "<?xml"))


@pytest.mark.parametrize("mixer", ["attention", "gru", "hyena"])
def test_the_circuits_page_shows_the_patching_heatmap_and_the_detectors(runs, in_store, mixer):
    app = AppTest.from_file(PAGE, default_timeout=120)
    app.session_state[SELECTED_RUNS] = [runs[mixer]]
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    charts = app.get("plotly_chart")
    assert len(charts) >= 3  # patching heatmap, detector scores, their history, the logit lens
    assert any("heatmap" in chart.proto.spec and "recovered" in chart.proto.spec for chart in charts)


def test_the_circuits_page_says_what_a_task_without_pairs_lacks(runs, in_store):
    app = AppTest.from_file(PAGE, default_timeout=120)
    app.session_state[SELECTED_RUNS] = [runs["parity"]]
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    assert any("no clean/corrupted pairs" in info.value for info in app.info)


def test_induction_heads_fast(data_dir):
    result = run_experiment("induction-heads", fast=True, progress=False)
    assert set(result.table.mixer) == {"attention", "linear_attention", "mamba", "h3", "s4d", "lstm", "gru"}
    assert {"exact_match", "answer_induction", "loss"} <= set(result.table.metric)
    attention = result.summary["runs"]["attention"]["0"]
    assert {"accuracy_jump", "detector_jump", "ablated_accuracy", "random_ablated_accuracy"} <= set(attention)
    assert all(outcome.verdict == "not tested" for outcome in result.outcomes.values())  # 4 steps decide nothing
    assert result.figure().data
