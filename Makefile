# The two commands of the README: `make demo` (installs, then runs the main job) and
# `make test` (installs, then lints and runs the test suite but its long and parity tiers). Both create ./.venv on
# first use. `make test-fast` is the edit-test loop: lint and every test but the slow, notebook, browser, Ray,
# long and parity tiers. `make test-long` runs the long tier (robustness rehearsals); CI runs it.
# `make test-parity` runs the parity tier (the twins at full length, the op fuzzer's long form); CI runs it.
# `make test-sanitize` runs the op fuzzer and the ops' equivalence tests on a build of the ops under
# AddressSanitizer and UndefinedBehaviorSanitizer (docs/sanitizers.md); CI runs it after make test.
# `make docs` builds the documentation site (make test runs it); `make docs-serve` serves it on 127.0.0.1.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TF_REQUIREMENT := tensorflow-cpu>=2.21,<2.22
ALE_REQUIREMENT := ale-py>=0.12,<0.13
# One MuJoCo for the ops and for Gymnasium's reference tasks: 4.0.1 (fixes a sparse-solver bug of
# 4.0.0). It is the mujoco-core wheel (libmujoco, headers, Python bindings); the `mujoco`
# meta-package on PyPI is at 4.0.0 and would pin mujoco-core 4.0.0, so it is not installed.
MUJOCO_REQUIREMENT := mujoco-core==4.0.1
INSTALLED := $(VENV)/.workbench-installed
OPS_SOURCES := $(shell find ops -name '*.cc' -o -name '*.h')

.PHONY: install twins system demo docs docs-serve lint test test-fast test-long test-parity test-sanitize sanitize-build bench lab clean

install: $(INSTALLED)

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip setuptools wheel

# TensorFlow, ale-py and MuJoCo first: the ops compile against the installed TensorFlow,
# link ALE built from the sources of the installed ale-py version (ops/build_ale.py,
# cached under ~/.cache) and link the installed libmujoco (ops/build_mujoco.py). No build
# isolation, so the build reuses them; without isolation pip also builds every dependency that comes as an sdist
# with what this venv holds, so the build tools those sdists need come first (cocopp's version comes from
# setuptools-scm: without it the wheel is named 0.0.0 and pip finds no cocopp>=2.9). Rebuilds only when the build
# inputs change.
$(INSTALLED): $(PY) setup.py pyproject.toml ops/build_ale.py ops/build_mujoco.py $(OPS_SOURCES)
	$(PY) -m pip install --quiet "$(TF_REQUIREMENT)" numpy "$(ALE_REQUIREMENT)" "$(MUJOCO_REQUIREMENT)" scikit-build-core \
		"setuptools-scm>=8"
	$(PY) -m pip install --quiet --no-build-isolation -e ".[test,notebook,ray,bench,docs]"
	touch $@

# The main job: a Deep GA learns Asterix for 6 generations, about 4 minutes on 2 cores after the install; writes
# runs/demo/ (fitness.png, elite.gif, history.jsonl, checkpoints/, tensorboard/). The pc preset at half its
# population (100, 10 parents, 3 elite candidates x 3 episodes). Asterix because its early episodes are short
# (a generation is about 0.45M frames, Frostbite's about 1.9M) and the GA improves on it at once: on seed 0 the
# population mean goes 230 -> 532 in four generations and the elite 667 -> 1,200 (the run is deterministic).
# Budgeted in generations, so every machine shows the same run. The second thing to try: Frostbite with the full
# pc preset (README).
DEMO_RUN := runs/demo
demo: install
	rm -rf $(DEMO_RUN)
	$(PY) -m workbench train --preset pc --game asterix --algo ga --population-size 100 --truncation 10 \
		--elite-candidates 3 --elite-episodes 3 --generations 6 --out $(DEMO_RUN)
	@echo
	@echo "Next: open $(DEMO_RUN)/fitness.png and $(DEMO_RUN)/elite.gif;"
	@echo "  $(PY) -m workbench evaluate $(DEMO_RUN) --episodes 30   scores the elite on 30 fresh episodes"
	@echo "  $(PY) -m workbench resume $(DEMO_RUN) --generations 5   trains on from the checkpoint"
	@echo "  make lab   JupyterLab: the live dashboard (notebooks/00_quickstart.ipynb) and the tutorials"
	@echo "  make docs-serve   the documentation site on http://127.0.0.1:8000"

