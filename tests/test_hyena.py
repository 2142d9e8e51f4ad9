"""Hyena (mixers/hyena.py): causal at every length, its convolution and its map exact against direct
references, options checked, and it learns a small task through the ordinary training loop."""
from __future__ import annotations

import math

import pytest
import torch

from workbench.config import RunConfig
from workbench.errors import ConfigError
from workbench.forms import model_fields
from workbench.models import MixerContext, build_model
from workbench.models.mixers import s4d as s4d_module
from workbench.train import train

VOCAB = 12

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def hyena_model(*overrides: str, layers: int = 2):
    config = RunConfig.load(None, ["model.mixer=hyena", "model.d_model=16", f"model.n_layers={layers}", *overrides])
    return build_model(config.model, VOCAB, seed=0).eval()


def tokens(batch: int, length: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch, length), generator=torch.Generator().manual_seed(seed))


def no_context(x: torch.Tensor) -> MixerContext:
    return MixerContext(torch.arange(x.shape[1]).expand(x.shape[0], -1), None)


def direct_layer(mixer, x: torch.Tensor) -> torch.Tensor:
    """z_{N+1} (B, d, T) by the definition, one sum per output position: no Toeplitz matrix, no FFT."""
    v, gates = mixer.streams(x)
    h = mixer.filter(x.shape[1])
    z = v
    for n, gate in enumerate(gates):
        convolved = torch.stack([sum(h[n, :, t - s] * z[..., s] for s in range(t + 1)) for t in range(x.shape[1])], -1)
        z = gate * (convolved + mixer.bias[n, :, None] * z)
    return z


@pytest.mark.parametrize("fft", [False, True])
def test_later_tokens_never_change_earlier_outputs(fft, monkeypatch):
    if fft:  # the FFT path, padded to 2T: causal up to rounding
        monkeypatch.setattr(s4d_module, "FFT_ABOVE", 0)
    model = hyena_model()
    clean = tokens(3, 14)
    changed = clean.clone()
    changed[:, 8:] = (clean[:, 8:] + 1) % VOCAB
    with torch.no_grad():
        before, after = model(clean), model(changed)
    torch.testing.assert_close(after[:, :8], before[:, :8], rtol=0, atol=1e-5 if fft else 0.0)
    assert not torch.allclose(after[:, 8:], before[:, 8:])


def test_a_prefix_gives_the_same_outputs_as_the_whole_sequence():
    """The filters are functions of the absolute lag: a longer sequence changes no earlier output."""
    model = hyena_model()
    whole = tokens(2, 20)
    with torch.no_grad():
        torch.testing.assert_close(model(whole[:, :7]), model(whole)[:, :7], rtol=1e-5, atol=1e-6)


def layer_input_and_output(model, clean: torch.Tensor, layer: int = 0):
    """The mixer's input (the residual stream through its norm) and its output before out_proj, (B, d, T)."""
    names = [f"blocks.{layer}.hook_resid_pre", f"blocks.{layer}.mixer.hook_units"]
    with torch.no_grad():
        _, cache = model.run_with_cache(clean, names=names)
        x = model.blocks[layer].norm_mixer(cache[names[0]])
    return x, cache[names[1]][..., 0].transpose(1, 2)


@pytest.mark.parametrize("order", [1, 2, 3])
@pytest.mark.parametrize("fft", [False, True])
def test_the_layer_equals_the_direct_causal_convolution(order, fft, monkeypatch):
    if fft:
        monkeypatch.setattr(s4d_module, "FFT_ABOVE", 0)
    model = hyena_model(f"model.order={order}", layers=1).double()
    x, output = layer_input_and_output(model, tokens(2, 11))
    with torch.no_grad():
        expected = direct_layer(model.blocks[0].mixer, x)
    torch.testing.assert_close(output, expected, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("order", [1, 2, 3])
def test_the_map_applied_to_the_value_stream_is_the_layer(order):
    model = hyena_model(f"model.order={order}").double()
    mixer, clean = model.blocks[1].mixer, tokens(3, 10, seed=4)
    x, output = layer_input_and_output(model, clean, layer=1)
    with torch.no_grad():
        M = mixer.attention_like_per_channel(x, no_context(x))
        v, _ = mixer.streams(x)
        _, cache = model.run_with_cache(clean, names=["blocks.1.mixer.hook_pattern"])
    assert M.shape == (3, 16, 10, 10) and (M.triu(diagonal=1) == 0).all()
    torch.testing.assert_close(torch.einsum("bdts,bds->bdt", M, v), output, rtol=1e-9, atol=1e-10)
    torch.testing.assert_close(cache["blocks.1.mixer.hook_pattern"], M.abs().mean(dim=1, keepdim=True))


def test_the_filter_decays_and_reads_the_absolute_lag():
    mixer = hyena_model(layers=1).blocks[0].mixer
    with torch.no_grad():
        short, long = mixer.filter(8), mixer.filter(300)
    assert short.shape == (2, 16, 8) and long.shape == (2, 16, 300)
    torch.testing.assert_close(long[..., :8], short)
    # the fastest channel's window has fallen to 1% after FAST_REACH = 8 lags: its far taps are small
    assert long[:, 0, 100:].abs().max() < 1e-2 * long[:, 0].abs().max() + 1e-6


def test_options_are_checked_and_shown_with_their_help():
    model = hyena_model("model.order=3", "model.filter_width=8", "model.filter_bands=2", layers=1)
    mixer = model.blocks[0].mixer
    assert mixer.in_proj.out_features == 4 * 16 and mixer.filter.mlp[0].in_features == 5
    with pytest.raises(ConfigError, match=r"model\.order: invalid value 0; expected an integer from 1 to 8"):
        RunConfig.load(None, ["model.mixer=hyena", "model.order=0"])
    with pytest.raises(ConfigError, match=r"model\.filter_bands: invalid value 'many'; expected an integer"):
        RunConfig.load(None, ["model.mixer=hyena", "model.filter_bands=many"])
    fields = {field.key: field for field in model_fields("hyena")}
    assert {"model.order", "model.filter_width", "model.filter_bands"} <= set(fields)
    assert "gate" in fields["model.order"].help and "model.d_state" not in fields


def test_hyena_learns_copy_through_the_training_loop(data_dir):
    config = RunConfig.load(None, ["model.mixer=hyena", "task.name=copy", "task.max_length=4", "task.alphabet=5",
                                   "model.d_model=32", "model.n_layers=2", "train.steps=150", "train.batch_size=32",
                                   "train.lr=3e-3", "train.warmup=5", "train.eval_every=0", "train.eval_samples=64",
                                   "probes.every=0", "train.checkpoint_every=0"])
    losses = train(config, progress=False).metrics().query("probe == 'loss'").sort_values("step").value.tolist()
    assert all(math.isfinite(loss) for loss in losses)
    start, end = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    # an answer is one of 5 symbols or EOS: log(6) is a guess that ignores the input; copying beats it
    assert end < math.log(6) - 0.5 and end < start - 0.5, (start, end)
