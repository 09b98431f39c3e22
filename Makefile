.PHONY: demo test bench setup

setup:
	bash scripts/setup.sh

# Install, run the demo study on the embedded model, write its report.
demo: setup
	.venv/bin/agora run studies/demo.toml --db runs/demo.db
	.venv/bin/agora report studies/demo.toml --db runs/demo.db --out reports/demo

# Install and run the tests.
test: setup
	.venv/bin/python -m pytest -q -p no:cacheprovider --durations=15

bench: setup
	.venv/bin/python benchmarks/run_all.py