# The throughput benchmarks record into experiments/results (--record; the pages are rendered after each), then
# the quick forms of the learning experiments.
bench: install
	$(PY) -m workbench.bench.population_inference --record
	$(PY) -m workbench.bench.emulation --record
	$(PY) -m workbench.bench.end_to_end --record
	$(PY) -m workbench.bench.ray_scaling --record
	$(PY) -m workbench.bench.mujoco_steps --quick --record
	$(PY) experiments/learning.py --quick
	$(PY) experiments/atari_suite.py --quick
	$(PY) experiments/elite_retest.py --quick experiments/results/atari_runs-quick/ga-pc-seed0/frostbite
	$(PY) experiments/run_scores.py --quick experiments/results/atari_runs-quick/ga-pc-seed0/frostbite
	$(PY) experiments/render_results.py

# The type-checked code (mypy, settings in pyproject.toml): the whole installed package, its benchmarks too.
TYPED_PACKAGES := workbench

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy $(TYPED_PACKAGES)
	$(VENV)/bin/clang-format --dry-run -Werror $(OPS_SOURCES)

# Three pytest-xdist workers on 2 cores: most test time is single-threaded Python or waiting (a Ray cluster or
# JupyterLab starting), which a third worker fills (two were about a minute slower, four slower still; docs/architecture.md has the
# current figure; tests/conftest.py says which tests stay serial). PYTEST_WORKERS=0 runs in one process (pdb).
PYTEST_WORKERS ?= 3
PYTEST := TF_CPP_MIN_LOG_LEVEL=2 $(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadgroup --durations=10

test: lint docs system
	$(PYTEST) -m "not parity and not long"

test-fast: lint system
	$(PYTEST) -m "not slow and not notebook and not browser and not ray and not parity and not long"

# The long tier: robustness rehearsals too long for make test's budget (a Ray node removed mid-generation on a
# multi-node cluster of one machine). CI runs it after make test.
test-long: install
	$(PYTEST) -m long

# The parity tier: the twins compared at full length (Atari emulation on 12 games, MuJoCo physics over 30,000 steps
# per task), SNES against evosax's and the op fuzzer's long form. CI runs it after make test.
test-parity: twins
	$(PYTEST) -m parity

# The heavy twins of the parity tier, installed on first use: evosax (with JAX), whose SNES the SNES update is compared
# with (tests/evolution/test_distribution_search.py). Not a package extra: only this tier needs it.
EVOSAX_REQUIREMENT := evosax>=0.3,<0.4
TWINS := $(VENV)/.workbench-twins
twins: $(TWINS)
$(TWINS): $(INSTALLED)
	$(PY) -m pip install --quiet "$(EVOSAX_REQUIREMENT)"
	touch $@

# The sanitizer tier (docs/sanitizers.md). The ops are built again with -fsanitize=address,undefined and their debug
# checks on, into build/sanitize (the package keeps its release build; WORKBENCH_OPS_DIR points the loader there).
# Python is not instrumented, so GCC's ASan runtime is preloaded (with libstdc++, whose exceptions ASan intercepts);
# leak detection is off (Python and TensorFlow keep their allocations until exit). Reports go to files; any report
# fails the target, and so does any failed call or test.
SANITIZE_DIR := build/sanitize
SANITIZE_OPS := $(SANITIZE_DIR)/workbench/ops
SANITIZE_REPORTS := $(SANITIZE_DIR)/reports
SANITIZER_ENV = LD_PRELOAD="$$(g++ -print-file-name=libasan.so) $$(g++ -print-file-name=libstdc++.so.6)" \
	ASAN_OPTIONS=detect_leaks=0:log_path=$(CURDIR)/$(SANITIZE_REPORTS)/asan \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$(CURDIR)/$(SANITIZE_REPORTS)/ubsan \
	WORKBENCH_OPS_DIR=$(CURDIR)/$(SANITIZE_OPS) TF_CPP_MIN_LOG_LEVEL=2
SANITIZE_TESTS := tests/envs/test_mujoco_env.py tests/envs/test_atari_env.py tests/ops/test_population_matmul.py \
	tests/ops/test_population_conv.py tests/ops/test_assign_slots.py tests/envs/test_frame_preprocessing.py tests/envs/test_env_contract.py

sanitize-build: $(SANITIZE_OPS)/.built

$(SANITIZE_OPS)/.built: $(INSTALLED) setup.py $(OPS_SOURCES)
	mkdir -p $(SANITIZE_DIR)
	WORKBENCH_SANITIZE=1 $(PY) setup.py -q build_ext --force --build-lib $(SANITIZE_DIR) \
		--build-temp $(SANITIZE_DIR)/temp 2>$(SANITIZE_DIR)-build.log || { tail -40 $(SANITIZE_DIR)-build.log; exit 1; }
	touch $@

test-sanitize: sanitize-build
	rm -rf $(SANITIZE_REPORTS) && mkdir -p $(SANITIZE_REPORTS)
	$(SANITIZER_ENV) $(PY) tests/ops/op_fuzzer.py --calls 1500 --seed 20261203 --log $(SANITIZE_REPORTS)/fuzzer-calls.log \
		>$(SANITIZE_REPORTS)/fuzzer-output.log 2>&1 || { tail -40 $(SANITIZE_REPORTS)/fuzzer-output.log; \
		tail -3 $(SANITIZE_REPORTS)/fuzzer-calls.log; cat $(SANITIZE_REPORTS)/asan* $(SANITIZE_REPORTS)/ubsan* 2>/dev/null; exit 1; }
	@tail -1 $(SANITIZE_REPORTS)/fuzzer-output.log
	$(SANITIZER_ENV) $(PY) -m pytest -q -n 2 -p no:cacheprovider $(SANITIZE_TESTS) \
		-m "not parity" -k "not fallback_to_the_reference_backend and not does_not_leak" -W ignore::UserWarning -W ignore::DeprecationWarning \
		|| { cat $(SANITIZE_REPORTS)/asan* $(SANITIZE_REPORTS)/ubsan* 2>/dev/null; exit 1; }
	@if ls $(SANITIZE_REPORTS)/asan* $(SANITIZE_REPORTS)/ubsan* >/dev/null 2>&1; then \
		cat $(SANITIZE_REPORTS)/asan* $(SANITIZE_REPORTS)/ubsan*; echo "sanitizer reports: see above"; exit 1; fi
	@echo "test-sanitize: no AddressSanitizer or UndefinedBehaviorSanitizer report"

# System packages: Debian's Chromium for the browser test (tests/notebooks/test_browser.py), and EGL with Mesa's
# software OpenGL for headless MuJoCo rendering (workbench/envs/mujoco/render.py). As root, the
# missing ones are installed with apt-get; otherwise the command to install them is printed.
SYSTEM_PACKAGES := chromium libegl1 libegl-mesa0 libgl1-mesa-dri
system:
	@command -v dpkg >/dev/null || { echo "warning: not a Debian system; install Chromium and EGL (Mesa) yourself"; exit 0; }; \
	missing=$$(for p in $(SYSTEM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ] && [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	elif [ -n "$$missing" ]; then \
		echo "warning: missing system packages; the browser and rendering tests will fail: sudo apt-get install" $$missing; \
	fi

# The documentation site (mkdocs.yml): docs/ with the tutorials (docs/tutorials links to notebooks/, rendered
# without running them) and the API reference read from the docstrings (the sources are read, not imported).
# --strict: a broken link or a page outside the navigation fails the build. About 15 s.
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

docs-serve: docs
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:8000

# JupyterLab on the tutorials: bound to 127.0.0.1, token authentication on (the URL with the token is printed).
lab: install
	$(VENV)/bin/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir=notebooks \
		$$([ "$$(id -u)" = 0 ] && echo --allow-root)

clean:
	rm -rf build *.egg-info workbench/ops/_workbench_*.so
