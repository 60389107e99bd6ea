# Two entry points: `make run` (default experiment) and `make test` (fast suite).
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
# The `acl` command (docs/cli.md), installed by setup
ACL := $(VENV)/bin/acl
STAMP := $(VENV)/.installed

.PHONY: run test test-slow bench toy-bandit benchmark-quick lint setup clean

setup: $(STAMP)

$(STAMP): setup.cfg pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) on PATH"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Random vs ALP-GMM on point_reach's mostly unfeasible space (docs/results/point_reach.md).
run: $(STAMP)
	$(ACL) run --config experiments/configs/point_reach_unfeasible_random.yaml --out runs/make_run/random
	$(ACL) run --config experiments/configs/point_reach_unfeasible_alp_gmm.yaml --out runs/make_run/alp_gmm
	$(ACL) compare runs/make_run/random runs/make_run/alp_gmm --out runs/make_run

# The package graph contracts ([importlinter] in setup.cfg) first: they take a second.
# loadscope keeps a module's tests on one worker, so its module fixtures run once.
test: $(STAMP)
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -q -m "not slow" -n auto --dist loadscope

test-slow: $(STAMP)
	$(PY) -m pytest -q -m slow -n auto

# PPO's throughput, then ALP-GMM's overhead against Random on the CartPole config
# (bench-teachers' defaults) (docs/results/speed.md).
bench: $(STAMP)
	$(ACL) bench-ppo --out runs/bench_ppo.json
	$(ACL) bench-teachers --out runs/bench_teachers.json

toy-bandit: $(STAMP)
	$(ACL) toy-bandit --out runs/toy_bandit

benchmark-quick: $(STAMP)
	$(ACL) benchmark --suite quick --out runs/benchmark_quick

lint: $(STAMP)
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) runs .pytest_cache
