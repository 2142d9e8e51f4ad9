"""Length generalization: exact match vs test length for several runs (seeds as bands) or a whole
experiment, with the longest training length marked; attention entropy vs test length; a form
that evaluates a finished run at new lengths (what `workbench eval-length` does); and, for coupled
position ids, exact match by where the ids start (`workbench eval-length --offsets`); for attention, exact
match with the logits multiplied by a temperature factor after training (`workbench eval-length --temperature`)."""
import streamlit as st

from workbench import app_support as support
from workbench.explain import run_notes
from workbench.analysis import evaluate_lengths, evaluate_offsets, evaluate_temperatures
from workbench.figures import runs as run_figures
from workbench.figures.builders import offset_curves, temperature_curves
from workbench.probes.id_offset import default_offset, reads_coupled_ids
from workbench.store import COMPLETED
from workbench.tasks import task_for

st.set_page_config(page_title="Length generalization · workbench", layout="wide")
st.title("Length generalization")
table = support.runs_table()
results = support.experiment_results()
if table.empty and not results:
    support.store_is_empty(table)
    st.stop()
completed = table[table.status == COMPLETED]  # the runs with final weights: a diverged run keeps none


def show_runs(with_curves) -> None:
    """Exact match and attention entropy against test length, for runs that were evaluated at lengths."""
    if with_curves.empty:
        st.info("No run has a length curve yet. Evaluate a finished run above, train with "
                "`task.eval_lengths=5,10,20`, or run `workbench eval-length RUN --lengths 5,10,20`.")
        return
    runs = support.pick_runs(with_curves, key="length_runs", default=support.same_task_runs(with_curves))
    group = st.selectbox("one line per", run_figures.LABEL_KEYS, index=1, key="length_group",
                         help="runs that share a value (e.g. seeds of one encoding) form a median line with a band")
    if not runs:
        st.info("Choose one or more runs.")
        return
    for run, name in zip(runs, run_figures.run_names(runs)):
        for note in run_notes(run):
            st.warning(f"**{name}**: {note}")
    support.show_differences(runs, key="length_differences")
    try:
        fig = run_figures.runs_length_curve(runs, run_figures.run_labels(runs, group))
        support.figure_view(fig, "length_curve", support.download_name("length", *[r.run_id for r in runs]))
    except Exception as error:  # noqa: BLE001 - shown to the user, not swallowed
        support.show_error(error)

    st.subheader("Attention entropy by test length")
    with_entropy = [run for run in runs if run_figures.has_entropy_by_length(run)]
    if not with_entropy:
        st.caption("None of the chosen runs was evaluated with attention entropy: tick it in the form above "
                   "(or `workbench eval-length RUN --lengths 5,10,20 --entropy`).")
        return
    names = {support.run_label(row): row.run_id for row in with_curves.itertuples()
             if row.run_id in {run.run_id for run in with_entropy}}
    chosen = names[st.selectbox("run", list(names), key="length_entropy_run")]
    normalized = st.toggle("normalized by log(number of keys)", key="length_entropy_normalized",
                           help="1 is uniform attention over the keys a query sees; lengths compare on one scale")
    run = next(run for run in with_entropy if run.run_id == chosen)
    try:
        fig = run_figures.run_entropy_by_length(run, normalized)
        support.figure_view(fig, "length_entropy", support.download_name("entropy-length", run.run_id))
    except Exception as error:  # noqa: BLE001
        support.show_error(error)
    st.caption("Mean over query positions and heads, per layer, on fresh samples of each length. Entropy "
               "that keeps rising past the longest trained length means attention spreads over keys it never "
               "saw in training.")


def evaluate_form(expanded: bool) -> str | None:
    """Evaluate one finished run at the lengths typed in; the results are stored with the run, whose
    id is returned (None when nothing was stored)."""
    with st.expander("Evaluate a run at more test lengths", expanded=expanded):
        if completed.empty:
            st.info("No completed run to evaluate yet.")
            return None
        run = support.pick_run(completed, key="length_eval_run", selects=False)
        defaults = run.config().task.eval_lengths
        with st.form("length_eval_form"):
            lengths = st.text_input("test lengths (--lengths)", value=",".join(map(str, defaults)) or "5,10,20",
                                    key="length_eval_lengths", help="comma-separated, in the task's own length unit")
            left, middle, right = st.columns(3)
            n = left.number_input("samples per length (--n)", min_value=1, value=256, step=64, key="length_eval_n")
            entropy = middle.checkbox("attention entropy too (--entropy)", value=True, key="length_eval_entropy")
            entropy_n = right.number_input("samples per length for entropy (--entropy-n)", min_value=1, value=8,
                                           key="length_eval_entropy_n")
            if not st.form_submit_button("Evaluate"):
                return None
        result = support.evaluate_by_length(lambda progress: evaluate_lengths(
            run.run_id, lengths, int(n), int(entropy_n) if entropy else 0, progress=progress))
        if result is None:
            return None
        st.dataframe(support.length_result_table(result), hide_index=True, key="length_eval_result",
                     column_config={"exact_match": support.percent_column("exact match at this length")})
        if run.read_only:
            st.info("This is a shipped demo run, which is read-only: the results above are not stored.")
            return None
        st.success(f"Stored with run {run.run_id}; its curves are drawn below.")
        return run.run_id


