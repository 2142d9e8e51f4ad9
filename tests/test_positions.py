"""Positional encodings: RoPE is relative, relative biases are causal and finite far beyond
training, every encoding builds a model that evaluates at 4x the training length of addition."""
from __future__ import annotations

import math

import pytest
import torch

from workbench.config import RunConfig
from workbench.coupled_ids import LEVEL_STRIDE, SHIFTED_ROW, pack
from workbench.errors import ConfigError
from workbench.models import POSITIONS, build_model
from workbench.models.positions_relative import t5_buckets
from workbench.tasks import build_task

ALL = POSITIONS.names()
SMALL = ["model.n_layers=2", "model.d_model=32", "model.n_heads=2", "task.max_digits=5"]


def config_for(pos, *extra):
    return RunConfig.load(None, [f"model.pos={pos}", *SMALL, *extra])


def model_and_task(pos, *extra):
    config = config_for(pos, *extra)
    task = build_task(config.task.name, config.task.params)
    return build_model(config.model, len(task.vocab), seed=0), task


def test_every_issue_encoding_is_registered():
    assert {"learned", "sinusoidal", "nope", "rope", "alibi", "t5_bias", "fire", "randomized",
            "coupling", "abacus"} <= set(ALL)


def test_rope_scores_depend_only_on_relative_position():
    model, _ = model_and_task("rope")
    q, k = torch.randn(2, 2, 9, 16), torch.randn(2, 2, 9, 16)
    positions = torch.arange(9).expand(2, 9)

    def scores(shift):
        rq, rk = model.encoding.rotate(q, k, positions + shift)
        return rq @ rk.transpose(-1, -2)

    for shift in (1, 17, 500):
        assert torch.allclose(scores(0), scores(shift), atol=1e-4)


@pytest.mark.parametrize("pos", ["alibi", "t5_bias", "fire"])
def test_relative_biases_are_finite_and_relative_at_long_lengths(pos):
    model, _ = model_and_task(pos)
    T = 512
    positions = torch.arange(T).expand(3, T)
    for layer in range(2):
        bias = model.encoding.bias(layer, positions)
        assert bias.shape[1:] == (2, T, T) and bias.shape[0] in (1, 3)
        assert torch.isfinite(bias).all()
        lower = torch.ones(T, T, dtype=torch.bool).tril()
        if pos != "fire":  # ALiBi and T5 depend on i - j only: constant along each diagonal
            assert torch.allclose(bias[0, :, 100, 90], bias[0, :, 400, 390])
        # the future never differs from distance 0, and the attention mask removes it anyway
        assert torch.equal(bias[0][:, ~lower], bias[0, :, 0, 0][:, None].expand(2, int((~lower).sum())))


@pytest.mark.parametrize("pos", ALL)
def test_the_model_is_causal_with_every_encoding(pos):
    model, task = model_and_task(pos)
    model.eval()
    batch = task.sample(2, torch.Generator().manual_seed(0), length=4, train=False)
    changed = batch.tokens.clone()
    changed[:, 8:] = torch.randint(3, len(task.vocab), changed[:, 8:].shape)
    with torch.no_grad():
        before = model(batch.tokens, batch.position_ids)
        after = model(changed, batch.position_ids)
    assert torch.allclose(before[:, :8], after[:, :8], atol=1e-5)


@pytest.mark.parametrize("pos", ALL)
@pytest.mark.parametrize("scaling", ["none", "logit_scaling", "scalable_softmax"])
def test_every_encoding_evaluates_at_four_times_the_training_length(pos, scaling):
    model, task = model_and_task(pos, *([f"model.{scaling}=true"] if scaling != "none" else []))
    model.eval()
    length = 4 * task.train_lengths()[1]
    batch = task.sample(4, torch.Generator().manual_seed(1), length=length, train=False)
    with torch.no_grad():
        logits = model(batch.tokens, batch.position_ids)
    assert logits.shape == (*batch.tokens.shape, len(task.vocab)) and torch.isfinite(logits).all()


