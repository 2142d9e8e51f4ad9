"""The run store on disk: one folder per run, written atomically, read defensively.

    <root>/<run_id>/config.json        the RunConfig (canonical JSON)
                    status.json        running | interrupted | completed | diverged | failed, timings, versions
                    metrics.parquet    tidy rows: step, probe, layer, head, length, value
                    snapshots/         attention-like maps of the probe batch, one safetensors file per step
                    checkpoint.safetensors   model + optimizer + data-generator state, for resuming
                    model.safetensors        the final weights

One store for the command line, the dashboard and the notebooks, wherever they are started: the
root is WORKBENCH_DATA when that names a folder; else data/runs in the project's repository (when
workbench runs from a checkout: an editable install or PYTHONPATH); else, for an installed package,
the user's data folder ($XDG_DATA_HOME/workbench/runs, by default ~/.local/share/workbench/runs).
Never the working directory: a notebook started in notebooks/ must see the runs the dashboard
sees. Shipped demo runs live in data/demo/ of the repository and are listed beside the user's runs
(read-only).

A file damaged from outside (damage.py) is met with a DamagedRun error that names the run and the
file, never a parser's traceback; `list_runs` marks such runs, and training the config again
replaces them (train.py).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pandas as pd

from .damage import find_damage, is_empty_folder, read_json_file, safetensors_problem
from .errors import ConfigError, DamagedRun
from .run_files import CHECKPOINT, COMPLETED, CONFIG, FINISHED, METRIC_COLUMNS, METRICS, MODEL, STATUS  # noqa: F401
from .run_files import SNAPSHOT_WEIGHTS

RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
REPO_ROOT = Path(__file__).resolve().parent.parent


def project_root() -> Path | None:
    """The repository folder when workbench runs from a checkout; None for an installed package
    (site-packages holds no pyproject.toml beside the package)."""
    return REPO_ROOT if (REPO_ROOT / "pyproject.toml").is_file() else None


def user_data_root() -> Path:
    """Where an installed package keeps its runs: the XDG data folder, as other Linux tools do."""
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "workbench" / "runs"


def data_root() -> Path:
    named = os.environ.get("WORKBENCH_DATA")
    if named:
        return Path(named).expanduser()
    project = project_root()
    return project / "data" / "runs" if project is not None else user_data_root()


def data_root_origin() -> str:
    """Why the store is where it is, in a few words for the Home page and `workbench runs`."""
    if os.environ.get("WORKBENCH_DATA"):
        return "set by WORKBENCH_DATA"
    if project_root() is not None:
        return "the repository's default; WORKBENCH_DATA names another"
    return "the user default for an installed package; WORKBENCH_DATA names another"


def demo_root() -> Path:
    return Path(os.environ.get("WORKBENCH_DEMO") or REPO_ROOT / "data" / "demo")


# --- atomic writes --------------------------------------------------------------------------------
def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_json(path: Path, value: Any) -> None:
    atomic_write_bytes(path, (json.dumps(value, indent=2, sort_keys=True) + "\n").encode())


def atomic_save(path: Path, write) -> None:
    """Call write(tmp_path) then rename: for writers that want a file name (parquet, safetensors)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def safe_child(root: Path, name: str, field: str = "run") -> Path:
    """root/name, refusing names that could escape root."""
    if not RUN_ID_PATTERN.match(name or "") or name in (".", ".."):
        raise ConfigError(field, name, "expected letters, digits, '_', '-' or '.' (at most 64), no path separators")
    path = (root / name).resolve()
    if path.parent != root.resolve():
        raise ConfigError(field, name, "must name a folder directly inside the store")
    return path


