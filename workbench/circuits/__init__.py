"""Causal tools for every mixer: interventions at hook points, activation patching sweeps, head
detectors, the logit lens and direct logit attribution. Each lives in its own module; import them
from there (workbench.circuits.patching, ...), so that importing the package loads nothing heavy.
interventions: zero, mean_ablate, replace or patch any hook point (states too) with run_with_interventions."""