@pytest.mark.parametrize("pos", ["fire", "t5_bias", "randomized", "abacus"])
def test_new_encodings_train(pos):
    model, task = model_and_task(pos)
    model.train()
    batch = task.sample(8, torch.Generator().manual_seed(0))
    logits = model(batch.tokens, batch.position_ids)
    loss = torch.nn.functional.cross_entropy(logits[batch.loss_mask], batch.targets[batch.loss_mask])
    loss.backward()
    grads = [p.grad for p in model.encoding.parameters()]
    assert grads and all(g is not None and torch.isfinite(g).all() for g in grads)
    if pos == "fire":
        assert model.encoding.layers[0].c.grad.abs() > 0


def test_t5_buckets_are_exact_near_and_logarithmic_far():
    distance = torch.arange(2000)
    buckets = t5_buckets(distance)
    assert torch.equal(buckets[:16], torch.arange(16))
    assert (buckets.diff() >= 0).all() and int(buckets.max()) == 31 and int(buckets[16]) == 16 and int(buckets[100]) < 31
    assert int(buckets[128]) == 31 and int(buckets[1999]) == 31


def test_fire_follows_the_recipe_at_init():
    model, _ = model_and_task("fire")
    fire = model.encoding.layers[0]
    assert fire.c.item() == pytest.approx(0.1) and fire.L_multiplier.item() == 1.0
    assert fire.mlp[0].in_features == 1 and fire.mlp[0].out_features == 32 and fire.mlp[2].out_features == 2
    positions = torch.arange(6)[None]
    bias = fire(positions)
    psi = lambda x: torch.log(torch.abs(0.1 * x) + 1.0)  # noqa: E731
    i, j = 5, 2
    x = psi(torch.tensor(float(i - j))) / (psi(torch.tensor(512.0)) + 1e-6)
    assert torch.allclose(bias[0, :, i, j], fire.mlp(x.view(1, 1))[0], atol=1e-6)


def test_randomized_positions():
    model, _ = model_and_task("randomized", "model.max_positions=64")
    tokens = torch.ones(5, 20, dtype=torch.long)
    model.train()
    drawn = model.encoding.positions(tokens, None)
    assert (drawn.diff(dim=1) > 0).all() and int(drawn.max()) < 64 and int(drawn.min()) >= 0
    assert not torch.equal(drawn, model.encoding.positions(tokens, None)), "fresh subsets in training"
    model.eval()
    fixed = model.encoding.positions(tokens, None)
    assert (fixed.diff(dim=1) > 0).all() and torch.equal(fixed, model.encoding.positions(tokens, None))
    with pytest.raises(Exception, match="max_positions"):
        model.encoding.positions(torch.ones(1, 65, dtype=torch.long), None)


def test_two_level_coupling_adds_one_table_per_level():
    model, _ = model_and_task("coupling")
    encoding = model.encoding
    ids = torch.tensor([[0, 3, 3 + LEVEL_STRIDE, 3 + 2 * LEVEL_STRIDE]])
    embedded = encoding.embed(ids)
    table, levels = encoding.table.weight, encoding.levels.weight
    for column, (significance, level) in enumerate([(0, 0), (3, 0), (3, 1), (3, 2)]):
        assert torch.allclose(embedded[0, column], table[significance] + levels[level])


def test_the_third_id_adds_rows_of_its_own_and_nothing_where_absent():
    model, _ = model_and_task("coupling")
    encoding = model.encoding
    ids = torch.tensor([[pack(0), pack(3, 1), pack(3, 1, 5), pack(0, 2, 7)]])
    embedded = encoding.embed(ids)
    table, levels = encoding.table.weight, encoding.levels.weight
    for column, (significance, level, shifted) in enumerate([(0, 0, 0), (3, 1, 0), (3, 1, 5), (0, 2, 7)]):
        expected = table[significance] + levels[level] + (table[SHIFTED_ROW + shifted] if shifted else 0)
        assert torch.allclose(embedded[0, column], expected)
    with pytest.raises(ConfigError, match="task.max_position"):
        encoding.embed(torch.tensor([[pack(SHIFTED_ROW, 0, 1)]]))


def test_the_scratchpad_setting_keeps_the_ids_of_runs_stored_before_it():
    default = RunConfig.load(None, ["task.name=multiplication", "model.pos=coupling"])
    assert "scratchpad" not in default.canonical_json(), "runs stored before the setting keep their ids"
    assert default.run_id == RunConfig.load(None, ["task.name=multiplication", "model.pos=coupling",
                                                   "task.scratchpad=running"]).run_id


