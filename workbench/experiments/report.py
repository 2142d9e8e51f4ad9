"""REPRODUCTIONS.md: for each named experiment, the paper's claim and number beside what the
workbench reproduces at CPU scale (median and spread over seeds), its config and runtime."""
from __future__ import annotations

import json
from pathlib import Path

from .base import EXPERIMENTS, load_result

HEADER = """# Reproductions at CPU scale

Written by `workbench experiment report` from the cached results of `workbench experiment run NAME`.
Each row sets a paper's claim beside what the workbench measured on a 2-core CPU in minutes. Where the
small-scale result disagrees with the paper, the verdict says so; thresholds were fixed from
RESEARCH.md before the runs, never tuned to agree.
"""


def _verdict(summary: dict) -> str:
    if "target_met" in summary:
        return "reproduced" if summary["target_met"] else "NOT reproduced at this scale"
    return summary.get("verdict", "see summary")


def write_report(out: str | Path = "REPRODUCTIONS.md") -> Path:
    lines = [HEADER, "| experiment | source | paper's claim | paper's number | CPU-scale target | workbench result | verdict | runtime |",
             "|---|---|---|---|---|---|---|---|"]
    details = []
    for name, experiment in EXPERIMENTS.items():
        result = load_result(name) or load_result(name, fast=True)
        if result is None:
            lines.append(f"| `{name}` | {experiment.source} | {experiment.claim} | {experiment.paper_number} | "
                         f"{experiment.target} | not run yet (`workbench experiment run {name}`) | — | — |")
            continue
        headline = result.summary.get("headline", "")
        mode = " (fast mode)" if result.fast else ""
        lines.append(f"| `{name}` | {experiment.source} | {experiment.claim} | {experiment.paper_number} | "
                     f"{experiment.target} | {headline}{mode} | {_verdict(result.summary)} | {result.runtime_s:.0f} s |")
        details.append(f"\n## `{name}`{mode}\n\n{experiment.description}\n\n"
                       f"Runs: {', '.join(result.run_ids)}\n\n```json\n{json.dumps(result.summary, indent=2, sort_keys=True)}\n```\n")
    path = Path(out)
    path.write_text("\n".join(lines) + "\n" + "".join(details))
    return path
