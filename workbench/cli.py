"""The `workbench` command line. Exit codes: 0 success, 2 bad input (one clear line), 1 otherwise."""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import warnings
from pathlib import Path

from .cli_circuits import add_circuits_commands, cmd_heads, cmd_lens, cmd_patch
from .errors import ConfigError, MissingSystemPackage, SweepFailed
from .store import REPO_ROOT
from .figures.export import FIGURES
from .typed import _coerce

RUN_HELP = "a run id, or a unique prefix of one (`workbench runs` lists them)"
JSON_HELP = "print JSON instead of text"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="workbench", description="Train small sequence models and see inside them.")
    sub = parser.add_subparsers(dest="command", required=True)
    for add_commands in (_add_run_commands, _add_eval_length, _add_task_commands, _add_experiment_commands,
                         add_circuits_commands, _add_export, _add_interop, _add_demo_and_app):
        add_commands(sub)
    return parser


def _add_run_commands(sub) -> None:
    p = sub.add_parser("train", help="train a config (or fetch the stored identical run)")
    p.add_argument("config", nargs="?", help="a YAML or JSON config file")
    p.add_argument("overrides", nargs="*", help="dotted key=value overrides, e.g. model.pos=rope")
    p.add_argument("--json", action="store_true", help="print one JSON summary instead of the run id")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--label", default="", help="a free-text label stored with the run")

    p = sub.add_parser("sweep", help="train the product of a few varied keys (locally or on Ray)")
    p.add_argument("config", nargs="?", help="a YAML or JSON config file")
    p.add_argument("overrides", nargs="*", help="dotted key=value overrides for every run")
    p.add_argument("--vary", action="append", default=[], required=True,
                   help="a key and its values, e.g. train.seed=0,1,2 (repeat for a product)")
    p.add_argument("--label", default="", help="a free-text label stored with every run")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    _add_backend_options(p)

    p = sub.add_parser("runs", help="the run store as a table")
    p.add_argument("--json", action="store_true", help=JSON_HELP)

    p = sub.add_parser("show", help="one run: config, status, final metrics")
    p.add_argument("run", help=RUN_HELP)
    p.add_argument("--json", action="store_true", help="print JSON, with every probe summary")


def _add_backend_options(p) -> None:
    p.add_argument("--workers", type=int, default=None,
                   help="runs trained side by side (default: WORKBENCH_WORKERS or the number of cores; "
                        "with Ray: the local instance's CPUs)")
    p.add_argument("--backend", default=None, choices=None,
                   help="local (a process pool, the default) or ray (one Ray task per run; "
                        "default: WORKBENCH_BACKEND)")
    p.add_argument("--ray-address", default=None,
                   help="--backend ray: a running cluster, e.g. 10.0.0.5:6379 (default: RAY_ADDRESS, "
                        "else a local Ray instance)")


