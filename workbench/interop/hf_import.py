"""`workbench import-model DIR`: a local Hugging Face causal LM as a workbench run.

The folder must hold config.json and safetensors weights (pickled .bin weights are never
loaded) of an architecture the workbench's block computes exactly (architectures.py): GPT-2,
GPT-NeoX with a sequential residual and full rotary, or Mamba. The run's task is `imported`
(random token ids of the model's vocabulary, tasks/imported.py), its model section the
equivalent workbench config, its weights converted. The run id is the hash of that config, which holds a digest of the
weights: importing the same folder twice gives the same run, two models never share one.

On import the converted model is run beside the transformers model and must give the same logits;
then the probes run once (step 0), so the dashboard has attention maps, entropies and activations.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from pathlib import Path

import torch
from safetensors.torch import save_file

from ..config import RunConfig
from ..errors import ConfigError, check
from ..models import build_model
from ..store import COMPLETED, Run, atomic_write_json, data_root, metrics_frame, run_path
from . import packages
from .architectures import ARCHITECTURES
from .common import TOLERANCE, max_logit_difference

PROBE_LENGTH = 32  # tokens per probe and evaluation sample, at most the model's position table
IMPORT_REFUSALS = {
    "llama": "Llama normalizes with RMSNorm and has a gated MLP without biases; the workbench's block has neither",
    "bloom": "Bloom normalizes the embeddings and uses ALiBi, neither of which the workbench's models do",
    "mpt": "MPT uses ALiBi and no biases, which the workbench's models do not",
}


def import_model(folder: str | Path, label: str = "", root: Path | None = None) -> Run:
    """Import the model in `folder` into the run store (or return the run an earlier import made)."""
    folder = Path(folder)
    weight_files = _weight_files(folder)
    architecture, hf_config, hf_model = _load(folder)
    hf_state = {name: value.detach() for name, value in hf_model.state_dict().items()}
    config = _run_config(hf_config, architecture, architecture.model_fields(hf_config, hf_state), weight_files)
    run = Run(run_path(config.run_id, root))
    if run.status().get("status") == COMPLETED:
        return run
    model = build_model(config.model, config.task.params["vocab_size"]).eval()
    model.load_state_dict(architecture.from_hf(hf_state, hf_config, config.model), strict=True)
    difference = max_logit_difference(model, hf_model, hf_config.vocab_size, config.task.params["length"])
    if not difference <= TOLERANCE:
        raise RuntimeError(f"the imported model differs from {type(hf_model).__name__} by {difference:.3g} in "
                           f"its logits (tolerance {TOLERANCE:g}); nothing was stored")
    origin = {"from": str(folder.resolve()), "architecture": hf_config.model_type,
              "max_logit_difference": difference, "workbench": _exported_by(hf_config)}
    _write_run(run, config, model, label or f"imported {hf_config.model_type} from {folder.name}", origin,
               root=Path(root or data_root()))
    return run


def _weight_files(folder: Path) -> list[Path]:
    check((folder / "config.json").is_file(), "DIR", str(folder),
          "expected a Hugging Face model folder with config.json and model.safetensors")
    files = sorted(folder.glob("*.safetensors"))
    check(bool(files), "DIR", str(folder), "holds no .safetensors weights (pickled pytorch_model.bin files are "
                                           "never loaded)")
    return files


def _load(folder: Path):
    """(architecture module, transformers config, transformers model in float32 and eval mode)."""
    transformers = packages.load("transformers", "import-model")
    with packages.quiet(transformers):
        try:
            hf_config = transformers.AutoConfig.from_pretrained(folder, local_files_only=True)
        except (ValueError, OSError) as error:  # an unknown model_type, a malformed config.json
            raise ConfigError("DIR", str(folder), f"transformers cannot read its config.json: "
                                                  f"{str(error).splitlines()[0]}") from None
        architecture = _architecture(hf_config.model_type)
        hf_model = transformers.AutoModelForCausalLM.from_pretrained(
            folder, local_files_only=True, use_safetensors=True, dtype=torch.float32)
    return architecture, hf_config, hf_model.eval()


def _architecture(model_type: str):
    if model_type in ARCHITECTURES:
        return ARCHITECTURES[model_type]
    why = IMPORT_REFUSALS.get(model_type, "no mapping to the workbench's block")
    raise ConfigError("model_type", model_type, f"cannot import: {why}; choose one of: {', '.join(ARCHITECTURES)}")


def weights_digest(files: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in files:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def _exported_by(hf_config) -> dict:
    """The workbench run and commit a workbench export recorded, or {} for any other model."""
    recorded = getattr(hf_config, "workbench", None) or {}
    return {key: recorded[key] for key in ("run_id", "commit", "workbench_version") if key in recorded}


def _symbols(hf_config) -> list[str]:
    """The task symbols a workbench export recorded, when they name every token id; else none."""
    symbols = list((getattr(hf_config, "workbench", None) or {}).get("vocab") or [])
    fits = len(symbols) == hf_config.vocab_size and len(set(symbols)) == len(symbols)
    return symbols if fits and all(isinstance(s, str) for s in symbols) else []


def _run_config(hf_config, architecture, model_fields: dict, weight_files: list[Path]) -> RunConfig:
    length = min(PROBE_LENGTH, model_fields.get("max_positions", PROBE_LENGTH))  # Mamba has no position table
    task = {"name": "imported", "vocab_size": hf_config.vocab_size, "length": length,
            "architecture": architecture.MODEL_TYPE, "weights": weights_digest(weight_files),
            "workbench_run": _exported_by(hf_config).get("run_id", ""), "symbols": _symbols(hf_config)}
    # train.steps=1: the smallest valid budget; nothing is trained here (status.json says imported)
    return RunConfig.from_dict({"task": task, "model": model_fields, "train": {"steps": 1}})


def _write_run(run: Run, config: RunConfig, model, label: str, origin: dict, root: Path) -> None:
    """The run folder, assembled in a temporary folder of the store and renamed into place."""
    from ..train import versions

    root.mkdir(parents=True, exist_ok=True)
    staging = Run(Path(tempfile.mkdtemp(dir=root, prefix=f".{run.run_id}.")))
    try:
        atomic_write_json(staging.path / "config.json", config.to_dict())
        weights = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
        save_file(weights, str(staging.path / "model.safetensors"))
        staging.write_metrics(metrics_frame(_first_probes(staging, config, model)))
        staging.write_status(status=COMPLETED, run_id=run.run_id, step=0, steps=config.train.steps,
                             created=time.strftime("%Y-%m-%dT%H:%M:%S"), label=label, versions=versions(),
                             n_parameters=sum(p.numel() for p in model.parameters()), error=None, imported=origin)
        if run.path.exists():  # a folder an interrupted import left without a completed status
            shutil.rmtree(run.path)
        os.replace(staging.path, run.path)
    except BaseException:
        shutil.rmtree(staging.path, ignore_errors=True)
        raise


def _first_probes(run: Run, config: RunConfig, model) -> list[dict]:
    """The run's probes and evaluation at step 0, as training records them, and one attention snapshot."""
    from ..evaluate import eval_generator, exact_match
    from ..probes import ProbeContext, probe_names, run_probes
    from ..tasks import build_task
    from ..train import PROBE_SEED, save_snapshot

    task = build_task(config.task.name, config.task.params)
    batch = task.sample(config.probes.batch, torch.Generator().manual_seed(PROBE_SEED + config.train.seed),
                        train=False)
    result = run_probes(model, batch, probe_names(config.probes), config.probes.snapshot_examples,
                        context=ProbeContext(task, config))
    if result.arrays:
        save_snapshot(run, 0, result.arrays, batch.tokens, task.vocab)
    accuracy, loss = exact_match(model, task, config.train.eval_samples, eval_generator(config.train.seed))
    evaluation = [{"step": 0, "probe": name, "layer": -1, "head": -1, "length": -1, "value": value}
                  for name, value in (("exact_match", accuracy), ("eval_loss", loss))]
    return [{**row, "step": 0} for row in result.rows] + evaluation
