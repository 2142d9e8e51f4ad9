"""Head detector scores over training: induction, previous-token and duplicate-token scores of
every unit (workbench.circuits.detectors), on 16 repeated random sequences of the task's own
symbols, the same sequences at every step (a fixed seed).

Rows: probe "induction_score", "previous_token_score" or "duplicate_token_score", layer, head =
the unit; and "answer_induction_score", the same kind of score on the probe batch itself (the
answer position's weight on the token after its query's earlier copy; detectors.answer_induction_scores),
for tasks whose answers are such lookups. Attention and linear attention: one row per head. Mamba, S4D, H3 and Hyena have hundreds of
channels, so a layer gives two rows per score: head -1 the mean over its channels, head -2 its
best channel's score. LSTM and GRU: one row per layer, head -1 (their saliency map is per layer).
"""
from __future__ import annotations

import pandas as pd

from .registry import Probe, ProbeResult, register_probe, row

SEQUENCES, LENGTH, SEED = 16, 16, 20240917
BEST_CHANNEL = -2


@register_probe("heads")
class HeadDetectors(Probe):
    tokens_only = True

    def __call__(self, model, batch, cache) -> ProbeResult:
        # imported late: circuits sits above probes
        from ..circuits.detectors import answer_induction_scores, model_head_scores, task_symbols, unit_kind

        vocab_size = model.embed.num_embeddings
        if self.context is not None:
            vocab_size = len(self.context.task.vocab)
        symbols = task_symbols(vocab_size)
        scores = pd.concat([model_head_scores(model, symbols, SEQUENCES, LENGTH, SEED, bos=1),
                            answer_induction_scores(model, batch)], ignore_index=True)
        rows = []
        for (layer, detector), group in scores.groupby(["layer", "detector"], sort=True):
            probe = f"{detector}_score"
            if unit_kind(model.blocks[layer].mixer) == "channel":
                rows.append(row(probe, group.score.mean(), int(layer), -1))
                rows.append(row(probe, group.score.max(), int(layer), BEST_CHANNEL))
            else:
                rows += [row(probe, s, int(layer), int(u)) for u, s in zip(group.unit, group.score)]
        return ProbeResult(rows)
