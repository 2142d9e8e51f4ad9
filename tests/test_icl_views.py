"""workbench.icl.views on tiny finished runs: the error-vs-examples table of a regression run beside the
baselines, the accuracy table of a Boolean run beside its learners, a looped run at other loop counts,
agreement with k steps of gradient descent, a clear refusal of other tasks, and `workbench export RUN
--figure icl-curve`."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.errors import ConfigError
from workbench.icl import views
from workbench.icl.baselines import LINEAR_BASELINES

from icl_runs import train_runs

pytestmark = pytest.mark.usefixtures("one_thread")



@pytest.fixture(scope="module")
def tiny_runs(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("icl-runs")
    return root, train_runs(root)


@pytest.fixture
def runs(tiny_runs, monkeypatch, tmp_path) -> dict[str, str]:
    root, ids = tiny_runs
    monkeypatch.setenv("WORKBENCH_DATA", str(root))
    monkeypatch.setenv("WORKBENCH_DEMO", str(tmp_path / "no-demo"))
    monkeypatch.chdir(tmp_path)
    return ids


def test_a_regression_run_beside_every_baseline_on_the_same_sequences(runs):
    table = views.run_error_table(runs["regression"], n=32)
    assert list(table.columns) == ["model", "kind", "seed", "examples", "error"]
    assert set(table[table.kind == "baseline"].model) == set(LINEAR_BASELINES)
    model = table[table.kind == "model"]
    assert set(model.model) == {"attention"} and list(model.examples) == [0, 1, 2, 3, 4] and (model.error >= 0).all()
    assert views.error_at(table, "least squares", 4) < 1e-6  # d = 2 examples determine w without noise
    fig = views.curve_figure(table)
    assert {trace.name for trace in fig.data} >= {"attention", "least squares"}


def test_baselines_and_examples_are_chosen_and_unknown_ones_refused(runs):
    table = views.run_error_table(runs["regression"], n=8, examples=3, baselines=["least squares"])
    assert set(table.model) == {"attention", "least squares"} and table.examples.max() == 2
    with pytest.raises(ConfigError, match="baselines: invalid value 'newton'; choose one of: least squares"):
        views.run_error_table(runs["regression"], n=8, baselines=["newton"])
    assert views.baseline_names(runs["regression"]) == list(LINEAR_BASELINES)


def test_a_boolean_run_gives_an_accuracy_table_with_the_task_learners(runs):
    table = views.run_error_table(runs["boolean"], n=16)
    assert list(table.columns) == ["function", "model", "kind", "seed", "examples", "accuracy"]
    assert set(table.model) == {"attention", "nearest neighbour", "elimination (optimal)"}
    assert table.accuracy.between(0, 1).all()
    assert views.baseline_names(runs["boolean"]) == ["nearest neighbour", "elimination (optimal)"]
    assert "accuracy (%)" in views.curve_figure(table).layout.yaxis.title.text


def test_a_run_of_another_task_is_refused_with_the_allowed_tasks(runs):
    with pytest.raises(ConfigError) as error:
        views.run_error_table(runs["addition"])
    message = str(error.value)
    assert error.value.field == "task" and "'addition'" in message
    assert all(name in message for name in views.ICL_TASKS)
    with pytest.raises(ConfigError, match="gradient descent on w is compared on linear regression runs"):
        views.agreement_with_gd(runs["boolean"], n=8)


def test_a_looped_run_at_other_loop_counts(runs):
    table = views.loops_table(runs["looped"], [1, 2, 4], n=16)
    assert set(table[table.kind == "model"].model) == {"1 loops", "2 loops", "4 loops"}
    by_loops = views.error_by_loops(table, 4)
    assert list(by_loops.loops) == [1, 2, 4] and by_loops.error.notna().all()
    assert set(views.run_error_table(runs["looped"], n=8, baselines=[], loops=3).model) == {"attention (3 loops)"}
    with pytest.raises(ConfigError, match="only a looped model"):
        views.run_error_table(runs["regression"], n=8, loops=2)
    with pytest.raises(ConfigError, match="not a looped model"):
        views.loops_table(runs["regression"], [1])


def test_agreement_with_gradient_descent_names_the_closest_step_count(runs):
    table = views.agreement_with_gd(runs["regression"], steps=(1, 5, 50), n=32)
    assert list(table.algorithm) == ["model", "GD, 1 step", "GD, 5 steps", "GD, 50 steps", "least squares", "averaging"]
    assert table.correlation.between(-1, 1).all() and (table.difference >= 0).all()
    assert views.closest_gd_steps(table) in (1, 5, 50)
    # averaging is one GD step of size 1 from w = 0: with lr=1 the two agree exactly
    one = views.agreement_with_gd(runs["regression"], steps=(1,), n=32, lr=1.0).set_index("algorithm")
    assert one.loc["GD, 1 step", "error"] == pytest.approx(one.loc["averaging", "error"])


def test_agreement_of_identical_predictions():
    import torch

    a = torch.randn(4, 6)
    assert views.agreement(a, a, dim=2) == pytest.approx({"difference": 0.0, "correlation": 1.0})


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_the_icl_curve_exports_through_the_cli(needs_browser, runs, capsys):
    assert main(["export", runs["regression"], "--figure", "icl-curve", "--out", "x.png"]) == 0
    path = Path(capsys.readouterr().out.strip())
    assert path.name == "x.png" and png_size(path.read_bytes())[0] > 0
    assert main(["export", runs["boolean"], "--figure", "icl-curve", "--out", "b.svg"]) == 0
    assert "accuracy" in Path(capsys.readouterr().out.strip()).read_text()


def test_the_icl_curve_export_refuses_other_tasks_in_one_line(runs, capsys):
    assert main(["export", runs["addition"], "--figure", "icl-curve", "--out", "x.png"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: task: invalid value 'addition'") and "icl_linear_regression" in line
    assert not (Path.cwd() / "exports").exists()


def test_the_log_axis_stays_near_the_models_when_least_squares_is_exact():
    import math

    import pandas as pd

    from workbench.figures.icl import error_vs_examples

    table = pd.DataFrame([{"model": "attention", "kind": "model", "seed": 0, "examples": i, "error": e}
                          for i, e in enumerate([1.0, 0.5, 0.1, 0.05])]
                         + [{"model": "least squares", "kind": "baseline", "examples": i, "error": e}
                            for i, e in enumerate([1.0, 0.5, 1e-14, 1e-15])])
    figure = error_vs_examples(table)
    low, high = figure.layout.yaxis.range
    assert low == pytest.approx(math.log10(0.05 / 100) - 0.1) and high == pytest.approx(math.log10(3))
    # the line that leaves the axis is named, with where it leaves
    (note,) = figure.layout.annotations
    assert note.text == "least squares: below the axis from 2 examples (down to 1e-15)"
    assert not error_vs_examples(table[table.examples < 2]).layout.annotations
    assert list(figure.layout.yaxis.tickvals) == [0.001, 0.01, 0.1, 1]  # over 3 decades: the powers, written out


def test_many_panels_wrap_onto_rows_each_axis_named_once_per_row_and_column():
    import pandas as pd

    from workbench.figures.icl import PANELS_PER_ROW, function_class_panels

    shifts = [f"shift {k}" for k in range(PANELS_PER_ROW + 3)]  # 7 panels: a row of 4, then 3
    table = pd.DataFrame([{"shift": shift, "model": name, "kind": kind, "seed": 0, "examples": i, "error": e}
                          for shift in shifts for name, kind in (("attention", "model"), ("least squares", "baseline"))
                          for i, e in enumerate([1.0, 0.5, 0.2])])
    figure = function_class_panels(table, by="shift", mark={shift: 1 for shift in shifts}, y_title="squared error / d")
    axes = figure.layout
    assert axes.yaxis5.domain[1] < axes.yaxis.domain[0]  # the fifth panel starts a second row, below the first
    assert [axes[f"yaxis{k}"].title.text for k in (1, 5)] == ["squared error / d"] * 2
    named = [k for k in range(1, 8) if axes[f"xaxis{'' if k == 1 else k}"].title.text]
    assert named == [4, 5, 6, 7]  # the lowest panel of each column: the 4th stands above an empty slot


def test_one_context_query_by_query():
    import torch

    from workbench.tasks import build_task

    task = build_task("icl_linear_regression", {"dim": 2, "min_examples": 5, "max_examples": 5})
    batch = task.sample(3, torch.Generator().manual_seed(0), train=False)
    table = views.context_predictions(task, batch, 1, ["least squares", "averaging"])
    assert list(table.columns) == ["examples", "y", "least squares", "averaging"] and len(table) == 5
    assert table["least squares"].iloc[0] == 0 and table["least squares"].iloc[3] == pytest.approx(table.y.iloc[3], abs=1e-5)
    with pytest.raises(ConfigError, match="index"):
        views.context_predictions(task, batch, 3)
