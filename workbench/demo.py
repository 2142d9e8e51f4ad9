"""The shipped demo runs: small, real runs in data/demo/ that show each phenomenon on the dashboard's
first start, before anyone trains anything.

Each demo says where to look and what to see there, and carries a check of the property it is
shipped to show (tests/test_demo.py runs every check on the shipped runs), so a demo can never
contradict what the README and the pages say about it. `workbench demo build` remakes them: a run
already in the user's store with the same config is copied, the others are trained (the lazy-neurons
run trains 20,000 steps, several minutes; the rest take a minute or two each on one core).
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import Callable

from .config import RunConfig
from .events import collapse_step
from .experiments import get_experiment
from .experiments.canary import machine
from .reports import length_table
from .run_files import LOCK
from .store import Run, atomic_write_json, demo_root, run_path
from .train import train

SHORT_ADDITION = ["task.name=addition", "task.max_digits=5", "task.eval_lengths=5,6,8,10", "model.n_layers=1",
                  "model.d_model=64", "model.n_heads=4", "train.steps=1500", "train.lr=3e-3", "train.seed=0"]


@dataclass(frozen=True)
class Demo:
    name: str  # the run's label, after "demo: "
    page: str  # the dashboard page that shows it best
    look_for: str  # what to see there, in one sentence
    config: RunConfig


@dataclass(frozen=True)
class DemoCheck:
    """A property a group of demos is shipped to show, checked on their finished runs."""
    what: str
    demos: tuple[str, ...]
    holds: Callable[[list[Run]], tuple[bool, str]]


def _recipe_config(experiment: str, **labels) -> RunConfig:
    """Seed 0 of a named experiment's recipe, so the demo is a run the experiment also trains."""
    for variant in get_experiment(experiment).variants(False):
        if variant.labels.get("seed") == 0 and all(variant.labels.get(k) == v for k, v in labels.items()):
            return variant.config
    raise KeyError(f"{experiment} has no seed-0 variant {labels}")


def demos() -> list[Demo]:
    # The short-addition pair is trained on 1-5 digits because both encodings fit those: on 1-10 digits
    # learned positions never fit at this size (the lengthgen-addition row), so a comparison beyond the
    # training length would be against a model that had not learned the task.
    return [
        Demo("addition 1-5 digits, position coupling", "Length generalization",
             "it fits the 1-5 digit sums it was trained on and adds 6-digit numbers too (none at 8)",
             RunConfig.load(None, [*SHORT_ADDITION, "model.pos=coupling"])),
        Demo("addition 1-5 digits, learned positions", "Length generalization",
             "it fits the same 1-5 digit sums and gets no 6-digit sum right",
             RunConfig.load(None, [*SHORT_ADDITION, "model.pos=learned"])),
        Demo("addition 1-10 digits, position coupling", "Attention",
             "the lengthgen-addition recipe's seed 0: adds 12-digit numbers, falls off from 15; its heads "
             "read the digits of one significance",
             _recipe_config("lengthgen-addition", pos="coupling")),
        Demo("addition 1-10 digits, coupled ids as a relative bias", "Length generalization",
             "our relative variant of coupling adds 30-digit numbers after training on 1-10",
             _recipe_config("lengthgen-addition", pos="coupling_relative")),
        Demo("entropy collapse, baseline", "Dynamics",
             "at a learning rate of 3e-2 with no warmup, attention entropy falls to near zero in ~100 steps",
             _recipe_config("entropy-collapse", model="baseline")),
        Demo("entropy collapse, sigmaReparam", "Dynamics",
             "the same run with sigmaReparam keeps its attention entropy and ends at a lower loss",
             _recipe_config("entropy-collapse", model="sigma_reparam")),
        Demo("lazy neurons, MLP width 128", "Dynamics",
             "the share of nonzero MLP activations falls from about half to under a third over training",
             _recipe_config("lazy-neurons", mlp_width=128, labels="true")),
        Demo("copy, attention", "Length generalization",
             "a 2-layer Transformer copies strings of 24 symbols",
             _recipe_config("copy-vs-length", mixer="attention", init="fan_in")),
        Demo("copy, Mamba", "Length generalization",
             "a Mamba model of the same width, trained as long, copies short strings and none of 24 symbols",
             _recipe_config("copy-vs-length", mixer="mamba", init="fan_in")),
        Demo("induction circuit, attention", "Circuits",
             "the induction-heads recipe's attention seed 0: patching finds the answer carried from the symbol "
             "after the first '@' to the last '@' by the second layer's heads, whose answer-induction score "
             "jumps as accuracy does",
             _recipe_config("induction-heads", mixer="attention")),
    ]


