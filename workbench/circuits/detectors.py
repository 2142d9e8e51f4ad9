"""Head detectors: previous-token, duplicate-token and induction scores for every unit of every layer.

The input is a random sequence of L distinct symbols followed by the same sequence (after a BOS,
as the tasks' prompts start). For a query t in the second half the earlier copy of its token
sits at t - L and the token that followed it at t - L + 1:

    previous_token   mean weight from t to t - 1 (every t after the first symbol)
    duplicate_token  mean weight from t to t - L (second half)
    induction        mean weight from t to t - L + 1 (second half)

Each unit's attention-like map is first row-normalized by its total |weight|, so every score lies
in [0, 1] and scores of different mixers compare (for softmax attention this changes nothing):

    attention, linear attention   one map per head, from hook_pattern; unit = head
    mamba, s4d, h3, hyena          one map per channel (attention_like_per_channel: the scan's implicit
                                   attention, the SSM kernel, H3's q x kernel x k map, Hyena's gated
                                   filters); unit = channel (a head for multi-head H3)
    lstm, gru                      one input-gradient saliency map per layer (hook_pattern); unit = -1

A fourth score, answer_induction, reads induction where a task asks for it, on the task's own
samples (answer_induction_scores): a model trained only on `... @ x ... @ -> x` may match "the token
after an '@'" without matching every token's earlier copy, and then scores on repeated random tokens
say nothing of the circuit it did learn.
"""
from __future__ import annotations

import pandas as pd
import torch
from torch import Tensor

from ..evaluate import eval_mode

DETECTORS = ("previous_token", "duplicate_token", "induction")
ANSWER_INDUCTION = "answer_induction"  # the fourth score, read on a task's own prompts


SPECIAL = 3  # PAD, BOS, EOS lead every task's vocabulary


def task_symbols(vocab_size: int) -> Tensor:
    """The ids of a task's own symbols: every id after PAD, BOS and EOS."""
    return torch.arange(SPECIAL, vocab_size)


def repeated_sequences(symbols: Tensor, n: int, length: int, seed: int = 0, bos: int | None = None) -> Tensor:
    """(n, [1 +] 2 * length) token ids: `length` distinct symbols drawn from `symbols`, twice."""
    if length > symbols.numel():
        raise ValueError(f"length {length} needs at least that many distinct symbols; there are {symbols.numel()}")
    generator = torch.Generator().manual_seed(seed)
    first = symbols[torch.rand(n, symbols.numel(), generator=generator).argsort(dim=1)[:, :length]]
    parts = ([torch.full((n, 1), bos)] if bos is not None else []) + [first, first]
    return torch.cat(parts, dim=1)


def unit_kind(mixer) -> str:
    """'head', 'channel' or 'layer': what one attention-like map of this mixer stands for."""
    if hasattr(mixer, "attention_like_per_channel"):
        return "channel"
    from ..models.mixers.rnn import RecurrentMixer

    return "layer" if isinstance(mixer, RecurrentMixer) else "head"


def unit_maps(model, tokens: Tensor, position_ids: Tensor | None = None) -> list[Tensor]:
    """Per layer, (B, units, T, T) maps with rows normalized by their total |weight|."""
    # a channel mixer's maps come from its input (the residual stream through its norm); the others'
    # from their pattern hook, which only then computes a map
    wanted = [f"blocks.{i}.hook_resid_pre" if unit_kind(block.mixer) == "channel" else f"blocks.{i}.mixer.hook_pattern"
              for i, block in enumerate(model.blocks)]
    with eval_mode(model), torch.no_grad():
        _, cache = model.run_with_cache(tokens, position_ids, names=wanted)
        context = model.mixer_context(tokens, position_ids)
        maps = []
        for i, block in enumerate(model.blocks):
            if unit_kind(block.mixer) == "channel":
                x = block.norm_mixer(cache[f"blocks.{i}.hook_resid_pre"])
                raw = block.mixer.attention_like_per_channel(x, context)
            else:
                raw = cache[f"blocks.{i}.mixer.hook_pattern"]
            magnitude = raw.abs().float()
            maps.append(magnitude / magnitude.sum(dim=-1, keepdim=True).clamp_min(1e-30))
    return maps


