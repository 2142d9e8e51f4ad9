"""One selection of runs that follows the user across pages and lives in the URL (`?run=ID`,
`?runs=A,B`): through Streamlit's AppTest, which keeps one session across `switch_page` as the
sidebar does (the sidebar also clears the URL's query parameters, so these tests clear them too)."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from test_app_pages import REPO, TIMEOUT, demo, tiny_demo  # noqa: F401 - the tiny demo runs, as fixtures
from workbench.selection import SELECTED_RUNS, parse_selection, put_at, selection_params

HOME = str(REPO / "app" / "Home.py")
PAGES = {"Runs": "pages/1_Runs.py", "Attention": "pages/3_Attention.py", "Dynamics": "pages/4_Dynamics.py",
         "Length": "pages/5_Length_generalization.py", "Memorization": "pages/6_Memorization.py"}
SHOWN = {"Dynamics": "dynamics_run", "Memorization": "memorization_run", "Attention": "attention_run_left"}


def open_link(page: str, **params: str) -> AppTest:
    """A fresh browser session opening a link to `page` with the given query parameters."""
    app = AppTest.from_file(HOME, default_timeout=TIMEOUT)
    app.run()
    app.query_params = {}
    app.switch_page(PAGES[page])
    app.query_params = dict(params)
    return checked(app.run())


def go_to(app: AppTest, page: str) -> AppTest:
    """Follow the sidebar link: same session, the URL's query parameters dropped."""
    app.query_params = {}
    app.switch_page(PAGES[page])
    return checked(app.run())


def checked(app: AppTest) -> AppTest:
    assert not app.exception, [e.value for e in app.exception]
    return app


def shown_run(app: AppTest, key: str) -> str:
    return app.selectbox(key=key).value.split(" · ")[0]


def test_the_url_form_of_a_selection():
    assert parse_selection({"run": "abc"}) == ["abc"]
    assert parse_selection({"runs": "a, b,,a"}) == ["a", "b"]
    assert parse_selection({"run": "a", "runs": "b,c"}) == ["a", "b", "c"]
    assert parse_selection({"run": "../etc"}) == []  # never a path
    assert selection_params([]) == {} and selection_params(["a"]) == {"run": "a"}
    assert selection_params(["a", "b"]) == {"runs": "a,b"}
    assert put_at(["a", "b"], 0, "c") == ["c", "b"] and put_at(["a", "b"], 0, "b") == ["b", "a"]
    assert put_at(["a"], 1, "c") == ["a", "c"] and put_at([], 0, "c") == ["c"] and put_at(["a", "b"], 5, "a") == ["b", "a"]


@pytest.mark.parametrize("page", ["Dynamics", "Memorization", "Attention"])
def test_a_link_opens_its_run(demo, page):
    for run_id in demo.values():
        app = open_link(page, run=run_id)
        assert shown_run(app, SHOWN[page]) == run_id
        assert app.query_params == {"run": run_id}


def test_a_link_may_name_a_unique_prefix_and_an_unknown_run_is_named(demo):
    run_id = demo["hybrid"]
    app = open_link("Dynamics", run=run_id[:6])
    assert shown_run(app, "dynamics_run") == run_id and app.query_params == {"run": run_id}
    app = open_link("Dynamics", run="nosuchrun")
    assert any("nosuchrun" in warning.value for warning in app.warning)


def test_a_run_picked_on_one_page_is_the_selection_on_the_next(demo):
    app = open_link("Dynamics", run=demo["addition"])
    options = app.selectbox(key="dynamics_run").options
    app.selectbox(key="dynamics_run").select(next(o for o in options if o.startswith(demo["hybrid"]))).run()
    assert app.query_params == {"run": demo["hybrid"]}  # the address bar follows the pick
    for page, key in SHOWN.items():
        app = go_to(app, page)
        assert shown_run(app, key) == demo["hybrid"], page
        assert app.query_params == {"run": demo["hybrid"]}, page  # written back after the sidebar cleared it
    app = go_to(app, "Length")
    assert [o.split(" · ")[0] for o in app.multiselect(key="length_runs").value] == [demo["hybrid"]]


def test_a_link_to_two_runs_opens_them_side_by_side_and_on_every_comparison(demo):
    ids = [demo["hybrid"], demo["addition"]]
    app = open_link("Attention", runs=",".join(ids))
    assert app.toggle(key="attention_compare").value
    assert [shown_run(app, "attention_run_left"), shown_run(app, "attention_run_right")] == ids
    app = go_to(app, "Length")
    assert [o.split(" · ")[0] for o in app.multiselect(key="length_runs").value] == ids
    app = go_to(app, "Runs")
    assert [o.split(" · ")[0] for o in app.multiselect(key="runs_compare").value] == ids
    app.multiselect(key="runs_compare").unselect(app.multiselect(key="runs_compare").value[0]).run()
    assert app.query_params == {"run": ids[1]} and app.session_state[SELECTED_RUNS] == ids[1:]
    app = go_to(app, "Attention")
    assert not app.toggle(key="attention_compare").value and shown_run(app, "attention_run_left") == ids[1]


def test_leaving_side_by_side_keeps_the_left_run(demo):
    app = open_link("Attention", runs=f"{demo['addition']},{demo['hybrid']}")
    app.toggle(key="attention_compare").set_value(False).run()
    assert app.query_params == {"run": demo["addition"]}
    app.toggle(key="attention_compare").set_value(True).run()  # the right side starts on another run
    assert app.query_params == {"runs": f"{demo['addition']},{demo['hybrid']}"}


def test_with_nothing_selected_the_url_names_what_the_page_shows(demo):
    app = AppTest.from_file(HOME, default_timeout=TIMEOUT)
    checked(app.run())
    assert app.query_params == {"run": shown_run(app, "home_run")}
