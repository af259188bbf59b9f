"""Build of the deep-neuroevolution workbench: the Python package and its C++ TensorFlow ops.

The ops in ops/cc are compiled into three shared libraries inside the package,
workbench/ops/_workbench_ops*.so (population inference),
workbench/ops/_workbench_atari_ops*.so (Atari emulation) and
workbench/ops/_workbench_mujoco_ops*.so (MuJoCo physics), with TensorFlow's
own compile and link flags, read from the TensorFlow installed at build time.
A compiler failure fails the install. Each library carries the TensorFlow, ALE
(and MuJoCo) versions it was built for (a WORKBENCH_BUILD_INFO string); the
loader refuses a library built for another version and says how to rebuild.

The MuJoCo library links the libmujoco inside the installed mujoco-core wheel
(ops/build_mujoco.py finds it; an rpath points at it).

The emulation library links ALE's C++ core statically; ops/build_ale.py builds it
once from the ale-py source distribution of the installed ale-py version and
caches the build (see that file). Symbols of ALE stay hidden inside that
library, so it can share a process with ale-py's own copy of ALE.

Environment variables:
  WORKBENCH_CXXFLAGS  extra compiler flags (default: -march=native -mno-avx512fp16;
                      set to an empty string for a portable build).
  WORKBENCH_SANITIZE  1: a debug build under AddressSanitizer and UndefinedBehaviorSanitizer
                      (-fsanitize=address,undefined, -O1 -g, NDEBUG not defined, so the kernels'
                      WORKBENCH_DCHECK bounds checks are on). `make test-sanitize` builds it into
                      build/sanitize (never into the package) and runs the fuzzer and the ops'
                      equivalence tests on it; docs/sanitizers.md says how.
  WORKBENCH_ALE_CACHE where finished ALE builds are kept (default ~/.cache/...).
"""

import glob
import os
import shlex
import sys

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "ops"))
import build_ale  # noqa: E402  (ops/build_ale.py)
import build_mujoco  # noqa: E402  (ops/build_mujoco.py)

DEFAULT_ARCH_FLAGS = "-march=native -mno-avx512fp16"
SANITIZERS = ["-fsanitize=address,undefined"]
# -UNDEBUG: Python's own compile flags define NDEBUG; the debug checks need it undefined. GCC 12's null-pointer
# checks make Abseil's constexpr function-pointer comparisons non-constant (GCC bug 71962), so TensorFlow's headers
# do not compile with them; a null dereference still stops the run (AddressSanitizer reports the SEGV).
SANITIZE_FLAGS = SANITIZERS + [
    "-O1",
    "-g",
    "-UNDEBUG",
    "-fno-omit-frame-pointer",
    "-fno-sanitize-recover=undefined",
    "-fno-sanitize=null,nonnull-attribute,returns-nonnull-attribute",
]


def sanitize_requested():
    return os.environ.get("WORKBENCH_SANITIZE", "").strip().lower() not in ("", "0", "false", "no")


