"""A model that cannot fit in memory is refused before anything is allocated: one line with its
parameter count and the memory it needs, exit 2, and no run folder left behind."""
import re

import pytest

from workbench.cli import main
from workbench.config import RunConfig
from workbench.memory import BYTES_PER_PARAMETER, parameter_count

TINY = ["task.max_digits=3", "model.n_layers=1", "model.d_model=16", "model.n_heads=2", "train.steps=4",
        "train.batch_size=8", "train.eval_samples=8", "probes.every=0"]


def test_a_huge_model_is_refused_in_one_line_before_allocating(data_dir, capsys):
    assert main(["train", "model.d_model=100000", "--quiet"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "parameters" in line and "available" in line and "100000" in line
    count = int(re.search(r"([\d,]+) parameters", line).group(1).replace(",", ""))
    assert count == parameter_count(RunConfig.load(None, ["model.d_model=100000"])) > 10 ** 11
    assert not any(data_dir.iterdir())  # refused before the run folder was made


@pytest.mark.parametrize("pos", ["learned", "coupling", "alibi"])
@pytest.mark.parametrize("mixer", ["attention", "mamba", "linear_attention"])
def test_the_parameter_count_is_the_built_models(mixer, pos):
    import torch

    from workbench.models import build_model
    from workbench.tasks import build_task

    config = RunConfig.load(None, [*TINY, f"model.mixer={mixer}", f"model.pos={pos}"])
    model = build_model(config.model, len(build_task(config.task.name, config.task.params).vocab), seed=0)
    assert parameter_count(config) == sum(p.numel() for p in model.parameters())
    # the count is taken without touching the random numbers the real model is built from
    state = torch.random.get_rng_state()
    parameter_count(config)
    assert torch.equal(state, torch.random.get_rng_state())


def test_the_check_compares_with_the_memory_available(data_dir, monkeypatch, capsys):
    config = RunConfig.load(None, TINY)
    needed = parameter_count(config) * BYTES_PER_PARAMETER
    monkeypatch.setenv("WORKBENCH_MEMORY_BYTES", str(needed - 1))
    assert main(["train", *TINY, "--quiet"]) == 2
    assert "memory is available" in capsys.readouterr().err
    monkeypatch.setenv("WORKBENCH_MEMORY_BYTES", str(needed))
    assert main(["train", *TINY, "--quiet"]) == 0
