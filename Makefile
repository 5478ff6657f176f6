# The two commands of the README: `make demo` and `make test`. Both set everything up first.
.PHONY: setup demo test lint dev clean

export MUJOCO_GL ?= egl

setup:
	@bash scripts/setup.sh

demo: setup
	.venv/bin/policyforge demo

test: setup
	.venv/bin/ruff check .
	.venv/bin/mypy
	.venv/bin/python -m pytest -q -n 3 --dist loadfile --no-loadscope-reorder --durations=25

lint: setup
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy

dev: setup
	.venv/bin/policyforge dev

clean:
	rm -rf .venv *.egg-info .pytest_cache .ruff_cache .mypy_cache demo-output runs
