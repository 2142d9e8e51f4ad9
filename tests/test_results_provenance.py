"""Shipped results and REPRODUCTIONS.md: the report is rendered from data/results/ alone, byte for byte,
and `--check` catches a change to the arithmetic through the canaries."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from workbench.cli import main
from workbench.experiments import EXPERIMENTS, VERDICTS, load_result, render, write_report
from workbench.experiments.canary import compare, compute_canary
from workbench.experiments.report import rules_agree
from workbench.experiments.results import ExperimentResult, read, shipped_root, write
from workbench.experiments.verdicts import Outcome

REPO_ROOT = Path(__file__).resolve().parent.parent
SHIPPED = REPO_ROOT / "data" / "results"


@pytest.mark.shipped
def test_reproductions_md_is_what_the_shipped_results_render(tmp_path):
    """Deleting REPRODUCTIONS.md and regenerating it gives the same file: the report reads no earlier copy."""
    committed = (REPO_ROOT / "REPRODUCTIONS.md").read_text()
    assert render() == committed, "run `workbench experiment report` and commit REPRODUCTIONS.md"
    fresh = tmp_path / "fresh" / "REPRODUCTIONS.md"
    fresh.parent.mkdir()
    assert write_report(fresh).read_text() == committed
    stale = tmp_path / "REPRODUCTIONS.md"
    stale.write_text("| `mimetic-recall` | measured elsewhere: 750 steps | reproduced |\n")
    assert write_report(stale).read_text() == committed  # nothing carried over from the file it replaces


@pytest.mark.shipped
def test_every_row_uses_the_five_verdicts_and_shows_each_seed():
    for experiment in EXPERIMENTS.values():
        result = load_result(experiment.name)
        if result is None:
            continue
        assert set(result.outcomes) == {claim.key for claim in experiment.claims}
        # read back from JSON (keys sorted), the summary must give the same verdicts and the same words
        assert rules_agree(experiment, result), experiment.name
        for key, outcome in result.outcomes.items():
            assert outcome.verdict in VERDICTS
            if outcome.verdict != "not tested":
                assert len(outcome.per_seed) >= 3, (experiment.name, key)
        assert result.provenance["commit"] and result.provenance["machine"]["torch"]
        if result.canary.get("kind") == "measurement":  # trains nothing: fingerprints its own arithmetic
            assert result.run_ids == [] and result.canary["values"]
        else:
            assert result.canary and result.canary["run_id"] == result.run_ids[0]
    table = [line for line in render().splitlines() if line.startswith("| `")]
    for line in table[: sum(len(e.claims) for e in EXPERIMENTS.values())]:
        assert any(f"**{verdict}**" in line for verdict in VERDICTS), line


def test_the_report_cites_papers_not_files_outside_the_repository():
    text = render()
    for outside in ("RESEARCH.md", "RECIPES.md", "seed 00", "seeds 00", "shared/"):
        assert outside not in text
    assert "## References" in text and "arXiv:2405.20671" in text


def test_a_result_file_round_trips(tmp_path):
    result = ExperimentResult("lengthgen-addition", pd.DataFrame({"pos": ["coupling"], "seed": [0], "length": [5],
                                                                    "exact_match": [float("nan")]}),
                              {"headline": "h"}, ["abc"], runtime_s=1.5, wall_s=None,
                              outcomes={"coupling": Outcome("inconclusive", {"0": "x"}, "why", {"0": True})})
    path = tmp_path / "r.json"
    write(path, result)
    back = read(path)
    assert back.outcomes == result.outcomes and back.summary == result.summary and back.run_ids == ["abc"]
    assert back.table.exact_match.isna().all()
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"name": "x", "summary": {}}))  # a cache written before results had a format
    assert read(old) is None


def test_the_canary_is_bit_for_bit_and_says_what_moved():
    config = EXPERIMENTS["lazy-neurons"].variants(True)[0].config
    canary = compute_canary(config, steps=8)
    again = compute_canary(config, steps=8)
    assert compare(canary, again) == (True, "identical")
    moved = json.loads(json.dumps(canary))
    moved["weights_abs_sum"] *= 1 + 1e-9
    same, detail = compare(canary, moved)
    assert not same and "weights' abs sum" in detail
    # another CPU rounds differently and training grows it: there only the metrics before the first update count
    moved["machine"] = {**canary["machine"], "cpu": "another CPU"}
    later = next(i for i, row in enumerate(moved["metrics"]) if row[0] > 0)
    moved["metrics"][later][5] *= 1.5
    same, detail = compare(moved, canary)
    assert same and "checked bit for bit only there" in detail and "before the first update agree" in detail
    first = next(i for i, row in enumerate(moved["metrics"]) if row[0] == 0 and row[5])
    moved["metrics"][first][5] *= 1 + 1e-3
    same, detail = compare(moved, canary)
    assert not same and "at step 0" in detail


def test_check_passes_with_no_shipped_results(capsys):
    assert main(["experiment", "report", "--check"]) == 0
    assert "0 of 0 shipped results match the code" in capsys.readouterr().out


def _copy_of_the_code(folder: Path) -> Path:
    shutil.copytree(REPO_ROOT / "workbench", folder / "workbench", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO_ROOT / "kernels", folder / "workbench" / "kernels",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def _check(code: Path, results: Path, *flags: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(code), "WORKBENCH_RESULTS": str(results)}
    return subprocess.run([sys.executable, "-m", "workbench.cli", "experiment", "report", "--check", *flags], cwd=code,
                          env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.shipped
@pytest.mark.slow
def test_check_fails_after_a_one_line_change_to_the_arithmetic(tmp_path):
    """On a copy of the code: the shipped result of the quickest canary (its canary made on this machine)
    passes, then fails once AdamW's first-moment decay changes from 0.9 to 0.91."""
    canaries = {p.stem: json.loads(p.read_text())["canary"] for p in SHIPPED.glob("*.json")}
    canaries = {n: c for n, c in canaries.items() if c.get("kind") != "measurement"}  # training canaries only
    name = min(canaries, key=lambda n: len(canaries[n]["metrics"]))  # the fewest probes: the quickest
    results = tmp_path / "results"
    results.mkdir()
    shutil.copy(SHIPPED / f"{name}.json", results)
    code = _copy_of_the_code(tmp_path / "code")
    passed = _check(code, results, "--record-machine")  # this machine's copy: bit for bit here, on any CPU
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert f"ok {name}" in passed.stdout
    train = code / "workbench" / "train.py"
    source = train.read_text()
    assert source.count("betas=(0.9, ") == 1
    train.write_text(source.replace("betas=(0.9, ", "betas=(0.91, "))
    failed = _check(code, results)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert f"STALE {name}" in failed.stdout and "canary" in failed.stdout


