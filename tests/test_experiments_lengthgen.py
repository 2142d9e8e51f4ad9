"""Length-generalization experiments run end to end in fast mode: cached runs, table, figure, report."""

import pytest

from workbench.cli import main
from workbench.experiments import EXPERIMENTS, Budget, load_result, run_experiment
from workbench.experiments.base import result_path
from workbench.experiments.results import shipped_path


def test_every_lengthgen_recipe_builds_valid_configs():
    names = [n for n in EXPERIMENTS if n.startswith("lengthgen-")]
    assert {"lengthgen-addition", "lengthgen-copy", "lengthgen-reverse", "lengthgen-sort",
            "lengthgen-multi-operand-addition", "lengthgen-multiplication"} <= set(names)
    for name in names:
        for fast in (True, False):
            variants = EXPERIMENTS[name].variants(fast)
            assert variants and all(v.config.task.eval_lengths for v in variants)
        full = EXPERIMENTS[name].variants(False)
        assert len({v.labels["seed"] for v in full}) >= 3, "a comparative verdict rests on at least 3 seeds"


def test_each_length_recipe_trains_every_encoding_that_applies_to_its_task():
    """The encoding zoo: addition reads coupled and abacus ids, copy and reverse coupled ids only, sort none."""
    from workbench.models import POSITIONS

    every = set(POSITIONS.names())
    wide = {"coupling w128", "learned w128"}  # the paper's table and its baseline at width 128
    expected = {"lengthgen-addition": every, "lengthgen-copy": every - {"abacus"} | wide,
                "lengthgen-reverse": every - {"abacus"} | wide,
                "lengthgen-sort": every - {"abacus", "coupling", "coupling_relative"}}
    for name, encodings in expected.items():
        variants = EXPERIMENTS[name].variants(False)
        assert {v.labels["pos"] for v in variants} == encodings, name
        for pos in encodings:
            assert {v.labels["seed"] for v in variants if v.labels["pos"] == pos} == {0, 1, 2}, (name, pos)


def test_the_zoo_figure_ranks_encodings_by_their_reach_and_shows_every_seed():
    import pandas as pd

    from workbench.figures.lengthgen import encoding_zoo

    rows = [{"label": label, "seed": seed, "length": n, "value": value}
            for label, beyond in (("far", 0.9), ("near", 0.2), ("none", 0.0))
            for seed in (0, 1, 2) for n, value in ((5, 1.0), (10, 1.0), (20, beyond - 0.1 * seed))]
    figure = encoding_zoo(pd.DataFrame(rows), train_length=10)
    grid = next(trace for trace in figure.data if trace.type == "heatmap")
    assert list(grid.y) == ["none", "near", "far"], "best on top (plotly draws the first row at the bottom)"
    assert grid.z[-1][-1] == pytest.approx(80.0), "the median of 90%, 80% and 70%"
    assert grid.customdata[-1][-1] == "seeds 90% / 80% / 70%"
    curves = [trace for trace in figure.data if trace.type == "scatter" and trace.mode == "lines+markers"]
    assert [trace.name for trace in curves] == ["far", "near", "none"]


def test_fire_outdoes_rope_and_alibi_only_when_it_fits_and_leads_each_by_ten_points():
    claim = next(c for c in EXPERIMENTS["lengthgen-copy"].claims if c.key == "fire-outdoes-rope-alibi")

    def summary(fire_fit, fire, rope, alibi):
        curves = {"fire": (fire_fit, fire), "rope": (1.0, rope), "alibi": (1.0, alibi)}
        return {"train_max": 10, "exact_match": {pos: {str(seed): {"10": fit, "20": at}
                                                       for seed in range(3)} for pos, (fit, at) in curves.items()}}

    assert claim.decide(summary(1.0, 0.5, 0.3, 0.4)).verdict == "reproduced"
    assert claim.decide(summary(1.0, 0.5, 0.3, 0.45)).verdict == "not reproduced", "5 points over ALiBi is not 10"
    assert claim.decide(summary(0.5, 0.5, 0.0, 0.0)).verdict == "inconclusive", "FIRE never fit 1-10"


