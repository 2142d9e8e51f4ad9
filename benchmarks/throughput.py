"""Training throughput (tokens/s) and model-FLOPs utilization: workbench vs plain PyTorch vs
TransformerLens, at two shapes.

Contestants, all at the same shape (layers, d_model, heads, d_mlp = 4 d, T, batch, vocab 15):
  plain decoder         benchmarks/plain_decoder.py on random tokens
  workbench model step  build_model + train.py's loss, AdamW and clipping, on random tokens
  TransformerLens       HookedTransformer from a config, same loss/optimizer, random tokens
  workbench train()     the real loop on 10-digit (shape a) / 20-digit (shape b) addition,
                        probes off, then with the default probes (every 100 steps): data
                        generation, logging, status writes, probes and snapshots included

T is the input length addition produces: 3 * digits + 4 (34 for 10 digits, 64 for 20); every
contestant uses that T. Positions are learned absolute ones with a table of T rows everywhere.
The train() rows time the loop from its first step to its last (set-up and the final evaluation
excluded) through a subclass of the loop that adds timestamps and, every 10 steps, runs 5 steps of
the plain decoder timed apart. The model-only contestants alternate with the plain decoder every
5 steps the same way. This machine's speed drifts by up to a quarter in phases of several seconds,
longer than one contestant's timing, so a ratio is only fair between timings of the same seconds:
each contestant is compared with the plain steps run beside it.

    .venv/bin/python benchmarks/throughput.py [--threads 1] [--rounds 3] [--shapes a,b]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from common import (DEFAULT_THREADS, TL_MISSING, alternating, beside, interleaved_samples, matmul_parameters,
                    matmul_peak, medians, mfu, paired_speedup, seconds_per_call, set_threads, table, target_lines,
                    training_flops_per_token, transformer_lens)
from plain_decoder import PlainDecoder, make_optimizer, training_step

VOCAB = 15  # addition: PAD BOS EOS, ten digits, + and =


@dataclass
class Shape:
    name: str
    n_layers: int
    d_model: int
    n_heads: int
    batch: int
    digits: int  # addition operand length giving T

    @property
    def T(self) -> int:
        return 3 * self.digits + 4

    @property
    def d_mlp(self) -> int:
        return 4 * self.d_model

    def overrides(self, probes_every: int, steps: int) -> list[str]:
        return ["task.name=addition", f"task.max_digits={self.digits}", "model.pos=learned",
                f"model.n_layers={self.n_layers}", f"model.d_model={self.d_model}", f"model.n_heads={self.n_heads}",
                f"model.max_positions={self.T}", f"train.batch_size={self.batch}", f"train.steps={steps}",
                "train.eval_every=0", "train.checkpoint_every=0", "train.eval_samples=64",
                f"probes.every={probes_every}"]


SHAPES = {"a": Shape("a", 1, 64, 2, 256, 10), "b": Shape("b", 2, 128, 4, 64, 20)}


def random_batch(shape: Shape, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    sequence = torch.randint(0, VOCAB, (shape.batch, shape.T + 1), generator=g)
    return sequence[:, :-1], sequence[:, 1:]


# --- contestants: each gives one training step (or, for train(), times its own loop) ---------------
def plain_contestant(shape: Shape):
    """The plain decoder's model, and one training step of it."""
    torch.manual_seed(0)
    model = PlainDecoder(VOCAB, shape.n_layers, shape.d_model, shape.n_heads, shape.d_mlp, shape.T)
    optimizer = make_optimizer(model)
    tokens, targets = random_batch(shape)
    return model, lambda: training_step(model, optimizer, tokens, targets)


def workbench_step_contestant(shape: Shape):
    """train.py's step without its loop: the model and optimizer cost, nothing around them."""
    from workbench.config import RunConfig
    from workbench.tasks import build_task
    from workbench.train import build_state, learning_rate

    config = RunConfig.load(None, shape.overrides(0, 1000))
    state = build_state(config, build_task(config.task.name, config.task.params))
    model, optimizer = state.model, state.optimizer
    tokens, targets = random_batch(shape)
    mask = torch.ones_like(tokens, dtype=torch.bool)

    def step():
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(config, 500)
        logits = model(tokens)
        loss = F.cross_entropy(logits[mask], targets[mask])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.train.grad_clip)
        optimizer.step()
        loss.item()

    return model, step


def transformer_lens_model(shape: Shape):
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    config = HookedTransformerConfig(n_layers=shape.n_layers, d_model=shape.d_model, n_heads=shape.n_heads,
                                     d_head=shape.d_model // shape.n_heads, d_mlp=shape.d_mlp, n_ctx=shape.T,
                                     d_vocab=VOCAB, act_fn="relu", normalization_type="LN",
                                     positional_embedding_type="standard", seed=0, device="cpu")
    return HookedTransformer(config)


def transformer_lens_contestant(shape: Shape):
    model = transformer_lens_model(shape)
    optimizer = make_optimizer(model)
    tokens, targets = random_batch(shape)
    return model, lambda: training_step(model, optimizer, tokens, targets)


