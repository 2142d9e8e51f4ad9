"""Experiments that look inside the model: entropy collapse,
lazy neurons, memorization capacity and activation outliers, one module each. Each has a fast mode
(tiny budget, the same code path) for tests and notebooks. Importing registers them, in this order.
"""
from . import entropy_collapse, lazy_neurons, memorization_capacity, outliers  # noqa: F401  (registration)
