"""One training step's parameter gradients, for tests that check a same-numbers shortcut against torch's
own path: call it once, switch the shortcut off (monkeypatch), call it again, compare with torch.equal."""
from __future__ import annotations

import torch


def step_gradients(overrides: list[str], batch_size: int = 32) -> dict[str, torch.Tensor]:
    """{parameter name: gradient} of the trainer's loss on one fixed batch, from the seed-0 model."""
    from workbench.batch_stream import prepare, training_loss
    from workbench.config import RunConfig
    from workbench.models import model_for_task
    from workbench.tasks import task_for

    config = RunConfig.load(None, overrides)
    task = task_for(config.task)
    batch = prepare(task.sample(batch_size, torch.Generator().manual_seed(1)))
    model = model_for_task(config.model, task, seed=0)
    training_loss(model, batch).backward()
    return {name: p.grad for name, p in model.named_parameters() if p.grad is not None}


def assert_same_gradients(ours: dict, theirs: dict) -> None:
    assert ours.keys() == theirs.keys()
    for name in ours:
        assert torch.equal(ours[name], theirs[name]), name