def demo_configs() -> dict[str, RunConfig]:
    return {demo.name: demo.config for demo in demos()}


# --- the properties the demos are shipped to show ---------------------------------------------------
def _coupling_beats_learned(runs: list[Run]) -> tuple[bool, str]:
    coupling, learned = (length_table(run.metrics()) for run in runs)
    fits = coupling.get(5, 0) >= 0.95 and learned.get(5, 0) >= 0.95
    wins = coupling.get(6, 0) >= 0.9 and learned.get(6, 0) <= 0.1
    return fits and wins, (f"at 5 digits coupling {coupling.get(5, 0):.0%}, learned {learned.get(5, 0):.0%}; "
                           f"at 6: coupling {coupling.get(6, 0):.0%}, learned {learned.get(6, 0):.0%}")


def _recipe_coupling_reaches_12(runs: list[Run]) -> tuple[bool, str]:
    curve = length_table(runs[0].metrics())
    return curve.get(10, 0) >= 0.95 and curve.get(12, 0) >= 0.9, \
        f"{curve.get(10, 0):.0%} at 10 digits, {curve.get(12, 0):.0%} at 12"


def _relative_reaches_30(runs: list[Run]) -> tuple[bool, str]:
    curve = length_table(runs[0].metrics())
    return curve.get(30, 0) >= 0.9, f"{curve.get(30, 0):.0%} at 30 digits"


def _collapse_pair(runs: list[Run]) -> tuple[bool, str]:
    baseline, reparam = (collapse_step(run.metrics()) for run in runs)
    return baseline is not None and reparam is None, (
        f"baseline collapses at step {baseline}, sigmaReparam {'never' if reparam is None else f'at step {reparam}'}")


def _sparsifies(runs: list[Run]) -> tuple[bool, str]:
    metrics = runs[0].metrics()
    density = metrics[metrics.probe == "mlp_nonzero_fraction"].groupby("step")["value"].mean()
    first, last = float(density.iloc[0]), float(density.iloc[-1])
    return last <= 0.75 * first, f"nonzero share {first:.2f} -> {last:.2f}"


def _induction_circuit_forms(runs: list[Run]) -> tuple[bool, str]:
    from .circuits.views import heads_over_training

    scores = heads_over_training(runs[0])
    answer = scores[scores.probe == "answer_induction_score"].groupby("step")["value"].max()
    final = float(answer.iloc[-1]) if len(answer) else 0.0
    return final >= 0.5 and len(runs[0].weight_steps()) > 1, (
        f"best answer-induction score {float(answer.iloc[0]) if len(answer) else 0:.2f} at the start, {final:.2f} "
        f"at the end; weights saved at steps {runs[0].weight_steps()}")


def _attention_copies_mamba_not(runs: list[Run]) -> tuple[bool, str]:
    attention, mamba = (length_table(run.metrics()) for run in runs)
    return (attention.get(24, 0) >= 0.9 and mamba.get(24, 0) <= 0.1,
            f"at 24 symbols attention {attention.get(24, 0):.0%}, Mamba {mamba.get(24, 0):.0%}")


