"""Train: start from a preset or from scratch; a form built from the registries that shows the settings
that apply to the chosen task and mixer, validated like the command line; training runs in a
background process with a live progress bar, loss curve and a cancel button."""
import streamlit as st

from workbench import app_support as support
from workbench import background
from workbench import live as live_figures
from workbench.config import ModelConfig
from workbench.errors import ConfigError
from workbench.figures.builders import metric_over_steps
from workbench.forms import SECTION_TITLES, config_from_form, form_fields, mixer_choices, overrides_text
from workbench.presets import PRESETS, preset_runs, run_labels
from workbench.tasks import TASKS
from workbench.typed import describe

st.set_page_config(page_title="Train · workbench", layout="wide")
st.title("Train")
POLL_SECONDS = live_figures.REFRESH_SECONDS  # the live view's redraw, and the progress bar's
OWN = "your own settings"
MIXER_HELP = next(row["help"] for row in describe(ModelConfig) if row["name"] == "mixer")


# --- running and finished jobs --------------------------------------------------------------------
def show_live(job) -> None:
    progress = background.run_progress(job.name)
    polled = st.session_state.setdefault(f"train_polled_{job.name}", [])
    if progress["last_loss"] is not None:
        polled.append((progress["step"], progress["last_loss"]))
    st.markdown(f"**{job.name}** · {progress['state']}")
    st.progress(progress["fraction"], text=f"step {progress['step']} of {progress['steps'] or '?'}"
                + (f" · loss {progress['last_loss']:.4f}" if progress["last_loss"] is not None else ""))
    loss = background.live_loss(job.name, polled)
    live = live_figures.live_view(job.name)  # what the trainer has written to the store so far
    loss_column, exact_column = st.columns(2)
    if len(loss):
        loss_column.plotly_chart(metric_over_steps(loss, "training loss", log_y=True), key=f"train_loss_{job.name}")
    with exact_column.container(key=f"live_exact_match_{job.name}"):
        if len(live.exact_match):
            st.plotly_chart(live_figures.exact_match_figure(live), key=f"train_exact_{job.name}")
            st.caption(f"exact match on fresh samples at the training lengths, at each evaluation "
                       f"(latest: step {int(live.exact_match.step.iloc[-1])}); the curve over the evaluation "
                       "lengths follows when training ends")
        else:
            st.caption("exact match appears at the first evaluation (train.eval_every)")
    if live.snapshot_step is not None:
        with st.container(key=f"live_attention_{job.name}"):
            try:
                grid, tokens = live_figures.snapshot_figure(job.name, live.snapshot_step)
            except Exception as error:  # noqa: BLE001 - one unreadable snapshot must not stop the live view
                support.show_error(error)
            else:
                if grid is not None:
                    st.caption(f"latest attention snapshot: step {live.snapshot_step}, probe example {' '.join(tokens)}")
                    st.plotly_chart(grid, key=f"train_attention_{job.name}")
    if st.button("Cancel", key=f"train_cancel_{job.name}", help="stop like Ctrl-C: the run stays resumable"):
        background.cancel(job)


@st.fragment(run_every=POLL_SECONDS)
def live_jobs() -> None:
    running = [job for job in background.jobs("train") if job.alive]
    for job in running:
        show_live(job)
    if not running:  # the last one finished: refresh the whole page, which stops this polling
        st.rerun(scope="app")


def show_finished(job) -> None:
    outcome = background.job_outcome(job)
    text = f"run **{job.name}**: {outcome}"
    if outcome == "completed":
        st.success(text + " — it is in the runs table and selected on every page.")
    elif outcome in ("interrupted", "diverged"):
        st.warning(text + (" — train the same config again to resume it." if outcome == "interrupted" else ""))
    else:
        st.error(text)
        st.code(job.log_tail() or "(no output)")
    if st.button("Clear", key=f"train_clear_{job.name}"):
        background.forget(job)
        st.rerun()


for line in st.session_state.pop("train_sent", []):  # what the last submission did, once
    st.info(line)
all_jobs = background.jobs("train")
if any(job.alive for job in all_jobs):
    st.subheader("Training now")
    live_jobs()
announced = st.session_state.setdefault("train_announced", [])
for job in [job for job in all_jobs if not job.alive]:
    if job.name not in announced and background.job_outcome(job) == "completed":
        if job.name not in support.current_selection():  # a pair sent together stays selected together
            support.set_selection([job.name])
        announced.append(job.name)
    show_finished(job)


# --- where to start -------------------------------------------------------------------------------
def apply_preset() -> None:
    title = st.session_state["train_preset"]
    if title != OWN:
        st.session_state.update(support.train_form_state(PRESETS[title].configs()[0], title))


def leave_preset() -> None:
    st.session_state["train_preset"] = OWN  # another task: the preset's pair no longer fits


st.subheader("New run")
preset_title = st.selectbox("start from", [OWN, *PRESETS], key="train_preset", on_change=apply_preset,
                            help="a preset fills in the form; change anything before training")
preset = PRESETS.get(preset_title)
if preset:
    st.caption(preset.description)
left, right = st.columns(2)
task_name = left.selectbox("task", TASKS.names(), key="train_task", on_change=leave_preset)
left.caption(TASKS.get(task_name).description)
st.session_state.setdefault("train_mixer", ModelConfig.mixer)  # in the session, never passed: see form_widget
mixer = right.selectbox("mixer", mixer_choices(), key="train_mixer", help=MIXER_HELP)
right.caption("The form shows the settings this mixer and task read.")
if st.session_state.get("train_command"):
    st.caption("The same run from the command line:")
    st.code(st.session_state["train_command"], language="bash", wrap_lines=True)

# --- the form -------------------------------------------------------------------------------------
values = {}
with st.form("train_form"):
    for section, fields in form_fields(task_name, mixer).items():
        with st.expander(SECTION_TITLES[section], expanded=section in ("task", "model", "train")):
            values.update(support.form_section(fields, key_prefix=f"train_{task_name}_"))
    label = st.text_input("label (optional)", key="train_label",
                          help="a name for the run in tables and legends" + (f"; empty: {preset.short!r}" if preset else ""))
    submitted = st.form_submit_button("Train both" if preset and len(preset.configs()) > 1 else "Train", type="primary")

if submitted:
    try:
        config = config_from_form(task_name, values, mixer)
        configs = list({c.run_id: c for c in (preset_runs(preset, config) if preset else [config])}.values())
    except ConfigError as error:
        st.error(str(error))  # the command line's message, word for word
    else:
        try:
            outcomes = background.train_or_reuse(configs, run_labels(configs, label or (preset.short if preset else "")))
        except ConfigError as error:
            st.warning(str(error))
        else:
            support.set_selection([run_id for run_id, _ in outcomes])
            st.session_state["train_sent"] = support.describe_outcomes(outcomes)
            st.session_state["train_command"] = "\n".join(overrides_text(c, task_name) for c in configs)
            st.rerun()
