"""An activation patching sweep over every layer, position and head: workbench vs TransformerLens.

Both sides patch the clean run's per-head outputs into the corrupted run of the same induction
pairs, on the same weights (a 2-layer, d_model=64, 4-head attention model with learned absolute
positions and a ReLU MLP, the shapes of benchmarks/throughput.py, at T=64), in eval mode under
torch.no_grad, on one thread. TransformerLens runs one `run_with_hooks` per (layer, position,
head), patching `hook_z`, as its tutorials do; workbench runs `patching_sweep(model, pairs,
components=("units",))`, one forward per (layer, head) covering every position, started at the
patched layer. The two sweeps' effects are checked to agree before anything is timed.

The second table times a plain forward of the same model with its HookPoints as they are (nobody
listening) and with every HookPoint replaced by a bare identity module: the claim that a hook
nobody listens to costs nothing.

    .venv/bin/python benchmarks/patching_sweep.py [--threads 1] [--rounds 3] [--pairs 8]
"""
from __future__ import annotations

import argparse
import time

import torch
from torch import nn

from common import (DEFAULT_THREADS, TL_MISSING, interleaved_samples, medians, paired_speedup, seconds_per_call,
                    set_threads, table, target_lines, transformer_lens)
from throughput import Shape, transformer_lens_model

SHAPE = Shape("patching", 2, 64, 4, 8, 20)  # batch = pairs; T = 64 (digits only size the shape's T)
T = 64
WB_SWEEP, TL_SWEEP = "workbench patching_sweep", "TransformerLens run_with_hooks loop"
HOOKED, BARE = "hook points, nobody listening", "hook points replaced by identity"


def workbench_setup(pairs_count: int):
    from workbench.circuits.pairs import patching_pairs
    from workbench.config import RunConfig
    from workbench.models import build_model
    from workbench.tasks import build_task

    config = RunConfig.load(None, ["task.name=induction", f"task.max_length={T - 3}", "model.pos=learned",
                                   f"model.max_positions={T}", f"model.n_layers={SHAPE.n_layers}",
                                   f"model.d_model={SHAPE.d_model}", f"model.n_heads={SHAPE.n_heads}"])
    task = build_task(config.task.name, config.task.params)
    model = build_model(config.model, len(task.vocab), seed=0).eval()
    pairs = patching_pairs(task, pairs_count, seed=0)
    assert pairs.clean.shape[1] == T
    return model, pairs, len(task.vocab)


