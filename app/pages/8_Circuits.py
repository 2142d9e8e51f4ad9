"""Circuits: why a run answers as it does. Pick a run and a snapshot; activation patching shows which
(layer, position) carries the answer, the head detectors score every head or channel (and how the
scores grew over training), the logit lens reads the answer out of each layer. The same calls as
`workbench patch / heads / lens` (workbench.circuits.views)."""
import streamlit as st

from workbench import app_support as support
from workbench.circuits import views
from workbench.circuits.pairs import PAIR_RECIPES
from workbench.figures import circuits as figures

st.set_page_config(page_title="Circuits · workbench", layout="wide")
st.title("Circuits")
table = support.runs_table()
if support.store_is_empty(table):
    st.stop()
st.caption("Patching and the logit lens need clean/corrupted prompt pairs, which these tasks make: "
           + ", ".join(PAIR_RECIPES) + ". Head detectors work on any run.")

run = support.pick_run(table, key="circuits_run")
if run is None:
    st.stop()
steps = run.weight_steps()
FINAL = "final model"
step_choice = st.select_slider("model", [*steps, FINAL], value=FINAL, key=f"circuits_step_{run.run_id}",
                               help="training steps whose weights the run saved (train with probes.weights=true)")
step = None if step_choice == FINAL else int(step_choice)
if not steps:
    st.caption("This run saved no weights at its snapshots, so only the final model can be opened; "
               "train with `probes.weights=true` to open earlier steps.")
stem = support.download_name(run.run_id, "step", step_choice)
task = run.config().task.name


@st.cache_data(show_spinner=False, max_entries=16)
def patching(run_id: str, step, n: int, every_channel: bool):
    from workbench.store import open_run

    view = views.run_patching(open_run(run_id), step, n, unit_groups=None if every_channel else 8)
    return view.sweep, view.clean_tokens, view.corrupted_tokens, view.answer, view.wrong


@st.cache_data(show_spinner=False, max_entries=16)
def heads(run_id: str, step):
    from workbench.store import open_run

    return views.run_heads(open_run(run_id), step)


@st.cache_data(show_spinner=False, max_entries=16)
def lens(run_id: str, step, n: int):
    from workbench.store import open_run

    return views.run_lens(open_run(run_id), step, n)


patch_tab, heads_tab, lens_tab = st.tabs(["Activation patching", "Head detectors", "Logit lens"])

with patch_tab, support.errors_shown():
    if task not in PAIR_RECIPES:
        st.info(f"The task {task!r} has no clean/corrupted pairs; patching needs one of: {', '.join(PAIR_RECIPES)}.")
    else:
        left, right = st.columns(2)
        n = int(left.number_input("pairs", min_value=1, max_value=256, value=32, key="circuits_pairs"))
        every_channel = right.checkbox("every channel (Mamba, S4D, H3, Hyena, RNNs)", value=False, key="circuits_channels",
                                       help="by default channels are patched in 8 groups per layer")
        with st.spinner("patching every layer, position and component..."):
            sweep, clean, corrupted, answer, wrong = patching(run.run_id, step, n, every_channel)
        st.markdown(f"clean `{' '.join(clean)}` → **{answer}** · corrupted `{' '.join(corrupted)}` → **{wrong}**")
        st.caption("Each cell: the fraction of the clean answer's lead over the corrupted one that comes back when "
                   "that clean activation is copied into the corrupted run (1: it carries everything).")
        components = list(dict.fromkeys(sweep.component))
        component = st.radio("component", components, horizontal=True, key="circuits_component")
        support.figure_view(figures.patching_heatmap(sweep, component, clean), "circuits_patching",
                            stem + f"-patching-{component}")
        with st.expander("the sweep as a table"):
            st.dataframe(sweep, hide_index=True)

with heads_tab, support.errors_shown():
    with st.spinner("scoring every head and channel..."):
        scores = heads(run.run_id, step)
    st.caption("Scores in [0, 1]: the weight a unit's attention-like map puts where the behaviour looks "
               "(previous token, the earlier copy of the token, the token after it; answer_induction on the "
               "task's own prompts). Channels of Mamba, S4D and H3 are units; an LSTM or GRU has one map per layer.")
    support.figure_view(figures.unit_scores_heatmap(scores), "circuits_heads", stem + "-heads")
    history = views.heads_over_training(run)
    if history.empty:
        st.info("This run recorded no detector scores during training (train with `probes.extra=heads`).")
    else:
        recorded = list(dict.fromkeys(history.probe))
        first = recorded.index("answer_induction_score") if "answer_induction_score" in recorded else 0
        detector = st.selectbox("over training", recorded, index=first, key="circuits_detector")
        support.figure_view(figures.detector_scores_over_training(history, detector), "circuits_heads_training",
                            support.download_name(run.run_id, detector))

with lens_tab, support.errors_shown():
    if task not in PAIR_RECIPES:
        st.info(f"The task {task!r} has no clean/corrupted pairs to read an answer against.")
    else:
        with st.spinner("reading the residual stream..."):
            read, attribution = lens(run.run_id, step, 32)
        support.figure_view(figures.logit_lens_figure(read), "circuits_lens", stem + "-logit-lens")
        st.caption("Direct logit attribution: what each piece writes straight into the answer's lead "
                   "(the final norm's scale frozen from the full forward).")
        st.dataframe(attribution, hide_index=True)
