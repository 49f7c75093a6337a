# fmcluster: `make synth`, `make test` and `make lint` do ALL set-up themselves (venvs, pip, npm ci).
# Needs only Python 3.11, Node and the package registries.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PCLUSTER_VENV := .venv-pcluster
BLUEPRINT ?= blueprints/default.yaml
# Where make synth writes the cloud assembly; emptied first so it holds only $(BLUEPRINT)'s stacks.
CDK_OUT ?= cdk.out
# jsii prints a Node 20 end-of-life banner on every import; the CDK CLI's SDK warns too.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export NODE_NO_WARNINGS := 1
export CDK_DISABLE_VERSION_CHECK := 1
export PATH := $(CURDIR)/$(VENV)/bin:$(CURDIR)/node_modules/.bin:$(PATH)

.PHONY: setup synth test plan lint clean verify-pins verify-facts

setup: $(VENV)/.installed node_modules/.installed $(PCLUSTER_VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e '.[dev]'
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# aws-parallelcluster pins CDK v1 and jsii 1.85, so its schema lives in its own venv (tests/pcluster_schema_check.py).
$(PCLUSTER_VENV)/.installed: tools/pcluster-requirements.txt
	test -x $(PCLUSTER_VENV)/bin/python || $(PYTHON) -m venv $(PCLUSTER_VENV)
	$(PCLUSTER_VENV)/bin/python -m pip install --quiet -r tools/pcluster-requirements.txt
	touch $@

synth: $(VENV)/.installed node_modules/.installed
	rm -rf "$(CDK_OUT)"
	npx cdk synth --quiet -c blueprint="$(BLUEPRINT)" -o "$(CDK_OUT)"
	$(VENV)/bin/fmcluster plan "$(BLUEPRINT)" --cdk-out "$(CDK_OUT)"

plan: $(VENV)/.installed
	$(VENV)/bin/fmcluster plan "$(BLUEPRINT)" --cdk-out "$(CDK_OUT)"

test: setup
	$(VENV)/bin/python -m pytest -q

# ruff and mypy come with the dev extras of the venv ($(VENV)/.installed installs '.[dev]').
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check fmcluster tests app.py
	$(VENV)/bin/mypy fmcluster

# Resolve every observability pin on the internet (HTTP HEAD, upstream sha256 lists, git ls-remote, exporter
# source lines). Not part of CI: it needs network access; tests/features/observability/test_observability_pins.py checks offline.
verify-pins: $(VENV)/.installed
	$(VENV)/bin/python -m tools.verify_pins

verify-facts: $(VENV)/.installed
	$(VENV)/bin/python -m tools.verify_facts

clean:
	rm -rf $(CDK_OUT) .pytest_cache
