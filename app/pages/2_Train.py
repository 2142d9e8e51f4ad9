"""Train: a form built from the registries, validated like the command line; training runs in a
background process with a live progress bar, loss curve and a cancel button."""
import streamlit as st

from workbench import app_support as support
from workbench import background
from workbench.errors import ConfigError
from workbench.figures.builders import metric_over_steps
from workbench.forms import SECTION_TITLES, config_from_form, overrides_text, section_fields, task_fields
from workbench.tasks import TASKS

st.set_page_config(page_title="Train · workbench", layout="wide")
st.title("Train")
POLL_SECONDS = 1.0


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
    if len(loss):
        st.plotly_chart(metric_over_steps(loss, "training loss", log_y=True), key=f"train_loss_{job.name}")
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


all_jobs = background.jobs("train")
if any(job.alive for job in all_jobs):
    st.subheader("Training now")
    live_jobs()
announced = st.session_state.setdefault("train_announced", [])
for job in [job for job in all_jobs if not job.alive]:
    if job.name not in announced and background.job_outcome(job) == "completed":  # select it everywhere
        support.set_selection([job.name])
        announced.append(job.name)
    show_finished(job)

# --- the form -------------------------------------------------------------------------------------
st.subheader("New run")
task_name = st.selectbox("task", TASKS.names(), key="train_task")
st.caption(TASKS.get(task_name).description)
if st.session_state.get("train_command"):
    st.caption("The same run from the command line:")
    st.code(st.session_state["train_command"], language="bash", wrap_lines=True)
values = {}
with st.form("train_form"):
    for section in ("task", "model", "train", "probes"):
        fields = task_fields(task_name) if section == "task" else section_fields(section)
        with st.expander(SECTION_TITLES[section], expanded=section in ("task", "model", "train")):
            values.update(support.form_section(fields, key_prefix=f"train_{task_name}_"))
    label = st.text_input("label (optional)", key="train_label")
    submitted = st.form_submit_button("Train", type="primary")

if submitted:
    try:
        config = config_from_form(task_name, values)
    except ConfigError as error:
        st.error(str(error))  # the command line's message, word for word
    else:
        try:
            background.start_training(config, label)
            st.session_state["train_command"] = overrides_text(config, task_name)
            st.rerun()
        except ConfigError as error:
            st.warning(str(error))
