"""Views of one finished run of an in-context function task, shared by the dashboard's In-context
learning page, `workbench export RUN --figure icl-curve` and notebook 09: the run's error (or
accuracy) against the number of in-context examples beside the closed-form baselines on the very
same fresh sequences, the run at another number of loops (looped models), and how close its
predictions are to k steps of gradient descent on the context.
"""
from __future__ import annotations

import pandas as pd
import torch

from ..errors import ConfigError, check
from .baselines import BASELINES, baselines_for, gradient_descent, least_squares, averaging
from .checks import count
from .curves import accuracy_rows, baseline_frame, curve_rows, learner_accuracy, model_curve

LINEAR_TASKS = ("icl_linear_regression", "icl_sparse_regression")
REGRESSION_TASKS = LINEAR_TASKS + ("icl_relu_network", "icl_decision_tree")
BOOLEAN_TASKS = ("icl_boolean",)
ICL_TASKS = REGRESSION_TASKS + BOOLEAN_TASKS
SEQUENCES = 256  # fresh sequences a curve is averaged over (the page and the export)
GD_STEPS = (1, 2, 3, 5, 10, 20, 50)  # the step counts agreement_with_gd compares by default
TRAIN_HINT = ("`workbench train task.name=icl_linear_regression model.init=fan_in train.lr=3e-3 "
              "train.steps=600`")


def _open(run_id_or_run):
    from ..store import open_run

    return open_run(run_id_or_run) if isinstance(run_id_or_run, str) else run_id_or_run


def is_icl_task(task_name: str) -> bool:
    return task_name in ICL_TASKS


def check_icl_run(run) -> str:
    """The run's task name; a ConfigError naming the task and the allowed ones unless it is an
    in-context function task."""
    name = run.config().task.name
    if not is_icl_task(name):
        raise ConfigError("task", name, f"run {run.run_id} is not an in-context function task; the error-vs-examples "
                                        f"view reads runs of: {', '.join(ICL_TASKS)}")
    return name


