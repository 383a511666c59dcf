# Contributor tasks. `make test` is what CI runs (tests/run.sh installs Debian packages and a venv).
PY ?= .venv/bin/python
export PATH := $(CURDIR)/.venv/bin:$(PATH)

.PHONY: venv test test-fast lint format regen check-regen

venv:            ## a virtualenv with ncclgen and everything the tests need
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q -c tests/constraints.txt -e ".[test,bench,dev]"

test:            ## every test: installs Slurm/munge/numactl/shellcheck when run as root (tests/run.sh)
	bash tests/run.sh

test-fast: venv  ## no Slurm cluster, no Ray, no torchrun: seconds, for the edit loop
	$(PY) -m pytest -q -m "not slurm and not slow"

lint: venv       ## ruff (lint + format check), mypy and the radon targets, as CI runs them (tests/test_habits.py)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m pytest -q -p no:cacheprovider tests/test_habits.py

format: venv
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

regen: venv      ## goldens, docs and examples in one step; review `git diff` before committing
	$(PY) tools/compile_templates.py
	$(PY) tools/compile_data.py
	$(PY) tools/compact_jobside.py
	$(PY) tools/compile_triage.py
	$(PY) tools/gendocs.py
	PYTHON=$(PY) bash examples/regen.sh
	NCCLGEN_REGEN_GOLDEN=1 $(PY) -m pytest -q -k golden

check-regen: regen
	git diff --exit-code -- docs examples tests/golden ncclgen/render/compiled ncclgen/load/compiled ncclgen/jobside/compacted.py ncclgen/triage/compiled.py
