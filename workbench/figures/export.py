"""Static export of figures to PNG, SVG and PDF through kaleido and the system Chromium."""
from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError
from .chromium import configure_chromium

FORMATS = ("pdf", "svg", "png")


def export(fig, path: str | Path, width: int | None = None, height: int | None = None, scale: float = 2.0) -> Path:
    """Write fig to path; the format follows the suffix (.pdf, .svg, .png)."""
    path = Path(path)
    fmt = path.suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise ConfigError("--out", str(path), f"expected a file ending in one of: {', '.join('.' + f for f in FORMATS)}")
    configure_chromium()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.write_image(str(path), format=fmt, width=width or fig.layout.width or 672,
                    height=height or fig.layout.height or 420, scale=scale if fmt == "png" else 1)
    return path


def to_bytes(fig, fmt: str, width: int | None = None, height: int | None = None) -> bytes:
    """The figure as PDF/SVG/PNG bytes, for download buttons."""
    if fmt not in FORMATS:
        raise ConfigError("format", fmt, choices=FORMATS)
    configure_chromium()
    return fig.to_image(format=fmt, width=width or fig.layout.width or 672, height=height or fig.layout.height or 420,
                        scale=2 if fmt == "png" else 1)


def safe_export_path(name: str, folder: str | Path = "exports") -> Path:
    """folder/name, refusing names that would write outside the folder."""
    folder = Path(folder).resolve()
    path = (folder / name).resolve()
    if folder not in path.parents:
        raise ConfigError("--out", name, f"must stay inside {folder}")
    return path


FIGURES = ("attention", "attention-grid", "entropy", "sparsity", "length", "memorization", "loss")


def run_figure(run, figure: str, layer: int = 0, head: int = 0, step: int | None = None):
    from . import runs as run_figures

    if figure == "attention":
        return run_figures.run_attention(run, layer, head, step)
    if figure == "attention-grid":
        return run_figures.run_attention_grid(run, step)
    if figure == "length":
        return run_figures.runs_length_curve([run])
    probe = {"entropy": "entropy", "sparsity": "mlp_nonzero_fraction", "loss": "loss",
             "memorization": "exact_match"}.get(figure)
    if probe is None:
        raise ConfigError("--figure", figure, choices=FIGURES)
    return run_figures.run_metric(run, probe, by="head" if figure == "entropy" else "layer")


def export_run_figure(run_id: str, figure: str, out: str | None = None, width: int | None = None,
                      height: int | None = None, **options) -> Path:
    from ..store import open_run

    run = open_run(run_id)
    fig = run_figure(run, figure, **options)
    path = Path(out) if out else safe_export_path(f"{run.run_id}-{figure}.pdf")
    return export(fig, path, width, height)
