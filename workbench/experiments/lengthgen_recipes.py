"""The length-generalization recipes, one per task (each trains encodings x seeds)."""
from .lengthgen import (baselines_fail, beats, drawn_with, every_encoding, fits_where, gains, lengthgen, outdoes,
                        reaches, spread, zoo_figure)
from .verdicts import Claim, UntestedClaim

SMALL = ["model.n_layers=1", "model.d_model=64", "model.n_heads=4", "train.batch_size=128", "train.lr=3e-3"]

# Single coupling runs beside the recipe, read per answer position with teacher forcing, are in
# notes/lengthgen-addition.md: they are why the sweep trains coupling_relative beside the paper's `coupling`.

COUPLING = ("2405.20671",)  # Cho et al. 2024a, position coupling
MULTI_LEVEL = ("2410.15787",)  # Cho et al. 2024b, multi-level coupling for multi-operand addition and multiplication
RANDOMIZED = ("2305.16843",)  # Ruoss et al. 2023, randomized positional encodings
PRIMING = ("2306.15400",)  # Jelassi et al. 2023, length generalization in arithmetic Transformers
ABACUS = ("2405.17399",)  # McLeish et al. 2024, abacus embeddings
FIRE = ("2310.04418",)  # Li et al. 2023, functional interpolation for relative positions

# Every length recipe trains every encoding that applies to its task (#23's encoding zoo), so one figure
# answers "which encoding generalizes here". The FIRE claim, the same rule on every task and written
# before the runs: FIRE, fitted to 1-10, beats RoPE and ALiBi by 10 points at 2x (20).


def _fire(task: str) -> Claim:
    return outdoes("fire", ("rope", "alibi"), 20, 0.1, f"FIRE (a learned function of the relative distance with "
                   f"progressive interpolation) generalizes further than RoPE and ALiBi: on {task} it adds at least "
                   "10 points of exact match over each at 2x the training length", FIRE,
                   "qualitative: better long-context generalization than RoPE, ALiBi and Kerple",
                   method=f"exact match on {task} at 20 after training on 1-10 (the paper: language-model perplexity "
                          "and long-context benchmarks)")

lengthgen(
    "lengthgen-addition", "1-layer Transformers (d_model 64, 4 heads) with each of the 11 positional encodings, "
    "trained 3000 steps on 1-10 digit addition, evaluated up to 30 digits, seeds 0-2; coupled ids start at 1 at "
    "evaluation, as in the paper's code.",
    ["task.name=addition", "task.max_digits=10"], train_max=10, lengths=[5, 10, 12, 15, 20, 25, 30],
    encodings=every_encoding("addition", ["coupling", "coupling_relative", "learned", "nope"]), model=SMALL,
    steps=3000, fast_steps=150, figure=zoo_figure,
    fast_encodings=["coupling", "coupling_relative", "learned"], headline_length=30,
    claims=[
        reaches("coupling", 30, 0.9, "Position coupling (a learned table over coupled position ids) lets a 1-layer "
                "Transformer trained on 1-10 digit additions add 30-digit numbers (3x)", COUPLING,
                "95.65% exact match at 200 digits after training on 1-30 (6.67x)",
                offset_note=" (coupled ids starting at 1)"),
        reaches("coupling_relative", 30, 0.9, "Coupled position ids read as a relative bias with a learned distance "
                "penalty let a 1-layer Transformer trained on 1-10 digit additions add 30-digit numbers (3x)",
                COUPLING, "95.65% exact match at 200 digits (with the paper's table)",
                method="coupled ids as a relative bias (`coupling_relative`), not the paper's learned table",
                offset_note=" (coupled ids starting at 1)"),
        baselines_fail(("learned", "nope"), 15, 0.1, "Learned absolute positions and NoPE do not generalize to "
                       "longer additions (<= 10% beyond 15 digits)", COUPLING, "near 0% beyond the training length"),
        reaches("abacus", 30, 0.9, "Abacus embeddings (each digit's place within its number, from a random offset in "
                "training) let a Transformer trained on 1-10 digit additions add 30-digit numbers (3x)", ABACUS,
                "~99% at 100 digits after training on 1-20 (5x)",
                method="a 1-layer d_model 64 model (the paper: 16 layers, or looped ones with input injection), "
                       "trained on 1-10 digits and judged at 30 (3x)"),
        _fire("addition"),
    ],
    untested=[UntestedClaim("A model trained on 1-30 digits adds 200-digit numbers (6.67x)", COUPLING,
                            "training on 1-30 digits and evaluation at 200 digits, beyond this recipe's CPU budget")])

