"""Exact match by where a sample's coupled position ids start: which ids did the model learn?

Coupled-id tasks (addition, copy, reverse, multi-operand addition, multiplication) draw each training
sample's first id at random, so that every id up to task.max_position is trained, and evaluate with
the ids starting at the smallest start, as the papers' code does. The smallest ids are then the
rarest in training: in addition, at start 1 the `+` and `=` carry an id no digit ever carries. A
model that learned its ids as a table can fail there alone. Evaluating the same samples at other
starts separates that from a failure to add (or copy) at all. Nothing here is stored: it is a
question asked of a finished run, not a metric of its training (analysis.evaluate_offsets asks it of
a stored run).
"""
from __future__ import annotations

from ..errors import ConfigError
from ..evaluate import eval_generator, exact_match


def offset_curve(model, task, length: int, offsets: list[int], n: int, seed: int) -> dict[int, float]:
    """{offset: exact match} at one test length; every offset sees the same samples (the length's own
    evaluation stream), only their ids are shifted."""
    return {offset: exact_match(model, task.at_offset(offset), n, eval_generator(seed, length), length=length)[0]
            for offset in offsets}


def coupled_tasks() -> list[str]:
    """The tasks whose samples carry coupled position ids."""
    from ..tasks import TASKS

    # addition's coupled_first is a property (its start depends on task.ids), never None on the class
    return [name for name in TASKS.names() if TASKS.get(name).coupled_first is not None]


def id_encodings() -> list[str]:
    """The positional encodings that read a task's ids (coupling, coupling_relative, abacus)."""
    from ..models.positions import POSITIONS

    return [name for name in POSITIONS.names() if POSITIONS.get(name).uses_task_ids]


def reads_coupled_ids(task: str, pos: str) -> bool:
    """Whether runs of this task and positional encoding carry coupled ids that the model reads: only
    then does moving the ids mean something. Needs no run to be opened (the runs table has both)."""
    return task in coupled_tasks() and pos in id_encodings()


def default_offset(config) -> int | None:
    """Where evaluation starts the coupled ids of this config's task (None: the task has none, or its
    runs start them at random, task.eval_start=random)."""
    from ..tasks import build_task

    if config.task.eval_start != "first":
        return None
    return build_task(config.task.name, config.task.params).coupled_first


def sweepable(config) -> bool:
    """Whether an offset sweep means something for a run of this config."""
    return reads_coupled_ids(config.task.name, config.model.pos)


def check_sweepable(config, field: str, value) -> None:
    """A one-line refusal, naming `field`, unless moving the coupled ids of this config's runs means something."""
    if config.task.name not in coupled_tasks():
        raise ConfigError(field, value, f"task {config.task.name} has no coupled position ids; tasks that have: "
                                        + ", ".join(coupled_tasks()))
    if config.model.pos not in id_encodings():
        raise ConfigError(field, value, f"model.pos={config.model.pos} does not read the task's position ids, so "
                                        "an offset changes nothing; the encodings that do: " + ", ".join(id_encodings()))
