"""Models: one decoder stack whose mixers and positional encodings are chosen by name."""
from . import allocator  # noqa: F401  (glibc keeps freed activations: no page faults per forward)
from .hooks import HookedModule, HookPoint  # noqa: F401
from .mixers import MIXERS, Mixer, MixerContext, register_mixer  # noqa: F401
from .positions import POSITIONS, PositionalEncoding  # noqa: F401
from . import positions_relative  # noqa: F401  (registers t5_bias, fire, coupling_relative)
from .transformer import SequenceModel, build_model, model_for_task  # noqa: F401