STRINGS = ["model.n_layers=2", "model.d_model=64", "model.n_heads=4", "train.batch_size=128", "train.lr=3e-3"]


# Width 128 (head dimension 32) is what carried the paper's table past 2x on reverse in single runs
# (notes/lengthgen-reverse.md: 86-100% at 20 on three seeds, where width 64 gives 7-25%), and let copying
# pass 10 at all (erratically). Copy and reverse train it beside the zoo, with learned positions at the
# same width as the baseline its claim needs.
WIDE = {"coupling w128": ["model.pos=coupling", "model.d_model=128"],
        "learned w128": ["model.pos=learned", "model.d_model=128"]}


def _strings(task: str, verb: str, encodings: list[str], claims, untested=(), wide: bool = False):
    """copy / reverse / sort: 2-layer models trained 2000 steps on 1-10 symbols, evaluated to 30; `wide`
    adds the paper's coupling and learned positions at width 128."""
    zoo = {pos: [f"model.pos={pos}"] for pos in every_encoding(task, encodings)}
    lengthgen(
        f"lengthgen-{task}", f"2-layer Transformers (d_model 64, 4 heads) trained 2000 steps to {verb} strings of "
        "1-10 symbols, with every positional encoding that applies"
        f"{' (and coupling and learned positions at d_model 128)' if wide else ''}, evaluated up to 30, seeds 0-2; "
        "coupled ids start at 0 at evaluation.",
        [f"task.name={task}", "task.max_length=10"], train_max=10, lengths=[5, 10, 15, 20, 30],
        encodings={**zoo, **WIDE} if wide else zoo, figure=zoo_figure,
        model=STRINGS, steps=2000, fast_steps=100, fast_encodings=[encodings[0], "learned"], headline_length=20,
        claims=[*claims, *([_wide_coupling(task)] if wide else []), _fire(task)], untested=untested)


def _beats_learned(pos: str, task: str, references, paper_number: str, method: str = "paper"):
    name = {"coupling": "Position coupling lets", "randomized": "Randomized positional encodings let"}[pos]
    return beats(pos, 20, 0.5, "learned", 15, 0.1, f"{name} a model trained on strings of 1-10 symbols {task} "
                 "strings of 20 (2x), where learned absolute positions fail", references, paper_number, method)


def _wide_coupling(task: str) -> Claim:
    """The paper's claim again, judged on the width-128 pair: the same rule and bars as at width 64."""
    return beats("coupling w128", 20, 0.5, "learned w128", 15, 0.1, f"Position coupling lets a model trained on "
                 f"strings of 1-10 symbols {task} strings of 20 (2x), where learned absolute positions fail",
                 COUPLING, "qualitative", method="2-layer models of width 128 (head dimension 32), learned positions "
                 "at the same width; the recipe's other runs are width 64", key="coupling-beats-learned-w128")


_strings("copy", "copy", ["coupling", "randomized", "rope", "learned", "nope"], [
    _beats_learned("randomized", "copy", RANDOMIZED, "+12.0% average test accuracy over 15 algorithmic tasks"),
    _beats_learned("coupling", "copy", COUPLING, "qualitative"),
], wide=True)

_strings("reverse", "reverse", ["coupling", "randomized", "rope", "learned"], [
    _beats_learned("coupling", "reverse", COUPLING, "qualitative (the paper's reverse-copy example)"),
    _beats_learned("randomized", "reverse", RANDOMIZED, "+12.0% average test accuracy over 15 algorithmic tasks"),
], wide=True)

