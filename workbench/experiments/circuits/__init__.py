"""Experiments on circuits: how a mechanism forms during training and whether it carries the answer."""
from . import induction_heads  # noqa: F401  (registration)