def test_coupling_relative_reads_each_significance_field_between_tokens_that_carry_it():
    model, _ = model_and_task("coupling_relative")
    encoding, clip = model.encoding, model.encoding.CLIP

    def f(layer: int, difference: int) -> torch.Tensor:  # the learned function of key - query, per head
        near = encoding.tables[layer].weight[max(-clip, min(clip, difference)) + clip]
        return near - torch.nn.functional.softplus(encoding.slopes[layer]) * max(abs(difference) - clip, 0)

    fields = [(0, 0, 0), (5, 0, 0), (0, 1, 3), (6, 1, 4), (0, 2, 9), (7, 1, 2)]  # (significance, level, shifted)
    ids = torch.tensor([[pack(*field) for field in fields]])
    with torch.no_grad():
        for layer in (0, 1):
            bias = encoding.bias(layer, ids)[0]  # (H, query, key)
            for q, (sig_q, _, shift_q) in enumerate(fields):
                for k, (sig_k, _, shift_k) in enumerate(fields):
                    expected = torch.zeros(encoding.n_heads)
                    if sig_q and sig_k:
                        expected = expected + f(layer, sig_k - sig_q)
                    if shift_q and shift_k:
                        expected = expected + f(layer, shift_k - shift_q)
                    assert torch.allclose(bias[:, q, k], expected, atol=1e-6), (q, k)
            # the attention kernels ask for tiles of queries followed by keys: a tile of tokens without a
            # shifted id is still read as part of a three-id sequence
            rows, cols = torch.tensor([1, 3]), torch.tensor([0, 1])
            tile = encoding.bias(layer, torch.cat([ids[:, rows], ids[:, cols]], 1))[0, :, :2, 2:]
            assert torch.allclose(tile, bias[:, rows][:, :, cols], atol=1e-6)


def test_multi_operand_and_multiplication_run_with_coupling():
    for name, extra in (("multi_operand_addition", []), ("multiplication", []),
                        ("multiplication", ["task.scratchpad=partial_products"]),
                        ("multiplication", ["task.scratchpad=partial_products", "model.pos=coupling_relative"])):
        config = RunConfig.load(None, ["model.pos=coupling", f"task.name={name}", *SMALL[:3], *extra])
        task = build_task(name, config.task.params)
        model = build_model(config.model, len(task.vocab), seed=0).eval()
        batch = task.sample(3, torch.Generator().manual_seed(0), length=2 * task.train_lengths()[1], train=False)
        with torch.no_grad():
            assert torch.isfinite(model(batch.tokens, batch.position_ids)).all()


def test_allocator_tuning_can_be_turned_off(monkeypatch):
    from workbench.models.allocator import tune_allocator

    monkeypatch.setenv("WORKBENCH_MALLOC_TUNING", "0")
    assert tune_allocator() is False


def test_coupling_relative_bias_follows_the_id_difference_and_falls_beyond_the_clip():
    model, task = model_and_task("coupling_relative")
    encoding, clip = model.encoding, model.encoding.CLIP
    ids = torch.arange(40)[None]
    bias = encoding.bias(0, ids)[0]  # (H, query, key)
    assert torch.allclose(encoding.bias(0, ids + 13)[0], bias), "a shift of every id changes nothing"
    assert torch.allclose(bias[:, 10, 12], bias[:, 20, 22]) and not torch.allclose(bias[:, 10, 12], bias[:, 12, 10])
    far = bias[:, 30, :30 - clip + 1].flip(-1)  # keys ever further below the query, from the clip on
    assert (far.diff(dim=1) < 0).all(), "beyond the clip every extra id lowers the score"
    assert torch.isfinite(encoding.bias(0, torch.arange(2000)[None])).all()
    batch = task.sample(1, torch.Generator().manual_seed(0), length=4, train=False)
    assert encoding.embed(batch.position_ids) is None, "single-level ids act through the bias alone"
    two_level = torch.tensor([[0, 3, 3 + LEVEL_STRIDE]])
    assert not torch.allclose(encoding.embed(two_level)[0, 1], encoding.embed(two_level)[0, 2])
    assert torch.allclose(encoding.bias(0, two_level)[0, :, 1, 2], encoding.bias(0, two_level)[0, :, 1, 1])