def train_loop_contestant(name: str, shape: Shape, probes_every: int, steps: int, plain_step, plain_every: int,
                          plain_steps: int):
    """Seconds per step of workbench.train's own loop, in a fresh store each time, and of the plain
    decoder's steps run between the loop's steps: `plain_steps` of them after every `plain_every`
    loop steps, timed apart and left out of the loop's time."""
    import workbench.train as train_module
    from workbench.config import RunConfig

    config = RunConfig.load(None, shape.overrides(probes_every, steps))
    timing = {}

    class TimedLoop(train_module._Loop):
        def run(self):
            fetch = self.batches.next
            timing["plain"], timing["plain_steps"] = 0.0, 0

            def next_batch():
                if self.state.step and self.state.step % plain_every == 0:
                    timing["plain"] += seconds_per_call(plain_step, plain_steps) * plain_steps
                    timing["plain_steps"] += plain_steps
                return fetch()

            self.batches.next = next_batch
            timing["start"] = time.perf_counter()
            return super().run()

        def finish(self):
            timing["end"] = time.perf_counter()
            return super().finish()

    def measure() -> dict[str, float]:
        original = train_module._Loop
        train_module._Loop = TimedLoop
        try:
            with tempfile.TemporaryDirectory() as root:
                train_module.train(config, progress=False, root=root)
        finally:
            train_module._Loop = original
        return {name: (timing["end"] - timing["start"] - timing["plain"]) / steps,
                beside(name): timing["plain"] / timing["plain_steps"]}

    return measure


# --- the table ------------------------------------------------------------------------------------
def measure_shape(shape: Shape, threads: int, rounds: int, model_steps: int, loop_steps: int, peak: float):
    plain_model, plain_step = plain_contestant(shape)
    _, workbench_step = workbench_step_contestant(shape)
    chunk = 5  # model-only contestants alternate with the plain decoder every 5 steps

    def model_only(name, step):
        return lambda: alternating(name, step, plain_step, model_steps, chunk)

    contestants = {"workbench step": model_only("workbench step", workbench_step)}
    for name, every in [("workbench train(), probes off", 0), ("workbench train(), probes every 100", 100)]:
        contestants[name] = train_loop_contestant(name, shape, every, loop_steps, plain_step, 2 * chunk, chunk)
    warm_up = [plain_step, workbench_step]
    if transformer_lens() is not None:
        _, lens_step = transformer_lens_contestant(shape)
        contestants["TransformerLens"] = model_only("TransformerLens", lens_step)
        warm_up.append(lens_step)
    # A few steps warm the models up; train() builds a fresh model on every call, so a whole warm-up
    # round of it (a quarter of this benchmark's time) would warm nothing that a round does not.
    for step in warm_up:
        seconds_per_call(step, chunk)
    samples = interleaved_samples(contestants, rounds, warmup=0)
    # Each contestant's time over the plain decoder's beside it, per round: ratios between two
    # contestants go through that shared reference, so each side's drift cancels within its own pair.
    relative = {name: [t / p for t, p in zip(samples[name], samples[beside(name)])] for name in contestants
                if name in samples}
    relative["plain"] = [1.0] * rounds
    seconds = medians({name: samples[name] for name in contestants if name in samples})
    seconds["plain"] = statistics.median([t for name in contestants for t in samples.get(beside(name), [])])
    tokens = shape.batch * shape.T
    flops = training_flops_per_token(matmul_parameters(plain_model), shape.n_layers, shape.T, shape.d_model)
    rate = {name: tokens / s for name, s in seconds.items()}
    rows = []
    order = ["plain", "TransformerLens", "workbench step", "workbench train(), probes off",
             "workbench train(), probes every 100"]
    for name in order:
        if name not in rate:
            rows.append([name, TL_MISSING, "", "", "", ""])
            continue
        rows.append([name, f"{seconds[name] * 1e3:.1f}", f"{rate[name]:,.0f}",
                     f"{100 * mfu(rate[name], flops, peak):.1f}%", paired_speedup(relative, name, "plain"),
                     paired_speedup(relative, name, "TransformerLens")])
    header = (f"Shape {shape.name}: {shape.n_layers} layer(s), d_model={shape.d_model}, {shape.n_heads} heads, "
              f"d_mlp={shape.d_mlp}, T={shape.T}, batch {shape.batch}, vocab {VOCAB}; {threads} thread(s); "
              f"{flops / 1e6:.2f} MFLOP per token; median of {rounds} interleaved rounds. Every contestant "
              f"alternates with the plain decoder ({chunk} plain steps after every {chunk} model steps, or every "
              f"{2 * chunk} steps of train()); ratios: median over rounds of each contestant's time over "
              f"the plain steps run beside it (range over rounds); plain's ms / step: median of all its timings")
    targets = target_lines(relative, [("workbench train(), probes off", "plain", 1.0),
                                      ("workbench train(), probes every 100", "plain", 0.9),
                                      ("workbench train(), probes off", "TransformerLens", 1.3)])
    columns = ["contestant", "ms / step", "tokens / s", "MFU", "vs plain", "vs TransformerLens"]
    return header, table(columns, rows) + "\n\n" + targets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=DEFAULT_THREADS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--shapes", default="a,b")
    parser.add_argument("--model-steps", type=int, default=20, help="steps per timing of the model-only contestants")
    parser.add_argument("--loop-steps", type=int, default=100, help="steps per train() run (one probe per 100)")
    args = parser.parse_args()
    threads = set_threads(args.threads)
    peak = matmul_peak(threads)
    print(f"## Training throughput\n\nMeasured fp32 matmul peak: {peak / 1e9:.1f} GFLOP/s on {threads} thread(s) "
          f"(torch {torch.__version__}). MFU = tokens/s x (6 N + 6 L T d) / peak, N = parameters of the "
          "matrix multiplies (benchmarks/common.py).")
    if transformer_lens() is None:
        print(f"TransformerLens rows: {TL_MISSING}.")
    for name in args.shapes.split(","):
        header, text = measure_shape(SHAPES[name], threads, args.rounds, args.model_steps, args.loop_steps, peak)
        print(f"\n{header}\n\n{text}", flush=True)


if __name__ == "__main__":
    main()
