"""Synthetic tasks, chosen by name from TASKS. Importing this package registers every task."""
from .base import TASKS, Batch, Task, Vocab, register_task  # noqa: F401
from . import addition, copy  # noqa: F401  (registration)
from . import markov, memorize, multi_operand, multiplication, parity, retrieval, strings  # noqa: F401,E402
from . import backcopy, icl_boolean, icl_functions, icl_regression  # noqa: F401,E402
from . import imported  # noqa: F401,E402  (models brought in by `workbench import-model`)


def build_task(name: str, params: dict | None = None) -> Task:
    """The task `name` with its parameters checked and typed."""
    from ..typed import build

    cls = TASKS.get(name)
    return cls(build(cls.Params, params or {}, "task"))


def task_for(task_config) -> Task:
    """The task a run's config section describes, its evaluation samples starting their coupled ids
    where task.eval_start says (training draws them at random either way)."""
    from .common import RANDOM_START

    task = build_task(task_config.name, task_config.params)
    return task.at_offset(RANDOM_START, "task.eval_start") if task_config.eval_start == RANDOM_START else task
