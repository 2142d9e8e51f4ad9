"""Maps of a finished model on a fresh sample of any test length, with its answer: from Python and
through `workbench export --length` (the Attention page's test is in test_app_pages)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from workbench.analysis import evaluate_lengths, run_sample_attention
from workbench.cli import main
from workbench.config import RunConfig
from workbench.errors import ConfigError
from workbench.figures.runs import run_attention, run_attention_grid
from workbench.train import train

TINY = ["task.name=copy", "task.max_length=6", "model.layers=attention,mamba", "model.pos=rope", "model.d_model=16",
        "model.n_heads=2", "train.steps=10", "train.batch_size=16", "train.warmup=2", "train.eval_every=0",
        "probes.every=5", "train.threads=1"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return train(RunConfig.load(None, TINY), progress=False, root=tmp_path_factory.mktemp("runs"))


def test_a_fresh_sample_has_every_layers_maps_and_the_models_answer(run):
    sample = run_sample_attention(run, length=12, index=2)
    # copy: ^, 12 symbols, =, then the 12 copied symbols (the end token is only a target)
    assert len(sample.tokens) == 1 + 12 + 1 + 12 and sample.tokens[0] == "^" and sample.tokens[13] == "="
    assert sorted(sample.patterns) == [0, 1]  # the attention layer and the Mamba layer's implicit map
    T = len(sample.tokens)
    attention = sample.patterns[0]
    assert attention.shape == (2, T, T)
    assert np.allclose(attention.sum(-1), 1, atol=1e-5) and np.allclose(np.triu(attention, 1), 0)  # causal softmax
    assert sample.patterns[1].shape[-2:] == (T, T)
    assert len(sample.answer) == len(sample.target) == 13  # 12 symbols and the end
    assert sample.target[:12] == "".join(sample.tokens[1:13])  # a copy of the input
    assert sample.correct == (sample.answer == sample.target)


def test_the_same_index_is_the_same_sample_and_the_default_length_is_the_longest_trained(run):
    assert run_sample_attention(run, 9, 4).tokens == run_sample_attention(run, 9, 4).tokens
    assert run_sample_attention(run, 9, 4).tokens != run_sample_attention(run, 9, 5).tokens
    assert run_sample_attention(run).length == 6


def test_figures_read_the_fresh_sample_and_refuse_a_step_with_it(run):
    heads = sum(p.shape[0] for p in run_sample_attention(run, 8).patterns.values())
    assert len(run_attention_grid(run, length=8).data) == heads  # one map per layer and head
    single = run_attention(run, layer=0, head=1, length=8, example=1)
    assert np.asarray(single.data[0].z).shape == (18, 18)
    with pytest.raises(ConfigError, match="--step"):
        run_attention(run, step=5, length=8)


def test_export_draws_a_fresh_sample_and_names_bad_flags(run, monkeypatch, tmp_path, capsys, request):
    monkeypatch.setenv("WORKBENCH_DATA", str(run.path.parent))
    monkeypatch.chdir(tmp_path)
    for args, field in ((["--figure", "loss", "--length", "10"], "--length"),
                        (["--figure", "attention", "--length", "0"], "--length"),
                        (["--figure", "attention", "--length", "10", "--example", "-1"], "--example"),
                        (["--figure", "attention", "--length", "10", "--step", "5"], "--step"),
                        (["--figure", "loss", "--offset", "2"], "--offset"),
                        (["--figure", "attention", "--offset", "2"], "--offset"),  # no fresh sample to move
                        (["--figure", "attention", "--length", "4", "--offset", "2"], "--offset")):  # rope ignores ids
        assert main(["export", run.run_id, *args]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"error: {field}: invalid value")
    assert not (tmp_path / "exports").exists()
    request.getfixturevalue("needs_browser")
    assert main(["export", run.run_id, "--figure", "attention-grid", "--length", "10", "--example", "3",
                 "--out", "fresh.svg"]) == 0
    assert (tmp_path / "exports" / "fresh.svg").read_text().lstrip().startswith("<svg")


def test_answers_on_fresh_samples_from_python_and_eval_length(run, monkeypatch, capsys):
    monkeypatch.setenv("WORKBENCH_DATA", str(run.path.parent))
    answers = evaluate_lengths(run.run_id, [7], n=4, examples=3)["examples"][7]
    assert [a.tokens for a in answers] == [run_sample_attention(run, 7, i).tokens for i in range(3)]
    for answer in answers:
        assert not answer.patterns  # no maps asked for
        assert answer.prompt == "^" + answer.target[:7] + "="  # copy: the prompt holds what is to be copied
        assert answer.correct == (answer.answer == answer.target)
    assert main(["eval-length", run.run_id, "--lengths", "7,9", "--n", "4", "--examples", "2", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)["examples"]
    assert [e["prompt"] for e in printed["7"]] == [a.prompt for a in answers[:2]] and len(printed["9"]) == 2
    assert main(["eval-length", run.run_id, "--lengths", "7", "--n", "4", "--examples", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2].strip().startswith(answers[0].prompt + " -> " + answers[0].answer)
    before = len(run.metrics())
    assert main(["eval-length", run.run_id, "--lengths", "7", "--examples", "101"]) == 2
    assert capsys.readouterr().err.startswith("error: --examples: invalid value 101")
    assert len(run.metrics()) == before  # refused before anything was evaluated or stored


COUPLED = ["task.name=addition", "task.max_digits=3", "model.pos=coupling", "model.n_layers=1", "model.d_model=16",
           "model.n_heads=2", "train.steps=10", "train.batch_size=16", "train.warmup=2", "train.eval_every=0",
           "probes.every=0", "train.threads=1"]


def test_an_offset_reads_the_same_sample_with_its_coupled_ids_moved(run, tmp_path):
    coupled = train(RunConfig.load(None, COUPLED), progress=False, root=tmp_path)
    default, moved = run_sample_attention(coupled, 3, 2), run_sample_attention(coupled, 3, 2, offset=6)
    assert moved.tokens == default.tokens and moved.target == default.target
    assert [b - a for a, b in zip(default.ids, moved.ids) if a] == [5] * sum(1 for a in default.ids if a)
    assert min(i for i in default.ids if i) == 1  # evaluation starts addition's coupled ids at 1
    assert not np.allclose(moved.patterns[0], default.patterns[0])  # the coupled table reads the ids
    with pytest.raises(ConfigError, match="--offset: invalid value 0; expected an integer >= 1"):
        run_sample_attention(coupled, 3, 0, offset=0)
    with pytest.raises(ConfigError, match="model.pos=rope does not read the task's position ids"):
        run_sample_attention(run, 3, 0, offset=2)
    with pytest.raises(ConfigError, match="--offset: invalid value 2; moves the ids of a fresh sample"):
        run_attention_grid(coupled, offset=2)


def test_top_keys_are_the_heaviest_keys_a_query_can_see(run):
    from workbench.probes.sample_attention import top_keys

    sample = run_sample_attention(run, 6, 1)
    query = sample.tokens.index("=")
    keys = top_keys(sample, query, layer=0, k=3)
    assert sorted(keys) == list(range(sample.patterns[0].shape[0]))
    for head, pairs in keys.items():
        weights = [w for _, w in pairs]
        positions = [int(name.rsplit("@", 1)[1]) for name, _ in pairs]
        assert weights == sorted(weights, reverse=True) and all(p <= query for p in positions)
        assert weights[0] == pytest.approx(float(sample.patterns[0][head, query].max()), abs=1e-3)
    with pytest.raises(ConfigError, match="query: invalid value"):
        top_keys(sample, len(sample.tokens))
