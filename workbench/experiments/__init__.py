"""Named experiments: `workbench experiment list | run NAME | report`. Importing registers them all."""
from .base import (EXPERIMENTS, Budget, Experiment, ExperimentResult, Variant, get_experiment,  # noqa: F401
                   load_result, register_experiment, run_experiment)
from . import inside, lengthgen_recipes  # noqa: F401  (registration)
from . import mixers  # noqa: F401  (registration: mimetic-recall, mqar-vs-width, copy-vs-length)
from .report import write_report  # noqa: F401
