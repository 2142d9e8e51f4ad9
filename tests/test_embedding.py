"""The models' embedding tables (workbench.models.embedding): torch's lookup forward, and a backward
through index_add_ that must give torch's own embedding gradient bit for bit, so that training
takes the same steps as with nn.Embedding (shipped results and their canaries depend on it)."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from workbench.models.embedding import Embedding, lookup

from step_gradients import assert_same_gradients, step_gradients

# (table rows, width, index shape): token tables, learned positions, and the (B, T, T) id-difference
# grids of the relative encodings, where torch's backward is slowest
SHAPES = [(15, 64, (128, 34)), (9, 4, (128, 34, 34)), (1024, 64, (16, 200)), (40, 128, (64, 64)),
          (9, 4, (8, 100, 100)), (3, 64, (256, 20)), (1, 8, (4, 5))]


def torch_gradient(weight, indices, grad):
    reference = weight.detach().clone().requires_grad_(True)
    F.embedding(indices, reference).backward(grad)
    return reference.grad


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("rows, width, shape", SHAPES)
def test_gradient_equals_torch_bit_for_bit(rows, width, shape, threads):
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        generator = torch.Generator().manual_seed(rows * width)
        indices = torch.randint(0, rows, shape, generator=generator)
        weight = torch.randn(rows, width, generator=generator, requires_grad=True)
        grad = torch.randn(*shape, width, generator=generator)
        out = lookup(weight, indices)
        assert torch.equal(out, F.embedding(indices, weight))
        out.backward(grad)
        assert torch.equal(weight.grad, torch_gradient(weight, indices, grad))
    finally:
        torch.set_num_threads(before)


def test_gradient_of_a_permuted_output_equals_torch():
    """The relative encodings permute the looked-up grid to (B, H, T, T): the gradient arrives strided."""
    generator = torch.Generator().manual_seed(0)
    indices = torch.randint(0, 9, (32, 20, 20), generator=generator)
    weight = torch.randn(9, 4, generator=generator, requires_grad=True)
    grad = torch.randn(32, 4, 20, 20, generator=generator)
    lookup(weight, indices).permute(0, 3, 1, 2).backward(grad)
    reference = weight.detach().clone().requires_grad_(True)
    F.embedding(indices, reference).permute(0, 3, 1, 2).backward(grad)
    assert torch.equal(weight.grad, reference.grad)


def test_a_module_is_an_nn_embedding_with_the_same_state():
    torch.manual_seed(0)
    ours = Embedding(10, 6)
    torch.manual_seed(0)
    theirs = nn.Embedding(10, 6)
    assert isinstance(ours, nn.Embedding)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight"]
    assert torch.equal(ours.weight, theirs.weight)
    indices = torch.tensor([[1, 2, 2, 9]])
    with torch.no_grad():
        assert torch.equal(ours(indices), theirs(indices))


def test_a_whole_training_step_matches_nn_embedding(monkeypatch):
    """coupling_relative (per-sample (B, T, T) lookups) on addition: every parameter's gradient equal."""
    from workbench.models import embedding as embedding_module

    overrides = ["task.name=addition", "task.max_digits=5", "model.n_layers=1", "model.d_model=32",
                 "model.pos=coupling_relative"]
    ours = step_gradients(overrides)
    monkeypatch.setattr(embedding_module, "lookup", lambda weight, indices: F.embedding(indices, weight))
    assert any("tables" in name for name in ours)
    assert_same_gradients(ours, step_gradients(overrides))
