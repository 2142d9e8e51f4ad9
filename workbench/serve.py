"""`workbench app`: the Streamlit dashboard as a child process that stops when we are told to stop.

A process manager, a terminal multiplexer or a test harness stops a server with SIGTERM (or SIGHUP
when its terminal goes away) sent to the one process it started: us. Streamlit runs in a child
process, so without forwarding the child would outlive us and keep the port. Ctrl-C in a terminal
reaches both processes already (they share the terminal's process group); forwarding it again is
harmless, Streamlit just stops once.
"""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

APP_HOME = Path(__file__).resolve().parent.parent / "app" / "Home.py"
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
STOP_GRACE_SECONDS = 15  # Streamlit closes its sessions and its socket well within this


def app_command(host: str, port: int) -> list[str]:
    return [sys.executable, "-m", "streamlit", "run", str(APP_HOME), "--server.address", host,
            "--server.port", str(port), "--browser.gatherUsageStats", "false"]


def run_forwarding_signals(command: list[str]) -> int:
    """Run `command`, pass SIGTERM / SIGINT / SIGHUP on to it, wait until it has exited (killed if it
    ignores the signal for STOP_GRACE_SECONDS) and return its exit code."""
    received: list[tuple[int, float]] = []  # (signal, when)
    child: subprocess.Popen | None = None

    def forward(signum, _frame) -> None:
        received.append((signum, time.monotonic()))
        if child is not None and child.poll() is None:
            # Streamlit stops cleanly on SIGTERM; SIGHUP's default action would kill it mid-write.
            child.send_signal(signal.SIGTERM if signum == signal.SIGHUP else signum)

    previous = {signum: signal.signal(signum, forward) for signum in FORWARDED}
    try:
        child = subprocess.Popen(command)
        if received and child.poll() is None:  # a signal that came while the child was starting
            child.send_signal(signal.SIGTERM)
        while True:
            try:
                code = child.wait(timeout=1.0)  # wakes up now and then to see whether a stop is overdue
                break
            except subprocess.TimeoutExpired:
                if received and time.monotonic() - received[0][1] > STOP_GRACE_SECONDS:
                    child.kill()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 128 + received[0][0] if received and code < 0 else code