_strings("sort", "sort", ["randomized", "rope", "learned", "nope"], [
    _beats_learned("randomized", "sort", RANDOMIZED, "+12.0% average test accuracy over 15 algorithmic tasks"),
], untested=[UntestedClaim("Training on lengths <= 20 with an auxiliary hint task lifts sorting accuracy at length 100 "
                           "from <1% to >92%", ("2310.00726",),
                           "the hint task beside sorting (this recipe trains none; `sort-hint` does, on 1-20)")])

HINTING = ("2310.00726",)  # Awasthi and Gupta 2023, task hinting
# The same model with and without the successor hint task (half the training samples), NoPE; trained on
# the paper's range, lists of 1-20, and tested to 5x (100) as the paper's 20 -> 100. NoPE because a
# seed-0 pilot of it fits 1-20 and falls off between 40 and 100 (99% at 40, 25% at 60, 0% at 100), so a
# gain has room to show. The bar, set before the runs: the hint adds at least 30 points of exact match
# at 3x (60) on every seed where the unhinted model fits 1-20 (>= 95% at 20).
# Added 2026-12-07, with the same bar, after one seed-0 pilot of each (notes): the hint written as
# element-successor pairs, our other reading of the paper's successor task, and the paper's other
# lever, a length-dependent softmax, as our fixed log-length scaling of the logits.
_SORT_HINT_METHOD = ("lists of 1-20 as in the paper, judged at 60 (3x; the paper's 5x, 100, is also measured), a "
                     "2-layer NoPE model")
lengthgen(
    "sort-hint", "2-layer Transformers (d_model 64, 4 heads, NoPE) trained 2000 steps to sort strings of 1-20 "
    "symbols: without a hint, with the successor hint task on half of the training samples (each element's "
    "successor, or each element then its successor), and with log-length scaled attention logits; evaluated up "
    "to 100, seeds 0-2.",
    ["task.name=sort", "task.max_length=20"], train_max=20, lengths=[10, 20, 30, 40, 60, 80, 100],
    encodings={"nope": ["model.pos=nope"], "nope + hint": ["model.pos=nope", "task.hint=0.5"],
               "nope + pair hint": ["model.pos=nope", "task.hint=0.5", "task.hint_form=pairs"],
               "nope, log-length scaling": ["model.pos=nope", "model.logit_scaling=true"]},
    model=STRINGS, steps=2000, fast_steps=100, headline_length=60,
    claims=[gains("nope + hint", "nope", 60, 0.3, "Training a sorter beside the auxiliary successor task (task "
                  "hinting) lifts its exact match on lists 3x longer than trained on by at least 30 points",
                  HINTING, "length 100 after training on <= 20: <1% -> >92%",
                  method=f"{_SORT_HINT_METHOD}; hint on half of the training samples, written as each element's "
                         "successor", key="hint-gains"),
            gains("nope + pair hint", "nope", 60, 0.3, "Training a sorter beside the successor task written as "
                  "element-successor pairs lifts its exact match on lists 3x longer than trained on by at least 30 "
                  "points", HINTING, "length 100 after training on <= 20: <1% -> >92%",
                  method=f"{_SORT_HINT_METHOD}; hint on half of the training samples, written as element-successor "
                         "pairs (our other reading of the paper's format)", key="pair-hint-gains"),
            gains("nope, log-length scaling", "nope", 60, 0.3, "A length-dependent softmax temperature lifts a "
                  "sorter's exact match on lists 3x longer than trained on by at least 30 points, without a hint",
                  HINTING, "qualitative: a few length-dependent parameters further boost performance on unseen "
                  "lengths", method=f"{_SORT_HINT_METHOD}; a fixed log-length multiplier on the attention logits "
                  "(model.logit_scaling), not the paper's trained length-dependent parameters",
                  key="scaling-gains")],
    untested=[UntestedClaim("Other auxiliary tasks that seem natural help much less than the successor task",
                            HINTING, "runs with other hint tasks")])


