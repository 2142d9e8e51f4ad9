"""Where Transformers beat state-space and recurrent models, and why: the sequence-mixer experiments.

- `mimetic-recall`: Mamba with the reference vs the mimetic initialization on copy and associative
  recall; accuracy vs step and the implicit attention maps at init and after training.
- `mqar-vs-width`: MQAR per-query accuracy vs width and number of key-value pairs for attention,
  Mamba, Based linear attention and H3 (Zoology), beside each model's recurrent state size.
- `mqar-default-init`: attention on the same task from Zoology's own (default) init, on that budget and
  longer: how much later it learns recall than from fan-in init.
- `copy-vs-length`: copy accuracy vs string length, Transformer vs Mamba at a fixed state size.
- `copy-state-size`: Mamba's copying against its state size, trained on 1-8 symbols and tested to 4x:
  whether it stops where a string outgrows the state, or long before.
- `markov-icl`: excess loss over the Bayes-optimal Laplace estimator vs context position on random
  Markov chains, for a one-layer Mamba, a Transformer and an LSTM.
- `markov-conv-window`: the same Mamba on order-2 chains with convolution windows 1-4: whether a window
  of k + 1 is what it needs.
- `hybrids`: pure attention, pure Mamba and 1-in-2 hybrids on MQAR (Zoology's variant) and copying:
  how much of Mamba's recall gap one attention layer closes, and whether its place matters.

One module each. Every recipe has a fast mode (a tiny budget, the same code path) for tests and
notebooks. Importing registers them, in this order.
"""
# in the order `workbench experiment list` and REPRODUCTIONS.md show them
from . import mimetic_recall  # noqa: F401  (registration)
from . import mqar_vs_width  # noqa: F401
from . import mqar_default_init  # noqa: F401
from . import copy_vs_length  # noqa: F401
from . import copy_state  # noqa: F401
from . import markov_icl  # noqa: F401
from . import markov_conv  # noqa: F401
from . import hybrids  # noqa: F401
