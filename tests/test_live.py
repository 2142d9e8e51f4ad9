"""What the Train page's live view reads from the store of a run part-way through training."""
from workbench.config import RunConfig
from workbench.live import live_view
from workbench.train import train

TINY = ["task.max_digits=3", "model.n_layers=1", "model.d_model=16", "model.n_heads=2", "train.steps=40",
        "train.batch_size=16", "train.warmup=4", "train.eval_every=10", "train.checkpoint_every=100",
        "train.eval_samples=32", "probes.every=10", "probes.batch=4"]


def test_a_run_part_way_shows_its_evaluations_and_latest_snapshot(data_dir):
    config = RunConfig.load(None, TINY)
    assert live_view(config.run_id).step == -1  # nothing stored yet: an empty view, no error
    train(config, progress=False, stop_after=25)
    live = live_view(config.run_id)
    assert live.exact_match.step.tolist() == [10, 20] and live.snapshot_step == 20
    assert live.step == 25 and set(live.exact_match.series) == {"exact match"}