def _arithmetic(name: str, description: str, task_overrides: list[str], claim_text: str, untested=()):
    """multi-operand addition and N x 2 multiplication: 2-layer models on 1-5 digits, evaluated to 10."""
    lengthgen(
        name, description, task_overrides, train_max=5, lengths=[3, 5, 7, 10], encodings=["coupling", "nope"],
        model=STRINGS, steps=3000, fast_steps=60, headline_length=10,
        claims=[beats("coupling", 10, 0.5, "nope", 7, 0.1, claim_text, MULTI_LEVEL, "~2-3x length generalization",
                      key="coupling-beats-nope")], untested=untested)


_arithmetic("lengthgen-multi-operand-addition", "Two-level position coupling with a scratchpad on 2-5 operands of 1-5 "
            "digits (2-layer Transformers, 3000 steps), evaluated to 10 digits, seeds 0-2.",
            ["task.name=multi_operand_addition", "task.max_digits=5", "task.max_operands=5"],
            "Multi-level position coupling with a scratchpad lets a model trained on 2-5 operands of 1-5 digits add "
            "operands of 10 digits (2x), where NoPE fails")

# N x 2 multiplication as the paper's code writes it: the N x 1 partial products, then their shifted
# running sums, with three coupled ids (`task.scratchpad=partial_products`). Until 2026-12-06 this recipe
# wrote the running sums alone (our reading of the paper), on which no width-64 model fit 1-5 digits (0%
# at 5 after 3000 steps); that scratchpad trains beside it as our variant. The bars, set before the runs:
# the paper's (Cho et al. 2024b) as in the other arithmetic recipe (coupling >= 50% at 10 digits where
# NoPE, fitted, stays <= 10% beyond 7), and ours: the paper's scratchpad fits 1-5 digits (>= 95% at 5)
# where the running sums do not.
_PAPERS_PRODUCTS = "task.scratchpad=partial_products"
MULTIPLICATIONS = {"coupling": ["model.pos=coupling", _PAPERS_PRODUCTS], "nope": ["model.pos=nope", _PAPERS_PRODUCTS],
                   "coupling, running sums": ["model.pos=coupling"]}


def _multiplication(name: str, description: str, encodings: dict, claims: list[Claim], lengths=(3, 5, 7, 10),
                    headline_length: int = 10, **options):
    """N x 2 multiplication on 1-5 digit N: 2-layer width-64 models, 3000 steps, evaluated at `lengths`."""
    lengthgen(name, description, ["task.name=multiplication", "task.max_digits=5"], train_max=5, lengths=list(lengths),
              encodings=encodings, model=STRINGS, steps=3000, fast_steps=60, headline_length=headline_length,
              claims=claims, **options)


_multiplication(
    "lengthgen-multiplication", "N x 2 multiplication with the paper's scratchpad (the N x 1 partial products, then "
    "their running sums) and tri-level position coupling or NoPE, beside our running-sum scratchpad; 2-layer "
    "Transformers (d_model 64, 4 heads), 3000 steps on 1-5 digit N, evaluated to 10 digits, seeds 0-2.",
    MULTIPLICATIONS, fast_encodings={label: MULTIPLICATIONS[label] for label in ("coupling", "nope")},
    claims=[beats("coupling", 10, 0.5, "nope", 7, 0.1, "Tri-level position coupling with the paper's scratchpad "
                  "(partial products, then running sums) lets a model trained on N x 2 multiplication with N of 1-5 "
                  "digits multiply 10-digit N (2x), where NoPE fails", MULTI_LEVEL, "~2-3x length generalization",
                  method="paper", key="coupling-beats-nope"),
            fits_where("coupling", "coupling, running sums", "The paper's scratchpad (N x 1 partial products first) "
                       "lets a 2-layer width-64 model fit N x 2 multiplication on 1-5 digits in 3000 steps, where a "
                       "scratchpad of the running sums alone does not (our comparison, reported whatever it shows)",
                       MULTI_LEVEL, "none: our comparison", method="the running-sum scratchpad with two-level ids (our "
                       "reading of the paper) beside the paper's, the same model, steps and seeds", key="scratchpad-fits")],
    untested=[UntestedClaim("Relative position embeddings and priming the training set with 10-50 long examples "
                            "extend 5x3 multiplication to 35x3", PRIMING,
                            "a primed training set (a few long examples; `multiplication-priming` primes this task) "
                            "and relative position embeddings"),
              UntestedClaim("Tri-level coupling extends N x M multiplication to 2-3x both operand lengths",
                            MULTI_LEVEL, "b's length varied in training and at test (this recipe varies a's)")])