CHECKS = [
    DemoCheck("coupling adds beyond its training length where learned positions do not",
              ("addition 1-5 digits, position coupling", "addition 1-5 digits, learned positions"),
              _coupling_beats_learned),
    DemoCheck("the recipe's coupling run adds 12-digit numbers", ("addition 1-10 digits, position coupling",),
              _recipe_coupling_reaches_12),
    DemoCheck("the relative coupling adds 30-digit numbers",
              ("addition 1-10 digits, coupled ids as a relative bias",), _relative_reaches_30),
    DemoCheck("the baseline's attention entropy collapses and sigmaReparam's does not",
              ("entropy collapse, baseline", "entropy collapse, sigmaReparam"), _collapse_pair),
    DemoCheck("the MLP sparsifies during training", ("lazy neurons, MLP width 128",), _sparsifies),
    DemoCheck("attention copies 24 symbols where Mamba copies none", ("copy, attention", "copy, Mamba"),
              _attention_copies_mamba_not),
    DemoCheck("an induction head forms and the run keeps the weights to patch it at its snapshots",
              ("induction circuit, attention",), _induction_circuit_forms),
]


DEMO_MACHINE = "machine.json"  # beside the demo runs in data/demo/: the machine that trained them


def shipped_demo_runs() -> dict[str, Run]:
    """{demo name: its run in data/demo/} (a demo not built yet is missing)."""
    root = demo_root()
    runs = {}
    for demo in demos():
        run = Run(root / demo.config.run_id)
        if run.finished():
            runs[demo.name] = run
    return runs


PAGE_FILES = {"Attention": "pages/3_Attention.py", "Dynamics": "pages/4_Dynamics.py",
              "Length generalization": "pages/5_Length_generalization.py", "Circuits": "pages/8_Circuits.py"}  # the dashboard's pages, from app/


def demo_guide() -> list[dict]:
    """What to look at first: each shipped demo run, the page that shows its phenomenon (as a file of
    the dashboard, for a link), what to see there, and the selection the link opens: the demo with
    the demos it is shipped to be compared with (a coupling run beside its learned-positions run)."""
    shipped = shipped_demo_runs()
    guide = []
    for demo in demos():
        if demo.name not in shipped:
            continue
        partners = next((check.demos for check in CHECKS if demo.name in check.demos), (demo.name,))
        together = [shipped[name].run_id for name in partners if name in shipped]
        run_id = shipped[demo.name].run_id
        selection = {"runs": ",".join(together)} if len(together) > 1 else {"run": run_id}
        guide.append({"demo": demo.name, "page": demo.page, "page_file": PAGE_FILES[demo.page],
                      "look_for": demo.look_for, "run_id": run_id, "selection": selection})
    return guide


def check_demos(runs: dict[str, Run] | None = None) -> list[tuple[DemoCheck, bool, str]]:
    """Every check on the shipped (or given) demo runs: (check, holds, the numbers)."""
    runs = shipped_demo_runs() if runs is None else runs
    results = []
    for check in CHECKS:
        missing = [name for name in check.demos if name not in runs]
        if missing:
            results.append((check, False, f"not built: {', '.join(missing)}"))
            continue
        holds, numbers = check.holds([runs[name] for name in check.demos])
        results.append((check, holds, numbers))
    return results


def build_demo(progress: bool = True) -> list[str]:
    """Train (or copy from the store) the demo runs into data/demo/, replacing what was there."""
    root = demo_root()
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    ids = []
    for demo in demos():
        stored = Run(run_path(demo.config.run_id))
        if stored.finished():
            shutil.copytree(stored.path, root / demo.config.run_id)
            run = Run(root / demo.config.run_id)
        else:
            run = train(demo.config, progress=progress, root=root)
        run.write_status(label=f"demo: {demo.name}", demo_page=demo.page, demo_look_for=demo.look_for)
        (run.path / "checkpoint.safetensors").unlink(missing_ok=True)
        (run.path / LOCK).unlink(missing_ok=True)  # nobody trains a shipped run
        ids.append(run.run_id)
    # the CPU and torch that trained them: only there can a check ask for their metrics bit for bit
    atomic_write_json(root / DEMO_MACHINE, machine())
    return ids
