"""Named experiments: `workbench experiment list | run NAME | report`. Importing registers them all."""
from .base import (EXPERIMENTS, Budget, Experiment, Variant, budget_for, get_experiment,  # noqa: F401
                   load_result, recipe_budget, register_experiment, run_command, run_experiment)
from .results import ExperimentResult  # noqa: F401
from .verdicts import VERDICTS, Claim, Outcome, UntestedClaim  # noqa: F401
from . import inside, lengthgen_recipes, lengthgen_flattening, lengthgen_temperature, lengthgen_budget  # noqa: F401
from . import mixers  # noqa: F401  (registration: mimetic-recall, mqar-vs-width, copy-vs-length)
from . import circuits  # noqa: F401  (registration: induction-heads)
from . import streaming_memory  # noqa: F401  (registration: streaming-entropy-memory)
from . import icl  # noqa: F401  (registration: icl-regression, icl-boolean)
from .report import (check_all, claim_lines, claims_table, provenance_line, record_machine, render,  # noqa: F401
                     write_report)