# The same ids read as a relative bias (`coupling_relative`, our variant): each significance field gives a
# bias of the id difference between tokens that both carry it. At 6-7 digits the paper's table misreads
# a's digits in the partial products (lengthgen-multiplication's notes), the failure the relative reading
# removes on addition. The bar, set before its runs, is the paper's claim's: >= 50% exact match at 10
# digits (2x) on every seed. The `coupling` arm is lengthgen-multiplication's (same runs), for the figure.
RELATIVE_MULTIPLICATIONS = {"coupling_relative": ["model.pos=coupling_relative", _PAPERS_PRODUCTS],
                            "coupling": MULTIPLICATIONS["coupling"]}
_multiplication(
    "multiplication-coupling-relative", "N x 2 multiplication with the paper's scratchpad, its three coupled ids read "
    "as a relative bias (`coupling_relative`, our variant) or by the paper's table; 2-layer Transformers (d_model 64, "
    "4 heads), 3000 steps on 1-5 digit N, evaluated to 10 digits, seeds 0-2.",
    RELATIVE_MULTIPLICATIONS,
    claims=[reaches("coupling_relative", 10, 0.5, "Coupled ids read as a relative bias (each significance field "
                    "between tokens that carry it) let a model trained on N x 2 multiplication with N of 1-5 digits "
                    "multiply 10-digit N (2x) with the paper's scratchpad", MULTI_LEVEL,
                    "~2-3x length generalization (with the paper's table)",
                    method="coupled ids as a relative bias (`coupling_relative`), not the paper's learned table",
                    key="coupling-relative")])


# The multi-level ablation (Cho et al. 2024b): the multi-operand recipe above with its operand level
# kept or dropped from the coupled ids (`task.levels=1`: significance only). The bar, set before the
# runs: multi-level ids add at least 30 points of exact match at 2x the training length (10 digits)
# over single-level ids, on every seed where the single-level model fits 1-5 digits (>= 95% at 5).
# Two experiments, one per reading of the ids, because the two claims share no arm: the paper's learned
# table (`coupling`) and our relative bias (`coupling_relative`, a run ~2x as long: its bias is a
# gather over every query-key pair), so each runs and re-runs on its own; as one they took 42 minutes.
# The paper's arms train 5000 steps, not the multi-operand recipe's 3000: at 3000 no single-level
# model fit 1-5 digits (85-90% at 5), so its baseline could not tell (notes/multi-level-coupling.md).
_LEVELS_TASK = ["task.name=multi_operand_addition", "task.max_digits=5", "task.max_operands=5"]
_LEVELS_METHOD = "2-5 operands of 1-5 digits with a running-sum scratchpad"


def _level_ablation(name: str, pos: str, steps: int, description: str, claim_text: str, method: str, key: str,
                    untested=(), task=_LEVELS_TASK, more_claims=(), model=tuple(STRINGS)):
    """The multi-operand task with the level kept or dropped from `pos`'s coupled ids, judged at 10 digits."""
    arms = {f"{levels} {pos}": [f"model.pos={pos}"] + (["task.levels=1"] if levels == "single-level" else [])
            for levels in ("multi-level", "single-level")}
    lengthgen(
        name, description, task, train_max=5, lengths=[3, 5, 7, 10], encodings=arms, model=list(model),
        steps=steps, fast_steps=60, headline_length=10,
        claims=[gains(f"multi-level {pos}", f"single-level {pos}", 10, 0.3, claim_text, MULTI_LEVEL,
                      "~2-3x length generalization with multi-level coupling (the ablation's numbers are not quoted "
                      "here)", method=method, key=key), *more_claims],
        untested=untested)