def test_lengthgen_addition_fast_runs_and_caches(data_dir):
    result = run_experiment("lengthgen-addition", fast=True, progress=False)
    assert set(result.table.pos) == {"coupling", "coupling_relative", "learned"}
    assert set(result.table.length) == {5, 10, 12, 15, 20, 25, 30}
    assert result.table.exact_match.between(0, 1).all()
    assert result.headline and set(result.outcomes) == {c.key for c in EXPERIMENTS["lengthgen-addition"].claims}
    # fast mode trains one seed: no claim can be judged on it
    assert {o.verdict for o in result.outcomes.values()} <= {"inconclusive", "not tested"}
    figure = result.figure()
    assert any(shape.x0 == 10 for shape in figure.layout.shapes), "training length is marked"
    cached = load_result("lengthgen-addition", fast=True)
    assert cached.run_ids == result.run_ids
    again = run_experiment("lengthgen-addition", fast=True, progress=False)  # every run comes from the store
    assert again.run_ids == result.run_ids and again.table.equals(result.table)
    # a fast result is a working copy in the run store, never a shipped result the report reads
    assert result_path("lengthgen-addition", fast=True).is_relative_to(data_dir)
    assert result_path("lengthgen-addition", fast=False) == shipped_path("lengthgen-addition")


def test_unknown_experiment_is_a_clear_error(capsys):
    assert main(["experiment", "run", "lengthgen-additon"]) == 2
    assert "lengthgen-addition" in capsys.readouterr().err


class _FakeRun:
    def __init__(self, curve: dict[int, float]):
        self.curve = curve

    def metrics(self):
        import pandas as pd

        return pd.DataFrame([{"step": 100, "probe": "exact_match", "layer": -1, "head": -1, "length": k, "value": v}
                             for k, v in self.curve.items()])

    def config(self):
        from workbench.config import RunConfig

        return RunConfig.load(None, ["task.eval_lengths=" + ",".join(map(str, self.curve))])


def test_a_baseline_that_never_fit_the_trained_lengths_cannot_decide_a_seed():
    """Failing beyond the training length says nothing about a baseline that failed within it."""
    from workbench.experiments.base import Variant
    from workbench.experiments.lengthgen import _analyze, baselines_fail, beats

    curves = {"coupling": {10: 1.0, 20: 0.95}, "learned": {10: 0.2, 20: 0.0}, "nope": {10: 0.97, 20: 0.0}}
    finished = [(Variant(None, {"pos": pos, "seed": seed}), _FakeRun(curve))
                for pos, curve in curves.items() for seed in (0, 1, 2)]
    _, summary = _analyze(train_max=10, headline_length=20)(finished, fast=False)
    assert summary["exact_match"]["learned"]["1"] == {"10": 0.2, "20": 0.0}
    over_learned = beats("coupling", 20, 0.9, "learned", 15, 0.1, "t", (), "n").decide(summary)
    assert over_learned.verdict == "inconclusive" and set(over_learned.passed.values()) == {None}
    assert "learned 20% at 10" in over_learned.per_seed["0"] and "did not fit" in over_learned.per_seed["0"]
    over_nope = beats("coupling", 20, 0.9, "nope", 15, 0.1, "t", (), "n").decide(summary)
    assert over_nope.verdict == "reproduced"  # NoPE fit, so its failure beyond 15 counts
    assert baselines_fail(("learned", "nope"), 15, 0.1, "t", (), "n").decide(summary).verdict == "inconclusive"


