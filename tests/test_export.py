"""Figure export checked on the files: a PNG of the requested size, an SVG that parses, a PDF with
a %PDF header; every figure of `workbench export`; names that would write outside their folder."""
from __future__ import annotations

import struct
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.config import RunConfig
from workbench.errors import ConfigError
from workbench.figures import WIDTHS, paper_style
from workbench.figures.builders import metric_over_steps
from workbench.figures.export import FIGURES, ICL_FIGURES, export, export_path, export_server, safe_export_path, to_bytes
from workbench.train import train

TINY = ["task.name=addition", "task.max_digits=3", "task.eval_lengths=2,3,5", "model.n_layers=1", "model.d_model=16",
        "model.n_heads=2", "train.steps=20", "train.batch_size=16", "train.warmup=5", "probes.every=10",
        "train.eval_samples=32", "train.eval_every=10", "train.threads=1"]


@pytest.fixture(scope="module")
def chromium_server(needs_browser):
    """One kaleido Chromium for the module: each export then takes a fraction of a second."""
    with export_server():
        yield


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> tuple[Path, str]:
    """A tiny trained run, evaluated after training at test lengths with attention entropy."""
    from workbench.analysis import evaluate_lengths

    root = tmp_path_factory.mktemp("runs")
    run_id = train(RunConfig.load(None, TINY), progress=False, root=root).run_id
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WORKBENCH_DATA", str(root))
        evaluate_lengths(run_id, [2, 5], n=8, entropy_n=2)
    return root, run_id


@pytest.fixture
def store(tiny_run, monkeypatch, tmp_path) -> str:
    """The tiny run's store as WORKBENCH_DATA; the working directory is a fresh folder (exports/ lands there)."""
    root, run_id = tiny_run
    monkeypatch.setenv("WORKBENCH_DATA", str(root))
    monkeypatch.setenv("WORKBENCH_DEMO", str(tmp_path / "no-demo"))
    monkeypatch.chdir(tmp_path)
    return run_id


def line_figure():
    import pandas as pd

    frame = pd.DataFrame({"step": [0, 10, 20], "value": [2.5, 1.2, 0.4], "series": "loss"})
    return paper_style(metric_over_steps(frame, "training loss"), width="single", height=240)


def test_a_log_axis_only_when_the_values_span_a_decade():
    import pandas as pd

    def axis(values, log_y=True):
        frame = pd.DataFrame({"step": range(len(values)), "value": values, "series": "loss"})
        return metric_over_steps(frame, "loss", log_y=log_y).layout.yaxis.type

    assert axis([2.5, 0.9, 0.02]) == "log"
    assert axis([0.31]) == "linear"  # one evaluation point
    assert axis([0.5, 0.3, 0.06]) == "linear"  # settled within a decade
    assert axis([2.5, 0.02], log_y=False) == "linear"


def test_a_log_axis_ticks_at_1_2_5_over_a_few_decades_and_at_the_powers_beyond_with_whole_numbers():
    import pandas as pd

    def axis(values):
        frame = pd.DataFrame({"step": range(len(values)), "value": values, "series": "grad norm"})
        return metric_over_steps(frame, "gradient norm", log_y=True).layout.yaxis

    few = axis([6.0, 0.3])  # 1.3 decades: plotly alone would label 3, 4, ... 9 too, and 0.5 as "5"
    assert list(few.tickvals) == [0.5, 1.0, 2.0, 5.0] and few.tickformat == "~g"
    many = axis([2.5, 0.0002])  # 4 decades: plotly alone still labels the 2s and 5s as bare digits
    assert list(many.tickvals) == [0.001, 0.01, 0.1, 1.0] and many.tickformat == "~g"


def test_a_share_that_barely_moves_is_drawn_on_the_whole_0_to_1_axis(store):
    from workbench.figures.runs import run_memorization, run_metric
    from workbench.store import open_run

    run = open_run(store)  # exact match only at steps 10 and 20, both 0: plotly alone ranged it -1 to 1
    for figure in (run_metric(run, "exact_match"), run_memorization(run)):  # the page's fallback too
        assert list(figure.layout.yaxis.range) == [-3, 103]  # exact match in percent, as on every page
        assert figure.layout.yaxis.title.text.endswith("(%)")
    density = run_metric(run, "mlp_nonzero_fraction")  # moves over training: plotly's own zoom
    values = [v for trace in density.data for v in trace.y]
    assert max(values) - min(values) >= 0.05 and density.layout.yaxis.range is None
    assert run_metric(run, "loss").layout.yaxis.range is None  # not a share


def test_a_single_step_is_the_only_tick():
    import pandas as pd

    frame = pd.DataFrame({"step": [1500], "value": [4.7], "series": "eval"})
    assert list(metric_over_steps(frame, "evaluation loss").layout.xaxis.tickvals) == [1500]
    frame = pd.DataFrame({"step": [0, 1500], "value": [4.7, 1.0], "series": "eval"})
    assert metric_over_steps(frame, "evaluation loss").layout.xaxis.tickvals is None


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


# --- files of each format ------------------------------------------------------------------------
@pytest.mark.parametrize("scale", [1, 2])
def test_png_has_the_requested_size_times_the_scale(chromium_server, tmp_path, scale):
    path = export(line_figure(), tmp_path / "loss.png", width=400, height=300, scale=scale)
    assert png_size(path.read_bytes()) == (400 * scale, 300 * scale)