# Rows of 2-5 operands of 1-5 digits run from ~10 to 65 tokens. At 5000 steps the recipe took 32.5 minutes
# on 2 cores; trained in 4 length buckets (the same loss, a quarter of the batch each, trimmed of padding)
# a step is ~30% shorter (benchmarks/length_buckets.py).
_level_ablation(
    "multi-level-coupling", "coupling", 5000,
    "Multi-operand addition (2-5 operands of 1-5 digits, running-sum scratchpad) with two-level coupled ids "
    "(significance and operand) or single-level ones (significance only), read by the paper's learned table "
    "(`coupling`); 2-layer Transformers (d_model 64, 4 heads), 5000 steps (each batch in 4 length buckets), "
    "evaluated to 10 digits, seeds 0-2. "
    "`multi-level-coupling-relative` is the same ablation under a relative reading of the ids.",
    "Multi-level position coupling (significance and operand ids) lifts multi-operand addition's exact match at 2x "
    "the trained operand length by at least 30 points over single-level coupling (significance ids only)",
    f"{_LEVELS_METHOD}, judged at 10 digits (2x); a 2-layer d_model 64 model", "multi-beats-single",
    untested=[UntestedClaim("Multi-level coupling generalizes in operand count too (trained on up to 10 operands, "
                            "tested on up to 30)", MULTI_LEVEL, "test sets with more operands than trained on")],
    model=(*STRINGS, "train.length_buckets=4"))

_level_ablation(
    "multi-level-coupling-relative", "coupling_relative", 3000,
    "Multi-operand addition (2-5 operands of 1-5 digits, running-sum scratchpad) with two-level or single-level "
    "coupled ids read as a relative bias (`coupling_relative`, our variant, not the paper's table); 2-layer "
    "Transformers (d_model 64, 4 heads), 3000 steps, evaluated to 10 digits, seeds 0-2.",
    "Multi-level coupled ids read as a relative bias lift multi-operand addition's exact match at 2x the trained "
    "operand length by at least 30 points over single-level ones",
    f"coupled ids as a relative bias (`coupling_relative`), not the paper's learned table; {_LEVELS_METHOD}, judged "
    "at 10 digits", "multi-beats-single-relative")

# The same ablation on the paper's own multi-operand data (Cho et al.'s code, `task.scratchpad=padded`):
# every operand zero-padded to the sum's width, a zero first sum, half the training samples with operands
# of one length (`task.equal_lengths=0.5`). Where the running-sum recipes above break, at 7 digits, the
# models close each sum a digit early: no operand digit carries a sum's top significance. Padding gives
# it one. The ablation's rule and bar are the recipes' above; the multi-level arm is also judged by the
# paper's headline claim, with the other arithmetic recipes' bar (>= 50% at 2x). Both set before the runs.
_PAPERS_DATA = [*_LEVELS_TASK, "task.scratchpad=padded", "task.equal_lengths=0.5"]
_level_ablation(
    "multi-level-coupling-padded", "coupling", 3000,
    "Multi-operand addition as the paper's code writes it (2-5 operands of 1-5 digits, zero-padded to the sum's "
    "width, running sums from a zero sum, half the samples with operands of one length), with two-level or "
    "single-level coupled ids read by the paper's learned table (`coupling`); 2-layer Transformers (d_model 64, "
    "4 heads), 3000 steps, evaluated to 10 digits, seeds 0-2.",
    "With the paper's multi-operand data, multi-level position coupling (significance and operand ids) lifts exact "
    "match at 2x the trained operand length by at least 30 points over single-level coupling (significance ids "
    "only)", "paper", "multi-beats-single-padded", task=_PAPERS_DATA,
    more_claims=[reaches("multi-level coupling", 10, 0.5, "Multi-level position coupling with the paper's scratchpad "
                         "lets a model trained on 2-5 operands of 1-5 digits add operands of 10 digits (2x)",
                         MULTI_LEVEL, "~2-3x length generalization", key="multi-level-reaches-2x")])


