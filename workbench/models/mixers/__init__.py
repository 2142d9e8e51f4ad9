"""Sequence mixers, chosen by name from MIXERS. Importing this package registers every mixer."""
from .base import MIXERS, Mixer, MixerContext, register_mixer  # noqa: F401
from . import attention, h3, hyena, linear_attention, mamba, rnn, s4d  # noqa: F401  (registration)
from .implicit_attention import implicit_attention  # noqa: F401
