"""Fixtures shared by every test: a private run store, the system Chromium, a live dashboard.

- `data_dir`: a fresh run store for one test (WORKBENCH_DATA points at it).
- `chromium_browser` / `browser_page`: Debian's Chromium driven by Playwright. We never run
  `playwright install`; the browser comes from the system package (`make system`, run by
  `make test` and `make app`, installs it).
- `needs_browser`: skips a test (figure export, the dashboard in Chromium) with the one-line
  reason when the machine has no browser, so a missing optional system package never fails a
  test (notebooks/conftest.py does the same for notebook cells tagged `needs-browser`). WORKBENCH_REQUIRE_BROWSER=1 (set by `.ci/run`, whose `make test` installs Chromium
  or stops) turns the skip into a failure, so CI cannot pass without running the browser tests.
- `streamlit_server`: starts `app/Home.py` on a free local port and returns its URL.
- `artifacts_dir`: `artifacts/` at the repository root, for screenshots and exported figures.
- `shipped_results`: every test sees an empty data/results/ unless it is marked `shipped`.
- Tests marked `gpu` are skipped on machines without CUDA.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from browser_support import skip_without_browser

REPO_ROOT = Path(__file__).resolve().parent.parent
APP_SCRIPT = REPO_ROOT / "app" / "Home.py"

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",  # CI runs as root in a container, where Chromium's sandbox cannot start
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]
SERVER_START_ATTEMPTS = 300  # x SERVER_POLL_SECONDS: how long Streamlit may take to answer
SERVER_POLL_SECONDS = 0.2


# --- the run store ---------------------------------------------------------------------------
@pytest.fixture
def data_dir(tmp_path, monkeypatch) -> Path:
    """A fresh, empty run store; WORKBENCH_DATA names it for the duration of the test."""
    folder = tmp_path / "workbench-data"
    folder.mkdir()
    monkeypatch.setenv("WORKBENCH_DATA", str(folder))
    yield folder


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    folder = REPO_ROOT / "artifacts"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(autouse=True)
def shipped_results(request, tmp_path_factory, monkeypatch) -> Path:
    """Tests see an empty data/results/ (WORKBENCH_RESULTS), so a result a test makes never lands in the
    repository and no test depends on which results are shipped; tests marked `shipped` read the
    repository's own."""
    if request.node.get_closest_marker("shipped"):
        monkeypatch.delenv("WORKBENCH_RESULTS", raising=False)
        return REPO_ROOT / "data" / "results"
    folder = tmp_path_factory.mktemp("results")
    monkeypatch.setenv("WORKBENCH_RESULTS", str(folder))
    return folder


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models run fastest on one thread, above all on a shared, busy CPU. A module opts in with
    `pytestmark = pytest.mark.usefixtures("one_thread")`."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# --- the browser -----------------------------------------------------------------------------
@pytest.fixture(scope="session")
def needs_browser() -> None:
    skip_without_browser()


def find_chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def chromium_browser(needs_browser):
    """One headless system Chromium for the whole session, driven by Playwright."""
    executable = os.environ.get("BROWSER_PATH") or find_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def browser_page(chromium_browser):
    """A fresh page in its own context, so cookies and storage never leak between tests."""
    context = chromium_browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    yield page
    context.close()


# --- the dashboard ---------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def _wait_until_serving(process: subprocess.Popen, url: str, log_path: Path) -> None:
    health = f"{url}/_stcore/health"
    for _ in range(SERVER_START_ATTEMPTS):
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {process.returncode}:\n{_tail(log_path)}")
        if _answers(health):
            return
        time.sleep(SERVER_POLL_SECONDS)
    raise RuntimeError(f"streamlit did not answer at {health}:\n{_tail(log_path)}")


def _tail(log_path: Path, lines: int = 40) -> str:
    return "\n".join(log_path.read_text(errors="replace").splitlines()[-lines:])


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def streamlit_server(tmp_path):
    """Start the dashboard: `url = streamlit_server(data_folder)`; stopped after the test.

    The server runs `app/Home.py` from the repository root with WORKBENCH_DATA set to the given
    folder, on a free port of 127.0.0.1, and the call returns once its health check answers.
    """
    started: list[subprocess.Popen] = []

    def start(data_folder: Path, script: Path = APP_SCRIPT, extra_env: dict[str, str] | None = None) -> str:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "WORKBENCH_DATA": str(data_folder), **(extra_env or {})}
        command = [
            sys.executable, "-m", "streamlit", "run", str(script),
            "--server.address", "127.0.0.1",
            "--server.port", str(port),
            "--server.headless", "true",
            "--server.fileWatcherType", "none",  # nothing edits the app during a test; saves CPU
            "--browser.gatherUsageStats", "false",
        ]
        log_path = tmp_path / f"streamlit-{port}.log"
        with open(log_path, "wb") as log:
            process = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        started.append(process)
        _wait_until_serving(process, url, log_path)
        return url

    yield start
    for process in started:
        _stop(process)


# --- markers ---------------------------------------------------------------------------------
def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    import torch  # only imported when a gpu test was collected

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in gpu_items:
        item.add_marker(skip)