def test_png_defaults_to_the_figure_layout_size(chromium_server):
    assert png_size(to_bytes(line_figure(), "png")) == (2 * WIDTHS["single"], 2 * 240)


def test_svg_parses_and_pdf_has_its_header(chromium_server, tmp_path):
    svg = export(line_figure(), tmp_path / "loss.svg")
    root = ElementTree.parse(svg).getroot()
    assert root.tag.endswith("svg") and root.get("width") == str(WIDTHS["single"])
    assert "training loss" in svg.read_text()
    pdf = export(line_figure(), tmp_path / "loss.pdf").read_bytes()
    assert pdf.startswith(b"%PDF") and b"%%EOF" in pdf[-64:]


def test_unknown_format_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="expected a file ending in one of: .pdf, .svg, .png"):
        export(line_figure(), tmp_path / "loss.jpg")
    with pytest.raises(ConfigError):
        to_bytes(line_figure(), "eps")


# --- figures of a run ----------------------------------------------------------------------------
@pytest.mark.parametrize("figure", [f for f in FIGURES if f not in ICL_FIGURES])  # ICL runs: tests/test_icl_views.py
def test_every_run_figure_exports_through_the_cli(chromium_server, store, figure, capsys):
    assert main(["export", store, "--figure", figure, "--out", f"{figure}.svg"]) == 0
    path = Path(capsys.readouterr().out.strip())
    assert path == (Path.cwd() / "exports" / f"{figure}.svg").resolve()  # a bare name lands in exports/
    ElementTree.parse(path)


def test_cli_export_defaults_to_a_pdf_in_exports(chromium_server, store, capsys):
    assert main(["export", store, "--figure", "attention", "--layer", "0", "--head", "1", "--step", "10"]) == 0
    path = Path(capsys.readouterr().out.strip())
    assert path == (Path.cwd() / "exports" / f"{store}-attention.pdf").resolve()
    assert path.read_bytes().startswith(b"%PDF")


def test_cli_export_png_with_a_size_and_an_explicit_folder(chromium_server, store, tmp_path, capsys):
    out = tmp_path / "paper" / "fig3.png"
    assert main(["export", store, "--figure", "loss", "--out", str(out), "--width", "320", "--height", "200"]) == 0
    assert png_size(out.read_bytes()) == (640, 400)  # PNGs are rendered at twice the layout size


def test_cli_export_bad_input_exits_2_with_one_line(store, capsys):
    assert main(["export", store, "--figure", "spectrum"]) == 2
    assert capsys.readouterr().err.startswith("error: --figure: invalid value 'spectrum'; choose one of: attention")
    assert main(["export", store, "--figure", "loss", "--out", "loss.txt"]) == 2
    assert main(["export", store, "--figure", "attention", "--layer", "7"]) == 2
    assert not (Path.cwd() / "exports").exists()


# --- names that would escape their folder --------------------------------------------------------
@pytest.mark.parametrize("name", ["../evil.pdf", "a/../../evil.pdf", "/tmp/evil.pdf", "..", ""])
def test_safe_export_path_refuses_names_outside_the_folder(tmp_path, name):
    with pytest.raises(ConfigError, match="must name a file inside"):
        safe_export_path(name, tmp_path / "exports")


def test_safe_export_path_keeps_names_inside(tmp_path):
    folder = tmp_path / "exports"
    assert safe_export_path("fig.pdf", folder) == (folder / "fig.pdf").resolve()
    assert export_path("fig.pdf", "default.pdf", folder) == (folder / "fig.pdf").resolve()
    assert export_path(None, "default.pdf", folder) == (folder / "default.pdf").resolve()
    assert export_path(str(tmp_path / "mine" / "fig.pdf"), "default.pdf", folder) == tmp_path / "mine" / "fig.pdf"


@pytest.mark.parametrize("args", [["--figure", "../../evil"], ["--figure", "loss", "--out", ".."]])
def test_cli_refuses_traversal_and_writes_nothing(store, tmp_path, capsys, args):
    assert main(["export", store, *args]) == 2
    assert "error:" in capsys.readouterr().err
    assert not list(tmp_path.parent.glob("evil*"))


def test_cli_refuses_a_run_id_that_is_a_path(store, capsys):
    assert main(["export", "../runs", "--figure", "loss"]) == 2
    assert "no path separators" in capsys.readouterr().err


@pytest.fixture
def no_browser(monkeypatch):
    """A machine without any browser: nothing on PATH, no BROWSER_PATH."""
    monkeypatch.setattr("workbench.figures.chromium.shutil.which", lambda name: None)
    monkeypatch.delenv("BROWSER_PATH", raising=False)


def test_without_a_browser_export_says_so_in_one_line(no_browser, store, capsys):
    assert main(["export", store, "--figure", "loss", "--out", "loss.svg"]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "Chromium" in line and "apt-get install chromium" in line
    assert not Path("exports").exists()


def test_without_a_browser_the_tests_that_need_one_skip_with_that_reason(no_browser):
    import browser_support
    from workbench.figures.chromium import NO_BROWSER

    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("WORKBENCH_REQUIRE_BROWSER", raising=False)
        with pytest.raises(pytest.skip.Exception, match="apt-get install chromium") as skipped:
            browser_support.skip_without_browser()
    assert str(skipped.value) == NO_BROWSER
