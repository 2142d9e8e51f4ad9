"""How a run folder can be damaged, and cheap checks that find out without loading anything.

The store writes every file atomically, so it never leaves a half-written one itself; damage comes
from outside: a disk that filled up, a copy cut short, an edit by hand. Each check reads as little
as it can (a JSON file, a Parquet footer, a safetensors header and the file's size), so listing a
store of many runs stays quick, and names the first damaged file it meets.
"""
from __future__ import annotations

import json
from pathlib import Path

from .errors import DamagedRun
from .run_files import CHECKPOINT, COMPLETED, CONFIG, FINISHED, LOCK, METRIC_COLUMNS, METRICS, MODEL, SNAPSHOTS, STATUS
from .run_lock import is_locked



def read_json_file(run_id: str, path: Path) -> dict:
    """The file's JSON object, or DamagedRun naming the file."""
    try:
        value = json.loads(path.read_text())
    except FileNotFoundError:
        raise DamagedRun(run_id, path.name, "missing") from None
    except (OSError, ValueError) as error:  # ValueError: JSON and Unicode decoding
        raise DamagedRun(run_id, path.name, f"not valid JSON: {_short(error)}") from None
    if not isinstance(value, dict):
        raise DamagedRun(run_id, path.name, f"expected a JSON object, found {type(value).__name__}")
    return value


def safetensors_problem(path: Path) -> str | None:
    """None when the header parses and the file is as long as the header says; else what is wrong.
    A copy cut short (the common damage) always fails the length test."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            prefix = handle.read(8)
            if len(prefix) < 8:
                return f"cut short at {size} bytes"
            header_bytes = int.from_bytes(prefix, "little")
            if header_bytes > size - 8:
                return f"cut short at {size} bytes, inside its header"
            header = json.loads(handle.read(header_bytes))
        end = max((entry["data_offsets"][1] for name, entry in header.items() if name != "__metadata__"), default=0)
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError) as error:
        return f"unreadable safetensors header: {_short(error)}"
    expected = 8 + header_bytes + end
    return None if size == expected else f"{size} bytes where its header promises {expected}"


def parquet_problem(path: Path, columns: list[str]) -> str | None:
    """None when the Parquet footer reads and holds the metric columns (the data pages are read, and
    checked, only when the metrics are)."""
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(path).names
    except Exception as error:  # noqa: BLE001 - pyarrow raises several types for one bad file
        return f"not a readable Parquet file: {_short(error)}"
    missing = [c for c in columns if c not in names]
    return f"lacks the columns {', '.join(missing)}" if missing else None


def is_empty_folder(folder: Path) -> bool:
    """Nothing but a lock or temporary files: a trainer that has not written its first file yet."""
    return all(p.name == LOCK or p.name.startswith(".") for p in folder.iterdir())


def find_damage(folder: Path, read_only: bool = False, locked_by_us: bool = False) -> DamagedRun | None:
    """The first damaged file of a run folder, or None. A missing file counts only when no other
    trainer holds the run's lock (a trainer writes config and status one after the other); a folder
    with nothing written yet is not damaged."""
    from .config import RunConfig

    run_id = folder.name
    if not folder.is_dir() or is_empty_folder(folder):
        return None
    remedy = "`workbench demo build` remakes the demo runs" if read_only else None
    try:
        try:
            RunConfig.from_dict(read_json_file(run_id, folder / CONFIG))
        except DamagedRun:
            raise
        except Exception as error:  # noqa: BLE001 - any reason the config cannot be rebuilt
            raise DamagedRun(run_id, CONFIG, f"not a config this version reads: {_short(error)}") from None
        status = read_json_file(run_id, folder / STATUS)
    except DamagedRun as damage:
        if damage.problem == "missing" and not locked_by_us and is_locked(folder):
            return None
        return damage.with_remedy(remedy)
    for problem in _file_problems(folder, status):
        if problem is not None:
            return DamagedRun(run_id, problem[0], problem[1]).with_remedy(remedy)
    return None


def _file_problems(folder: Path, status: dict):
    """(file, problem) for each file checked; None for each that is fine."""
    finished = status.get("status") in FINISHED
    metrics = folder / METRICS
    if metrics.exists():
        problem = parquet_problem(metrics, METRIC_COLUMNS)
        yield (metrics.name, problem) if problem else None
    elif finished:
        yield metrics.name, f"missing, though the run {status['status']}"
    model = folder / MODEL
    if model.exists() or status.get("status") == COMPLETED:
        problem = safetensors_problem(model) if model.exists() else "missing, though the run completed"
        yield (model.name, problem) if problem else None
    checkpoints = [folder / CHECKPOINT] + sorted((folder / SNAPSHOTS).glob("*.safetensors"))
    for path in checkpoints:
        if path.exists():
            problem = safetensors_problem(path)
            yield (str(path.relative_to(folder)), problem) if problem else None


def _short(error: BaseException) -> str:
    return str(error) or type(error).__name__  # DamagedRun makes it one short line