def _add_eval_length(sub) -> None:
    p = sub.add_parser("eval-length", help="exact match per test length")
    p.add_argument("run", help=RUN_HELP)
    p.add_argument("--lengths", required=True, help="comma-separated lengths, e.g. 5,10,20")
    p.add_argument("--n", type=int, default=512, help="samples per length")
    p.add_argument("--entropy", action="store_true",
                   help="also attention entropy per layer and head at each length (O(T) memory kernels)")
    p.add_argument("--entropy-n", type=int, default=8, help="samples per length for --entropy")
    p.add_argument("--entropy-at", choices=["all", "answer"], default="all",
                   help="--entropy over every query (all), or only where each sample's answer is first predicted "
                        "(answer: the query that has to find something in the context)")
    p.add_argument("--examples", type=int, default=0,
                   help="also print the model's answer on this many fresh samples per length")
    p.add_argument("--offsets", default=None,
                   help="instead: exact match at each of these starts of the coupled position ids, e.g. 1,2,10,random "
                        "(random: each sample's start drawn as in training, fair to what the model saw; "
                        "coupled-id tasks; shows which ids the model learned; not stored)")
    p.add_argument("--temperature", default=None,
                   help="instead: exact match with every attention head's logits multiplied after training, e.g. "
                        "1,1.5,uniform,aligned,head (a number: that factor for every head; uniform: the best factor "
                        "by loss on held-out samples of each length; aligned: the factor that brings the answer's "
                        "attention entropy back to the longest trained length's; maxprob: the one that does so for its "
                        "largest attention weight; head: a factor per head trained "
                        "at the longest length with the weights frozen; not stored)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)


def _add_task_commands(sub) -> None:
    p = sub.add_parser("task", help="inspect tasks")
    task_sub = p.add_subparsers(dest="task_command", required=True)
    s = task_sub.add_parser("show", help="decoded examples: tokens, targets, loss mask, position ids")
    s.add_argument("name", help="a task name (`workbench task list`)")
    s.add_argument("params", nargs="*", help="task parameters key=value")
    s.add_argument("--n", type=int, default=5, help="how many examples (default 5)")
    s.add_argument("--length", type=int, default=None, help="a fixed test length")
    s.add_argument("--seed", type=int, default=0, help="the data seed (default 0)")
    s.add_argument("--offset", type=int, default=None,
                   help="coupled-id tasks: start the examples' position ids here instead of at the evaluation's start")
    s.add_argument("--json", action="store_true", help=JSON_HELP)
    task_sub.add_parser("list", help="every task by name")


def _add_experiment_commands(sub) -> None:
    p = sub.add_parser("experiment", help="named recipes and their results")
    exp_sub = p.add_subparsers(dest="experiment_command", required=True)
    exp_sub.add_parser("list", help="every named experiment, with what it shows")
    r = exp_sub.add_parser("run", help="train an experiment's runs (or read them from the store) and judge its claim")
    r.add_argument("name", help="an experiment name (`workbench experiment list`)")
    r.add_argument("--fast", action="store_true", help="the smaller budget used by tests")
    r.add_argument("--steps", type=int, default=None, help="train each run this many steps instead of the recipe's "
                   "(where its runs differ in length: the longest; the others keep their ratio to it)")
    r.add_argument("--seeds", default=None, help="only these of the recipe's seeds, e.g. 0 or 0,1")
    r.add_argument("--json", action="store_true", help=JSON_HELP)
    _add_backend_options(r)
    rep = exp_sub.add_parser("report", help="render REPRODUCTIONS.md from the shipped results in data/results/")
    rep.add_argument("--out", default=None,
                     help="the Markdown file to write (default: REPRODUCTIONS.md of the repository)")
    rep.add_argument("--check", action="store_true",
                     help="write nothing; recompute every shipped result's canary and verdicts and exit 1 if any "
                          "no longer matches the code")
    rep.add_argument("--record-machine", action="store_true",
                     help="with --check: add this machine's canary to each result that passed and has none from "
                          "here, so later checks here are bit for bit (only at a commit whose canaries matched bit "
                          "for bit on the machine that made them)")


def _add_export(sub) -> None:
    p = sub.add_parser("export", help="export a figure of a run to PDF, SVG or PNG")
    p.add_argument("run", help=RUN_HELP)
    p.add_argument("--figure", required=True, help="one of: " + ", ".join(FIGURES))
    p.add_argument("--out", default=None, help="FILE.pdf|svg|png (default: exports/<run>-<figure>.pdf)")
    p.add_argument("--width", type=int, default=None, help="figure width in layout pixels (PNGs render at 2x)")
    p.add_argument("--height", type=int, default=None, help="figure height in layout pixels")
    p.add_argument("--layer", type=int, default=0, help="--figure attention: which layer (default 0)")
    p.add_argument("--head", type=int, default=0, help="--figure attention: which head (default 0)")
    p.add_argument("--step", type=int, default=None,
                   help="attention figures: the snapshot at this training step (default: the last); "
                        "neuron-activity: draw only this step (default: a few spread over training); "
                        "patching, heads, logit-lens: the weights saved at this step (probes.weights=true)")
    p.add_argument("--length", type=int, default=None,
                   help="attention figures: the final model on a fresh sample of this test length, not a snapshot")
    p.add_argument("--example", type=int, default=0,
                   help="attention figures: which probe example of the snapshot, or with --length which fresh sample")
    p.add_argument("--offset", type=int, default=None,
                   help="attention figures with --length: start the sample's coupled position ids here "
                        "(coupled-id tasks; the evaluation's own start by default)")
    p.add_argument("--shift", default=None,
                   help="icl-curve of a regression run: read it on prompts off its training distribution "
                        "(skewed covariance, half subspace, prompts in one orthant, query repeats an example)")


def _add_interop(sub) -> None:
    p = sub.add_parser("export-model", help="a run as a Hugging Face transformers model folder (the interop extra)")
    p.add_argument("run", help=RUN_HELP)
    p.add_argument("--format", default="hf", help="hf: config.json + model.safetensors for transformers (default)")
    p.add_argument("--out", default=None, help="the folder to write (default: exports/<run>-hf)")

    p = sub.add_parser("import-model", help="a local Hugging Face causal LM (GPT-2, GPT-NeoX) as a run (the interop extra)")
    p.add_argument("folder", metavar="DIR", help="a folder with config.json and model.safetensors")
    p.add_argument("--label", default="", help="a free-text label stored with the run")


def _add_demo_and_app(sub) -> None:
    p = sub.add_parser("demo", help="the shipped demo runs")
    demo_sub = p.add_subparsers(dest="demo_command", required=True)
    demo_sub.add_parser("build", help="(re)make the demo runs in data/demo/, then check what each shows")
    demo_sub.add_parser("check", help="check that each shipped demo run shows what it is there to show")

    p = sub.add_parser("app", help="the dashboard")
    p.add_argument("--host", default="127.0.0.1",
                   help="the address to bind (default 127.0.0.1: this machine only; 0.0.0.0 opens it to the network)")
    p.add_argument("--port", type=int, default=8501, help="default 8501")


def _print_json(value) -> None:
    print(json.dumps(value, indent=2, sort_keys=True, default=_jsonable))


def _jsonable(value):
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item"):
        return value.item()
    return str(value)


def cmd_train(args) -> int:
    from .config import RunConfig
    from .reports import run_summary
    from .train import train

    path, overrides = args.config, list(args.overrides)
    if path and "=" in path and not Path(path).exists():  # `workbench train model.pos=rope` has no file
        path, overrides = None, [path] + overrides
    config = RunConfig.load(path, overrides)
    try:
        run = train(config, progress=not args.quiet, label=args.label, say=lambda line: print(line, file=sys.stderr))
    except KeyboardInterrupt:
        print(f"interrupted; run {config.run_id} resumes from its last checkpoint with the same command",
              file=sys.stderr)
        return 130
    if args.json:
        _print_json(run_summary(run))
    else:
        status = run.status()
        if status.get("status") == "diverged":
            print(f"run diverged at step {status.get('diverged_step')}", file=sys.stderr)
        print(run.run_id)
    return 0


def _check_backend_options(args) -> None:
    from .parallel import choose_backend

    if args.workers is not None and args.workers < 1:
        raise ConfigError("--workers", args.workers, "expected a whole number >= 1")
    backend = choose_backend(args.backend)
    if args.ray_address and backend != "ray":
        raise ConfigError("--ray-address", args.ray_address, "only with --backend ray (or WORKBENCH_BACKEND=ray)")


def cmd_sweep(args) -> int:
    from .parallel import train_many
    from .reports import final_values
    from .sweep import sweep_jobs

    _check_backend_options(args)
    path, overrides = args.config, list(args.overrides)
    if path and "=" in path and not Path(path).exists():  # no config file, only overrides
        path, overrides = None, [path] + overrides
    jobs = sweep_jobs(path, overrides, args.vary, label=args.label)
    try:
        # stdout carries only the table (or JSON); Ray's own messages about workers go to stderr
        with contextlib.redirect_stdout(sys.stderr):
            runs = train_many(jobs, workers=args.workers, progress=not args.quiet, backend=args.backend,
                              ray_address=args.ray_address)
    except KeyboardInterrupt:
        print("interrupted; the unfinished runs resume from their last checkpoints with the same command",
              file=sys.stderr)
        return 130
    rows = [{"run_id": run.run_id, "label": label, "status": run.status().get("status"),
             "final": final_values(run.metrics())} for run, (_, label) in zip(runs, jobs)]
    if args.json:
        _print_json(rows)
    else:
        for row in rows:
            print(f"{row['run_id']}  {row['status']:10s}  {row['label']}")
    return 0


def cmd_runs(args) -> int:
    from .store import data_root, data_root_origin, list_runs

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = list_runs()
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)
    if args.json:
        _print_json(table.to_dict("records"))
        return 0
    print(f"run store: {data_root()} ({data_root_origin()})")
    if table.empty:
        print("no runs yet; try: workbench train task.name=addition model.pos=coupling")
    else:
        print(table.drop(columns=["created"]).to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    return 0


def cmd_show(args) -> int:
    from .reports import run_summary
    from .store import open_run

    summary = run_summary(open_run(args.run))
    if args.json:
        _print_json(summary)
    else:
        for key in ("run_id", "status", "step", "elapsed_s"):
            print(f"{key}: {summary.get(key)}")
        print("config:")
        for section, values in summary["config"].items():
            print(f"  {section}: " + " ".join(f"{k}={v}" for k, v in values.items()))
        print("final metrics:")
        for key, value in summary["final"].items():
            print(f"  {key}: {value:.4g}" if isinstance(value, float) else f"  {key}: {value}")
        for key, value in summary.get("probes", {}).items():
            print(f"  {key}: {value}")
    return 0


def _with_length_bar(evaluate):
    """evaluate(progress) under a tqdm bar that counts test lengths; progress(done, total) moves it."""
    from tqdm.auto import tqdm

    with tqdm(desc="lengths", unit="length", disable=None, file=sys.stderr) as bar:
        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)
        return evaluate(progress)


