"""RunConfig = TaskConfig + ModelConfig + TrainConfig + ProbeConfig.

Configs are typed dataclasses built from YAML/JSON files and dotted `key=value` overrides.
`validate()` names the field, the bad value and the choices. The canonical JSON (sorted keys,
task parameters resolved with their defaults) hashes to the run id, so the same config and
seed are the same run.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError, check
from .typed import build, setting, to_dict

ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu", "topk")
SOFTMAXES = ("standard", "clipped")
SSM_INITS = ("default", "mimetic")
EVAL_STARTS = ("first", "random")  # task.eval_start (tasks/common.py RANDOM_START)
INITS = ("gpt2", "fan_in")
FEATURE_MAPS = ("elu1", "based", "identity")
NORMS = ("layernorm", "rmsnorm", "none")


@dataclass
class TaskConfig:
    name: str = setting("addition", "the synthetic task (`workbench task list`)")
    eval_lengths: list[int] = setting([], "test lengths (comma-separated, in the task's own unit) whose exact "
                                          "match is recorded during training, e.g. 5,10,15")
    random_labels: bool = setting(False, "replace answer targets with fixed random ones: nothing to learn but the "
                                         "training set (memorization studies)")
    params: dict[str, Any] = setting({}, "the task's own parameters (task.max_digits=...)")
    eval_start: str = field(default="first", metadata={
        "help": "where evaluation starts a coupled-id task's position ids: first (the papers' code: the smallest "
                "start, whose ids are the rarest in training) or random (each sample's start drawn as training "
                "draws it)", "choices": EVAL_STARTS})


@dataclass
class ModelConfig:
    mixer: str = setting("attention", "the sequence mixer of every layer")
    layers: str = setting("", "per-layer mixers for a hybrid, e.g. attention,mamba,mamba (replaces mixer and n_layers)")
    n_layers: int = setting(2, "number of blocks (mixer + MLP)")
    d_model: int = setting(64, "width of the residual stream")
    n_heads: int = setting(2, "attention heads; must divide d_model")
    mlp_ratio: float = setting(4.0, "MLP hidden width as a multiple of d_model; 0: no MLP and no norm before it, "
                                    "so the block is x + mixer(norm(x)) alone, as Mamba's is (Gu and Dao 2023)")
    activation: str = setting("relu", "MLP activation; topk keeps the k largest activations per token")
    topk: int = setting(0, "with activation=topk: how many MLP activations per token are kept")
    pos: str = setting("learned", "positional encoding; coupling and abacus give digits of one significance one id")
    max_positions: int = setting(1024, "size of absolute and coupled position tables (the largest id + 1)")
    logit_scaling: bool = setting(False, "multiply query i's attention logits by log(i + 2) / log 2, so attention "
                                          "stays sharp as the context grows")
    scalable_softmax: bool = setting(False, "Scalable-Softmax (Nakanishi 2025): multiply query i's attention logits "
                                             "by s log(i + 1), the log of the number of keys it sees, with s learned "
                                             "per head (starting at 1 / log 2); causal attention, without "
                                             "logit_scaling")
    softmax: str = setting("standard", "attention softmax; clipped lets a head attend to nothing "
                                       "(Bondarenko et al. 2023)")
    gated_attention: bool = setting(False, "a learned gate on each head's output (a head can switch itself off)")
    bidirectional: bool = setting(False, "attention: every query sees every key, as BERT's (Devlin et al. 2019) for "
                                         "masked-language modelling, instead of only the keys before it; padding is "
                                         "hidden. Attention layers only, with an encoding without a logit bias")
    sigma_reparam: bool = setting(False, "sigmaReparam: weights divided by their spectral norm times a learned "
                                         "scale (Zhai et al. 2023), against entropy collapse")
    d_state: int = setting(16, "SSM state size per channel")
    d_conv: int = setting(4, "Mamba: width of the short causal convolution")
    expand: int = setting(2, "Mamba: inner width as a multiple of d_model")
    ssm_init: str = setting("default", "Mamba: mimetic initializes the scan to act like attention "
                                       "(Trockman et al. 2024)")
    init: str = setting("gpt2", "weight scale: gpt2 = N(0, 0.02), fan_in = N(0, 1/fan_in); fan_in for recall "
                                "tasks at small widths")  # models/transformer.py
    feature_map: str = setting("elu1", "linear attention's feature map: elu1, based (a Taylor expansion of exp), "
                                "or identity (none: the theory papers' linear self-attention, "
                                "rows divided by their number of keys, not the key sum)")
    norm: str = setting("layernorm", "every norm of the model (before each mixer and MLP, and the final one): "
                                     "layernorm (with a bias) or rmsnorm (a gain only, as Mamba's; Zhang and Sennrich "
                                     "2019); eps 1e-5 both; none: no norm at all (the theory papers' linear "
                                     "transformers)")
    looped: bool = setting(False, "a looped model: one block's weights applied n_layers times (Dehghani et al. 2019; "
                                  "Yang et al. 2023); the number of loops can be changed after training")
    loop_injection: bool = setting(False, "looped: every loop reads the input again, h <- norm(block(h + input)) "
                                          "from h = 0, as Yang et al. 2023 (arXiv 2311.12424) loop GPT-2")
    loop_loss_window: int = setting(0, "looped: train on the mean loss of the last T loops' read-outs, the loops "
                                       "before them without gradient (Yang et al. 2023's truncated loss); "
                                       "0: the final read-out only")
    loop_curriculum: int = setting(0, "looped: start training at loop_loss_window loops (or 1) and add one loop "
                                      "every this many steps up to n_layers, as Yang et al. 2023's curriculum "
                                      "grows b; 0: n_layers loops from the start")
    mixer_options: dict = setting({}, "settings a mixer declares itself (its Options dataclass), beyond the shared "
                                      "ones above; given as model.NAME=value like any other")

    def layer_mixers(self) -> list[str]:
        if self.layers:
            return [name.strip() for name in self.layers.split(",")]
        return [self.mixer] * self.n_layers


@dataclass
class TrainConfig:
    steps: int = setting(2000, "optimizer steps")
    batch_size: int = setting(128, "samples per step")
    lr: float = setting(1e-3, "peak learning rate (AdamW), after warmup, decayed by a cosine")
    min_lr_ratio: float = setting(0.1, "the learning rate at the end, as a share of lr")
    warmup: int = setting(100, "steps of linear warmup; 0 starts at the full rate")
    weight_decay: float = setting(0.0, "AdamW weight decay")
    beta2: float = setting(0.98, "AdamW's second-moment decay")
    grad_clip: float = setting(1.0, "clip the gradient norm to this; 0 turns clipping off")
    seed: int = setting(0, "seed of the weights and the training data; another seed is another run")
    eval_every: int = setting(500, "steps between held-out exact-match evaluations; 0: only at the end")
    eval_samples: int = setting(512, "fresh samples per evaluation (and per test length)")
    checkpoint_every: int = setting(500, "steps between resumable checkpoints")
    length_buckets: int = setting(1, "split each batch by sample length into this many micro-batches, each "
                                     "trimmed of its padding: the same loss up to float rounding, fewer padded "
                                     "tokens where lengths vary (1: one batch)")
    # Small models gain little from more threads, and a second busy thread (the dashboard, a notebook,
    # another run) makes them thrash.
    threads: int = setting(1, "torch threads; 0 keeps torch's default")


@dataclass
class ProbeConfig:
    every: int = setting(100, "steps between probe measurements; 0 turns probes off")
    batch: int = setting(32, "size of the fixed probe batch")
    entropy: bool = setting(True, "attention entropy per head")
    sparsity: bool = setting(True, "MLP activation sparsity and dead neurons")
    snapshots: bool = setting(True, "store attention maps of the probe examples (the Attention page's slider)")
    snapshot_examples: int = setting(1, "attention maps stored per snapshot")
    snapshot_every: int = setting(0, "steps between snapshots; 0: the same as every")
    extra: list[str] = setting([], "further probes by name (spectral_norm, outliers, memorization, heads, ...)")
    weights: bool = setting(False, "also save the model's weights at every snapshot step, so a model can be "
                                   "patched or probed as it was then (analysis.load_model(run, step=N))")


# Settings added after runs were stored: left out of a run's identity while at their default, so the
# runs stored before they existed keep their ids (and are fetched, not retrained).
# (section, only for this task or None, key, default). A mixer's own setting (section
# model.mixer_options; head_dim is H3's, attention_head_dim attention's) comes before mixer_options
# itself: once its keys are dropped, an empty mixer_options is dropped too.
LATER_SETTINGS = [("model", None, "init", "gpt2"), ("task", None, "eval_start", "first"), ("task.params", "mqar", "show_answers", True),
                  ("model", None, "norm", "layernorm"), ("model.mixer_options", None, "head_dim", 1),
                  ("model.mixer_options", None, "attention_head_dim", 0),
                  ("model.mixer_options", None, "gd_form", False),
                  ("model.mixer_options", None, "gd_shared_write", False),
                  ("model", None, "mixer_options", {}), ("probes", None, "weights", False),
                  ("task.params", "mqar", "filler", "marker"), ("task.params", "mqar", "distinct_values", False),
                  ("model", None, "looped", False), ("model", None, "bidirectional", False),
                  ("model", None, "scalable_softmax", False),
                  ("task.params", "multi_operand_addition", "levels", 2),
                  ("task.params", "multi_operand_addition", "scratchpad", "running"),
                  ("task.params", "multi_operand_addition", "equal_lengths", 0.0),
                  ("task.params", "bigram_backcopy", "objective", "next"),
                  ("task.params", "bigram_backcopy", "mask_p", 0.15), ("task.params", "bigram_backcopy", "fillers", 0.0),
                  ("task.params", "copy", "couple_end", False), ("task.params", "reverse", "couple_end", False),
                  ("task.params", "sort", "hint_form", "successors"),
                  ("task.params", "multiplication", "scratchpad", "running"),
                  *[("task.params", name, key, False) for name in ("icl_linear_regression", "icl_sparse_regression")
                    for key in ("pairs", "fixed_covariance")],
                  ("train", None, "length_buckets", 1), ("model", None, "loop_injection", False),
                  ("model", None, "loop_loss_window", 0), ("model", None, "loop_curriculum", 0)]

SECTIONS = {"task": TaskConfig, "model": ModelConfig, "train": TrainConfig, "probes": ProbeConfig}


@dataclass
class RunConfig:
    task: TaskConfig = field(default_factory=TaskConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    probes: ProbeConfig = field(default_factory=ProbeConfig)

    # --- building -----------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, values: dict[str, Any] | None) -> "RunConfig":
        values = values or {}
        unknown = set(values) - set(SECTIONS)
        if unknown:
            key = sorted(unknown)[0]
            raise ConfigError(key, values[key], f"unknown section; choose one of: {', '.join(SECTIONS)}")
        sections = {}
        for name, section_cls in SECTIONS.items():
            raw = dict(values.get(name) or {})
            if name == "task":
                known = {f.name for f in dataclasses.fields(TaskConfig)}
                params = dict(raw.pop("params", {}) or {})
                params.update({k: raw.pop(k) for k in list(raw) if k not in known})
                raw["params"] = params
            if name == "model":  # a setting a mixer declares itself is written model.NAME too
                known = {f.name for f in dataclasses.fields(ModelConfig)}
                options = dict(raw.pop("mixer_options", {}) or {})
                options.update({k: raw.pop(k) for k in list(raw) if k not in known})
                raw["mixer_options"] = options
            sections[name] = build(section_cls, raw, name)
        config = cls(**sections)
        config.validate()
        return config

    @classmethod
    def load(cls, path: str | Path | None = None, overrides: list[str] | None = None) -> "RunConfig":
        values: dict[str, Any] = {}
        if path:
            values = read_config_file(Path(path))
        for item in overrides or []:
            apply_override(values, item)
        return cls.from_dict(values)

    # --- checking -----------------------------------------------------------------------------
    def validate(self) -> None:
        from .models import MIXERS, POSITIONS
        from .tasks import build_task

        self.task.params = ids_for_encoding(self.model.pos, self.task.name, self.task.params)  # ids follow model.pos
        task = build_task(self.task.name, self.task.params)  # checks the task's own parameters
        self.task.params = dataclasses.asdict(task.params)  # resolved, so defaults hash the same
        for length in self.task.eval_lengths:
            check(length >= 1, "task.eval_lengths", length, "expected lengths >= 1")
        _choice("task.eval_start", self.task.eval_start, EVAL_STARTS)
        check(self.task.eval_start == "first" or task.coupled_first is not None, "task.eval_start",
              self.task.eval_start, f"expected first: task {self.task.name} has no coupled position ids")
        m = self.model
        for name in m.layer_mixers():
            MIXERS.get(name) if not m.layers else _layer_mixer(name)
        m.mixer_options = mixer_options(m)  # checked and resolved, so defaults hash the same
        POSITIONS.get(m.pos)
        _choice("model.activation", m.activation, ACTIVATIONS)
        _choice("model.softmax", m.softmax, SOFTMAXES)
        _choice("model.ssm_init", m.ssm_init, SSM_INITS)
        _choice("model.init", m.init, INITS)
        _choice("model.feature_map", m.feature_map, FEATURE_MAPS)
        _choice("model.norm", m.norm, NORMS)
        for name in ("n_layers", "d_model", "n_heads", "max_positions", "d_state", "d_conv", "expand"):
            check(getattr(m, name) >= 1, f"model.{name}", getattr(m, name), "expected >= 1")
        check(m.d_model % m.n_heads == 0, "model.n_heads", m.n_heads,
              f"expected a divisor of model.d_model ({m.d_model})")
        check(not (m.looped and m.layers), "model.looped", m.looped,
              "expected false with model.layers (a looped model repeats one block: set model.mixer and model.n_layers)")
        _check_loops(m)
        _check_bidirectional(m)
        check(not (m.scalable_softmax and (m.logit_scaling or m.bidirectional)), "model.scalable_softmax",
              m.scalable_softmax, "expected false with model.logit_scaling or model.bidirectional (it scales causal "
              "attention by the log of the keys each query sees, in place of the fixed scaling)")
        _finite_numbers(self)
        check(m.mlp_ratio >= 0, "model.mlp_ratio", m.mlp_ratio, "expected > 0, or 0 for no MLP")
        check(m.activation != "topk" or m.topk >= 1, "model.topk", m.topk, "expected >= 1 with activation=topk")
        t = self.train
        for name in ("steps", "batch_size", "eval_samples"):
            check(getattr(t, name) >= 1, f"train.{name}", getattr(t, name), "expected >= 1")
        check(t.lr > 0, "train.lr", t.lr, "expected a finite number > 0, e.g. 1e-3")
        check(t.weight_decay >= 0, "train.weight_decay", t.weight_decay, "expected >= 0")
        check(0 <= t.beta2 < 1, "train.beta2", t.beta2, "expected 0 <= beta2 < 1, e.g. 0.98")
        check(t.warmup >= 0, "train.warmup", t.warmup, "expected >= 0")
        check(0 <= t.min_lr_ratio <= 1, "train.min_lr_ratio", t.min_lr_ratio, "expected 0..1")
        check(t.threads >= 0, "train.threads", t.threads, "expected >= 0")
        check(1 <= t.length_buckets <= t.batch_size, "train.length_buckets", t.length_buckets,
              f"expected 1..train.batch_size ({t.batch_size})")
        check(self.probes.every >= 0, "probes.every", self.probes.every, "expected >= 0 (0 turns probes off)")
        check(self.probes.batch >= 1, "probes.batch", self.probes.batch, "expected >= 1")
        from .probes import PROBES

        for name in self.probes.extra:
            check(not (PROBES.get(name).tokens_only and task.input_dim), "probes.extra", name,
                  f"a probe for token tasks; {self.task.name} reads real-valued vectors")

    # --- identity -----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {name: to_dict(getattr(self, name)) for name in SECTIONS}

    def canonical_json(self) -> str:
        values = self.to_dict()
        nested = {"task.params": values["task"]["params"], "model.mixer_options": values["model"]["mixer_options"]}
        for section, task_name, key, default in LATER_SETTINGS:
            holder = nested[section] if section in nested else values[section]
            if (task_name is None or task_name == self.task.name) and holder.get(key, default) == default:
                holder.pop(key, None)
        return json.dumps(values, sort_keys=True, separators=(",", ":"))

    @property
    def run_id(self) -> str:
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()[:12]

    def replace(self, **dotted: Any) -> "RunConfig":
        """A copy with dotted keys changed: config.replace(**{"train.seed": 1})."""
        values = self.to_dict()
        for key, value in dotted.items():
            set_dotted(values, key, value)
        return RunConfig.from_dict(values)


def _check_loops(m: ModelConfig) -> None:
    """Injection and the loss window describe how a looped model trains; the window counts loops."""
    check(not m.loop_injection or m.looped, "model.loop_injection", m.loop_injection,
          "expected false without model.looped=true (only a looped model re-reads its input every loop)")
    check(m.loop_loss_window == 0 or m.looped, "model.loop_loss_window", m.loop_loss_window,
          "expected 0 without model.looped=true (the window counts loops)")
    check(0 <= m.loop_loss_window <= m.n_layers, "model.loop_loss_window", m.loop_loss_window,
          f"expected 0..model.n_layers ({m.n_layers}), the loops trained")
    check(m.loop_curriculum == 0 or m.looped, "model.loop_curriculum", m.loop_curriculum,
          "expected 0 without model.looped=true (the curriculum adds loops)")
    check(m.loop_curriculum >= 0, "model.loop_curriculum", m.loop_curriculum, "expected >= 0 (steps per added loop)")


def _check_bidirectional(m: ModelConfig) -> None:
    """Bidirectional attention needs every layer to be attention (the other mixers read their input in
    order) and an encoding without a logit bias (ALiBi, T5's and FIRE's biases are functions of a
    causal distance)."""
    from .models import POSITIONS
    from .models.positions import PositionalEncoding

    if not m.bidirectional:
        return
    causal = sorted({name for name in m.layer_mixers() if name != "attention"})
    check(not causal, "model.bidirectional", m.bidirectional,
          f"expected false with {', '.join(causal)} layers: only attention can see later tokens")
    unbiased = [name for name in POSITIONS.names() if POSITIONS.get(name).bias is PositionalEncoding.bias]
    check(m.pos in unbiased, "model.pos", m.pos,
          f"expected an encoding without a logit bias with model.bidirectional: {', '.join(unbiased)}")


def ids_for_encoding(pos: str, task_name: str, task_params: dict) -> dict:
    """The task parameters with `ids` set to the scheme the encoding reads (a no-op otherwise). It
    joins the two registries, so it lives here, above both: models never import tasks.

    Raises a ConfigError when the encoding needs task ids the task does not provide."""
    from .models import POSITIONS
    from .tasks import TASKS

    encoding, task = POSITIONS.get(pos), TASKS.get(task_name)
    if not encoding.uses_task_ids:
        return task_params
    if not task.uses_position_ids:
        with_ids = [name for name in TASKS.names() if TASKS.get(name).uses_position_ids]
        raise ConfigError("model.pos", pos, f"task {task_name!r} defines no position ids; use it with another "
                                            f"encoding or choose a task among: {', '.join(with_ids)}")
    schemes = getattr(task, "id_schemes", ("coupling",))  # a task with one scheme offers coupling ids
    if encoding.task_ids not in schemes:
        raise ConfigError("model.pos", pos, f"task {task_name!r} offers {', '.join(schemes)} ids, "
                                            f"not {encoding.task_ids}")
    if len(schemes) > 1:
        return {**task_params, "ids": encoding.task_ids}
    return task_params


def _finite_numbers(config: "RunConfig") -> None:
    """Every float setting is a finite number: `train.lr=inf` would otherwise "diverge at step 1"."""
    for section in ("model", "train"):
        values = getattr(config, section)
        for item in dataclasses.fields(values):
            value = getattr(values, item.name)
            if isinstance(value, float) and not math.isfinite(value):
                allowed = "expected a finite number > 0, e.g. 1e-3" if item.name == "lr" else "expected a finite number"
                raise ConfigError(f"{section}.{item.name}", value, allowed)


def _choice(field_name: str, value: str, choices) -> None:
    if value not in choices:
        raise ConfigError(field_name, value, choices=choices)


def mixer_options(model: ModelConfig) -> dict[str, Any]:
    """The settings the model's mixers declare themselves (Mixer.Options), checked and with their
    defaults filled in; a key no mixer of the model declares is refused with the settings there are."""
    from .models import MIXERS

    mixers = [MIXERS.get(name) for name in dict.fromkeys(model.layer_mixers())]
    mixers = [mixer for mixer in mixers if mixer.Options is not None]
    names = {f.name for mixer in mixers for f in dataclasses.fields(mixer.Options)}
    for key, value in model.mixer_options.items():
        if key not in names:
            shared = sorted(f.name for f in dataclasses.fields(ModelConfig) if f.name != "mixer_options")
            raise ConfigError(f"model.{key}", value, f"unknown setting; choose one of: {', '.join(sorted(names) + shared)}")
    resolved: dict[str, Any] = {}
    for mixer in mixers:
        own = {f.name for f in dataclasses.fields(mixer.Options)}
        options = build(mixer.Options, {k: v for k, v in model.mixer_options.items() if k in own}, "model")
        mixer.check_options(model, options)
        resolved.update(dataclasses.asdict(options))
    return resolved


def _layer_mixer(name: str) -> None:
    from .models import MIXERS

    if name not in MIXERS:
        raise ConfigError("model.layers", name, f"unknown mixer; choose one of: {', '.join(MIXERS.names())}")


def read_config_file(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError("config", str(path), "no such file")
    text = path.read_text()
    try:
        values = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as error:
        raise ConfigError("config", str(path), f"cannot parse: {str(error).splitlines()[0]}") from None
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise ConfigError("config", str(path), "expected a mapping of sections (task, model, train, probes)")
    return values


def apply_override(values: dict[str, Any], item: str) -> None:
    if "=" not in item:
        raise ConfigError("override", item, "expected key=value, e.g. model.pos=rope")
    key, value = item.split("=", 1)
    if "." not in key:
        raise ConfigError("override", item, f"expected section.key=value with section one of: {', '.join(SECTIONS)}")
    set_dotted(values, key.strip(), value.strip())


def set_dotted(values: dict[str, Any], key: str, value: Any) -> None:
    section, _, name = key.partition(".")
    if section not in SECTIONS:
        raise ConfigError(key, value, f"unknown section; choose one of: {', '.join(SECTIONS)}")
    target = values.setdefault(section, {})
    if section == "task" and name.startswith("params."):
        name = name[len("params."):]
    if section == "model" and name.startswith("mixer_options."):
        name = name[len("mixer_options."):]
    target[name] = value
