"""An experiment's result as one JSON file, and where those files live.

The recipe's own result (full budget, every seed) is shipped with the repository in data/results/NAME.json:
REPRODUCTIONS.md is rendered from those files alone, so anyone can regenerate it and trace each row to
its configs, per-seed numbers, verdicts, times, versions, commit and canary. Fast-mode and other-budget
results are working copies, cached in the run store under .experiments/ (a dot-folder the run listing
skips); REPRODUCTIONS.md never reads them.
"""
from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..store import REPO_ROOT, atomic_write_json, data_root, safe_child
from .registry import EXPERIMENTS
from .verdicts import Outcome

FORMAT = 1


@dataclass
class ExperimentResult:
    name: str
    table: pd.DataFrame  # one row per (variant, measurement): tidy
    summary: dict  # the analysis' numbers, per seed where there are seeds; JSON-serializable
    run_ids: list[str] = field(default_factory=list)
    runtime_s: float = 0.0  # the runs' training time summed (one core's work) plus the analysis
    fast: bool = False
    wall_s: float | None = None  # wall time of the call that trained the runs (None: not known)
    workers: int = 1  # runs trained side by side in that call
    budget: str = ""  # "" for the recipe's own budget, else e.g. "1500 steps, seeds 0" (see Budget)
    outcomes: dict[str, Outcome] = field(default_factory=dict)  # claim key -> verdict, per-seed numbers
    runs: list[dict] = field(default_factory=list)  # run_id, labels, config of each variant
    provenance: dict = field(default_factory=dict)  # commit, versions, machine, cores, times
    canary: dict | None = None  # experiments/canary.py; only the shipped result has one
    # the same canary recomputed on other machines (`report --check --record-machine`): bit for bit there too
    canaries_elsewhere: list[dict] = field(default_factory=list)

    def figure(self):
        return EXPERIMENTS[self.name].figure(self)

    @property
    def canaries(self) -> list[dict]:
        """Its canary and the copies other machines recorded of it."""
        return [self.canary, *self.canaries_elsewhere] if self.canary else []

    @property
    def headline(self) -> str:
        return self.summary.get("headline", "")

    def verdicts(self) -> dict[str, str]:
        """claim key -> verdict word."""
        return {key: outcome.verdict for key, outcome in self.outcomes.items()}


# --- where results live -----------------------------------------------------------------------------
def shipped_root() -> Path:
    """data/results/ of the repository, unless WORKBENCH_RESULTS names another folder."""
    return Path(os.environ.get("WORKBENCH_RESULTS") or REPO_ROOT / "data" / "results")


def shipped_path(name: str) -> Path:
    return safe_child(shipped_root(), f"{name}.json", field="experiment")


def cache_root() -> Path:
    return data_root() / ".experiments"


# --- provenance -------------------------------------------------------------------------------------
def git_commit() -> dict:
    """The commit of the code that made a result, and whether the work tree differed from it (results,
    REPRODUCTIONS.md and the experiments' notes aside)."""
    def git(*args) -> str:
        return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=30).stdout

    try:
        commit = git("rev-parse", "HEAD").strip()
        # each line is "XY path": no strip(), which would eat the first line's leading space and its path's
        # first letter, so that a result written by an earlier experiment counted as a code change
        changed = [line for line in git("status", "--porcelain", "--untracked-files=no").splitlines()
                   if line and not line[3:].startswith(("data/results/", "REPRODUCTIONS.md",
                                                        "workbench/experiments/notes/"))]
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "uncommitted_changes": None}
    return {"commit": commit or None, "uncommitted_changes": bool(changed)}


# --- the file ---------------------------------------------------------------------------------------
def to_json(result: ExperimentResult) -> dict:
    table = json.loads(result.table.to_json(orient="split", index=False)) if len(result.table.columns) else \
        {"columns": [], "data": []}
    return {"format": FORMAT, "name": result.name, "fast": result.fast, "budget": result.budget,
            "verdicts": {key: outcome.to_dict() for key, outcome in result.outcomes.items()},
            "summary": result.summary, "runs": result.runs or [{"run_id": run_id} for run_id in result.run_ids],
            "times": {"runtime_s": result.runtime_s, "wall_s": result.wall_s, "workers": result.workers},
            "provenance": result.provenance, "canary": result.canary,
            "table": {"columns": table["columns"], "data": table["data"]}} | (
        {"canaries_elsewhere": result.canaries_elsewhere} if result.canaries_elsewhere else {})


def from_json(data: dict) -> ExperimentResult:
    table = pd.DataFrame(data["table"]["data"], columns=data["table"]["columns"])
    times = data["times"]
    return ExperimentResult(
        data["name"], table, data["summary"], [run["run_id"] for run in data["runs"]], times["runtime_s"],
        data["fast"], times.get("wall_s"), times.get("workers", 1), data.get("budget", ""),
        {key: Outcome.from_dict(value) for key, value in data["verdicts"].items()}, data["runs"],
        data.get("provenance", {}), data.get("canary"), data.get("canaries_elsewhere", []))


def write(path: Path, result: ExperimentResult) -> None:
    atomic_write_json(path, to_json(result))


def read(path: Path) -> ExperimentResult | None:
    """The result in `path`; None when there is none, or it is in a format older than this code reads
    (a cache written before results had verdicts and provenance)."""
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    if data.get("format") != FORMAT:
        return None
    return from_json(data)
