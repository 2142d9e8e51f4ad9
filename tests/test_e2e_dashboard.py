"""The dashboard end to end in a real headless Chromium: train a tiny run from the Train page,
watch it finish, open it on the Attention page and download its figure as a PDF, then evaluate it
at a longer length from the Length generalization page. A screenshot of every page is kept in
artifacts/."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

TINY_FORM = {"max_digits": "3", "eval_lengths": "2,3,5", "n_layers": "1", "d_model": "16", "steps": "30",
             "batch_size": "16", "warmup": "5", "eval_samples": "32", "threads": "1",
             "every": "10"}  # probes: a snapshot every 10 steps, so the step slider has choices
PLOT = ".js-plotly-plot"
PAGES = {"Runs": PLOT, "Train": "[data-testid='stFormSubmitButton']", "Attention": PLOT, "Dynamics": PLOT,
         "Length generalization": PLOT, "Memorization": PLOT, "Experiments": "[data-testid='stAlert']"}
WAIT_MS = 60_000
TRAINING_WAIT_MS = 240_000  # a busy 2-core machine; the wait ends as soon as the page says so


def open_page(page, name: str) -> None:
    """Follow the sidebar link, so the browser session (and the selected runs) carries over."""
    page.locator("[data-testid='stSidebarNav'] a", has_text=name).first.click()
    page.get_by_role("heading", name="Training dynamics" if name == "Dynamics" else name).first.wait_for(timeout=WAIT_MS)


def fill_and_submit(page, fields: dict, button: str) -> None:
    """Fill in a form's fields ({locator: value}) and click its button, leaving the last field first.
    While a field of a form has focus, Streamlit shows "Press Enter to submit form"; leaving the field
    redraws the form and moves the button (~70 px down on the Length page), so a click made with the
    field still focused can land where the button was (streamlit#8725): the blur on mousedown moves it
    before mouseup, and no click fires."""
    for field, value in fields.items():
        field.fill(value)
        expect(field).to_have_value(value)
    field.blur()
    page.get_by_role("button", name=button).click()  # Playwright waits for the moved button to settle


def train_from_the_form(page, form: dict[str, str]) -> None:
    """Open the Train page, fill in the form (the Probes section unfolded) and start training."""
    open_page(page, "Train")
    page.locator("[data-testid='stExpander'] summary", has_text="Probes").click()  # folded by default
    fill_and_submit(page, {page.get_by_label(label, exact=True): value for label, value in form.items()}, "Train")
    page.get_by_text("Training now").wait_for(timeout=WAIT_MS)


def wait_until_idle(page) -> None:
    page.locator("[data-testid='stStatusWidget']").wait_for(state="hidden", timeout=WAIT_MS)


def wait_for_outcome(page, success: str, failure_screenshot) -> None:
    """Wait for the success message; if it never comes, keep a screenshot and fail with what the
    page's messages said (an error shown by the form), not a bare locator timeout."""
    try:
        page.get_by_text(success).wait_for(timeout=TRAINING_WAIT_MS)
    except Exception:
        screenshot(page, failure_screenshot)
        said = page.locator("[data-testid='stAlert'], [data-testid='stException']").all_inner_texts()
        pytest.fail(f"no {success!r} on the page; its messages: {said}")


def screenshot(page, path) -> None:
    """The app scrolls inside its own container: back to the top first, then the whole viewport."""
    page.evaluate("for (const e of document.querySelectorAll('*')) { if (e.scrollTop) e.scrollTop = 0; }")
    page.screenshot(path=str(path), full_page=True)


@pytest.mark.browser
def test_train_watch_attention_and_download_a_pdf(streamlit_server, browser_page, data_dir, tmp_path, artifacts_dir):
    url = streamlit_server(data_dir, extra_env={"WORKBENCH_DEMO": str(tmp_path / "no-demo")})
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 1600})  # the app scrolls inside; screenshots see this much
    page.goto(url)
    page.get_by_text("The run store is empty").first.wait_for(timeout=WAIT_MS)
    screenshot(page, artifacts_dir / "dashboard-0-home-empty.png")

    train_from_the_form(page, TINY_FORM)
    screenshot(page, artifacts_dir / "dashboard-2-train-live.png")
    page.get_by_text(": completed").wait_for(timeout=TRAINING_WAIT_MS)
    screenshot(page, artifacts_dir / "dashboard-2-train-done.png")
    run_ids = [p.name for p in data_dir.iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(run_ids) == 1 and (data_dir / run_ids[0] / "model.safetensors").exists()

    open_page(page, "Attention")
    page.locator(".js-plotly-plot .heatmaplayer").first.wait_for(timeout=WAIT_MS)
    page.get_by_text("training step").wait_for(timeout=WAIT_MS)  # snapshots at 0, 10, 20, 30
    wait_until_idle(page)
    with page.expect_download(timeout=WAIT_MS) as download:
        page.get_by_role("button", name="PDF").first.click()
    pdf = download.value.path().read_bytes()
    assert pdf.startswith(b"%PDF")
    name = download.value.suggested_filename
    assert name.endswith(".pdf") and run_ids[0] in name  # the figure of the run just trained

    for number, (name, ready) in enumerate(PAGES.items(), start=1):
        open_page(page, name)
        page.locator(ready).first.wait_for(timeout=WAIT_MS)
        wait_until_idle(page)
        screenshot(page, artifacts_dir / f"dashboard-{number}-{name.replace(' ', '_').lower()}.png")
        assert page.locator("[data-testid='stException']").count() == 0, f"{name} page raised"

    # evaluate the run at a longer length from the Length generalization page's form, entropy too
    open_page(page, "Length generalization")
    page.locator(PLOT).first.wait_for(timeout=WAIT_MS)
    wait_until_idle(page)  # a click that lands while the page still draws can be lost in its rerun
    page.locator("[data-testid='stExpander'] summary", has_text="Evaluate a run").click()
    fill_and_submit(page, {page.get_by_role("textbox", name="test lengths (--lengths)"): "2,3,8"}, "Evaluate")
    wait_for_outcome(page, f"Stored with run {run_ids[0]}", artifacts_dir / "dashboard-8-length-failed.png")
    page.get_by_role("heading", name="Attention entropy by test length").wait_for(timeout=WAIT_MS)
    # the entropy figure, by its axis title (a count of plots can include one Streamlit has not yet removed)
    page.locator(PLOT, has_text="attention entropy (nats)").first.wait_for(timeout=WAIT_MS)
    wait_until_idle(page)
    screenshot(page, artifacts_dir / "dashboard-8-length-evaluated.png")


FIRST_RUN_PRESET = "A first run: addition with position coupling"
SELECTION_PAGES = {"Attention": "Attention", "Dynamics": "Dynamics", "Length generalization": "Length_generalization"}


def trained_run_id(data_dir) -> str:
    (run_id,) = [p.name for p in data_dir.iterdir() if p.is_dir() and not p.name.startswith(".")]
    return run_id


def shows_selected(page, run_id: str) -> None:
    """The page's run picker shows the run (a select box holds it as its input's value, a multiselect as
    a tag), and the address names it. Only visible pickers count: a folded form has its own."""
    select_box = page.locator(f"[data-testid='stSelectbox'] input[value^='{run_id} ']")
    multiselect = page.locator("[data-testid='stMultiSelect']", has_text=run_id)
    select_box.or_(multiselect).filter(visible=True).first.wait_for(timeout=WAIT_MS)
    page.wait_for_url(re.compile(f"[?&]run={run_id}"), timeout=WAIT_MS)


def other_demo_run() -> str:
    """A shipped demo run of another task than the one trained here, evaluated at test lengths so every
    selection page offers it (a copy run): no page starts on it unless told to."""
    from workbench.store import list_runs

    table = list_runs()
    return table[table.demo & (table.task == "copy")].run_id.iloc[0]


def open_link(browser, url: str):
    """Open a link in a new browser session (nothing remembered) and wait for its page's title."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(url)
    page.locator("h1").first.wait_for(timeout=WAIT_MS)
    return context, page


@pytest.mark.browser
def test_a_run_trained_on_the_train_page_is_selected_on_every_page(streamlit_server, browser_page, data_dir,
                                                                     chromium_browser):
    """With the shipped demo runs in the store and one of them selected first: the run trained here from
    the README's preset (on a tiny budget) is the one every page opens on, by the sidebar; a link names
    the run each page opens on."""
    url = streamlit_server(data_dir)
    demo_id = other_demo_run()
    page = browser_page
    page.goto(f"{url}/Dynamics?run={demo_id}")
    page.get_by_role("heading", name="Training dynamics").first.wait_for(timeout=WAIT_MS)
    shows_selected(page, demo_id)
    open_page(page, "Train")
    page.get_by_role("combobox", name="start from").click()
    page.get_by_role("option", name=FIRST_RUN_PRESET).click()
    expect(page.get_by_role("textbox", name="eval_lengths")).to_have_value("5,10,15", timeout=WAIT_MS)  # filled in
    wait_until_idle(page)
    page.locator("[data-testid='stExpander'] summary", has_text="Probes").click()  # folded by default
    fill_and_submit(page, {page.get_by_label(label, exact=True): value  # the preset's model, on a tiny budget
                           for label, value in {**TINY_FORM, "steps": "10"}.items()}, "Train")
    page.get_by_text(": completed").wait_for(timeout=TRAINING_WAIT_MS)
    run_id = trained_run_id(data_dir)
    assert page.get_by_text("loss nan").count() == 0

    for name in SELECTION_PAGES:  # by the sidebar, in one session
        open_page(page, name)
        shows_selected(page, run_id)
        wait_until_idle(page)
        assert page.locator("[data-testid='stException']").count() == 0, f"{name} page raised"

    for path in SELECTION_PAGES.values():  # by a link, each in a new session
        for linked_id in (run_id, demo_id):
            context, linked = open_link(chromium_browser, f"{url}/{path}?run={linked_id}")
            try:
                shows_selected(linked, linked_id)
            finally:
                context.close()


SCREENSHOT_PAGES = {"Home": "", "Runs": "Runs", "Train": "Train", "Attention": "Attention", "Dynamics": "Dynamics",
                    "Length generalization": "Length_generalization", "Memorization": "Memorization",
                    "Experiments": "Experiments"}


@pytest.mark.browser
@pytest.mark.shipped  # the Experiments page shows the shipped results, as a fresh clone does
def test_screenshots_of_every_page_at_1400x1000(streamlit_server, browser_page, data_dir, artifacts_dir):
    """Every page on the shipped demo runs, two of them selected by the link, as a reader sees it first:
    artifacts/page-*.png at 1400x1000, for a person to look at (the test checks only that each page drew
    without an exception)."""
    from workbench.store import list_runs

    url = streamlit_server(data_dir)
    demo = list_runs()
    addition = demo[demo.task == "addition"].run_id.tolist()[:2]
    page = browser_page
    page.set_viewport_size({"width": 1400, "height": 1000})
    for name, path in SCREENSHOT_PAGES.items():
        page.goto(f"{url}/{path}?runs={','.join(addition)}")
        page.locator("h1").first.wait_for(timeout=WAIT_MS)
        if name not in ("Train", "Experiments"):
            page.locator(PLOT).first.wait_for(timeout=WAIT_MS)
        if name == "Train":  # every field shows its default (a field once drew as an empty box)
            expect(page.get_by_role("textbox", name="max_digits")).to_have_value("10", timeout=WAIT_MS)
        wait_until_idle(page)
        page.evaluate("for (const e of document.querySelectorAll('*')) { if (e.scrollTop) e.scrollTop = 0; }")
        page.screenshot(path=str(artifacts_dir / f"page-{name.replace(' ', '_').lower()}.png"))
        assert page.locator("[data-testid='stException']").count() == 0, f"{name} page raised"
