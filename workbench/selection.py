"""The dashboard's selected runs: one ordered list of run ids that follows the user from page to page
and lives in the URL (`?run=ID` for one run, `?runs=A,B` for several), so a link opens the same view.

Who decides: a link (the URL) wins over what this browser session remembers, because a reload,
a shared link or the browser's back button all arrive as a URL; a run picked in a widget wins
over both (its callback runs before the page, and writes the URL). Streamlit clears the URL's
query parameters when the sidebar switches pages, so each page writes the selection back.

Single-run views (Home, Dynamics, Memorization, one side of Attention) show and change one place
of the list (the first, or the second for Attention's right side); views of several runs (Runs,
Length generalization) show and change the whole list. Pickers that only start somewhere (the
evaluation forms) read the selection but never change it.
"""
from __future__ import annotations

from typing import Mapping

import pandas as pd

from .errors import ConfigError
from .store import RUN_ID_PATTERN, data_root, open_run

SELECTED_RUNS = "selected_runs"  # session-state key of the list of run ids


# --- plain data (the URL's form) ------------------------------------------------------------------
def parse_selection(params: Mapping[str, str]) -> list[str]:
    """Run ids from query parameters `run` and `runs` (comma-separated), in order, once each;
    anything that could not be a run id is left out."""
    named = [params.get("run") or "", *(params.get("runs") or "").split(",")]
    ids = [part.strip() for part in named if part and part.strip()]
    return list(dict.fromkeys(i for i in ids if RUN_ID_PATTERN.match(i)))


def selection_params(run_ids: list[str]) -> dict[str, str]:
    """The query parameters that name a selection: {"run": id}, {"runs": "a,b"} or none."""
    if not run_ids:
        return {}
    return {"run": run_ids[0]} if len(run_ids) == 1 else {"runs": ",".join(run_ids)}


def put_at(run_ids: list[str], position: int, run_id: str) -> list[str]:
    """The selection with `run_id` in place `position`: the run there is replaced, or, when `run_id`
    was selected elsewhere, the two change places (picking the second run of a pair keeps the pair)."""
    chosen = list(run_ids)
    if position >= len(chosen):
        return [r for r in chosen if r != run_id] + [run_id]
    if run_id in chosen:
        elsewhere = chosen.index(run_id)
        chosen[elsewhere] = chosen[position]
    chosen[position] = run_id
    return chosen


# --- the session and the URL ----------------------------------------------------------------------
def _write_url(run_ids: list[str]) -> None:
    import streamlit as st

    wanted = selection_params(run_ids)
    for name in ("run", "runs"):
        if name in wanted:
            if st.query_params.get(name) != wanted[name]:
                st.query_params[name] = wanted[name]
        elif name in st.query_params:
            del st.query_params[name]


def _resolve(run_ids: list[str]) -> list[str]:
    """Full ids for the ids (or unique prefixes) of a link; a run the store lacks is named and left out."""
    import streamlit as st

    found = []
    for run_id in run_ids:
        try:
            found.append(open_run(run_id).run_id)
        except ConfigError:
            st.warning(f"The link names run `{run_id}`, which is not in the run store ({data_root()}).")
    return list(dict.fromkeys(found))


def current_selection() -> list[str]:
    """The selected run ids: the URL's when it names any, else this session's; the URL is kept in step."""
    import streamlit as st

    linked = parse_selection(st.query_params)
    remembered = st.session_state.get(SELECTED_RUNS, [])
    if linked and linked != remembered:
        st.session_state[SELECTED_RUNS] = _resolve(linked)
    selection = list(st.session_state.get(SELECTED_RUNS, []))
    _write_url(selection)
    return selection


def set_selection(run_ids: list[str]) -> None:
    import streamlit as st

    st.session_state[SELECTED_RUNS] = list(dict.fromkeys(run_ids))
    _write_url(st.session_state[SELECTED_RUNS])


def selected_run_ids(table: pd.DataFrame) -> list[str]:
    """The selected runs that are rows of `table` (a page may show only some runs), in order."""
    present = set(table.run_id)
    return [run_id for run_id in current_selection() if run_id in present]


def add_to_selection(run_ids: list[str]) -> None:
    """Add runs after the selected ones (e.g. a run just evaluated joins the curves)."""
    selection = current_selection()
    set_selection(selection + [r for r in run_ids if r not in selection])


def keep_first_selected() -> None:
    """Back to one run (e.g. Attention leaves side-by-side mode)."""
    set_selection(current_selection()[:1])
