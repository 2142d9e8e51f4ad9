"""One run store for the command line, the dashboard and the notebooks, wherever they are started.

The end-to-end check needs the default store (no WORKBENCH_DATA), which is data/runs of the
repository: the real repository's would collect test runs. So it runs on a copy of the code laid
out as a checkout in a temporary folder (the package, kernels/ mapped as workbench.kernels,
pyproject.toml, app/, notebooks/), whose own data/runs is the default store of every process that
imports that copy. Nothing but the folder differs from a fresh clone.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workbench import store

REPO_ROOT = Path(__file__).resolve().parent.parent
TINY = ["task.name=copy", "task.max_length=4", "model.n_layers=1", "model.d_model=16", "model.n_heads=2",
        "train.steps=4", "train.batch_size=8", "train.eval_every=0", "train.threads=1"]
HOME_ROWS = """
from streamlit.testing.v1 import AppTest
app = AppTest.from_file("app/Home.py", default_timeout=300).run()
assert not app.exception, [e.value for e in app.exception]
print("\\n".join(app.dataframe[0].value.run_id))
print("\\n".join(caption.value for caption in app.caption))
"""


def checkout_copy(folder: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints")
    shutil.copytree(REPO_ROOT / "workbench", folder / "workbench", ignore=ignore)
    shutil.copytree(REPO_ROOT / "kernels", folder / "workbench" / "kernels", ignore=ignore)
    shutil.copytree(REPO_ROOT / "app", folder / "app", ignore=ignore)
    shutil.copy(REPO_ROOT / "pyproject.toml", folder)
    (folder / "notebooks").mkdir()
    return folder


def python(code_folder: Path, cwd: Path, *args: str) -> str:
    """Run Python on the copy of the code, with default settings: no WORKBENCH_DATA."""
    env = {key: value for key, value in os.environ.items() if key not in ("WORKBENCH_DATA", "WORKBENCH_DEMO")}
    env["PYTHONPATH"] = str(code_folder)
    done = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.slow  # three fresh Python processes that import torch
def test_a_run_trained_from_notebooks_folder_is_listed_from_the_repository_root(tmp_path):
    checkout = checkout_copy(tmp_path / "clone")
    notebook_code = ("from workbench.config import RunConfig; from workbench.train import train; "
                     f"print(train(RunConfig.load(None, {TINY!r}), progress=False).run_id)")
    run_id = python(checkout, checkout / "notebooks", "-c", notebook_code).split()[-1]

    expected_store = checkout / "data" / "runs"
    assert (expected_store / run_id / "config.json").exists()
    assert not (checkout / "notebooks" / "data").exists()  # where the working directory would have put it

    listed = json.loads(python(checkout, checkout, "-m", "workbench", "runs", "--json"))
    assert run_id in [row["run_id"] for row in listed]
    assert f"run store: {expected_store}" in python(checkout, checkout, "-m", "workbench", "runs")
    home = python(checkout, checkout, "-c", HOME_ROWS)  # the dashboard's Home page, started from the root
    assert run_id in home.splitlines()
    assert f"Run store: `{expected_store}`" in home


def test_the_default_store_is_the_repository_s_from_any_working_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("WORKBENCH_DATA", raising=False)
    monkeypatch.chdir(tmp_path)
    assert store.data_root() == REPO_ROOT / "data" / "runs"
    assert "repository" in store.data_root_origin()


def test_an_installed_package_keeps_its_runs_in_the_user_data_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("WORKBENCH_DATA", raising=False)
    monkeypatch.setattr(store, "REPO_ROOT", tmp_path / "site-packages")  # no pyproject.toml beside the package
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert store.project_root() is None
    assert store.data_root() == tmp_path / "xdg" / "workbench" / "runs"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert store.data_root() == tmp_path / "home" / ".local" / "share" / "workbench" / "runs"
    assert "user default" in store.data_root_origin()


def test_workbench_data_names_another_store(monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBENCH_DATA", str(tmp_path / "elsewhere"))
    assert store.data_root() == tmp_path / "elsewhere"
    assert "WORKBENCH_DATA" in store.data_root_origin()
