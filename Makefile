# The two commands a new user needs: `make demo` and `make test`. Both set everything up first.
.PHONY: setup demo test lint bench docs

setup:
	@bash scripts/setup.sh

demo: setup
	@bash scripts/demo.sh

# The test build treats compiler warnings in the native core as errors, and builds the docs site
# (mkdocs.yml, docs/) with warnings as errors. (Not with -q: mkdocs 1.6 then ignores --strict.)
test: export LATENTCHESS_WERROR = 1
test: setup
	.venv/bin/ruff check src tests benchmarks
	NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict
	.venv/bin/python -m pytest -q

lint: setup
	.venv/bin/ruff check src tests benchmarks
	.venv/bin/ruff format --check src tests benchmarks

# The documentation site (docs/, mkdocs.yml) at http://127.0.0.1:8001/; `make test` builds it into
# site/ with warnings as errors.
docs: setup
	NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs serve -a 127.0.0.1:8001
