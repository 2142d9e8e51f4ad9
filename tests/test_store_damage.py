"""A store that survives damage: every command meets a damaged run folder with one line naming the
run and the file (exit 2, never a traceback), `workbench runs` marks it, and training the config
again replaces it."""
import json
import shutil

import pytest

from workbench.analysis import load_model
from workbench.cli import main
from workbench.config import RunConfig
from workbench.store import Run, list_runs, open_run
from workbench.train import train

TINY = ["task.max_digits=3", "model.n_layers=1", "model.d_model=16", "model.n_heads=2", "train.steps=12",
        "train.batch_size=16", "train.eval_samples=32", "probes.every=6", "probes.batch=4"]


def _truncate(path, keep):
    data = path.read_bytes()
    path.write_bytes(data[:keep(len(data))])


DAMAGES = {  # name -> (damaged file, what happens to it)
    "model cut short": ("model.safetensors", lambda p: _truncate(p, lambda n: n // 2)),
    "model cut inside its header": ("model.safetensors", lambda p: _truncate(p, lambda n: 100)),
    "model garbage": ("model.safetensors", lambda p: p.write_bytes(b"\x00garbage" * 50)),
    "model missing": ("model.safetensors", lambda p: p.unlink()),
    "status half-written": ("status.json", lambda p: _truncate(p, lambda n: n // 2)),
    "status garbage": ("status.json", lambda p: p.write_text("garbage")),
    "status empty": ("status.json", lambda p: p.write_text("")),
    "status not an object": ("status.json", lambda p: p.write_text("[1, 2]")),
    "status missing": ("status.json", lambda p: p.unlink()),
    "config half-written": ("config.json", lambda p: _truncate(p, lambda n: n // 2)),
    "config garbage": ("config.json", lambda p: p.write_text("{ not json")),
    "config not a config": ("config.json", lambda p: p.write_text(json.dumps({"model": {"d_model": "wide"}}))),
    "config missing": ("config.json", lambda p: p.unlink()),
    "metrics garbage": ("metrics.parquet", lambda p: p.write_bytes(b"PAR1" + b"\x13" * 500)),
    "metrics cut short": ("metrics.parquet", lambda p: _truncate(p, lambda n: n // 2)),
    "metrics missing": ("metrics.parquet", lambda p: p.unlink()),
    "snapshot cut short": ("snapshots/step_0000006.safetensors", lambda p: _truncate(p, lambda n: n - 10)),
}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One finished tiny run, trained once; each test damages its own copy."""
    root = tmp_path_factory.mktemp("pristine")
    config = RunConfig.load(None, TINY)
    train(config, progress=False, root=root)
    return root / config.run_id


@pytest.fixture
def damaged(request, trained, data_dir, monkeypatch, tmp_path):
    """(run id, damaged file name) of a copy of the tiny run in a fresh store, damaged one way."""
    monkeypatch.setenv("WORKBENCH_DEMO", str(tmp_path / "no-demo"))
    file, damage = DAMAGES[request.param]
    shutil.copytree(trained, data_dir / trained.name)
    damage(data_dir / trained.name / file)
    return trained.name, file


def _one_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


@pytest.mark.parametrize("damaged", list(DAMAGES), indirect=True)
@pytest.mark.parametrize("command", ["show", "eval-length", "export"])
def test_reading_a_damaged_run_says_which_file_in_one_line(damaged, command, capsys, tmp_path):
    run_id, file = damaged
    argv = {"show": ["show", run_id], "eval-length": ["eval-length", run_id, "--lengths", "2,3", "--n", "8"],
            "export": ["export", run_id, "--figure", "loss", "--out", str(tmp_path / "x.svg")]}[command]
    assert main(argv) == 2
    line = _one_line(capsys.readouterr().err)
    assert run_id in line and file in line and "damaged" in line


@pytest.mark.parametrize("damaged", list(DAMAGES), indirect=True)
def test_runs_lists_a_damaged_run_marked(damaged, capsys):
    run_id, file = damaged
    assert main(["runs", "--json"]) == 0
    captured = capsys.readouterr()
    (row,) = json.loads(captured.out)
    assert row["run_id"] == run_id and row["status"] == "damaged" and file in row["label"]
    line = _one_line(captured.err)
    assert run_id in line and file in line


@pytest.mark.parametrize("damaged", list(DAMAGES), indirect=True)
def test_training_the_config_again_replaces_a_damaged_run(damaged, trained, capsys):
    run_id, file = damaged
    assert main(["train", *TINY, "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip().splitlines()[-1] == run_id
    assert file in captured.err and "again" in captured.err
    run = open_run(run_id)  # intact again: open_run checks every file
    assert run.status()["status"] == "completed"
    assert run.metrics().equals(Run(trained).metrics())  # the same result the damaged run once held
    load_model(run)


def test_a_run_being_trained_is_not_damaged_for_lacking_files(data_dir):
    """A trainer holds the lock while it writes config and status one after the other."""
    from workbench.run_lock import run_lock

    folder = data_dir / "abcdef123456"
    with run_lock(folder):
        assert list_runs(include_demo=False).empty  # only the lock: not a run yet
        (folder / "config.json").write_text(json.dumps(RunConfig.load(None, TINY).to_dict()))
        assert Run(folder).damage() is None  # status.json not written yet, but the trainer is alive
    assert Run(folder).damage().file == "status.json"  # nobody holds the lock: it will never come


def test_dashboard_pickers_leave_out_damaged_runs(data_dir, trained, monkeypatch, tmp_path):
    from workbench import app_support

    monkeypatch.setenv("WORKBENCH_DEMO", str(tmp_path / "no-demo"))
    shutil.copytree(trained, data_dir / trained.name)
    shutil.copytree(trained, data_dir / "broken")
    (data_dir / "broken" / "status.json").write_text("{")
    table = app_support.runs_table()
    assert set(table.run_id) == {trained.name, "broken"}
    assert list(app_support.pickable(table).run_id) == [trained.name]
