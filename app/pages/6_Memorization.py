"""Memorization: exact match on training samples vs fresh samples over training; capacity curves
from the memorization capacity experiments (against heads, or against the context size)."""
import streamlit as st

from workbench import app_support as support
from workbench.experiments import load_result
from workbench.experiments.inside.memorization_capacity import CAPACITY_RECIPES
from workbench.figures import runs as run_figures

st.set_page_config(page_title="Memorization · workbench", layout="wide")
st.title("Memorization")
table = support.runs_table()

st.subheader("Training vs fresh samples")
if not support.store_is_empty(table):
    run = support.pick_run(table, key="memorization_run")
    if not run_figures.has_memorization(run):
        st.info(f"Run {run.run_id} recorded no train-vs-fresh accuracy (the `memorization` "
                "probe). Train any task with `probes.extra=memorization` (with `task.random_labels=true` "
                "there is nothing to learn but the training set). Its exact match over training is shown instead.")
    with support.errors_shown():
        support.figure_view(run_figures.run_memorization(run), "memorization_curve",
                            support.download_name(run.run_id, "memorization"))

st.subheader("Capacity")
CAPACITY = st.selectbox("Capacity against", list(CAPACITY_RECIPES), format_func=CAPACITY_RECIPES.get,
                        key="memorization_capacity_recipe")
result = load_result(CAPACITY) or load_result(CAPACITY, fast=True)
if result is None:
    st.info(f"No capacity result yet: run the `{CAPACITY}` experiment on the **Experiments** page or with "
            f"`workbench experiment run {CAPACITY}`.")
else:
    with support.errors_shown():
        support.figure_view(result.figure(), "memorization_capacity", support.download_name(CAPACITY))
    st.dataframe(result.table, hide_index=True, key="memorization_capacity_table")