def test_sort_hint_and_addition_format_pair_each_recipe_with_its_baseline(data_dir):
    hint = {v.labels["pos"]: v.config for v in EXPERIMENTS["sort-hint"].variants(False) if v.labels["seed"] == 0}
    assert hint["nope + hint"].task.params["hint"] == 0.5 and hint["nope"].task.params["hint"] == 0.0
    assert hint["nope"].replace(**{"task.hint": 0.5}).run_id == hint["nope + hint"].run_id, "only the hint differs"
    assert hint["nope + hint"].replace(**{"task.hint_form": "pairs"}).run_id == hint["nope + pair hint"].run_id
    assert hint["nope"].replace(**{"model.logit_scaling": True}).run_id == hint["nope, log-length scaling"].run_id
    formats = EXPERIMENTS["addition-format"].variants(False)
    assert len({v.labels["seed"] for v in formats}) == 5, "the spread between seeds is the point: five of them"
    plain = [v.config for v in formats if v.labels["pos"].endswith("plain")]
    assert plain and not any(c.task.params["reverse_answer"] for c in plain)
    result = run_experiment("sort-hint", fast=True, progress=False)
    assert set(result.table.pos) == {"nope", "nope + hint", "nope + pair hint", "nope, log-length scaling"} and set(result.table.length) == {10, 20, 30, 40, 60, 80, 100}
    assert result.summary["train_max"] == 20, "the paper's training range"
    assert {o.verdict for o in result.outcomes.values()} <= {"inconclusive", "not tested"}
    assert result.figure().data


def test_multiplication_priming_changes_only_the_primed_examples_and_their_rate(data_dir):
    arms = {v.labels["pos"]: v.config for v in EXPERIMENTS["multiplication-priming"].variants(False)
            if v.labels["seed"] == 0}
    assert set(arms) == {"unprimed", "10 primed", "50 primed"}
    assert arms["unprimed"].task.params["priming"] == 0
    for count in (10, 50):
        primed = arms[f"{count} primed"]
        assert primed.task.params["priming"] == count and primed.task.params["priming_digits"] == 15
        # K examples drawn as often as if added to a training set of 2,500: 50 are 5x as frequent as 10
        assert primed.task.params["priming_rate"] == pytest.approx(count / 2500)
        same = {"task.priming": count, "task.priming_digits": 15, "task.priming_rate": count / 2500}
        assert arms["unprimed"].replace(**same).run_id == primed.run_id, "only the priming differs"
    assert 15 in arms["unprimed"].task.eval_lengths, "the primed length is tested"
    assert {config.task.params["scratchpad"] for config in arms.values()} == {"partial_products"}


def test_relative_priming_is_the_same_recipe_with_the_ids_read_as_a_bias(data_dir):
    paper, relative = ({(v.labels["pos"], v.labels["seed"]): v.config for v in EXPERIMENTS[name].variants(False)}
                       for name in ("multiplication-priming", "multiplication-priming-relative"))
    assert set(paper) == set(relative) and len(paper) == 9
    for arm, config in relative.items():
        assert config.model.pos == "coupling_relative"
        assert config.replace(**{"model.pos": "coupling"}).run_id == paper[arm].run_id, arm


def test_multiplication_trains_the_papers_scratchpad_beside_the_running_sums(data_dir):
    arms = {v.labels["pos"]: v.config for v in EXPERIMENTS["lengthgen-multiplication"].variants(False)
            if v.labels["seed"] == 0}
    assert set(arms) == {"coupling", "nope", "coupling, running sums"}
    paper, running = arms["coupling"], arms["coupling, running sums"]
    assert paper.task.params["scratchpad"] == arms["nope"].task.params["scratchpad"] == "partial_products"
    assert paper.replace(**{"task.scratchpad": "running"}).run_id == running.run_id, "only the scratchpad differs"
    assert paper.replace(**{"model.pos": "nope"}).run_id == arms["nope"].run_id
    result = run_experiment("lengthgen-multiplication", fast=True, progress=False)
    assert set(result.table.pos) == {"coupling", "nope"} and set(result.table.length) == {3, 5, 7, 10}
    assert {o.verdict for o in result.outcomes.values()} <= {"inconclusive", "not tested"}


