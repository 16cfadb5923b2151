# Context Relay Workbook. Two commands set everything up:
#   make lab    create .venv, install, build the data, start JupyterLab on notebooks/ (loopback):
#               the attendee notebooks only, offline unless .env chooses a WORKBOOK_PROFILE
#   make test   the same install with dev extras, then lint, the output-strip check and every test
# Both install the exact versions in the lock files (requirements.lock for lab, requirements-dev.lock
# for test: dev and postgres extras too), hashes checked, with uv; `make lock` upgrades them.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
# uv installs from the locks and compiles them; pip (in the venv) brings in this exact version of it
UV_VERSION := 0.13.9
UV     := $(BIN)/uv
UV_STAMP := $(VENV)/.uv-$(UV_VERSION)
LOCK     := requirements.lock
# the workbook's own modules compiled to bytecode, as uv compiles the packages it installs: a
# command then loads them instead of compiling each one at every start (with
# PYTHONDONTWRITEBYTECODE set, Python never writes them itself). Only changed files are redone;
# a folder it cannot write (a read-only checkout, one compiled by another user) only costs speed.
BYTECODE := $(BIN)/python -m compileall -q -j 0 helpers >/dev/null \
	|| echo "note: some of helpers/ could not be compiled to bytecode (commands start slower)"
DEV_LOCK := requirements-dev.lock
# `make lock` moves every pin to the newest release in pyproject.toml's ranges;
# `make lock LOCK_UPGRADE=` only follows a change to pyproject.toml and keeps the other pins;
# `make lock LOCK_UPGRADE='--upgrade-package rich'` moves one package
LOCK_UPGRADE ?= --upgrade
# one lock for every platform and Python >= 3.11 (markers pick per machine), every file's hash
LOCK_FLAGS = --universal --python-version 3.11 --generate-hashes --python $(BIN)/python \
	--custom-compile-command 'make lock' --quiet $(LOCK_UPGRADE)
LAB_PORT ?= 8888
# JupyterLab refuses to start as root unless told; only then do we tell it.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)

.PHONY: lab lab-instructor restore test test-install test-recipes test-personas test-pg test-room e2e bench bench-speed figures guide install install-dev data \
	lint format check-notebooks strip student clean lock

# Python 3.11 or newer, checked before anything is made: one line says what to do. A .venv left
# by an older Python (or half made) is removed first, so the next command builds it right.
PY_OK := import sys; sys.exit(sys.version_info < (3, 11))
ifeq ($(shell [ -e $(BIN)/python ] && ! $(BIN)/python -c '$(PY_OK)' 2>/dev/null && echo stale),stale)
$(info $(VENV) was made with $(shell $(BIN)/python --version 2>&1 || echo a missing Python): removing it to rebuild with $(PYTHON))
$(shell rm -rf $(VENV))
endif

$(BIN)/python:
	@$(PYTHON) -c '$(PY_OK)' 2>/dev/null || { echo "The workbook needs Python 3.11 or newer, and \
	$(PYTHON) is $$($(PYTHON) --version 2>&1 || echo missing): install one and run, e.g., \
	make $(or $(MAKECMDGOALS),lab) PYTHON=python3.12"; exit 1; }
	$(PYTHON) -m venv $(VENV)

$(UV_STAMP): | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	touch $@

# sync: the venv holds exactly the lock (anything else is removed), then the workbook, editable.
# The runtime-only sync drops the dev tools, so it also drops the dev stamp.
# JupyterLab's defaults for this venv (jupyter/overrides.json: no news pop-up, no update check)
LAB_OVERRIDES := $(VENV)/share/jupyter/lab/settings/overrides.json

$(STAMP): $(LOCK) pyproject.toml jupyter/overrides.json | $(UV_STAMP)
	rm -f $(DEV_STAMP)
	@echo "installing the $$(grep -c '==' $(LOCK)) packages pinned in $(LOCK) (JupyterLab, openai, SQLAlchemy, the MCP SDK, ...) into $(VENV) with uv"
	$(UV) pip sync --quiet --require-hashes --compile-bytecode --python $(BIN)/python $(LOCK)
	$(UV) pip install --quiet --no-deps --python $(BIN)/python -e .
	$(BYTECODE)
	install -D -m 644 jupyter/overrides.json $(LAB_OVERRIDES)
	touch $@