def cmd_eval_length(args) -> int:
    from .errors import check
    from .analysis import evaluate_lengths
    from .reports import json_keys

    check(args.entropy_n >= 1 or not args.entropy, "--entropy-n", args.entropy_n, "expected at least 1 sample per length")
    check(args.offsets is None or args.temperature is None, "--temperature", args.temperature,
          "one sweep at a time: leave out --offsets")
    if args.offsets is not None:
        return _eval_offsets(args)
    if args.temperature is not None:
        return _eval_temperatures(args)
    result = _with_length_bar(lambda progress: evaluate_lengths(
        args.run, args.lengths, args.n, args.entropy_n if args.entropy else 0, progress=progress,
        examples=args.examples, entropy_at=args.entropy_at))
    curve, entropy, examples = result["exact_match"], result.get("entropy", {}), result.get("examples", {})
    if args.json:
        summary = {"run_id": args.run, "exact_match": json_keys(curve)}
        if args.entropy:
            summary["entropy"] = json_keys(entropy)
        if args.examples:
            summary["examples"] = {str(length): [{"prompt": s.prompt, "answer": s.answer, "target": s.target,
                                                  "correct": s.correct} for s in samples]
                                   for length, samples in examples.items()}
        _print_json(summary)
        return 0
    layer_names = sorted({layer for layers in entropy.values() for layer in layers})
    print("length  exact_match" + "".join(f"  entropy_L{layer}" for layer in layer_names))
    for length, value in curve.items():
        layers = entropy.get(length, {})
        print(f"{length:>6}  {value:.4f}     " + "".join(f"  {layers[layer]:>10.4f}" for layer in layer_names))
    for length, samples in examples.items():
        print(f"\nlength {length}: prompt -> the model's answer (target when wrong)")
        for sample in samples:
            print(f"  {sample.prompt} -> {sample.answer}" + ("" if sample.correct else f"   wrong, target {sample.target}"))
    return 0


