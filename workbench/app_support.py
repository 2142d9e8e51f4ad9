"""Small helpers the Streamlit pages share (kept here so pages stay thin and logic stays testable).

The functions without a Streamlit import are plain data (filters, labels, choices); the others
draw one widget group the same way on every page (a run picker, a figure with its downloads).
"""
from __future__ import annotations

import re
import warnings

import pandas as pd

from .errors import ConfigError
from .store import list_runs, open_run

TABLE_COLUMNS = ["run_id", "status", "task", "mixer", "pos", "layers", "d_model", "params", "seed", "step", "loss",
                 "exact_match", "demo", "label"]
SORTABLE = ["created", "run_id", "status", "task", "mixer", "pos", "loss", "exact_match", "step"]
MAX_MAP_TOKENS = 256  # longer inputs make T x T maps (per head) too heavy for a browser page
SELECTED_RUNS = "selected_runs"  # session-state key: the runs chosen on the Runs page, read by every page
EMPTY_STORE = ("The run store is empty. Train a run on the **Train** page (or `workbench train "
               "task.name=addition model.pos=coupling` on the command line), or rebuild the demo runs "
               "with `workbench demo build`.")


# --- the run table (plain data) -------------------------------------------------------------------
def runs_table(columns: list[str] | None = TABLE_COLUMNS) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = list_runs()
    return table[columns] if columns and not table.empty else table


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


def selected_run_ids(table: pd.DataFrame) -> list[str]:
    import streamlit as st

    chosen = st.session_state.get(SELECTED_RUNS, [])
    return [run_id for run_id in chosen if run_id in set(table.run_id)]


def pick_run(table: pd.DataFrame, key: str, label: str = "run", prefer: int = 0):
    """A select box over the runs; it starts on the runs selected on the Runs page."""
    import streamlit as st

    table = pickable(table)
    options = {run_label(row): row.run_id for row in table.itertuples()}
    labels = list(options)
    selected = selected_run_ids(table)
    index = 0
    if selected:
        wanted = selected[min(prefer, len(selected) - 1)]
        index = next(i for i, name in enumerate(labels) if options[name] == wanted)
    elif prefer and len(labels) > prefer:
        index = prefer
    choice = st.selectbox(label, labels, index=index, key=key)
    return open_run(options[choice]) if choice else None


def pick_runs(table: pd.DataFrame, key: str, label: str = "runs", default: list[str] | None = None) -> list:
    """A multiselect over the runs; it starts on `default` (ids), else on the runs selected on the Runs page."""
    import streamlit as st

    table = pickable(table)
    options = {run_label(row): row.run_id for row in table.itertuples()}
    if key in st.session_state:  # chosen before (or set by add_to_choice): a default would only warn
        st.session_state[key] = [name for name in st.session_state[key] if name in options]
        chosen = st.multiselect(label, list(options), key=key)
    else:
        wanted = default if default is not None else selected_run_ids(table)
        chosen = st.multiselect(label, list(options), default=[n for n, r in options.items() if r in wanted], key=key)
    return [open_run(options[name]) for name in chosen]


def add_to_choice(key: str, rows: pd.DataFrame) -> None:
    """Add runs (table rows) to a pick_runs multiselect before it is drawn (on its first drawing,
    they are its whole choice)."""
    import streamlit as st

    chosen = st.session_state.get(key, [])
    st.session_state[key] = [*chosen, *[run_label(row) for row in rows.itertuples() if run_label(row) not in chosen]]


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
    """One Train-form field as a widget: select box, multiselect, checkbox or text."""
    import streamlit as st

    label = field.key.split(".", 1)[1]
    if field.kind == "choice":
        index = list(field.choices).index(field.default) if field.default in field.choices else 0
        return st.selectbox(label, field.choices, index=index, key=key, help=field.help or None)
    if field.kind == "multichoice":
        return st.multiselect(label, field.choices, default=list(field.default), key=key, help=field.help or None)
    if field.kind == "bool":
        return st.checkbox(label, value=field.default, key=key, help=field.help or None)
    return st.text_input(label, value=field.default, key=key, help=field.help or None)


def form_section(fields: list, key_prefix: str, columns: int = 4) -> dict:
    """A grid of form widgets; returns {dotted key: value}."""
    import streamlit as st

    values = {}
    grid = st.columns(columns)
    for i, field in enumerate(fields):
        with grid[i % columns]:
            values[field.key] = form_widget(field, f"{key_prefix}{field.key}")
    return values
