"""Attention temperature after training: each attention head's logits multiplied by a factor at
evaluation, the weights left as trained.

A factor c turns a head's softmax(z) into softmax(c z), z the whole logit (q.k / sqrt(d) plus any
position bias), the softmax at temperature 1 / c: above 1 the head looks at fewer keys. Three ways to
choose the factors, each from what a model shows at the length it is tested at:

- `search_uniform_scale`: one factor for every head, the one of a grid whose answers on held-out
  samples of the test length have the lowest loss (Wang et al. 2024, "Length Generalization of Causal
  Transformers without Position Encoding", arXiv 2404.12224: UniformScale, searched on validation
  perplexity).
- `train_head_scales`: a factor per head and layer, trained on the answer loss at the test length with
  every weight frozen, from the uniform factor, never below 1 (Wang et al.'s HeadScale; their code
  trains 200 steps of batch 8 at learning rate 5e-2 or 1e-1 with 10% warmup, and clamps at 1).
- `aligned_scale`: one factor for every head, the one at which the mean attention entropy at the answer,
  over every head, equals the model's own at the training length, or (by="max_prob") the mean largest
  attention weight there does (our reading of the two alignments of Chi et al. 2023, "Attention
  Alignment and Flexible Positional Embeddings Improve Transformer Length Extrapolation",
  arXiv 2311.00684): no labels are used.

The factors go in through each attention layer's queries (`hook_q`) where the position encoding adds
no logit bias, otherwise through its logits (`hook_scores`), and then the layer builds its T x T map
explicitly: evaluate long inputs in small chunks.
"""
from __future__ import annotations

import contextlib
import math

import torch
from torch import Tensor

from ..errors import check
from ..evaluate import answer_loss, answer_rows, eval_generator, eval_mode, exact_match
from ..models.positions import PositionalEncoding
from ..probes.attention import attention_layers
from ..probes.entropy_length import answer_max_probability, entropy_at_length

UNIFORM_GRID = (1.0, 1.2, 1.4, 1.6, 1.8, 2.0, 2.5, 3.0, 4.0)
HEAD_STEPS, HEAD_BATCH, HEAD_LR, HEAD_WARMUP, HEAD_FLOOR = 200, 8, 5e-2, 0.1, 1.0
ALIGN_RANGE, ALIGN_ROUNDS = (1.0, 16.0), 12
CHUNK = 32  # samples per forward: at ~1000 tokens each T x T map of 4 heads is ~0.5 GB


def scale_table(model, factors: float | Tensor) -> Tensor:
    """factors as one row per attention layer, one column per head: (layers, heads)."""
    layers = attention_layers(model)
    check(len(layers) > 0, "model.mixer", "no attention layer", "expected a model with softmax attention")
    heads = model.blocks[layers[0]].mixer.n_heads
    table = torch.as_tensor(factors, dtype=torch.float32)
    table = table.expand(len(layers), heads) if table.dim() == 0 else table
    check(tuple(table.shape) == (len(layers), heads), "temperature factors", tuple(table.shape),
          f"expected one number, or ({len(layers)}, {heads}): a row per attention layer, a column per head")
    check(bool((table.detach() > 0).all()), "temperature factors", table.detach().min().item(), "expected numbers > 0")
    return table


@contextlib.contextmanager
def attention_temperature(model, factors: float | Tensor):
    """Within the block, every attention layer's logits are multiplied by its heads' factors. A factor
    table that requires grad stays in the graph, so the factors can be trained."""
    table = scale_table(model, factors)
    on_queries = not adds_logit_bias(model)
    listeners = {}
    for row, layer in enumerate(attention_layers(model)):
        factor = table[row].view(1, -1, 1, 1)
        hook = f"blocks.{layer}.mixer.{'hook_q' if on_queries else 'hook_scores'}"
        listeners[hook] = lambda value, hook, f=factor: scaled_logits(value, f)
    with model.hooks(listeners):
        yield model


def adds_logit_bias(model) -> bool:
    """Whether the model's position encoding adds a bias to the logits (T5, ALiBi, FIRE, ...). Without
    one, scaling the queries scales the logits, and attention keeps its fast path (no T x T map)."""
    return type(model.encoding).bias is not PositionalEncoding.bias


