"""Attention entropy (and the answer's largest attention weight) as a function of evaluation length
(Chi et al. 2023, arXiv 2311.00684; Wang et al. 2024, arXiv 2404.12224; Zhang et al. 2024,
arXiv 2411.12892).

Each attention layer is listened to at `hook_entropy`, which makes it run through the kernel
dispatcher (workbench.kernels.attention_entropy): on the CPU a chunked path with O(T) extra memory,
on CUDA the Triton kernel. No T x T map is built, so 16k-token inputs fit in a few GiB. (A clipped
softmax has no kernel form and still builds the map.) Rows are the entropy probe's own,
`entropy` / `entropy_normalized` per layer and head plus the layer mean, with `length` = L.
"""
from __future__ import annotations

import torch

from ..evaluate import eval_generator, eval_mode
from .attention import attention_layers, entropy_rows, summarize_row_entropy

TOKENS_PER_FORWARD = 16_384  # samples per forward shrink as the length grows


@torch.no_grad()
def per_attention_layer(model, hook: str, inputs: tuple, reduce=lambda value: value) -> dict[int, torch.Tensor]:
    """{layer: reduce(value)} of what every attention layer hands `hook` (e.g. "hook_entropy"), from one
    forward of `inputs`. Reducing inside the listener keeps only what is needed of a T x T map."""
    found: dict[int, torch.Tensor] = {}

    def keep(layer):
        def listener(value, hook):
            found[layer] = reduce(value.detach().float())
        return listener

    with model.hooks({f"blocks.{layer}.mixer.{hook}": keep(layer) for layer in attention_layers(model)}):
        model(*inputs)
    return found


def layer_entropies(model, tokens, position_ids=None, vectors=None) -> dict[int, torch.Tensor]:
    """{layer: (B, H, T) per-query entropy} of every attention layer, from one forward."""
    return per_attention_layer(model, "hook_entropy", (tokens, position_ids, vectors))


def answer_queries(batch) -> torch.Tensor:
    """(B, T) True at each sample's first answer prediction: the query that has to find, somewhere in
    the context, what to answer. Flattening there is what costs accuracy (Wang et al. 2024)."""
    mask = batch.loss_mask
    first = torch.zeros_like(mask)
    first[torch.arange(mask.shape[0]), mask.float().argmax(1)] = True
    return first & mask


def evaluation_batches(task, length: int, n: int, seed: int):
    """n test samples of task length `length` (the evaluation stream), in forwards of about
    TOKENS_PER_FORWARD tokens."""
    generator = eval_generator(seed, length)
    done, per_forward = 0, max(1, TOKENS_PER_FORWARD // max(task.sequence_length(length), 1))
    while done < n:
        chunk = min(n - done, per_forward)
        yield task.sample(chunk, generator, length=length, train=False)
        done += chunk


@torch.no_grad()
def entropy_at_length(model, task, length: int, n: int, seed: int = 0,
                      at_answer: bool = False) -> dict[int, tuple[torch.Tensor, torch.Tensor]]:
    """{layer: (raw, normalized) mean entropy per head} over n test samples of task length `length`:
    over every real query, or (at_answer) over each sample's first answer prediction only."""
    sums: dict[int, list[torch.Tensor]] = {}
    with eval_mode(model):
        for batch in evaluation_batches(task, length, n, seed):
            chunk = batch.tokens.shape[0]
            valid = answer_queries(batch) if at_answer else batch.tokens != 0
            for layer, entropy in layer_entropies(model, *batch.inputs()).items():
                raw, normalized = summarize_row_entropy(entropy, valid)
                previous = sums.setdefault(layer, [torch.zeros_like(raw), torch.zeros_like(raw)])
                previous[0] += raw * chunk
                previous[1] += normalized * chunk
    return {layer: (raw / n, normalized / n) for layer, (raw, normalized) in sums.items()}


@torch.no_grad()
def answer_max_probability(model, task, length: int, n: int, seed: int = 0) -> dict[int, torch.Tensor]:
    """{layer: the largest attention weight at each sample's first answer prediction, averaged per head}
    over n test samples of `length`. Listens at `hook_pattern`, so each layer builds its T x T map."""
    sums: dict[int, torch.Tensor] = {}
    with eval_mode(model):
        for batch in evaluation_batches(task, length, n, seed):
            answers = answer_queries(batch)
            # (B, H, T, T) -> (answers, H): each answer row's largest weight
            largest = per_attention_layer(model, "hook_pattern", batch.inputs(),
                                          lambda pattern: pattern.transpose(1, 2)[answers].amax(-1))
            for layer, values in largest.items():
                sums[layer] = sums.get(layer, 0) + values.sum(0)
    return {layer: total / n for layer, total in sums.items()}


def entropy_vs_length(model, task, lengths: list[int], n: int = 8, seed: int = 0, step: int = -1,
                      at_answer: bool = False) -> list[dict]:
    """Tidy rows (probe entropy / entropy_normalized, layer, head, length, value, step) per length;
    at_answer: answer_entropy / answer_entropy_normalized, at each sample's first answer prediction.

    Per-chunk means are weighted by samples, not tokens: each sample counts once at every length."""
    rows = []
    for length in lengths:
        for layer, (raw, normalized) in entropy_at_length(model, task, int(length), n, seed, at_answer).items():
            rows += [{**r, "step": step}
                     for r in entropy_rows(raw, normalized, layer, int(length), "answer_" if at_answer else "")]
    return rows
