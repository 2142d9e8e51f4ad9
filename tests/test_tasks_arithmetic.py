"""Arithmetic tasks against Python-integer oracles: addition (coupling / abacus ids, reversed /
plain answers), multi-operand addition, multiplication (with priming)."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.coupled_ids import LEVEL_STRIDE, SHIFT_STRIDE, unpack
from workbench.errors import ConfigError
from workbench.tasks import build_task

from task_samples import unpadded_samples

FAST = settings(max_examples=25, deadline=None)


def rows(task, batch):
    """Per sample: full symbol sequence, the masked answer symbols, position ids (unpadded)."""
    out = []
    for sequence, mask, positions in unpadded_samples(batch):
        symbols = [task.vocab.symbols[t] for t in sequence]
        answer = [symbols[t + 1] for t in range(len(mask)) if mask[t]]
        first = mask.index(True)
        assert all(mask[first:]) and not any(mask[:first]), "the loss covers one contiguous answer"
        out.append((symbols, answer, positions, first + 1))
    return out


def gen(seed):
    return torch.Generator().manual_seed(seed)


# --- addition -----------------------------------------------------------------------------------
@FAST
@given(seed=st.integers(0, 10**6), length=st.one_of(st.none(), st.integers(1, 40)),
       reverse=st.booleans(), ids=st.sampled_from(["coupling", "abacus"]), train=st.booleans())
def test_addition_answers_masks_and_ids(seed, length, reverse, ids, train):
    task = build_task("addition", {"max_digits": 6, "max_position": 20, "reverse_answer": reverse, "ids": ids})
    batch = task.sample(16, gen(seed), length=length, train=train)
    offsets = set()
    for (symbols, answer, positions, prompt_size), len_a, len_b in zip(rows(task, batch), batch.meta["len_a"], batch.meta["len_b"]):
        text = "".join(symbols[1:prompt_size])
        a_text, b_text = text[:-1].split("+")
        n = len(a_text)
        assert len(b_text) == n and text.endswith("=")
        a, b = int(a_text), int(b_text)
        for value, digits in ((a, int(len_a)), (b, int(len_b))):  # no leading zero beyond the padding
            assert value < 10 ** digits and (digits == 1 or value >= 10 ** (digits - 1))
        expected = str(a + b).zfill(n + 1)
        assert "".join(answer) == (expected[::-1] if reverse else expected) + "$"
        if length is None:
            assert 1 <= n <= 6
        else:
            assert n == length
        # position ids from the rule, recomputed token by token
        significance = list(range(n, 0, -1)) + [None] + list(range(n, 0, -1)) + [None]
        answer_sig = list(range(1, n + 2)) if reverse else list(range(n + 1, 0, -1))
        if ids == "coupling":
            start = positions[n + 1]
            expected_ids = [0] + [start + s if s else start for s in significance] + [start + s for s in answer_sig] + [0]
            if not train:
                assert start == 1
            elif length is None:
                assert 1 <= start and start + n + 1 <= 20
        else:
            offset = positions[1] - n
            offsets.add(offset)
            expected_ids = [0] + [offset + s if s else 0 for s in significance] + [offset + s for s in answer_sig] + [0]
            if not train:
                assert offset == 0
        assert positions == expected_ids[: len(positions)]
        assert len(positions) == len(symbols) - 1
    if ids == "abacus":
        assert len(offsets) == 1, "abacus draws one offset per batch"


def test_addition_train_offsets_cover_the_table():
    task = build_task("addition", {"max_digits": 3, "max_position": 12})
    batch = task.sample(2000, gen(0))
    assert int(batch.position_ids.max()) == 12


@pytest.mark.parametrize("bad", [{"min_digits": 0}, {"max_digits": 0}, {"min_digits": 5, "max_digits": 3},
                                 {"max_position": 5}, {"ids": "rope"}, {"reverse_answer": "maybe"}])
def test_addition_bad_params(bad):
    with pytest.raises(ConfigError):
        build_task("addition", bad)


# --- multi-operand addition ---------------------------------------------------------------------
@FAST
@given(seed=st.integers(0, 10**6), length=st.one_of(st.none(), st.integers(1, 12)),
       eval_operands=st.sampled_from([0, 2, 7]), train=st.booleans())
def test_multi_operand_running_sums_and_two_level_ids(seed, length, eval_operands, train):
    task = build_task("multi_operand_addition", {"max_digits": 4, "max_operands": 4, "eval_operands": eval_operands})
    batch = task.sample(12, gen(seed), length=length, train=train)
    for (symbols, answer, positions, prompt_size), k in zip(rows(task, batch), batch.meta["operands"]):
        operands = "".join(symbols[1:prompt_size - 1]).split("+")
        assert len(operands) == int(k)
        if length is not None and eval_operands:
            assert len(operands) == eval_operands
        n = len(operands[0])
        assert all(len(o) == n for o in operands) and (length is None or n == length)
        width = n + len(str(max(len(operands) - 1, 1)))
        sums = "".join(answer)[:-1].split(">")
        assert len(sums) == len(operands) and answer[-1] == "$"
        running = 0
        for operand, written in zip(operands, sums):
            running += int(operand)
            assert written == str(running).zfill(width)[::-1]
        # ids: operand i and running sum i share level level0 + i; significance as in addition
        sig = [p % LEVEL_STRIDE for p in positions]
        level = [p // LEVEL_STRIDE for p in positions]
        start = sig[n + 1]
        level0 = level[1] - 1
        cursor = 1
        for i in range(len(operands)):
            for s in range(n, 0, -1):
                assert (sig[cursor], level[cursor]) == (start + s, level0 + i + 1)
                cursor += 1
            assert (sig[cursor], level[cursor]) == (start, level0 + i + 1)
            cursor += 1
        for i in range(len(operands)):
            for s in range(1, width + 1):
                assert (sig[cursor], level[cursor]) == (start + s, level0 + i + 1)
                cursor += 1
            if cursor < len(positions):
                assert (sig[cursor], level[cursor]) == (start, level0 + i + 1)
                cursor += 1
        if not train:
            assert start == 1 and level0 == 0


@pytest.mark.parametrize("train", [True, False])
def test_multi_operand_single_level_ids_keep_significance_and_drop_the_operand_level(train):
    """task.levels=1 (the paper's ablation): the same digits and significance ids, every level 0."""
    two, one = (build_task("multi_operand_addition", {"levels": levels}) for levels in (2, 1))
    multi, single = (task.sample(32, gen(7), train=train) for task in (two, one))
    assert torch.equal(multi.tokens, single.tokens)
    assert torch.equal(single.position_ids, multi.position_ids % LEVEL_STRIDE)
    assert int(single.position_ids.max()) < LEVEL_STRIDE < int(multi.position_ids.max())


@FAST
@given(seed=st.integers(0, 10**6), length=st.one_of(st.none(), st.integers(1, 12)),
       levels=st.sampled_from([1, 2]), train=st.booleans())
def test_multi_operand_padded_scratchpad_is_the_papers(seed, length, levels, train):
    """scratchpad=padded: operands and sums zero-padded to the sum's width, the zero sum s_0 first; s_i at
    level i, a_i at s_{i-1}'s, '=' at s_0's, the '>' before s_i at s_i's; significance as in addition."""
    task = build_task("multi_operand_addition", {"max_digits": 4, "max_operands": 4, "scratchpad": "padded",
                                                 "levels": levels})
    batch = task.sample(12, gen(seed), length=length, train=train)
    for symbols, answer, positions, prompt_size in rows(task, batch):
        operands = "".join(symbols[1:prompt_size - 1]).split("+")
        k, W = len(operands), len(operands[0])
        n = max(len(o.lstrip("0") or "0") for o in operands)
        assert W == n + len(str(k - 1)) and all(len(o) == W for o in operands)
        assert length is None or n == length or all(int(o) == 0 for o in operands)
        sums = "".join(answer)[:-1].split(">")
        assert answer[-1] == "$" and len(sums) == k + 1 and sums[0] == "0" * W
        running = 0
        for operand, written in zip(operands, sums[1:]):
            running += int(operand)
            assert written == str(running).zfill(W)[::-1]
        if k == 4:  # the most operands: the length the task reserves for n digits
            assert len(positions) == task.sequence_length(n)
        sig = [p % LEVEL_STRIDE for p in positions]
        level = [p // LEVEL_STRIDE for p in positions]
        start, sum_level = sig[prompt_size - 1], level[prompt_size - 1]  # '=': the zero sum's ids
        step = 1 if levels == 2 else 0
        expected = [(0, 0)]
        for i in range(k):  # a_{i+1} and its operator at s_i's level ('=' after the last: s_0's)
            expected += [(start + s, sum_level + step * i) for s in range(W, 0, -1)]
            expected += [(start, sum_level + step * i if i < k - 1 else sum_level)]
        for i in range(k + 1):
            expected += ([(start, sum_level + step * i)] if i else []) + [(start + s, sum_level + step * i)
                                                                            for s in range(1, W + 1)]
        assert list(zip(sig, level))[: len(expected)] == expected
        if not train:
            assert start == 1 and sum_level == step


def test_multi_operand_equal_lengths_draws_one_length_per_sample():
    """equal_lengths=1: every training sample's operands have one length; 0 (the default) keeps the
    draws of every earlier run."""
    same = build_task("multi_operand_addition", {"equal_lengths": 1.0, "scratchpad": "padded", "min_digits": 3})
    for symbols, _, _, prompt_size in rows(same, same.sample(64, gen(3), train=True)):
        operands = "".join(symbols[1:prompt_size - 1]).split("+")
        assert len({len(o.lstrip("0")) for o in operands}) == 1
    default = build_task("multi_operand_addition")
    explicit = build_task("multi_operand_addition", {"equal_lengths": 0.0})
    assert torch.equal(default.sample(32, gen(5), train=True).tokens, explicit.sample(32, gen(5), train=True).tokens)


def test_multi_operand_bad_params():
    for bad in ({"min_operands": 1}, {"max_operands": 70}, {"eval_operands": 1}, {"max_position": 3},
                {"max_level": 2, "max_operands": 5}, {"levels": 3}, {"levels": 0}, {"scratchpad": "paper"},
                {"equal_lengths": 1.5}, {"scratchpad": "padded", "max_level": 5, "max_operands": 5}):
        with pytest.raises(ConfigError):
            build_task("multi_operand_addition", bad)


# --- multiplication -----------------------------------------------------------------------------
@FAST
@given(seed=st.integers(0, 10**6), length=st.one_of(st.none(), st.integers(1, 15)),
       b_digits=st.sampled_from([(2, 2), (1, 3)]), train=st.booleans())
def test_multiplication_partial_products(seed, length, b_digits, train):
    task = build_task("multiplication", {"max_digits": 4, "min_b_digits": b_digits[0], "max_b_digits": b_digits[1]})
    batch = task.sample(12, gen(seed), length=length, train=train)
    for symbols, answer, positions, prompt_size in rows(task, batch):
        a_text, b_text = "".join(symbols[1:prompt_size - 1]).split("*")
        a, b = int(a_text), int(b_text)
        N, M = len(a_text), len(b_text)
        assert b_digits[0] <= M <= b_digits[1] and (length is None or N == length)
        sums = "".join(answer)[:-1].split(">")
        assert len(sums) == M
        for j, written in enumerate(sums, start=1):
            assert written == str(a * (b % 10 ** j)).zfill(N + M)[::-1]
        assert int(sums[-1][::-1]) == a * b
        start = positions[N + 1]
        if not train:
            assert start == 1
        levels = [p // LEVEL_STRIDE for p in positions]
        assert levels[: N + 2] == [0] * (N + 2)
        assert levels[N + 2: N + 2 + M] == list(range(M, 0, -1))


@FAST
@given(seed=st.integers(0, 10**6), length=st.one_of(st.none(), st.integers(1, 15)),
       b_digits=st.sampled_from([(2, 2), (1, 3)]), train=st.booleans())
def test_multiplication_the_papers_scratchpad_and_its_three_ids(seed, length, b_digits, train):
    task = build_task("multiplication", {"max_digits": 4, "min_b_digits": b_digits[0], "max_b_digits": b_digits[1],
                                         "scratchpad": "partial_products"})
    batch = task.sample(12, gen(seed), length=length, train=train)
    for symbols, answer, positions, prompt_size in rows(task, batch):
        a_text, b_text = "".join(symbols[1:prompt_size - 1]).split("*")
        a, b = int(a_text), int(b_text)
        N, M = len(a_text), len(b_text)
        assert symbols[prompt_size - 1] == "=" and (length is None or N == length)
        products, sums = "".join(answer)[:-1].split("=")
        for j, written in enumerate(products.split("+"), start=1):  # p_j = a * b_j, N + 1 digits
            assert written == str(a * (b // 10 ** (j - 1) % 10)).zfill(N + 1)[::-1]
        for j, written in enumerate(sums.split(">"), start=1):
            assert written == str(a * (b % 10 ** j)).zfill(N + M)[::-1]
        assert all(p >= SHIFT_STRIDE for p in positions), "every token marks a three-id sequence"
        ids = [unpack(p) for p in positions] + [None]  # the id of each token; EOS is never an input
        a_ids = {N - 1 - i: ids[1 + i] for i in range(N)}  # significance t -> a's digit
        assert all(level == 0 and shifted == 0 for _, level, shifted in a_ids.values())
        if not train:
            assert a_ids[0][0] == 2, "evaluation starts the ids at 1 (a's units digit is start + 1)"
        assert [ids[N + 2 + i][1] for i in range(M)] == list(range(M, 0, -1)), "b's digit j has level j"
        cursor, sum_ids = prompt_size + M * (N + 2), {}  # the first digit of s_1, past every p_j
        for j in range(1, M + 1):
            for k in range(N + M):
                sum_ids[j, k] = ids[cursor + k]
                assert sum_ids[j, k][:2] == (0, j)
            cursor += N + M + 1
        cursor = prompt_size
        for j in range(1, M + 1):
            for t in range(N + 1):
                significance, level, shifted = ids[cursor + t]
                assert level == j
                if t < N:  # p_j's digit t reads a's digit t: one significance
                    assert significance == a_ids[t][0]
                # ... and lands at t + j - 1 in the sums: one shifted id
                if t + j - 1 < N + M:
                    assert shifted == sum_ids[1, t + j - 1][2]
            cursor += N + 2
        assert len(symbols) == prompt_size + M * (N + 2) + M * (N + M + 1)


def test_multiplication_the_running_scratchpad_stays_as_it_was():
    running = build_task("multiplication")
    assert "+" not in running.vocab.symbols and not running.shifted_ids
    ours = running.sample(16, gen(3), train=True)
    assert int(ours.position_ids.max()) < SHIFT_STRIDE
    paper = build_task("multiplication", {"scratchpad": "partial_products"})
    assert paper.vocab.symbols == running.vocab.symbols + ["+"]
    assert paper.sequence_length(5) == running.sequence_length(5) + 2 * 7


def test_multiplication_priming():
    params = {"max_digits": 3, "priming": 4, "priming_digits": 12, "priming_rate": 1.0}
    task = build_task("multiplication", params)
    primed = task.sample(32, gen(1))
    assert primed.meta["primed"].all() and (primed.meta["length"] == 12).all()
    assert len({tuple(t.tolist()) for t in primed.tokens}) <= 4, "primed examples come from a fixed set"
    again = build_task("multiplication", params).sample(32, gen(1))
    assert torch.equal(primed.tokens, again.tokens)
    test = task.sample(32, gen(1), train=False)
    assert not test.meta["primed"].any() and (test.meta["length"] <= 3).all()
    plain = build_task("multiplication", {**params, "priming_rate": 0.0}).sample(32, gen(1))
    assert not plain.meta["primed"].any()


def test_multiplication_bad_params():
    for bad in ({"min_b_digits": 0}, {"priming": -1}, {"priming_rate": 2.0}, {"max_position": 4},
                {"scratchpad": "columns"}, {"scratchpad": "partial_products", "max_position": 600}):
        with pytest.raises(ConfigError):
            build_task("multiplication", bad)
