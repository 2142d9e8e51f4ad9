"""Static export of figures to PNG, SVG and PDF through kaleido and the system Chromium.

Each export starts a headless Chromium (a few seconds); `export_server()` keeps one running for a
batch of exports (tests, scripts) so each further figure takes a fraction of a second.
"""
from __future__ import annotations

import contextlib
import warnings
from pathlib import Path

from ..errors import ConfigError
from .chromium import require_browser, retry_kaleido_startup

FORMATS = ("pdf", "svg", "png")
MIME_TYPES = {"pdf": "application/pdf", "svg": "image/svg+xml", "png": "image/png"}
DEFAULT_FOLDER = "exports"
PNG_SCALE = 2.0  # PNGs are rendered at twice the layout size, so they stay sharp in print


def _size(fig, width: int | None, height: int | None) -> tuple[int, int]:
    return int(width or fig.layout.width or 672), int(height or fig.layout.height or 420)


def _check_format(fmt: str, field: str, value) -> str:
    if fmt not in FORMATS:
        raise ConfigError(field, str(value), f"expected a file ending in one of: {', '.join('.' + f for f in FORMATS)}")
    return fmt


def to_bytes(fig, fmt: str, width: int | None = None, height: int | None = None,
             scale: float = PNG_SCALE) -> bytes:
    """The figure as PDF/SVG/PNG bytes (download buttons); `scale` applies to PNG only."""
    if fmt not in FORMATS:
        raise ConfigError("format", fmt, choices=FORMATS)
    require_browser()  # one line, not kaleido's traceback, when there is none
    width, height = _size(fig, width, height)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The kopts argument is ignored")  # with export_server()
        return retry_kaleido_startup(lambda: fig.to_image(format=fmt, width=width, height=height,
                                                          scale=scale if fmt == "png" else 1))


def export(fig, path: str | Path, width: int | None = None, height: int | None = None,
           scale: float = PNG_SCALE) -> Path:
    """Write fig to path; the format follows the suffix (.pdf, .svg, .png)."""
    path = Path(path)
    fmt = _check_format(path.suffix.lstrip(".").lower(), "--out", path)
    from ..store import atomic_write_bytes

    atomic_write_bytes(path, to_bytes(fig, fmt, width, height, scale))
    return path


@contextlib.contextmanager
def export_server():
    """Keep one kaleido Chromium running for the exports inside the block."""
    import kaleido

    require_browser()
    kaleido.start_sync_server(silence_warnings=True)
    try:
        yield
    finally:
        kaleido.stop_sync_server(silence_warnings=True)


def safe_export_path(name: str, folder: str | Path = DEFAULT_FOLDER) -> Path:
    """folder/name, refusing names that would write outside the folder (../x.pdf, /etc/x.pdf)."""
    folder = Path(folder).resolve()
    path = (folder / name).resolve()
    if not name or folder not in path.parents:
        raise ConfigError("--out", name, f"must name a file inside {folder}")
    return path


def export_path(out: str | None, default_name: str, folder: str | Path = DEFAULT_FOLDER) -> Path:
    """Where an export goes: a bare file name (or none) inside `folder`; a path with a folder in it
    is the user's explicit choice."""
    if out is None:
        return safe_export_path(default_name, folder)
    if Path(out).name == out and out not in (".", ".."):
        return safe_export_path(out, folder)
    return Path(out)


# --- figures of one run by name (`workbench export RUN --figure NAME`) ----------------------------
FIGURES = ("attention", "attention-grid", "entropy", "sparsity", "neuron-activity", "length", "entropy-length",
           "entropy-length-normalized", "memorization", "loss", "patching", "heads", "heads-over-training",
           "logit-lens", "icl-curve")
CIRCUITS_FIGURES = FIGURES[-5:-1]  # the circuits views (workbench.circuits.views); --step picks a snapshot's weights
ICL_FIGURES = FIGURES[-1:]  # runs of in-context function tasks only (workbench.icl.views)


def run_figure(run, figure: str, layer: int = 0, head: int = 0, step: int | None = None, example: int = 0,
               length: int | None = None, offset: int | None = None, shift: str | None = None):
    from . import runs as run_figures

    if shift is not None and figure not in ICL_FIGURES:
        raise ConfigError("--shift", shift, "only --figure icl-curve reads shifted prompts")
    for flag, value in (("--length", length), ("--offset", offset)):
        if value is not None and figure not in ("attention", "attention-grid"):
            raise ConfigError(flag, value, "only the attention figures read a fresh sample "
                                           "(--figure attention or attention-grid)")
    if figure in CIRCUITS_FIGURES:
        return circuits_figure(run, figure, step)
    if figure in ICL_FIGURES:
        from ..icl import views as icl_views

        if step is not None:
            raise ConfigError("--step", step, "--figure icl-curve reads the final model")
        return icl_views.run_curve_figure(run, shift=shift)  # a ConfigError naming the task for any other run
    if figure == "attention":
        return run_figures.run_attention(run, layer, head, step, example, length, offset)
    if figure == "attention-grid":
        return run_figures.run_attention_grid(run, step, example, length, offset)
    if figure == "length":
        return run_figures.runs_length_curve([run])
    if figure in ("entropy-length", "entropy-length-normalized"):
        return run_figures.run_entropy_by_length(run, normalized=figure.endswith("normalized"))
    if figure == "memorization":
        return run_figures.run_memorization(run)
    if figure == "neuron-activity":  # --step draws that one step; by default a few spread over training
        return run_figures.run_neuron_activity(run, None if step is None else [step])
    probe = {"entropy": "entropy", "sparsity": "mlp_nonzero_fraction", "loss": "loss"}.get(figure)
    if probe is None:
        raise ConfigError("--figure", figure, choices=FIGURES)
    return run_figures.run_metric(run, probe)


def circuits_figure(run, figure: str, step: int | None = None):
    from ..circuits import views
    from . import circuits

    if figure == "patching":
        view = views.run_patching(run, step)
        return circuits.patching_heatmap(view.sweep, "resid_pre", view.clean_tokens)
    if figure == "heads":
        return circuits.unit_scores_heatmap(views.run_heads(run, step))
    if figure == "heads-over-training":
        return circuits.detector_scores_over_training(views.heads_over_training(run))
    return circuits.logit_lens_figure(views.run_lens(run, step)[0])


def export_run_figure(run_id: str, figure: str, out: str | None = None, width: int | None = None,
                      height: int | None = None, **options) -> Path:
    from ..store import open_run

    if figure not in FIGURES:  # before any path is built from it
        raise ConfigError("--figure", figure, choices=FIGURES)
    if out is not None:
        _check_format(Path(out).suffix.lstrip(".").lower(), "--out", out)
    run = open_run(run_id)
    path = export_path(out, f"{run.run_id}-{figure}.pdf")
    return export(run_figure(run, figure, **options), path, width, height)
