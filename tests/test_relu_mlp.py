"""The fused ReLU MLP trains to the same numbers as the modules it replaces, bit for bit."""
import pytest
import torch
import torch.nn.functional as F
from test_model import make

from workbench.models.relu_mlp import relu_mlp


def logits_and_grads(model, batch, listen: bool):
    """A training forward and backward; listening to every hook_post sends the MLPs down the
    module path (relu, then fc_out), which is the reference."""
    model.zero_grad(set_to_none=True)
    listeners = {f"blocks.{i}.mlp.hook_post": (lambda value, hook: None) for i in range(len(model.blocks))}
    with model.hooks(listeners if listen else {}):
        logits = model(batch.tokens, batch.position_ids)
    F.cross_entropy(logits[batch.loss_mask], batch.targets[batch.loss_mask]).backward()
    return logits.detach(), {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("overrides", [[], ["model.sigma_reparam=true"], ["model.mlp_ratio=2", "model.n_layers=3"]])
def test_fused_path_matches_the_module_path_bitwise(overrides):
    _, task, model = make(*overrides)
    model.train()
    batch = task.sample(16, torch.Generator().manual_seed(0))
    start = {k: v.clone() for k, v in model.state_dict().items()}  # sigmaReparam updates u each forward
    fused_logits, fused_grads = logits_and_grads(model, batch, listen=False)
    model.load_state_dict(start)
    module_logits, module_grads = logits_and_grads(model, batch, listen=True)
    assert torch.equal(fused_logits, module_logits)
    assert fused_grads.keys() == module_grads.keys()
    mlp_weight = "blocks.0.mlp.fc_in.weight"
    assert mlp_weight in fused_grads and fused_grads[mlp_weight].abs().sum() > 0
    for name in fused_grads:
        assert torch.equal(fused_grads[name], module_grads[name]), name


def test_gradients_agree_with_finite_differences():
    generator = torch.Generator().manual_seed(0)
    x, w_in, b_in, w_out, b_out = (torch.randn(*shape, dtype=torch.float64, generator=generator, requires_grad=True)
                                   for shape in [(2, 3, 4), (6, 4), (6,), (4, 6), (4,)])
    assert torch.autograd.gradcheck(relu_mlp, (x, w_in, b_in, w_out, b_out))


def test_listeners_still_see_the_activations():
    _, task, model = make()
    model.train()
    batch = task.sample(4, torch.Generator().manual_seed(0))
    seen = []
    with model.hooks({"blocks.0.mlp.hook_post": lambda value, hook: seen.append(value)}):
        model(batch.tokens, batch.position_ids).sum().backward()
    assert len(seen) == 1 and seen[0].shape[-1] == model.blocks[0].mlp.fc_in.out_features
    assert seen[0].min() >= 0
