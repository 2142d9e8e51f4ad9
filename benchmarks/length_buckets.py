"""Training steps with each batch cut into length buckets (`train.length_buckets`) against one padded
batch, on the recipes whose samples vary in length.

Each bucket is a quarter (or half, ...) of the batch's rows, sorted by length and trimmed of the padding
they share, so short rows are not computed at the longest row's width. The loss and gradient are the
batch's own up to float rounding (tests/test_batch_stream.py), so this is time alone; smaller matrices
run less efficiently, which is why more buckets stop paying.

Models: multi-level-coupling's (2 layers, d_model 64, batch 128, 2-5 operands of 1-5 digits), outliers'
(2 layers, batch 64, bigram chains of 32-64 symbols) and lengthgen-addition's (1 layer, batch 128, 1-10
digits). The two sides alternate within each round (common.interleaved_samples).

    .venv/bin/python benchmarks/length_buckets.py [--threads 1] [--rounds 5] [--steps 10] [--buckets 2,4,8]
"""
from __future__ import annotations

from common import paired_timing_row, set_threads, table, timing_parser, trainer

WIDTH = ["model.d_model=64", "model.n_heads=4", "model.pos=coupling"]
CASES = [
    ("multi-operand addition", ["task.name=multi_operand_addition", "task.max_digits=5", "task.max_operands=5",
                                "model.n_layers=2", *WIDTH], 128),
    ("bigram backcopy", ["task.name=bigram_backcopy", "model.n_layers=2", "model.d_model=64", "model.n_heads=4"], 64),
    ("addition", ["task.name=addition", "task.max_digits=10", "model.n_layers=1", *WIDTH], 128),
]


def main() -> None:
    parser = timing_parser(__doc__, 5, "steps", 10, "training steps per timing")
    parser.add_argument("--buckets", default="2,4,8", help="bucket counts to time against one batch")
    args = parser.parse_args()
    threads = set_threads(args.threads)
    print(f"## Length buckets in training\n\n{threads} thread(s), median of {args.rounds} interleaved rounds of "
          f"{args.steps} steps (AdamW); speed-up: median of the per-round ratios (range over rounds).\n")
    rows = []
    for task, overrides, batch in CASES:
        whole = trainer(overrides, args.steps, batch_size=batch)
        for buckets in map(int, args.buckets.split(",")):
            bucketed = trainer(overrides, args.steps, batch_size=batch, length_buckets=buckets)
            rows.append([task, batch, buckets, *paired_timing_row(bucketed, whole, args.rounds)])
    print(table(["task", "batch", "buckets", "ms / step, bucketed", "ms / step, one batch", "speed-up"], rows),
          flush=True)


if __name__ == "__main__":
    main()