def test_coupling_relative_trains_its_tables_and_slopes():
    model, task = model_and_task("coupling_relative", "task.max_digits=10")
    batch = task.sample(16, torch.Generator().manual_seed(0), length=10)
    logits = model(batch.tokens, batch.position_ids)
    torch.nn.functional.cross_entropy(logits[batch.loss_mask], batch.targets[batch.loss_mask]).backward()
    assert model.encoding.tables[0].weight.grad.abs().sum() > 0 and model.encoding.slopes.grad.abs().sum() > 0


@pytest.mark.parametrize("n_heads, slopes", [
    # Press et al. 2022 (arXiv 2108.12409), the authors' get_slopes: a power of two gives 2^(-8/n), 2^(-16/n), ...;
    # otherwise the slopes of the power of two below, then every other slope of twice that power
    (3, [2 ** -4, 2 ** -8, 2 ** -2]),
    (6, [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8, 2 ** -1, 2 ** -3]),
    (8, [2 ** -1, 2 ** -2, 2 ** -3, 2 ** -4, 2 ** -5, 2 ** -6, 2 ** -7, 2 ** -8]),
    (12, [2 ** -1, 2 ** -2, 2 ** -3, 2 ** -4, 2 ** -5, 2 ** -6, 2 ** -7, 2 ** -8,
          2 ** -0.5, 2 ** -1.5, 2 ** -2.5, 2 ** -3.5]),
])
def test_alibi_slopes_are_the_papers(n_heads, slopes):
    config = RunConfig.load(None, ["model.pos=alibi", f"model.n_heads={n_heads}", f"model.d_model={8 * n_heads}"])
    alibi = POSITIONS.get("alibi")(config.model, 1)
    assert alibi.slopes.tolist() == pytest.approx(slopes, rel=1e-6)


@pytest.mark.parametrize("n_heads", [1, 2, 4, 8, 16])
def test_alibi_slopes_for_powers_of_two_are_unchanged(n_heads):
    """The formula every stored power-of-two ALiBi run was trained with, bit for bit."""
    from workbench.models.positions import alibi_slopes

    assert alibi_slopes(n_heads) == [2.0 ** (-8.0 * (h + 1) / n_heads) for h in range(n_heads)]


def test_scalable_softmax_scales_each_query_by_a_learned_factor_times_the_log_of_its_keys():
    """Nakanishi 2025: query i's logits times s log(i + 1), s one learned number per head, starting at
    1 / log 2; the first query (one key) is scaled to 0, which leaves its single weight at 1."""
    plain, task = model_and_task("nope")
    scaled, _ = model_and_task("nope", "model.scalable_softmax=true")
    scaled.load_state_dict(plain.state_dict(), strict=False)
    batch = task.sample(4, torch.Generator().manual_seed(0))
    T = batch.tokens.shape[1]
    layer = scaled.blocks[0].mixer
    assert torch.allclose(layer.length_factor.detach(), torch.full((layer.n_heads,), 1 / math.log(2)))
    with torch.no_grad():
        layer.length_factor.copy_(torch.arange(1.0, layer.n_heads + 1))  # a different s per head
    queries = {name: model.run_with_cache(batch.tokens, batch.position_ids, names=["blocks.0.mixer.hook_q"])[1]
               ["blocks.0.mixer.hook_q"] for name, model in (("plain", plain), ("scaled", scaled))}
    factor = torch.arange(1.0, layer.n_heads + 1)[:, None] * torch.arange(1.0, T + 1).log()
    assert torch.allclose(queries["scaled"], queries["plain"] * factor[None, :, :, None], atol=1e-5)
    loss = scaled(batch.tokens, batch.position_ids)[batch.loss_mask].logsumexp(-1).mean()
    loss.backward()
    assert layer.length_factor.grad is not None and layer.length_factor.grad.abs().sum() > 0, "s is trained"


@pytest.mark.parametrize("other", ["model.logit_scaling=true", "model.bidirectional=true"])
def test_scalable_softmax_refuses_a_second_scaling_and_bidirectional_attention(other):
    with pytest.raises(ConfigError, match="model.scalable_softmax"):
        RunConfig.load(None, ["model.pos=nope", "model.scalable_softmax=true", other])
