"""Workbench models in and out of Hugging Face transformers (and so TransformerLens and nnsight).

    export_model(run, out)   a run as a transformers model folder (hf_export.py)
    import_model(folder)     a transformers model folder as a workbench run (hf_import.py)

Which configurations map to which architecture, and why the others are refused: architectures.py.
The packages come with the optional extra: pip install -e '.[interop]' (packages.py).
"""
from .hf_export import export_model  # noqa: F401
from .hf_import import import_model  # noqa: F401