def _eval_offsets(args) -> int:
    from .errors import check
    from .analysis import evaluate_offsets

    check(not (args.entropy or args.examples), "--offsets", args.offsets,
          "an offset sweep is its own evaluation; leave out --entropy and --examples")
    curves = _with_length_bar(lambda progress: evaluate_offsets(args.run, args.lengths, args.offsets, args.n,
                                                                progress=progress))
    return _print_sweep(args, curves, "exact_match_by_offset",
                        "exact match by the first id of each sample's coupled position ids",
                        lambda offset: f"  offset {offset:<4}", lambda rate: f"  {rate:>11.4f}")


def _eval_temperatures(args) -> int:
    from .errors import check
    from .analysis import evaluate_temperatures

    check(not (args.entropy or args.examples), "--temperature", args.temperature,
          "a temperature sweep is its own evaluation; leave out --entropy and --examples")
    curves = _with_length_bar(lambda progress: evaluate_temperatures(args.run, args.lengths, args.temperature,
                                                                     args.n, progress=progress))
    return _print_sweep(args, curves, "exact_match_by_temperature",
                        "exact match with the attention logits multiplied by a factor (the factor, mean over heads, "
                        "in brackets)", lambda reading: f"  {reading:>16}",
                        lambda cell: f"  {cell['exact_match']:>7.4f} ({cell['factor']:>5.2f})")


