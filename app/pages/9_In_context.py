"""In-context learning: a finished run of an in-context function task (linear or sparse regression,
random ReLU networks or decision trees, Boolean functions) against the number of in-context examples,
beside the closed-form baselines (or the Boolean learners) on the same fresh sequences; a looped model
at another number of loops. The same calls as `workbench export RUN --figure icl-curve` and notebook 09
(workbench.icl.views)."""
import streamlit as st

from workbench import app_support as support
from workbench.icl import views
from workbench.icl.shifts import SHIFTS
from workbench.store import COMPLETED

st.set_page_config(page_title="In-context learning · workbench", layout="wide")
st.title("In-context learning")
table = support.runs_table()
icl = views.icl_runs(table)
finished = icl[icl.status == COMPLETED] if not icl.empty else icl
if finished.empty:
    st.info("No finished run of an in-context function task (" + ", ".join(views.ICL_TASKS) + ") yet. Train one "
            f"on the **Train** page or with {views.TRAIN_HINT}; notebook 09 walks through one.")
    st.stop()
st.caption("Each query of a sequence is predicted from the (x, y) examples before it, so one batch of fresh "
           "sequences gives the whole curve: the error after 0, 1, 2, ... examples. The baselines read the "
           "very same examples.")

run = support.pick_run(finished, key="icl_run")
if run is None:
    st.stop()
config = run.config()


@st.cache_data(show_spinner=False, max_entries=32)
def error_table(run_id: str, n: int, baselines: tuple, loops, shift):
    return views.run_error_table(run_id, n=n, baselines=list(baselines), loops=loops, shift=shift)


controls, figure = st.columns([1, 3])
with controls:
    boolean = config.task.name in views.BOOLEAN_TASKS
    st.markdown("**learners**" if boolean else "**baselines**")
    chosen = [name for name in views.baseline_names(run)
              if st.checkbox(name, value=True, key=f"icl_baseline_{run.run_id}_{name}")]
    n = int(st.number_input("fresh sequences", min_value=16, max_value=4096, value=views.SEQUENCES, step=64,
                            key="icl_sequences", help="the curve is a mean over this many sequences"))
    shift = None
    if config.task.name in views.REGRESSION_TASKS:
        prompts = st.selectbox("prompts", ["as in training", *SHIFTS], key=f"icl_shift_{run.run_id}",
                               help="read the run (and the baselines) on prompts off its training distribution, "
                                    "as Garg et al. do (workbench.icl.shifts)")
        shift = None if prompts == "as in training" else prompts
    loops = None
    if config.model.looped:
        trained = config.model.n_layers
        loops = st.slider("loops at test time", min_value=1, max_value=max(4 * trained, 8), value=trained,
                          key=f"icl_loops_{run.run_id}",
                          help=f"a looped model applies one block again and again; it trained with {trained}")
with figure, support.errors_shown():
    with st.spinner("evaluating the model and the baselines..."):
        curves = error_table(run.run_id, n, tuple(chosen), loops, shift)
    support.figure_view(views.curve_figure(curves, task_name=config.task.name), "icl_curve",
                        support.download_name(run.run_id, "icl-curve", f"loops-{loops}" if loops else "",
                                              shift or ""))
    st.caption("Accuracy of each query's label, the run's solid, the learners' grey." if boolean else
               views.error_caption(config.task.name))
    if shift:
        st.caption(views.shift_caption(config, shift))
    with st.expander("the curves as a table"):
        st.dataframe(curves, hide_index=True, key="icl_table")
    flag = f' --shift "{shift}"' if shift else ""
    st.caption(f"The same figure from the command line: `workbench export {run.run_id} --figure icl-curve{flag}`.")
