"""Small models for the interop tests (test_interop.py, test_interop_tools.py): workbench runs with
random weights written as training writes them, and transformers models saved with save_pretrained.

Weights are drawn far from any init, so the logits spread widely and a mapping error cannot hide in
near-uniform outputs. Nothing is downloaded."""
from __future__ import annotations

import json
import os

os.environ["HF_HUB_OFFLINE"] = "1"  # read when huggingface_hub is first imported: no hub, ever

import pytest  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

from workbench.config import RunConfig  # noqa: E402
from workbench.interop import packages  # noqa: E402  (see extra_or_skip)
from workbench.models import build_model  # noqa: E402
from workbench.store import METRIC_COLUMNS, Run, run_path  # noqa: E402
from workbench.tasks import build_task  # noqa: E402

WIDTH = dict(n_layers=2, d_model=32, n_heads=2, max_positions=64)
N_INPUTS, LENGTH = 1000, 16
SCALE = 0.3  # the random weights' size (randomize)
# Mamba's scan multiplies three products of its input (u, B and C, each through a 64-wide
# projection): at 0.3 the residual stream reaches ~2000 and float32 itself is off by ~4e-4 from
# float64 in the logits, in either library. At 0.2 the residual stays ~10, float32 is within
# ~1e-5, and the mixers still move the logits by ~1 on average.
MAMBA_SCALE = 0.2


def extra_or_skip(name: str):
    """The optional package, or skip the test when the interop extra is not installed. Not
    pytest.importorskip: imported before `packages` has put the installed `kernels` first,
    transformers could fail to import and the test would skip instead of fail."""
    if not packages.available(name):
        pytest.skip(f"{name} is not installed (the interop extra: pip install -e '.[interop]')")
    return packages.load(name, "tests")


def randomize(model: torch.nn.Module, seed: int = 0, scale: float = SCALE) -> torch.nn.Module:
    """Weights far from any init, so the logits spread widely and a mapping error cannot hide in
    near-uniform outputs: norms' gains around 1, everything else N(0, scale) (embeddings N(0, 1))."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator)
            if "norm" in name and name.endswith("weight"):
                parameter.copy_(1 + scale * noise)
            else:
                parameter.copy_(noise * (1.0 if "embed" in name or "table" in name else scale))
    return model.eval()


def stored_run(root, task: str = "copy", seed: int = 0, scale: float = SCALE, **model_options) -> Run:
    """A completed run with random weights of size `scale`, written as training writes one (no training)."""
    params = {"max_position": 40} if task == "copy" else {}
    config = RunConfig.from_dict({"task": {"name": task, **params}, "model": {**WIDTH, **model_options},
                                  "train": {"steps": 1, "seed": seed}})
    vocab_size = len(build_task(config.task.name, config.task.params).vocab)
    model = randomize(build_model(config.model, vocab_size, seed=seed), seed, scale)
    run = Run(run_path(config.run_id, root))
    run.path.mkdir(parents=True)
    (run.path / "config.json").write_text(json.dumps(config.to_dict()))
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(run.path / "model.safetensors"))
    run.write_metrics(pd.DataFrame(columns=METRIC_COLUMNS))  # a completed run has its metrics file, if empty
    run.write_status(status="completed", run_id=run.run_id, step=1, steps=1)
    return run


def random_inputs(vocab_size: int, n: int = N_INPUTS, length: int = LENGTH, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, vocab_size, (n, length), generator=torch.Generator().manual_seed(seed))


@torch.no_grad()
def hf_logits(hf_model, tokens: torch.Tensor) -> torch.Tensor:
    return hf_model(input_ids=tokens, attention_mask=torch.ones_like(tokens)).logits


def saved(transformers, tmp_path, config_class: str, model_class: str, scale: float = SCALE, **options):
    """A transformers model built from a config, randomized (as randomize does) and saved with save_pretrained."""
    config = getattr(transformers, config_class)(**options)
    model = getattr(transformers, model_class)(config)
    generator = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator)
            parameter.copy_(1 + scale * noise if ("ln" in name or "norm" in name) and name.endswith("weight")
                            else scale * noise)
    folder = tmp_path / model_class
    model.save_pretrained(folder)
    return model.eval(), folder