def _print_sweep(args, curves: dict, json_key: str, title: str, column, cell) -> int:
    """An evaluation sweep ({length: {column: value}}) as JSON, or as a table: a row per length, each
    column headed by column(name) and filled by cell(value)."""
    from .reports import json_keys

    if args.json:
        _print_json({"run_id": args.run, json_key: json_keys(curves)})
        return 0
    columns = list(next(iter(curves.values())))
    print(title)
    print("length" + "".join(column(name) for name in columns))
    for length, row in curves.items():
        print(f"{length:>6}" + "".join(cell(row[name]) for name in columns))
    return 0


def cmd_task(args) -> int:
    from .tasks import TASKS, build_task
    from .tasks.show import aligned_rows, show_examples, unpacked_ids

    if args.task_command == "list":
        for name in TASKS.names():
            print(f"{name:24s} {TASKS.get(name).description}")
        return 0
    params = {}
    for item in args.params:
        if "=" not in item:
            raise ConfigError("task parameter", item, "expected key=value, e.g. max_digits=5")
        key, value = item.split("=", 1)
        params[key.removeprefix("task.")] = value
    from .errors import check

    check(args.n >= 1, "--n", args.n, "expected at least 1 example")
    task = build_task(args.name, params)
    if args.offset is not None:
        task = task.at_offset(args.offset, "--offset")
    examples = show_examples(task, n=args.n, seed=args.seed, length=args.length)
    if args.json:
        _print_json(examples)
        return 0
    print(f"{task.name}: {task.description}; length = {task.length_name}")
    for i, example in enumerate(examples):
        print(f"\nexample {i}: {example['input']}  ->  {example['answer']}")
        rows = {"token": example["tokens"], "target": example["targets"],
                "loss": ["x" if m else "." for m in example["loss_mask"]]}
        if example["position_ids"] is not None:
            rows.update(unpacked_ids(example["position_ids"]))
        width = max(len(str(v)) for values in rows.values() for v in values)
        if "values" in example:
            rows["value"] = [f"{v:.2f}" if m else "." for v, m in zip(example["values"], example["loss_mask"])]
        if "vectors" in example:  # one row per coordinate the read-in sees
            width = max(width, 5)
            rows.update({f"vec[{j}]": [f"{v[j]:.2f}" for v in example["vectors"]]
                         for j in range(len(example["vectors"][0]))})
        print(aligned_rows(rows, width))
    return 0