def offsets_form() -> None:
    """Evaluate one finished coupled-id run with its ids starting at several offsets (not stored)."""
    coupled = completed[[reads_coupled_ids(task, pos) for task, pos in zip(completed.task, completed.pos)]]
    if coupled.empty:  # the sweep only means something for models that read coupled ids
        return
    st.subheader("Coupled position ids: which ones did a run learn?")
    with st.expander("Exact match by where the coupled position ids start"):
        st.caption("Training starts each sample's coupled ids at a random offset, so that every id is trained; "
                   "evaluation starts them at the smallest one, as the papers' code does, where the operators "
                   "carry an id no digit ever does. A run that fails only there learned its ids as a table, "
                   "not the task. The same samples are read at every offset; `random` draws each sample's start as "
                   "training does, the evaluation fair to what the run saw. Nothing is stored.")
        run = support.pick_run(coupled, key="length_offset_run", selects=False)
        with st.form("length_offset_form"):
            left, middle, right = st.columns(3)
            lengths = left.text_input("test lengths (--lengths)", value=",".join(map(str, run.config().task.eval_lengths))
                                      or "5,10,20", key="length_offset_lengths")
            offsets = middle.text_input("first ids (--offsets)", value="1,2,3,10,20,random", key="length_offset_offsets",
                                        help="comma-separated; the smallest allowed is the task's own start (1, or 0 "
                                             "for copy and reverse); random: each sample's start drawn as in "
                                             "training (dotted level)")
            n = right.number_input("samples (--n)", min_value=1, value=256, step=64, key="length_offset_n")
            if not st.form_submit_button("Evaluate by offset"):
                return
        curves = support.evaluate_by_length(lambda progress: evaluate_offsets(run.run_id, lengths, offsets, int(n),
                                                                               progress=progress))
        if curves is None:
            return
        st.dataframe(support.offset_result_table(curves), hide_index=True, key="length_offset_result")
        fig = offset_curves(curves, default_offset(run.config()))
        support.figure_view(fig, "length_offset_curve", support.download_name("offsets", run.run_id))


def temperatures_form() -> None:
    """Evaluate one finished attention run with its attention logits multiplied after training (not stored)."""
    attention = completed[completed.mixer.str.contains("attention")]
    if attention.empty:
        return
    st.subheader("Attention temperature after training")
    with st.expander("Exact match with every head's logits multiplied by a factor"):
        st.caption("Attention spreads over more keys as inputs grow past the training length. A factor above 1 "
                   "sharpens it again, the weights as trained (a softmax temperature of 1 / factor). A number is "
                   "that factor for every head; `uniform` picks the best factor of a grid by the loss on other "
                   "samples of each length (Wang et al. 2024, arXiv 2404.12224); `aligned` the one that brings the "
                   "answer's attention entropy back to the longest trained length's, `maxprob` its largest attention "
                   "weight (both after Chi et al. 2023, arXiv 2311.00684); `head` trains a factor per head at the "
                   "longest length with the weights frozen "
                   "(Wang et al.'s HeadScale: 200 steps, a minute or more). Nothing is stored.")
        run = support.pick_run(attention, key="length_temperature_run", selects=False)
        with st.form("length_temperature_form"):
            left, middle, right = st.columns(3)
            defaults = ",".join(map(str, run.config().task.eval_lengths)) or "5,10,20"
            lengths = left.text_input("test lengths (--lengths)", value=defaults, key="length_temperature_lengths")
            temperatures = middle.text_input("factors (--temperature)", value="1,1.5,uniform,aligned",
                                             key="length_temperature_factors",
                                             help="comma-separated: numbers > 0, uniform, aligned, maxprob, head")
            n = right.number_input("samples (--n)", min_value=1, value=256, step=64, key="length_temperature_n")
            if not st.form_submit_button("Evaluate with temperatures"):
                return
        curves = support.evaluate_by_length(lambda progress: evaluate_temperatures(
            run.run_id, lengths, temperatures, int(n), progress=progress))
        if curves is None:
            return
        readings = list(next(iter(curves.values())))
        st.dataframe(support.temperature_result_table(curves), hide_index=True, key="length_temperature_result",
                     column_config={reading: support.percent_column(f"exact match with {reading}", reading)
                                    for reading in readings})
        fig = temperature_curves(curves, task_for(run.config().task).train_lengths()[1])
        support.figure_view(fig, "length_temperature_curve", support.download_name("temperature", run.run_id))


source = st.radio("show", ["runs", "an experiment"], horizontal=True, key="length_source")
if source == "runs":
    has_curve = [run_figures.has_length_curve(support.open_run(r)) for r in table.run_id]
    evaluated = evaluate_form(expanded=not any(has_curve))
    if evaluated:  # recomputed: the run may have had no curve before
        has_curve = [run_figures.has_length_curve(support.open_run(r)) for r in table.run_id]
        support.add_to_selection([evaluated])
    show_runs(table[has_curve])
    offsets_form()
    temperatures_form()
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