ROBUSTNESS = ("2402.09371",)  # Zhou et al. 2024, length generalization but not robustly
FORMATS = {f"{pos} {form}": [f"model.pos={pos}", f"task.reverse_answer={'true' if form == 'reversed' else 'false'}"]
           for pos in ("coupling_relative", "abacus") for form in ("reversed", "plain")}


def _every_seed(result):
    from ..figures.lengthgen import every_seed_curves
    return drawn_with(every_seed_curves)(result)


# The bars, set before the runs: the reversed answer adds at least 30 points at 2x the training
# length over the plain one (each seed where the plain model fits 1-10); "not robust" = each of the
# five seeds of one recipe lies at least 20 points of exact match at 2x from another seed.
lengthgen(
    "addition-format", "1-layer Transformers (d_model 64, 4 heads) trained 3000 steps on 1-10 digit addition with "
    "the answer reversed (least significant digit first) or plain, under coupling_relative and abacus position ids, "
    "evaluated up to 30 digits, seeds 0-4; every seed drawn.",
    ["task.name=addition", "task.max_digits=10"], train_max=10, lengths=[5, 10, 15, 20, 25, 30],
    encodings=FORMATS, model=SMALL, steps=3000, fast_steps=150, headline_length=20, seeds=(0, 1, 2, 3, 4),
    fast_encodings={label: FORMATS[label] for label in ("coupling_relative reversed", "coupling_relative plain")},
    figure=_every_seed,
    claims=[
        gains("coupling_relative reversed", "coupling_relative plain", 20, 0.3, "Reversing the answer (least "
              "significant digit first) lifts addition's exact match at 2x the training length by at least 30 "
              "points over the plain answer (coupled ids as a relative bias)", ROBUSTNESS,
              "qualitative: the reversed format is one of the keys to length generalization",
              method="coupling_relative ids instead of the paper's FIRE + randomized positions + index hints; "
                     "1-10 digits, judged at 20", key="reversed-beats-plain-coupling"),
        gains("abacus reversed", "abacus plain", 20, 0.3, "Reversing the answer lifts addition's exact match at 2x "
              "the training length by at least 30 points over the plain answer (abacus ids)", ROBUSTNESS,
              "qualitative: the reversed format is one of the keys to length generalization",
              method="abacus ids instead of the paper's FIRE + randomized positions + index hints; 1-10 digits, "
                     "judged at 20", key="reversed-beats-plain-abacus"),
        spread("coupling_relative reversed", 20, 0.2, "Length generalization is not robust: the same recipe's seeds "
               "differ widely at 2x the training length (coupling_relative, reversed)", ROBUSTNESS,
               "large variance across random seeds (weight init and data order)",
               method="coupling_relative ids, reversed answers, 5 seeds", key="seeds-spread-coupling"),
        spread("abacus reversed", 20, 0.2, "Length generalization is not robust: the same recipe's seeds differ "
               "widely at 2x the training length (abacus, reversed)", ROBUSTNESS,
               "large variance across random seeds (weight init and data order)",
               method="abacus ids, reversed answers, 5 seeds", key="seeds-spread-abacus")],
    untested=[UntestedClaim("FIRE with randomized positions, reversed answers and index hints generalizes addition "
                            "to 2.5x the training length (100 digits from 40)", ROBUSTNESS,
                            "index hints in the addition task and training on 1-40 digits")])


# Train-set priming (Jelassi et al. 2023) on this task's N x 2 multiplication: the same model trained on
# 1-5 digit N with no, 10 or 50 fixed examples of 15-digit N (3x) mixed in. A primed example is drawn as
# often as if the K examples joined a fixed training set of 2,500 (rate K / 2,500), so 50 examples are
# 5x as frequent as 10, as in a training set they are added to. The bar, set before the runs: priming adds
# at least 30 points of exact match at the primed length 15 over the unprimed model, which must first fit
# 1-5 digits (>= 95% at 5). Since 2026-12-06 the task is written with Cho et al.'s scratchpad (partial
# products first), which a width-64 model fits in 3000 steps; on the running sums alone the recipe needed
# width 128 and 5000 steps (46 minutes) and fit one seed in three (notes/multiplication-priming.md).
PRIMED_DIGITS, PRIMING_POOL = 15, 2500


