"""Experiments: launch a named experiment in the background, watch it, see its table and figure."""
import streamlit as st

from workbench import app_support as support
from workbench import background
from workbench.errors import ConfigError
from workbench.explain import budget_note
from workbench.experiments import (EXPERIMENTS, budget_for, claim_lines, load_result, provenance_line,
                                   recipe_budget, run_command)

st.set_page_config(page_title="Experiments · workbench", layout="wide")
st.title("Experiments")
if not EXPERIMENTS:
    st.info("No named experiments are registered.")
    st.stop()

name = st.selectbox("experiment", list(EXPERIMENTS), key="experiments_name")
experiment = EXPERIMENTS[name]
st.markdown(experiment.description)
shipped = load_result(name)
st.markdown("**Claims and verdicts** (the shipped result, as in REPRODUCTIONS.md"
            + (f": {provenance_line(shipped)})" if shipped else "; not run yet)"))
with st.expander("each claim, its rule and every seed's numbers", expanded=True):
    st.markdown("\n".join(claim_lines(experiment, shipped)))
fast = st.toggle("fast mode (the small budget the tests use)", value=True, key="experiments_fast")
recipe = recipe_budget(name, fast)
with st.expander("Budget: training steps and seeds"):
    st.caption(f"{'Fast mode' if fast else 'The recipe'} trains {recipe.steps} steps per run (its longest run, where "
               "runs differ; another budget keeps their ratios) on seed"
               f"{'s' if len(recipe.seeds) > 1 else ''} {', '.join(map(str, recipe.seeds))}. "
               "Another budget trains its own runs and keeps its result "
               "apart; REPRODUCTIONS.md reads only the recipe's.")
    steps = st.number_input("training steps per run", min_value=1, value=recipe.steps, step=max(1, recipe.steps // 4),
                            key=f"experiments_steps_{name}_{fast}")
    seeds = st.multiselect("seeds", recipe.seeds, default=recipe.seeds, key=f"experiments_seeds_{name}_{fast}")
backend, ray_address = "local", ""
if support.ray_available():
    with st.expander("Where to train: this machine or a Ray cluster"):
        on_ray = st.radio("train the runs", ["on this machine (one process per core)", "on Ray (one task per run)"],
                          key="experiments_backend") != "on this machine (one process per core)"
        if on_ray:
            backend = "ray"
            ray_address = st.text_input("Ray cluster address (empty: a local Ray instance)", key="experiments_ray",
                                        placeholder="e.g. 10.0.0.5:6379").strip()
            st.caption("Every node must see this dashboard's run store at the same path; see docs/cluster.md.")
try:
    budget = budget_for(recipe, int(steps), tuple(seeds))
except ConfigError as error:
    support.show_error(error)
    st.stop()
command = " ".join(["workbench", *run_command(name, fast, budget, backend, ray_address)])
job = background.find_job("experiment", name, fast, budget)


@st.fragment(run_every=1.0)
def watch() -> None:
    current = background.find_job("experiment", name, fast, budget)
    if current is None or not current.alive:
        st.rerun(scope="app")  # finished: show the result, stop polling
    progress = background.experiment_progress(name, fast, budget, since=current.started)
    where = " on Ray" if current.backend == "ray" else ""
    text = f"{progress['done']} of {progress['total']} runs finished{where}"
    if progress["adaptive"]:  # later rounds are chosen from the earlier ones' results: not known ahead
        text = f"first round: {text}; later rounds so far: {progress['later']} runs (each follows from the last)"
    st.progress(progress["fraction"], text=text)
    if progress["current_progress"]:
        run = progress["current_progress"]
        st.caption(f"training {progress['current']}: step {run['step']} of {run['steps']}")
    if st.button("Cancel", key="experiments_cancel"):
        background.cancel(current)


if job is not None and job.alive:
    watch()
else:
    if job is not None and background.job_outcome(job) != "completed":
        st.error(f"The last run of {name} ended: {background.job_outcome(job)}")
        st.code(job.log_tail() or "(no output)")
    if st.button("Run", type="primary", key="experiments_run",
                 help="trains every variant in a background process (runs already in the store are reused)"):
        with support.errors_shown():
            background.start_experiment(name, fast, budget, backend, ray_address)
            st.rerun()

result = load_result(name, fast, budget)
if result is None:
    st.info(f"No result yet for {name}{' (fast)' if fast else ''}{f' on {budget.label}' if budget else ''}: "
            f"press **Run** (or `{command}`).")
    st.stop()
st.subheader("Result")
st.caption(f"{len(result.run_ids)} runs · {result.runtime_s:.0f} s of training"
           + (f" · budget: {result.budget}, not the recipe's" if result.budget else ""))
stem = support.download_name(name, "fast" if fast else "", budget.slug if budget else "")
short_budget = budget_note(budget.steps if budget and budget.steps else recipe.steps, fast)
if short_budget:
    st.warning(short_budget)
with support.errors_shown():
    support.figure_view(result.figure(), "experiments_figure", stem)
if fast or budget:
    with st.expander("Verdicts on this budget (fewer than 3 seeds never decide a claim)"):
        st.markdown("\n".join(claim_lines(experiment, result)))
st.dataframe(result.table, hide_index=True, key="experiments_table")
st.json(result.summary, expanded=False)
