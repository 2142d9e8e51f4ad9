"""The interpretability tools on workbench models: TransformerLens (its TransformerBridge, in 3.9 and
4.x) opens an exported run from its folder and caches the same attention patterns as the
workbench's `hook_pattern` (within 1e-5); nnsight traces a workbench model as any PyTorch module, reads a pattern and patches an activation
with the workbench's own answer. Skipped without the interop extra; nothing is downloaded."""
from __future__ import annotations

import pytest
import torch

from interop_models import extra_or_skip, random_inputs, stored_run
from workbench.analysis import load_model
from workbench import export_model

PATTERN_TOLERANCE = 1e-5
LOGIT_TOLERANCE = 1e-4


@pytest.mark.parametrize("options", [dict(pos="learned", activation="gelu", n_heads=4), dict(pos="rope")],
                         ids=["gpt2", "gpt_neox"])
def test_transformer_lens_caches_the_workbench_attention_patterns(options, data_dir, tmp_path):
    extra_or_skip("transformer_lens")
    from transformer_lens.model_bridge import TransformerBridge

    run = stored_run(data_dir, **options)
    folder = export_model(run.run_id, tmp_path / "hf")
    bridge = TransformerBridge.boot_transformers(str(folder), device="cpu")  # a local folder: no hub
    model, task = load_model(run)
    tokens = random_inputs(len(task.vocab), n=64, length=24)
    logits, cache = bridge.run_with_cache(tokens)
    with torch.no_grad():
        ours, our_cache = model.run_with_cache(tokens, names=lambda name: name.endswith("hook_pattern"))
    assert float((logits.detach() - ours).abs().max()) <= LOGIT_TOLERANCE
    for layer in range(run.config().model.n_layers):
        theirs, mine = cache[f"blocks.{layer}.attn.hook_pattern"], our_cache[f"blocks.{layer}.mixer.hook_pattern"]
        assert theirs.shape == mine.shape == (64, run.config().model.n_heads, 24, 24)
        assert float((theirs - mine).abs().max()) <= PATTERN_TOLERANCE


def test_nnsight_reads_a_pattern_and_patches_an_activation(data_dir, tmp_path, monkeypatch):
    # nnsight mounts `.save` on every Python object unless its config says not to; keep the test
    # process as other tests expect it (read when nnsight is first imported)
    (tmp_path / "nnsight.yaml").write_text("APP:\n  PYMOUNT: false\n")
    monkeypatch.setenv("NNSIGHT_CONFIG", str(tmp_path / "nnsight.yaml"))
    nnsight = extra_or_skip("nnsight")

    run = stored_run(data_dir, pos="rope")
    model, task = load_model(run)
    tokens = random_inputs(len(task.vocab), n=8, length=12)
    traced = nnsight.NNsight(model)
    pattern_name, post_name = "blocks.0.mixer.hook_pattern", "blocks.1.mlp.hook_post"
    # a hook point computes only when asked: expose() asks without a workbench listener
    with model.expose([pattern_name, post_name]), torch.no_grad():
        with traced.trace(tokens):
            pattern = nnsight.save(traced.blocks[0].mixer.hook_pattern.output)
        with traced.trace(tokens):
            traced.blocks[1].mlp.hook_post.output[:, 5, :] = 0  # knock out every MLP neuron at position 5
            patched = nnsight.save(traced.output)

    def knock_out(value, hook):
        value = value.clone()
        value[:, 5, :] = 0
        return value

    with torch.no_grad():
        _, cache = model.run_with_cache(tokens, names=[pattern_name])
        clean = model(tokens)
        with model.hooks({post_name: knock_out}):
            expected = model(tokens)
    assert torch.allclose(pattern, cache[pattern_name], atol=1e-6)
    assert torch.allclose(patched, expected, atol=1e-5)
    assert torch.allclose(patched[:, :5], clean[:, :5], atol=1e-5)  # causal: earlier positions untouched
    assert float((patched[:, 5:] - clean[:, 5:]).abs().max()) > 1e-2  # the patch did change the answer
