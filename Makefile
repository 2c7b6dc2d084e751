# langmem-cog: make demo | make test | make bench | make models | make models-mpnet
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

MODELS_ARGS ?=
# Test processes (pytest-xdist): 2 for a 2-core machine; PYTEST_WORKERS=0 runs the suite in this process.
PYTEST_WORKERS ?= 2

.PHONY: models setup demo test reliability lint bench bench-chitchat bench-longmemeval scale bench-mpnet models-mpnet clean ui examples example-chatbot example-agent example-rag example-locomo

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# torch first: the CPU wheel on this machine; a bare requirement would pull a CUDA build.
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e ".[dev,ui-test]"
	touch $(STAMP)

demo: setup
	$(CLI) demo

ui: setup
	$(CLI) ui --demo

lint: setup
	$(VENV)/bin/ruff check langmem_cog tests examples benchmarks
	$(VENV)/bin/mypy langmem_cog

test: lint
	$(VENV)/bin/pytest -q -n $(PYTEST_WORKERS)

# Long reliability runs (isolation 10k queries, 50 SIGKILLs, threads/processes, fuzzing, workers sharing a graph
# in PostgreSQL: a throwaway loopback cluster, its URL in LMC_PG_URL) + a bounded load test.
RELIABILITY_PG_DIR ?= /tmp/langmem-cog-pg-reliability
RELIABILITY_PG_PORT ?= 55433
reliability: setup
	$(PIP) install -q -e ".[dev,postgres]"
	LMC_PG_URL=$$(sh benchmarks/pg_loopback.sh start $(RELIABILITY_PG_DIR) $(RELIABILITY_PG_PORT)) && export LMC_PG_URL && \
	  trap 'sh benchmarks/pg_loopback.sh stop $(RELIABILITY_PG_DIR)' EXIT && \
	  $(VENV)/bin/pytest -q -s -m reliability tests
	$(PY) benchmarks/load_test.py --seconds 60 --writers 2 --readers 4

# Examples (offline: the packaged MiniLM and a stand-in chat model; LMC_CHAT_MODEL=openai:gpt-4o-mini for a real one).
example-chatbot: setup
	$(PY) -m examples.chatbot --user alice --say "My dog is called Rex."
	$(PY) -m examples.chatbot --user alice --say "What is my dog called?"

example-agent: setup
	$(PY) -m examples.langgraph_agent --ask "What is Leo allergic to?"
	$(PY) -m examples.langgraph_agent --mode graph --ask "When did Maya run her first 10k?"

example-rag: setup
	$(PY) -m examples.rag_chain --ask "What is Maya's favourite book?"

example-locomo: setup
	$(PY) -m examples.locomo_replay --ask "What is Leo allergic to?" --qa 3

examples: example-chatbot example-agent example-rag example-locomo

bench: setup
	$(CLI) bench locomo --system hybrid --out results/locomo-hybrid-minilm.json --rows results/locomo-hybrid-minilm.jsonl

# The third labelled set (real two-person chats, docs/BENCHMARKS.md session 31): plain hybrid, then the default
# retriever with the shipped models (its input and the no-graph ranking beside it), paired against hybrid.
CHITCHAT := results/chitchat/chitchat.json
bench-chitchat: setup
	$(PIP) install -q "chitchat-dataset==0.9.0"
	$(PY) benchmarks/chitchat.py build --out $(CHITCHAT)
	$(CLI) bench locomo --system hybrid --split all --data $(CHITCHAT) --latency-sample 0 \
	  --out results/chitchat/hybrid.json --rows results/chitchat/hybrid.jsonl
	$(CLI) bench transfer --on locomo --data $(CHITCHAT) --pool-cache results/chitchat/pools.pkl \
	  --out 'results/chitchat/{system}.json' --rows 'results/chitchat/{system}.jsonl'
	$(CLI) bench compare results/chitchat/hybrid.jsonl results/chitchat/default.jsonl

# LongMemEval-S dev retrieval (the systems share one ingest; LME_ARGS=--resume continues a stopped run; see docs/BENCHMARKS.md).
bench-longmemeval: setup
	$(CLI) bench longmemeval --max-seq-length 128 --system dense bm25 hybrid hybrid-rrf augmented-untrained \
	  --out 'results/lme233/{system}.json' --rows 'results/lme233/{system}.jsonl' \
	  --embedding-cache results/cache/lme-minilm128.npz $(LME_ARGS)
	$(CLI) bench compare results/lme233/dense.jsonl results/lme233/hybrid.jsonl

# Scale: embedded Chroma vs `chroma run` on loopback, graph snapshots in files vs PostgreSQL
# (a throwaway cluster from Debian's postgresql package on loopback; never part of `make test`).
SCALE_TURNS ?= 1000 10000 100000
PG_DIR ?= /tmp/langmem-cog-pg
PG_PORT ?= 55432
scale: setup
	$(PIP) install -q -e ".[dev,postgres,bench]"
	PG_URL=$$(sh benchmarks/pg_loopback.sh start $(PG_DIR) $(PG_PORT)) && \
	  trap 'sh benchmarks/pg_loopback.sh stop $(PG_DIR)' EXIT && \
	  $(CLI) bench scale --turns $(SCALE_TURNS) --start-server --graph-store-turns 1000 5000 \
	    --postgres-url "$$PG_URL" --out results/scale-minilm.json --plot docs/scale.png

# The shipped cascade models from ../shared/data (LoCoMo + LongMemEval-S dev); MODELS_ARGS=--lme-limit 80 for a
# shorter run, --datasets locomo (or longmemeval) --out DIR for a leave-one-dataset-out check, --fusion-only to
# refit the fusion scorer alone and keep the cross-encoder and blend (docs/BENCHMARKS.md).
models: setup
	$(CLI) train-models --out langmem_cog/models --work-dir results/models-work --pool-cache-dir results/cache $(MODELS_ARGS)

models-mpnet: setup
	$(CLI) models install mpnet

bench-mpnet: models-mpnet
	$(CLI) bench locomo --system dense --embedder mpnet --out results/locomo-dense-mpnet.json --rows results/locomo-dense-mpnet.jsonl

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache .hypothesis
