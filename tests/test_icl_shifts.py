"""Shifted prompts (workbench.icl.shifts): each shift moves the inputs the way it says, the labels stay
each sequence's function of its inputs, and an unknown shift is refused by name."""
from __future__ import annotations

import pytest
import torch

from workbench.errors import ConfigError
from workbench.icl.shifts import SCALES, SHIFTS, SKEW, orthogonal_query_position, shifted_batch, where_it_acts
from workbench.tasks import build_task

DIM, EXAMPLES = 4, 9


def shifted(shift: str, n: int = 256, name: str = "icl_linear_regression"):
    task = build_task(name, {"dim": DIM, "min_examples": EXAMPLES, "max_examples": EXAMPLES})
    batch = shifted_batch(task, shift, n, EXAMPLES, torch.Generator().manual_seed(0))
    return task, batch, *task.examples(batch)


@pytest.mark.parametrize("shift", SHIFTS)
def test_every_shift_keeps_the_labels_a_function_of_the_inputs(shift):
    task, batch, xs, ys = shifted(shift)
    assert xs.shape == (256, EXAMPLES, DIM)
    assert torch.allclose(ys, task.evaluate(batch.meta, xs), atol=1e-4)  # noiseless task: y = w.x exactly
    scale = SCALES.get(shift, 1.0)
    assert (xs ** 2).sum(-1).mean() == pytest.approx(scale ** 2 * DIM, rel=0.15)  # training scale, or scaled


def test_scaled_inputs_are_the_same_draws_times_the_factor():
    _, _, up, _ = shifted("inputs scaled by 3")
    _, _, down, _ = shifted("inputs scaled by 1/3")
    assert torch.allclose(up / 3, down * 3, atol=1e-6)  # one generator seed: the same x before scaling


def test_an_orthogonal_query_has_no_part_along_the_examples_before_it_and_keeps_its_length():
    _, _, xs, _ = shifted("query orthogonal to the examples")
    at = orthogonal_query_position(EXAMPLES, DIM)
    assert at == DIM - 1  # the last query with fewer than d examples before it
    before, query = xs[:, :at], xs[:, at]
    cosines = (before @ query.unsqueeze(-1)).squeeze(-1) / (before.norm(dim=-1) * query.norm(dim=-1, keepdim=True))
    assert cosines.abs().max() < 1e-5
    _, _, plain, _ = shifted("query repeats an example")  # the same draws; that shift moves the last query only
    assert torch.allclose(query.norm(dim=-1), plain[:, at].norm(dim=-1), atol=1e-4)
    assert torch.equal(xs[:, :at], plain[:, :at]) and torch.equal(xs[:, at + 1:-1], plain[:, at + 1:-1])


def test_a_skewed_covariance_has_the_stated_condition_number():
    _, batch, _, _ = shifted("skewed covariance", n=8)
    eigenvalues = torch.linalg.eigvalsh(batch.meta["covariance"])
    assert torch.allclose(eigenvalues[:, -1] / eigenvalues[:, 0], torch.full((8,), SKEW), rtol=1e-3)


def test_half_subspace_inputs_span_half_the_dimensions():
    _, _, xs, _ = shifted("half subspace", n=16)
    assert (torch.linalg.matrix_rank(xs) == DIM // 2).all()


def test_prompts_in_one_orthant_share_their_signs_and_the_query_does_not_have_to():
    _, _, xs, _ = shifted("prompts in one orthant")
    signs = xs[:, :-1].sign()
    assert (signs == signs[:, :1]).all()
    assert (xs[:, -1].sign() != signs[:, 0]).any(-1).float().mean() > 0.8  # 15 of 16 orthants are others


def test_a_repeated_query_is_one_of_the_examples():
    _, _, xs, _ = shifted("query repeats an example")
    assert ((xs[:, :-1] - xs[:, -1:]).abs().sum(-1) == 0).any(-1).all()


def test_an_unknown_shift_is_refused_by_name():
    task = build_task("icl_linear_regression", {"dim": DIM})
    with pytest.raises(ConfigError, match="shift"):
        shifted_batch(task, "rotated", 4, EXAMPLES, torch.Generator())


def test_a_shift_applies_to_the_richer_function_classes_too():
    task, batch, xs, ys = shifted("half subspace", n=8, name="icl_decision_tree")
    assert torch.equal(ys, task.evaluate(batch.meta, xs))


def test_a_run_is_read_on_shifted_prompts_from_the_views_and_the_command_line(tmp_path, monkeypatch, capsys):
    from icl_runs import REGRESSION, TINY

    from workbench.cli import main
    from workbench.config import RunConfig
    from workbench.icl import views
    from workbench.train import train

    monkeypatch.setenv("WORKBENCH_DATA", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    run = train(RunConfig.load(None, [*REGRESSION, *TINY]), progress=False, root=tmp_path)
    plain = views.run_error_table(run.run_id, n=16)
    shifted = views.run_error_table(run.run_id, n=16, shift="prompts in one orthant")
    assert list(shifted.columns) == list(plain.columns) and not shifted.equals(plain)
    again = views.run_error_table(run.run_id, n=16, shift="prompts in one orthant")
    assert shifted.equals(again)  # the same shifted sequences every time
    with pytest.raises(ConfigError, match="shift"):
        views.run_error_table(run.run_id, n=16, shift="rotated")
    assert main(["export", run.run_id, "--figure", "icl-curve", "--shift", "half subspace", "--out", "s.png"]) == 0
    assert (tmp_path / "exports" / "s.png").stat().st_size > 0
    assert main(["export", run.run_id, "--figure", "loss", "--shift", "half subspace"]) != 0
    assert "--shift: invalid value 'half subspace'; only --figure icl-curve" in capsys.readouterr().err


def test_each_shift_says_which_queries_it_moves():
    assert "last point" in where_it_acts("query repeats an example", DIM, EXAMPLES)
    assert f"{DIM - 1} examples before it" in where_it_acts("query orthogonal to the examples", DIM, EXAMPLES)
    assert "every point" in where_it_acts("inputs scaled by 3", DIM, EXAMPLES)
    # with fewer queries than d, the moved query is the last one, where shifted_batch puts it
    short = where_it_acts("query orthogonal to the examples", DIM, 3)
    assert f"{orthogonal_query_position(3, DIM)} examples before it (the last query)" in short
    with pytest.raises(ConfigError, match="shift"):
        where_it_acts("rotated", DIM, EXAMPLES)
