"""One verdict vocabulary for every result row, and the rules that decide it from per-seed numbers.

A claim's verdict is decided by code written before its runs: each experiment names the exact claim
its runs test, a rule in words, and a function from the analysed summary to an Outcome. The report
prints what the function returned; `workbench experiment report --check` runs the function again on
the stored summary, so a rule changed after the runs shows up as a mismatch.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

REPRODUCED, PARTLY, NOT_REPRODUCED, INCONCLUSIVE, NOT_TESTED = (
    "reproduced", "partly reproduced", "not reproduced", "inconclusive", "not tested")
VERDICTS = (REPRODUCED, PARTLY, NOT_REPRODUCED, INCONCLUSIVE, NOT_TESTED)

MIN_SEEDS = 3  # a comparative verdict rests on at least this many seeds
FITS = 0.95  # a baseline counts only if it reaches this exact match inside its training lengths


@dataclass(frozen=True)
class Outcome:
    """A claim's verdict, the number each seed gave, and one sentence on why."""

    verdict: str
    per_seed: dict[str, str]  # seed (as text) -> that seed's number(s), e.g. "100% at 30 digits"
    reason: str
    passed: dict[str, bool | None] = field(default_factory=dict)  # seed -> the rule held / failed / cannot tell

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {', '.join(VERDICTS)}")

    def to_dict(self) -> dict:
        return {"verdict": self.verdict, "per_seed": self.per_seed, "reason": self.reason, "passed": self.passed}

    @classmethod
    def from_dict(cls, data: dict) -> "Outcome":
        return cls(data["verdict"], dict(data["per_seed"]), data["reason"], dict(data.get("passed", {})))


@dataclass(frozen=True)
class Claim:
    """One row of REPRODUCTIONS.md: a claim the runs test, and how its verdict is decided.

    method: "paper" when the runs use the method as published, otherwise a few words on our change
    (the paper's method then has its own Claim beside it). decide(summary) must return an Outcome
    whose verdict is "not tested" when the summary lacks what the rule needs (e.g. a fast run)."""

    key: str  # letters, digits and '-', unique in its experiment
    text: str
    references: tuple[str, ...]  # keys of references.REFERENCES
    paper_number: str
    method: str
    rule: str
    decide: Callable[[dict], Outcome]


@dataclass(frozen=True)
class UntestedClaim:
    """A claim from a paper this experiment draws on that its runs do not test, listed so no row is
    read as testing it; `needs` says what a run would have to add."""

    text: str
    references: tuple[str, ...]
    needs: str


def by_seeds(passed: dict, numbers: dict, min_seeds: int = MIN_SEEDS, undecided: str = "") -> Outcome:
    """The shared rule: every seed that can tell passes -> reproduced; some -> partly reproduced;
    none -> not reproduced. Fewer than `min_seeds` seeds that can tell -> inconclusive; no seeds
    at all -> not tested.

    passed: seed -> True / False / None (None: this seed cannot tell, e.g. its baseline did not fit
    the training lengths; `undecided` says why). numbers: seed -> the text shown for that seed."""
    per_seed = {str(seed): numbers[seed] for seed in sorted(numbers)}
    marks = {str(seed): passed[seed] for seed in sorted(passed)}
    if not passed:
        return Outcome(NOT_TESTED, per_seed, "no runs measure this claim")
    told = {seed: ok for seed, ok in passed.items() if ok is not None}
    wins = sum(bool(ok) for ok in told.values())
    if len(told) < min_seeds:
        why = f"{len(told)} of {len(passed)} seed(s) can tell, a verdict needs {min_seeds}"
        why += f" ({undecided})" if undecided and len(told) < len(passed) else ""
        return Outcome(INCONCLUSIVE, per_seed, why, marks)
    verdict = REPRODUCED if wins == len(told) else NOT_REPRODUCED if wins == 0 else PARTLY
    return Outcome(verdict, per_seed, f"holds on {wins} of {len(told)} seeds", marks)


def not_tested(reason: str) -> Outcome:
    return Outcome(NOT_TESTED, {}, reason)


def no_runs(reason: str) -> Callable[[dict], Outcome]:
    """The rule of a claim the recipe trains no runs for (e.g. the paper's method beside our variant): its
    row says "not tested" and why."""
    def decide(summary: dict) -> Outcome:
        return not_tested(reason)

    decide.no_runs = True
    return decide


def percent(value) -> str:
    return "—" if value is None else f"{value:.0%}"
