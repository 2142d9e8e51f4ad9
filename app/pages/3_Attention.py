"""Attention: a grid of maps (layer x head) at any snapshot step, or of the final model on a fresh
sample of any test length with its answer; one map enlarged with tokens on both axes; two runs side
by side. SSM, linear-attention and RNN maps show the same way."""
import streamlit as st

from workbench import app_support as support
from workbench.analysis import run_sample_attention
from workbench.compare import nearest_step, shared_steps
from workbench.figures import runs as run_figures
from workbench.figures.builders import attention_grid, attention_map
from workbench.probes.id_offset import default_offset, sweepable
from workbench.probes.sample_attention import MAX_SAMPLE_INDEX

st.set_page_config(page_title="Attention · workbench", layout="wide")
st.title("Attention")
table = support.runs_table()
if support.store_is_empty(table):
    st.stop()

SNAPSHOTS, FRESH = "training snapshots", "a fresh sample"


def maps(patterns: dict, tokens: list[str], side: str, stem: str) -> None:
    """The grid of every layer and head, then one map enlarged."""
    support.figure_view(attention_grid(patterns, tokens), f"attention_grid_{side}", stem + "-grid")
    layer_column, head_column = st.columns(2)
    layer = layer_column.selectbox("enlarge layer", sorted(patterns), key=f"attention_layer_{side}")
    head = head_column.selectbox("head", list(range(patterns[layer].shape[0])), key=f"attention_head_{side}")
    support.figure_view(attention_map(patterns[layer][head], tokens), f"attention_map_{side}",
                        stem + f"-L{layer}H{head}")


def snapshot_maps(run, side: str, shared_step: int | None = None) -> None:
    """The maps at a snapshot step: the step chosen here, or, side by side at one step, the run's
    latest snapshot at or before `shared_step`."""
    steps = run.snapshot_steps()
    if not steps:
        st.info(f"Run {run.run_id} stored no attention snapshots; train with `probes.snapshots=true` "
                "and `probes.every` > 0, or look at a fresh sample.")
        return
    if shared_step is not None:
        step = nearest_step(steps, shared_step)
    else:
        step = steps[0] if len(steps) == 1 else st.select_slider(
            "training step", steps, value=steps[-1], key=f"attention_step_{side}_{run.run_id}")
    patterns, tokens, step = run_figures.snapshot_patterns(run, step)
    if not patterns:
        st.info("This snapshot holds no maps.")
        return
    mixers = run.config().model.layer_mixers()
    st.caption(f"mixers: {', '.join(mixers)} · probe example at step {step}: {' '.join(tokens)}")
    maps(patterns, tokens, side, support.download_name(run.run_id, "step", step))


def fresh_sample_maps(run, side: str) -> None:
    config = run.config()
    trained = run_figures.train_length(config)
    coupled = sweepable(config)
    columns = st.columns(3 if coupled else 2)
    length = columns[0].number_input("test length", min_value=1, value=trained or 1,
                                     key=f"attention_length_{side}_{run.run_id}",
                                     help=f"in the task's own unit; the longest length in training was {trained}")
    example = columns[1].number_input("sample", min_value=0, max_value=MAX_SAMPLE_INDEX - 1, value=0,
                                      key=f"attention_example_{side}_{run.run_id}",
                                      help="which sample of the fixed evaluation stream at this length")
    offset = None
    if coupled:  # the same sample with its coupled ids starting elsewhere (`eval-length --offsets`)
        first = default_offset(config)
        offset = int(columns[2].number_input("first coupled id", min_value=first, value=first,
                                             key=f"attention_offset_{side}_{run.run_id}",
                                             help=f"evaluation starts the ids at {first}; training starts each "
                                                  "sample at a random id"))
    sample = run_sample_attention(run, int(length), int(example), offset)
    beyond = f", {int(length) / trained:.1f}x the longest trained" if trained and length > trained else ""
    st.caption(f"final model · fresh sample {example} of length {length}{beyond}: {' '.join(sample.tokens)}")
    if coupled and sample.ids:
        st.caption(f"coupled position ids: {' '.join(map(str, sample.ids))}")
    verdict = ":green[right]" if sample.correct else ":red[wrong]"
    st.markdown(f"answer `{sample.answer}` · target `{sample.target}` · {verdict}")
    if not sample.patterns:
        st.info("This model has no attention-like maps to show.")
        return
    if len(sample.tokens) > support.MAX_MAP_TOKENS:
        st.info(f"{len(sample.tokens)} tokens is more than a browser draws well as maps "
                f"({support.MAX_MAP_TOKENS}); export them instead: `workbench export {run.run_id} "
                f"--figure attention-grid --length {length} --example {example}"
                + (f" --offset {offset}" if coupled else "") + " --out maps.pdf`.")
        return
    maps(sample.patterns, sample.tokens, side,
         support.download_name(run.run_id, "length", length, "sample", example, f"offset{offset}" if offset is not None else ""))


def pick_panel(side: str, prefer: int):
    """(run, source) of one side."""
    run = support.pick_run(table, key=f"attention_run_{side}", prefer=prefer)
    source = st.radio("maps from", [SNAPSHOTS, FRESH], horizontal=True, key=f"attention_source_{side}",
                      help="snapshots: the fixed probe examples during training; a fresh sample: the final "
                           "model on an unseen input of any length, with its answer")
    return run, source


def show_panel(run, source: str, side: str, shared_step: int | None = None) -> None:
    if source == FRESH:
        fresh_sample_maps(run, side)
    else:
        snapshot_maps(run, side, shared_step)


def side_by_side() -> None:
    """Two runs, each picked in its column; their snapshots at one shared step unless unticked."""
    columns = st.columns(2)
    picked = []
    for column, side, prefer in zip(columns, ("left", "right"), (0, 1)):
        with column:
            picked.append(pick_panel(side, prefer))
    runs = [run for run, _ in picked]
    shared_step = None
    if all(source == SNAPSHOTS for _, source in picked):
        steps = shared_steps([run.snapshot_steps() for run in runs])
        if len(steps) > 1 and st.checkbox("both at the same training step", value=True, key="attention_same_step",
                                          help="each run shows its latest snapshot at or before this step"):
            shared_step = st.select_slider("training step (both runs)", steps, value=steps[-1],
                                           key="attention_step_shared")
    support.show_differences(runs, key="attention_differences")
    for column, (run, source), side in zip(st.columns(2), picked, ("left", "right")):
        with column:
            st.markdown(f"**{run_figures.run_names(runs)[0 if side == 'left' else 1]}**")
            show_panel(run, source, side, shared_step)


def leave_comparison() -> None:
    if not st.session_state["attention_compare"]:  # one run shown: the link names one run
        support.keep_first_selected()


compare = st.toggle("two runs side by side", key="attention_compare", on_change=leave_comparison,
                    value=len(support.selected_run_ids(table)) > 1)
try:
    if compare and len(table) > 1:
        side_by_side()
    else:
        show_panel(*pick_panel("left", prefer=0), "left")
except Exception as error:  # noqa: BLE001 - shown to the user, not swallowed
    support.show_error(error)
