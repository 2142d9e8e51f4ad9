"""workbench dashboard, home page: the run store, and for a chosen run its attention map and
length-generalization curve. Thin: every number and figure comes from `workbench`."""
import streamlit as st

from workbench.app_support import errors_shown, exact_match_column, pick_run, runs_table, store_line
from workbench.demo import demo_guide
from workbench.explain import run_notes
from workbench.figures import runs as run_figures

st.set_page_config(page_title="workbench", layout="wide")
HOME_COLUMNS = ["run_id", "label", "task", "mixer", "pos", "seed", "step", "loss", "exact_match", "demo"]  # fits the page
st.title("workbench")
st.caption("Train small sequence models on synthetic tasks and see inside them.")
st.caption(store_line() + " The command line and the notebooks read and write the same one.")

table = runs_table()
if not table.empty:  # the best run first, so the page opens on something worth looking at
    table = table.sort_values(["exact_match", "run_id"], ascending=[False, True], na_position="last")
if table.empty:
    st.info("The run store is empty. Train a run from the command line "
            "(`workbench train task.name=addition model.pos=coupling`) or rebuild the demo runs "
            "with `workbench demo build`.")
    st.stop()

guide = demo_guide()
if guide:
    st.subheader("Start here")
    st.caption("Each shipped demo run shows one phenomenon. Open it on the page that shows it:")
    for item in guide:
        link, what = st.columns([2, 3])
        with link:
            st.page_link(item["page_file"], label=item["demo"], query_params=item["selection"])
        what.caption(f"**{item['page']}**: {item['look_for']}")

st.subheader("Runs")
st.dataframe(table[HOME_COLUMNS], hide_index=True, width="stretch", column_config={"exact_match": exact_match_column(), "label": st.column_config.TextColumn(width="medium")})
st.caption("Every column, filters and comparisons: the **Runs** page.")

run = pick_run(table, key="home_run")
if run is None:
    st.stop()
for note in run_notes(run):
    st.warning(note)

left, right = st.columns(2)
with left:
    st.subheader("Attention")
    with errors_shown():
        patterns, tokens, step = run_figures.snapshot_patterns(run)
        layer = st.selectbox("layer", sorted(patterns), key="home_layer")
        head = st.selectbox("head", list(range(patterns[layer].shape[0])), key="home_head")
        st.plotly_chart(run_figures.run_attention(run, layer, head), key="home_attention")
        st.caption(f"probe example at step {step}: {''.join(tokens)}")
with right:
    st.subheader("Length generalization")
    if not run_figures.has_length_curve(run):
        st.info("This run was not evaluated at test lengths. Evaluate it on the **Length generalization** "
                f"page, or with `workbench eval-length {run.run_id} --lengths 5,10,20`.")
    else:
        with errors_shown():
            st.plotly_chart(run_figures.runs_length_curve([run]), key="home_length")
