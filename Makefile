# Two commands a newcomer needs: `make demo` and `make test`. Both build .venv first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test install bench eval clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# The CPU build of torch on this machine; an unpinned torch pulls a multi-GB CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/policydesk demo

# --durations=25: the slowest 25 tests, printed at the end of every CI run.
test: $(STAMP)
	$(BIN)/python -m pytest -q --durations=25

eval: $(STAMP)
	$(BIN)/policydesk eval

bench: $(STAMP)
	$(BIN)/policydesk bench

clean:
	rm -rf $(VENV) .policydesk
