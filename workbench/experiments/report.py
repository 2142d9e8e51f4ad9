"""REPRODUCTIONS.md, rendered from the shipped result files in data/results/ alone (never from an
earlier REPRODUCTIONS.md), and `--check`, which tests that every shipped result still describes what
the code computes.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..config import RunConfig
from .base import EXPERIMENTS, Experiment, load_result, save_result
from .references import REFERENCES, cite
from .results import ExperimentResult, shipped_root
from .verdicts import FITS, MIN_SEEDS, NOT_TESTED

HEADER = f"""# Reproductions at CPU scale

Rendered by `workbench experiment report` from the result files in `data/results/` alone, one per
named experiment, written by `workbench experiment run NAME`. Deleting this file and running the command
again gives the same bytes. Each result file holds the runs' configs, the per-seed numbers, each
claim's verdict, the training and wall time, the versions, the machine, the git commit, and a
*canary*: the exact metrics of the first steps of its first run. `workbench experiment report --check`
recomputes every canary and exits 1 if a row describes arithmetic the code no longer does (`make
test` runs it).

**How to read a row.** A row tests one stated claim with the runs of one experiment. Where we changed
the paper's method, the paper's method as published has its own row. The verdict is one of
*reproduced* (the rule holds on every seed that can tell), *partly reproduced* (on some),
*not reproduced* (on none), *inconclusive* (fewer than {MIN_SEEDS} seeds can tell, e.g. a baseline that
does not fit its training lengths, >= {FITS:.0%} exact match, cannot be beaten) and *not tested*. It is
decided by the rule printed beside it, in code written before the runs
(`workbench/experiments/`); the numbers each seed gave are always shown. Runtime: the runs' own
training time plus the analysis on one thread per run (one core's work); beside it, the wall time of
the call that trained them side by side.
"""


# Phenomena of the source papers that no named experiment measures yet, so the table is honest about its
# coverage: (phenomenon, references, how to explore it by hand today).
NOT_YET_EXPERIMENTS = [
    ("Abacus embeddings", ("2405.17399",), "model.pos=abacus (notebook 02 trains it)"),
    ("FIRE relative positions", ("2310.04418",), "model.pos=fire (notebook 02 trains it)"),
]


def _cells(*values) -> str:
    """One markdown table row; a '|' inside a cell is escaped so it cannot split the cell."""
    return "| " + " | ".join(str(v).replace("|", "\\|").replace("\n", " ") for v in values) + " |"


def runtime_cell(result: ExperimentResult) -> str:
    """'1234 s' of one core's work, and the wall time on N cores when it is known."""
    cell = f"{result.runtime_s:.0f} s"
    if result.wall_s is not None and result.workers > 1:
        cell += f" ({result.wall_s:.0f} s wall, {result.workers} runs at a time)"
    return cell


MARKS = {True: "holds", False: "fails", None: "cannot tell"}


def seed_lines(outcome) -> list[str]:
    """['seed 0 holds: 100% at 30', 'seed 1 fails: 12% at 30']."""
    return [f"seed {seed}" + (f" {MARKS[outcome.passed[seed]]}" if seed in outcome.passed else "") + f": {text}"
            for seed, text in outcome.per_seed.items()]


def outcome_lines(outcomes: dict) -> list[str]:
    """Each claim's verdict and reason, then one indented line per seed: what `experiment run` and the
    notebooks print."""
    lines = []
    for key, outcome in outcomes.items():
        lines.append(f"{key}: {outcome.verdict} ({outcome.reason})")
        lines += [f"  {line}" for line in seed_lines(outcome)]
    return lines


def rules_agree(experiment: Experiment, result: ExperimentResult) -> bool:
    """Whether the verdict rules, run again on the stored summary, decide what the result says."""
    return experiment.decide(result.summary) == result.outcomes


def _per_seed(outcome) -> str:
    return "; ".join(seed_lines(outcome)) or "—"


def _method(method: str) -> str:
    return "as published" if method == "paper" else f"ours: {method}"


def claims_table(experiment: Experiment, result: ExperimentResult | None) -> pd.DataFrame:
    """One row per claim: what it says, whose method, the rule, the verdict and each seed's numbers (the
    Experiments page and notebooks show it beside the figure)."""
    rows = []
    for claim in experiment.claims:
        outcome = result.outcomes.get(claim.key) if result else None
        rows.append({"claim": claim.text, "paper": cite(claim.references), "method": _method(claim.method),
                     "verdict": outcome.verdict if outcome else NOT_TESTED,
                     "why": outcome.reason if outcome else "no result", "per seed": _per_seed(outcome) if outcome else "—",
                     "rule": claim.rule})
    return pd.DataFrame(rows)


def _commit_text(provenance: dict) -> str:
    return ((provenance.get("commit") or "unknown")[:12]
            + (" with uncommitted changes" if provenance.get("uncommitted_changes") else ""))


def provenance_line(result: ExperimentResult) -> str:
    """One line on where a shipped result comes from."""
    p = result.provenance
    return (f"commit {_commit_text(p)}, {p.get('created', '?')}, torch {p.get('machine', {}).get('torch', '?')}, "
            f"seeds {', '.join(map(str, p.get('seeds', [])))}, {runtime_cell(result)}")


def _rows(experiment: Experiment, result: ExperimentResult | None) -> list[str]:
    rows = []
    for claim in experiment.claims:
        outcome = result.outcomes.get(claim.key) if result else None
        verdict = outcome.verdict if outcome else NOT_TESTED
        seeds = _per_seed(outcome) if outcome else f"no shipped result (`workbench experiment run {experiment.name}`)"
        rows.append(_cells(f"`{experiment.name}`", claim.text, cite(claim.references), claim.paper_number,
                           _method(claim.method), f"**{verdict}**", seeds, runtime_cell(result) if result else "—"))
    return rows


def claim_lines(experiment: Experiment, result: ExperimentResult | None) -> list[str]:
    """Each claim as a markdown list item: what it says, the rule, the verdict and every seed's numbers;
    then the papers' claims the runs do not test. REPRODUCTIONS.md and the Experiments page print it."""
    lines = []
    for claim in experiment.claims:
        outcome = result.outcomes.get(claim.key) if result else None
        lines.append(f"- **Claim** ({_method(claim.method)}; {cite(claim.references)}): {claim.text}")
        lines.append(f"  - Rule: {claim.rule}")
        if outcome:
            lines.append(f"  - Verdict: **{outcome.verdict}**: {outcome.reason}" + (", per seed:" if outcome.per_seed else ""))
            lines += [f"    - {line}" for line in seed_lines(outcome)]
        else:
            lines.append(f"  - Verdict: **{NOT_TESTED}**: no shipped result")
    for claim in experiment.untested:
        lines.append(f"- **Not tested** ({cite(claim.references)}): {claim.text.rstrip('.')}. These runs would need: "
                     f"{claim.needs.rstrip('.')}.")
    return lines


def _details(experiment: Experiment, result: ExperimentResult | None) -> str:
    lines = [f"\n## `{experiment.name}`\n", experiment.description, "", *claim_lines(experiment, result)]
    if result:
        lines += ["", f"Measured: {result.headline}", "", _provenance(result)]
    notes = experiment.notes.strip()
    if notes:
        lines += ["", "### Notes", "", notes]
    return "\n".join(lines) + "\n"


def _provenance(result: ExperimentResult) -> str:
    p, canary = result.provenance, result.canary or {}
    machine = p.get("machine", {})
    runs = ", ".join(f"`{run['run_id']}` ({', '.join(f'{k} {v}' for k, v in run.get('labels', {}).items())})"
                     for run in result.runs)
    return "\n".join([
        f"Provenance (`data/results/{result.name}.json`): commit {_commit_text(p)}, made {p.get('created', '?')}; "
        f"torch {machine.get('torch', '?')}, Python {machine.get('python', '?')}, {machine.get('cpu', '?')} "
        f"({p.get('cores', '?')} cores); training {p.get('cpu_s', '?')} s of one core's work, analysis "
        f"{p.get('analysis_s', '?')} s, {runtime_cell(result)} in all.",
        (f"Canary: {canary.get('what', 'numbers the measurement computes')}." if canary.get("kind") == "measurement"
         else f"Canary: the first {canary.get('steps', '?')} steps of `{canary.get('run_id', '?')}`."), "",
        f"Runs: {runs or 'none (a measurement: it trains nothing)'}"])


def _references(experiments: list[Experiment]) -> list[str]:
    keys = list(dict.fromkeys([key for experiment in experiments for key in experiment.references]
                              + [key for _, keys, _ in NOT_YET_EXPERIMENTS for key in keys]))
    return ["", "## References", ""] + [f"- **{REFERENCES[key].short}**: {REFERENCES[key].full}" for key in keys]


def render() -> str:
    experiments = list(EXPERIMENTS.values())
    found = {e.name: load_result(e.name) for e in experiments}
    lines = [HEADER, "| experiment | claim tested | paper | paper's number | method | verdict | per seed | runtime |",
             "|---|---|---|---|---|---|---|---|"]
    for experiment in experiments:
        lines += _rows(experiment, found[experiment.name])
    untested = [(e, claim) for e in experiments for claim in e.untested]
    if untested:
        lines += ["", "## Claims these experiments do not test", "",
                  "Papers the recipes draw on also claim the following; no row above tests them.", "",
                  "| experiment | claim | paper | what a run would need |", "|---|---|---|---|"]
        lines += [_cells(f"`{e.name}`", claim.text, cite(claim.references), claim.needs) for e, claim in untested]
    lines += ["", "## Phenomena without a named experiment yet", "",
              "| phenomenon | paper | how to explore it today |", "|---|---|---|"]
    lines += [_cells(text, cite(keys), how) for text, keys, how in NOT_YET_EXPERIMENTS]
    lines += ["", "# Per experiment"]
    text = "\n".join(lines) + "\n" + "".join(_details(e, found[e.name]) for e in experiments)
    return text + "\n".join(_references(experiments)) + "\n"


def write_report(out: str | Path = "REPRODUCTIONS.md") -> Path:
    """Render REPRODUCTIONS.md from data/results/ alone; whatever `out` held before is not read."""
    path = Path(out)
    path.write_text(render())
    return path


# --- the check -------------------------------------------------------------------------------------
@dataclass
class Check:
    name: str
    ok: bool
    lines: list[str]
    fresh: dict | None = None  # the training canary recomputed here (record_machine keeps it)


def check_result(experiment: Experiment, result: ExperimentResult) -> Check:
    """Does the shipped result still describe the code? Its runs must be the recipe's runs, its verdicts
    what the rules decide from its summary, and its canary what training computes now."""
    problems, facts = [], []
    recipe = [variant.config.run_id for variant in experiment.variants(False)]
    # An adaptive recipe's later rounds follow from its runs: its first round must lead the result.
    stored = result.run_ids[:len(recipe)] if experiment.next_round else result.run_ids
    if recipe != stored:
        problems.append(f"the recipe's runs changed ({len(set(recipe) - set(result.run_ids))} not in the result): "
                        f"rerun `workbench experiment run {experiment.name}`")
    if not rules_agree(experiment, result):
        problems.append("the verdict rules now decide differently from the stored summary")
    else:
        facts.append("verdicts as the rules decide")
    fresh = None
    if not result.canary:
        problems.append("no canary")
    else:
        same, detail, fresh = _check_canary(experiment, result)
        (facts if same else problems).append(f"canary {detail}" if same else f"canary: {detail}")
    return Check(experiment.name, not problems, problems or facts, fresh)


def _check_canary(experiment: Experiment, result: ExperimentResult) -> tuple[bool, str, dict | None]:
    """Recompute the canary: a measurement's own numbers, or the first steps of the first run. Compared
    with the copy made on this machine where there is one (bit for bit), else with the result's own.
    Also returns the recomputed training canary (None for a measurement)."""
    from .canary import compare, compare_measurement, compute_canary, machine

    if result.canary.get("kind") == "measurement":
        if experiment.canary is None:
            return False, "the result is a measurement's, the experiment now trains runs", None
        return (*compare_measurement(result.canary, {**experiment.canary(), "machine": machine()}), None)
    config = next(run["config"] for run in result.runs if run["run_id"] == result.canary["run_id"])
    fresh = compute_canary(RunConfig.from_dict(config), result.canary["steps"])
    recorded = next((c for c in result.canaries if c.get("machine") == fresh["machine"]), result.canary)
    same, detail = compare(recorded, fresh)
    if recorded is not result.canary:
        detail += f" (this machine's copy; the result was made on {result.canary['machine']['cpu']})"
    return same, detail, fresh


def record_machine(checks: list[Check], progress=print) -> int:
    """Add this machine's canary to every shipped result that passed its check and has none from here yet,
    so later checks on this machine are bit for bit. Only sound at a commit whose canaries matched bit
    for bit on the machine that recorded them (nothing in the arithmetic changed since)."""
    added = 0
    for check in checks:
        if not check.ok or check.fresh is None:
            continue
        result = load_result(check.name)
        if check.fresh["machine"] in [c.get("machine") for c in result.canaries]:
            continue
        result.canaries_elsewhere.append(check.fresh)
        save_result(result)
        progress(f"recorded {check.name}'s canary on {check.fresh['machine']['cpu']}")
        added += 1
    return added


def check_all(progress=print) -> list[Check]:
    checks = []
    for experiment in EXPERIMENTS.values():
        result = load_result(experiment.name)
        if result is None:
            progress(f"-- {experiment.name}: no shipped result (its rows read 'not tested')")
            continue
        check = check_result(experiment, result)
        progress(f"{'ok' if check.ok else 'STALE'} {experiment.name}: " + "; ".join(check.lines))
        checks.append(check)
    stray = sorted(p.stem for p in shipped_root().glob("*.json") if p.stem not in EXPERIMENTS)
    for name in stray:
        progress(f"STALE {name}: a result file for no registered experiment")
        checks.append(Check(name, False, ["no such experiment"]))
    return checks

