"""The Train page's live view in a real headless Chromium: while a run trains in the background, its
exact-match figure (read from the run store as the trainer writes it) changes between two
screenshots; the latest attention snapshot is shown beside it. The run is long, and cancelled as soon
as the second screenshot is taken, so the test lasts a few evaluations, not the whole run."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from test_e2e_dashboard import TINY_FORM, TRAINING_WAIT_MS, WAIT_MS, screenshot, train_from_the_form

# evaluations every 40 steps of a run far longer than the test waits for (it is cancelled)
LIVE_FORM = {**TINY_FORM, "steps": "20000", "eval_every": "40", "every": "40", "checkpoint_every": "5000"}
EXACT_MATCH = "[class*='st-key-live_exact_match_']"
LATEST = re.compile(r"latest: step (\d+)\)")


def latest_step(page) -> int:
    return int(LATEST.search(page.locator(EXACT_MATCH).first.inner_text()).group(1))


POINTS_JS = "plots => plots.map(p => (p.calcdata || []).reduce((n, trace) => n + trace.length, 0))"


def wait_for_more_points(page, than: int) -> None:
    """Plotly draws a figure after its caption is on the page: wait (no fixed sleep) until a figure with
    more points than `than` is drawn, so a caption that already names the next step is not compared
    with the figure it is replacing."""
    page.wait_for_function(
        f"""() => Math.max(0, ...Array.from(document.querySelectorAll("{EXACT_MATCH} .js-plotly-plot"))
                 .map(p => (p.calcdata || []).reduce((n, trace) => n + trace.length, 0))) > {than}""",
        timeout=TRAINING_WAIT_MS)


def newest_figure(page):
    """(the exact-match figure, its number of points): while the view refreshes, the figure it replaces
    can linger a moment beside it; the newest one has the most points."""
    plots = page.locator(EXACT_MATCH).locator(".js-plotly-plot")
    points = plots.evaluate_all(POINTS_JS)
    newest = max(range(len(points)), key=points.__getitem__)
    return plots.nth(newest), points[newest]


def shoot_newest_figure(page) -> tuple[bytes, int]:
    """(screenshot, points) of the newest exact-match figure. The view redraws every second, so the
    figure found can be replaced before its picture is taken: then look again (a few tries)."""
    for attempt in range(10):
        figure, points = newest_figure(page)
        try:
            return figure.screenshot(timeout=5_000), points
        except PlaywrightError:
            if attempt == 9:
                raise
    raise AssertionError("unreachable")


@pytest.mark.browser
def test_the_live_view_updates_exact_match_while_the_run_trains(streamlit_server, browser_page, data_dir, tmp_path,
                                                                  artifacts_dir):
    url = streamlit_server(data_dir, extra_env={"WORKBENCH_DEMO": str(tmp_path / "no-demo")})
    page = browser_page
    page.set_viewport_size({"width": 1400, "height": 1600})
    page.goto(url)
    page.get_by_text("The run store is empty").first.wait_for(timeout=WAIT_MS)
    train_from_the_form(page, LIVE_FORM)

    page.locator(EXACT_MATCH).locator(".js-plotly-plot").first.wait_for(timeout=TRAINING_WAIT_MS)  # an evaluation is stored
    page.get_by_text("latest attention snapshot").wait_for(timeout=WAIT_MS)
    first_step = latest_step(page)
    first, first_points = shoot_newest_figure(page)
    screenshot(page, artifacts_dir / "live-view-1.png")

    # the next evaluation: the caption names a later step (waits until then; no fixed sleep)
    expect(page.locator(EXACT_MATCH)).not_to_contain_text(f"latest: step {first_step})", timeout=TRAINING_WAIT_MS)
    second_step = latest_step(page)
    wait_for_more_points(page, first_points)
    second, second_points = shoot_newest_figure(page)
    screenshot(page, artifacts_dir / "live-view-2.png")
    page.get_by_role("button", name="Cancel").click()

    assert second_step > first_step and second_points > first_points
    assert first != second, "the exact-match figure looks the same after a later evaluation"
    assert page.locator("[data-testid='stException']").count() == 0
    page.get_by_text(": interrupted").wait_for(timeout=TRAINING_WAIT_MS)  # stopped, resumable
