"""Runs: the store as a filterable, sortable table; choose runs to compare; delete a run."""
import streamlit as st

from workbench import app_support as support
from workbench.background import jobs
from workbench.figures import runs as run_figures
from workbench.reports import final_values
from workbench.store import delete_run

st.set_page_config(page_title="Runs · workbench", layout="wide")
st.title("Runs")
table = support.runs_table(columns=None)
if support.store_is_empty(table):
    st.stop()

# --- filter and sort ------------------------------------------------------------------------------
search, status, task, mixer, pos = st.columns([2, 1, 1, 1, 1])
text = search.text_input("search id, label or task", key="runs_search")
statuses = status.multiselect("status", sorted(table.status.unique()), key="runs_status")
tasks = task.multiselect("task", sorted(table.task.unique()), key="runs_task")
mixers = mixer.multiselect("mixer", sorted(table.mixer.unique()), key="runs_mixer")
positions = pos.multiselect("encoding", sorted(table.pos.unique()), key="runs_pos")
sort_column, order = st.columns([1, 1])
sort_by = sort_column.selectbox("sort by", support.SORTABLE, key="runs_sort")
descending = order.toggle("descending", value=sort_by == "created", key="runs_descending")
shown = support.filter_runs(table, text, statuses, tasks, mixers, positions, sort_by, not descending)
st.dataframe(shown[support.TABLE_COLUMNS], hide_index=True, width="stretch", key="runs_table",
             column_config={"exact_match": support.exact_match_column()})
st.caption(f"{len(shown)} of {len(table)} runs. Click a column header to sort the table in place.")

# --- compare --------------------------------------------------------------------------------------
runs = support.pick_runs(table, key="runs_compare", label="compare runs (the other pages start on these)", default=[])
if runs:
    st.dataframe([{"run_id": run.run_id, "name": name, **final_values(run.metrics())}
                  for run, name in zip(runs, run_figures.run_names(runs))], hide_index=True, key="runs_final",
                 column_config={"exact_match": support.exact_match_column()})
    left, right = st.columns(2)
    stem = support.download_name("compare", *[run.run_id for run in runs])
    with left:
        st.subheader("Loss")
        with support.errors_shown():
            support.figure_view(run_figures.runs_metric(runs, "loss"), "runs_loss", stem + "-loss")
    with right:
        st.subheader("Length generalization")
        with_curves = [run for run in runs if run_figures.has_length_curve(run)]
        if with_curves:
            support.figure_view(run_figures.runs_length_curve(with_curves), "runs_length", stem + "-length")
        else:
            st.info("None of these runs has a length curve; train with `task.eval_lengths=...`.")

# --- delete ---------------------------------------------------------------------------------------
st.subheader("Delete a run")
training = {job.name for job in jobs("train") if job.alive}
deletable = [row.run_id for row in table.itertuples() if not row.demo and row.run_id not in training]
if not deletable:
    st.caption("Only your own finished runs can be deleted; the shipped demo runs are read-only.")
else:
    victim = st.selectbox("run to delete", deletable, key="runs_delete_choice")
    if st.button("Delete…", key="runs_delete"):
        st.session_state["runs_confirm_delete"] = victim
    pending = st.session_state.get("runs_confirm_delete")
    if pending:
        st.warning(f"Delete run {pending} and all its files? This cannot be undone.")
        yes, no = st.columns([1, 8])
        if yes.button("Yes, delete", key="runs_delete_yes", type="primary"):
            with support.errors_shown():
                delete_run(pending)
                support.set_selection([r for r in support.current_selection() if r != pending])
                st.session_state.pop("runs_confirm_delete")
                st.rerun()
        if no.button("Cancel", key="runs_delete_no"):
            st.session_state.pop("runs_confirm_delete")
            st.rerun()
