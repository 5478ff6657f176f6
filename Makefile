# The README's commands: `make demo`, `make test` (the fast tier) and `make check` (the whole
# suite, what CI runs). Each sets everything up first.
.PHONY: setup demo test check lint dev clean

export MUJOCO_GL ?= egl

# Three processes on 2 cores: many end-to-end tests wait (a heartbeat timeout, a server coming
# back), and a third process fills that time. One file's tests stay in one process, the slowest
# files first (tests/conftest.py).
PYTEST = .venv/bin/python -m pytest -n 3 --dist loadfile --no-loadscope-reorder

setup:
	@bash scripts/setup.sh

demo: setup
	.venv/bin/policyforge demo

# The fast tier: every test not marked slow, a budget of 20 s each (offenders listed at the end).
test: setup
	$(PYTEST) -q -m "not slow" --durations=25

# Lint, types, then every test (both tiers) with branch coverage per package. mypy (about a
# minute of one core) runs niced beside pytest, in the CPU that the suite's waits leave idle; its
# report follows pytest's, and either failing fails the check.
check: setup
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	@mkdir -p test-output
	nice -n 10 .venv/bin/mypy > test-output/mypy.log 2>&1 & mypy=$$!; \
	$(PYTEST) -q --durations=25 --cov --cov-report=json:test-output/coverage.json --cov-report=; \
	tests=$$?; wait $$mypy; types=$$?; echo "mypy:"; cat test-output/mypy.log; \
	[ $$tests -eq 0 ] && [ $$types -eq 0 ]
	.venv/bin/python scripts/coverage_by_package.py test-output/coverage.json

lint: setup
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy

dev: setup
	.venv/bin/policyforge dev

clean:
	rm -rf .venv *.egg-info .pytest_cache .ruff_cache .mypy_cache demo-output runs test-output
