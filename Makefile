# Two commands: `make run` (main job on embedded defaults) and `make test`.
# Both bootstrap .venv on first use and re-use it afterwards.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Offline data folder beside the checkout (development and CI); an explicit SWECL_DATA_DIR wins.
SHARED_DATA := $(abspath ../shared/data)
export SWECL_DATA_DIR ?= $(if $(wildcard $(SHARED_DATA)/swe-bench-verified.jsonl),$(SHARED_DATA),)
export MPLBACKEND ?= Agg
export TOKENIZERS_PARALLELISM ?= false

.PHONY: run test install sysdeps export clean-venv docs

$(STAMP): settings.ini setup.py pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@# torch first, pinned: the CPU wheel is local, an unpinned torch pulls a multi-GB CUDA build.
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e ".[dev,memory,llm]"
	@touch $@

sysdeps:
	@bash scripts/sysdeps.sh

install: $(STAMP) sysdeps

run: install
	$(BIN)/swecl run --plan offline --out results
	$(BIN)/swecl report --results results --out reports

test: install
	$(BIN)/python scripts/run_tests.py

export: install
	$(BIN)/nbdev_clean && $(BIN)/nbdev_export

# The docs site in _docs/: nbdev_docs renders every notebook with quarto (nbs/index.ipynb is the landing page; the
# hand-written README.md is left alone, see readme_nb in settings.ini). quarto is the `docs` extra (PyPI's quarto-cli):
# its install downloads the quarto binary once, after which the site builds offline.
docs: install
	@test -x $(BIN)/quarto || $(BIN)/python -m pip install -q -e ".[docs]"
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/nbdev_docs

clean-venv:
	rm -rf $(VENV)
