"""REPRODUCTIONS.md: for each named experiment, the paper's claim and number beside what the
workbench reproduces at CPU scale (median and spread over seeds), its config and runtime."""
from __future__ import annotations

import json
import re
from pathlib import Path

from .base import EXPERIMENTS, load_result

HEADER = """# Reproductions at CPU scale

Written by `workbench experiment report` from the cached results of `workbench experiment run NAME`.
Each row sets a paper's claim beside what the workbench measured on a 2-core CPU in minutes. Where the
small-scale result disagrees with the paper, the verdict says so; thresholds were fixed from
RESEARCH.md before the runs, never tuned to agree. The runtime is the runs' own training time plus
the analysis, one thread per run (what one core spends); beside it, the wall time of the call that
trained them with its runs side by side (`workbench experiment run` uses one process per core). On a
machine busy with other work both are upper bounds.
"""


# Phenomena of shared/RESEARCH.md that no named experiment measures yet: listed so the table is
# honest about its coverage (each can be explored by hand with the options named).
NOT_YET_EXPERIMENTS = [
    ("Data format (reversed vs plain answers) and seed variance in addition", "seed 004 #45",
     "task.reverse_answer=false on addition; seed bands on every length curve"),
    ("Abacus embeddings", "McLeish et al. 2024", "model.pos=abacus (notebook 02 trains it)"),
    ("FIRE relative positions", "seed 000 #7, 004 #70", "model.pos=fire (notebook 02 trains it)"),
    ("Attention flattens with length; log-length logit scaling", "seed 004 #129, #161, 002 #113",
     "workbench eval-length RUN --entropy with and without model.logit_scaling=true (notebook 07)"),
    ("Hybrids with a few attention layers", "seed 002 #34", "model.layers=attention,mamba,mamba"),
    ("One-layer Mamba learns in-context Laplace smoothing", "seed 002 #112",
     "task.name=markov_icl with model.mixer=mamba; the task gives the Bayes-optimal loss"),
]


def _cells(*values) -> str:
    """One markdown table row; a '|' inside a cell is escaped so it cannot split the cell."""
    return "| " + " | ".join(str(v).replace("|", "\\|") for v in values) + " |"


def _verdict(summary: dict) -> str:
    if "target_met" in summary:
        verdict = "reproduced" if summary["target_met"] else "NOT reproduced at this scale"
        return verdict + (f" ({summary['verdict_note']})" if summary.get("verdict_note") else "")
    return summary.get("verdict", "see summary")


def runtime_cell(result) -> str:
    """'1234 s' of one core's work, and the wall time on N cores when it is known."""
    cell = f"{result.runtime_s:.0f} s"
    if result.wall_s is not None and result.workers > 1:
        cell += f" ({result.wall_s:.0f} s wall, {result.workers} runs at a time)"
    return cell


def previous_report(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    """The table row and the details section of every experiment in an earlier REPRODUCTIONS.md,
    by name, so experiments whose results are not cached here keep what was measured before."""
    if not path.exists():
        return {}, {}
    text = path.read_text()
    rows = {m.group(1): line for line in text.splitlines()
            if (m := re.match(r"\| `([^`]+)` \|", line)) and "not run yet" not in line}
    details = {}
    for section in re.split(r"\n(?=## )", text):
        m = re.match(r"## `([^`]+)`", section)
        if m:
            details[m.group(1)] = "\n" + section.rstrip("\n") + "\n"
    return rows, details


def write_report(out: str | Path = "REPRODUCTIONS.md") -> Path:
    """Write the report from the cached results; an experiment with no cached result here keeps its
    row and details from the file being replaced (marked as carried over), so rerunning one
    experiment never erases the others' measurements."""
    path = Path(out)
    previous_rows, previous_details = previous_report(path)
    lines = [HEADER, "| experiment | source | paper's claim | paper's number | CPU-scale target | workbench result | verdict | runtime |",
             "|---|---|---|---|---|---|---|---|"]
    details = []
    for name, experiment in EXPERIMENTS.items():
        result = load_result(name) or load_result(name, fast=True)
        if result is None and name in previous_rows:
            lines.append(previous_rows[name])
            if name in previous_details:
                details.append(previous_details[name])
            continue
        if result is None:
            lines.append(_cells(f"`{name}`", experiment.source, experiment.claim, experiment.paper_number,
                                experiment.target, f"not run yet (`workbench experiment run {name}`)", "—", "—"))
            continue
        headline = result.summary.get("headline", "")
        mode = " (fast mode)" if result.fast else ""
        lines.append(_cells(f"`{name}`", experiment.source, experiment.claim, experiment.paper_number,
                            experiment.target, headline + mode, _verdict(result.summary), runtime_cell(result)))
        details.append(f"\n## `{name}`{mode}\n\n{experiment.description}\n\n"
                       f"Runs: {', '.join(result.run_ids)}\n\n```json\n{json.dumps(result.summary, indent=2, sort_keys=True)}\n```\n")
    lines += ["", "## Phenomena without a named experiment yet", "",
              "| phenomenon | source | how to explore it today |", "|---|---|---|"]
    lines += [_cells(*row) for row in NOT_YET_EXPERIMENTS]
    notes = [f"\n### `{name}`\n\n{experiment.notes.strip()}\n" for name, experiment in EXPERIMENTS.items()
             if experiment.notes]
    if notes:
        lines += ["", "## Pilots and diagnostics", "",
                  "What we tried beside the recipes when a result disagreed with the paper, and what it showed."]
        lines += notes
    path.write_text("\n".join(lines) + "\n" + "".join(details))
    return path
