"""Training steps of the length recipes' model with the workbench's embedding backward (index_add_,
workbench/models/embedding.py) against torch's own (embedding_dense_backward), per positional encoding.

The model and batch are lengthgen-addition's (1 layer, d_model 64, 4 heads, batch 128, 1-10 digit
addition). Both sides compute the same gradients bit for bit (tests/test_embedding.py), so this is
time alone: the encodings that look up a (B, T, T) grid of per-sample id differences
(coupling_relative) gain most, those with one shared position row (t5_bias) or a (B, T) lookup
(learned, coupling) little. The two sides alternate within each round (common.interleaved_samples).

    .venv/bin/python benchmarks/embedding_backward.py [--threads 1] [--rounds 5] [--steps 10]
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from common import interleaved_samples, medians, paired_speedup, set_threads, table, timing_parser

ENCODINGS = ("learned", "coupling", "coupling_relative", "t5_bias")
OURS, TORCH = "index_add_ backward", "torch backward"


def trainer(pos: str, steps: int):
    """A function that trains `steps` steps (AdamW, the recipe's model) and returns seconds per step."""
    import time

    from workbench.config import RunConfig
    from workbench.models import model_for_task
    from workbench.tasks import task_for

    config = RunConfig.load(None, ["task.name=addition", "task.max_digits=10", "model.n_layers=1", "model.d_model=64",
                                   "model.n_heads=4", f"model.pos={pos}"])
    task = task_for(config.task)
    model = model_for_task(config.model, task, seed=0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(0)
    batches = [task.sample(128, generator) for _ in range(steps)]

    def run() -> float:
        start = time.perf_counter()
        for batch in batches:
            logits = model(*batch.inputs())
            loss = F.cross_entropy(logits[batch.loss_mask], batch.targets[batch.loss_mask])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        return (time.perf_counter() - start) / steps
    return run


def with_torch_backward(run):
    """`run` with the models' lookups sent to F.embedding, whose backward is torch's own."""
    from workbench.models import embedding

    def patched() -> float:
        fast = embedding.lookup
        embedding.lookup = lambda weight, indices: F.embedding(indices, weight)
        try:
            return run()
        finally:
            embedding.lookup = fast
    return patched


def main() -> None:
    parser = timing_parser(__doc__, 5, "steps", 10, "training steps per timing")
    args = parser.parse_args()
    threads = set_threads(args.threads)
    print(f"## Embedding backward in training\n\nlengthgen-addition's model and batch (1 layer, d_model 64, batch "
          f"128), {threads} thread(s), median of {args.rounds} interleaved rounds of {args.steps} steps (AdamW); "
          "speed-up: median of the per-round ratios (range over rounds).\n")
    rows = []
    for pos in ENCODINGS:
        run = trainer(pos, args.steps)
        samples = interleaved_samples({OURS: run, TORCH: with_torch_backward(run)}, args.rounds)
        seconds = medians(samples)
        rows.append([pos, f"{seconds[OURS] * 1e3:.1f}", f"{seconds[TORCH] * 1e3:.1f}",
                     paired_speedup(samples, OURS, TORCH)])
    print(table(["encoding", f"ms / step, {OURS}", f"ms / step, {TORCH}", "speed-up"], rows), flush=True)


if __name__ == "__main__":
    main()
