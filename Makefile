# The two commands of the README. Each prepares the machine first (scripts/setup.sh).
.PHONY: main test setup lint types docs bench

setup:
	@bash scripts/setup.sh

# The main job: a PySpark pipeline on a local-disk Delta table.
main: setup
	@.venv/bin/python examples/main_job.py

# The whole test suite (what CI runs).
test: setup
	@.venv/bin/python -m pytest $(PYTEST_ARGS)

lint: setup
	@.venv/bin/ruff check deltalog tests examples bench

types: setup
	@.venv/bin/mypy

docs: setup
	@.venv/bin/mkdocs build --strict

bench: setup
	@.venv/bin/python -m bench $(BENCH_ARGS)