$(DEV_STAMP): $(DEV_LOCK) $(LOCK) pyproject.toml jupyter/overrides.json | $(UV_STAMP)
	@echo "installing the $$(grep -c '==' $(DEV_LOCK)) packages pinned in $(DEV_LOCK) (the workbook's, and pytest, ruff, Playwright, ...) into $(VENV) with uv"
	$(UV) pip sync --quiet --require-hashes --compile-bytecode --python $(BIN)/python $(DEV_LOCK)
	$(UV) pip install --quiet --no-deps --python $(BIN)/python -e .
	$(BYTECODE)
	install -D -m 644 jupyter/overrides.json $(LAB_OVERRIDES)
	touch $(STAMP) $@

# the upgrade command: recompile both locks from pyproject.toml's ranges (needs PyPI), then
# `make test` installs and tests the new versions. The runtime lock takes its versions from the
# dev lock, so `make lab` and `make test` run the same ones.
lock: | $(UV_STAMP)
	$(UV) pip compile pyproject.toml --extra lab --extra dev --extra postgres $(LOCK_FLAGS) -o $(DEV_LOCK)
	$(UV) pip compile pyproject.toml --extra lab -c $(DEV_LOCK) $(LOCK_FLAGS) -o $(LOCK)

install: $(STAMP)
install-dev: $(DEV_STAMP)

data: $(STAMP)
	$(BIN)/workbook build-data

lab: install data
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.port=$(LAB_PORT) \
		--ServerApp.root_dir=notebooks $(ROOT_FLAG)

# the instructor's copy: the solution notebooks
lab-instructor: install data
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.port=$(LAB_PORT) \
		--ServerApp.root_dir=solutions $(ROOT_FLAG)

# put one attendee notebook back as it was (yours is kept in var/backups/): make restore NB=04
restore: install
	$(BIN)/workbook restore $(NB)

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(DEV_STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# the course notebooks as git stores them (staged versions) hold no outputs: an attendee's run
# notebooks/ and an instructor's run solutions/ are their own business, never a failed make test
check-notebooks: $(DEV_STAMP)
	@$(BIN)/python -m devtools.stored_notebooks

strip: $(DEV_STAMP)
	find notebooks solutions -name '*.ipynb' -not -path '*/.ipynb_checkpoints/*' -exec $(BIN)/nbstripout {} +

# regenerate the student notebooks (notebooks/NN_*.ipynb) from solutions/
student: $(DEV_STAMP)
	$(BIN)/python -m helpers.course.install_cell
	$(BIN)/python -m helpers.course.student_notebooks

# the course's solution notebooks (NN_title.ipynb: not a scratch copy such as 05_…-Copy1.ipynb),
# the same list as helpers.course.student_notebooks.solution_notebooks
COURSE_SOLUTIONS = $(shell find solutions -maxdepth 1 -regextype posix-extended \
	-regex 'solutions/[0-9]{2}_[A-Za-z0-9_]+\.ipynb' | sort)

# pytest, keeping what it makes of each test module: it rewrites a module's asserts (to show the
# values in a failure) and caches the result beside it, unless PYTHONDONTWRITEBYTECODE is set
# (as in many containers), when each of its processes redoes every module, about 4 s of CPU
# (pytest's docs: "Assertion rewriting caches files on write"; the cache is .gitignore'd); and
# importing jsonschema, before its plugins do, without its iri grammars (tests/early_imports.py)
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest -p tests.early_imports

# pytest workers: auto is one per core and one more (tests/conftest.py), which works while
# another's test waits out a timeout or a hang guard (TEST_WORKERS=0 runs in this process,
# e.g. to use a debugger)
TEST_WORKERS ?= auto

# unit tests, the checkpoint test, and nbval over every solution notebook, all offline; on
# TEST_WORKERS workers, each given a whole unit at a time (a test file, or for the checkpoint test
# a notebook: a notebook's cells run in order in one kernel)
test: $(DEV_STAMP) lint check-notebooks
	$(BIN)/workbook build-data
	WORKBOOK_PROFILE=offline WORKBOOK_REFERENCE_CHOICES_ONLY=1 $(PYTEST) -q tests $(COURSE_SOLUTIONS) \
		--ignore=tests/e2e --ignore=tests/room --ignore=tests/test_run_anywhere.py \
		--ignore=tests/test_recipes.py \
		--ignore=tests/test_notebooks_under_personas.py \
		--nbval-lax --nbval-current-env -n $(TEST_WORKERS) --dist loadfile

# the workbook installed where attendees are, each in a fresh venv: the wheel run from a folder
# of its own, binder/postBuild, the devcontainer's postCreateCommand, the README's steps without
# make (about two minutes: apart from make test, which stays well under ten)
test-install: $(DEV_STAMP)
	WORKBOOK_PROFILE=offline $(PYTEST) -q -p no:cacheprovider tests/test_run_anywhere.py

# CONTRIBUTING.md's recipes (a notebook, a tool, a strategy, a provider) carried out in copies
# of the project, each followed by the checks it must pass (minutes: apart from make test)
test-recipes: $(DEV_STAMP) data
	WORKBOOK_PROFILE=offline $(PYTEST) -q -p no:cacheprovider tests/test_recipes.py

# every solution notebook top to bottom under each offline persona, a model that chooses
# differently from the reference model (about four minutes on two cores: apart from make test)
test-personas: $(DEV_STAMP) data
	WORKBOOK_PROFILE=offline $(PYTEST) -q -p no:cacheprovider \
		tests/test_notebooks_under_personas.py -n $(TEST_WORKERS)

# the store tests against a throwaway PostgreSQL on loopback (skipped if the server is absent)
test-pg: $(DEV_STAMP)
	tests/with_postgres.sh

# a busy room for real (tests/room): PostgreSQL with passwords over TCP, JupyterHub from PyPI
# with configurable-http-proxy from npm, one Linux user per attendee (as root), the wheel in the
# attendees' environment, the room's firewall (nftables); WORKBOOK_ROOM_ATTENDEES attendees (8)
# run notebooks 02 and 08 at once beside busy processes of a higher priority (3 per core).
# Debian's python3 with IDLE's manual is the attendees' Python, nft the firewall's command
# (both installed here if missing).
test-room: $(DEV_STAMP)
	@{ [ -f /usr/lib/python3.11/idlelib/help.html ] && command -v nft >/dev/null; } || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq idle-python3.11 nftables >/dev/null; \
		else echo "make test-room runs as root (one Linux user per attendee, the kernel's firewall)"; exit 1; fi; }
	tests/with_postgres.sh $(PYTEST) -q -s -p no:cacheprovider tests/room

