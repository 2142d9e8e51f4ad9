"""The In-context learning page, through Streamlit's AppTest and in a real headless Chromium, on tiny
finished runs: a regression run's curve beside the baseline checkboxes and on shifted prompts, a looped
run's loops slider, a Boolean run's accuracy panels, only ICL runs offered, and what to do when there is
none."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from workbench.icl.baselines import LINEAR_BASELINES
from workbench.selection import SELECTED_RUNS

from icl_runs import train_runs

PAGE = str(Path(__file__).resolve().parent.parent / "app" / "pages" / "9_In_context.py")


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("icl-page-store")


@pytest.fixture(scope="module")
def runs(store) -> dict[str, str]:
    return train_runs(store)


@pytest.fixture
def in_store(store, monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBENCH_DATA", str(store))
    monkeypatch.setenv("WORKBENCH_DEMO", str(tmp_path / "no-demo"))


def open_page(selected: list[str] | None = None) -> AppTest:
    app = AppTest.from_file(PAGE, default_timeout=120)
    if selected is not None:
        app.session_state[SELECTED_RUNS] = selected
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def curve(app: AppTest) -> str:
    (chart,) = app.get("plotly_chart")
    return chart.proto.spec


def test_a_regression_run_is_drawn_beside_the_checked_baselines(runs, in_store):
    app = open_page([runs["regression"]])
    labels = app.selectbox(key="icl_run").options
    assert len(labels) == 3 and not any(runs["addition"] in label for label in labels)  # ICL runs only
    spec = curve(app)
    assert "in-context examples" in spec and all(name in spec for name in LINEAR_BASELINES)
    app.checkbox(key=f"icl_baseline_{runs['regression']}_averaging").uncheck().run()
    assert not app.exception and "averaging" not in curve(app) and "least squares" in curve(app)
    assert len(app.get("download_button")) == 3
    assert not app.get("slider")  # not a looped model


def test_a_regression_run_is_read_on_shifted_prompts(runs, in_store):
    app = open_page([runs["regression"]])
    prompts = app.selectbox(key=f"icl_shift_{runs['regression']}")
    assert prompts.value == "as in training"
    plain = curve(app)
    prompts.select("prompts in one orthant").run()
    assert not app.exception and curve(app) != plain and "(prompts in one orthant)" not in plain
    assert any('--shift "prompts in one orthant"' in c.value for c in app.caption)
    assert any("read the curve's last point" in c.value for c in app.caption)  # where the shift acts
    prompts.select("query orthogonal to the examples").run()
    assert not app.exception and any("examples before it (d - 1) is moved" in c.value for c in app.caption)


def test_a_boolean_run_offers_no_prompt_shift(runs, in_store):
    app = open_page([runs["boolean"]])
    assert not [box for box in app.selectbox if box.key.startswith("icl_shift_")]


def test_a_looped_run_gets_a_loops_slider(runs, in_store):
    app = open_page([runs["looped"]])
    slider = app.slider(key=f"icl_loops_{runs['looped']}")
    assert slider.value == 2 and "(2 loops)" in curve(app)
    slider.set_value(5).run()
    assert not app.exception and "(5 loops)" in curve(app)


def test_a_boolean_run_shows_accuracy_beside_its_learners(runs, in_store):
    app = open_page([runs["boolean"]])
    spec = curve(app)
    assert "accuracy (%)" in spec and "elimination (optimal)" in spec and "nearest neighbour" in spec


def test_a_non_icl_selection_falls_back_to_an_icl_run(runs, in_store):
    app = open_page([runs["addition"]])
    assert "in-context examples" in curve(app)


def test_without_an_icl_run_the_page_says_how_to_train_one(data_dir, monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBENCH_DEMO", str(tmp_path / "no-demo"))
    app = open_page()
    (info,) = app.info
    assert "workbench train task.name=icl_linear_regression" in info.value and not app.get("plotly_chart")


@pytest.mark.browser
def test_the_in_context_page_draws_the_curve_in_chromium(runs, store, streamlit_server, browser_page, tmp_path,
                                                         artifacts_dir):
    from test_e2e_dashboard import PLOT, WAIT_MS, wait_until_idle

    url = streamlit_server(store, extra_env={"WORKBENCH_DEMO": str(tmp_path / "no-demo")})
    page = browser_page
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{url}/In_context?run={runs['looped']}")
    page.get_by_role("heading", name="In-context learning").first.wait_for(timeout=WAIT_MS)
    page.locator(PLOT, has_text="in-context examples").first.wait_for(timeout=WAIT_MS)
    assert page.locator(PLOT, has_text="least squares").count() >= 1
    assert page.locator(PLOT, has_text="(2 loops)").count() >= 1
    wait_until_idle(page)
    page.screenshot(path=str(artifacts_dir / "page-in-context.png"))
    assert page.locator("[data-testid='stException']").count() == 0
