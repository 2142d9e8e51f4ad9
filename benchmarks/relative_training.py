"""Training steps of the length recipes' models with the workbench's two same-numbers shortcuts against
torch's own paths, per positional encoding.

The shortcuts give the same gradients bit for bit (tests/test_embedding.py, tests/test_attention_biased.py),
so this is time alone:
- embedding lookups backward through index_add_ (workbench/models/embedding.py), not torch's
  embedding_dense_backward, which is slow for the (B, T, T) grid of per-sample id differences that
  coupling_relative looks up;
- attention with a learned logit bias skips the fully-masked-row guard of scaled_dot_product_attention's
  math path (workbench/models/mixers/attention_biased.py): coupling_relative, t5_bias, FIRE.

Models: lengthgen-addition's (1 layer, d_model 64, 4 heads, batch 128, 1-10 digits) and
multi-level-coupling's (2 layers, 2-5 operands of 1-5 digits). The two sides alternate within each
round (common.interleaved_samples).

    .venv/bin/python benchmarks/relative_training.py [--threads 1] [--rounds 5] [--steps 10]
"""
from __future__ import annotations

import torch.nn.functional as F

from common import paired_timing_row, set_threads, table, timing_parser, trainer, with_attributes

WIDTH = ["model.d_model=64", "model.n_heads=4"]
ADDITION = ["task.name=addition", "task.max_digits=10", "model.n_layers=1", *WIDTH]
MULTI_OPERAND = ["task.name=multi_operand_addition", "task.max_digits=5", "task.max_operands=5", "model.n_layers=2",
                 *WIDTH]
CASES = [("addition", ADDITION, pos) for pos in ("learned", "coupling", "coupling_relative", "t5_bias", "fire")] + [
    ("multi-operand", MULTI_OPERAND, pos) for pos in ("coupling", "coupling_relative")]
OURS, TORCH = "workbench", "torch's own paths"


def with_torch_paths(run):
    """`run` with both shortcuts off: lookups through F.embedding, biased attention through
    scaled_dot_product_attention."""
    from workbench.models import embedding
    from workbench.models.mixers import attention

    return with_attributes(run, [(embedding, "lookup", lambda weight, indices: F.embedding(indices, weight)),
                                 (attention, "needs_bias_gradient", lambda mask: False)])


def main() -> None:
    parser = timing_parser(__doc__, 5, "steps", 10, "training steps per timing")
    args = parser.parse_args()
    threads = set_threads(args.threads)
    print(f"## Relative encodings in training\n\nd_model 64, 4 heads, batch 128, {threads} thread(s), median of "
          f"{args.rounds} interleaved rounds of {args.steps} steps (AdamW); speed-up: median of the per-round ratios "
          "(range over rounds).\n")
    rows = []
    for task, overrides, pos in CASES:
        run = trainer(overrides + [f"model.pos={pos}"], args.steps, batch_size=128)
        rows.append([task, pos, *paired_timing_row(run, with_torch_paths(run), args.rounds)])
    print(table(["task", "encoding", f"ms / step, {OURS}", f"ms / step, {TORCH}", "speed-up"], rows), flush=True)


if __name__ == "__main__":
    main()
