# The two commands of the README: `make demo` (installs, then runs the main job) and
# `make test` (installs, then lints and runs the whole test suite). Both create ./.venv on first use.
# `make test-fast` is the edit-test loop: lint and every test but the slow, notebook, browser and Ray tiers.
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

.PHONY: install system demo lint test test-fast bench lab clean

install: $(INSTALLED)

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip setuptools wheel

# TensorFlow, ale-py and MuJoCo first: the ops compile against the installed TensorFlow,
# link ALE built from the sources of the installed ale-py version (ops/build_ale.py,
# cached under ~/.cache) and link the installed libmujoco (ops/build_mujoco.py). No build
# isolation, so the build reuses them. Rebuilds only when the build inputs change.
$(INSTALLED): $(PY) setup.py pyproject.toml ops/build_ale.py ops/build_mujoco.py $(OPS_SOURCES)
	$(PY) -m pip install --quiet "$(TF_REQUIREMENT)" numpy "$(ALE_REQUIREMENT)" "$(MUJOCO_REQUIREMENT)" scikit-build-core
	$(PY) -m pip install --quiet --no-build-isolation -e ".[test,notebook,ray,bench]"
	touch $@

# The main job: a Deep GA learning Frostbite on the CPU for about 3 minutes with the personal-computer
# preset (workbench/training/presets.py); writes runs/demo/ (fitness.png, elite.gif, history.jsonl,
# checkpoints/, tensorboard/).
demo: install
	rm -rf runs/demo
	$(PY) -m workbench train --preset pc --game frostbite --algo ga --model small --minutes 2.5 --out runs/demo

bench: install
	$(PY) bench/population_inference.py
	$(PY) bench/emulation.py
	$(PY) bench/end_to_end.py
	$(PY) bench/ray_scaling.py
	$(PY) bench/mujoco_steps.py --quick
	$(PY) bench/learning.py --quick

lint: install
	$(VENV)/bin/ruff check .

# Two pytest-xdist workers: most test time is single-threaded Python (tests/conftest.py says which tests
# stay serial). PYTEST_WORKERS=0 runs in one process (pytest's own output, pdb).
PYTEST_WORKERS ?= 2
PYTEST := TF_CPP_MIN_LOG_LEVEL=2 $(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadgroup --durations=10

test: lint system
	$(PYTEST)

test-fast: lint system
	$(PYTEST) -m "not slow and not notebook and not browser and not ray"

# System packages: Debian's Chromium for the browser test (tests/test_browser.py), and EGL with Mesa's
# software OpenGL for headless MuJoCo rendering (workbench/envs/mujoco_render.py). As root, the
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

# JupyterLab on the tutorials: bound to 127.0.0.1, token authentication on (the URL with the token is printed).
lab: install
	$(VENV)/bin/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir=notebooks \
		$$([ "$$(id -u)" = 0 ] && echo --allow-root)

clean:
	rm -rf build *.egg-info workbench/ops/_workbench_*.so
