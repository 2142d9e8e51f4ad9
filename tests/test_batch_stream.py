"""The batch stream draws ahead on a thread but must give exactly the batches of drawing in the loop."""
import pytest
import torch

from workbench.batch_stream import BatchStream
from workbench.tasks import build_task

TASK = build_task("addition", {"max_digits": 6})


def draw(generator):
    return TASK.sample(8, generator)


def test_the_stream_gives_the_batches_of_drawing_in_order():
    direct = torch.Generator().manual_seed(3)
    stream = BatchStream(draw, torch.Generator().manual_seed(3))
    try:
        for _ in range(5):
            expected, got = draw(direct), stream.next()
            assert torch.equal(got.batch.tokens, expected.tokens)
            assert torch.equal(got.loss_targets, expected.targets[expected.loss_mask])
            flat = torch.zeros(expected.tokens.numel(), dtype=torch.bool)
            flat[got.loss_rows] = True
            assert torch.equal(flat.view_as(expected.loss_mask), expected.loss_mask)
    finally:
        stream.close()


def test_resume_state_draws_the_next_batch_again():
    stream = BatchStream(draw, torch.Generator().manual_seed(5))
    try:
        stream.next(), stream.next()
        state = stream.resume_state()  # the third batch is already drawn, not yet used
        third = stream.next()
        again = draw(torch.Generator().set_state(state))
        assert torch.equal(again.tokens, third.batch.tokens)
    finally:
        stream.close()


def test_a_failing_draw_raises_in_next_and_leaves_a_resumable_state():
    calls = {"n": 0}

    def flaky(generator):
        calls["n"] += 1
        if calls["n"] == 2:
            raise ValueError("task.max_digits: bad")
        return draw(generator)

    stream = BatchStream(flaky, torch.Generator().manual_seed(7))
    try:
        stream.next()
        with pytest.raises(ValueError, match="max_digits"):
            stream.next()
        second = draw(torch.Generator().set_state(stream.resume_state()))
        expected = torch.Generator().manual_seed(7)
        draw(expected)
        assert torch.equal(second.tokens, draw(expected).tokens)
    finally:
        stream.close()


def _same_loss_and_gradient(model, prepared) -> None:
    """The loss over the prepared batch's parts and its gradient equal those of the batch in one piece."""
    from workbench.batch_stream import TrainingBatch, training_loss

    split = training_loss(model, prepared)
    split.backward()
    split_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    whole = training_loss(model, TrainingBatch(prepared.batch, prepared.loss_rows, prepared.loss_targets))
    whole.backward()
    assert torch.allclose(split, whole, atol=1e-6)
    for a, b in zip(split_grads, (p.grad for p in model.parameters())):
        assert torch.allclose(a, b, atol=1e-6)


def test_primed_rows_train_as_their_own_micro_batch_with_the_same_loss_and_gradient():
    from workbench.batch_stream import prepare
    from workbench.config import RunConfig
    from workbench.models.transformer import model_for_task

    task = build_task("multiplication", {"max_digits": 3, "priming": 4, "priming_digits": 12, "priming_rate": 0.1})
    batch = task.sample(64, torch.Generator().manual_seed(5))
    primed = batch.meta["primed"]
    assert 0 < int(primed.sum()) < len(primed)
    prepared = prepare(batch)
    short, long_ = (part.batch for part in prepared.parts)
    assert short.tokens.shape[1] < long_.tokens.shape[1] == batch.tokens.shape[1], "the short rows lose the padding"
    assert int(short.loss_mask.sum()) + int(long_.loss_mask.sum()) == int(batch.loss_mask.sum())
    assert not prepare(task.sample(64, torch.Generator().manual_seed(5), train=False)).parts, "nothing to split"

    config = RunConfig.load(None, ["task.name=multiplication", "model.d_model=32", "model.n_layers=2",
                                   "model.pos=coupling"])
    model = model_for_task(config.model, task, seed=0)
    _same_loss_and_gradient(model, prepared)


@pytest.mark.parametrize("task_name, params", [("multi_operand_addition", {"max_digits": 5, "max_operands": 5}),
                                               ("icl_linear_regression", {"dim": 3, "min_examples": 2,
                                                                          "max_examples": 9})])
def test_length_buckets_train_short_rows_unpadded_with_the_same_loss_and_gradient(task_name, params):
    from workbench.batch_stream import prepare
    from workbench.config import RunConfig
    from workbench.models.transformer import model_for_task

    task = build_task(task_name, params)
    batch = task.sample(32, torch.Generator().manual_seed(5))
    prepared = prepare(batch, length_buckets=4)
    widths = [part.batch.tokens.shape[1] for part in prepared.parts]
    assert len(widths) == 4 and widths == sorted(widths) and widths[0] < widths[-1] == batch.tokens.shape[1]
    assert sum(len(part.batch) for part in prepared.parts) == len(batch)
    assert sum(int(part.batch.loss_mask.sum()) for part in prepared.parts) == int(batch.loss_mask.sum())
    assert not prepare(batch).parts, "one bucket: the batch as drawn"

    config = RunConfig.load(None, [f"task.name={task_name}", "model.d_model=32", "model.n_layers=2"])
    model = model_for_task(config.model, task, seed=0)
    _same_loss_and_gradient(model, prepared)


def test_length_buckets_are_refused_beyond_the_batch_by_name():
    from workbench.config import RunConfig
    from workbench.errors import ConfigError

    with pytest.raises(ConfigError, match=r"train.length_buckets: invalid value 0; expected 1..train.batch_size \(8\)"):
        RunConfig.load(None, ["train.batch_size=8", "train.length_buckets=0"])
    assert RunConfig.load(None, ["train.length_buckets=1"]).run_id == RunConfig.load(None, []).run_id
