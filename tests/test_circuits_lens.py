"""The logit lens and direct logit attribution, checked against the model's own logits."""
import pytest
import torch

from workbench.circuits.lens import direct_logit_attribution, logit_lens
from workbench.circuits.pairs import patching_pairs
from workbench.config import RunConfig
from workbench.models import build_model
from workbench.tasks import build_task


def setup(mixer="attention", *extra):
    config = RunConfig.load(None, ["task.name=induction", f"model.mixer={mixer}", "model.n_layers=2",
                                   "model.d_model=16", "model.n_heads=4", *extra])
    task = build_task(config.task.name, config.task.params)
    model = build_model(config.model, len(task.vocab), seed=0).eval()
    # biases and norm weights away from their initial 0 / 1, so a term left out would show
    torch.manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "norm" in name:
                p.add_(0.3 * torch.randn_like(p))
    return model, patching_pairs(task, 6, seed=2)


def final_difference(model, pairs):
    with torch.no_grad():
        logits = model(pairs.clean)[torch.arange(len(pairs)), pairs.answer_position]
    rows = torch.arange(len(pairs))
    return logits, float((logits[rows, pairs.answer] - logits[rows, pairs.wrong]).mean())


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_contributions_sum_to_the_final_logit_difference(norm):
    model, pairs = setup("attention", f"model.norm={norm}")
    table = direct_logit_attribution(model, pairs.clean, pairs.answer_position, pairs.answer, pairs.wrong)
    _, expected = final_difference(model, pairs)
    whole = table[table.component.isin(["embed", "mixer", "mlp", "norm_bias"])].contribution.sum()
    assert whole == pytest.approx(expected, abs=1e-4)
    assert abs(expected) > 1e-3  # a sum of zeros would pass too


def test_heads_add_up_to_their_mixer_but_its_output_bias():
    model, pairs = setup("attention")
    table = direct_logit_attribution(model, pairs.clean, pairs.answer_position, pairs.answer, pairs.wrong)
    heads = table[(table.component == "head") & (table.layer == 1)]
    assert list(heads.unit) == [0, 1, 2, 3]
    mixer = table[(table.component == "mixer") & (table.layer == 1)].contribution.item()
    only_bias = direct_logit_attribution_of_bias(model, pairs)
    assert heads.contribution.sum() + only_bias == pytest.approx(mixer, abs=1e-4)


def direct_logit_attribution_of_bias(model, pairs):
    """The layer-1 output projection's bias read through the frozen final norm."""
    from workbench.circuits.lens import FrozenNorm

    with torch.no_grad():
        _, cache = model.run_with_cache(pairs.clean, names=["blocks.1.hook_resid_post"])
        final = cache["blocks.1.hook_resid_post"][torch.arange(len(pairs)), pairs.answer_position]
        readout = FrozenNorm(model.norm_final, final)
        direction = model.unembed.weight[pairs.answer] - model.unembed.weight[pairs.wrong]
        bias = model.blocks[1].mixer.out.bias.expand(len(pairs), -1)
        return float((readout(bias) * direction).sum(-1).mean())


@pytest.mark.parametrize("mixer", ["attention", "mamba", "gru"])
def test_the_lens_at_the_last_stage_reads_the_final_logits(mixer):
    model, pairs = setup(mixer)
    lens = logit_lens(model, pairs.clean, pairs.answer_position, pairs.answer, pairs.wrong)
    assert list(lens.columns) == ["layer", "stage", "logit", "logit_diff", "rank"]
    assert list(lens.stage) == ["resid_pre", "resid_mid", "resid_pre", "resid_mid", "resid_post"]
    logits, expected = final_difference(model, pairs)
    last = lens.iloc[-1]
    assert last.logit_diff == pytest.approx(expected, abs=1e-5)
    assert last.logit == pytest.approx(float(logits[torch.arange(len(pairs)), pairs.answer].mean()), abs=1e-5)
    expected_rank = (logits > logits[torch.arange(len(pairs)), pairs.answer][:, None]).sum(1).float().mean()
    assert last["rank"] == pytest.approx(float(expected_rank))
    assert lens.iloc[0].logit_diff != pytest.approx(expected, abs=1e-5)  # the embeddings alone say something else
