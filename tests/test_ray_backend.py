"""Sweeps on Ray train the same runs as sweeps on the local process pool, and survive faults.

Each cluster test runs tests/ray_scenario.py in its own network namespace (loopback only: Ray
binds all interfaces) and PID namespace (every process it started ends with it), which needs
`unshare` and the right to create namespaces (root, or unprivileged user namespaces).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from workbench.config import RunConfig
from workbench.errors import ConfigError
from workbench.parallel import choose_backend, train_many
from workbench.store import Run, run_path
from workbench.sweep import split_values, sweep_jobs

SCENARIO = Path(__file__).with_name("ray_scenario.py")
BASE = ["task.name=copy", "task.max_length=4", "model.n_layers=1", "model.d_model=16", "train.batch_size=8",
        "train.eval_every=50", "train.eval_samples=8", "probes.every=50", "probes.batch=4"]


def _namespaces_work() -> bool:
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "--net", "--pid", "--fork", "--mount-proc", "true"], capture_output=True)
    return probe.returncode == 0


needs_namespaces = pytest.mark.skipif(not _namespaces_work(),
                                      reason="needs `unshare` with network and PID namespaces (run as root)")


def _scenario(name: str, sweep_args: list[str], store: Path, tmp_path: Path) -> dict:
    pytest.importorskip("ray")
    out = tmp_path / f"{name}.json"
    env = {**os.environ, "WORKBENCH_DATA": str(store), "HOME": str(tmp_path),  # Ray's ~/.ray stays here
           "RAY_USAGE_STATS_ENABLED": "0", "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    env.pop("RAY_ADDRESS", None)
    subprocess.run(["unshare", "--net", "--pid", "--fork", "--mount-proc", sys.executable, str(SCENARIO), name,
                    str(out), "--", *sweep_args], env=env, check=True, timeout=900)
    return json.loads(out.read_text())


def _local_runs(sweep_args: list[str], store: Path, monkeypatch) -> list[Run]:
    monkeypatch.setenv("WORKBENCH_DATA", str(store))
    overrides = [a for a in sweep_args if not a.startswith("--vary")]
    vary = [a.split("=", 1)[1] for a in sweep_args if a.startswith("--vary=")]
    return train_many(sweep_jobs(None, overrides, vary), workers=2, progress=False, backend="local")


def _assert_same_runs(rows: list[dict], local: list[Run], store: Path) -> None:
    assert [row["run_id"] for row in rows] == [run.run_id for run in local]
    for run in local:
        on_ray = Run(run_path(run.run_id, store))
        assert on_ray.status()["status"] == "completed"
        pd.testing.assert_frame_equal(on_ray.metrics(), run.metrics())  # bit for bit: same machine, same code


def _no_process_left(marker: Path) -> None:
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            assert str(marker) not in cmdline.read_text(errors="replace"), "a scenario process outlived its test"
        except OSError:
            continue


@needs_namespaces
def test_sweep_on_a_two_node_cluster_equals_the_local_sweep(tmp_path, monkeypatch):
    sweep = [*BASE, "train.steps=100", "--vary=train.seed=0,1,2,3"]
    report = _scenario("cluster", sweep, tmp_path / "ray", tmp_path)
    assert report["returncode"] == 0, report["stderr"]
    local = _local_runs(sweep, tmp_path / "local", monkeypatch)
    _assert_same_runs(json.loads(report["stdout"]), local, tmp_path / "ray")
    _no_process_left(tmp_path / "ray")


@needs_namespaces
def test_a_killed_worker_is_retried_and_its_run_resumes(tmp_path, monkeypatch):
    sweep = [*BASE, "train.steps=600", "train.checkpoint_every=100", "--vary=train.seed=0,1"]
    report = _scenario("kill", sweep, tmp_path / "ray", tmp_path)
    assert report["returncode"] == 0, report["stderr"]
    killed = report["killed"]
    assert killed["step"] < 600  # it really was killed mid-run
    local = _local_runs(sweep, tmp_path / "local", monkeypatch)
    _assert_same_runs(json.loads(report["stdout"]), local, tmp_path / "ray")
    resumed = Run(run_path(killed["run_id"], tmp_path / "ray")).status()
    assert resumed["pid"] != killed["pid"]  # finished by another worker: Ray ran the trial again


@needs_namespaces
def test_a_node_that_leaves_mid_sweep_has_its_run_finished_elsewhere(tmp_path, monkeypatch):
    sweep = [*BASE, "train.steps=1500", "train.checkpoint_every=100", "--vary=train.seed=0,1"]
    report = _scenario("node", sweep, tmp_path / "ray", tmp_path)
    assert report["returncode"] == 0, report["stderr"]
    assert len(report["removed"]) == 1  # the run training on the second node lost its worker mid-run
    local = _local_runs(sweep, tmp_path / "local", monkeypatch)
    _assert_same_runs(json.loads(report["stdout"]), local, tmp_path / "ray")


@needs_namespaces
def test_ctrl_c_on_the_driver_leaves_resumable_runs(tmp_path, monkeypatch):
    sweep = [*BASE, "train.steps=20000", "train.checkpoint_every=100", "--vary=train.seed=0,1"]
    report = _scenario("interrupt", sweep, tmp_path / "ray", tmp_path)
    assert report["returncode"] == 130, report["stderr"]
    statuses = [Run(path.parent).status() for path in (tmp_path / "ray").glob("*/status.json")]
    assert sorted(s["status"] for s in statuses) == ["interrupted", "interrupted"]
    assert all((tmp_path / "ray" / s["run_id"] / "checkpoint.safetensors").exists() for s in statuses)


def test_backend_choice(monkeypatch):
    monkeypatch.delenv("WORKBENCH_BACKEND", raising=False)
    assert choose_backend() == "local"
    monkeypatch.setenv("WORKBENCH_BACKEND", "dask")
    with pytest.raises(ConfigError, match="WORKBENCH_BACKEND.*dask.*local, ray"):
        choose_backend()
    with pytest.raises(ConfigError, match="--backend.*spark"):
        choose_backend("spark")


def test_without_ray_the_backend_names_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    with pytest.raises(ConfigError, match=r"\.\[ray\]"):
        choose_backend("ray")


def test_cli_refuses_ray_options_without_ray_backend(capsys):
    from workbench.cli import main

    assert main(["sweep", "train.steps=4", "--vary", "train.seed=0", "--ray-address", "127.0.0.1:6379"]) == 2
    assert "--ray-address" in capsys.readouterr().err


def test_cli_refuses_an_address_where_no_cluster_answers(capsys, data_dir):
    pytest.importorskip("ray")
    from workbench.cli import main

    code = main(["sweep", "train.steps=4", "--vary", "train.seed=0", "--backend", "ray", "--ray-address", "127.0.0.1:1"])
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no Ray cluster answers" in err


def test_sweep_is_the_product_of_the_varied_keys():
    jobs = sweep_jobs(None, ["train.steps=5"], ["model.pos=rope,nope", "train.seed=0,1,2"], label="demo")
    assert len(jobs) == 6
    assert [(c.model.pos, c.train.seed) for c, _ in jobs][:4] == [("rope", 0), ("rope", 1), ("rope", 2), ("nope", 0)]
    assert all(c.train.steps == 5 for c, _ in jobs)
    assert jobs[0][1] == "demo, model.pos=rope, train.seed=0"
    assert split_values("[5,10],[10,20]") == ["[5,10]", "[10,20]"]
    with pytest.raises(ConfigError, match="--vary"):
        sweep_jobs(None, [], ["train.seed"])
    with pytest.raises(ConfigError, match="varied once"):
        sweep_jobs(None, [], ["train.seed=0", "train.seed=1"])


def test_sweep_cli_trains_locally_and_fetches_the_second_time(data_dir, capsys):
    from workbench.cli import main

    args = ["sweep", *BASE, "train.steps=10", "--vary", "train.seed=0,1", "--quiet", "--json", "--workers", "1"]
    assert main(args) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [row["status"] for row in rows] == ["completed", "completed"]
    expected = [RunConfig.load(None, [*BASE, "train.steps=10", f"train.seed={s}"]).run_id for s in (0, 1)]
    assert [row["run_id"] for row in rows] == expected
    stamp = (run_path(expected[0]) / "status.json").stat().st_mtime_ns
    assert main(args) == 0
    assert (run_path(expected[0]) / "status.json").stat().st_mtime_ns == stamp


def test_a_failed_trial_is_listed_with_its_reason_beside_the_others():
    from workbench.ray_backend import _failure_table, _reason

    class TaskError(Exception):  # how Ray wraps a trial's own exception: the original is its cause
        cause = FileExistsError("data/runs/abc is a file")

    jobs = sweep_jobs(None, ["train.steps=5"], ["train.seed=0,1"])
    table = _failure_table(jobs, [0, 1], [None, None], {1: _reason(TaskError("traceback..."))})
    lines = table.splitlines()
    assert lines[0] == "1 of 2 trials failed:"
    assert lines[1].split()[-1] == "completed" and jobs[0][0].run_id[:12] in lines[1]
    assert lines[2].endswith("failed: FileExistsError: data/runs/abc is a file")
