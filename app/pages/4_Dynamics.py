"""Dynamics: every probe a run recorded over training (entropy per head, sparsity per layer,
spectral norms, outliers, loss...), with divergence and entropy collapse marked; below them, the
distribution of per-neuron MLP activity behind the mean density, at chosen steps."""
import streamlit as st

from workbench import app_support as support
from workbench.events import COLLAPSE_FRACTION, training_events
from workbench.explain import exact_match_meaning, run_notes
from workbench.figures import runs as run_figures
from workbench.probes.id_offset import default_offset, sweepable
from workbench.reports import neuron_activity_steps

st.set_page_config(page_title="Dynamics · workbench", layout="wide")
st.title("Training dynamics")
table = support.runs_table()
if support.store_is_empty(table):
    st.stop()



def compare_runs() -> None:
    """Each probe of the chosen runs over steps, one line per run (heads and layers averaged)."""
    runs = support.pick_runs(table, key="dynamics_runs")
    if len(runs) < 2:
        st.info("Choose two or more runs to overlay.")
        return
    support.show_differences(runs, key="dynamics_differences")
    recorded = list(dict.fromkeys(probe for run in runs for probe in run_figures.recorded_probes(run)))
    chosen = st.multiselect("views", recorded, default=[p for p in recorded if p in ("loss", "exact_match", "entropy")],
                            key="dynamics_compare_probes")
    labels = run_figures.run_names(runs)
    columns = st.columns(2)
    for i, probe in enumerate(chosen):
        with columns[i % 2]:
            st.subheader(run_figures.PROBE_TITLES.get(probe, probe.replace("_", " ")))
            try:
                support.figure_view(run_figures.runs_metric(runs, probe, labels), f"dynamics_compare_{probe}",
                                    support.download_name("dynamics", probe, *[r.run_id for r in runs]))
            except Exception as error:  # noqa: BLE001 - shown to the user, not swallowed
                support.show_error(error)


def leave_comparison() -> None:
    if not st.session_state["dynamics_compare"]:  # one run shown: the link names one run
        support.keep_first_selected()


if st.toggle("compare runs", key="dynamics_compare", on_change=leave_comparison,
             value=len(support.selected_run_ids(table)) > 1, help="overlay the selected runs, one line each"):
    compare_runs()
    st.stop()
run = support.pick_run(table, key="dynamics_run")
config = run.config()
events = training_events(run)
if "diverged" in events:
    st.error(f"This run diverged at step {events['diverged']} (the loss became NaN or infinite).")
if "entropy collapse" in events:
    st.warning(f"Attention entropy collapsed at step {events['entropy collapse']}: its mean fell below "
               f"{COLLAPSE_FRACTION:.0%} of its starting value.")
for note in run_notes(run):  # after the events: a divergence is the bigger news
    st.warning(note)
probes = run_figures.recorded_probes(run)
if not probes:
    st.info(f"Run {run.run_id} has recorded nothing yet; its metrics appear at its first evaluation or probe step.")
    st.stop()
chosen = st.multiselect("views", probes, default=[p for p in probes if p not in ("lr",)], key="dynamics_probes")
columns = st.columns(2)
for i, probe in enumerate(chosen):
    with columns[i % 2]:
        st.subheader(run_figures.PROBE_TITLES.get(probe, probe.replace("_", " ")))
        try:
            support.figure_view(run_figures.run_metric(run, probe, events=events), f"dynamics_{probe}",
                                support.download_name(run.run_id, probe))
        except Exception as error:  # noqa: BLE001
            support.show_error(error)
        if probe == "exact_match":
            st.caption(exact_match_meaning(config))
        if probe == "exact_match" and sweepable(config):
            st.caption(f"Measured with the coupled position ids starting at {default_offset(config)}, as the "
                       "paper's code does. Far below what the training loss suggests? The run may not have learned "
                       "the smallest ids, the rarest in training: the Length generalization page reads it with the "
                       "ids starting elsewhere.")

activity_steps = neuron_activity_steps(run)
if activity_steps:
    st.subheader("per-neuron MLP activity")
    st.caption("Each neuron's share of tokens it fires on, most active first, per layer. The area under a line "
               "is the layer's fraction of nonzero activations, so a layer growing sparser shows as its lines "
               "sinking.")
    steps = st.multiselect("steps", activity_steps, default=run_figures.spread_steps(activity_steps),
                           key=f"dynamics_activity_steps_{run.run_id}")  # steps differ per run
    if steps:
        support.figure_view(run_figures.run_neuron_activity(run, sorted(steps)), "dynamics_neuron_activity",
                            support.download_name(run.run_id, "neuron-activity"))
