"""Attention: a grid of maps (layer x head) at any snapshot step; one map enlarged with tokens on
both axes; two runs side by side. SSM, linear-attention and RNN maps show the same way."""
import streamlit as st

from workbench import app_support as support
from workbench.figures import runs as run_figures

st.set_page_config(page_title="Attention · workbench", layout="wide")
st.title("Attention")
table = support.runs_table()
if support.store_is_empty(table):
    st.stop()


def attention_panel(side: str, prefer: int) -> None:
    run = support.pick_run(table, key=f"attention_run_{side}", prefer=prefer)
    steps = run.snapshot_steps()
    if not steps:
        st.info(f"Run {run.run_id} stored no attention snapshots; train with `probes.snapshots=true` "
                "and `probes.every` > 0.")
        return
    step = steps[0] if len(steps) == 1 else st.select_slider(
        "training step", steps, value=steps[-1], key=f"attention_step_{side}_{run.run_id}")
    patterns, tokens, step = run_figures.snapshot_patterns(run, step)
    if not patterns:
        st.info("This snapshot holds no maps.")
        return
    mixers = run.config().model.layer_mixers()
    st.caption(f"mixers: {', '.join(mixers)} · probe example at step {step}: {' '.join(tokens)}")
    stem = support.download_name(run.run_id, "step", step)
    support.figure_view(run_figures.run_attention_grid(run, step), f"attention_grid_{side}", stem + "-grid")
    layer_column, head_column = st.columns(2)
    layer = layer_column.selectbox("enlarge layer", sorted(patterns), key=f"attention_layer_{side}")
    head = head_column.selectbox("head", list(range(patterns[layer].shape[0])), key=f"attention_head_{side}")
    support.figure_view(run_figures.run_attention(run, layer, head, step), f"attention_map_{side}",
                        stem + f"-L{layer}H{head}")


compare = st.toggle("two runs side by side", key="attention_compare",
                    value=len(support.selected_run_ids(table)) > 1)
try:
    if compare and len(table) > 1:
        left, right = st.columns(2)
        with left:
            attention_panel("left", prefer=0)
        with right:
            attention_panel("right", prefer=1)
    else:
        attention_panel("left", prefer=0)
except Exception as error:  # noqa: BLE001 - shown to the user, not swallowed
    support.show_error(error)
