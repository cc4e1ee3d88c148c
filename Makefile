# The two commands in the README (make run, make test) set everything up themselves.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
# AWS's DynamoDB Local (npm package amplify-dynamodb-simulator, pinned and checksum-verified in
# dlpipe/local/dynamodb_local.py), installed on first use into an ignored folder.
DDB_LOCAL := .dlpipe/dynamodb-local/2.9.30/.installed
PYTEST_ARGS ?=
# pytest-xdist workers of `make test`: the suite mostly waits on emulators and child processes
# (2 workers kept 2 cores ~60 % busy). Measured side by side on 2 cores with other work beside
# them (load average 4-9): 2 workers 944 s of pytest, 4 workers 824 s, both green; 6 slower.
TEST_WORKERS ?= 4
# How xdist hands out the tests: a whole test file at a time, in the order tests/conftest.py
# sorts them (the long tiers first), to whichever worker is nearly idle. Its default sent each
# worker a quarter of its share at once, in collection order: the first worker got 206
# consecutive tests, nearly all of e2e (628 of the suite's 1,691 test-seconds), and the run
# lasted as long as e2e alone (636 s of pytest). A file at a time keeps each module's fixtures
# (the checkov scan, the Terraform evaluations, the browser) to one worker.
TEST_DIST ?= --dist loadfile --no-loadscope-reorder
UI_ARGS ?=
# `make coverage`: the same suite measuring branch coverage of dlpipe and the handlers, with
# their Python subprocesses (pyproject [tool.coverage]). `make test` leaves it out: measuring
# the Python subprocesses too makes the suite a third slower (16.5 min against 12.5 on 2 cores).
COVERAGE_ARGS ?=
# Python may cache compiled modules (ignored __pycache__ folders): with PYTHONDONTWRITEBYTECODE
# set, every test process and every CLI or worker subprocess a test starts compiled its ~1,000
# modules again, and pytest rewrote every test module's asserts again in each xdist worker.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: run test coverage lint typecheck check soak bench bench-scale cost-table clean ui screenshots

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(DDB_LOCAL): $(STAMP)
	$(BIN)/python -m dlpipe.local.dynamodb_local install

## run: the main job on the embedded local stack (moto + DynamoDB Local, no Docker): the two feeds of
## dlpipe/local/feeds.local.toml at once, each on its own stub provider, key pair and token.
run: $(STAMP) $(DDB_LOCAL)
	$(BIN)/dlpipe run --local

## ui: the read-only web view on http://127.0.0.1:8765/ against the tables the environment names
## (AWS, or the local stack of `dlpipe local up` with its exports); UI_ARGS=--port 9000 etc.
ui: $(STAMP)
	$(BIN)/dlpipe ui $(UI_ARGS)

## screenshots: docs/img/*.png for the README (`make run`'s table, the web view's grid and a day),
## taken by Debian's chromium (apt-get install chromium chromium-driver) over the local stack.
screenshots: $(STAMP) $(DDB_LOCAL)
	$(BIN)/python scripts/screenshots.py

## test: the whole test suite (unit, integration against the emulator over HTTP, e2e), on
## TEST_WORKERS pytest-xdist workers (TEST_WORKERS=0: one process); then the IAM checker on
## the AWS calls every worker recorded (tests/iam/plugin.py).
test: $(STAMP) $(DDB_LOCAL) .venv-checkov/.installed-stamp
	$(BIN)/python -m pytest -n $(TEST_WORKERS) $(TEST_DIST) --iam-defer-check $(COVERAGE_ARGS) \
		$(PYTEST_ARGS)
	$(BIN)/python -m pytest -p no:cacheprovider tests/iam/test_iam_coverage.py \
		--iam-recording="$$(cat .dlpipe/iam/last-recording)"

## coverage: `make test` measuring branch coverage (a report of the lines and branches not run).
coverage:
	$(MAKE) test COVERAGE_ARGS="--cov --cov-report=term:skip-covered"

## lint: ruff, and the import contracts of pyproject.toml [tool.importlinter] (layers, no dev code in Lambda).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

## check: the fast tier: lint, types, and the unit and property tests that run in-process
## (fakes, pure logic; the conditions' property test on DynamoDB Local is make test's).
check: lint typecheck
	$(BIN)/python -m pytest -n $(TEST_WORKERS) -p no:cacheprovider -m "not integration" \
		tests/unit tests/property

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build dist *.egg-info

# --- infrastructure: checkov in its own virtualenv, Lambda packaging ---
CHECKOV_VERSION := 3.3.30
CHECKOV_VENV    := .venv-checkov

.PHONY: package checkov

# checkov pins many packages of its own, so it never shares .venv. The .gitignore keeps the
# virtualenv out of git (Python 3.13's venv writes one itself; 3.11 does not).
$(CHECKOV_VENV)/.installed-stamp: Makefile
	$(PYTHON) -m venv $(CHECKOV_VENV)
	printf '*\n' > $(CHECKOV_VENV)/.gitignore
	$(CHECKOV_VENV)/bin/python -m pip install --quiet checkov==$(CHECKOV_VERSION)
	touch $@

## checkov: security scan of terraform/ (tests/infra/test_checkov.py asserts the same in `make test`).
checkov: $(CHECKOV_VENV)/.installed-stamp
	$(CHECKOV_VENV)/bin/checkov -d terraform --framework terraform --compact --quiet --skip-download

## package: build/dlpipe-lambda.zip, the code of both Lambda functions plus their dependencies.
package: $(STAMP)
	$(BIN)/python scripts/package_lambda.py

## bench: speed, memory and AWS cost against baselines measured in the same run; writes BENCHMARKS.md
## (~14 min; BENCH_ARGS=--fast leaves out the 1 GiB data path, --quick is a smoke test to /tmp).
bench: $(STAMP) $(DDB_LOCAL)
	$(BIN)/python bench/run_all.py $(BENCH_ARGS)

## bench-scale: the orchestration of a large day (listing, fan-out, completion checks) at
## SCALE_FILES files (default 10,000 then 100,000), figures printed; `SCALE_FILES=10000` for one size.
SCALE_FILES ?= 10000,100000
bench-scale: $(STAMP) $(DDB_LOCAL)
	$(BIN)/python bench/orchestration_scale.py --files $(SCALE_FILES) $(SCALE_ARGS)

## cost-table: the AWS cost of a day at 10-100,000 files from the measured units (BENCHMARKS.md).
cost-table: $(STAMP)
	$(BIN)/python bench/cost_table.py $(COST_ARGS)

## soak: the long reliability scenarios (marker `soak` in tests/reliability; RELIABILITY.md has the figures).
soak: $(STAMP) $(DDB_LOCAL)
	$(BIN)/python -m pytest -m soak -p no:cacheprovider tests/reliability
