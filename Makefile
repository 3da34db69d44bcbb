# Entry points, each doing all of its own set-up (idempotent):
#   make demo   - the main job on the bundled example corpus (real CLI, real bwrap)
#   make test   - the whole test suite (unit, contract, integration)
#   make bench  - the quick benches, one table of ratios, recorded in bench/RESULTS.md
#                 (FULL=1 adds the 10,000-session batch; docs/bench.md)
#   make census CENSUS_VERSION=X - what release X prints, per line kind, against the pin's
#                 census (installs X under .harness-census/X/; docs/census.md)
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
HARNESS_VERSION := 2.1.332
HARNESS_PKG := @anthropic-ai/claude-code@$(HARNESS_VERSION)
HARNESS_STAMP := .harness/.installed-$(HARNESS_VERSION)
VENV_STAMP := $(VENV)/.installed

.PHONY: demo test bench census setup bwrap socat session-user harness venv bench-venv clean chromium

demo: setup
	$(VENV)/bin/headwater-campaign demo $(DEMO_ARGS)

test: setup chromium
	$(VENV)/bin/python -m pytest $(PYTEST_ARGS)

setup: bwrap socat session-user venv harness

# The harness census of one release (a maintainer tool, docs/census.md): installs it beside
# the pin, replays the recorded situations under the real sandbox, writes
# tests/fixtures/census/$(CENSUS_VERSION).json and prints the drift. CENSUS_ARGS passes more
# (e.g. --captures, --only NAME ...).
census: setup
	@if [ -z "$(CENSUS_VERSION)" ]; then \
	  echo "name the release: make census CENSUS_VERSION=2.1.332" >&2; exit 2; fi
	$(VENV)/bin/python -m census $(CENSUS_VERSION) $(CENSUS_ARGS)

BENCH_STAMP := $(VENV)/.installed-bench
bench: setup bench-venv
	$(VENV)/bin/python bench/suite.py $(if $(FULL),--full) $(BENCH_ARGS)

# The bench extra (the Agent SDK it compares against, a profiler), into the same venv.
bench-venv: $(BENCH_STAMP)
$(BENCH_STAMP): pyproject.toml $(VENV_STAMP)
	$(VENV)/bin/pip install -q -e '.[test,bench]'
	touch $@

# A root runner's sessions run as this unprivileged user (no root inside, docs/host.md);
# run/demo/record also create it when missing. Nothing to do for a runner that is not root.
# The session users of a root runner (docs/host.md): headwater-session, headwater-session-1,
# ...; one per session that runs at once, so SESSION_USERS is the --concurrency to be run
# (the default, 2). A run with a higher --concurrency creates the ones it lacks itself.
SESSION_USERS ?= 2
session-user:
	@if [ "$$(id -u)" = 0 ]; then \
	  i=0; while [ "$$i" -lt "$(SESSION_USERS)" ]; do \
	    name=headwater-session; if [ "$$i" -gt 0 ]; then name=headwater-session-$$i; fi; \
	    if ! getent passwd "$$name" >/dev/null; then \
	      echo "creating the system user $$name (a root runner's sessions run each as one of these)"; \
	      useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
	        --user-group "$$name" || exit 1; \
	    fi; i=$$((i + 1)); \
	  done; \
	fi

# $(call apt_need,TEST,PACKAGE,WHY): install PACKAGE with apt-get when TEST fails and we are
# root; otherwise stop with 12 (confinement cannot be set up) and say what to install.
define apt_need
	@if ! $(1); then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing $(2) (apt-get)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(2) >/dev/null; \
	  else \
	    echo "$(2) is missing ($(3)): install it, e.g. 'sudo apt-get install $(2)'" >&2; exit 12; \
	  fi; \
	fi
endef

bwrap:
	$(call apt_need,command -v bwrap >/dev/null 2>&1,bubblewrap,every session runs under bwrap)

# The loopback-to-egress-socket bridge inside a confined session (docs/network.md).
socat:
	$(call apt_need,[ -x /usr/bin/socat ],socat,network confinement needs /usr/bin/socat)

# The report page's test renders it in a real headless browser (tests/report/test_page_browser.py):
# Debian's chromium, about 80 MB, for `make test` only (never `demo`).
chromium:
	$(call apt_need,command -v chromium >/dev/null 2>&1,chromium,the report page's test renders it in headless Chromium)

venv: $(VENV_STAMP)
$(VENV_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

harness: $(HARNESS_STAMP)
$(HARNESS_STAMP):
	@command -v npm >/dev/null 2>&1 || { echo "npm is missing: install Node.js and npm" >&2; exit 2; }
	mkdir -p .harness
	npm install --prefix .harness --no-save --no-audit --no-fund --loglevel=error $(HARNESS_PKG)
	@v=$$(.harness/node_modules/.bin/claude --version); echo "harness: $$v"; \
	  case "$$v" in $(HARNESS_VERSION)*) ;; *) echo "expected Claude Code $(HARNESS_VERSION), got $$v" >&2; exit 2;; esac
	touch $@

clean:
	rm -rf $(VENV) .harness .harness-census build dist *.egg-info