class BuildTensorFlowOps(build_ext):
    """Compiles the custom ops with the flags of the installed TensorFlow (and ALE for the emulation ops)."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:  # the sources compile independently
            self.parallel = os.cpu_count() or 1

    def build_extension(self, ext):
        try:
            import tensorflow as tf
        except ImportError as error:  # pragma: no cover - build environment problem
            raise RuntimeError(
                "Building the workbench ops needs TensorFlow at build time. "
                "Install it first (pip install 'tensorflow-cpu>=2.21,<2.22'), then "
                "pip install --no-build-isolation -e ."
            ) from error
        arch_flags = shlex.split(os.environ.get("WORKBENCH_CXXFLAGS", DEFAULT_ARCH_FLAGS))
        ale_version = build_ale.installed_ale_version()
        build_flags = SANITIZE_FLAGS if sanitize_requested() else ["-O3", "-DNDEBUG"]
        ext.extra_compile_args = (
            ["-std=c++17", "-fPIC", "-Wno-deprecated-declarations", "-Wno-interference-size"]
            + build_flags
            + [flag for flag in tf.sysconfig.get_compile_flags() if not flag.startswith("--std")]
            + arch_flags
            + [f'-DWORKBENCH_TF_VERSION="{tf.__version__}"', f'-DWORKBENCH_ALE_VERSION="{ale_version}"']
        )
        ext.extra_link_args = list(tf.sysconfig.get_link_flags()) + (SANITIZERS if sanitize_requested() else [])
        if ext.name == MUJOCO_LIBRARY:
            mujoco_version, mujoco_include, mujoco_directory, mujoco_library = build_mujoco.find_mujoco()
            # No fused multiply-adds: the task's rewards and observations are computed in the order and rounding
            # of Gymnasium's numpy code, so that episodes equal Gymnasium's bit for bit.
            ext.extra_compile_args += [f'-DWORKBENCH_MUJOCO_VERSION="{mujoco_version}"', "-ffp-contract=off"]
            ext.include_dirs = list(ext.include_dirs) + [mujoco_include]
            ext.extra_link_args += [
                f"-L{mujoco_directory}",
                f"-l:{mujoco_library}",
                f"-Wl,-rpath,{mujoco_directory}",
            ]  # the installed package's libmujoco
        if ext.name == EMULATION_LIBRARY:
            ale_include, ale_library = build_ale.ensure_ale()
            ext.include_dirs = list(ext.include_dirs) + [ale_include]
            ext.extra_objects = [ale_library]
            ext.extra_link_args += [
                "-Wl,--exclude-libs,libale.a",  # keep ALE's symbols private to this library
                "-lz",  # ALE reads compressed ROMs and states with zlib
                "-pthread",
            ]
        super().build_extension(ext)


def sources(*patterns):
    found = set()
    for pattern in patterns:
        found.update(glob.glob(os.path.join(HERE, "ops", "cc", pattern), recursive=True))
    return sorted(os.path.relpath(path, HERE) for path in found)


# Three libraries: the inference ops (this project's code only, Apache-2.0), the Atari
# emulation ops, which link ALE (GPL-2.0-only; see the README's licence section), and
# the MuJoCo physics ops, which link the installed package's libmujoco (Apache-2.0).
INFERENCE_LIBRARY = "workbench.ops._workbench_ops"
EMULATION_LIBRARY = "workbench.ops._workbench_atari_ops"
MUJOCO_LIBRARY = "workbench.ops._workbench_mujoco_ops"
inference_sources = sources("build_info.cc", "**/population_*.cc")
emulation_sources = sources("build_info.cc", "**/atari_*.cc", "**/frame_preprocessing.cc")
mujoco_sources = sources("build_info.cc", "**/mujoco_*.cc")
unassigned = set(sources("**/*.cc")) - set(inference_sources) - set(emulation_sources) - set(mujoco_sources)
assert not unassigned, f"assign these sources to a library in setup.py: {sorted(unassigned)}"

setup(
    name="deep-neuroevolution-workbench",
    version="0.1.0",
    description="Evolve deep networks that play Atari with GA and ES on one computer, from JupyterLab.",
    license="Apache-2.0",
    python_requires=">=3.10",
    # the throughput benchmarks are workbench.bench (`python -m workbench bench` runs them from any install); the
    # experiments (experiments/: learning suites, studies, results) are scripts of a checkout, not installed
    packages=find_packages(include=["workbench", "workbench.*"]),
    package_data={"workbench.bench": ["native/*.cc"], "workbench.lab": ["archive_view.js", "archive_view.css"]},
    ext_modules=[
        Extension(name, sources=files, include_dirs=[os.path.join(HERE, "ops", "cc")], language="c++")
        for name, files in (
            (INFERENCE_LIBRARY, inference_sources),
            (EMULATION_LIBRARY, emulation_sources),
            (MUJOCO_LIBRARY, mujoco_sources),
        )
    ],
    cmdclass={"build_ext": BuildTensorFlowOps},
    install_requires=[
        "tensorflow-cpu>=2.21,<2.22",
        "numpy>=1.26",
        "ale-py>=0.12,<0.13",
        "gymnasium>=1.4,<1.5",
        "mujoco-core==4.0.1",
        "glfw>=2.5",
        "PyOpenGL>=3.1",
        "tensorboard>=2.21,<2.22",
        "pandas>=2.0",
        "tqdm>=4.60",
        "matplotlib>=3.8",
        "pillow>=10",
        "imageio>=2.30",
        "imageio-ffmpeg>=0.4.9",
    ],
    extras_require={
        # playwright drives Debian's Chromium in the browser test (no browser download: executable_path).
        # ruff, mypy and clang-format (ops/'s C++, style in .clang-format): the lint that make test runs first.
        # pytest-xdist: make test's two workers. pytest below 9.2: pytest 9.2's structured node ids silently undo
        # pytest-xdist 3.8's --dist loadgroup (every group's tests spread over the workers, so two Ray clusters
        # ran at once); tests/conftest.py fails the run if the groups are lost again.
        "test": [
            "opencv-python-headless>=4.8",
            "pytest>=8,<9.2",
            "nbclient>=0.10",
            "nbformat>=5.10",
            "jupyter_client>=8",
            "psutil>=5.9",
            "playwright>=1.50",
            "ruff>=0.8",
            "mypy>=1.10",
            "clang-format>=18",
            "pytest-xdist>=3.5",
            # the reference implementations the CMA family is compared with (tests/evolution/test_cma_update.py)
            "cmaes>=0.13,<0.14",
            "cma>=4.5,<5",
            "crfmnes>=1.0,<1.1",  # the authors' CR-FM-NES (tests/evolution/test_crfmnes.py)
            "ribs>=0.12,<0.13",  # pyribs, the quality-diversity archives' twin (tests/evolution/test_archive.py)
        ],
        # ipykernel 7.0.x lost widget updates sent from background threads (fixed in 7.1); the dashboard's
        # updater is such a thread (tests/lab/test_widget_threads.py).
        # anywidget: the archive view's canvas (workbench/lab/archive_view.js), with its prebuilt JupyterLab extension.
        "notebook": [
            "jupyterlab>=4.4,<5",
            "ipywidgets>=8.1.5,<9",
            "ipykernel>=7.1,<8",
            "matplotlib>=3.8",
            "anywidget>=0.11,<0.12",
        ],
        # Scale-out on a Ray cluster (workbench.evaluation.ray_evaluator); every node needs the same install.
        "ray": ["ray>=2.40,<3"],
        # Peers the benchmarks compare with: EnvPool's C++ MuJoCo tasks (workbench/bench/mujoco_steps.py); 1.2.5 is the
        # newest EnvPool with Python 3.11 wheels. psutil: the soak benchmark samples the process (workbench/bench/soak.py).
        # coco-experiment and cocopp: COCO's BBOB suite and its post-processing (experiments/bbob.py, render_bbob.py).
        "bench": ["envpool>=1.2.5", "psutil>=5.9", "coco-experiment>=2.8,<3", "cocopp>=2.9,<3"],
        # The documentation site (make docs): MkDocs with the Material theme, the API reference from the docstrings,
        # the tutorials rendered from the notebooks.
        "docs": ["mkdocs>=1.6,<2", "mkdocs-material>=9.5,<10", "mkdocstrings-python>=1.10", "mkdocs-jupyter>=0.25"],
    },
)
