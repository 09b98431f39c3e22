.PHONY: demo test bench setup

setup:
	bash scripts/setup.sh

# Install, run the demo study on the embedded model, write its report.
demo: setup
	.venv/bin/agora run studies/demo.toml --db runs/demo.db
	.venv/bin/agora report studies/demo.toml --db runs/demo.db --out reports/demo

# Install and run the tests: three worker processes (pytest-xdist; on 2 cores a third fills the
# time the others wait on servers, browsers and timeouts), each test file whole on one
# worker (its module-scoped fixtures built once), the slowest files first (tests/conftest.py,
# HEAVY_FIRST); the 15 slowest tests listed at the end.
test: setup
	.venv/bin/python -m pytest -q -p no:cacheprovider -n 3 --dist loadfile --no-loadscope-reorder --durations=15

bench: setup
	.venv/bin/python benchmarks/run_all.py
