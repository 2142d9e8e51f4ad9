"""Probes: what we measure inside a model. See registry.py."""
from .registry import PROBES, Probe, register_probe  # noqa: F401
