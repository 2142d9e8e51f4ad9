"""Properties every registered task keeps: same seed -> same data, next-token targets, masks
inside the sequence, any length works (far beyond training), ids within the declared table, and
`show_examples` / config wiring of task ids."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.config import RunConfig
from workbench.coupled_ids import LEVEL_STRIDE
from workbench.errors import ConfigError
from workbench.tasks import TASKS, build_task
from workbench.tasks.show import show_examples

NAMES = TASKS.names()
FAST = settings(max_examples=25, deadline=None)


def equal(a, b):
    return torch.equal(a.tokens, b.tokens) and torch.equal(a.targets, b.targets) and \
        torch.equal(a.loss_mask, b.loss_mask) and \
        (a.position_ids is None and b.position_ids is None or torch.equal(a.position_ids, b.position_ids)) and \
        a.meta.keys() == b.meta.keys() and all(torch.equal(a.meta[k], b.meta[k]) for k in a.meta)


def test_every_issue_task_is_registered():
    expected = {"addition", "copy", "multi_operand_addition", "multiplication", "reverse", "sort", "selective_copy",
                "parity", "passkey", "associative_recall", "mqar", "induction", "memorize", "markov_icl"}
    assert expected <= set(NAMES)


@FAST
@given(name=st.sampled_from(NAMES), seed=st.integers(0, 2**31), train=st.booleans())
def test_same_seed_same_data(name, seed, train):
    task = build_task(name)
    first = task.sample(8, torch.Generator().manual_seed(seed), train=train)
    again = build_task(name).sample(8, torch.Generator().manual_seed(seed), train=train)
    assert equal(first, again)


@pytest.mark.parametrize("name", NAMES)
def test_sampling_leaves_torch_global_generator_alone(name, monkeypatch):
    """The trainer draws batches on a worker thread while the model may draw from the global
    generator (randomized positions): a task must use only the generator it is given, neither
    drawing from the global one nor reseeding it (even if it restores it afterwards)."""
    def reseeds(*args, **kwargs):
        raise AssertionError(f"task {name} reseeds torch's global generator")

    task = build_task(name)
    before = torch.get_rng_state()
    monkeypatch.setattr(torch, "manual_seed", reseeds)
    monkeypatch.setattr(torch, "set_rng_state", reseeds)
    task.sample(8, torch.Generator().manual_seed(0), train=True)
    monkeypatch.undo()
    assert torch.equal(torch.get_rng_state(), before)


@FAST
@given(name=st.sampled_from(NAMES), seed=st.integers(0, 2**31), scale=st.sampled_from([None, 1, 2, 4]),
       train=st.booleans())
def test_batches_are_well_formed_at_any_length(name, seed, scale, train):
    task = build_task(name)
    low, high = task.train_lengths()
    length = None if scale is None else max(low, high * scale)
    if length is not None and length > getattr(task.params, "n_keys", length):
        with pytest.raises(ConfigError, match="n_keys"):  # more distinct keys than the vocabulary holds
            task.sample(6, torch.Generator().manual_seed(seed), length=length, train=train)
        return
    batch = task.sample(6, torch.Generator().manual_seed(seed), length=length, train=train)
    B, T = batch.tokens.shape
    assert batch.targets.shape == batch.loss_mask.shape == (B, T) and batch.loss_mask.dtype == torch.bool
    assert all(v.shape[0] == B for v in batch.meta.values())
    if length is not None:
        assert T <= task.sequence_length(length)
    for i in range(B):
        real = (batch.tokens[i] != 0) | batch.loss_mask[i]
        size = int(real.nonzero().max()) + 1
        assert torch.equal(batch.targets[i, :size - 1], batch.tokens[i, 1:size]), "targets are the next tokens"
        assert (batch.tokens[i, :size] != 0).all(), "PAD only pads on the right"
        assert batch.loss_mask[i].any() and not batch.loss_mask[i, size:].any()
    if batch.position_ids is not None:
        assert batch.position_ids.shape == (B, T) and (batch.position_ids >= 0).all()
        significance = batch.position_ids % LEVEL_STRIDE
        if length is not None and not train:
            assert int(significance.max()) <= task.max_position_id(length)
        if length is None:
            assert int(significance.max()) <= task.max_position_id(high)


@pytest.mark.parametrize("name", NAMES)
def test_a_length_of_one_or_the_smallest_meaningful_works(name):
    task = build_task(name)
    for length in (1, 2, 3, 5):
        try:
            batch = task.sample(3, torch.Generator().manual_seed(0), length=length, train=False)
        except ConfigError:
            continue  # too short for this task (e.g. selective copy's region): a clear error, never a crash
        assert batch.loss_mask.any(dim=1).all()


@pytest.mark.parametrize("name", NAMES)
def test_bad_lengths_and_unknown_params_are_config_errors(name):
    task = build_task(name)
    with pytest.raises(ConfigError):
        task.sample(2, torch.Generator(), length=0)
    with pytest.raises(ConfigError):
        task.sample(0, torch.Generator())
    with pytest.raises(ConfigError):
        build_task(name, {"no_such_setting": 1})


@pytest.mark.parametrize("name", NAMES)
def test_show_examples_decodes_every_task(name):
    task = build_task(name)
    examples = show_examples(task, n=3, seed=1)
    assert len(examples) == 3
    for example in examples:
        assert len(example["tokens"]) == len(example["targets"]) == len(example["loss_mask"])
        if task.output == "regression":  # the answer is the real targets under the loss mask
            assert example["answer"] == " ".join(f"{v:.3f}" for v, m in zip(example["values"], example["loss_mask"]) if m)
        else:
            assert example["answer"] == "".join(s if len(s) == 1 else f"<{s}>" for s, m in
                                                 zip(example["targets"], example["loss_mask"]) if m)
        if task.trainable and not task.input_dim:
            # a synthetic token task's samples start with BOS; an imported model's ids carry no such
            # meaning, nor do the slots of a real-valued task (each marks an x or a y)
            assert example["input"].startswith("^")
        if task.uses_position_ids:
            assert len(example["position_ids"]) == len(example["tokens"])
        else:
            assert example["position_ids"] is None
    assert show_examples(task, n=3, seed=1) == examples


def test_show_examples_for_both_addition_id_schemes():
    for ids, operator_id in (("coupling", 1), ("abacus", 0)):
        example = show_examples(build_task("addition", {"ids": ids}), n=1, seed=0, length=3)[0]
        plus = example["tokens"].index("+")
        assert example["position_ids"][plus] == operator_id
        assert example["position_ids"][1:4] == [3 + operator_id, 2 + operator_id, 1 + operator_id]


def test_task_ids_follow_the_encoding():
    assert RunConfig.load(None, ["model.pos=abacus"]).task.params["ids"] == "abacus"
    config = RunConfig.load(None, ["model.pos=abacus"]).replace(**{"model.pos": "coupling"})
    assert config.task.params["ids"] == "coupling"
    assert RunConfig.load(None, ["model.pos=learned", "task.ids=abacus"]).task.params["ids"] == "abacus"
    with pytest.raises(ConfigError, match="defines no position ids"):
        RunConfig.load(None, ["task.name=parity", "model.pos=coupling"])
    with pytest.raises(ConfigError, match="offers coupling ids"):
        RunConfig.load(None, ["task.name=copy", "model.pos=abacus"])
    with pytest.raises(ConfigError, match="task.max_pairs"):
        RunConfig.load(None, ["task.name=mqar", "task.max_pairs=100", "model.pos=rope"])
