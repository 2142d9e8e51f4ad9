"""workbench: train small sequence models on synthetic tasks on a CPU and see inside them."""
from .version import __version__  # noqa: F401

INTEROP = ("export_model", "import_model")  # workbench.interop: Hugging Face transformers in and out


def __getattr__(name: str):
    # loaded on first use, so `import workbench` stays free of torch and the optional packages
    if name in INTEROP:
        from . import interop

        return getattr(interop, name)
    raise AttributeError(f"module 'workbench' has no attribute {name!r}")
