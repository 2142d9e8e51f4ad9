"""`workbench export-model RUN --format hf`: a run as a Hugging Face model folder.

The folder holds what `transformers.AutoModelForCausalLM.from_pretrained(folder)` reads with no hub
access: config.json (with a `workbench` key: the run, the commit of the code that exported it, the
run's full config and the task's symbols) and model.safetensors, plus a word-level tokenizer over
the task's symbols (tokenizer.json; text is the symbols separated by spaces, e.g. "^ 1 2 + 3 4 ="),
which TransformerLens and pipelines ask for.

Before anything is written, the exported model is run beside the workbench model on random token
ids and must give the same logits (within TOLERANCE); the difference found is recorded.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from safetensors.torch import save_file

from ..analysis import load_model
from ..version import __version__
from ..errors import ConfigError, check
from ..store import Run, open_run
from ..tasks.base import BOS, EOS, PAD
from . import packages
from .architectures import architecture_for
from .common import TOLERANCE, max_logit_difference, plain_state

FORMATS = ("hf",)
CHECK_LENGTH = 32  # tokens per sequence of the check, at most the model's position table


def export_model(run: str | Run, out: str | Path | None = None, format: str = "hf") -> Path:
    """Write the run's final model as a Hugging Face model folder; returns the folder.

    Raises ConfigError (one line, exit 2 on the command line) for a configuration no
    transformers architecture computes exactly, naming why and what would export."""
    if format not in FORMATS:
        raise ConfigError("--format", format, choices=FORMATS)
    run = open_run(run) if isinstance(run, str) else run
    config = run.config()
    architecture = architecture_for(config.model)  # refuse before loading anything
    transformers = packages.load("transformers", "export-model")
    out = Path(out) if out is not None else Path("exports") / f"{run.run_id}-hf"
    _check_destination(out)
    model, task = load_model(run)
    with packages.quiet(transformers):
        hf_config = getattr(transformers, architecture.CONFIG_CLASS)(
            **architecture.hf_config(config.model, len(task.vocab)), **special_token_ids(task.vocab.symbols),
            architectures=[architecture.HF_CLASS])
        hf_model = getattr(transformers, architecture.HF_CLASS)(hf_config)
        weights = architecture.to_hf(plain_state(model), config.model)
        hf_model.load_state_dict(weights, strict=True)
        length = min(CHECK_LENGTH, config.model.max_positions)
        difference = max_logit_difference(model, hf_model, len(task.vocab), length)
        if not difference <= TOLERANCE:
            raise RuntimeError(f"the exported {architecture.HF_CLASS} differs from run {run.run_id} by "
                               f"{difference:.3g} in its logits (tolerance {TOLERANCE:g}); nothing was written")
        hf_config.workbench = provenance(run, config, task, difference)
        _write_folder(out, lambda folder: _write(folder, hf_config, weights, task.vocab.symbols))
    return out


def special_token_ids(symbols: list[str]) -> dict:
    """PAD, BOS and EOS are ids 0, 1, 2 of every task's vocabulary (tasks/base.py); an imported
    run's token ids carry no such meaning."""
    has = symbols[:3] == [PAD, BOS, EOS]
    return {"pad_token_id": 0 if has else None, "bos_token_id": 1 if has else None, "eos_token_id": 2 if has else None}


def provenance(run: Run, config, task, difference: float) -> dict:
    """What travels in config.json under `workbench`: enough to find the run and the code again."""
    from ..experiments.results import git_commit

    return {"run_id": run.run_id, **git_commit(), "workbench_version": __version__,
            "exported": time.strftime("%Y-%m-%dT%H:%M:%S"), "config": config.to_dict(),
            "vocab": list(task.vocab.symbols), "max_logit_difference": difference}


def _check_destination(out: Path) -> None:
    """A new or empty folder, or one holding an earlier workbench export (replaced whole)."""
    if not out.exists():
        return
    check(out.is_dir(), "--out", str(out), "is a file; name a folder")
    earlier_export = (out / "config.json").is_file() and '"workbench"' in (out / "config.json").read_text()
    check(earlier_export or not any(out.iterdir()), "--out", str(out),
          "is a folder with other files in it; name a new folder (an earlier export is replaced)")


def _write(folder: Path, hf_config, weights: dict, symbols: list[str]) -> None:
    hf_config.save_pretrained(folder)
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    _write_tokenizer(folder, symbols)


def _write_tokenizer(folder: Path, symbols: list[str]) -> None:
    """A word-level tokenizer: each task symbol is one token, its id the workbench's id."""
    from tokenizers import Tokenizer, models, pre_tokenizers  # installed with transformers

    transformers = packages.load("transformers", "export-model")
    # no unknown-token entry: a symbol outside the task's vocabulary is an error, not a silent id
    tokenizer = Tokenizer(models.WordLevel({symbol: i for i, symbol in enumerate(symbols)}))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    ids = special_token_ids(symbols)
    special = {} if ids["pad_token_id"] is None else {"pad_token": PAD, "bos_token": BOS, "eos_token": EOS}
    transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, **special).save_pretrained(folder)


def _write_folder(out: Path, write) -> None:
    """write(folder) into a temporary sibling, then swap it in: a failure never leaves half a folder."""
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    try:
        write(staging)
        if out.exists():
            old = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.old."))
            os.replace(out, old / out.name)
            os.replace(staging, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
