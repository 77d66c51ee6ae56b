# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: venv lock demo up test quick-pass test-dev-server bench bench-quick bench-peers bench-summary bench-scale clean drills drill-cancel drill-temporal-restart drill-duplicate-storm \
        drill-worker-crash drill-postgres-restart drill-forge-outage console-screenshots

# The venv is the lock: every package pinned with hashes (runtime + the `dev` and `bench` extras; `dev`
# pins the build backend setuptools/wheel too), then this checkout itself without resolving anything
# again and without build isolation (built with the locked setuptools: no index is asked at build time).
$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements.lock
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(STAMP)

venv: $(STAMP)

PIP_TOOLS := var/pip-tools
lock:  ## re-pin requirements.lock from pyproject.toml (pip-tools from the package mirror pip is configured with)
	@test -x $(PIP_TOOLS)/bin/pip-compile || { $(PYTHON) -m venv $(PIP_TOOLS) && $(PIP_TOOLS)/bin/pip install --quiet pip-tools==7.6.2; }
	$(PIP_TOOLS)/bin/pip-compile --quiet --extra dev --extra bench --generate-hashes --strip-extras --allow-unsafe \
	    --no-emit-index-url --no-emit-find-links -o requirements.lock pyproject.toml

demo: venv  ## start the embedded stack, play the webhook stream, check invariants, stop
	$(PY) -m demo

up: venv  ## bring the same stack up until Ctrl-C (Temporal UI on :8233)
	$(PY) -m sluicegate.devstack

test: venv  ## whole suite on the time-skipping server, then workflow tests on the dev server (drills and benches: quick-pass)
	$(PY) -m pytest -m "not quick_pass"
	$(PY) -m pytest --temporal-env local tests/workflows

quick-pass: venv  ## every drill and bench at its --quick size, checking verification (CI runs it after `make test`)
	$(PY) -m pytest -m quick_pass

drill-cancel: venv  ## operator cancel (Temporal CLI and starter.py cancel) on a throwaway stack
	$(PY) starter.py drill cancel

drill-temporal-restart: venv  ## the Temporal dev server restarted while reviews run
	$(PY) starter.py drill temporal-restart

drill-duplicate-storm: venv  ## 1,000 signed deliveries (redeliveries, duplicates) for 50 PRs, 32 in flight
	$(PY) starter.py drill duplicate-storm

drill-worker-crash: venv  ## the worker SIGKILLed between effect and checkpoint 8 times during a 40-PR stream
	$(PY) starter.py drill worker-crash

drill-postgres-restart: venv  ## a private PostgreSQL ledger restarted mid-stream (the machine's cluster untouched)
	$(PY) starter.py drill postgres-restart

drill-forge-outage: venv  ## the forge answers 503 for 2 minutes during a 500-delivery stream
	$(PY) starter.py drill forge-outage

drills: drill-cancel drill-temporal-restart drill-duplicate-storm drill-worker-crash drill-postgres-restart \
        drill-forge-outage  ## every one-command drill at full size (`make test` runs the --quick sizes through tests/e2e)

console-screenshots: venv  ## re-take docs/console/*.png: the console's browser tests on a throwaway stack
	SLUICEGATE_CONSOLE_SCREENSHOTS_DOCS=1 $(PY) -m pytest -q tests/console/test_browser_read.py tests/console/test_browser_write.py

BENCHES := intake_bench loop_bench mixed_stream capacity_bench peers_bench scale_bench

bench: venv  ## the full intake bench: intake vs. bare baselines (exit 1 only when a verification fails)
	@$(PY) -m bench.intake_bench $(BENCH_ARGS)

bench-peers: venv  ## one duplicate storm to Sluicegate, naive Temporal and DBOS side by side (docs/performance.md)
	@$(PY) -m bench.peers_bench $(BENCH_ARGS)

bench-summary: venv  ## issue 11's proof: the intake, loop and peers benches in one run, one table of ratios vs targets
	@$(PY) -m bench.summary $(BENCH_ARGS)

bench-scale: venv  ## scale-out curve on a private PostgreSQL database: 1, 2, 4 API processes, 1-2 workers, 10,000 deliveries per step
	@$(PY) -m bench.scale_bench $(BENCH_ARGS)

bench-quick: venv  ## every bench with --quick: checks each measurement's verification, not speed
	@set -e; for b in $(BENCHES); do echo "== $$b --quick"; $(PY) -m bench.$$b --quick $(BENCH_ARGS); done

clean:
	rm -rf var .pytest_cache .hypothesis