def primings(pos: str) -> dict[str, list[str]]:
    """The three arms on the paper's scratchpad with `pos` reading its ids: no, 10 or 50 primed examples."""
    return {"unprimed": [f"model.pos={pos}", _PAPERS_PRODUCTS]} | {
        f"{count} primed": [f"model.pos={pos}", _PAPERS_PRODUCTS, f"task.priming={count}",
                            f"task.priming_digits={PRIMED_DIGITS}", f"task.priming_rate={count / PRIMING_POOL}"]
        for count in (10, 50)}


def _priming(name: str, pos: str, description: str, method: str, untested=()):
    """Train-set priming at 15 digits on N x 2 multiplication (1-5 digits, evaluated to 20), the rule above,
    `pos` reading the ids."""
    arms = primings(pos)
    _multiplication(
        name, description, arms, lengths=(3, 5, 7, 10, 15, 20), headline_length=PRIMED_DIGITS,
        fast_encodings={label: arms[label] for label in ("unprimed", "50 primed")},
        claims=[gains(f"{count} primed", "unprimed", PRIMED_DIGITS, 0.3, f"Priming the training set with {count} "
                      "long examples (N of 15 digits) lifts N x 2 multiplication's exact match at 15 digits (3x the "
                      "trained 5) by at least 30 points over the same model trained without them", PRIMING,
                      "5x3 -> 35x3 multiplication with 10-50 primed examples", method=method,
                      key=f"priming-{count}-gains") for count in (10, 50)],
        untested=untested)


_PRIMING_SETTING = ("trained on 1-5 digits, primed with 15-digit N (3x; the paper's 7x is 35), at the rate of K "
                    "examples in a training set of 2,500")
_priming(
    "multiplication-priming", "coupling", "N x 2 multiplication with the paper's scratchpad (partial products, then "
    "running sums) and tri-level position coupling (2-layer Transformers, d_model 64, 4 heads) trained 3000 steps on "
    "1-5 digit N, with 0, 10 or 50 fixed 15-digit examples primed into the training set, evaluated to 20 digits, "
    "seeds 0-2.",
    "N x 2 multiplication with Cho et al.'s scratchpad and tri-level position coupling (not relative embeddings on "
    f"N x 3 without one), {_PRIMING_SETTING}",
    untested=[UntestedClaim("Relative position embeddings and 10-50 primed long examples extend 5x3 multiplication "
                            "to 35x3", PRIMING, "N x 3 multiplication without a scratchpad, relative position "
                            "embeddings and evaluation at 35 digits"),
              UntestedClaim("The number of primed examples needed grows as the logarithm of the training set size",
                            PRIMING, "fixed training sets of several sizes")])

# The same priming with the ids read as a relative bias (`coupling_relative`): Jelassi et al. primed models
# with relative position embeddings, and read so the unprimed model already reaches 2x (96-98% at 10,
# 4-18% at 15: multiplication-coupling-relative). Everything else and the rule are multiplication-priming's,
# set before these runs.
_priming(
    "multiplication-priming-relative", "coupling_relative", "multiplication-priming with the coupled ids read as a "
    "relative bias (`coupling_relative`, our variant): N x 2 multiplication with the paper's scratchpad, 2-layer "
    "Transformers (d_model 64, 4 heads) trained 3000 steps on 1-5 digit N, with 0, 10 or 50 fixed 15-digit examples "
    "primed into the training set, evaluated to 20 digits, seeds 0-2.",
    "N x 2 multiplication with Cho et al.'s scratchpad, its coupled ids read as a relative bias (`coupling_relative`, "
    f"our stand-in for the paper's relative position embeddings), {_PRIMING_SETTING}")
