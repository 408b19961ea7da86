# The two commands of the README. Each prepares the machine first (scripts/setup.sh).
.PHONY: main test setup lint types docs bench

setup:
	@bash scripts/setup.sh

# The main job: a PySpark pipeline on a local-disk Delta table.
main: setup
	@.venv/bin/python examples/main_job.py

# The whole test suite (what CI runs): one worker per core of CI's two, each test file whole on one
# worker (its Spark session and servers are shared by its tests). TEST_WORKERS=0 runs in one process.
TEST_WORKERS ?= 2
test: setup
	@.venv/bin/python -m pytest -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

lint: setup
	@.venv/bin/ruff check deltalog tests examples bench

types: setup
	@.venv/bin/mypy

docs: setup
	@.venv/bin/mkdocs build --strict

bench: setup
	@.venv/bin/python -m bench $(BENCH_ARGS)
