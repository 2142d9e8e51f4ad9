"""Probes on hand-built inputs, probes never change a model, the model options they need, and
entropy vs length through the kernel dispatcher."""
import json
import math

import pytest
import torch

from workbench.analysis import load_model
from workbench.cli import main
from workbench.config import RunConfig
from workbench.models import build_model
from workbench.models.linear import SigmaReparamLinear
from workbench.probes import ProbeContext, entropy_vs_length, run_probes
from workbench.probes.attention import entropy_summary, row_entropy
from workbench.probes.memorization import (greedy_extraction, memorization_capacity, table_bits,
                                           teacher_forced_match)
from workbench.probes.outliers import attention_shares, delimiter_ids, kurtosis
from workbench.probes.spectral import query_key_products
from workbench.store import open_run
from workbench.tasks import build_task
from workbench.tasks.labels import randomize_labels
from workbench.train import train

ALL_PROBES = ["entropy", "sparsity", "max_logit", "spectral_norm", "outliers", "memorization"]


def setup(*overrides, task="copy"):
    config = RunConfig.load(None, [f"task.name={task}", "model.d_model=32", "model.n_heads=2",
                                   "train.batch_size=16", *overrides])
    task = build_task(config.task.name, config.task.params)
    model = build_model(config.model, len(task.vocab), seed=0)
    return config, task, model


def causal_uniform(T: int, heads: int = 1) -> torch.Tensor:
    mask = torch.ones(T, T).tril()
    return (mask / mask.sum(-1, keepdim=True)).expand(1, heads, T, T)


# --- entropy on hand-built maps -------------------------------------------------------------------
def test_entropy_of_uniform_rows_is_log_n_and_of_one_hot_is_zero():
    T = 7
    entropy = row_entropy(causal_uniform(T))[0, 0]
    assert torch.allclose(entropy, torch.log(torch.arange(1, T + 1).float()), atol=1e-6)
    raw, normalized = entropy_summary(causal_uniform(T, 3), torch.ones(1, T, dtype=torch.bool))
    assert torch.allclose(normalized, torch.ones(3), atol=1e-6)
    assert torch.allclose(raw, torch.log(torch.arange(1, T + 1).float()).mean().expand(3), atol=1e-6)
    one_hot = torch.zeros(1, 1, T, T)
    one_hot[..., 0] = 1
    raw, normalized = entropy_summary(one_hot, torch.ones(1, T, dtype=torch.bool))
    assert float(raw) == 0 and float(normalized) == 0


def test_padding_queries_do_not_count():
    T = 5
    pattern = causal_uniform(T).clone()
    pattern[..., 3:, :] = 0
    pattern[..., 3:, 0] = 1  # padded rows: one-hot, would pull the mean down if counted
    valid = torch.tensor([[True, True, True, False, False]])
    raw, _ = entropy_summary(pattern, valid)
    assert math.isclose(float(raw), (math.log(1) + math.log(2) + math.log(3)) / 3, rel_tol=1e-6)


# --- outliers -------------------------------------------------------------------------------------
def test_kurtosis_of_a_gaussian_is_three_and_grows_with_outliers():
    values = torch.randn(200_000, generator=torch.Generator().manual_seed(0))
    assert abs(float(kurtosis(values)) - 3.0) < 0.1
    values[:20] = 200.0
    assert float(kurtosis(values)) > 30


def test_attention_parked_on_the_first_token_is_counted_as_no_op():
    tokens = torch.tensor([[1, 5, 6, 14, 7, 2]])  # ^ a b = c $
    parked = torch.zeros(1, 2, 6, 6)
    parked[:, 0, :, 0] = 1  # head 0: everything on BOS
    parked[:, 1] = causal_uniform(6)[0, 0]  # head 1: uniform
    first, delimited = attention_shares(parked, tokens, [1, 2, 14])
    assert math.isclose(float(first[0]), 1.0) and math.isclose(float(delimited[0]), 1.0)
    expected_first = sum(1 / (i + 1) for i in range(1, 6)) / 5
    assert math.isclose(float(first[1]), expected_first, rel_tol=1e-6)
    vocab = build_task("copy", {}).vocab
    assert [vocab.symbols[i] for i in delimiter_ids(vocab)] == ["^", "$", "="]


