"""Small helpers the Streamlit pages share (kept here so pages stay thin and logic stays testable).

The functions without a Streamlit import are plain data (filters, labels, choices); the others
draw one widget group the same way on every page (a run picker, a figure with its downloads).
"""
from __future__ import annotations

import contextlib

import re
import warnings

import pandas as pd

from .errors import ConfigError
from .selection import (SELECTED_RUNS, add_to_selection, current_selection, keep_first_selected, put_at,
                        selected_run_ids, set_selection)
from .store import data_root, data_root_origin, list_runs, open_run

TABLE_COLUMNS = ["run_id", "status", "task", "mixer", "pos", "layers", "d_model", "params", "seed", "step", "loss",
                 "exact_match", "demo", "label"]
SORTABLE = ["created", "run_id", "status", "task", "mixer", "pos", "loss", "exact_match", "step"]
MAX_MAP_TOKENS = 256  # longer inputs make T x T maps (per head) too heavy for a browser page
EMPTY_STORE = ("The run store is empty. Train a run on the **Train** page (or `workbench train "
               "task.name=addition model.pos=coupling` on the command line), or rebuild the demo runs "
               "with `workbench demo build`.")


# --- the run table (plain data) -------------------------------------------------------------------
def runs_table(columns: list[str] | None = TABLE_COLUMNS) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = list_runs()
    return table[columns] if columns and not table.empty else table


def percent_column(help_text: str, label: str = "exact match (%)"):
    """A table column of shares (0-1) shown in percent, as every figure shows exact match."""
    import streamlit as st

    return st.column_config.NumberColumn(label, format="percent", help=help_text)


def exact_match_column():
    """The runs tables' exact-match column: in percent, with what it was measured on."""
    return percent_column("exact match at the training lengths: the share of fresh samples of those lengths "
                          "whose whole answer is right, at the last evaluation", "exact match (%)")


def store_line() -> str:
    """Where the runs are, for the Home page: the command line and notebooks use the same folder."""
    return f"Run store: `{data_root()}` ({data_root_origin()})."


def filter_runs(table: pd.DataFrame, text: str = "", statuses=(), tasks=(), mixers=(), positions=(),
                sort_by: str | None = None, ascending: bool = True) -> pd.DataFrame:
    """Rows matching every filter (an empty filter keeps all); `text` searches id and label."""
    keep = pd.Series(True, index=table.index)
    if text:
        pattern = re.escape(text.strip())
        keep &= (table.run_id.str.contains(pattern, case=False) | table.label.astype(str).str.contains(pattern, case=False)
                 | table.task.str.contains(pattern, case=False))
    for column, chosen in (("status", statuses), ("task", tasks), ("mixer", mixers), ("pos", positions)):
        if chosen:
            keep &= table[column].isin(list(chosen))
    rows = table[keep]
    if sort_by:
        if sort_by not in rows.columns:
            raise ConfigError("sort", sort_by, choices=list(rows.columns))
        rows = rows.sort_values(sort_by, ascending=ascending, na_position="last", kind="stable")
    return rows.reset_index(drop=True)


def pickable(table: pd.DataFrame) -> pd.DataFrame:
    """The runs a page can open: all but damaged ones (the Runs page lists those, marked)."""
    return table[table.status != "damaged"] if "status" in table.columns else table


def run_label(row) -> str:
    label = f"{row.run_id} · {row.task} · {row.mixer} · {row.pos} · seed {row.seed}"
    return label + (" · demo" if row.demo else "")


def experiment_results() -> dict[str, object]:
    """{"name" or "name (fast)": ExperimentResult} for every experiment with a cached result."""
    from .experiments import EXPERIMENTS, load_result

    found = {}
    for name in EXPERIMENTS:
        for fast in (False, True):
            result = load_result(name, fast)
            if result is not None:
                found[name + (" (fast)" if fast else "")] = result
    return found


def same_task_runs(table: pd.DataFrame, limit: int = 4) -> list[str]:
    """Up to `limit` runs of the first run's task: a default comparison that shares one length axis."""
    if table.empty:
        return []
    return list(table[table.task == table.task.iloc[0]].run_id[:limit])


def length_result_table(result: dict) -> pd.DataFrame:
    """analysis.evaluate_lengths's result as a table: one row per length, exact match and the mean
    attention entropy (nats) of each layer."""
    entropy = result.get("entropy", {})
    return pd.DataFrame([{"length": length, "exact_match": value,
                          **{f"entropy layer {layer}": v for layer, v in entropy.get(length, {}).items()}}
                         for length, value in result["exact_match"].items()])


def offset_result_table(curves: dict[int, dict[int, float]]) -> pd.DataFrame:
    """analysis.evaluate_offsets's result as a table: one row per length, a column per offset."""
    return pd.DataFrame([{"length": length, **{f"offset {offset}": value for offset, value in curve.items()}}
                         for length, curve in curves.items()])