def copy_into_lens(model, vocab: int):
    """A HookedTransformer computing what `model` computes: its weights copied into TL's layout."""
    import throughput

    throughput.VOCAB = vocab  # transformer_lens_model reads the vocabulary size from there
    lens = transformer_lens_model(Shape("patching", SHAPE.n_layers, SHAPE.d_model, SHAPE.n_heads, 1, 20)).eval()
    D, H = SHAPE.d_model, SHAPE.n_heads
    with torch.no_grad():
        lens.embed.W_E.copy_(model.embed.weight)
        lens.pos_embed.W_pos.copy_(model.encoding.table.weight[: lens.cfg.n_ctx])
        for ours, theirs in zip(model.blocks, lens.blocks):
            theirs.ln1.w.copy_(ours.norm_mixer.weight), theirs.ln1.b.copy_(ours.norm_mixer.bias)
            theirs.ln2.w.copy_(ours.norm_mlp.weight), theirs.ln2.b.copy_(ours.norm_mlp.bias)
            w, b = ours.mixer.qkv.weight, ours.mixer.qkv.bias
            for index, (W, B) in enumerate([("W_Q", "b_Q"), ("W_K", "b_K"), ("W_V", "b_V")]):
                rows = slice(index * D, (index + 1) * D)
                getattr(theirs.attn, W).copy_(w[rows].view(H, D // H, D).transpose(1, 2))
                getattr(theirs.attn, B).copy_(b[rows].view(H, D // H))
            theirs.attn.W_O.copy_(ours.mixer.out.weight.view(D, H, D // H).permute(1, 2, 0))
            theirs.attn.b_O.copy_(ours.mixer.out.bias)
            theirs.mlp.W_in.copy_(ours.mlp.fc_in.weight.T), theirs.mlp.b_in.copy_(ours.mlp.fc_in.bias)
            theirs.mlp.W_out.copy_(ours.mlp.fc_out.weight.T), theirs.mlp.b_out.copy_(ours.mlp.fc_out.bias)
        lens.ln_final.w.copy_(model.norm_final.weight), lens.ln_final.b.copy_(model.norm_final.bias)
        lens.unembed.W_U.copy_(model.unembed.weight.T), lens.unembed.b_U.zero_()
    return lens


def lens_sweep(lens, pairs) -> torch.Tensor:
    """(layers, positions, heads) effects, one run_with_hooks per cell."""
    rows = torch.arange(len(pairs))

    def difference(logits):
        at = logits[rows, pairs.answer_position]
        return float((at[rows, pairs.answer] - at[rows, pairs.wrong]).mean())

    clean_logits, cache = lens.run_with_cache(pairs.clean, names_filter=lambda name: name.endswith("hook_z"))
    clean, corrupted = difference(clean_logits), difference(lens(pairs.corrupted))
    effects = torch.zeros(SHAPE.n_layers, T, SHAPE.n_heads)
    for layer in range(SHAPE.n_layers):
        name = f"blocks.{layer}.attn.hook_z"
        for position in range(T):
            for head in range(SHAPE.n_heads):
                def patch(z, hook, position=position, head=head):
                    z[:, position, head] = cache[hook.name][:, position, head]
                    return z
                patched = difference(lens.run_with_hooks(pairs.corrupted, fwd_hooks=[(name, patch)]))
                effects[layer, position, head] = (patched - corrupted) / (clean - corrupted)
    return effects


class BareIdentity(nn.Identity):
    """A HookPoint's stand-in with no listener list to check."""

    active = False


def without_hook_points(model):
    import copy

    from workbench.models.hooks import HookPoint

    bare = copy.deepcopy(model)
    for parent in list(bare.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, HookPoint):
                setattr(parent, name, BareIdentity())
    return bare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=DEFAULT_THREADS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--forward-batch", type=int, default=32)
    args = parser.parse_args()
    threads = set_threads(args.threads)
    from workbench.circuits.patching import patching_sweep

    model, pairs, vocab = workbench_setup(args.pairs)
    sweep = lambda: patching_sweep(model, pairs, components=("units",))  # noqa: E731
    contestants = {WB_SWEEP: lambda: seconds_per_call(sweep, 1)}
    with torch.no_grad():
        if transformer_lens() is not None:
            lens = copy_into_lens(model, vocab)
            assert torch.allclose(lens(pairs.clean), model(pairs.clean), atol=1e-4), "the copied weights differ"
            theirs = lens_sweep(lens, pairs)
            ours = sweep()
            ours = torch.tensor(ours.effect.values, dtype=torch.float32).view(SHAPE.n_layers, SHAPE.n_heads, T)
            assert torch.allclose(ours.transpose(1, 2), theirs, atol=1e-3), "the two sweeps disagree"
            contestants[TL_SWEEP] = lambda: seconds_per_call(lambda: lens_sweep(lens, pairs), 1)
        samples = interleaved_samples(contestants, args.rounds)
    seconds = medians(samples)
    print(f"## Patching sweep\n\n{SHAPE.n_layers} layers x {T} positions x {SHAPE.n_heads} heads, {args.pairs} "
          f"induction pairs, d_model={SHAPE.d_model}; {threads} thread(s), median of {args.rounds} interleaved rounds; "
          f"ratio: median of the per-round ratios (range over rounds).\n")
    rows = [[WB_SWEEP, f"{seconds[WB_SWEEP]:.3f}", ""]]
    rows.append([TL_SWEEP, f"{seconds[TL_SWEEP]:.3f}", paired_speedup(samples, WB_SWEEP, TL_SWEEP)]
                if TL_SWEEP in seconds else [TL_SWEEP, TL_MISSING, ""])
    print(table(["sweep", "seconds", "workbench speed-up"], rows))
    print("\n" + target_lines(samples, [(WB_SWEEP, TL_SWEEP, 1.5)]))
    print(f"- {WB_SWEEP} <= 2 s: {'met' if seconds[WB_SWEEP] <= 2.0 else 'missed'} ({seconds[WB_SWEEP]:.3f} s)")
    forward_costs(model, vocab, args)


def forward_costs(model, vocab: int, args) -> None:
    tokens = torch.randint(0, vocab, (args.forward_batch, T), generator=torch.Generator().manual_seed(1))
    bare = without_hook_points(model)
    calls = 20
    with torch.no_grad():
        assert torch.equal(model(tokens), bare(tokens))
        samples = interleaved_samples({HOOKED: lambda: seconds_per_call(lambda: model(tokens), calls),
                                       BARE: lambda: seconds_per_call(lambda: bare(tokens), calls)}, max(args.rounds, 5))
    seconds = medians(samples)
    print(f"\nPlain forward, batch {args.forward_batch} x T={T}, median of {max(args.rounds, 5)} rounds of {calls}:\n")
    print(table(["model", "ms / forward", "identity model's speed-up"],
                [[HOOKED, f"{seconds[HOOKED] * 1e3:.3f}", paired_speedup(samples, BARE, HOOKED)],
                 [BARE, f"{seconds[BARE] * 1e3:.3f}", ""]]))


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"\n({time.perf_counter() - start:.0f} s in all)")
