"""Sequence mixers, chosen by name from MIXERS. Importing this package registers every mixer."""
from .base import MIXERS, Mixer, MixerContext, register_mixer  # noqa: F401
from . import attention  # noqa: F401  (registration)