def temperature_result_table(curves: dict[int, dict[str, dict]]) -> pd.DataFrame:
    """analysis.evaluate_temperatures's result as a table: one row per length, per reading its exact match
    and the factor it used (the mean over heads for per-head factors)."""
    return pd.DataFrame([{"length": length, **{f"{reading}{suffix}": numbers[key]
                                               for reading, numbers in row.items()
                                               for suffix, key in (("", "exact_match"), (" factor", "factor"))}}
                         for length, row in curves.items()])


def ray_available() -> bool:
    """Whether the Ray backend can be offered (the optional `ray` extra is installed)."""
    import importlib.util

    return importlib.util.find_spec("ray") is not None


def download_name(*parts) -> str:
    """A file stem from run ids and view names: letters, digits, '-', '_' only."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", "-".join(str(p) for p in parts if p != "")).strip("-") or "figure"


# --- widgets --------------------------------------------------------------------------------------
def store_is_empty(table: pd.DataFrame, hint: str = "") -> bool:
    """Say what to do when there is no run at all; True when the page should stop."""
    import streamlit as st

    if table.empty:
        st.info(EMPTY_STORE + (" " + hint if hint else ""))
        return True
    return False


def _follow(key: str, wanted) -> None:
    """Set widget `key` to `wanted` (its value for the selected runs) when the selection moved since the
    widget last followed it, or the widget is new on this page; otherwise the widget keeps its own value."""
    import streamlit as st

    marker = f"{key}__follows"
    if wanted is not None and (key not in st.session_state or st.session_state.get(marker) != wanted):
        st.session_state[key] = wanted
    st.session_state[marker] = wanted


def _picked(key: str, options: dict, position: int) -> None:
    """on_change of a run picker: the run chosen there takes its place in the selection."""
    import streamlit as st

    choice = st.session_state.get(key)
    if choice in options:
        set_selection(put_at(current_selection(), position, options[choice]))


def pick_run(table: pd.DataFrame, key: str, label: str = "run", prefer: int = 0, selects: bool = True):
    """A select box over the runs, on the selected run in place `prefer` of the selection (for one side
    of a comparison: 1). Choosing a run puts it there, on every page and in the URL, unless `selects`
    is False (a form that only starts on the selected run)."""
    import streamlit as st

    table = pickable(table)
    options = {run_label(row): row.run_id for row in table.itertuples()}
    labels = {run_id: name for name, run_id in options.items()}
    selection = current_selection()
    wanted = selection[prefer] if len(selection) > prefer else None
    _follow(key, labels.get(wanted))
    if st.session_state.get(key) not in options:  # nothing selected here yet: the first run not selected elsewhere
        fresh = [name for name, run_id in options.items() if run_id not in selection]
        st.session_state[key] = (fresh or list(options) or [None])[0]
    choice = st.selectbox(label, list(options), key=key, on_change=_picked if selects else None,
                          args=(key, options, prefer) if selects else None)
    if choice is None:
        return None
    if selects and len(selection) <= prefer:  # the URL names what the page shows
        set_selection(put_at(selection, prefer, options[choice]))
    return open_run(options[choice])


def _picked_many(key: str, options: dict) -> None:
    import streamlit as st

    set_selection([options[name] for name in st.session_state.get(key, []) if name in options])


def pick_runs(table: pd.DataFrame, key: str, label: str = "runs", default: list[str] | None = None,
              selects: bool = True) -> list:
    """A multiselect over the runs, on the selected ones; where none of them is in `table`, on `default`
    (ids). Changing it changes the selection (unless `selects` is False)."""
    import streamlit as st

    table = pickable(table)
    options = {run_label(row): row.run_id for row in table.itertuples()}
    selection = current_selection()
    here = [name for name, run_id in options.items() if run_id in selection]
    here.sort(key=lambda name: selection.index(options[name]))
    _follow(key, here or None)
    if key not in st.session_state:
        st.session_state[key] = [name for name, run_id in options.items() if run_id in (default or [])]
    st.session_state[key] = [name for name in st.session_state[key] if name in options]
    chosen = st.multiselect(label, list(options), key=key, on_change=_picked_many if selects else None,
                            args=(key, options) if selects else None)
    if selects and not selection and chosen:  # the URL names what the page shows
        set_selection([options[name] for name in chosen])
    return [open_run(options[name]) for name in chosen]


def download_buttons(fig, stem: str, key: str) -> None:
    """PNG, SVG and PDF of the figure; each is rendered only when its button is clicked."""
    import streamlit as st

    from .figures.chromium import missing_browser
    from .figures.export import FORMATS, MIME_TYPES, to_bytes

    if missing_browser():
        st.caption(missing_browser())
        return
    row = st.container(horizontal=True, gap="small")
    for fmt in FORMATS[::-1]:  # png, svg, pdf
        row.download_button(fmt.upper(), data=lambda fmt=fmt: to_bytes(fig, fmt), file_name=f"{stem}.{fmt}",
                               mime=MIME_TYPES[fmt], key=f"{key}_{fmt}", on_click="ignore",
                               icon=":material/download:", help=f"download this figure as {fmt.upper()}")


def figure_view(fig, key: str, stem: str) -> None:
    """A figure with its download buttons under it."""
    import streamlit as st

    width = "content" if fig.layout.width else "stretch"  # a fixed-width figure (a map) keeps its shape
    st.plotly_chart(fig, key=key, width=width, config={"displaylogo": False})
    download_buttons(fig, stem, key=f"{key}_download")


@contextlib.contextmanager
def errors_shown():
    """`with errors_shown(): ...` shows an error raised inside on the page (a warning for bad input,
    an error otherwise) and lets the rest of the page draw, instead of stopping it."""
    try:
        yield
    except Exception as error:  # noqa: BLE001 - shown to the user, not swallowed
        show_error(error)


def show_error(error: Exception) -> None:
    import streamlit as st

    if isinstance(error, ConfigError):
        st.warning(str(error))
    else:
        st.error(f"{type(error).__name__}: {error}")


def evaluate_by_length(evaluate):
    """evaluate(progress) under a progress bar that counts test lengths (analysis.evaluate_lengths and
    analysis.evaluate_offsets both report per length); None, with the error shown, when it fails."""
    import streamlit as st

    bar = st.progress(0.0, text="evaluating")
    try:
        return evaluate(lambda done, total: bar.progress(done / total, text=f"{done} of {total} lengths"))
    except Exception as error:  # noqa: BLE001 - shown to the user, not swallowed
        show_error(error)
        return None
    finally:
        bar.empty()


def form_widget(field, key: str):
    """One Train-form field as a widget: select box, multiselect, checkbox or text. Its value lives in the
    session (a preset writes it there too): the field's default is put there on first sight, never passed
    to the widget, because a widget drawn once with a default and later without one shows an empty box."""
    import streamlit as st

    if key not in st.session_state:
        default = field.default if field.kind != "choice" or field.default in field.choices else field.choices[0]
        st.session_state[key] = list(default) if field.kind == "multichoice" else default
    label, help_text = field.key.split(".", 1)[1], field.help or None
    if field.kind == "choice":
        return st.selectbox(label, field.choices, key=key, help=help_text)
    if field.kind == "multichoice":
        return st.multiselect(label, field.choices, key=key, help=help_text)
    if field.kind == "bool":
        return st.checkbox(label, key=key, help=help_text)
    return st.text_input(label, key=key, help=help_text)


def train_form_state(config, preset_title: str) -> dict:
    """Session-state values that fill the Train page with `config` (a preset's first run): the preset,
    task and mixer choices and every field the form shows."""
    from .forms import form_values, mixer_of

    task = config.task.name
    return {"train_preset": preset_title, "train_task": task, "train_mixer": mixer_of(config),
            **{f"train_{task}_{key}": value for key, value in form_values(config).items()}}


def describe_outcomes(outcomes: list[tuple[str, str]]) -> list[str]:
    """One sentence per run the Train form sent off (background.train_or_reuse's outcomes)."""
    lines = []
    for run_id, outcome in outcomes:
        if outcome.startswith("reused"):
            lines.append(f"Run **{run_id}** was trained before with exactly these settings "
                         f"({outcome.split(' ', 1)[1]}): the stored run is reused, not trained again.")
        elif outcome == "resumed":
            lines.append(f"Run **{run_id}** was interrupted before: training resumes from its checkpoint.")
        else:
            lines.append(f"Run **{run_id}** is training.")
    return lines


def form_section(fields: list, key_prefix: str, columns: int = 4) -> dict:
    """A grid of form widgets; returns {dotted key: value}."""
    import streamlit as st

    values = {}
    grid = st.columns(columns)
    for i, field in enumerate(fields):
        with grid[i % columns]:
            values[field.key] = form_widget(field, f"{key_prefix}{field.key}")
    return values


def show_differences(runs: list, key: str) -> None:
    """The config fields in which the compared runs differ, one column per run named as in the legends."""
    import streamlit as st

    from .compare import runs_differences

    if len(runs) < 2:
        return
    table = runs_differences(runs)
    if table.empty:
        st.caption("These runs have the same config.")
        return
    st.caption("Where these runs' configs differ (every other field is the same):")
    st.dataframe(table, hide_index=True, key=key)
