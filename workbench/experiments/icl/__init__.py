"""In-context learning of function classes: regression and Boolean functions in context."""
from . import boolean, regression, sparse  # noqa: F401  (registration: icl-boolean, icl-regression, icl-sparse-...)
from . import depth, preconditioner  # noqa: F401  (registration: icl-depth-and-looping, icl-preconditioned-gd)
