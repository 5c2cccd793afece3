# The two commands a new user needs: `make demo` and `make test`. Both set everything up first.
.PHONY: setup demo test lint bench

setup:
	@bash scripts/setup.sh

demo: setup
	@bash scripts/demo.sh

# The test build treats compiler warnings in the native core as errors.
test: export LATENTCHESS_WERROR = 1
test: setup
	.venv/bin/ruff check src tests benchmarks
	.venv/bin/python -m pytest -q

lint: setup
	.venv/bin/ruff check src tests benchmarks
	.venv/bin/ruff format --check src tests benchmarks
