"""Length-generalization experiments run end to end in fast mode: cached runs, table, figure, report."""

from workbench.cli import main
from workbench.experiments import EXPERIMENTS, load_result, run_experiment, write_report


def test_every_lengthgen_recipe_builds_valid_configs():
    names = [n for n in EXPERIMENTS if n.startswith("lengthgen-")]
    assert {"lengthgen-addition", "lengthgen-copy", "lengthgen-reverse", "lengthgen-sort",
            "lengthgen-multi-operand-addition", "lengthgen-multiplication"} <= set(names)
    for name in names:
        for fast in (True, False):
            variants = EXPERIMENTS[name].variants(fast)
            assert variants and all(v.config.task.eval_lengths for v in variants)
        full = EXPERIMENTS[name].variants(False)
        assert len({v.labels["seed"] for v in full}) >= 2, "full runs carry seed bands"


def test_lengthgen_addition_fast_runs_caches_and_reports(data_dir, tmp_path, capsys):
    result = run_experiment("lengthgen-addition", fast=True, progress=False)
    assert set(result.table.pos) == {"coupling", "coupling_relative", "learned"}
    assert set(result.table.length) == {5, 10, 12, 15, 20, 25, 30}
    assert result.table.exact_match.between(0, 1).all()
    assert "headline" in result.summary and "target_met" in result.summary
    figure = result.figure()
    assert any(shape.x0 == 10 for shape in figure.layout.shapes), "training length is marked"
    cached = load_result("lengthgen-addition", fast=True)
    assert cached.run_ids == result.run_ids
    again = run_experiment("lengthgen-addition", fast=True, progress=False)  # every run comes from the store
    assert again.run_ids == result.run_ids and again.table.equals(result.table)
    report = write_report(tmp_path / "REPRODUCTIONS.md").read_text()
    assert "lengthgen-addition" in report and "fast mode" in report and "seed 000 #3" in report


def test_unknown_experiment_is_a_clear_error(capsys):
    assert main(["experiment", "run", "lengthgen-additon"]) == 2
    assert "lengthgen-addition" in capsys.readouterr().err


def test_report_keeps_earlier_measurements_it_has_no_cache_for(data_dir, tmp_path):
    """Rewriting REPRODUCTIONS.md on a machine that cached only some experiments keeps the rows and
    details measured elsewhere; the pilot notes are printed from the recipes."""
    out = tmp_path / "REPRODUCTIONS.md"
    earlier = ("# old\n\n| experiment | a |\n|---|---|\n"
               "| `mimetic-recall` | seed 000 #2 | measured elsewhere: 750 steps | reproduced | 1 s |\n"
               "| `lengthgen-copy` | x | not run yet (`workbench experiment run lengthgen-copy`) | — | — |\n"
               "\n## `mimetic-recall`\n\nRuns: abc\n\n```json\n{\"headline\": \"750 steps\"}\n```\n")
    out.write_text(earlier)
    report = write_report(out).read_text()
    assert "measured elsewhere: 750 steps" in report
    assert "## `mimetic-recall`\n\nRuns: abc" in report
    assert "not run yet (`workbench experiment run lengthgen-copy`)" in report  # nothing to keep
    assert "## Pilots and diagnostics" in report and "weight decay" in report
    assert write_report(out).read_text() == report  # rewriting is stable


class _FakeRun:
    def __init__(self, curve: dict[int, float]):
        self.curve = curve

    def metrics(self):
        import pandas as pd

        return pd.DataFrame([{"step": 100, "probe": "exact_match", "layer": -1, "head": -1, "length": k, "value": v}
                             for k, v in self.curve.items()])


def test_a_baseline_that_never_fit_the_trained_lengths_is_named_in_the_verdict():
    """Failing beyond the training length says nothing about a baseline that failed within it."""
    from workbench.experiments.base import Variant
    from workbench.experiments.lengthgen import _analyze

    analyze = _analyze(train_max=10, check_length=20, target_pos="coupling", target=0.9, baseline_max=0.1,
                       baseline_beyond=15, baselines=("learned", "nope"), also_report=())
    curves = {"coupling": {10: 1.0, 20: 0.95}, "learned": {10: 0.2, 20: 0.0}, "nope": {10: 0.97, 20: 0.0}}
    finished = [(Variant(None, {"pos": pos, "seed": seed}), _FakeRun(curve))
                for pos, curve in curves.items() for seed in (0, 1)]
    _, summary = analyze(finished, fast=False)
    assert summary["target_met"] and summary["learned_below_0.1"]
    assert summary["at_10"] == {"coupling": 1.0, "learned": 0.2, "nope": 0.97}
    assert "not fitted in training: learned 20% at 10" in summary["verdict_note"]
    assert "nope" not in summary["verdict_note"]  # it fit, so its failure beyond 15 counts
