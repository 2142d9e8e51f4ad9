"""The run store: atomic, defensive, and closed to path tricks."""
import json

import pandas as pd
import pytest
from safetensors.torch import save_file

from workbench.errors import ConfigError
from workbench.store import Run, atomic_write_json, list_runs, metrics_frame, open_run, run_path


def fake_run(root, run_id, **status):
    from workbench.config import RunConfig

    path = root / run_id
    path.mkdir(parents=True)
    atomic_write_json(path / "config.json", RunConfig.load(None, []).to_dict())
    atomic_write_json(path / "status.json", {"status": "completed", "step": 5, **status})
    Run(path).write_metrics(metrics_frame([{"step": 5, "probe": "loss", "value": 0.5}]))
    save_file({}, str(path / "model.safetensors"))  # a completed run has its weights (none, here)
    return path


def test_list_runs_marks_a_corrupt_folder_with_a_warning(data_dir, monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBENCH_DEMO", str(tmp_path / "no-demo"))
    fake_run(data_dir, "goodrun")
    broken = data_dir / "brokenrun"
    broken.mkdir()
    (broken / "config.json").write_text("{ not json")
    with pytest.warns(UserWarning, match="brokenrun: damaged config.json"):
        table = list_runs()
    assert list(table.run_id) == ["brokenrun", "goodrun"]
    assert list(table.status) == ["damaged", "completed"]
    assert table.loc[1, "loss"] == pytest.approx(0.5)


@pytest.mark.parametrize("bad", ["../etc", "a/b", "..", "", "x" * 65, "/abs"])
def test_run_ids_cannot_escape_the_store(data_dir, bad):
    with pytest.raises(ConfigError):
        run_path(bad)
    with pytest.raises(ConfigError):
        open_run(bad)


def test_atomic_write_leaves_no_partial_file(tmp_path, monkeypatch):
    target = tmp_path / "status.json"
    atomic_write_json(target, {"status": "running"})

    class Boom(Exception):
        pass

    def explode(*args, **kwargs):
        raise Boom

    monkeypatch.setattr(json, "dumps", explode)
    with pytest.raises(Boom):
        atomic_write_json(target, {"status": "completed"})
    monkeypatch.undo()
    assert json.loads(target.read_text()) == {"status": "running"}
    assert [p.name for p in tmp_path.iterdir()] == ["status.json"]


def test_metrics_are_tidy_with_fixed_types(tmp_path):
    run = Run(tmp_path / "r")
    run.path.mkdir()
    run.append_metrics([{"step": 1, "probe": "loss", "value": 2.0}])
    run.append_metrics([{"step": 2, "probe": "entropy", "layer": 0, "head": 1, "value": 1.5}])
    frame = run.metrics()
    assert list(frame.columns) == ["step", "probe", "layer", "head", "length", "value"]
    assert frame.dtypes["layer"] == "int64" and frame.loc[0, "layer"] == -1
    assert isinstance(frame, pd.DataFrame) and len(frame) == 2


def test_open_run_by_unique_prefix(data_dir):
    fake_run(data_dir, "abcdef123456")
    assert open_run("abcdef").run_id == "abcdef123456"
    with pytest.raises(ConfigError, match="no such run"):
        open_run("zzzz")
