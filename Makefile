# Two commands for a fresh machine with python3 and make: `make plan` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.requirements-installed
STACK ?= dev
# Checkov (tests/test_cis.py) cannot share .venv: it pins packaging<24, which pulumi and pytest exclude.
CHECKOV_VENV := .venv-checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.requirements-installed

.PHONY: plan test policy snapshots bench clean

# (Re)build the virtualenv whenever requirements.txt is newer than the last install.
$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

$(CHECKOV_STAMP): requirements-checkov.txt
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-checkov.txt
	touch $@

plan: $(STAMP)
	$(BIN)/python -m plan $(STACK)

test: $(STAMP) $(CHECKOV_STAMP)
	CHECKOV=$(CURDIR)/$(CHECKOV_VENV)/bin/checkov $(BIN)/python -m pytest -q

# The policy pack's rules over the offline plan (docs/policy.md); non-zero on a mandatory violation.
policy: $(STAMP)
	$(BIN)/python -m plan $(STACK) --policy-pack policy

# Refresh the committed plan snapshots after an intended change; review the diff before committing.
snapshots: $(STAMP)
	$(BIN)/python -m pytest -q tests/test_snapshots.py --update-snapshots

# Plan synthetic stacks of 1 to 512 slices against the bare-SDK floor (docs/benchmarks.md).
bench: $(STAMP)
	$(BIN)/python -m benchmarks $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(CHECKOV_VENV) .pytest_cache
