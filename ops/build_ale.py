"""Build ALE's C++ core (the Atari emulator) for the emulation ops, once per version.

setup.py calls ensure_ale() while it builds the ops library. It builds the
static library libale.a from the source distribution of the same ale-py
version as the installed ale-py wheel (whose ROMs the ops load), so the
emulator code and the ROM table always agree. The finished build is kept in a
cache directory and reused by every later build, including builds from other
clones of the repository:

  $WORKBENCH_ALE_CACHE, or $XDG_CACHE_HOME/deep-neuroevolution-workbench,
  or ~/.cache/deep-neuroevolution-workbench

With GCC the build is profile-guided (about 9 % faster emulation here): an
instrumented build plays a few games (ops/ale_training.cc), then ALE is rebuilt
with that profile. WORKBENCH_ALE_PGO=0 turns this off. A build is written to a
temporary directory and renamed into place only when complete, so an
interrupted build never leaves a half-built cache behind.
Needs cmake, a C++17 compiler, zlib headers, and (for `pip download` of the
source distribution) scikit-build-core, ale-py's build backend.
"""

import functools
import glob
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

CMAKE_OPTIONS = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_PYTHON_LIB=OFF",
    "-DBUILD_CPP_LIB=ON",
    "-DSDL_SUPPORT=OFF",
    "-DBUILD_VECTOR_LIB=OFF",
    "-DCMAKE_POSITION_INDEPENDENT_CODE=ON",
]
# ALE turns on link-time optimisation; fat objects keep ordinary machine code in
# libale.a too, so the ops library links it without LTO.
CXX_FLAGS = "-ffat-lto-objects"
TRAINING_GAMES = ("pong", "breakout", "frostbite", "space_invaders", "seaquest", "montezuma_revenge", "qbert", "enduro")
TRAINING_FRAMES = 8000  # per game
HERE = os.path.dirname(os.path.abspath(__file__))


class AleBuildError(RuntimeError):
    """ALE's C++ core could not be fetched or built."""


def installed_ale_version():
    try:
        return importlib.metadata.version("ale-py")
    except importlib.metadata.PackageNotFoundError as error:
        raise AleBuildError(
            "Building the emulation ops needs the ale-py wheel installed first "
            "(pip install ale-py): its version selects the ALE sources and its ROMs are used at run time."
        ) from error


def cache_root():
    explicit = os.environ.get("WORKBENCH_ALE_CACHE")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "deep-neuroevolution-workbench")


def _compiler():
    return os.environ.get("CXX", "c++")


@functools.cache
def _compiler_id():
    try:
        return subprocess.run([_compiler(), "--version"], capture_output=True, text=True).stdout
    except OSError:
        return _compiler()


def _use_pgo():
    """Profile-guided build: with GCC (its -fprofile-partial-training), unless WORKBENCH_ALE_PGO=0."""
    if os.environ.get("WORKBENCH_ALE_PGO", "1").strip().lower() in ("0", "false", "no"):
        return False
    return "Free Software Foundation" in _compiler_id()


def _build_key(version):
    """Cache key: the ALE version, the compiler, the options and whether the build is profile-guided."""
    pgo = _use_pgo()
    with open(os.path.join(HERE, "ale_training.cc"), "rb") as stream:
        trainer = stream.read().decode() if pgo else ""
    parts = [_compiler_id(), CXX_FLAGS, f"pgo={pgo}", trainer] + CMAKE_OPTIONS
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]
    return f"ale-{version}-{'pgo-' if pgo else ''}{digest}"


def _is_complete(prefix):
    return os.path.isfile(os.path.join(prefix, "lib", "libale.a")) and os.path.isfile(
        os.path.join(prefix, "include", "ale", "ale_interface.hpp")
    )