def scaled_logits(value: Tensor, factor: Tensor) -> Tensor:
    """value * factor, for queries or for logits. A masked logit (-inf) stays -inf, but enters the
    product as a finite number, so the factor's gradient (a sum over logits times their gradients,
    0 where masked) is not 0 * inf."""
    factor = factor.to(value.dtype)
    if not torch.is_grad_enabled():
        return value * factor
    masked = torch.isneginf(value)
    return (value.masked_fill(masked, 0.0) * factor).masked_fill(masked, float("-inf"))


def held_out(purpose: str, seed: int, length: int) -> torch.Generator:
    """A sample stream of its own for choosing factors, apart from the evaluation streams
    (evaluate.eval_generator) that report exact match."""
    offset = {"validation": 104_729, "tuning": 130_363}[purpose]
    return torch.Generator().manual_seed(offset + 7919 * seed + length)


def scaled_exact_match(model, task, factors, n: int, generator: torch.Generator, length: int) -> tuple[float, float]:
    """(exact match, answer loss) on n samples of `length` with the factors applied."""
    with attention_temperature(model, factors):
        return exact_match(model, task, n, generator, length=length, forward_batch=CHUNK)


def search_uniform_scale(model, task, length: int, n: int, seed: int,
                         grid: tuple[float, ...] = UNIFORM_GRID) -> tuple[float, dict[float, float]]:
    """(the grid's factor with the lowest answer loss on n validation samples of `length`,
    {factor: that loss})."""
    losses = {c: scaled_exact_match(model, task, c, n, held_out("validation", seed, length), length)[1]
              for c in grid}
    return min(losses, key=losses.get), losses


def train_head_scales(model, task, length: int, start: float, seed: int, steps: int = HEAD_STEPS,
                      batch_size: int = HEAD_BATCH, lr: float = HEAD_LR, floor: float = HEAD_FLOOR) -> Tensor:
    """(layers, heads) factors from `start`, trained by Adam on the answer loss of fresh samples of
    `length` with every weight frozen; linear warmup over the first 10% of steps, then linear decay;
    clamped at `floor` after each step."""
    table = scale_table(model, start).clone().requires_grad_(True)
    optimizer = torch.optim.Adam([table], lr=lr)
    warmup = max(1, int(HEAD_WARMUP * steps))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min((step + 1) / warmup, max(0.0, (steps - step) / max(steps - warmup, 1))))
    generator = held_out("tuning", seed, length)
    frozen = [(p, p.requires_grad) for p in model.parameters()]
    try:
        for p, _ in frozen:
            p.requires_grad_(False)
        with eval_mode(model), torch.enable_grad():
            for _ in range(steps):
                batch = task.sample(batch_size, generator, length=length, train=False)
                with attention_temperature(model, table):
                    logits = model(*batch.inputs())
                rows, targets = answer_rows(batch)
                optimizer.zero_grad()
                answer_loss(logits, rows, targets).backward()
                optimizer.step()
                schedule.step()
                with torch.no_grad():
                    table.clamp_(min=floor)
    finally:
        for p, wanted in frozen:
            p.requires_grad_(wanted)
    return table.detach()


def mean_answer_statistic(model, task, length: int, n: int, seed: int, factors: float | Tensor = 1.0,
                          by: str = "entropy") -> float:
    """At each sample's first answer prediction, over every head and layer, on n validation samples of
    `length`: the mean attention entropy in nats (by="entropy") or the mean largest attention weight
    (by="max_prob")."""
    with attention_temperature(model, factors):
        if by == "entropy":
            per_layer = [raw for raw, _ in entropy_at_length(model, task, length, n, seed, at_answer=True).values()]
        else:
            per_layer = list(answer_max_probability(model, task, length, n, seed).values())
    return float(torch.cat(per_layer).mean())


ALIGNMENTS = ("entropy", "max_prob")  # what an alignment matches: answer entropy, or the answer's largest weight


