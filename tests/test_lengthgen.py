"""Length generalization: with a small budget and 2 seeds, position coupling beats learned
absolute positions at twice the training length (Cho et al. 2024, seed 000 #3)."""
import statistics

import pytest

from workbench.config import RunConfig
from workbench.reports import length_table
from workbench.train import train

BUDGET = ["task.name=addition", "task.max_digits=5", "task.eval_lengths=5,10", "model.n_layers=1",
          "model.d_model=64", "model.n_heads=4", "train.steps=1000", "train.batch_size=128", "train.lr=3e-3",
          "train.eval_samples=256", "probes.every=0", "train.threads=1"]


def exact_match_at(pos: str, seed: int, length: int) -> float:
    run = train(RunConfig.load(None, BUDGET + [f"model.pos={pos}", f"train.seed={seed}"]), progress=False)
    return length_table(run.metrics())[length]


@pytest.mark.slow
def test_coupling_beats_learned_at_twice_the_training_length(data_dir):
    coupling = [exact_match_at("coupling", seed, 10) for seed in (0, 1)]
    learned = [exact_match_at("learned", seed, 10) for seed in (0, 1)]
    # Learned absolute positions have never seen positions past the 5-digit sequences, so they
    # cannot be right at 10 digits; coupled ids stay in the trained range.
    assert statistics.median(coupling) >= statistics.median(learned) + 0.3, (coupling, learned)