# --- one run --------------------------------------------------------------------------------------
class Run:
    def __init__(self, path: Path, read_only: bool = False):
        self.path, self.read_only = Path(path), read_only
        self.run_id = self.path.name

    def __repr__(self) -> str:
        return f"Run({self.run_id!r}, status={self.status().get('status')!r})"

    # reading: a file that cannot be read raises DamagedRun, naming it
    def config(self):
        from .config import RunConfig

        values = read_json_file(self.run_id, self.path / CONFIG)
        try:
            return RunConfig.from_dict(values)
        except ConfigError as error:
            raise DamagedRun(self.run_id, CONFIG, f"not a config this version reads: {error}") from None

    def status(self) -> dict[str, Any]:
        """The status, or {} before a trainer has written one."""
        path = self.path / STATUS
        return read_json_file(self.run_id, path) if path.exists() else {}

    def metrics(self) -> pd.DataFrame:
        path = self.path / METRICS
        if not path.exists():
            return pd.DataFrame({c: pd.Series(dtype="int64" if c not in ("probe", "value") else
                                              ("object" if c == "probe" else "float64")) for c in METRIC_COLUMNS})
        try:
            frame = pd.read_parquet(path)
        except Exception as error:  # noqa: BLE001 - pyarrow raises several types for one bad file
            raise DamagedRun(self.run_id, METRICS, f"not a readable Parquet file: {error}") from None
        missing = [c for c in METRIC_COLUMNS if c not in frame.columns]
        if missing:
            raise DamagedRun(self.run_id, METRICS, f"lacks the columns {', '.join(missing)}")
        return frame

    def damage(self, locked_by_us: bool = False) -> DamagedRun | None:
        """The first damaged file of this run (cheap checks, nothing loaded), or None. locked_by_us: the
        caller holds the run's lock, so no other trainer is halfway through writing it."""
        return find_damage(self.path, self.read_only, locked_by_us)

    def check(self) -> "Run":
        """This run, or DamagedRun when one of its files is damaged."""
        damage = self.damage()
        if damage is not None:
            raise damage
        return self

    def finished(self) -> bool:
        """Ended (completed or diverged) with every file intact: a result to reuse, not to retrain."""
        try:
            return self.status().get("status") in FINISHED and self.damage() is None
        except DamagedRun:
            return False

    def snapshot_steps(self) -> list[int]:
        folder = self.path / "snapshots"
        return sorted(int(p.stem.split("_")[1]) for p in folder.glob("step_*.safetensors")) if folder.exists() else []

    def weight_steps(self) -> list[int]:
        """Steps whose weights the run saved (probes.weights=true)."""
        folder = self.path / SNAPSHOT_WEIGHTS
        return sorted(int(p.stem.split("_")[1]) for p in folder.glob("step_*.safetensors")) if folder.exists() else []

    def snapshot(self, step: int) -> tuple[dict, dict]:
        """(arrays, metadata) of the snapshot at `step`; metadata['tokens'] holds decoded tokens."""
        from safetensors import safe_open

        path = self.path / "snapshots" / f"step_{step:07d}.safetensors"
        if not path.exists():
            raise ConfigError("step", step, f"no snapshot; choose one of: {', '.join(map(str, self.snapshot_steps()))}")
        problem = safetensors_problem(path)
        try:
            if problem is None:
                with safe_open(str(path), framework="pt") as handle:
                    arrays = {k: handle.get_tensor(k) for k in handle.keys()}
                    metadata = {k: json.loads(v) for k, v in (handle.metadata() or {}).items()}
                return arrays, metadata
        except Exception as error:  # noqa: BLE001 - safetensors and JSON errors alike
            problem = str(error)
        raise DamagedRun(self.run_id, str(path.relative_to(self.path)), problem)

    # writing
    def write_status(self, **changes) -> dict[str, Any]:
        status = {**self.status(), **changes}
        atomic_write_json(self.path / STATUS, status)
        return status

    def write_metrics(self, frame: pd.DataFrame) -> None:
        frame = frame[METRIC_COLUMNS].reset_index(drop=True)
        atomic_save(self.path / "metrics.parquet", lambda tmp: frame.to_parquet(tmp, index=False))

    def append_metrics(self, rows: list[dict]) -> None:
        if rows:
            self.write_metrics(pd.concat([self.metrics(), metrics_frame(rows)], ignore_index=True))


def metrics_frame(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=METRIC_COLUMNS)
    for column in ("step", "layer", "head", "length"):
        frame[column] = frame[column].fillna(-1).astype("int64")
    frame["value"] = frame["value"].astype("float64")
    frame["probe"] = frame["probe"].astype(str)
    return frame


# --- the store ------------------------------------------------------------------------------------
def run_path(run_id: str, root: Path | None = None) -> Path:
    return safe_child(Path(root or data_root()), run_id)