def aligned_scale(model, task, length: int, reference_length: int, n: int, seed: int, by: str = "entropy") -> float:
    """The factor for every head at which the answer's mean attention entropy (by="entropy") or mean largest
    attention weight (by="max_prob") at `length` equals the model's own at `reference_length` (factor 1), by
    bisection on log c within ALIGN_RANGE; an end of the range if the target lies beyond it."""
    check(by in ALIGNMENTS, "alignment", by, f"expected one of {', '.join(ALIGNMENTS)}")
    sign = 1.0 if by == "entropy" else -1.0  # both fall as the factor grows: entropy, and minus the largest weight

    def falling(length: int, factor: float = 1.0) -> float:
        return sign * mean_answer_statistic(model, task, length, n, seed, factor, by)

    target = falling(reference_length)
    low, high = (math.log(c) for c in ALIGN_RANGE)
    if falling(length, ALIGN_RANGE[0]) <= target:
        return ALIGN_RANGE[0]
    if falling(length, ALIGN_RANGE[1]) >= target:
        return ALIGN_RANGE[1]
    for _ in range(ALIGN_ROUNDS):
        middle = (low + high) / 2
        if falling(length, math.exp(middle)) > target:
            low = middle
        else:
            high = middle
    return math.exp((low + high) / 2)


# --- readings for `workbench eval-length --temperature` and the Length generalization page --------------
READINGS = ("uniform", "aligned", "maxprob", "head")  # chosen factors; a number > 0 is a fixed factor for every head
ALIGNED_READINGS = {"aligned": "entropy", "maxprob": "max_prob"}  # reading -> what aligned_scale matches


def parse_temperatures(temperatures: str | list, field: str = "--temperature") -> list[float | str]:
    """"1,1.5,uniform,aligned,head" (or a list): fixed factors for every head, and the named readings."""
    items = [str(item).strip() for item in (temperatures.split(",") if isinstance(temperatures, str)
                                            else temperatures) if str(item).strip()]
    check(bool(items), field, temperatures, f"expected factors > 0 or {', '.join(READINGS)}, e.g. 1,1.5,uniform")
    parsed: list[float | str] = []
    for item in items:
        if item in READINGS:
            parsed.append(item)
            continue
        try:
            factor = float(item)
        except ValueError:
            factor = float("nan")
        check(factor > 0 and math.isfinite(factor), field, factor if math.isfinite(factor) else item,
              f"expected a factor > 0 or one of {', '.join(READINGS)}")
        parsed.append(factor)
    return parsed


def reading_name(reading: float | str) -> str:
    return reading if isinstance(reading, str) else f"x{reading:g}"


def choose_factors(model, task, readings: list[float | str], lengths: list[int], seed: int, reference_length: int,
                   validation_n: int = 64, align_n: int = 32, head_steps: int = HEAD_STEPS) -> dict[int, dict]:
    """{length: {reading: factors}}: a number as it is; uniform searched (on validation_n samples) and aligned
    (to `reference_length`, on align_n) at each length; head trained once at the longest length, from the
    uniform factor there, and used at every length."""
    longest, uniform = max(lengths), {}

    def uniform_at(length: int) -> float:
        if length not in uniform:
            uniform[length] = search_uniform_scale(model, task, length, validation_n, seed)[0]
        return uniform[length]

    heads = (train_head_scales(model, task, longest, uniform_at(longest), seed, steps=head_steps)
             if "head" in readings else None)
    chosen = {}
    for length in lengths:
        row = {}
        for reading in readings:
            if reading == "uniform":
                row[reading] = uniform_at(length)
            elif reading in ALIGNED_READINGS:
                row[reading] = aligned_scale(model, task, length, reference_length, align_n, seed,
                                             ALIGNED_READINGS[reading])
            else:
                row[reading] = heads if reading == "head" else reading
        chosen[length] = row
    return chosen


def temperature_curves(model, task, lengths: list[int], readings: list[float | str], n: int, seed: int,
                       reference_length: int, progress=None) -> dict[int, dict[str, dict[str, float]]]:
    """{length: {reading: {"exact_match", "factor"}}} on n evaluation samples per length (the same
    samples for every reading), the factors from `choose_factors` (at most 64 samples to search, 32 to
    align). `progress(done, total)` after each length."""
    check(len(attention_layers(model)) > 0, "--temperature", ",".join(map(reading_name, readings)),
          "expected a run with softmax attention layers (model.mixer=attention, or a hybrid with one)")
    chosen = choose_factors(model, task, readings, lengths, seed, reference_length, min(n, 64), min(n, 32))
    curves = {}
    for done, length in enumerate(lengths, start=1):
        curves[length] = {reading_name(reading): {
            "exact_match": scaled_exact_match(model, task, factors, n, eval_generator(seed, length), length)[0],
            "factor": float(torch.as_tensor(factors).mean())} for reading, factors in chosen[length].items()}
        if progress:
            progress(done, len(lengths))
    return curves