def cmd_experiment(args) -> int:
    from . import experiments
    from .experiments.report import outcome_lines

    if args.experiment_command == "list":
        for name, recipe in experiments.EXPERIMENTS.items():
            print(f"{name:34s} {recipe.description}")
        return 0
    if args.experiment_command == "run":
        _check_backend_options(args)
        budget = None
        if args.steps is not None or args.seeds is not None:
            seeds = _coerce(args.seeds, tuple[int, ...], "--seeds") if args.seeds is not None else None
            budget = experiments.Budget(args.steps, seeds)
        with contextlib.redirect_stdout(sys.stderr):  # stdout: the result only
            result = experiments.run_experiment(args.name, fast=args.fast, workers=args.workers, budget=budget,
                                                backend=args.backend, ray_address=args.ray_address)
        if result.budget:
            print(f"budget: {result.budget} (not the recipe's; REPRODUCTIONS.md keeps the recipe's result)")
        if args.json:
            _print_json({"name": args.name, "table": result.table.to_dict("records"), "summary": result.summary,
                         "verdicts": {key: outcome.to_dict() for key, outcome in result.outcomes.items()}})
        else:
            print(result.table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
            print(f"\n{result.headline}")
            print("\n".join(outcome_lines(result.outcomes)))
        return 0
    if args.check:
        checks = experiments.check_all()
        stale = [check.name for check in checks if not check.ok]
        print(f"{len(checks) - len(stale)} of {len(checks)} shipped results match the code"
              + (f"; stale: {', '.join(stale)}" if stale else ""))
        if args.record_machine:
            print(f"{experiments.record_machine(checks)} canaries recorded for this machine")
        return 1 if stale else 0
    path = experiments.write_report(args.out or REPO_ROOT / "REPRODUCTIONS.md")
    print(path)
    return 0


def cmd_export(args) -> int:
    from .figures.export import export_run_figure

    path = export_run_figure(args.run, args.figure, args.out, width=args.width, height=args.height,
                             layer=args.layer, head=args.head, step=args.step, example=args.example,
                             length=args.length, offset=args.offset, shift=args.shift)
    print(path)
    return 0


def cmd_export_model(args) -> int:
    from .interop import export_model

    print(export_model(args.run, args.out, format=args.format))
    return 0


def cmd_import_model(args) -> int:
    from .interop import import_model

    print(import_model(args.folder, label=args.label).run_id)
    return 0


def cmd_demo(args) -> int:
    from .demo import build_demo, check_demos, demos

    if args.demo_command == "build":
        build_demo()
    for demo in demos():
        print(f"{demo.config.run_id}  {demo.name}  ({demo.page}: {demo.look_for})")
    results = check_demos()
    for check, holds, numbers in results:
        print(f"{'holds' if holds else 'FAILS'}: {check.what} ({numbers})")
    return 0 if all(holds for _, holds, _ in results) else 1


def cmd_app(args) -> int:
    from .serve import app_command, run_forwarding_signals

    return run_forwarding_signals(app_command(args.host, args.port))


COMMANDS = {"train": cmd_train, "sweep": cmd_sweep, "runs": cmd_runs, "show": cmd_show, "eval-length": cmd_eval_length,
            "task": cmd_task, "experiment": cmd_experiment, "export": cmd_export, "export-model": cmd_export_model,
            "import-model": cmd_import_model, "demo": cmd_demo, "app": cmd_app,
            "patch": lambda args: cmd_patch(args, _print_json), "heads": lambda args: cmd_heads(args, _print_json),
            "lens": lambda args: cmd_lens(args, _print_json)}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except MissingSystemPackage as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except SweepFailed as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `workbench ... | head` closed the pipe: stop quietly, as other tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush does not raise again
        return 141


if __name__ == "__main__":
    sys.exit(main())