def test_multiplication_coupling_relative_shares_the_papers_table_arm_and_runs_fast(data_dir):
    arms = {v.labels["pos"]: v.config for v in EXPERIMENTS["multiplication-coupling-relative"].variants(False)}
    paper = {v.labels["pos"]: v.config for v in EXPERIMENTS["lengthgen-multiplication"].variants(False)}
    assert arms["coupling"].run_id == paper["coupling"].run_id, "the same runs, fetched, not trained twice"
    assert arms["coupling_relative"].replace(**{"model.pos": "coupling"}).run_id == arms["coupling"].run_id
    result = run_experiment("multiplication-coupling-relative", fast=True, progress=False)
    assert set(result.table.pos) == {"coupling_relative", "coupling"}
    assert {o.verdict for o in result.outcomes.values()} <= {"inconclusive", "not reproduced", "not tested"}


def test_multiplication_priming_runs_end_to_end_in_fast_mode(data_dir):
    result = run_experiment("multiplication-priming", fast=True, progress=False)
    assert set(result.table.pos) == {"unprimed", "50 primed"} and set(result.table.length) == {3, 5, 7, 10, 15, 20}
    assert {o.verdict for o in result.outcomes.values()} <= {"inconclusive", "not tested"}
    assert result.summary["train_max"] == 5 and result.figure().data


def test_multi_level_coupling_ablation_drops_only_the_operand_level(data_dir):
    """One experiment per reading of the ids: the paper's learned table, and our relative bias."""
    for name, pos in (("multi-level-coupling", "coupling"), ("multi-level-coupling-relative", "coupling_relative"),
                      ("multi-level-coupling-padded", "coupling")):
        arms = {v.labels["pos"]: v.config for v in EXPERIMENTS[name].variants(False) if v.labels["seed"] == 0}
        assert set(arms) == {f"multi-level {pos}", f"single-level {pos}"}
        multi, single = arms[f"multi-level {pos}"], arms[f"single-level {pos}"]
        assert multi.model.pos == single.model.pos == pos
        assert multi.task.params["levels"] == 2 and single.task.params["levels"] == 1
        assert multi.replace(**{"task.levels": 1}).run_id == single.run_id, "only the levels differ"
    # the paper's arms get more steps than the multi-operand recipe (there no single-level model fit), in
    # length buckets (to fit 30 minutes)
    recipe = {v.labels["pos"]: v.config for v in EXPERIMENTS["lengthgen-multi-operand-addition"].variants(False)
              if v.labels["seed"] == 0}
    paper = next(v.config for v in EXPERIMENTS["multi-level-coupling"].variants(False)
                 if v.labels == {"pos": "multi-level coupling", "seed": 0})
    assert paper.train.steps > recipe["coupling"].train.steps
    assert paper.train.length_buckets == 4 and recipe["coupling"].train.length_buckets == 1
    shorter = {"train.steps": recipe["coupling"].train.steps, "probes.every": recipe["coupling"].probes.every,
               "train.length_buckets": 1}
    assert paper.replace(**shorter).run_id == recipe["coupling"].run_id, "only the budget and the buckets differ"
    # the paper's data: the same task with its padded scratchpad and equal-length samples, both arms
    padded = {v.labels["pos"]: v.config for v in EXPERIMENTS["multi-level-coupling-padded"].variants(False)
              if v.labels["seed"] == 0}
    for config in padded.values():
        assert config.task.params["scratchpad"] == "padded" and config.task.params["equal_lengths"] == 0.5
    ours = padded["multi-level coupling"].replace(**{"task.scratchpad": "running", "task.equal_lengths": 0.0})
    assert ours.run_id == recipe["coupling"].run_id, "only the data's format differs from the multi-operand recipe"


@pytest.mark.parametrize("name,pos", [("multi-level-coupling", "coupling"),
                                      ("multi-level-coupling-relative", "coupling_relative"),
                                      ("multi-level-coupling-padded", "coupling")])
def test_multi_level_coupling_runs_end_to_end_in_fast_mode(data_dir, name, pos):
    result = run_experiment(name, fast=True, progress=False)
    assert set(result.table.pos) == {f"multi-level {pos}", f"single-level {pos}"}
    assert set(result.table.length) == {3, 5, 7, 10}
    assert {o.verdict for o in result.outcomes.values()} <= {"inconclusive", "not tested"}
    assert result.summary["train_max"] == 5 and result.figure().data


