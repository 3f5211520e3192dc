# The entry points of the README. Each creates its own virtual environment.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test readme-test lint bench bench-sweep clean notebooks notebooks-test notebooks-strip lessons

$(BIN)/tiersim: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,bench,sweep,measure,lqn]'
	# compile the compiled engine's loop once now, not at first use: minutes of one core,
	# announced, with a line every few seconds while it runs
	$(BIN)/python -m sim.engines.compiled.warm
	touch $@

demo: $(BIN)/tiersim
	$(BIN)/tiersim run models/demo.toml
	@echo
	@echo "tiersim is installed in $(VENV). To use it, activate the environment in your shell:"
	@echo "    . $(VENV)/bin/activate        (then: tiersim --help; deactivate to leave it)"
	@echo "or call it by its path: $(BIN)/tiersim run models/demo.toml"

test: $(BIN)/tiersim
	$(BIN)/python -m pytest -q

# The long studies kept out of `make test` (marked slow: a spike on an autoscaled group, ...),
# minutes; CI runs them after the default suite.
slow-test: $(BIN)/tiersim
	$(BIN)/python -m pytest -q -m slow

# Every command of the README typed as written, the long ones too (calibrations, capacity
# searches, a sweep: minutes); `make test` runs the rest.
readme-test: $(BIN)/tiersim
	TIERSIM_README_ALL=1 $(BIN)/python -m pytest -q tests/cli/test_readme.py

# The gates of CONTRIBUTING.md: zero findings from each; lint-imports checks the layers
# contract of pyproject's [tool.importlinter]
lint: $(BIN)/tiersim
	$(BIN)/ruff check sim tests bench experiments
	$(BIN)/ruff format --check sim tests bench experiments
	$(BIN)/mypy
	$(BIN)/lint-imports

# The lessons: JupyterLab, widgets and nbclient in the same environment (the notebooks extra).
$(VENV)/.notebooks: $(BIN)/tiersim
	$(BIN)/pip install --quiet -e '.[test,bench,sweep,measure,lqn,notebooks]'
	touch $@

notebooks: $(VENV)/.notebooks
	$(BIN)/jupyter lab notebooks/

# The lessons as pages, for a lecturer: controls and figures, no code (Voilà, on 127.0.0.1:8866).
lessons: $(VENV)/.notebooks
	$(BIN)/python notebooks/serve.py notebooks/lessons

# Every notebook executed top to bottom in a kernel, each asserting the effect it teaches; and
# every notebook opened as the page `make lessons` serves, in headless Chromium (Debian's
# package: apt-get install chromium), its controls moved and Run pressed.
notebooks-test: $(VENV)/.notebooks
	$(BIN)/python -m pytest -q -m notebooks

notebooks-strip: $(VENV)/.notebooks
	$(BIN)/python notebooks/strip.py

bench: $(BIN)/tiersim
	$(BIN)/python bench/run_bench.py

bench-sweep: $(BIN)/tiersim
	$(BIN)/python bench/sweep_bench.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
