"""Length generalization: exact match vs test length for several runs (seeds as bands) or a whole
experiment, with the longest training length marked."""
import streamlit as st

from workbench import app_support as support
from workbench.figures import runs as run_figures

st.set_page_config(page_title="Length generalization · workbench", layout="wide")
st.title("Length generalization")
table = support.runs_table()
results = support.experiment_results()
if table.empty and not results:
    support.store_is_empty(table)
    st.stop()

source = st.radio("show", ["runs", "an experiment"], horizontal=True, key="length_source")
if source == "runs":
    with_curves = table[[run_figures.has_length_curve(support.open_run(r)) for r in table.run_id]]
    if with_curves.empty:
        st.info("No run has a length curve yet. Train with `task.eval_lengths=5,10,20` or evaluate a finished "
                "run with `workbench eval-length RUN --lengths 5,10,20`.")
        st.stop()
    selected = support.selected_run_ids(with_curves)
    runs = support.pick_runs(with_curves, key="length_runs", default=selected or list(with_curves.run_id[:3]))
    group = st.selectbox("one line per", run_figures.LABEL_KEYS, index=1, key="length_group",
                         help="runs that share a value (e.g. seeds of one encoding) form a median line with a band")
    if not runs:
        st.info("Choose one or more runs.")
        st.stop()
    try:
        fig = run_figures.runs_length_curve(runs, run_figures.run_labels(runs, group))
        support.figure_view(fig, "length_curve", support.download_name("length", *[r.run_id for r in runs]))
    except Exception as error:  # noqa: BLE001 - shown to the user, not swallowed
        support.show_error(error)
else:
    if not results:
        st.info("No experiment has a cached result yet. Run one on the **Experiments** page or with "
                "`workbench experiment run lengthgen-addition --fast`.")
        st.stop()
    name = st.selectbox("experiment", list(results), key="length_experiment")
    result = results[name]
    try:
        support.figure_view(result.figure(), "length_experiment_figure", support.download_name(name))
    except Exception as error:  # noqa: BLE001
        support.show_error(error)
    st.dataframe(result.table, hide_index=True, key="length_experiment_table")
