"""The home page through Streamlit's AppTest: shipped demo runs, an empty store."""
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

REPO = Path(__file__).resolve().parent.parent
HOME = str(REPO / "app" / "Home.py")
TIMEOUT = 120


def test_demo_runs_are_shipped_and_readable(data_dir):
    from workbench.store import demo_root, list_runs

    assert demo_root() == REPO / "data" / "demo"
    table = list_runs()
    assert table.demo.sum() >= 2, "data/demo/ must hold the shipped demo runs (workbench demo build)"
    assert set(table[table.demo].status) == {"completed"}


def test_home_shows_demo_runs_attention_and_length_curve(data_dir):
    app = AppTest.from_file(HOME, default_timeout=TIMEOUT).run()
    assert not app.exception
    table = app.dataframe[0].value
    assert len(table) >= 2 and table.demo.all()
    charts = app.get("plotly_chart")
    assert len(charts) == 2  # the attention map and the length curve
    assert "heatmap" in charts[0].proto.spec
    app.selectbox(key="home_head").select(1).run()
    assert not app.exception


def test_home_says_how_to_evaluate_a_run_without_a_length_curve(data_dir):
    from workbench.app_support import SELECTED_RUNS
    from workbench.config import RunConfig
    from workbench.train import train

    run = train(RunConfig.load(None, ["task.name=copy", "model.n_layers=1", "model.d_model=16", "model.n_heads=2",
                                      "train.steps=4", "train.batch_size=8", "train.eval_every=0"]), progress=False)
    app = AppTest.from_file(HOME, default_timeout=TIMEOUT)
    app.session_state[SELECTED_RUNS] = [run.run_id]
    app.run()
    from workbench.explain import run_notes

    assert not app.exception
    assert [w.value for w in app.warning] == run_notes(run)  # 4 steps: a smoke test that never fit, said so
    assert any(f"workbench eval-length {run.run_id}" in info.value for info in app.info)
    assert len(app.get("plotly_chart")) == 1  # its attention map only


def test_home_with_an_empty_store_says_what_to_do(data_dir, monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBENCH_DEMO", str(tmp_path / "no-demo"))
    app = AppTest.from_file(HOME, default_timeout=TIMEOUT).run()
    assert not app.exception
    assert any("workbench train" in info.value for info in app.info)


@pytest.mark.browser
def test_home_in_chromium_shows_demo_runs_and_a_heatmap(streamlit_server, browser_page, data_dir, artifacts_dir):
    url = streamlit_server(data_dir)
    page = browser_page
    page.goto(url)
    page.get_by_text("Runs", exact=True).wait_for(timeout=60_000)
    page.locator(".js-plotly-plot .heatmaplayer").first.wait_for(timeout=60_000)
    page.screenshot(path=str(artifacts_dir / "home.png"), full_page=True)
    assert page.locator("[data-testid='stDataFrame']").count() == 1
    assert page.locator(".js-plotly-plot").count() >= 2


def test_home_starts_with_the_demo_runs_linked_to_their_pages(data_dir):
    from workbench.demo import demos

    app = AppTest.from_file(HOME, default_timeout=TIMEOUT).run()
    assert not app.exception
    assert any(header.value == "Start here" for header in app.subheader)
    links = app.get("page_link")
    assert len(links) == len(demos())
    first = links[0].proto
    assert "addition" in first.label and "runs=" in first.query_string  # the coupling demo opens beside learned