def detector_scores(maps: Tensor, length: int, start: int = 1) -> dict[str, Tensor]:
    """{detector: (units,) score} from (B, units, T, T) maps of sequences whose first half begins at
    `start` (1 after a BOS) and is `length` long."""
    second = torch.arange(start + length, start + 2 * length)
    queries = torch.arange(start + 1, start + 2 * length)
    return {
        "previous_token": maps[:, :, queries, queries - 1].mean(dim=(0, 2)),
        "duplicate_token": maps[:, :, second, second - length].mean(dim=(0, 2)),
        "induction": maps[:, :, second, second - length + 1].mean(dim=(0, 2)),
    }


def head_scores(model, tokens: Tensor, length: int, start: int = 1, position_ids: Tensor | None = None
                ) -> pd.DataFrame:
    """DataFrame(layer, unit, detector, score) for repeated sequences `tokens` (see repeated_sequences)."""
    frames = []
    for layer, maps in enumerate(unit_maps(model, tokens, position_ids)):
        layer_wide = unit_kind(model.blocks[layer].mixer) == "layer"
        for detector, score in detector_scores(maps, length, start).items():
            units = [-1] if layer_wide else list(range(score.numel()))
            frames.append(pd.DataFrame({"layer": layer, "unit": units, "detector": detector,
                                        "score": score.double().numpy()}))
    return pd.concat(frames, ignore_index=True)


def model_head_scores(model, symbols: Tensor, n: int = 16, length: int = 16, seed: int = 0,
                      bos: int | None = 1) -> pd.DataFrame:
    """head_scores on n fresh repeated sequences of `symbols` (token ids); position ids 0, 1, ... for
    encodings that read the task's ids."""
    length = min(length, symbols.numel())
    tokens = repeated_sequences(symbols, n, length, seed, bos)
    position_ids = None
    if getattr(model.encoding, "uses_task_ids", False):
        position_ids = torch.arange(tokens.shape[1]).expand_as(tokens)
    return head_scores(model, tokens, length, start=0 if bos is None else 1, position_ids=position_ids)


# --- induction where a task asks for it --------------------------------------------------------
def answer_sources(tokens: Tensor, loss_mask: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(rows, queries, sources) of the samples whose first answer is predicted at a token seen before:
    the query is that position, the source the token after the query token's latest earlier copy.
    In the induction task's `... @ x ... @` the query is the last '@' and the source is x; in
    associative recall, the queried key and its value."""
    rows, queries, sources = [], [], []
    for b in range(tokens.shape[0]):
        answers = loss_mask[b].nonzero()
        if not len(answers):
            continue
        t = int(answers[0])
        earlier = (tokens[b, :t] == tokens[b, t]).nonzero()
        if len(earlier):
            rows.append(b)
            queries.append(t)
            sources.append(int(earlier[-1]) + 1)
    return torch.tensor(rows, dtype=torch.long), torch.tensor(queries, dtype=torch.long), torch.tensor(sources, dtype=torch.long)


def answer_induction_scores(model, batch) -> pd.DataFrame:
    """DataFrame(layer, unit, detector="answer_induction", score) on a task's own samples: each unit's
    row-normalized weight from the first answer position to the token after the query token's earlier
    copy (answer_sources), averaged over the samples that have one. Empty when none has."""
    rows, queries, sources = answer_sources(batch.tokens, batch.loss_mask)
    if not len(rows):
        return pd.DataFrame(columns=["layer", "unit", "detector", "score"])
    frames = []
    for layer, maps in enumerate(unit_maps(model, batch.tokens[rows], _rows_of(batch.position_ids, rows))):
        score = maps[torch.arange(len(rows)), :, queries, sources].mean(dim=0)  # (units,)
        units = [-1] if unit_kind(model.blocks[layer].mixer) == "layer" else list(range(score.numel()))
        frames.append(pd.DataFrame({"layer": layer, "unit": units, "detector": ANSWER_INDUCTION,
                                    "score": score.double().numpy()}))
    return pd.concat(frames, ignore_index=True)


def _rows_of(position_ids: Tensor | None, rows: Tensor) -> Tensor | None:
    return None if position_ids is None else position_ids[rows]