# the workbook in a real browser: JupyterLab on loopback, the notebooks in headless Chromium at
# 1280x720, light and dark, with no emoji font (Debian's chromium and fontconfig's fc-list,
# installed here if missing; Playwright drives it, no browser download)
e2e: $(DEV_STAMP) data
	@{ command -v chromium >/dev/null || [ -x /usr/bin/chromium ]; } && command -v fc-list >/dev/null || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fontconfig >/dev/null; \
		else echo "make e2e needs Debian's chromium and fontconfig: sudo apt-get install chromium fontconfig"; exit 1; fi; }
	WORKBOOK_PROFILE=offline $(PYTEST) -q -p no:cacheprovider tests/e2e

# the figures of README.md and docs/, measured again (a test fails when a page disagrees)
figures: $(STAMP)
	$(BIN)/python -m devtools.readme_figures

# the instructor guide's measured blocks: minutes per section, tokens per notebook, mistakes
guide: $(DEV_STAMP) data
	WORKBOOK_PROFILE=offline $(BIN)/python -m devtools.instructor_guide

# speed figures (medians, machine named), on SQLite and a throwaway PostgreSQL (when the machine
# has its server programs), with a real room of 30 attendees on a JupyterHub and that PostgreSQL
# (as root: deploy/README.md's figures)
bench: $(DEV_STAMP) data
	$(BYTECODE)
	WORKBOOK_PROFILE=offline tests/with_postgres.sh $(BIN)/python -m devtools.bench \
		--out build/bench.json --readme

# only where people wait (a few minutes): the commands' CPU, workbook compare's, box's tokens
# over the floor, each against its goal; writes docs/comparison.md's speed block
bench-speed: $(DEV_STAMP) data
	$(BYTECODE)
	WORKBOOK_PROFILE=offline $(BIN)/python -m devtools.bench --speed-only --readme

clean:
	rm -rf $(VENV) var build .pytest_cache .ruff_cache
	find helpers -name __pycache__ -type d -prune -exec rm -rf {} +
