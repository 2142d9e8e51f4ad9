# workbench: the two commands are `make app` and `make test`.
#
# Every target first makes sure the system packages are there (`make system`: Chromium and fonts,
# installed with apt-get when it can, else one line naming the command to run) and that the
# virtual environment in .venv is installed; it is built once and rebuilt only when
# pyproject.toml changes (the stamp file .venv/.installed records that).

PY ?= python3
VENV = .venv
BIN = $(VENV)/bin
# The tested PyTorch, installed on its own first: pyproject.toml only asks for torch>=2.1, so the
# editable install below keeps this version instead of resolving a newer (CUDA, several GB) one.
# TORCH_PIP_ARGS passes pip options for that one install, e.g. another package index.
TORCH_SPEC ?= torch==2.13.0
TORCH_PIP_ARGS ?=
ARTIFACTS = artifacts

.PHONY: all system setup app test bench demo clean-artifacts
all: test

# --- set-up ----------------------------------------------------------------------------------
# system: Chromium (figure export, browser tests), fonts, CA certificates, python3-venv; returns at
# once when they are there (scripts/system-packages.sh says what and why).
system:
	@PY=$(PY) scripts/system-packages.sh

setup: $(VENV)/.installed

# `| system`: the system packages come first (python3-venv before the venv), checked on every make
# but never a reason to rebuild the venv.
$(VENV)/.installed: pyproject.toml | system
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/pip install $(TORCH_SPEC) $(TORCH_PIP_ARGS)
	$(BIN)/pip install -e '.[test,kernels,ray,interop]'
	touch $@

# --- the dashboard ---------------------------------------------------------------------------
# Serves http://127.0.0.1:8501 until interrupted.
app: $(VENV)/.installed
	$(BIN)/workbench app

# --- tests -----------------------------------------------------------------------------------
# WORKBENCH_FAST=1   notebooks and slow tests shrink their training runs
# TRITON_INTERPRET=1 Triton kernels run on the CPU through Triton's interpreter (only where there
#                    is no CUDA device: on a GPU the same tests run natively)
# WORKBENCH_DATA     a fresh run store under artifacts/, so notebooks never reuse runs from an
#                    earlier test run or from the user's own store
# --nbval            every notebook is executed and its outputs compared with the stored ones,
#                    after the masks in tests/nbval_sanitize.cfg (timings, addresses, progress
#                    bars, run ids, temp paths); cells tagged nbval-ignore-output (cell metadata, out of the
#                    students' sight) are run only
# --nbval-current-env  notebooks run in this venv's Python, whatever kernel they name
# Results: artifacts/junit.xml, plus screenshots and figures the tests write to artifacts/.
# First, `workbench experiment report --check`: every shipped result in data/results/ must still
# describe what the code computes (its canary, the exact metrics of its first run's first steps,
# recomputed: bit for bit on a machine that recorded it, only the metrics before the first update on
# another CPU), so a change to the training arithmetic cannot land without rerunning the experiments
# it invalidates. `workbench experiment report --check --record-machine` adds a machine's copy.
PYTEST_ARGS ?=
test: $(VENV)/.installed
	$(BIN)/workbench experiment report --check
	rm -rf $(ARTIFACTS)/test-store
	mkdir -p $(ARTIFACTS)/test-store
	WORKBENCH_FAST=1 WORKBENCH_DATA=$(CURDIR)/$(ARTIFACTS)/test-store MPLBACKEND=Agg \
	TRITON_INTERPRET=$$($(BIN)/python -c "import torch; print(0 if torch.cuda.is_available() else 1)") \
	$(BIN)/python -m pytest \
		--nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
		--junitxml=$(ARTIFACTS)/junit.xml \
		$(PYTEST_ARGS)

# --- benchmarks and demo runs ----------------------------------------------------------------
bench: $(VENV)/.installed
	@if [ -f benchmarks/run_all.py ]; then \
		$(BIN)/python benchmarks/run_all.py; \
	else \
		echo "benchmarks/run_all.py does not exist yet; nothing to run"; \
	fi

demo: $(VENV)/.installed
	$(BIN)/workbench demo build

clean-artifacts:
	rm -rf $(ARTIFACTS)
