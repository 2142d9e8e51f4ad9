"""Named experiments: `workbench experiment list | run NAME | report`. Importing registers them all."""
from .base import (EXPERIMENTS, Budget, Experiment, ExperimentResult, Variant, budget_for,  # noqa: F401
                   get_experiment, load_result, recipe_budget, register_experiment, run_command,
                   run_experiment)
from . import inside, lengthgen_recipes  # noqa: F401  (registration)
from . import mixers  # noqa: F401  (registration: mimetic-recall, mqar-vs-width, copy-vs-length)
from .report import write_report  # noqa: F401
