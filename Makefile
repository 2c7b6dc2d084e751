# langmem-cog: make demo | make test | make bench | make models-mpnet
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
CLI := $(VENV)/bin/langmem-cog
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export ANONYMIZED_TELEMETRY := False
export TOKENIZERS_PARALLELISM := false

.PHONY: setup demo test lint bench bench-mpnet models-mpnet clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# torch first: the CPU wheel on this machine; a bare requirement would pull a CUDA build.
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e ".[dev]"
	touch $(STAMP)

demo: setup
	$(CLI) demo

lint: setup
	$(VENV)/bin/ruff check langmem_cog tests

test: lint
	$(VENV)/bin/pytest -q

bench: setup
	$(CLI) bench locomo --system hybrid --out results/locomo-hybrid-minilm.json --rows results/locomo-hybrid-minilm.jsonl

models-mpnet: setup
	$(CLI) models install mpnet

bench-mpnet: models-mpnet
	$(CLI) bench locomo --system dense --embedder mpnet --out results/locomo-dense-mpnet.json --rows results/locomo-dense-mpnet.jsonl

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache .hypothesis
