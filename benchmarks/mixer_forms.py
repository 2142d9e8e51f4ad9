"""Training steps of Based linear attention and multi-head H3 in the form the layers train in against the form
they computed before, on mqar-vs-width's models.

Each pair is the same math in another order of operations (tests check the two agree in float64), so the
numbers differ only in rounding:
- Based: the parallel map's kernel phi(q) . phi(k) in closed form, 1 + s + s^2 / 2 with s = q.k / sqrt(d')
  (workbench/models/mixers/linear_attention.py `kernel`), against building the 1 + d' + d'^2 = 273 Taylor
  features per head and multiplying them;
- H3 with head dimension e = 8: y = M v with M the layer's attention-like map (h3.py), against running the
  e^2 entries of each head's k~ v^T through the diagonal SSM's Toeplitz product (the state form, which the
  layer keeps for hook_state and for sequences beyond s4d.FFT_ABOVE).

Models: 2 layers, batch 64, MQAR in Zoology's variant with 8 pairs (33 tokens), widths 32 to 128. The two
forms alternate within each round (common.interleaved_samples).

    .venv/bin/python benchmarks/mixer_forms.py [--threads 1] [--rounds 5] [--steps 10]
"""
from __future__ import annotations

from common import paired_timing_row, set_threads, table, timing_parser, trainer, with_attributes

NOW, BEFORE = "form trained in", "form before"
WIDTHS = (32, 64, 128)


def mqar_overrides(mixer: str, width: int) -> list[str]:
    from workbench.experiments.mixers.mqar_vs_width import MQAR_MIXER_OVERRIDES, MQAR_TASK, MQAR_TRAIN

    return [*MQAR_TASK, *MQAR_MIXER_OVERRIDES[mixer], *MQAR_TRAIN, f"model.d_model={width}", "task.min_pairs=8"]


def with_form_before(mixer: str, run):
    """`run` with the layer's earlier form: Based's explicit features, H3's state form."""
    from workbench.models.mixers import h3, linear_attention

    if mixer == "linear_attention":
        return with_attributes(run, [(linear_attention, "kernel", linear_attention.feature_kernel)])
    return with_attributes(run, [(h3, "FFT_ABOVE", -1)])  # every length takes the state form


def main() -> None:
    parser = timing_parser(__doc__, 5, "steps", 10, "training steps per timing")
    args = parser.parse_args()
    threads = set_threads(args.threads)
    print(f"## Based and multi-head H3 in training\n\nmqar-vs-width's models (2 layers, batch 64, 8 pairs: 33 tokens), "
          f"{threads} thread(s), median of {args.rounds} interleaved rounds of {args.steps} steps (AdamW); speed-up: "
          "median of the per-round ratios (range over rounds).\n")
    rows = []
    for mixer in ("linear_attention", "h3"):
        for width in WIDTHS:
            run = trainer(mqar_overrides(mixer, width), args.steps, batch_size=64)
            rows.append([mixer, width, *paired_timing_row(run, with_form_before(mixer, run), args.rounds)])
    print(table(["mixer", "width", f"ms / step, {NOW}", f"ms / step, {BEFORE}", "speed-up"], rows), flush=True)


if __name__ == "__main__":
    main()
