"""Workbench models in and out of Hugging Face transformers: every exportable configuration gives
the same logits in transformers (1,000 random inputs, float32, within 1e-4) and comes back through
import with identical logits; refused configurations exit 2 with one line; local transformers
models of the supported architectures import as runs the probes and the dashboard can read.

Nothing is downloaded: models are built from configs with random weights and saved to tmp_path.
Tests that need the interop extra skip without it; the refusals and the "install the extra" message
need no extra at all."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from interop_models import MAMBA_SCALE, extra_or_skip, hf_logits, random_inputs, saved, stored_run
from workbench.analysis import load_model
from workbench.cli import main
from workbench.store import open_run

PAGES = Path(__file__).resolve().parent.parent / "app" / "pages"
TOLERANCE = 1e-4  # float32 logits, workbench vs transformers


@pytest.fixture
def transformers():
    return extra_or_skip("transformers")


# Mamba's own block (no positions, RMSNorm, no MLP), with weights of a size float32 computes well (interop_models)
MAMBA_BLOCK = dict(mixer="mamba", pos="nope", norm="rmsnorm", mlp_ratio=0, scale=MAMBA_SCALE)
EXPORTABLE = {  # id -> (model options, the transformers class that computes it)
    "learned-relu": (dict(pos="learned", activation="relu"), "GPT2LMHeadModel"),
    "learned-gelu-odd-mlp": (dict(pos="learned", activation="gelu", mlp_ratio=2.5, n_heads=4), "GPT2LMHeadModel"),
    "nope-silu": (dict(pos="nope", activation="silu"), "GPT2LMHeadModel"),
    "sinusoidal-gelu_tanh": (dict(pos="sinusoidal", activation="gelu_tanh"), "GPT2LMHeadModel"),
    "learned-sigma_reparam": (dict(pos="learned", sigma_reparam=True), "GPT2LMHeadModel"),
    "rope-relu": (dict(pos="rope", activation="relu"), "GPTNeoXForCausalLM"),
    "rope-gelu-4-heads": (dict(pos="rope", activation="gelu", n_heads=4), "GPTNeoXForCausalLM"),
    "rope-silu-odd-head": (dict(pos="rope", activation="silu", d_model=36, n_heads=4), "GPTNeoXForCausalLM"),
    "mamba": (dict(MAMBA_BLOCK, d_state=8), "MambaForCausalLM"),
    "mamba-rank1-conv3-expand3": (dict(MAMBA_BLOCK, d_model=16, d_state=4, d_conv=3, expand=3), "MambaForCausalLM"),
}
REFUSED = {  # id -> (overrides, the field the one-line error names)
    "alibi": (dict(pos="alibi"), "model.pos"),
    "coupling": (dict(pos="coupling"), "model.pos"),
    "abacus": (dict(pos="abacus"), "model.pos"),
    "fire": (dict(pos="fire"), "model.pos"),
    "randomized": (dict(pos="randomized"), "model.pos"),
    "mamba-layernorm": (dict(MAMBA_BLOCK, norm="layernorm"), "model.norm"),
    "mamba-mlp": (dict(MAMBA_BLOCK, mlp_ratio=4), "model.mlp_ratio"),
    "mamba-learned": (dict(MAMBA_BLOCK, pos="learned"), "model.pos"),
    "attention-rmsnorm": (dict(norm="rmsnorm"), "model.norm"),
    "attention-no-mlp": (dict(mlp_ratio=0), "model.mlp_ratio"),
    "s4d": (dict(mixer="s4d", pos="nope", norm="rmsnorm", mlp_ratio=0), "model.mixer"),
    "lstm": (dict(mixer="lstm", pos="nope"), "model.mixer"),
    "hybrid": (dict(layers="attention,mamba", pos="rope"), "model.layers"),
    "topk": (dict(activation="topk", topk=4), "model.activation"),
    "logit_scaling": (dict(logit_scaling=True), "model.logit_scaling"),
    "scalable_softmax": (dict(scalable_softmax=True), "model.scalable_softmax"),
    "clipped": (dict(softmax="clipped"), "model.softmax"),
    "bidirectional": (dict(bidirectional=True), "model.bidirectional"),
    "looped": (dict(looped=True, loop_injection=True), "model.looped"),
}


# --- export, then import: every exportable configuration -----------------------------------------
@pytest.mark.parametrize("name", list(EXPORTABLE))
def test_exported_model_computes_the_same_logits_and_comes_back_exactly(name, data_dir, tmp_path, transformers):
    from workbench import export_model, import_model

    options, hf_class = EXPORTABLE[name]
    run = stored_run(data_dir, **options)
    out = export_model(run.run_id, tmp_path / "hf")
    hf_model = transformers.AutoModelForCausalLM.from_pretrained(out, local_files_only=True).eval()
    assert type(hf_model).__name__ == hf_class
    model, task = load_model(run)
    tokens = random_inputs(len(task.vocab))
    with torch.no_grad():
        ours = model(tokens)
    difference = float((ours - hf_logits(hf_model, tokens)).abs().max())
    assert difference <= TOLERANCE, f"{name}: max |logit difference| {difference:.3g}"
    assert float(ours.std()) > 1.0, "the random weights must spread the logits for the comparison to mean much"

    recorded = json.loads((out / "config.json").read_text())["workbench"]
    assert recorded["run_id"] == run.run_id and recorded["config"] == run.config().to_dict()
    assert "commit" in recorded and recorded["vocab"] == task.vocab.symbols

    imported = import_model(out)
    back, _ = load_model(imported)
    with torch.no_grad():
        assert torch.equal(back(tokens), ours), "the round trip must give identical logits"
    model_config = imported.config().model
    assert model_config.pos == options["pos"] and model_config.activation == options.get("activation", "relu")
    assert (model_config.norm, model_config.mlp_ratio) == (options.get("norm", "layernorm"),
                                                           options.get("mlp_ratio", model_config.mlp_ratio))
    assert imported.config().task.params["workbench_run"] == run.run_id
    assert import_model(out).run_id == imported.run_id  # the same folder is the same run


def test_export_model_and_import_model_on_the_command_line(data_dir, tmp_path, capsys, transformers):
    tiny = ["task.name=copy", "task.max_length=4", "model.n_layers=1", "model.d_model=16", "model.n_heads=2",
            "model.max_positions=32", "train.steps=10", "train.batch_size=8", "train.eval_samples=16",
            "probes.every=5", "probes.batch=4", "--quiet"]
    assert main(["train", *tiny]) == 0
    run_id = capsys.readouterr().out.split()[-1]
    out = tmp_path / "exported"
    assert main(["export-model", run_id, "--format", "hf", "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in out.iterdir()}
    tokenizer = transformers.AutoTokenizer.from_pretrained(out)
    assert tokenizer("^ a b =")["input_ids"] == [1, 3, 4, 13]  # the task's own ids
    assert main(["export-model", run_id, "--out", str(out)]) == 0  # an earlier export is replaced
    capsys.readouterr()
    assert main(["import-model", str(out)]) == 0
    imported = capsys.readouterr().out.strip()
    original, task = load_model(open_run(run_id))
    back, _ = load_model(open_run(imported))
    tokens = random_inputs(len(task.vocab), n=64)
    with torch.no_grad():
        assert torch.equal(back(tokens), original(tokens))


# --- refusals: one line, exit 2 ------------------------------------------------------------------
@pytest.mark.parametrize("name", list(REFUSED))
def test_a_configuration_no_architecture_computes_is_refused_in_one_line(name, data_dir, tmp_path, capsys):
    options, field = REFUSED[name]
    run = stored_run(data_dir, task="addition" if name in ("coupling", "abacus") else "copy", **options)
    assert main(["export-model", run.run_id, "--out", str(tmp_path / "never")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"error: {field}: ") and "cannot export" in line and "exportable:" in line
    assert "model.mixer=mamba with model.pos=nope, model.norm=rmsnorm and model.mlp_ratio=0" in line
    assert not (tmp_path / "never").exists()


def test_without_the_extra_the_commands_name_it(data_dir, tmp_path, capsys, monkeypatch):
    run = stored_run(data_dir, pos="learned")
    monkeypatch.setitem(sys.modules, "transformers", None)  # what an install without the extra looks like
    assert main(["export-model", run.run_id, "--out", str(tmp_path / "out")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "interop" in line and "pip install" in line
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "config.json").write_text("{}")
    (tmp_path / "folder" / "model.safetensors").write_bytes(b"")
    assert main(["import-model", str(tmp_path / "folder")]) == 2
    assert "interop" in capsys.readouterr().err


def test_export_refuses_a_folder_with_other_files(data_dir, tmp_path, capsys, transformers):
    run = stored_run(data_dir, pos="learned")
    (tmp_path / "notes.txt").write_text("mine")
    assert main(["export-model", run.run_id, "--out", str(tmp_path)]) == 2
    assert "--out" in capsys.readouterr().err and (tmp_path / "notes.txt").read_text() == "mine"


# --- import: local transformers models with random weights ---------------------------------------
GPT2 = dict(vocab_size=50, n_positions=48, n_embd=32, n_layer=2, n_head=4, bos_token_id=None, eos_token_id=None)
NEOX = dict(vocab_size=40, max_position_embeddings=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
            intermediate_size=80, use_parallel_residual=False, bos_token_id=None, eos_token_id=None,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 1.0})


MAMBA = dict(vocab_size=40, hidden_size=32, state_size=8, num_hidden_layers=2, expand=2, conv_kernel=4,
             bos_token_id=None, eos_token_id=None, pad_token_id=None)


@pytest.mark.parametrize("kind", ["gpt2-tied-gelu_new", "gpt2-relu", "neox-no-attention-bias", "mamba-tied",
                                  "mamba-untied-no-conv-bias"])
def test_a_local_transformers_model_imports_as_a_run_with_its_logits(kind, data_dir, tmp_path, transformers):
    from workbench import import_model

    if kind.startswith("gpt2"):
        activation = "gelu_new" if "gelu_new" in kind else "relu"
        hf_model, folder = saved(transformers, tmp_path, "GPT2Config", "GPT2LMHeadModel", activation_function=activation,
                                 tie_word_embeddings="tied" in kind, **GPT2)
    elif kind.startswith("neox"):
        hf_model, folder = saved(transformers, tmp_path, "GPTNeoXConfig", "GPTNeoXForCausalLM", attention_bias=False,
                                 hidden_act="gelu", **NEOX)
    else:  # MambaConfig ties lm_head to the embedding unless told otherwise
        hf_model, folder = saved(transformers, tmp_path, "MambaConfig", "MambaForCausalLM", scale=MAMBA_SCALE,
                                 tie_word_embeddings="untied" not in kind, use_conv_bias="no-conv-bias" not in kind,
                                 **MAMBA)
    run = import_model(folder)
    model, task = load_model(run)
    assert run.config().task.name == "imported" and len(task.vocab) == hf_model.config.vocab_size
    tokens = random_inputs(len(task.vocab), n=200, length=24)
    with torch.no_grad():
        difference = float((model(tokens) - hf_logits(hf_model, tokens)).abs().max())
    assert difference <= TOLERANCE
    status = run.status()
    assert status["status"] == "completed" and status["imported"]["architecture"] == hf_model.config.model_type
    # the probes ran once: attention entropies, or for Mamba (no attention, no MLP) the evaluation
    assert run.snapshot_steps() == [0] and ("exact_match" if "mamba" in kind else "entropy") in set(run.metrics().probe)
    if "mamba" in kind:
        model_config = run.config().model
        assert (model_config.mixer, model_config.norm, model_config.mlp_ratio, model_config.pos) == \
            ("mamba", "rmsnorm", 0, "nope")
        assert (model_config.d_state, model_config.d_conv, model_config.expand) == (8, 4, 2)


@pytest.mark.parametrize("kind, field", [("pythia-parallel-residual", "use_parallel_residual"),
                                         ("gpt2-eps", "layer_norm_epsilon"), ("mamba-in_proj-bias", "use_bias"),
                                         ("mamba-time_step_rank", "time_step_rank"), ("llama", "model_type")])
def test_an_import_the_workbench_cannot_compute_is_refused_in_one_line(kind, field, data_dir, tmp_path, capsys,
                                                                       transformers):
    if kind == "pythia-parallel-residual":
        _, folder = saved(transformers, tmp_path, "GPTNeoXConfig", "GPTNeoXForCausalLM",
                          **{**NEOX, "use_parallel_residual": True})
    elif kind == "gpt2-eps":
        _, folder = saved(transformers, tmp_path, "GPT2Config", "GPT2LMHeadModel", layer_norm_epsilon=1e-6, **GPT2)
    elif kind == "mamba-in_proj-bias":
        _, folder = saved(transformers, tmp_path, "MambaConfig", "MambaForCausalLM", use_bias=True, **MAMBA)
    elif kind == "mamba-time_step_rank":
        _, folder = saved(transformers, tmp_path, "MambaConfig", "MambaForCausalLM", time_step_rank=4, **MAMBA)
    else:
        _, folder = saved(transformers, tmp_path, "LlamaConfig", "LlamaForCausalLM", vocab_size=20, hidden_size=16,
                          intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, bos_token_id=None,
                          eos_token_id=None, pad_token_id=None)
    capsys.readouterr()  # save_pretrained's progress bar
    assert main(["import-model", str(folder)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"error: {field}: ") and "cannot import" in line
    assert not any(data_dir.iterdir())


def test_pickled_weights_are_never_loaded(data_dir, tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    (tmp_path / "pytorch_model.bin").write_bytes(b"not read")
    assert main(["import-model", str(tmp_path)]) == 2
    assert "safetensors" in capsys.readouterr().err


# --- the dashboard on an imported run ------------------------------------------------------------
@pytest.mark.parametrize("page", ["Runs", "Attention", "Dynamics", "Length_generalization", "Memorization"])
def test_every_run_page_opens_on_an_imported_run(page, data_dir, tmp_path, monkeypatch, transformers):
    from streamlit.testing.v1 import AppTest

    from workbench import import_model
    from workbench.app_support import SELECTED_RUNS

    monkeypatch.setenv("WORKBENCH_DEMO", str(tmp_path / "no-demo"))
    _, folder = saved(transformers, tmp_path, "GPT2Config", "GPT2LMHeadModel", **GPT2)
    run = import_model(folder)
    app = AppTest.from_file(str(next(PAGES.glob(f"*_{page}.py"))), default_timeout=120)
    app.session_state[SELECTED_RUNS] = [run.run_id]
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    if page in ("Attention", "Dynamics"):  # the snapshot and probe rows the import recorded are drawn
        assert app.get("plotly_chart")
