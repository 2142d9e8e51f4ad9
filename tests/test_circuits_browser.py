"""The Circuits page in a real headless Chromium, on the shipped induction demo run: the patching
heatmap draws, and switching to the head detectors shows their scores over training."""
from __future__ import annotations

import pytest

from test_e2e_dashboard import PLOT, WAIT_MS, wait_until_idle


@pytest.mark.browser
def test_the_circuits_page_draws_the_patching_heatmap_of_the_induction_demo(streamlit_server, browser_page,
                                                                             data_dir, artifacts_dir):
    from workbench.demo import shipped_demo_runs

    run = shipped_demo_runs()["induction circuit, attention"]
    url = streamlit_server(data_dir)
    page = browser_page
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{url}/Circuits?run={run.run_id}")
    page.get_by_role("heading", name="Circuits").first.wait_for(timeout=WAIT_MS)
    heatmap = page.locator(f"{PLOT} .heatmaplayer").first
    heatmap.wait_for(timeout=WAIT_MS)
    assert page.locator(PLOT, has_text="recovered").count() >= 1  # the patching colour bar
    wait_until_idle(page)
    page.screenshot(path=str(artifacts_dir / "page-circuits.png"))
    page.get_by_role("tab", name="Head detectors").click()
    page.locator(PLOT, has_text="answer induction score").first.wait_for(timeout=WAIT_MS)
    assert page.locator("[data-testid='stException']").count() == 0