def test_coupling_budget_grid_holds_the_paper_encoding_and_shares_the_addition_recipe(data_dir):
    variants = EXPERIMENTS["coupling-budget"].variants(False)
    grid = {(v.labels["width"], v.labels["steps"]) for v in variants}
    assert grid == {(w, s) for w in (64, 128) for s in (1500, 3000, 6000)}
    assert {v.config.model.pos for v in variants} == {"coupling"}, "the verdict judges the paper's encoding only"
    for v in variants:
        assert v.config.train.steps == v.labels["steps"] and v.config.model.d_model == v.labels["width"]
        assert v.config.task.params["max_digits"] == 10 and 30 in v.config.task.eval_lengths
    recipe = {v.labels["seed"]: v.config.run_id for v in EXPERIMENTS["lengthgen-addition"].variants(False)
              if v.labels["pos"] == "coupling"}
    shared = {v.labels["seed"]: v.config.run_id for v in variants if v.labels["pos"] == "width 64, 3000 steps"}
    assert shared == recipe


def test_coupling_budget_runs_end_to_end_in_fast_mode(data_dir):
    result = run_experiment("coupling-budget", fast=True, progress=False)
    assert set(result.table.width) == {64, 128} and 30 in set(result.table.length)
    assert {o.verdict for o in result.outcomes.values()} <= {"inconclusive", "not tested"}
    figure = result.figure()
    assert figure.layout.xaxis.type == "log" and len(figure.layout.annotations) == 3, "a panel per test length"
    assert [t.name for t in figure.data if t.showlegend] == ["width 64 (head dim 16)", "width 128 (head dim 64)"]


def test_coupling_head_dim_trains_the_paper_encoding_at_two_head_dimensions_alike(data_dir):
    variants = EXPERIMENTS["coupling-head-dim"].variants(False)
    head_dims = {v.config.model.d_model // v.config.model.n_heads for v in variants}
    assert head_dims == {64, 256} and {v.config.model.pos for v in variants} == {"coupling"}
    trained = {(v.config.train.steps, v.config.train.lr, v.config.model.mlp_ratio) for v in variants}
    assert trained == {(1000, 1e-3, 2.0)}, "both head dimensions trained alike"
    result = run_experiment("coupling-head-dim", fast=True, progress=False)
    assert set(result.table.pos) == {"coupling, head dim 256", "coupling, head dim 64"}
    assert 30 in set(result.table.length)
    assert {o.verdict for o in result.outcomes.values()} <= {"inconclusive", "not tested"}
    assert result.figure().data


def test_another_budget_keeps_the_step_ratios_of_a_budget_curve():
    curve = Budget(steps=600).apply(EXPERIMENTS["coupling-budget"].variants(False))
    assert {v.labels["steps"]: v.config.train.steps for v in curve} == {1500: 150, 3000: 300, 6000: 600}
    uniform = Budget(steps=600).apply(EXPERIMENTS["lengthgen-addition"].variants(False))
    assert {v.config.train.steps for v in uniform} == {600}


def test_encodings_at_gives_each_tasks_median_and_a_dash_where_an_encoding_does_not_apply():
    import pandas as pd

    from workbench.experiments import ExperimentResult
    from workbench.experiments.lengthgen import encodings_at

    def result(rows):
        return ExperimentResult("x", pd.DataFrame([{"pos": p, "seed": s, "length": n, "exact_match": v}
                                                   for p, s, n, v in rows]), {}, [], runtime_s=0.0)

    table = encodings_at({"copy": result([("rope", 0, 20, 0.2), ("rope", 1, 20, 0.4), ("rope", 2, 20, 0.9),
                                          ("rope", 0, 10, 1.0)]),
                          "sort": result([("nope", 0, 20, 0.5)])}, 20)
    assert table.loc["rope", "copy"] == "40" and table.loc["rope", "sort"] == "-"
    assert table.loc["nope", "sort"] == "50" and table.loc["nope", "copy"] == "-"
