"""Small helpers the Streamlit pages share (kept here so pages stay thin and logic stays testable)."""
from __future__ import annotations

import warnings

import pandas as pd

from .errors import ConfigError
from .store import list_runs, open_run

TABLE_COLUMNS = ["run_id", "status", "task", "mixer", "pos", "layers", "d_model", "seed", "step", "loss",
                 "exact_match", "demo", "label"]


def runs_table() -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = list_runs()
    return table[TABLE_COLUMNS] if not table.empty else table


def run_label(row) -> str:
    label = f"{row.run_id} · {row.task} · {row.mixer} · {row.pos} · seed {row.seed}"
    return label + (" · demo" if row.demo else "")


def pick_run(table: pd.DataFrame, key: str, label: str = "run"):
    import streamlit as st

    options = {run_label(row): row.run_id for row in table.itertuples()}
    choice = st.selectbox(label, list(options), key=key)
    return open_run(options[choice]) if choice else None


def show_error(error: Exception) -> None:
    import streamlit as st

    if isinstance(error, ConfigError):
        st.warning(str(error))
    else:
        st.error(f"{type(error).__name__}: {error}")
