"""Static figure export (kaleido) works offline with the system Chromium: PNG, SVG and PDF."""
from __future__ import annotations

import os
import struct
import xml.etree.ElementTree as ElementTree

import plotly.graph_objects as go
import pytest

from workbench.figures.chromium import (
    BROWSER_PATH_VARIABLE,
    KALEIDO_STARTUP_RACE,
    configure_chromium,
    find_chromium,
    retry_kaleido_startup,
)

WIDTH, HEIGHT = 400, 300


@pytest.fixture
def system_chromium(needs_browser, monkeypatch):
    if find_chromium() is None:
        pytest.skip("no system Chromium on PATH (BROWSER_PATH names another browser)")
    monkeypatch.delenv(BROWSER_PATH_VARIABLE, raising=False)
    return configure_chromium()


def small_figure() -> go.Figure:
    figure = go.Figure(go.Scatter(x=[1, 2, 3, 4], y=[0.1, 0.5, 0.9, 0.95], mode="lines+markers", name="exact match"))
    figure.update_layout(title="export smoke", xaxis_title="digits", yaxis_title="exact match")
    return figure


def test_configure_chromium_fills_only_an_unset_variable(monkeypatch):
    monkeypatch.delenv(BROWSER_PATH_VARIABLE, raising=False)
    found = configure_chromium()
    assert found == find_chromium()
    assert os.environ.get(BROWSER_PATH_VARIABLE) == found

    monkeypatch.setenv(BROWSER_PATH_VARIABLE, "/opt/my/chrome")
    assert configure_chromium() == "/opt/my/chrome"
    assert os.environ[BROWSER_PATH_VARIABLE] == "/opt/my/chrome"


class FlakyWriter:
    def __init__(self, errors: list[Exception]):
        self.errors, self.calls = list(errors), 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "written"


def test_retry_repeats_only_the_kaleido_startup_race():
    race = RuntimeError(f"ReferenceError: {KALEIDO_STARTUP_RACE}")
    writer = FlakyWriter([race, race])
    assert retry_kaleido_startup(writer, attempts=3) == "written"
    assert writer.calls == 3

    with pytest.raises(RuntimeError, match=KALEIDO_STARTUP_RACE):
        retry_kaleido_startup(FlakyWriter([race, race, race]), attempts=3)

    other = FlakyWriter([ValueError("bad width"), race])
    with pytest.raises(ValueError, match="bad width"):
        retry_kaleido_startup(other, attempts=3)
    assert other.calls == 1


def test_png_svg_and_pdf_are_written(system_chromium, tmp_path, artifacts_dir):
    assert os.environ[BROWSER_PATH_VARIABLE] == system_chromium
    figure = small_figure()
    paths = {ext: tmp_path / f"export_smoke.{ext}" for ext in ("png", "svg", "pdf")}
    for path in paths.values():
        retry_kaleido_startup(lambda: figure.write_image(str(path), width=WIDTH, height=HEIGHT))

    png = paths["png"].read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    png_width, png_height = struct.unpack(">II", png[16:24])  # the IHDR chunk
    assert (png_width, png_height) == (WIDTH, HEIGHT)

    svg = ElementTree.parse(paths["svg"]).getroot()
    assert svg.tag.endswith("svg")
    assert "export smoke" in paths["svg"].read_text()

    pdf = paths["pdf"].read_bytes()
    assert pdf.startswith(b"%PDF")
    assert b"%%EOF" in pdf[-1024:]

    (artifacts_dir / "export_smoke.png").write_bytes(png)