# --- spectral norms and sigma_reparam -------------------------------------------------------------
def test_spectral_probe_matches_matrix_norm():
    config, task, model = setup()
    rows = run_probes(model, task.sample(4, torch.Generator().manual_seed(0)), ["spectral_norm"]).rows
    value = {(r["probe"], r["layer"], r["head"]): r["value"] for r in rows}
    mixer = model.blocks[1].mixer
    D, H = 32, 2
    weight = mixer.qkv.weight.detach()
    for head in range(H):
        wq = weight[head * D // H:(head + 1) * D // H]
        wk = weight[D + head * D // H:D + (head + 1) * D // H]
        expected = torch.linalg.matrix_norm(wq.t() @ wk, ord=2)
        assert math.isclose(value[("qk_spectral_norm", 1, head)], float(expected), rel_tol=1e-4)
    fc_in = torch.linalg.matrix_norm(model.blocks[0].mlp.fc_in.weight.detach(), ord=2)
    assert math.isclose(value[("spectral_norm_mlp_fc_in", 0, -1)], float(fc_in), rel_tol=1e-5)
    assert query_key_products(mixer).shape == (H, D, D)


def test_sigma_reparam_covers_every_linear_layer_including_gate_and_unembedding():
    _, _, model = setup("model.sigma_reparam=true", "model.gated_attention=true")
    linears = [name for name, m in model.named_modules() if isinstance(m, torch.nn.Linear)]
    assert "unembed" in linears and "blocks.0.mixer.gate" in linears
    assert all(isinstance(m, SigmaReparamLinear) for m in model.modules() if isinstance(m, torch.nn.Linear))


def test_sigma_reparam_power_iteration_one_step_per_training_forward_and_converges():
    torch.manual_seed(0)
    layer = SigmaReparamLinear(24, 16)
    with torch.no_grad():
        layer.weight.add_(torch.randn(16, 24))  # move W away from the SVD taken at construction
    true_norm = float(torch.linalg.matrix_norm(layer.weight.detach(), ord=2))
    x = torch.randn(3, 24)
    layer.eval()
    u = layer.u.clone()
    layer(x)
    assert torch.equal(layer.u, u)  # evaluation never advances the iteration
    layer.train()
    layer(x)
    v = torch.nn.functional.normalize(layer.weight @ u, dim=0)
    assert torch.allclose(layer.u, torch.nn.functional.normalize(layer.weight.t() @ v, dim=0))  # exactly one step
    first_error = abs(float(layer.spectral_norm().detach()) - true_norm)
    for _ in range(200):
        layer(x)
    assert abs(float(layer.spectral_norm().detach()) - true_norm) < 1e-3 * true_norm
    assert abs(float(layer.spectral_norm().detach()) - true_norm) <= first_error
    effective = torch.linalg.matrix_norm(layer.effective_weight().detach(), ord=2)
    assert math.isclose(float(effective), abs(float(layer.gamma.detach())), rel_tol=1e-3)


def test_probes_do_not_advance_sigma_reparam():
    config, task, model = setup("model.sigma_reparam=true")
    model.train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    run_probes(model, task.sample(4, torch.Generator().manual_seed(0)), ALL_PROBES, 1,
               context=ProbeContext(task, config))
    assert model.training
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


# --- clipped softmax, gated attention, random labels ----------------------------------------------
def test_clipped_softmax_outputs_exact_zeros():
    config, task, model = setup("model.softmax=clipped", "task.max_length=30", "model.pos=rope")
    batch = task.sample(4, torch.Generator().manual_seed(0), length=30)
    _, cache = model.run_with_cache(batch.tokens, names=["blocks.0.mixer.hook_pattern"])
    pattern = cache["blocks.0.mixer.hook_pattern"]
    causal = torch.ones_like(pattern[0, 0], dtype=torch.bool).tril()
    assert bool((pattern[..., causal] == 0).any())  # near-uniform rows over > 34 keys clip to 0
    assert float(pattern.min()) >= 0 and float(pattern.max()) <= 1


def test_gated_attention_can_close_a_layer():
    config, task, model = setup("model.gated_attention=true")
    mixer = model.blocks[0].mixer
    x = torch.randn(2, 5, 32)
    with torch.no_grad():
        mixer.gate.weight.zero_()
        mixer.gate.bias.fill_(-60.0)  # sigmoid -> 0: the heads add nothing
        out = mixer(x, _context(model, 5))
    assert torch.allclose(out, mixer.out.bias.expand_as(out), atol=1e-6)


def _context(model, T):
    from workbench.models.mixers import MixerContext

    tokens = torch.ones(2, T, dtype=torch.long)
    return MixerContext(model.encoding.positions(tokens, None), model.encoding)


def test_random_labels_are_fixed_per_prompt_and_replace_only_answers():
    task = build_task("addition", {"max_digits": 3})
    batch = task.sample(64, torch.Generator().manual_seed(0))
    random = randomize_labels(batch, len(task.vocab), seed=0)
    again = randomize_labels(batch, len(task.vocab), seed=0)
    assert torch.equal(random.targets, again.targets)
    assert torch.equal(random.targets[~batch.loss_mask], batch.targets[~batch.loss_mask])
    assert float((random.targets[batch.loss_mask] != batch.targets[batch.loss_mask]).float().mean()) > 0.5
    assert int(random.targets[batch.loss_mask].min()) >= 3  # never PAD, BOS or EOS


# --- probes never change outputs ------------------------------------------------------------------
@pytest.mark.parametrize("options", [[], ["model.sigma_reparam=true", "model.softmax=clipped"],
                                     ["model.gated_attention=true", "model.pos=alibi"]])
def test_probes_never_change_logits(options):
    config, task, model = setup(*options)
    batch = task.sample(6, torch.Generator().manual_seed(2))
    model.eval()
    with torch.no_grad():
        before = model(batch.tokens, batch.position_ids)
    result = run_probes(model, batch, ALL_PROBES, 2, context=ProbeContext(task, config))
    with torch.no_grad():
        after = model(batch.tokens, batch.position_ids)
    assert torch.equal(before, after)
    assert {"qk_spectral_norm", "kurtosis", "memorization_train_exact_match", "mlp_nonzero_fraction"} <= \
        {r["probe"] for r in result.rows}
    assert all(math.isfinite(r["value"]) for r in result.rows)


def test_training_with_every_probe_gives_the_same_weights(tmp_path):
    base = ["task.name=addition", "task.max_digits=3", "model.n_layers=1", "model.d_model=16", "model.n_heads=2",
            "train.steps=6", "train.batch_size=8", "train.eval_every=0", "probes.batch=4"]
    quiet = train(RunConfig.load(None, base + ["probes.every=0"]), progress=False, root=tmp_path)
    probed = train(RunConfig.load(None, base + ["probes.every=2", "probes.extra=" + ",".join(ALL_PROBES)]),
                   progress=False, root=tmp_path)
    a, _ = load_model(quiet)
    b, _ = load_model(probed)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    probes = set(probed.metrics().probe)
    assert {"spectral_norm_max", "max_abs_activation", "memorization_extraction"} <= probes


# --- memorization ---------------------------------------------------------------------------------
class Peeker(torch.nn.Module):
    """Not causal: predicts position t from input t + 1, so it is perfect only when the answer is
    in its input (teacher forcing) and useless when it must write the answer itself."""

    def __init__(self, vocab_size):
        super().__init__()
        self.vocab_size = vocab_size

    def forward(self, tokens, position_ids=None):
        ahead = torch.cat([tokens[:, 1:], torch.full_like(tokens[:, :1], 2)], 1)  # EOS after the end
        return torch.nn.functional.one_hot(ahead, self.vocab_size).float()


def test_greedy_extraction_never_sees_the_answer():
    task = build_task("copy", {})
    batch = task.sample(8, torch.Generator().manual_seed(0))
    batch.tokens[batch.tokens == 0] = 2  # no padding in the way of the peeker's EOS
    peeker = Peeker(len(task.vocab))
    assert bool(teacher_forced_match(peeker, batch).all())
    assert not bool(greedy_extraction(peeker, batch).any())


def test_greedy_extraction_equals_teacher_forcing_for_a_causal_model():
    config, task, model = setup(task="memorize")
    table = task.table()
    assert torch.equal(greedy_extraction(model, table), teacher_forced_match(model, table))


def test_memorization_capacity_and_bits():
    params = build_task("memorize", {"table_size": 32, "n_values": 16, "value_length": 2}).params
    assert table_bits(params) == 32 * 2 * 4
    results = [{"table_size": 16, "accuracy": 1.0, "bits": 64.0, "n_parameters": 100},
               {"table_size": 32, "accuracy": 1.0, "bits": 128.0, "n_parameters": 100},
               {"table_size": 64, "accuracy": 0.9, "bits": 256.0, "n_parameters": 100}]
    assert memorization_capacity(results) == {"largest_perfect_table": 32, "bits": 128.0, "bits_per_parameter": 1.28}
    assert memorization_capacity(results[2:])["largest_perfect_table"] == 0


def test_memorization_probe_reports_the_table_for_the_memorize_task():
    config, task, model = setup(task="memorize")
    rows = run_probes(model, task.sample(4, torch.Generator().manual_seed(0)), ["memorization"],
                      context=ProbeContext(task, config)).rows
    values = {r["probe"]: r["value"] for r in rows}
    assert 0 <= values["memorization_table_exact_match"] <= 1
    with pytest.raises(ValueError, match="ProbeContext"):
        run_probes(model, task.sample(4, torch.Generator().manual_seed(0)), ["memorization"])


def test_sparsity_stores_the_per_neuron_activity_distribution():
    config, task, model = setup()
    result = run_probes(model, task.sample(4, torch.Generator().manual_seed(0)), ["sparsity"])
    activity = result.arrays["neuron_activity.0"]
    assert activity.shape == (128,) and float(activity.min()) >= 0 and float(activity.max()) <= 1
    assert bool((activity[:-1] >= activity[1:]).all())
    assert run_probes(model, task.sample(4, torch.Generator().manual_seed(0)), ["sparsity"], arrays=False).arrays == {}


# --- entropy through the kernel dispatcher --------------------------------------------------------
@pytest.mark.parametrize("pos", ["rope", "alibi", "t5_bias", "fire", "nope"])
def test_kernel_entropy_matches_the_map_and_keeps_the_output(pos):
    config, task, model = setup(f"model.pos={pos}", "model.logit_scaling=true")
    model.eval()
    batch = task.sample(5, torch.Generator().manual_seed(3))
    with torch.no_grad():
        plain = model(batch.tokens)
        found = {}
        with model.hooks({"blocks.1.mixer.hook_entropy": lambda v, h: found.setdefault("kernel", v)}):
            through_kernel = model(batch.tokens)
        _, cache = model.run_with_cache(batch.tokens, names=["blocks.1.mixer.hook_pattern"])
    assert torch.allclose(plain, through_kernel, atol=1e-5)
    assert torch.allclose(found["kernel"], row_entropy(cache["blocks.1.mixer.hook_pattern"]), atol=1e-4)


def test_entropy_vs_length_agrees_with_the_entropy_probe():
    config, task, model = setup("model.pos=rope")
    rows = entropy_vs_length(model, task, [4, 9], n=3, seed=0)
    assert {r["length"] for r in rows} == {4, 9} and {r["probe"] for r in rows} == {"entropy", "entropy_normalized"}
    from workbench.evaluate import eval_generator

    batch = task.sample(3, eval_generator(0, 9), length=9, train=False)
    probe = run_probes(model, batch, ["entropy"]).rows
    expected = {(r["probe"], r["layer"], r["head"]): r["value"] for r in probe}
    for r in rows:
        if r["length"] == 9:
            assert math.isclose(r["value"], expected[(r["probe"], r["layer"], r["head"])], rel_tol=1e-4)


def test_cli_eval_length_entropy_stores_rows_and_show_lists_new_probes(data_dir, capsys):
    overrides = ["task.name=copy", "model.pos=rope", "model.n_layers=1", "model.d_model=16", "model.n_heads=2",
                 "train.steps=4", "train.batch_size=8", "train.eval_samples=8", "probes.every=2", "probes.batch=4",
                 "probes.extra=spectral_norm,outliers,memorization,max_logit"]
    assert main(["train", *overrides, "--quiet"]) == 0
    run_id = capsys.readouterr().out.strip().splitlines()[-1]
    assert main(["eval-length", run_id, "--lengths", "5,40", "--n", "4", "--entropy", "--entropy-n", "2",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["entropy"]) == {"5", "40"} and out["entropy"]["40"]["0"] > out["entropy"]["5"]["0"]
    stored = open_run(run_id).metrics()
    assert set(stored[(stored.probe == "entropy") & (stored.length > 0)].length) == {5, 40}
    assert main(["show", run_id, "--json"]) == 0
    probes = json.loads(capsys.readouterr().out)["probes"]
    assert {"entropy", "qk_spectral_norm", "kurtosis", "max_abs_activation", "noop_head_fraction",
            "mlp_nonzero_fraction", "max_logit"} <= set(probes)


@pytest.mark.slow
def test_entropy_at_16k_tokens_runs_on_the_cpu():
    config, task, model = setup("model.pos=rope", "model.n_layers=1", "task.max_length=8200", "task.max_position=8201")
    rows = entropy_vs_length(model, task, [8100], n=1)
    normalized = [r["value"] for r in rows if r["probe"] == "entropy_normalized"]
    assert all(0.9 < v <= 1.0 + 1e-4 for v in normalized)  # an untrained model attends almost uniformly
