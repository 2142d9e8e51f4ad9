"""`workbench app` stops with its Streamlit child when it is sent SIGTERM (a process manager's stop),
leaving no process behind and the port free for the next server."""
from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT_S = 120  # a busy 2-core machine imports Streamlit and torch slowly
STOP_TIMEOUT_S = 20  # "a few seconds", generously: the check ends as soon as everything is gone


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def poll(condition, timeout_s: float, every_s: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(every_s)
    return condition()


def group_is_empty(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def port_is_free(port: int) -> bool:
    """Whether a new server could listen on the port (SO_REUSEADDR, as Streamlit binds: connections
    in TIME_WAIT from our own health checks do not count as taken)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen()
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                return False
            raise
    return True


@pytest.mark.slow  # starts a real Streamlit server
@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_stop_signal_ends_the_app_and_its_streamlit_child(stop_signal, data_dir, tmp_path):
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("DISPLAY", None)  # headless: Streamlit must not try to open a browser
    log = open(tmp_path / "app.log", "wb")
    # Its own process group, so the check below sees every process `workbench app` started.
    app = subprocess.Popen([sys.executable, "-m", "workbench", "app", "--port", str(port)], cwd=REPO_ROOT, env=env,
                           stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        assert poll(lambda: app.poll() is not None or answers(f"http://127.0.0.1:{port}/_stcore/health"),
                    START_TIMEOUT_S, every_s=0.5), "the dashboard never answered"
        assert app.poll() is None, (tmp_path / "app.log").read_text()
        assert not port_is_free(port)  # the check below could fail

        app.send_signal(stop_signal)  # to `workbench app` alone, as a process manager does
        assert poll(lambda: app.poll() is not None, STOP_TIMEOUT_S), "workbench app did not exit"
        assert poll(lambda: group_is_empty(app.pid), STOP_TIMEOUT_S), "a process of workbench app is left"
        assert poll(lambda: port_is_free(port), STOP_TIMEOUT_S), f"port {port} is still taken"
    finally:
        if app.poll() is None or not group_is_empty(app.pid):
            os.killpg(app.pid, signal.SIGKILL)
            app.wait()
        log.close()