def icl_runs(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of a runs table (app_support.runs_table) whose task is an in-context function task."""
    if table.empty or "task" not in table.columns:
        return table
    return table[table.task.isin(ICL_TASKS)]


def load(run_id_or_run, loops: int | None = None):
    """(run, model, task) of a finished ICL run, the model at `loops` loops when given (looped models)."""
    from ..analysis import load_model

    run = _open(run_id_or_run)
    check_icl_run(run)
    model, task = load_model(run)
    if loops is not None:
        check(run.config().model.looped, "loops", loops, "only a looped model (model.looped=true) runs at "
                                                         "another number of loops")
        model.loops = count(loops, "loops")
    return run, model, task


def model_name(run, loops: int | None = None) -> str:
    """How a run appears in a legend: its mixer, and its loops for a looped model."""
    config = run.config().model
    name = config.mixer if not config.layers else "+".join(config.layers)
    if config.looped:
        name += f" ({loops if loops is not None else config.n_layers} loops)"
    return name


def eval_batch(task, n: int = SEQUENCES, examples: int | None = None, shift: str | None = None):
    """n fresh evaluation sequences with `examples` examples each (default: the most it trained on),
    their prompts moved by `shift` (a name from icl.shifts.SHIFTS; regression tasks) when given; the same
    sequences for the same (n, examples, shift), whatever the model."""
    from ..evaluate import eval_generator

    n = count(n, "n")
    examples = task.params.max_examples if examples is None else count(examples, "examples", 2)
    if shift is None:
        return task.sample(n, eval_generator(0, examples), length=examples, train=False)
    from .shifts import shifted_batch

    check(task.name in REGRESSION_TASKS, "shift", shift, f"prompts are shifted for regression runs: "
                                                         f"{', '.join(REGRESSION_TASKS)}")
    return shifted_batch(task, shift, n, examples)


def run_error_table(run_id_or_run, n: int = SEQUENCES, examples: int | None = None,
                    baselines: list[str] | None = None, loops: int | None = None,
                    shift: str | None = None) -> pd.DataFrame:
    """A tidy table of the run against the number of in-context examples, on n fresh sequences.

    Regression tasks: columns model, kind ("model"/"baseline"), seed, examples, error (squared error
    / d, / 1 for trees), the run's row beside each baseline (`baselines`: names from
    icl.baselines.BASELINES, default the task's own set), as figures.icl.error_vs_examples reads. Boolean
    tasks: columns function, model, kind, seed, examples, accuracy, the run beside the task's learners
    (icl.boolean.learners; `baselines` picks among them), as figures.icl.accuracy_panels reads. `shift`:
    read on prompts moved off the training distribution (icl.shifts; regression tasks), the baselines on
    the same ones."""
    run, model, task = load(run_id_or_run, loops)
    batch = eval_batch(task, n, examples, shift)
    name, seed = model_name(run, loops), run.config().train.seed
    if run.config().task.name in BOOLEAN_TASKS:
        return _boolean_table(model, task, batch, name, seed, baselines)
    if baselines is not None:
        unknown = [b for b in baselines if b not in BASELINES]
        if unknown:
            raise ConfigError("baselines", unknown[0], choices=list(BASELINES))
    rows = pd.DataFrame(curve_rows(model_curve(model, task, batch), model=name, kind="model", seed=seed))
    if baselines == []:
        return rows
    return pd.concat([rows, baseline_frame(task, batch, baselines)], ignore_index=True)


def _boolean_table(model, task, batch, name, seed, baselines) -> pd.DataFrame:
    from .boolean import learners

    function = task.params.function
    chosen = learners(function, task.params.relevant)
    if baselines is not None:
        unknown = [b for b in baselines if b not in chosen]
        if unknown:
            raise ConfigError("baselines", unknown[0], choices=list(chosen))
        chosen = {b: chosen[b] for b in baselines}
    rows = accuracy_rows(1 - model_curve(model, task, batch), function=function, model=name, kind="model", seed=seed)
    for learner, accuracy in learner_accuracy(task, batch, chosen).items():
        rows += accuracy_rows(accuracy, function=function, model=learner, kind="baseline")
    return pd.DataFrame(rows)


def baseline_names(run_id_or_run) -> list[str]:
    """The baselines (regression) or learners (Boolean) a run's curve can be drawn beside."""
    run = _open(run_id_or_run)
    name = check_icl_run(run)
    if name in BOOLEAN_TASKS:
        from .boolean import learners

        params = run.config().task.params
        return list(learners(params.get("function", "conjunction"), int(params.get("relevant", 2))))
    return baselines_for(name)


def error_axis(task_name: str) -> str:
    """A regression curve's y axis: squared error / the task's error scale, as the task names it."""
    from ..tasks import TASKS

    return TASKS.get(task_name).error_label if task_name in REGRESSION_TASKS else "squared error / d"


def error_caption(task_name: str) -> str:
    """What a regression curve's error is, for the task a run trained on."""
    caption = (f"{error_axis(task_name).capitalize()} of each query (predicting 0 scores about 1), the run's solid, "
               "the baselines' grey.")
    if task_name in LINEAR_TASKS:
        caption += " Least squares is exact once the examples determine w (d of them, without label noise)."
    return caption


def shift_caption(config, shift: str) -> str:
    """Which queries `shift` moves for a run of `config`'s task (icl.shifts.where_it_acts), for the page."""
    from ..tasks import build_task
    from .shifts import where_it_acts

    params = build_task(config.task.name, config.task.params).params
    return where_it_acts(shift, params.dim, params.max_examples)  # eval_batch's default number of examples


def curve_figure(table: pd.DataFrame, title: str | None = None, task_name: str | None = None):
    """The figure a run_error_table draws as: error_vs_examples (its y axis named for `task_name`), or
    accuracy_panels for Boolean tables."""
    from ..figures.icl import accuracy_panels, error_vs_examples

    if "accuracy" in table.columns:
        return accuracy_panels(table, title=title)
    return error_vs_examples(table, y_title=error_axis(task_name or ""), title=title)


def run_curve_figure(run_id_or_run, n: int = SEQUENCES, examples: int | None = None,
                     baselines: list[str] | None = None, loops: int | None = None, shift: str | None = None):
    run = _open(run_id_or_run)
    name = run.config().task.name
    title = f"{run.run_id}: in-context {'accuracy' if name in BOOLEAN_TASKS else 'error'}"
    return curve_figure(run_error_table(run, n, examples, baselines, loops, shift),
                        title=title + (f" ({shift})" if shift else ""), task_name=name)


def error_at(table: pd.DataFrame, model: str, examples: int) -> float:
    """One number of a run_error_table: `model`'s error (or accuracy) after `examples` examples (median
    over seeds)."""
    column = "accuracy" if "accuracy" in table.columns else "error"
    rows = table[(table.model == model) & (table.examples == examples)]
    check(not rows.empty, "model", model, f"no row at {examples} examples; the table has: "
                                          + ", ".join(dict.fromkeys(table.model)))
    return float(rows[column].median())


# --- looped models --------------------------------------------------------------------------------
def loops_table(run_id_or_run, loops: list[int], n: int = SEQUENCES, examples: int | None = None) -> pd.DataFrame:
    """A looped run's error against the number of in-context examples at each number of loops in
    `loops` (one model row per count, model named "k loops"), beside least squares; columns as
    run_error_table's, plus loops."""
    run = _open(run_id_or_run)
    check(run.config().model.looped, "run", run.run_id, "is not a looped model (train with model.looped=true)")
    check(check_icl_run(run) in REGRESSION_TASKS, "task", run.config().task.name,
          f"loops_table reads regression runs: {', '.join(REGRESSION_TASKS)}")
    parts = []
    for count in loops:
        part = run_error_table(run, n, examples, baselines=[], loops=count)
        parts.append(part.assign(model=f"{count} loops", loops=count))
    _, _, task = load(run)
    parts.append(baseline_frame(task, eval_batch(task, n, examples), ["least squares"]))
    return pd.concat(parts, ignore_index=True)


def error_by_loops(table: pd.DataFrame, examples: int) -> pd.DataFrame:
    """From a loops_table: the error after `examples` examples at each number of loops (loops, error)."""
    rows = table[(table.kind == "model") & (table.examples == examples)]
    rows = rows[["loops", "error"]].sort_values("loops").reset_index(drop=True)
    return rows.astype({"loops": int})


# --- is it doing gradient descent? ----------------------------------------------------------------
@torch.no_grad()
def model_predictions(model, task, batch) -> torch.Tensor:
    """(B, k) the model's prediction of each query's y (regression tasks)."""
    from ..evaluate import eval_mode

    with eval_mode(model):
        return task.predictions(model(*batch.inputs()))[:, 0::2].double()


def agreement(predictions: torch.Tensor, reference: torch.Tensor, dim: int, first: int = 1) -> dict:
    """How close two (B, k) sets of predictions are over the queries from `first` examples on:
    the mean squared difference / d, and Pearson's correlation over all those predictions."""
    a, b = predictions[:, first:].double().flatten(), reference[:, first:].double().flatten()
    a_c, b_c = a - a.mean(), b - b.mean()
    correlation = float((a_c * b_c).sum() / ((a_c.norm() * b_c.norm()).clamp_min(1e-300)))
    return {"difference": float(((a - b) ** 2).mean() / dim), "correlation": correlation}


def agreement_with_gd(run_id_or_run, steps=GD_STEPS, n: int = SEQUENCES, examples: int | None = None,
                      loops: int | None = None, lr: float | None = None) -> pd.DataFrame:
    """The run's predictions beside k steps of gradient descent on each prefix of the context
    (icl.baselines.gradient_descent from w = 0, step 1/L per prefix unless `lr`), for each k in `steps`,
    and beside least squares and averaging for reference: one row per algorithm with columns
    algorithm, steps (None for the references), difference (mean squared difference of the
    predictions / d) and correlation, over the queries that have seen at least one example; also
    error, each algorithm's own squared error / d there (the model's in the row "model")."""
    run, model, task = load(run_id_or_run, loops)
    check(run.config().task.name in LINEAR_TASKS, "task", run.config().task.name,
          f"gradient descent on w is compared on linear regression runs: {', '.join(LINEAR_TASKS)}")
    batch = eval_batch(task, n, examples)
    xs, ys = task.examples(batch)
    mine, d = model_predictions(model, task, batch), task.params.dim
    rows = [{"algorithm": "model", "steps": None, "difference": 0.0, "correlation": 1.0,
             "error": agreement(mine, ys, d)["difference"]}]
    algorithms = [(f"GD, {k} step{'s' if k != 1 else ''}", k, lambda k=k: gradient_descent(xs, ys, k, lr))
                  for k in steps]
    algorithms += [("least squares", None, lambda: least_squares(xs, ys)), ("averaging", None, lambda: averaging(xs, ys))]
    for name, k, predict in algorithms:
        theirs = predict().double()
        rows.append({"algorithm": name, "steps": k, **agreement(mine, theirs, d),
                     "error": agreement(theirs, ys, d)["difference"]})
    return pd.DataFrame(rows).astype({"steps": "Int64"})  # whole numbers, <NA> for the references


def closest_gd_steps(table: pd.DataFrame) -> int:
    """From agreement_with_gd: the number of GD steps whose predictions are closest to the model's."""
    gd = table[table.steps.notna()]
    return int(gd.loc[gd.difference.idxmin(), "steps"])


def context_predictions(task, batch, index: int = 0, baselines: list[str] | None = None) -> pd.DataFrame:
    """One sequence of a regression batch, query by query: the number of examples seen, the true y
    and each baseline's prediction of it from those examples (`baselines`: names from BASELINES)."""
    check(task.output == "regression", "task", task.name, f"context_predictions reads regression tasks: "
                                                          f"{', '.join(REGRESSION_TASKS)}")
    check(isinstance(index, int) and 0 <= index < len(batch), "index", index, f"expected 0..{len(batch) - 1}")
    chosen = list(BASELINES) if baselines is None else baselines
    for name in chosen:
        check(name in BASELINES, "baselines", name, "choose one of: " + ", ".join(BASELINES))
    xs, ys = task.examples(batch)
    xs, ys = xs[index:index + 1], ys[index:index + 1]
    table = pd.DataFrame({"examples": range(ys.shape[1]), "y": ys[0].tolist()})
    for name in chosen:
        table[name] = BASELINES[name](xs, ys)[0].tolist()
    return table