def open_run(run_id: str) -> Run:
    """A run by id (or unique id prefix) from the user's store, else from the shipped demo runs.
    A damaged run raises DamagedRun (one line naming the file) rather than failing later, deep inside
    whatever reads it."""
    for root, read_only in ((data_root(), False), (demo_root(), True)):
        if not root.exists():
            continue
        exact = safe_child(root, run_id) if RUN_ID_PATTERN.match(run_id or "") else None
        if exact is not None and _is_run_folder(exact):
            return Run(exact, read_only).check()
        matches = [p for p in root.iterdir() if p.name.startswith(run_id) and _is_run_folder(p)]
        if len(matches) == 1:
            return Run(matches[0], read_only).check()
    safe_child(data_root(), run_id)  # a malformed id gets the clearer message
    raise ConfigError("run", run_id, "no such run; `workbench runs` lists them")


def _is_run_folder(path: Path) -> bool:
    """A folder of the store with something in it (a damaged run too; not one a trainer has only just
    created and locked)."""
    return path.is_dir() and not path.name.startswith(".") and not is_empty_folder(path)


def _summary(run: Run) -> dict[str, Any]:
    config = run.config()
    status = run.status()
    metrics = run.metrics()
    final = metrics[(metrics.length == -1) & (metrics.layer == -1)]
    last = final.sort_values("step").groupby("probe")["value"].last() if len(final) else {}
    return {
        "run_id": run.run_id, "status": status.get("status", "unknown"),
        "task": config.task.name, "mixer": config.model.layers or config.model.mixer, "pos": config.model.pos,
        "layers": len(config.model.layer_mixers()), "d_model": config.model.d_model,
        "params": status.get("n_parameters"),  # tells apart runs whose other columns agree (e.g. MLP widths)
        "seed": config.train.seed,
        "steps": config.train.steps, "step": status.get("step", 0),
        "loss": last.get("loss", float("nan")) if len(final) else float("nan"),
        "exact_match": last.get("exact_match", float("nan")) if len(final) else float("nan"),
        "elapsed_s": status.get("elapsed_s", float("nan")), "demo": run.read_only,
        "label": status.get("label", ""), "created": status.get("created", ""),
    }


def list_runs(include_demo: bool = True) -> pd.DataFrame:
    """One row per run. A damaged run is listed with status "damaged" (its label names the file) and
    a warning naming the file and what is wrong with it."""
    rows = []
    roots = [(data_root(), False)] + ([(demo_root(), True)] if include_demo else [])
    seen = set()
    for root, read_only in roots:
        if not root.exists():
            continue
        for folder in sorted(p for p in root.iterdir() if _is_run_folder(p)):
            if folder.name in seen:
                continue
            seen.add(folder.name)
            run = Run(folder, read_only)
            try:
                rows.append(_summary(run.check()))
            except Exception as error:  # a damaged run must not hide the others
                damage = error if isinstance(error, DamagedRun) else DamagedRun(run.run_id, "?", repr(error))
                warnings.warn(str(damage), stacklevel=2)
                rows.append(_damaged_summary(run, damage))
    return pd.DataFrame(rows, columns=LIST_COLUMNS)


LIST_COLUMNS = ["run_id", "status", "task", "mixer", "pos", "layers", "d_model", "params", "seed", "steps", "step",
                "loss", "exact_match", "elapsed_s", "demo", "label", "created"]


def _damaged_summary(run: Run, damage: DamagedRun) -> dict[str, Any]:
    """A row for a damaged run: what its config still tells (when it reads), status "damaged"."""
    row = {column: float("nan") for column in LIST_COLUMNS}
    row.update(run_id=run.run_id, status="damaged", task="?", mixer="?", pos="?", demo=run.read_only,
               label=f"damaged {damage.file}", created="")
    try:
        config = run.config()
    except DamagedRun:
        return row
    row.update(task=config.task.name, mixer=config.model.layers or config.model.mixer, pos=config.model.pos,
               layers=len(config.model.layer_mixers()), d_model=config.model.d_model, seed=config.train.seed,
               steps=config.train.steps)
    return row


def delete_run(run_id: str) -> None:
    run = open_run(run_id)
    if run.read_only:
        raise ConfigError("run", run_id, "is a shipped demo run and cannot be deleted")
    shutil.rmtree(run.path)
