"""The command line as a user meets it: exit codes, one-line errors, --json, Ctrl-C."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from workbench.cli import main

TINY = ["task.max_digits=3", "model.n_layers=1", "model.d_model=16", "model.n_heads=2", "train.steps=12",
        "train.batch_size=16", "train.eval_samples=32", "probes.every=6", "probes.batch=4"]


def test_bad_choice_prints_one_line_naming_choices_and_exits_2(capsys):
    assert main(["train", "model.pos=rop"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "model.pos" in err[0] and "'rop'" in err[0] and "rope" in err[0] and "coupling" in err[0]


def test_train_runs_show_and_eval_length(data_dir, capsys):
    assert main(["train", *TINY, "--quiet"]) == 0
    run_id = capsys.readouterr().out.strip().splitlines()[-1]
    assert len(run_id) == 12
    assert main(["train", *TINY, "--quiet", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["run_id"] == run_id
    assert main(["runs", "--json"]) == 0
    (row,) = [row for row in json.loads(capsys.readouterr().out) if row["run_id"] == run_id]
    assert main(["show", run_id, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["status"] == "completed" and "entropy" in shown["probes"]
    assert row["params"] == shown["n_parameters"] > 0  # the runs table tells apart models of one shape but width
    assert main(["eval-length", run_id, "--lengths", "2,4", "--n", "16", "--json"]) == 0
    curve = json.loads(capsys.readouterr().out)["exact_match"]
    assert set(curve) == {"2", "4"} and all(0 <= v <= 1 for v in curve.values())
    assert main(["show", "nope-not-a-run"]) == 2


def test_runs_warns_about_a_corrupt_folder(data_dir, capsys):
    (data_dir / "broken").mkdir()
    (data_dir / "broken" / "config.json").write_text("garbage")
    assert main(["runs"]) == 0
    assert "broken" in capsys.readouterr().err


def test_task_show_decodes_examples(capsys):
    assert main(["task", "show", "addition", "max_digits=3", "--n", "2", "--json"]) == 0
    examples = json.loads(capsys.readouterr().out)
    assert len(examples) == 2


def test_task_show_moves_coupled_ids_with_offset(capsys):
    show = ["task", "show", "addition", "--n", "1", "--length", "3", "--json"]
    assert main(show) == 0
    default = json.loads(capsys.readouterr().out)[0]
    assert main([*show, "--offset", "5"]) == 0
    moved = json.loads(capsys.readouterr().out)[0]
    assert moved["tokens"] == default["tokens"]
    assert [m - d for d, m in zip(default["position_ids"], moved["position_ids"]) if d] == \
        [4] * sum(1 for d in default["position_ids"] if d)
    assert main(["task", "show", "parity", "--offset", "2"]) == 2
    assert "--offset: invalid value 2; task parity has no coupled position ids" in capsys.readouterr().err


def test_task_show_prints_each_field_of_multi_level_ids(capsys):
    assert main(["task", "show", "multiplication", "scratchpad=partial_products", "--n", "1", "--length", "2"]) == 0
    rows = {line.split()[0]: line.split()[1:] for line in capsys.readouterr().out.splitlines()[3:]}
    tokens = rows["token"]
    assert set(rows) >= {"position", "level", "shifted"}
    assert all(len(values) == len(tokens) for values in rows.values())
    first_product = tokens.index("=") + 1  # p_1's units digit: the significance of a's units, level 1
    assert rows["position"][first_product] == rows["position"][tokens.index("*") - 1]
    assert rows["level"][first_product] == "1"
    assert main(["task", "show", "addition", "--n", "1", "--length", "2"]) == 0
    assert "level" not in capsys.readouterr().out, "one-level ids print as one row"


def test_ctrl_c_leaves_a_run_that_resumes(data_dir):
    args = [sys.executable, "-m", "workbench", "train", *TINY[:-3], "train.steps=400000", "train.checkpoint_every=50",
            "probes.every=0", "--quiet"]
    env = {**os.environ, "WORKBENCH_DATA": str(data_dir)}
    process = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    status_files = []
    for _ in range(600):  # wait (bounded) until training has written its status
        status_files = list(Path(data_dir).glob("*/status.json"))
        if status_files and json.loads(status_files[0].read_text()).get("step", 0) > 0:
            break
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "resumes" in err
    status = json.loads(status_files[0].read_text())
    assert status["status"] == "interrupted" and status["step"] > 0
    assert (status_files[0].parent / "checkpoint.safetensors").exists()


def _subparsers(parser, path="workbench"):
    """(command path, parser) for `parser` and every parser under it."""
    import argparse

    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _subparsers(sub, f"{path} {name}")
    return found


def test_every_command_and_option_explains_itself_in_help():
    import argparse

    from workbench.cli import _parser
    from workbench.figures.export import FIGURES

    parser = _parser()
    silent = []
    for path, sub in _subparsers(parser):
        for action in sub._actions:
            if isinstance(action, argparse._SubParsersAction):
                silent += [f"{path} {choice.dest}" for choice in action._choices_actions if not choice.help]
            elif not action.help:
                silent.append(f"{path} {action.dest}")
    assert silent == []
    export = dict(_subparsers(parser))["workbench export"]
    export_help = next(a.help for a in export._actions if a.dest == "figure")
    assert all(figure in export_help for figure in FIGURES)


def test_a_closed_pipe_ends_the_command_quietly():
    """`workbench ... | head` closes stdout early: no traceback, just the shell's closed-pipe exit."""
    import subprocess
    import sys

    script = ("import sys, os\nfrom workbench.cli import main\nr, w = os.pipe()\nos.close(r)\n"
              "os.dup2(w, sys.stdout.fileno())\nsys.stdout = os.fdopen(sys.stdout.fileno(), 'w', buffering=1)\n"
              "sys.exit(main(['experiment', 'list']))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr and done.returncode == 141, done.stderr
