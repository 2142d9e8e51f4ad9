"""Questions asked of a finished run: its final model, exact match at new test lengths or at other
starts of its coupled position ids, its attention on a fresh sample.

One home above the store: the store only stores, probes only measure while a model trains, and
this module loads what a run stored to ask it something new. The measuring itself stays with the
probes (entropy_length, id_offset, sample_attention) and evaluate.py; this module opens the run,
checks the request (errors named like the command line's flags), and stores what belongs with the
run (exact match and entropy per length, unless the run is a read-only demo).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .damage import safetensors_problem
from .errors import ConfigError, DamagedRun, check
from .evaluate import length_curve, length_rows
from .reports import entropy_layer_means
from .run_files import COMPLETED, MODEL, SNAPSHOT_WEIGHTS
from .store import Run, open_run
from .typed import _coerce

MAX_EXAMPLES = 100  # answers shown per length: a list to read, not an evaluation
MAX_OFFSETS = 64  # one evaluation pass each: a sweep to read, not a grid search


def load_model(run: Run, checkpoint: str = MODEL, step: int | None = None):
    """(model, task) with the run's final weights, or with those it saved at snapshot `step`
    (probes.weights=true), in eval mode."""
    from safetensors.torch import load_file

    from .models import model_for_task
    from .tasks import task_for

    if step is not None:
        checkpoint = f"{SNAPSHOT_WEIGHTS}/step_{int(step):07d}.safetensors"
        if not (run.path / checkpoint).exists():
            steps = run.weight_steps()
            raise ConfigError("step", step, "no weights saved at this step; choose one of: " + ", ".join(map(str, steps))
                              if steps else "this run saved no weights at its snapshots (train it with probes.weights=true)")
    weights = run.path / checkpoint
    status = run.status()
    if not weights.exists() and status.get("status") == COMPLETED:
        raise DamagedRun(run.run_id, checkpoint, "missing, though the run completed")
    if not weights.exists():  # a diverged run keeps no weights; a running or interrupted one has none yet
        raise ConfigError("run", run.run_id, f"has no final weights to load (status {status.get('status')!r}"
                          + (f", diverged at step {status['diverged_step']}" if status.get("diverged_step") is not None
                             else "") + "); only a completed run can be evaluated")
    config = run.config()
    task = task_for(config.task)
    model = model_for_task(config.model, task)
    problem = safetensors_problem(weights)
    try:
        if problem is None:
            state = load_file(str(weights))
            model.load_state_dict({k[len("model."):] if k.startswith("model.") else k: v
                                   for k, v in state.items() if not k.startswith(("optim.", "rng."))})
            return model.eval(), task
    except Exception as error:  # noqa: BLE001 - a bad header, or weights that do not fit config.json
        problem = str(error).splitlines()[0] if str(error) else type(error).__name__
    raise DamagedRun(run.run_id, checkpoint, problem)


@dataclass
class FinishedRun:
    """A stored run loaded for evaluation: the model in eval mode, its task and config, the step."""

    run: Run
    model: object
    task: object
    config: object
    step: int

    def store(self, rows: list[dict]) -> None:
        """Append metric rows, unless the run is a read-only demo run."""
        if not self.run.read_only:
            self.run.append_metrics(rows)


def load_for_evaluation(run_id: str, lengths: list[int], n: int) -> FinishedRun:
    """Check the evaluation request (named like the CLI flags), then load the run."""
    check(n >= 1, "--n", n, "expected at least 1 sample per length")
    for length in lengths:
        check(length >= 1, "--lengths", length, "expected lengths >= 1")
    run = open_run(run_id)
    model, task = load_model(run)
    config = run.config()
    return FinishedRun(run, model, task, config, int(run.status().get("step", config.train.steps)))


ENTROPY_AT = ("all", "answer")  # every query's attention row, or the first answer prediction's


def evaluate_lengths(run_id: str, lengths: list[int] | str, n: int = 512, entropy_n: int = 0,
                     progress: Callable[[int, int], None] | None = None, examples: int = 0,
                     entropy_at: str = "all") -> dict:
    """Exact match per test length for a finished run and, when entropy_n > 0, the mean attention
    entropy per layer at each length over entropy_n samples: over every query (entropy_at="all") or
    at each sample's first answer prediction ("answer", stored as answer_entropy). Every row (per head too) is stored in
    the run's metrics unless it is a demo. With examples > 0, the model's answers on that many fresh
    samples per length come back too (not stored). `lengths` may be the command line's text
    ("5,10,20"); `progress(done, total)` is called after each length.

    Returns {"exact_match": {length: rate}, "entropy": {length: {layer: nats}},
    "examples": {length: [SampleAttention without maps]}} ("entropy" and "examples" only when asked)."""
    from .probes.entropy_length import entropy_vs_length
    from .probes.sample_attention import sample_attention

    lengths = _coerce(lengths, list[int], "--lengths")
    check(bool(lengths), "--lengths", "", "expected one or more lengths, e.g. 5,10,20")
    check(entropy_n >= 0, "--entropy-n", entropy_n, "expected 0 (no entropy) or more samples per length")
    check(0 <= examples <= MAX_EXAMPLES, "--examples", examples, f"expected 0 to {MAX_EXAMPLES} examples per length")
    check(entropy_at in ENTROPY_AT, "--entropy-at", entropy_at, f"expected one of {', '.join(ENTROPY_AT)}")
    finished = load_for_evaluation(run_id, lengths, n)
    model, task, step = finished.model, finished.task, finished.step
    seed, curve, entropy_rows, answers = finished.config.train.seed, {}, [], {}
    for done, length in enumerate(lengths, start=1):
        # one length at a time, so progress can be shown; each length has its own evaluation stream
        curve.update(length_curve(model, task, [length], n, seed))
        if entropy_n:
            entropy_rows += entropy_vs_length(model, task, [length], entropy_n, seed, step,
                                              at_answer=entropy_at == "answer")
        if examples:
            answers[length] = [sample_attention(model, task, length, index, seed, maps=False)
                               for index in range(examples)]
        if progress:
            progress(done, len(lengths))
    finished.store(length_rows(curve, step) + entropy_rows)
    result: dict = {"exact_match": curve}
    if entropy_n:
        result["entropy"] = entropy_layer_means(entropy_rows, "answer_entropy" if entropy_at == "answer" else "entropy")
    if examples:
        result["examples"] = answers
    return result


def parse_offsets(offsets: list[int | str] | str) -> list[int | str]:
    """--offsets' text ("1,5,random") or a list: integers, and "random" (each sample's start drawn as in
    training) kept as it is."""
    from .tasks.common import RANDOM_START

    items = offsets.split(",") if isinstance(offsets, str) else list(offsets)
    return [RANDOM_START if str(item).strip() == RANDOM_START else _coerce(str(item).strip(), int, "--offsets")
            for item in items if str(item).strip() != ""]


def evaluate_offsets(run_id: str, lengths: list[int] | str, offsets: list[int] | str, n: int = 512,
                     progress: Callable[[int, int], None] | None = None) -> dict[int, dict[int, float]]:
    """{length: {offset: exact match}} for a finished run (probes/id_offset.py says why one asks).
    `lengths` and `offsets` may be the command line's text ("5,10"); `progress(done, total)` is
    called after each length. Nothing is stored."""
    from .probes.id_offset import check_sweepable, offset_curve

    lengths = _coerce(lengths, list[int], "--lengths")
    offsets = parse_offsets(offsets)
    check(bool(lengths), "--lengths", "", "expected one or more lengths, e.g. 5,10,20")
    check(bool(offsets), "--offsets", "", "expected one or more id offsets, e.g. 1,2,10,random")
    check(len(offsets) <= MAX_OFFSETS, "--offsets", len(offsets), f"expected at most {MAX_OFFSETS} offsets")
    finished = load_for_evaluation(run_id, lengths, n)
    task, config = finished.task, finished.config
    check_sweepable(config, "--offsets", ",".join(map(str, offsets)))
    for offset in offsets:
        task.at_offset(offset, "--offsets")  # every offset checked before the first evaluation
    curves = {}
    for done, length in enumerate(lengths, start=1):
        curves[length] = offset_curve(finished.model, task, length, offsets, n, config.train.seed)
        if progress:
            progress(done, len(lengths))
    return curves


def evaluate_temperatures(run_id: str, lengths: list[int] | str, temperatures: list | str, n: int = 512,
                          progress: Callable[[int, int], None] | None = None) -> dict[int, dict[str, dict]]:
    """{length: {reading: {"exact_match", "factor"}}} for a finished run read with its attention logits
    multiplied after training (workbench.circuits.temperature): fixed factors, and the uniform factor
    searched, the ones aligned by entropy or by largest weight and per-head ones trained, at each length.
    `lengths` and `temperatures` may be the command line's text ("32,256", "1,1.5,uniform"). Nothing is stored."""
    from .circuits.temperature import parse_temperatures, temperature_curves

    lengths = _coerce(lengths, list[int], "--lengths")
    check(bool(lengths), "--lengths", "", "expected one or more lengths, e.g. 32,256,1024")
    readings = parse_temperatures(temperatures)
    finished = load_for_evaluation(run_id, lengths, n)
    reference = finished.task.train_lengths()[1]  # the entropy alignment's target: the longest trained length
    return temperature_curves(finished.model, finished.task, lengths, readings, n, finished.config.train.seed,
                              reference, progress)


def run_sample_attention(run: Run, length: int | None = None, index: int = 0, offset: int | None = None):
    """A stored run's final model on the `index`-th fresh sample of `length` (default: the longest
    length it trained on), its coupled ids starting at `offset` when one is given: a SampleAttention
    (probes/sample_attention.py)."""
    from .probes.id_offset import check_sweepable
    from .probes.sample_attention import sample_attention

    config = run.config()
    if offset is not None:
        check_sweepable(config, "--offset", offset)
    model, task = load_model(run)
    length = task.train_lengths()[1] if length is None else length
    return sample_attention(model, task, int(length), int(index), config.train.seed, offset=offset)
