"""One trainer per run: an advisory lock on `run.lock` in the run folder.

flock locks belong to the open file, and the kernel drops them when the process ends however it
ends (kill -9 too), so a crash never leaves a stale lock behind: the next trainer takes the lock and
resumes from the last checkpoint. A second trainer of the same run waits for the first and then
finds its finished result.
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Callable

from .run_files import LOCK

try:
    import fcntl
except ImportError:  # not POSIX: no locking, as before there was any
    fcntl = None


@contextlib.contextmanager
def run_lock(folder: Path, on_wait: Callable[[], None] | None = None):
    """Hold the run's lock for the block, creating the folder if needed; on_wait() is called once
    when another process holds it, before waiting for it."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK, "a") as handle:  # closing the file releases the lock
        if fcntl is not None:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if on_wait is not None:
                    on_wait()
                fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def is_locked(folder: Path) -> bool:
    """Whether a live process holds the run's lock (it is training the run now)."""
    path = folder / LOCK
    if fcntl is None or not path.exists():
        return False
    try:
        with open(path) as handle:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:  # cannot be opened (a read-only copy elsewhere): nobody is training here
        return False
    return False