def test_check_names_a_result_whose_recipe_changed(monkeypatch, capsys):
    """A shipped result whose runs are not the recipe's any more is stale, before any canary runs."""
    name = "outliers"
    result = ExperimentResult(name, pd.DataFrame(), {}, ["not-the-recipe"], outcomes={})
    write(shipped_root() / f"{name}.json", result)
    assert main(["experiment", "report", "--check"]) == 1
    out = capsys.readouterr().out
    assert f"STALE {name}" in out and "recipe's runs changed" in out and "no canary" in out


def test_the_demo_runs_were_trained_by_this_arithmetic():
    """The shipped demo runs are what a newcomer sees first: each must be what today's code trains from its
    config (its first 20 steps' metrics, bit for bit on the machine that trained them), or `workbench demo
    build` has to remake it."""
    from workbench.demo import DEMO_MACHINE
    from workbench.store import Run, demo_root
    from workbench.experiments.canary import matches_stored_run

    runs = [Run(path) for path in sorted(demo_root().iterdir()) if (path / "config.json").exists()]
    assert runs
    trained_on = json.loads((demo_root() / DEMO_MACHINE).read_text())  # bit for bit there, elsewhere step 0
    for run in runs:
        agrees, detail = matches_stored_run(compute_canary(run.config(), steps=20), run, trained_on)
        assert agrees, f"demo run {run.run_id}: {detail}; rebuild with `workbench demo build`"


def test_a_canary_recorded_on_this_machine_is_then_checked_bit_for_bit_here(capsys):
    """A result made elsewhere is checked here only before the first update, until `--record-machine` adds
    this machine's copy of its canary; from then on a one-ulp change is caught here too."""
    name = "lazy-neurons"  # its canary logs metrics at step 0, so the check has something to compare
    shipped = json.loads((SHIPPED / f"{name}.json").read_text())
    shipped["canary"]["machine"] = {**shipped["canary"]["machine"], "cpu": "another CPU"}
    shipped.pop("canaries_elsewhere", None)
    path = shipped_root() / f"{name}.json"
    path.write_text(json.dumps(shipped))
    assert main(["experiment", "report", "--check", "--record-machine"]) == 0
    out = capsys.readouterr().out
    assert "checked bit for bit only there" in out and f"recorded {name}'s canary" in out
    recorded = json.loads(path.read_text())["canaries_elsewhere"]
    assert len(recorded) == 1 and recorded[0]["machine"] != shipped["canary"]["machine"]
    assert main(["experiment", "report", "--check"]) == 0
    assert "this machine's copy" in capsys.readouterr().out
    tampered = json.loads(path.read_text())
    tampered["canaries_elsewhere"][0]["weights_abs_sum"] *= 1 + 1e-12
    path.write_text(json.dumps(tampered))
    assert main(["experiment", "report", "--check"]) == 1
    assert f"STALE {name}" in capsys.readouterr().out


def test_a_result_written_by_an_earlier_experiment_is_not_a_code_change(tmp_path, monkeypatch):
    """Shipping several experiments from one work tree rewrites data/results/ between them; only a change
    to the code marks a result as made with uncommitted changes."""
    import subprocess

    from workbench.experiments import results

    def git(*args):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True,
                       capture_output=True)

    (tmp_path / "data" / "results").mkdir(parents=True)
    (tmp_path / "data" / "results" / "a.json").write_text("{}")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "start")
    monkeypatch.setattr(results, "REPO_ROOT", tmp_path)
    (tmp_path / "data" / "results" / "a.json").write_text('{"new": 1}')
    assert results.git_commit()["uncommitted_changes"] is False
    (tmp_path / "code.py").write_text("x = 2\n")
    assert results.git_commit()["uncommitted_changes"] is True
