"""Yang et al. 2023's looped training (arXiv 2311.12424): every loop re-reads the input
(model.loop_injection) and the loss averages the last T loops' read-outs, the loops before them
without gradient (model.loop_loss_window)."""
import pytest
import torch

from workbench.batch_stream import prepare, training_loss
from workbench.config import RunConfig
from workbench.errors import ConfigError
from workbench.evaluate import answer_loss, eval_generator
from workbench.models import model_for_task
from workbench.tasks import build_task

TASK = ["task.name=icl_linear_regression", "task.dim=3", "task.min_examples=5", "task.max_examples=5"]
MODEL = ["model.mixer=attention", "model.pos=learned", "model.n_heads=2", "model.d_model=16", "model.init=fan_in",
         "model.n_layers=4", "model.looped=true"]


def _model_and_batch(*overrides):
    config = RunConfig.load(None, [*TASK, *MODEL, *overrides])
    task = build_task(config.task.name, config.task.params)
    batch = task.sample(8, eval_generator(0, 5), length=5, train=False)
    return model_for_task(config.model, task, seed=0), batch


def _by_hand(model, batch):
    """h <- norm_final(block(h + e)) from h = 0, read out after every loop."""
    tokens, positions, vectors = batch.inputs()
    context = model.mixer_context(tokens, positions)
    embedded = model.embedded(tokens, context, vectors)
    h, readouts = torch.zeros_like(embedded), []
    for _ in range(model.loops):
        h = model.norm_final(model.blocks[0](h + embedded, context))
        readouts.append(model.unembed(h))
    return readouts


def test_injection_adds_the_input_at_every_loop_and_norms_each_loop():
    model, batch = _model_and_batch("model.loop_injection=true")
    by_hand = _by_hand(model, batch)
    assert torch.allclose(model(*batch.inputs()), by_hand[-1], atol=1e-6)
    plain, _ = _model_and_batch()
    plain.load_state_dict(model.state_dict())
    assert not torch.allclose(plain(*batch.inputs()), by_hand[-1], atol=1e-3)  # injection changes the function


def test_the_window_loss_is_the_mean_of_the_last_loops_losses_with_earlier_loops_frozen():
    model, batch = _model_and_batch("model.loop_injection=true", "model.loop_loss_window=2")
    prepared = prepare(batch)
    loss = training_loss(model, prepared)
    by_hand = _by_hand(model, batch)
    expected = sum(answer_loss(r, prepared.loss_rows, prepared.loss_targets) for r in by_hand[-2:]) / 2
    assert torch.allclose(loss, expected, atol=1e-6)
    # truncated: the gradient is that of the last two loops with their input held fixed, which differs
    # from the gradient through all four loops
    loss.backward()
    truncated = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    expected.backward()
    full = [p.grad for p in model.parameters()]
    assert any(not torch.allclose(a, b, atol=1e-6) for a, b in zip(truncated, full))


def test_a_model_without_a_window_trains_on_its_final_read_out():
    model, batch = _model_and_batch("model.loop_injection=true")
    prepared = prepare(batch)
    expected = answer_loss(model(*batch.inputs()), prepared.loss_rows, prepared.loss_targets)
    assert torch.allclose(training_loss(model, prepared), expected)


@pytest.mark.parametrize("overrides, field", [
    (["model.looped=false", "model.loop_injection=true"], "model.loop_injection"),
    (["model.looped=false", "model.loop_loss_window=2"], "model.loop_loss_window"),
    (["model.loop_loss_window=5"], "model.loop_loss_window"),
    (["model.loop_loss_window=-1"], "model.loop_loss_window")])
def test_loop_settings_are_checked(overrides, field):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        RunConfig.load(None, [*TASK, *MODEL, *overrides])


def test_the_new_settings_leave_earlier_run_ids_alone():
    import json

    model = json.loads(RunConfig.load(None, [*TASK, *MODEL]).canonical_json())["model"]
    assert "loop_injection" not in model and "loop_loss_window" not in model


def test_one_pass_reads_the_curve_after_every_loop():
    from workbench.experiments.icl.looping import depth
    from workbench.icl.curves import model_curve, readout_curves

    model, batch = _model_and_batch("model.loop_injection=true")
    task = build_task("icl_linear_regression", {"dim": 3, "min_examples": 5, "max_examples": 5})
    with depth(model, loops=6):
        curves = readout_curves(model, task, batch, last=6)
    for loops in (1, 4, 6):
        with depth(model, loops=loops):
            assert torch.allclose(curves[loops - 1], model_curve(model, task, batch), atol=1e-6)


def test_the_loop_curriculum_starts_at_the_window_and_adds_a_loop_every_few_steps():
    from workbench.train import loops_at

    config = RunConfig.load(None, [*TASK, *MODEL, "model.loop_loss_window=2", "model.loop_curriculum=10"])
    assert [loops_at(config, step) for step in (0, 9, 10, 19, 20, 1000)] == [2, 2, 3, 3, 4, 4]
    without_window = RunConfig.load(None, [*TASK, *MODEL, "model.loop_curriculum=10"])
    assert loops_at(without_window, 0) == 1
    assert loops_at(RunConfig.load(None, [*TASK, *MODEL]), 0) == 4  # no curriculum: every loop from the start


def test_a_curriculum_run_trains_at_growing_loops_and_finishes_at_all_of_them(data_dir, monkeypatch):
    from workbench import train as training
    from workbench.analysis import load_model

    seen = []
    real_loss = training.training_loss

    def watching(model, prepared):
        seen.append(model.loops)
        return real_loss(model, prepared)

    monkeypatch.setattr(training, "training_loss", watching)
    config = RunConfig.load(None, [*TASK, *MODEL, "model.loop_injection=true", "model.loop_loss_window=2",
                                   "model.loop_curriculum=2", "train.steps=6", "train.batch_size=4",
                                   "train.eval_every=0", "train.checkpoint_every=0", "probes.every=0"])
    run = training.train(config, progress=False)
    assert seen == [2, 2, 3, 3, 4, 4]
    assert load_model(run)[0].loops == 4


def test_a_looped_model_read_at_no_loops_reads_its_start():
    from workbench.experiments.icl.looping import depth

    injected, batch = _model_and_batch("model.loop_injection=true")
    with depth(injected, loops=0):
        assert torch.equal(injected(*batch.inputs()), torch.zeros_like(injected(*batch.inputs())))  # h starts at 0
    plain, _ = _model_and_batch()
    tokens, positions, vectors = batch.inputs()
    embedded = plain.embedded(tokens, plain.mixer_context(tokens, positions), vectors)
    with depth(plain, loops=0):
        assert torch.allclose(plain(*batch.inputs()), plain.unembed(plain.norm_final(embedded)))
