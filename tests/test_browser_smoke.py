"""The system Chromium starts under Playwright, runs JavaScript, reacts to a click and screenshots.

If this fails, every dashboard test in a real browser fails with it: check this one first.
"""
from __future__ import annotations

import functools
import http.server
import threading

import pytest

PAGE = b"""<!doctype html>
<html><head><title>smoke</title></head>
<body>
  <p id="message">before</p>
  <button id="go" onclick="document.getElementById('message').textContent = 'clicked ' + (2 + 3)">go</button>
</body></html>
"""


class SmokePageHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args):  # keep the test output clean
        pass


@pytest.fixture
def smoke_page_url():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SmokePageHandler)
    thread = threading.Thread(target=functools.partial(server.serve_forever, poll_interval=0.1), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.mark.browser
def test_click_changes_text_and_screenshot_is_saved(browser_page, smoke_page_url, artifacts_dir):
    browser_page.goto(smoke_page_url)
    assert browser_page.title() == "smoke"
    assert browser_page.text_content("#message") == "before"

    browser_page.click("#go")

    # the text is computed by the page's JavaScript, so this passes only if scripts run
    assert browser_page.text_content("#message") == "clicked 5"
    screenshot = artifacts_dir / "browser_smoke.png"
    screenshot.unlink(missing_ok=True)
    browser_page.screenshot(path=str(screenshot))
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


TINY_APP = """
import os
import streamlit as st

st.title("fixture check")
st.write("store: " + os.path.basename(os.environ["WORKBENCH_DATA"]))
if st.button("count"):
    st.write("counted " + str(2 + 3))
"""


@pytest.mark.browser
def test_streamlit_server_serves_a_script_with_the_given_store(streamlit_server, browser_page, tmp_path):
    script = tmp_path / "tiny_app.py"
    script.write_text(TINY_APP)
    store = tmp_path / "store-for-this-test"
    store.mkdir()

    url = streamlit_server(store, script=script)
    browser_page.goto(url)

    browser_page.get_by_text("fixture check").wait_for()
    browser_page.get_by_text("store: store-for-this-test").wait_for()
    browser_page.get_by_role("button", name="count").click()
    browser_page.get_by_text("counted 5").wait_for()
