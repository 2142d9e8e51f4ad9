"""In-context learning of function classes: regression and Boolean functions in context."""
from . import boolean, regression, sparse  # noqa: F401  (registration: icl-boolean, icl-regression, icl-sparse-...)
from . import function_classes, regression_shifts  # noqa: F401  (icl-function-classes, icl-regression-shifts)
# registration: icl-depth-and-looping, icl-looped-vs-stacked, icl-preconditioned-gd
from . import depth, looped_gpt2, preconditioner  # noqa: F401
