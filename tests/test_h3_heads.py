"""H3's head dimension (model.head_dim): the default is H3 as it always was (same run ids, same
numbers); a larger one is the paper's multi-head form, checked here against its definition."""
from __future__ import annotations

import pytest
import torch

from workbench.circuits.interventions import patch, run_with_interventions
from workbench.config import RunConfig
from workbench.errors import ConfigError
from workbench.forms import model_fields
from workbench.models import MixerContext, build_model

VOCAB, T = 12, 10

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def h3_model(*overrides: str, layers: int = 2):
    config = RunConfig.load(None, ["model.mixer=h3", "model.d_model=16", "model.d_state=4",
                                   f"model.n_layers={layers}", *overrides])
    return build_model(config.model, VOCAB, seed=0).eval()


def tokens(batch: int = 3, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch, T), generator=torch.Generator().manual_seed(seed))


def test_the_default_keeps_every_run_id():
    # ids computed before model.head_dim existed: the shipped induction-heads runs use H3
    assert RunConfig.load(None, ["model.mixer=h3"]).run_id == "a86104c4e681"
    assert RunConfig.load(None, ["model.layers=attention,h3"]).run_id == "8da5094884db"
    config = RunConfig.load(None, ["model.mixer=h3", "model.head_dim=1"])
    assert config.run_id == "a86104c4e681" and "head_dim" not in config.canonical_json()
    assert RunConfig.load(None, ["model.mixer=h3", "model.head_dim=4"]).run_id != "a86104c4e681"


def test_the_default_has_todays_parameters():
    mixer = h3_model(layers=1).blocks[0].mixer
    shapes = {name: tuple(p.shape) for name, p in mixer.named_parameters()}
    assert shapes == {"qkv.weight": (48, 16), "qkv.bias": (48,), "shift_kernel": (16, 4),
                      "diagonal.log_dt": (16,), "diagonal.log_A_real": (16, 2), "diagonal.A_imag": (16, 2),
                      "diagonal.C": (16, 2, 2), "diagonal.D": (16,), "out_proj.weight": (16, 16),
                      "out_proj.bias": (16,)}


def multi_head_reference(mixer, x: torch.Tensor) -> torch.Tensor:
    """y (B, d, T) by the paper's definition: per head, position and key/value pair, the diagonal SSM
    of k~[i] v[j] read out by q[i], written as sums over earlier positions."""
    q, shifted, v = mixer.gates(x)
    B, _, length = q.shape
    e, H = mixer.head_dim, mixer.n_heads
    kernel = mixer.diagonal.kernel(length)
    y = torch.zeros_like(q)
    for h in range(H):
        heads = slice(h * e, (h + 1) * e)
        for t in range(length):
            state = sum(kernel[h, t - s] * shifted[:, heads, s, None] * v[:, None, heads, s] for s in range(t + 1))
            state = state + mixer.diagonal.D[h] * shifted[:, heads, t, None] * v[:, None, heads, t]
            y[:, heads, t] = torch.einsum("bi,bij->bj", q[:, heads, t], state)
    return y


def test_multi_head_follows_the_definition_and_its_map_reproduces_it():
    model = h3_model("model.head_dim=4", layers=1).double()
    mixer = model.blocks[0].mixer
    assert (mixer.n_heads, mixer.diagonal.D.shape) == (4, (4,))  # one SSM kernel and D per head
    x = torch.randn(2, T, 16, dtype=torch.float64)
    context = MixerContext(torch.arange(T).expand(2, -1), model.encoding)
    with torch.no_grad():
        captured = []
        with model.hooks({"blocks.0.mixer.hook_units": lambda value, point: captured.append(value)}):
            mixer(x, context)
        expected = multi_head_reference(mixer, x)
        M = mixer.attention_like_per_channel(x, context)
        _, _, v = mixer.gates(x)
    assert captured[0].shape == (2, T, 4, 4)  # units are the heads, width the head dimension
    layer = captured[0].reshape(2, T, 16).transpose(1, 2)
    torch.testing.assert_close(layer, expected, rtol=1e-9, atol=1e-10)
    assert M.shape == (2, 4, T, T) and (M.triu(diagonal=1) == 0).all()
    by_map = torch.einsum("bhts,bhjs->bhjt", M, v.view(2, 4, 4, T)).reshape(2, 16, T)
    torch.testing.assert_close(by_map, expected, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("length", [T, 300])  # 300: beyond FFT_ABOVE, where the layer keeps the state form
def test_multi_head_attention_form_equals_its_state_form(length):
    # training runs the attention form (y = M v, e times cheaper); a listened hook_state runs the states
    model = h3_model("model.head_dim=4", layers=1).double()
    mixer = model.blocks[0].mixer
    x = torch.randn(2, length, 16, dtype=torch.float64)
    with torch.no_grad():
        plain = mixer(x, None)
        with model.hooks({"blocks.0.mixer.hook_state": lambda value, point: None}):
            through_states = mixer(x, None)
    torch.testing.assert_close(plain, through_states, rtol=1e-9, atol=1e-10)


def test_multi_head_is_causal_and_differs_from_the_default():
    model, default = h3_model("model.head_dim=4"), h3_model()
    clean = tokens()
    changed = clean.clone()
    changed[:, 6:] = (clean[:, 6:] + 1) % VOCAB
    with torch.no_grad():
        before, after = model(clean), model(changed)
        assert not torch.allclose(before, default(clean))
    torch.testing.assert_close(after[:, :6], before[:, :6], rtol=0, atol=0)
    assert not torch.allclose(after[:, 6:], before[:, 6:])
    assert model.blocks[0].mixer.state_size(T) == 16 * 4 + 4 * 16 * 4  # shift window + 4 heads of 4 x 4 x d_state


def test_multi_head_state_is_per_head_key_by_value_and_patches_forward():
    model, clean = h3_model("model.head_dim=4"), tokens()
    other = clean.clone()
    other[:, 1] = (clean[:, 1] + 1) % VOCAB
    name = "blocks.0.mixer.hook_state"
    with torch.no_grad():
        plain_clean, cache = model.run_with_cache(clean, names=[name])
        before = model(other)
    assert cache[name].shape == (3, T, 4, 4, 4, 2, 2)  # (B, T, heads, key, value, d_state / 2, re/im)
    assert torch.equal(run_with_interventions(model, clean, [patch(name, cache)]), plain_clean)
    after = run_with_interventions(model, other, [patch(name, cache, positions=5)])
    assert torch.equal(after[:, :5], before[:, :5])
    assert not torch.allclose(after[:, 5:], before[:, 5:])


def test_bad_head_dimensions_name_the_field_and_what_is_allowed():
    divisor = r"model\.head_dim: invalid value 3; expected a divisor of model\.d_model \(16\)"
    with pytest.raises(ConfigError, match=divisor):
        RunConfig.load(None, ["model.mixer=h3", "model.d_model=16", "model.head_dim=3"])
    with pytest.raises(ConfigError, match=r"model\.head_dim: invalid value 0; expected an integer >= 1"):
        RunConfig.load(None, ["model.mixer=h3", "model.head_dim=0"])
    fields = {field.key: field for field in model_fields("h3")}
    assert fields["model.head_dim"].default in (1, "1") and "multi-head" in fields["model.head_dim"].help