def _run(command, log, cwd=None):
    with open(log, "a") as stream:
        stream.write("$ " + " ".join(command) + "\n")
        stream.flush()
        result = subprocess.run(command, cwd=cwd, stdout=stream, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        with open(log) as stream:
            tail = stream.read()[-4000:]
        raise AleBuildError(f"command failed ({result.returncode}): {' '.join(command)}\n{tail}")


def _download_sources(version, directory, log):
    try:
        import scikit_build_core  # noqa: F401  (pip needs ale-py's build backend to read the sdist)
    except ImportError as error:
        raise AleBuildError(
            "pip needs scikit-build-core (ale-py's build backend) to download the ALE sources: pip install scikit-build-core"
        ) from error
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-binary",
            ":all:",
            "--no-deps",
            "--no-build-isolation",
            f"ale-py=={version}",
            "-d",
            directory,
        ],
        log,
    )
    archives = glob.glob(os.path.join(directory, "ale_py-*.tar.gz"))
    if len(archives) != 1:
        raise AleBuildError(f"expected one ale-py source archive in {directory}, found {archives}")
    with tarfile.open(archives[0]) as archive:
        archive.extractall(directory, filter="data")
    sources = os.path.join(directory, f"ale_py-{version}")
    if not os.path.isfile(os.path.join(sources, "CMakeLists.txt")):
        raise AleBuildError(f"the ale-py {version} source archive has no CMakeLists.txt")
    return sources


def _cmake_build(sources, build, prefix, cxx_flags, log):
    jobs = str(os.cpu_count() or 1)
    _run(
        ["cmake", "-S", sources, "-B", build, f"-DCMAKE_INSTALL_PREFIX={prefix}", f"-DCMAKE_CXX_FLAGS={cxx_flags}"]
        + CMAKE_OPTIONS,
        log,
    )
    _run(["cmake", "--build", build, "--parallel", jobs, "--clean-first"], log)
    _run(["cmake", "--install", build], log)


def _train(instrumented, work, flags, log):
    """Plays the training games on the instrumented build, writing the profile."""
    from ale_py import roms

    trainer = os.path.join(work, "ale_training")
    _run(
        [_compiler(), "-std=c++17", "-O2"]
        + flags.split()
        + [
            os.path.join(HERE, "ale_training.cc"),
            "-I",
            os.path.join(instrumented, "include"),
            os.path.join(instrumented, "lib", "libale.a"),
            "-lz",
            "-pthread",
            "-o",
            trainer,
        ],
        log,
    )
    games = [str(roms.get_rom_path(game)) for game in TRAINING_GAMES if roms.get_rom_path(game)]
    _run([trainer, str(TRAINING_FRAMES)] + games, log)


def ensure_ale(verbose=True):
    """Returns (include_dir, static_library) of a finished ALE build, building it if needed."""
    version = installed_ale_version()
    root = cache_root()
    prefix = os.path.join(root, _build_key(version))
    if _is_complete(prefix):
        if verbose:
            print(f"workbench: reusing ALE {version} built in {prefix}")
        return os.path.join(prefix, "include"), os.path.join(prefix, "lib", "libale.a")
    if shutil.which("cmake") is None:
        raise AleBuildError("building ALE needs cmake on PATH (pip install cmake, or the system package)")
    os.makedirs(root, exist_ok=True)
    work = tempfile.mkdtemp(prefix=f".ale-{version}-", dir=root)
    log = os.path.join(work, "build.log")
    if verbose:
        kind = "profile-guided, about 2 minutes" if _use_pgo() else "about a minute"
        print(f"workbench: building ALE {version} from source ({kind}); log: {log}")
    try:
        sources = _download_sources(version, work, log)
        build = os.path.join(work, "build")
        staged = os.path.join(work, "install")
        if _use_pgo():
            profile = os.path.join(work, "profile")
            generate = f"{CXX_FLAGS} -fprofile-generate -fprofile-update=atomic -fprofile-dir={profile}"
            _cmake_build(sources, build, os.path.join(work, "instrumented"), generate, log)
            _train(os.path.join(work, "instrumented"), work, generate, log)
            use = f"{CXX_FLAGS} -fprofile-use -fprofile-partial-training -fprofile-dir={profile} -Wno-missing-profile"
            _cmake_build(sources, build, staged, use, log)  # same build directory: the profile names match
        else:
            _cmake_build(sources, build, staged, CXX_FLAGS, log)
        if not _is_complete(staged):
            raise AleBuildError(f"the ALE build finished without libale.a and headers; log: {log}")
        try:
            os.rename(staged, prefix)  # atomic: the cache holds whole builds only
        except OSError:
            if not _is_complete(prefix):  # lost a race with a concurrent build: fine if it finished
                raise
    finally:
        if os.path.isdir(work) and not os.environ.get("WORKBENCH_KEEP_ALE_BUILD"):
            shutil.rmtree(work, ignore_errors=True)
    return os.path.join(prefix, "include"), os.path.join(prefix, "lib", "libale.a")


if __name__ == "__main__":
    print(ensure_ale())
